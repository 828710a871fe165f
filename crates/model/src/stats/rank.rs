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

/// The standard normal quantile by Acklam's rational approximation (relative error below
/// 1.2e-9): only places probes, where statrs' exact inverse would cost more than a count.
fn approximate_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

fn standard_normal() -> Normal {
    // Mean 0, sd 1 are valid parameters: this cannot fail.
    Normal::standard()
}

/// Two samples sorted once, shared by the shift estimate and the test. Sorting makes the
/// pairwise differences an implicitly sorted matrix, so order statistics of all `n·m`
/// differences are found by counting (O(n + m) per step) instead of materialising them:
/// on 10,000 benchmarks of 100 samples that is the difference between 10⁸ and about 10⁷
/// operations.
#[derive(Clone, Debug)]
pub struct TwoSample {
    x: Vec<f64>,
    y: Vec<f64>,
}

impl TwoSample {
    /// Non-finite values must be filtered out by the caller (the reader rejects them).
    pub fn new(x: &[f64], y: &[f64]) -> Self {
        let sorted = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        TwoSample {
            x: sorted(x),
            y: sorted(y),
        }
    }

    /// From samples already sorted ascending (saves the sort when the caller has one).
    pub fn from_sorted(x: Vec<f64>, y: Vec<f64>) -> Self {
        debug_assert!(x.is_sorted() && y.is_sorted());
        TwoSample { x, y }
    }

    /// The same samples with `offset` added to `x` (sorting is kept).
    pub fn with_offset(&self, offset: f64) -> Self {
        TwoSample {
            x: self.x.iter().map(|v| v + offset).collect(),
            y: self.y.clone(),
        }
    }

    /// Number of pairwise differences `y_j - x_i` that are `<= t`. For ascending `y_j` the
    /// first `i` with `y_j - x_i <= t` never moves left (floating-point subtraction is
    /// monotone), so one merge-like pass suffices, written without data-dependent branches
    /// (a branch here mispredicts about once per `y_j`).
    fn count_le(&self, t: f64) -> usize {
        let (x, y) = (&self.x, &self.y);
        let (n, m) = (x.len(), y.len());
        // Two independent merges (lower and upper half of y) interleaved: each step of one
        // merge waits on its previous step, so running two at once nearly halves the time.
        let half = m / 2;
        let start_b = match y.get(half) {
            Some(&yh) => x.partition_point(|&xi| yh - xi > t),
            None => n,
        };
        let (mut ia, mut ja, mut ib, mut jb) = (0usize, 0usize, start_b, half);
        let (mut count_a, mut count_b) = (0usize, 0usize);
        while ia < n && ja < half && ib < n && jb < m {
            let advance_a = usize::from(y[ja] - x[ia] > t);
            let advance_b = usize::from(y[jb] - x[ib] > t);
            ia += advance_a;
            ib += advance_b;
            count_a += (1 - advance_a) * (n - ia);
            count_b += (1 - advance_b) * (n - ib);
            ja += 1 - advance_a;
            jb += 1 - advance_b;
        }
        while ia < n && ja < half {
            let advance = usize::from(y[ja] - x[ia] > t);
            ia += advance;
            count_a += (1 - advance) * (n - ia);
            ja += 1 - advance;
        }
        while ib < n && jb < m {
            let advance = usize::from(y[jb] - x[ib] > t);
            ib += advance;
            count_b += (1 - advance) * (n - ib);
            jb += 1 - advance;
        }
        count_a + count_b
    }

    /// The differences in `(lo, hi]`.
    fn differences_between(&self, lo: f64, hi: f64) -> Vec<f64> {
        let n = self.x.len();
        let (mut start, mut stop) = (0, 0);
        let mut out = Vec::new();
        for &yj in &self.y {
            while start < n && yj - self.x[start] > hi {
                start += 1;
            }
            while stop < n && yj - self.x[stop] > lo {
                stop += 1;
            }
            out.extend(self.x[start..stop.max(start)].iter().map(|&xi| yj - xi));
        }
        out
    }

    /// The `k`-th smallest (0-based) pairwise difference: narrow a value bracket by
    /// interpolating on the counts (safeguarded: every other step bisects, so skewed or
    /// tied data still converge) until few differences remain inside, then select among
    /// those.
    fn kth_difference(&self, k: usize) -> f64 {
        self.select(k, false).0
    }

    /// The `k`-th and `k+1`-th smallest differences, from one bracket (the two middles of
    /// an even count).
    fn kth_pair(&self, k: usize) -> (f64, f64) {
        self.select(k, true)
    }

    /// A value bracket `(lo, hi]` holding order statistics `k..=k_high`, with the counts at
    /// its ends. Each probe is placed by a model of the differences (normal, centred on the
    /// difference of medians, spread from the interquartile ranges) corrected in quantile
    /// space by the count the previous probe found, aiming a little past the target so the
    /// next probe lands on the other side: two or three counting passes usually bracket
    /// fewer than `(n + m) / 2` differences. Probes outside the current bracket bisect it.
    fn initial_bracket(&self, k: usize, k_high: usize) -> (f64, f64, usize, usize) {
        let (n, m) = (self.x.len(), self.y.len());
        let total = n * m;
        let mut lo = ((self.y[0] - self.x[n - 1]).next_down(), 0usize);
        let mut hi = (self.y[m - 1] - self.x[0], total);
        let iqr = |v: &[f64]| v[v.len() * 3 / 4] - v[v.len() / 4];
        let spread = (iqr(&self.x).powi(2) + iqr(&self.y).powi(2)).sqrt() / 1.349;
        let center = self.y[m / 2] - self.x[n / 2];
        if !(spread > 0.0 && center.is_finite()) {
            return (lo.0, hi.0, lo.1, hi.1);
        }
        let z = |count: f64| {
            approximate_normal_quantile(((count + 0.5) / total as f64).clamp(1e-12, 1.0 - 1e-12))
        };
        let margin = ((n + m) / 8).max(1) as f64;
        let mut probe = center + spread * z((k + k_high) as f64 / 2.0);
        for _ in 0..8 {
            if hi.1 - lo.1 <= (n + m) / 2 {
                break;
            }
            if !(probe > lo.0 && probe < hi.0) {
                probe = lo.0 + (hi.0 - lo.0) / 2.0;
                if !(probe > lo.0 && probe < hi.0) {
                    break;
                }
            }
            let count = self.count_le(probe);
            let aim = if count > k_high {
                hi = (probe, count);
                k as f64 - margin
            } else if count <= k {
                lo = (probe, count);
                k_high as f64 + margin
            } else {
                // Between k and k + 1 (only when both are wanted): step just above.
                k_high as f64 + margin
            };
            probe += spread * (z(aim) - z(count as f64));
        }
        (lo.0, hi.0, lo.1, hi.1)
    }

    fn select(&self, k: usize, with_next: bool) -> (f64, f64) {
        let (n, m) = (self.x.len(), self.y.len());
        // With `with_next` the bracket must hold order statistics k and k+1.
        let k_high = if with_next { (k + 1).min(n * m - 1) } else { k };
        let (mut lo, mut hi, mut below, mut through) = self.initial_bracket(k, k_high);
        for step in 0..200 {
            if through - below <= (n + m) / 2 {
                break;
            }
            let fraction = if step % 2 == 0 {
                ((k - below) as f64 + 0.5) / (through - below) as f64
            } else {
                0.5
            };
            let mid = lo + (hi - lo) * fraction.clamp(0.02, 0.98);
            if mid <= lo || mid >= hi {
                break; // the bounds are adjacent floats: the rest are ties
            }
            let c = self.count_le(mid);
            if c > k_high {
                hi = mid;
                through = c;
            } else if c <= k {
                lo = mid;
                below = c;
            } else {
                break; // k and k+1 straddle `mid`: the bracket holds both
            }
        }
        let mut candidates = self.differences_between(lo, hi);

        let last = candidates.len().saturating_sub(1);
        let index = (k - below).min(last);
        let (_, &mut first, rest) = candidates.select_nth_unstable_by(index, f64::total_cmp);
        let second = if with_next {
            // The next order statistic is the smallest of what lies above the first.
            rest.iter().copied().reduce(f64::min).unwrap_or(first)
        } else {
            first
        };
        (first, second)
    }

    /// Hodges-Lehmann shift of `y` relative to `x` and the Moses interval at `confidence`
    /// (e.g. 0.95): between the `C`-th smallest and `C`-th largest pairwise differences,
    /// with `C` from the normal approximation to the null distribution of U. Where the
    /// samples are too small for that interval it spans every difference. `None` when a
    /// sample is empty.
    pub fn hodges_lehmann(&self, confidence: f64) -> Option<ShiftEstimate> {
        if self.x.is_empty() || self.y.is_empty() {
            return None;
        }
        let total = self.x.len() * self.y.len();
        let (n, m) = (self.x.len() as f64, self.y.len() as f64);
        let z = approximate_normal_quantile(0.5 + confidence / 2.0);
        let c = (n * m / 2.0 - z * (n * m * (n + m + 1.0) / 12.0).sqrt()).floor();
        let k_low = if c >= 1.0 { c as usize - 1 } else { 0 };
        let mid = total / 2;
        let shift = if total.is_multiple_of(2) {
            let (lower, upper) = self.kth_pair(mid - 1);
            (lower + upper) / 2.0
        } else {
            self.kth_difference(mid)
        };
        Some(ShiftEstimate {
            shift,
            ci_low: self.kth_difference(k_low.min(mid)),
            ci_high: self.kth_difference((total - 1 - k_low).max(mid)),
        })
    }

    /// Rank sum of `x` in the pooled sample, the tie correction Σ(t³ - t), and whether
    /// any ties occurred, from one merge of the sorted samples.
    fn rank_sum(&self) -> (f64, f64, bool) {
        let (x, y) = (&self.x, &self.y);
        let (mut i, mut j, mut position) = (0usize, 0usize, 0usize);
        let (mut sum_x, mut ties) = (0.0, 0.0);
        while i < x.len() || j < y.len() {
            let v = match (x.get(i), y.get(j)) {
                (Some(&a), Some(&b)) => a.min(b),
                (Some(&a), None) => a,
                (None, Some(&b)) => b,
                (None, None) => break,
            };
            let start_i = i;
            while i < x.len() && x[i] == v {
                i += 1;
            }
            let start_j = j;
            while j < y.len() && y[j] == v {
                j += 1;
            }
            let (tx, t) = ((i - start_i) as f64, (i - start_i + j - start_j) as f64);
            sum_x += tx * (position as f64 + (t + 1.0) / 2.0);
            ties += t * t * t - t;
            position += i - start_i + j - start_j;
        }
        (sum_x, ties, ties > 0.0)
    }

    /// Two-sided Mann-Whitney U p-value: exact (from the null distribution of U) for small
    /// samples without ties, else the normal approximation with tie and continuity
    /// corrections. NaN when a sample is empty.
    pub fn mann_whitney_p(&self) -> f64 {
        if self.x.is_empty() || self.y.is_empty() {
            return f64::NAN;
        }
        let (n1, n2) = (self.x.len() as f64, self.y.len() as f64);
        let (r1, ties, any_ties) = self.rank_sum();
        let u = r1 - n1 * (n1 + 1.0) / 2.0;
        if !any_ties && self.x.len() + self.y.len() <= 40 {
            return exact_p(self.x.len(), self.y.len(), u.round() as usize);
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
}

/// Hodges-Lehmann shift of `y` relative to `x` with its Moses interval; see
/// [`TwoSample::hodges_lehmann`].
pub fn hodges_lehmann_shift(x: &[f64], y: &[f64], confidence: f64) -> Option<ShiftEstimate> {
    TwoSample::new(x, y).hodges_lehmann(confidence)
}

/// Two-sided Mann-Whitney U p-value; see [`TwoSample::mann_whitney_p`].
pub fn mann_whitney_p(x: &[f64], y: &[f64]) -> f64 {
    TwoSample::new(x, y).mann_whitney_p()
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
    fn approximate_quantile_agrees_with_statrs() {
        for p in [
            1e-9,
            0.001,
            0.02,
            0.1,
            0.3,
            0.5,
            0.7,
            0.9,
            0.98,
            0.999,
            1.0 - 1e-9,
        ] {
            let exact = standard_normal().inverse_cdf(p);
            let approx = approximate_normal_quantile(p);
            assert!(
                (approx - exact).abs() < 1e-6 * exact.abs().max(1.0),
                "{p}: {approx} vs {exact}"
            );
        }
    }

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

    /// The k-th pairwise difference by materialising and sorting all of them.
    fn brute_kth(x: &[f64], y: &[f64], k: usize) -> f64 {
        let mut d: Vec<f64> = y
            .iter()
            .flat_map(|b| x.iter().map(move |a| b - a))
            .collect();
        d.sort_by(f64::total_cmp);
        d[k]
    }

    proptest! {
        #[test]
        fn implicit_selection_matches_brute_force(
            x in proptest::collection::vec(-50i32..50, 1..60),
            y in proptest::collection::vec(-50i32..50, 1..60),
            k_frac in 0.0f64..1.0,
            scale in prop_oneof![Just(1.0), Just(0.001), Just(1e6)],
        ) {
            // Integers (scaled) produce many ties, the hard case for value bisection.
            let x: Vec<f64> = x.iter().map(|&v| v as f64 * scale).collect();
            let y: Vec<f64> = y.iter().map(|&v| v as f64 * scale + 0.3 * scale).collect();
            let k = ((x.len() * y.len()) as f64 * k_frac) as usize;
            let two = TwoSample::new(&x, &y);
            prop_assert_eq!(two.kth_difference(k), brute_kth(&x, &y, k));
            if k + 1 < x.len() * y.len() {
                prop_assert_eq!(two.kth_pair(k), (brute_kth(&x, &y, k), brute_kth(&x, &y, k + 1)));
            }
        }

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
