//! Empirical-Bayes moderation of many small-sample variances: Smyth (2004), "Linear models
//! and empirical Bayes methods for assessing differential expression in microarray
//! experiments", the method of limma's `fitFDist` and `squeezeVar`.
//!
//! The gate judges each benchmark on the spread of its per-round shifts, and with two
//! rounds that spread has one degree of freedom: two rounds of an unchanged benchmark on a
//! machine whose processes land in a fast or a slow mode agree by chance about once in
//! eight, and a one-degree-of-freedom variance then calls the mode a regression. The
//! benchmarks of one gate share the machine, so their variances are draws around a common
//! level: each sample variance `s²` (on `d` degrees of freedom) is taken to be a scaled
//! chi-square around a prior `s0²` that is itself fitted from all of them, and each is
//! replaced by the posterior `(d0·s0² + d·s²) / (d0 + d)` on `d0 + d` degrees of freedom.
//! When the variances spread no more than chi-square sampling alone would make them,
//! `d0` is infinite and every benchmark takes the pooled variance.

use statrs::function::gamma::digamma;

/// The fitted prior: the common variance and how many degrees of freedom it is worth
/// (`f64::INFINITY` when the sample variances are consistent with one shared variance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VariancePrior {
    pub variance: f64,
    pub df: f64,
    /// How many sample variances the prior was fitted from.
    pub fitted_from: usize,
}

/// The fewest positive sample variances a prior is fitted from: with fewer, the spread of
/// their logarithms says nothing about the prior's degrees of freedom.
pub const MIN_VARIANCES_FOR_PRIOR: usize = 3;

impl VariancePrior {
    /// The posterior variance and its degrees of freedom for a sample variance `var` on
    /// `df` degrees of freedom (`df` = 0: no sample variance, the prior alone).
    pub fn moderate(&self, var: f64, df: f64) -> (f64, f64) {
        if self.df.is_infinite() {
            return (self.variance, f64::INFINITY);
        }
        let total = self.df + df;
        ((self.df * self.variance + df * var) / total, total)
    }
}

/// Fits the prior from `(variance, degrees of freedom)` pairs by the method of moments on
/// the log variances. Pairs with a zero, negative or non-finite variance, or fewer than one
/// degree of freedom, are left out; `None` with fewer than [`MIN_VARIANCES_FOR_PRIOR`] left.
pub fn fit_variance_prior(samples: &[(f64, f64)]) -> Option<VariancePrior> {
    let used: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(v, d)| v.is_finite() && *v > 0.0 && d.is_finite() && *d >= 1.0)
        .collect();
    let n = used.len();
    if n < MIN_VARIANCES_FOR_PRIOR {
        return None;
    }
    // log s² = log s0² + log(chi²_d / d): remove the known mean of the second term.
    let e: Vec<f64> = used
        .iter()
        .map(|(v, d)| v.ln() - digamma(d / 2.0) + (d / 2.0).ln())
        .collect();
    let mean = e.iter().sum::<f64>() / n as f64;
    let spread = e.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    // What is left after the chi-square sampling spread is the prior's.
    let excess = spread - used.iter().map(|(_, d)| trigamma(d / 2.0)).sum::<f64>() / n as f64;
    if excess <= 0.0 {
        return Some(VariancePrior {
            variance: mean.exp(),
            df: f64::INFINITY,
            fitted_from: n,
        });
    }
    let df = 2.0 * trigamma_inverse(excess);
    Some(VariancePrior {
        variance: (mean + digamma(df / 2.0) - (df / 2.0).ln()).exp(),
        df,
        fitted_from: n,
    })
}

/// ψ'(x), the trigamma function, for x > 0: the recurrence ψ'(x) = ψ'(x+1) + 1/x² up to
/// x ≥ 12, then the asymptotic series (first omitted term below 1e-13 there).
pub fn trigamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let mut x = x;
    let mut sum = 0.0;
    while x < 12.0 {
        sum += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // 1/x + 1/(2x²) + Σ B_2k / x^(2k+1): B2 = 1/6, B4 = -1/30, B6 = 1/42, B8 = -1/30.
    let series = inv
        * (1.0
            + inv / 2.0
            + inv2 * (1.0 / 6.0 + inv2 * (-1.0 / 30.0 + inv2 * (1.0 / 42.0 - inv2 / 30.0))));
    sum + series
}

/// The x > 0 with ψ'(x) = `y` (y > 0): ψ' falls strictly from +∞ to 0, so bisection on
/// log x converges without the care Newton's step needs near the ends.
fn trigamma_inverse(y: f64) -> f64 {
    // ψ'(x) ≈ 1/x² for small x and ≈ 1/x for large x: a bracket from both.
    let (mut lo, mut hi) = (
        (1.0 / y).min(1.0 / y.sqrt()) / 4.0,
        (1.0 / y).max(1.0 / y.sqrt()) * 4.0,
    );
    while trigamma(lo) < y {
        lo /= 4.0;
    }
    while trigamma(hi) > y {
        hi *= 4.0;
    }
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if trigamma(mid) > y {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo - 1.0 < 1e-12 {
            break;
        }
    }
    (lo * hi).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigamma_matches_its_known_values() {
        // ψ'(1) = π²/6, ψ'(1/2) = π²/2, ψ'(n+1) = ψ'(n) − 1/n².
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-12);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-12);
        for x in [0.3, 2.5, 7.0, 40.0] {
            assert!((trigamma(x) - trigamma(x + 1.0) - 1.0 / (x * x)).abs() < 1e-12);
        }
        assert!(trigamma(0.0).is_nan() && trigamma(-1.0).is_nan());
    }

    #[test]
    fn trigamma_inverse_inverts() {
        for x in [0.01, 0.5, 1.0, 3.7, 250.0, 1e5] {
            let back = trigamma_inverse(trigamma(x));
            assert!((back / x - 1.0).abs() < 1e-9, "{x} -> {back}");
        }
    }

    /// A deterministic chi-square(d) variate from uniform draws (sum of squared normals by
    /// Box-Muller), so the fit is tested on the distribution it assumes.
    fn chi_squares(count: usize, d: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..count)
            .map(|_| {
                (0..d)
                    .map(|_| {
                        let (u, v) = (uniform(), uniform());
                        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
                    })
                    .map(|z| z * z)
                    .sum()
            })
            .collect()
    }

    #[test]
    fn one_shared_variance_gives_infinite_prior_df_near_that_variance() {
        // 20000 benchmarks, 1 df each (two rounds), all with variance 0.04.
        let samples: Vec<(f64, f64)> = chi_squares(20_000, 1, 7)
            .into_iter()
            .map(|c| (0.04 * c, 1.0))
            .collect();
        let prior = fit_variance_prior(&samples).unwrap();
        assert!(prior.df > 20.0, "{prior:?}");
        assert!((prior.variance / 0.04 - 1.0).abs() < 0.15, "{prior:?}");
        assert_eq!(prior.fitted_from, 20_000);
    }

    #[test]
    fn variances_that_differ_give_a_finite_prior_df() {
        // Half the benchmarks at variance 0.0004, half at 0.25: far more spread than
        // chi-square sampling on 4 df makes.
        let samples: Vec<(f64, f64)> = chi_squares(400, 4, 11)
            .into_iter()
            .enumerate()
            .map(|(i, c)| (if i % 2 == 0 { 0.0004 } else { 0.25 } * c / 4.0, 4.0))
            .collect();
        let prior = fit_variance_prior(&samples).unwrap();
        assert!(prior.df.is_finite() && prior.df < 4.0, "{prior:?}");
    }

    #[test]
    fn moderation_pulls_a_lucky_small_variance_up_toward_the_prior() {
        let prior = VariancePrior {
            variance: 0.09,
            df: 3.0,
            fitted_from: 20,
        };
        let (var, df) = prior.moderate(0.0001, 1.0);
        assert!((var - (3.0 * 0.09 + 0.0001) / 4.0).abs() < 1e-15);
        assert_eq!(df, 4.0);
        let pooled = VariancePrior {
            df: f64::INFINITY,
            ..prior
        };
        assert_eq!(pooled.moderate(0.0001, 1.0), (0.09, f64::INFINITY));
    }

    #[test]
    fn too_few_or_unusable_variances_fit_nothing() {
        assert_eq!(fit_variance_prior(&[(0.1, 1.0), (0.2, 1.0)]), None);
        assert_eq!(
            fit_variance_prior(&[(0.1, 1.0), (0.0, 1.0), (f64::NAN, 1.0), (0.3, 0.0)]),
            None
        );
    }
}
