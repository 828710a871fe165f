//! The round-level verdict. Two plain runs of one commit differ by more than most real
//! changes, and no within-run statistic sees that drift; the gate therefore judges each
//! benchmark on the spread *between* rounds, with the within-round samples as the second
//! level (BENCHMARKS.md, "The gate's round rule"):
//!
//! 1. round `r`: `d_r` = Hodges-Lehmann shift of head vs base log per-iteration times, with
//!    its Moses 95 % interval (half-width `h_r`) and Mann-Whitney p (reported);
//! 2. effect `D` = mean of `d_r` over the rounds both sides measured (the ABBA order makes
//!    linear drift cancel in that mean);
//! 3. between-round standard error `s_b = sd(d_r)/√R` (Student t, R−1 degrees of freedom);
//!    within-round standard error `s_w = √(Σ (h_r/z)²)/R`; the interval is
//!    `D ± max(t·s_b, z·s_w)`, and the p-value is the two-sided one of the level that gave
//!    the wider interval: the gate is never surer than either level allows;
//! 4. p-values are adjusted by Benjamini-Hochberg across benchmarks, and the status comes
//!    from the same [`VerdictRule`] as `compare` (threshold, q, interval);
//! 5. `inconclusive` benchmarks are measured again, alone, until decided or `--max-rounds`.

use crate::analysis::{Status, VerdictRule, verdict::percent};
use crate::stats::{TwoSample, benjamini_hochberg, median};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use std::collections::BTreeMap;

/// One round of one benchmark, as the PR comment and `comparison.json` show it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RoundFigure {
    pub round: usize,
    /// `base first` or `head first`.
    pub order: &'static str,
    pub base_ns: f64,
    pub head_ns: f64,
    pub change_percent: f64,
    pub ci95_percent: [f64; 2],
    pub p_value: Option<f64>,
}

/// The rounds-level estimate of one benchmark before the cross-benchmark FDR step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundsEstimate {
    /// Mean of the per-round log shifts.
    pub effect: f64,
    pub ci: [f64; 2],
    pub p: f64,
    pub rounds: usize,
}

/// Which side ran first in round `r` (1-based): A B, B A, A B, B A … (ABBA).
pub fn base_first(round: usize) -> bool {
    round % 2 == 1
}

/// Per-round figures of one benchmark: rounds where both sides measured it.
pub fn round_figures(
    per_round: &[BTreeMap<usize, Vec<f64>>; 2],
    confidence: f64,
) -> Vec<(RoundFigure, f64, f64)> {
    let mut out = Vec::new();
    for (round, base) in &per_round[0] {
        let Some(head) = per_round[1].get(round) else {
            continue;
        };
        let logs = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<f64>>();
        let pair = TwoSample::new(&logs(base), &logs(head));
        let Some(shift) = pair.hodges_lehmann(confidence) else {
            continue;
        };
        let p = pair.mann_whitney_p();
        let figure = RoundFigure {
            round: *round,
            order: if base_first(*round) {
                "base first"
            } else {
                "head first"
            },
            base_ns: median(base),
            head_ns: median(head),
            change_percent: percent(shift.shift),
            ci95_percent: [percent(shift.ci_low), percent(shift.ci_high)],
            p_value: Some(p).filter(|p| p.is_finite()),
        };
        let half_width = (shift.ci_high - shift.ci_low) / 2.0;
        out.push((figure, shift.shift, half_width));
    }
    out
}

/// Step 2 and 3 of the rule over `(d_r, h_r)` pairs; `None` with no round.
pub fn estimate(rounds: &[(f64, f64)], confidence: f64) -> Option<RoundsEstimate> {
    let r = rounds.len();
    if r == 0 {
        return None;
    }
    let n = r as f64;
    let effect = rounds.iter().map(|(d, _)| d).sum::<f64>() / n;
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    let within_se = rounds
        .iter()
        .map(|(_, h)| (h / z).powi(2))
        .sum::<f64>()
        .sqrt()
        / n;
    let within = (z * within_se, within_se, None);
    let between = (r >= 2).then(|| {
        let var = rounds
            .iter()
            .map(|(d, _)| (d - effect).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        let se = (var / n).sqrt();
        let t = StudentsT::new(0.0, 1.0, n - 1.0).ok()?;
        Some((t.inverse_cdf(0.5 + confidence / 2.0) * se, se, Some(t)))
    });
    let (half, se, t) = match between.flatten() {
        Some(b) if b.0 > within.0 => b,
        _ => within,
    };
    let p = if se > 0.0 {
        let stat = (effect / se).abs();
        match t {
            Some(t) => 2.0 * (1.0 - t.cdf(stat)),
            None => 2.0 * (1.0 - Normal::standard().cdf(stat)),
        }
    } else if effect == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(RoundsEstimate {
        effect,
        ci: [effect - half, effect + half],
        p: p.clamp(0.0, 1.0),
        rounds: r,
    })
}

/// Steps 4: q-values across benchmarks and each status. Returns (status, q) per estimate.
pub fn statuses(estimates: &[RoundsEstimate], rule: &VerdictRule) -> Vec<(Status, f64)> {
    let q = benjamini_hochberg(&estimates.iter().map(|e| e.p).collect::<Vec<_>>());
    estimates
        .iter()
        .zip(q)
        .map(|(e, q)| {
            let ci = [percent(e.ci[0]), percent(e.ci[1])];
            (rule.status(percent(e.effect), ci, q), q)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulated rounds: each round's shift is the true effect plus round-to-round drift.
    fn rounds(effect: f64, drifts: &[f64], half_width: f64) -> Vec<(f64, f64)> {
        drifts.iter().map(|d| (effect + d, half_width)).collect()
    }

    #[test]
    fn a_real_slowdown_is_degraded_and_drift_alone_is_not() {
        let rule = VerdictRule::default();
        let drift = [0.01, -0.012, 0.008, -0.006];
        let slow = estimate(&rounds(0.08f64.ln_1p(), &drift, 0.01), 0.95).unwrap();
        let same = estimate(&rounds(0.0, &drift, 0.01), 0.95).unwrap();
        let out = statuses(&[slow, same], &rule);
        assert_eq!(out[0].0, Status::Degraded, "{slow:?}");
        assert_eq!(out[1].0, Status::Unchanged, "{same:?}");
    }

    #[test]
    fn rounds_that_disagree_are_inconclusive_not_degraded() {
        // Within each round the change looks certain (tiny Moses interval), but the rounds
        // disagree: the between-round level must win.
        let e = estimate(&rounds(0.0, &[0.15, -0.05, 0.12, -0.02], 0.005), 0.95).unwrap();
        let out = statuses(&[e], &VerdictRule::default());
        assert_eq!(out[0].0, Status::Inconclusive, "{e:?}");
        assert!(e.ci[0] < 0.0 && e.ci[1] > 0.1);
    }

    #[test]
    fn one_round_uses_the_within_round_interval() {
        let e = estimate(&[(0.2, 0.02)], 0.95).unwrap();
        assert!((e.ci[0] - 0.18).abs() < 1e-9 && (e.ci[1] - 0.22).abs() < 1e-9);
        assert!(e.p < 1e-6);
        assert!(estimate(&[], 0.95).is_none());
    }

    #[test]
    fn order_alternates_abba() {
        let order: Vec<bool> = (1..=4).map(base_first).collect();
        assert_eq!(order, [true, false, true, false]);
    }
}
