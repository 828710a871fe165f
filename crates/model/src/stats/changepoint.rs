//! Change points in a benchmark's history, and its recent slope.
//!
//! Method: optimal partitioning of the series (log times per run) under an L1 cost with a
//! penalty per change point, in the spirit of asv's penalised step fit, then pruning by a
//! Mann-Whitney test between adjacent segments, in the spirit of Apache Otava. The L1 cost
//! fits segment medians, and a segment is at least `min_size` runs long, so one wild run
//! cannot pay for a step of its own; a sustained step of any size well above the noise can.

use super::rank::mann_whitney_p;
use super::summary::{mad, median};

/// At most this many latest runs are partitioned (the exact fit is cubic in the length).
pub const MAX_SERIES: usize = 200;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ChangePoint {
    /// Index of the first run after the step.
    pub index: usize,
    /// Segment medians before and after (in the series' units).
    pub before: f64,
    pub after: f64,
    /// p-value of the step between the two adjacent segments: the smaller of Mann-Whitney's
    /// and the median-step test's (see [`step_p_value`]).
    pub p_value: f64,
}

/// Robust noise of a series: the MAD of first differences over √2, which a step barely
/// moves (a step adds one large difference, not many).
fn noise(series: &[f64]) -> f64 {
    let diffs: Vec<f64> = series.windows(2).map(|w| w[1] - w[0]).collect();
    let sigma = mad(&diffs) / std::f64::consts::SQRT_2;
    let floor = 1e-6 * median(series).abs().max(1e-12);
    if sigma.is_finite() {
        sigma.max(floor)
    } else {
        floor
    }
}

/// Σ|x - median| for every segment `[start, end)` of at least `min_size` points.
fn segment_costs(series: &[f64], min_size: usize) -> Vec<Vec<f64>> {
    let n = series.len();
    let mut costs = vec![vec![f64::INFINITY; n + 1]; n + 1];
    for (start, row) in costs.iter_mut().enumerate().take(n) {
        let mut sorted: Vec<f64> = Vec::with_capacity(n - start);
        for (end, &v) in series.iter().enumerate().skip(start) {
            let at = sorted.partition_point(|&s| s < v);
            sorted.insert(at, v);
            if sorted.len() >= min_size {
                let med = sorted[sorted.len() / 2];
                row[end + 1] = sorted.iter().map(|s| (s - med).abs()).sum();
            }
        }
    }
    costs
}

/// Change points of `series` with at least `min_size` points per segment, each surviving a
/// test at level `alpha`. `penalty` is in units of the series' noise per change point.
pub fn detect_change_points(
    series: &[f64],
    min_size: usize,
    penalty: f64,
    alpha: f64,
) -> Vec<ChangePoint> {
    let n = series.len();
    let min_size = min_size.max(1);
    if n < 2 * min_size {
        return Vec::new();
    }
    let beta = penalty * noise(series) * (n as f64).ln().max(1.0);
    let costs = segment_costs(series, min_size);
    // best[t]: least penalised cost of series[..t]; last[t]: where its final segment starts.
    let mut best = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    best[0] = -beta;
    for t in min_size..=n {
        for s in (0..=t - min_size).filter(|&s| s == 0 || s >= min_size) {
            let candidate = best[s] + costs[s][t] + beta;
            if candidate < best[t] {
                best[t] = candidate;
                last[t] = s;
            }
        }
    }
    let mut cuts = Vec::new();
    let mut t = n;
    while t > 0 {
        let s = last[t];
        if s > 0 {
            cuts.push(s);
        }
        t = s;
    }
    cuts.reverse();
    prune(series, cuts, alpha)
}

/// p-value of a step between segment medians, against the series' robust noise `sigma`
/// (from first differences, which a step does not inflate): the median of `n` points has sd
/// about √(π/2)·σ/√n. Mann-Whitney alone cannot confirm a step three runs after it lands
/// when 30+ runs precede it (its smallest two-sided p with 3 against 40 points is about
/// 0.005 under the normal approximation); this test can, when the step is well above noise.
pub fn step_p_value(left: &[f64], right: &[f64], sigma: f64) -> f64 {
    if left.is_empty() || right.is_empty() || sigma.is_nan() || sigma <= 0.0 {
        return f64::NAN;
    }
    let spread = (std::f64::consts::PI / 2.0).sqrt()
        * sigma
        * (1.0 / left.len() as f64 + 1.0 / right.len() as f64).sqrt();
    let z = (median(right) - median(left)).abs() / spread;
    use statrs::distribution::{ContinuousCDF, Normal};
    2.0 * (1.0 - Normal::standard().cdf(z))
}

/// Drops the least significant cut until every remaining one separates segments that a
/// Mann-Whitney test or the median-step test tells apart at `alpha`.
fn prune(series: &[f64], mut cuts: Vec<usize>, alpha: f64) -> Vec<ChangePoint> {
    let sigma = noise(series);
    loop {
        let points: Vec<ChangePoint> = (0..cuts.len())
            .map(|i| {
                let start = if i == 0 { 0 } else { cuts[i - 1] };
                let end = cuts.get(i + 1).copied().unwrap_or(series.len());
                let (left, right) = (&series[start..cuts[i]], &series[cuts[i]..end]);
                ChangePoint {
                    index: cuts[i],
                    before: median(left),
                    after: median(right),
                    p_value: mann_whitney_p(left, right).min(step_p_value(left, right, sigma)),
                }
            })
            .collect();
        let weakest = points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.p_value.is_nan() || p.p_value > alpha)
            .max_by(|a, b| a.1.p_value.total_cmp(&b.1.p_value))
            .map(|(i, _)| i);
        match weakest {
            Some(i) => {
                cuts.remove(i);
            }
            None => return points,
        }
    }
}

/// Theil-Sen slope: the median of pairwise slopes, in series units per index step.
/// NaN for fewer than two points.
pub fn theil_sen_slope(series: &[f64]) -> f64 {
    let mut slopes = Vec::with_capacity(series.len() * series.len() / 2);
    for i in 0..series.len() {
        for j in i + 1..series.len() {
            slopes.push((series[j] - series[i]) / (j - i) as f64);
        }
    }
    median(&slopes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::random::SeededRng;

    fn noisy(n: usize, seed: u64, sigma: f64) -> Vec<f64> {
        let mut rng = SeededRng::new(seed);
        let mut v = vec![0.0; n];
        rng.fill_normal(&mut v);
        v.iter().map(|z| z * sigma).collect()
    }

    #[test]
    fn finds_one_step_at_the_right_run() {
        for seed in 0..20 {
            let mut s = noisy(50, seed, 0.01);
            for v in &mut s[30..] {
                *v += 0.08;
            }
            let cps = detect_change_points(&s, 3, 3.0, 0.001);
            assert_eq!(cps.len(), 1, "seed {seed}: {cps:?}");
            assert_eq!(cps[0].index, 30, "seed {seed}");
            assert!(cps[0].after > cps[0].before);
        }
    }

    /// Issue 8: a sustained step is confirmed within 3 runs of landing, even with 30+ runs
    /// (here 30, 40 and 60) before it, at the trends' defaults (segment 3, penalty 3,
    /// alpha 0.001); and pure noise of the same length raises nothing.
    #[test]
    fn a_step_is_confirmed_three_runs_after_it_lands() {
        for before in [30, 40, 60] {
            for seed in 0..20 {
                let mut s = noisy(before + 3, 500 + seed, 0.01);
                for v in &mut s[before..] {
                    *v += 0.10f64.ln_1p();
                }
                let cps = detect_change_points(&s, 3, 3.0, 0.001);
                assert_eq!(cps.len(), 1, "{before} runs before, seed {seed}: {cps:?}");
                assert_eq!(cps[0].index, before, "seed {seed}");
                let null =
                    detect_change_points(&noisy(before + 3, 900 + seed, 0.01), 3, 3.0, 0.001);
                assert!(null.is_empty(), "null, seed {seed}: {null:?}");
            }
        }
    }

    #[test]
    fn ignores_one_wild_run_and_pure_noise() {
        for seed in 0..20 {
            let mut s = noisy(50, 100 + seed, 0.01);
            s[25] += 0.5;
            assert!(
                detect_change_points(&s, 3, 3.0, 0.001).is_empty(),
                "seed {seed}"
            );
        }
        assert!(detect_change_points(&[1.0; 10], 3, 3.0, 0.001).is_empty());
        assert!(detect_change_points(&[1.0, 2.0], 3, 3.0, 0.001).is_empty());
    }

    #[test]
    fn theil_sen_ignores_an_outlier() {
        let mut s: Vec<f64> = (0..10).map(|i| 2.0 * i as f64).collect();
        s[4] = 100.0;
        assert!((theil_sen_slope(&s) - 2.0).abs() < 1e-12);
        assert!(theil_sen_slope(&[1.0]).is_nan());
    }
}
