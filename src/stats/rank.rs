//! Rank-based two-sample statistics: the Hodges-Lehmann shift with its Moses confidence
//! interval, and the Mann-Whitney U test. Both ignore the size of outliers (only their
//! rank counts), which is why the gate uses them on timing samples.

use statrs::distribution::{ContinuousCDF, Normal};

/// Shift of `y` relative to `x` (median of all pairwise differences `y_j - x_i`) with a
/// distribution-free confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShiftEstimate {
    pub shift: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

fn standard_normal() -> Normal {
    // Mean 0, sd 1 are valid parameters: this cannot fail.
    Normal::standard()
}

/// Hodges-Lehmann shift and the Moses interval at `confidence` (e.g. 0.95): the interval
/// between the `C`-th smallest and `C`-th largest pairwise differences, where `C` comes
/// from the normal approximation to the null distribution of U. Where the samples are too
/// small for that interval, it spans every pairwise difference. `None` for empty input.
pub fn hodges_lehmann_shift(x: &[f64], y: &[f64], confidence: f64) -> Option<ShiftEstimate> {
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let mut diffs: Vec<f64> = Vec::with_capacity(x.len() * y.len());
    for &b in y {
        diffs.extend(x.iter().map(|&a| b - a));
    }
    let total = diffs.len();
    let (n, m) = (x.len() as f64, y.len() as f64);
    let z = standard_normal().inverse_cdf(0.5 + confidence / 2.0);
    let c = (n * m / 2.0 - z * (n * m * (n + m + 1.0) / 12.0).sqrt()).floor();
    let k_low = if c >= 1.0 { c as usize - 1 } else { 0 };
    let k_high = total - 1 - k_low;
    let mid = total / 2;
    let order = |v: &mut [f64], k: usize| *v.select_nth_unstable_by(k, f64::total_cmp).1;
    let upper_mid = order(&mut diffs, mid);
    let shift = if total.is_multiple_of(2) {
        // After selection everything left of `mid` is no larger: the lower middle is its max.
        let lower_mid = diffs[..mid]
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (lower_mid + upper_mid) / 2.0
    } else {
        upper_mid
    };
    let ci_low = order(&mut diffs[..=mid], k_low.min(mid));
    let ci_high = {
        let tail = &mut diffs[mid..];
        let k = k_high.max(mid) - mid;
        order(tail, k)
    };
    Some(ShiftEstimate {
        shift,
        ci_low,
        ci_high,
    })
}

/// Ranks of the pooled sample: (rank sum of `x`, tie correction Σ(t³ - t), any ties).
fn rank_sum(x: &[f64], y: &[f64]) -> (f64, f64, bool) {
    let mut pooled: Vec<(f64, bool)> = x
        .iter()
        .map(|&v| (v, true))
        .chain(y.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut sum_x, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        let in_x = pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        sum_x += average_rank * in_x;
        ties += t * t * t - t;
        i = j + 1;
    }
    (sum_x, ties, ties > 0.0)
}

/// Two-sided Mann-Whitney U p-value. Exact (from the null distribution of U) for small
/// samples without ties, else the normal approximation with tie and continuity corrections.
/// NaN when either sample is empty.
pub fn mann_whitney_p(x: &[f64], y: &[f64]) -> f64 {
    if x.is_empty() || y.is_empty() {
        return f64::NAN;
    }
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let (r1, ties, any_ties) = rank_sum(x, y);
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    if !any_ties && x.len() + y.len() <= 40 {
        return exact_p(x.len(), y.len(), u.round() as usize);
    }
    let total = n1 + n2;
    let variance = n1 * n2 / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    if variance <= 0.0 {
        return 1.0; // every value tied: no evidence of a difference
    }
    let deviation = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0);
    let z = deviation / variance.sqrt();
    (2.0 * (1.0 - standard_normal().cdf(z))).min(1.0)
}

/// Exact two-sided p-value of U = `u` for sample sizes `n1`, `n2`: the counts of U are the
/// coefficients of the Gaussian binomial coefficient [n1+n2 choose n1]_q.
fn exact_p(n1: usize, n2: usize, u: usize) -> f64 {
    let mut poly = vec![1.0_f64];
    for i in 1..=n2 {
        // multiply by (1 - q^(n1+i))
        let shift = n1 + i;
        let mut next = vec![0.0; poly.len() + shift];
        for (k, &c) in poly.iter().enumerate() {
            next[k] += c;
            next[k + shift] -= c;
        }
        // divide by (1 - q^i): r[k] = p[k] + r[k-i]
        for k in i..next.len() {
            next[k] += next[k - i];
        }
        next.truncate(n1 * i + 1);
        poly = next;
    }
    let total: f64 = poly.iter().sum();
    let u = u.min(poly.len() - 1);
    let lower: f64 = poly[..=u].iter().sum::<f64>() / total;
    let upper: f64 = poly[u..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_p_matches_scipy() {
        // scipy.stats.mannwhitneyu([1,2,3],[4,5,6], method="exact") -> p = 0.1
        assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        // [1,3,5,7] vs [2,4,6,8,10]: U = 6
        let p = mann_whitney_p(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0, 10.0]);
        assert!((p - 52.0 / 126.0).abs() < 1e-12, "{p}"); // brute force: 26 of 126 arrangements have U <= 6
    }

    #[test]
    fn normal_approximation_agrees_with_statrs_with_ties() {
        use statrs::stats_tests::Alternative;
        use statrs::stats_tests::mannwhitneyu::{MannWhitneyUMethod, mannwhitneyu};
        let x: Vec<f64> = (0..30).map(|i| (i % 7) as f64).collect();
        let y: Vec<f64> = (0..30).map(|i| (i % 7) as f64 + 1.0).collect();
        let (_, want) = mannwhitneyu(
            &x,
            &y,
            MannWhitneyUMethod::AsymptoticInclContinuityCorrection,
            Alternative::TwoSided,
        )
        .unwrap();
        let p = mann_whitney_p(&x, &y);
        assert!((p - want).abs() < 1e-9, "{p} vs statrs {want}");
        assert_eq!(mann_whitney_p(&[1.0; 50], &[1.0; 50]), 1.0);
    }

    #[test]
    fn hodges_lehmann_finds_a_known_shift() {
        let x: Vec<f64> = (0..100).map(|i| (i as f64 * 0.37).sin()).collect();
        let y: Vec<f64> = x.iter().map(|v| v + 2.5).collect();
        let est = hodges_lehmann_shift(&x, &y, 0.95).unwrap();
        assert!((est.shift - 2.5).abs() < 1e-12);
        assert!(est.ci_low < 2.5 && est.ci_high > 2.5 && est.ci_high - est.ci_low < 0.5);
        let one = hodges_lehmann_shift(&[1.0], &[3.0], 0.95).unwrap();
        assert_eq!((one.shift, one.ci_low, one.ci_high), (2.0, 2.0, 2.0));
    }

    proptest! {
        #[test]
        fn shift_is_inside_its_interval_and_equivariant(
            x in proptest::collection::vec(-1e3f64..1e3, 1..40),
            y in proptest::collection::vec(-1e3f64..1e3, 1..40),
            d in -100f64..100.0,
        ) {
            let a = hodges_lehmann_shift(&x, &y, 0.95).unwrap();
            prop_assert!(a.ci_low <= a.shift && a.shift <= a.ci_high);
            let moved: Vec<f64> = y.iter().map(|v| v + d).collect();
            let b = hodges_lehmann_shift(&x, &moved, 0.95).unwrap();
            prop_assert!((b.shift - a.shift - d).abs() < 1e-6);
            let p = mann_whitney_p(&x, &y);
            prop_assert!((0.0..=1.0).contains(&p));
            let q = mann_whitney_p(&y, &x);
            prop_assert!((p - q).abs() < 1e-9);
        }
    }
}
