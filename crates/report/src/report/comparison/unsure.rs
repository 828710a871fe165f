//! The unsure benchmarks of a verdict, in words: which ones the data could tell neither
//! unchanged nor changed (`inconclusive`), why (the interval against the rule's band, the
//! spread between the gate's rounds, the machine's noise floor when the gate calibrated
//! it), and what fixes it. An unsure verdict exits 3 and is never a pass, so every
//! human-readable writer shows this section; it lives once here so the terminal table, the
//! comparison's Markdown and the gate's comment say the same thing.

use crate::analysis::rounds_spread::sample_sd as sd;
use crate::analysis::{BenchComparison, Comparison};
use crate::report::format::format_percent;
use crate::results::Outcome;
use std::collections::BTreeMap;

/// What to do about an unsure verdict, in the order that usually helps most.
pub const FIX: &str = "pin the measurement to a core nothing else runs on (`analyze-trends gate --cpus N`), allow more rounds (`--max-rounds`), or count instructions instead of timing (`--measure instructions`, CPU code only)";

/// What the gate knows beyond the comparison about why a benchmark stayed unsure.
#[derive(Clone, Debug, Default)]
pub struct UnsureContext<'a> {
    /// Per benchmark id, its change in each round, in percent (the gate's rounds).
    pub round_changes: BTreeMap<&'a str, Vec<f64>>,
    /// The machine's run-to-run noise floor in percent, from the calibration the gate runs
    /// before its rounds; `None` when no calibration ran (`compare`, or an older gate).
    pub noise_percent: Option<f64>,
}

/// Why one benchmark is unsure, in one line (no Markdown).
pub fn why(row: &BenchComparison, c: &Comparison, rounds: Option<&[f64]>) -> String {
    let band = c.rule.inconclusive_factor * c.threshold_percent;
    let mut parts = Vec::new();
    match row.ci95_percent {
        Some([lo, hi]) => parts.push(format!(
            "change {}, 95 % CI [{lo:+.1}, {hi:+.1}] % reaches beyond ±{band} % (twice the threshold)",
            format_percent(row.change_percent)
        )),
        None => parts.push(
            row.note
                .clone()
                .unwrap_or_else(|| "no interval could be computed".into()),
        ),
    }
    if let Some(changes) = rounds.filter(|r| !r.is_empty()) {
        let listed: Vec<String> = changes.iter().map(|c| format!("{c:+.1}")).collect();
        let spread = sd(changes).map_or(String::new(), |s| format!(", sd {s:.1} %"));
        parts.push(format!(
            "the rounds disagree: {} % over {} round(s){spread}",
            listed.join(", "),
            changes.len()
        ));
    }
    if let Some(held) = c.rounds_spread.as_ref().and_then(|r| r.held(&row.id)) {
        parts.push(format!(
            "{} at {} % but not at the {:.2} % its look after round {} needs (the gate judges again after every extra round, and each look spends a share of the error rate)",
            held.would_be,
            100.0 * c.rule.confidence,
            100.0 * held.confidence,
            held.rounds
        ));
    }
    if let Some(load) = c.rounds_spread.as_ref().and_then(|r| r.load_held(&row.id)) {
        parts.push(load.reason.clone());
    }
    if let Some(stop) = c.rounds_spread.as_ref().and_then(|r| r.stopped(&row.id)) {
        parts.push(format!(
            "stopped after round {}, not measured again: {}",
            stop.rounds, stop.reason
        ));
    }
    parts.push(format!("{}+{} samples", row.samples[0], row.samples[1]));
    if let Some(floor) = row.noise_floor_percent {
        parts.push(format!("run-to-run noise in the history {floor:.1} %"));
    }
    parts.join("; ")
}

/// The machine's noise floor against the threshold, when the gate calibrated it.
fn noise_line(c: &Comparison, noise_percent: Option<f64>) -> Option<String> {
    let noise = noise_percent?;
    let verdict = if noise > c.threshold_percent {
        format!(
            "above the {} % threshold: timing on this machine cannot resolve a change that small",
            c.threshold_percent
        )
    } else {
        format!("below the {} % threshold", c.threshold_percent)
    };
    let check = c
        .rounds_spread
        .as_ref()
        .and_then(|r| r.calibration_check.as_ref());
    let rounds = check.map_or(String::new(), |k| {
        format!(
            "; after round {} the rounds disagreed by a median sd of {:.1} % over {} benchmark(s)",
            k.after_round, k.round_sd_percent, k.benchmarks
        )
    });
    let pooled = c
        .rounds_spread
        .as_ref()
        .and_then(|r| r.pooled.as_ref())
        .map_or(String::new(), |p| {
            let weight = p.prior_df.map_or(
                "every interval was built with that spread".to_string(),
                |df| format!("each interval weighs it as {df:.1} rounds beside its own"),
            );
            format!(
                "; pooled over {} benchmark(s), a round's change has an sd of {:.1} %, and {weight}",
                p.benchmarks, p.round_sd_percent
            )
        });
    Some(format!(
        "Noise floor measured before the rounds: {noise:.2} %, {verdict}{rounds}{pooled}."
    ))
}

/// The heading of the section: unsure (exit 3), or unsure and accepted (exit 0).
fn heading(c: &Comparison, count: usize) -> String {
    let noun = if count == 1 {
        "benchmark"
    } else {
        "benchmarks"
    };
    match &c.accepted_unsure {
        Some(a) => format!(
            "Unsure, accepted: {count} {noun} could not be decided; accepted for {} by {}, so this is not a failure",
            a.sha,
            a.by_label
                .as_deref()
                .map_or("--accept-unsure".to_string(), |l| format!("label {l}"))
        ),
        // With a regression or a failure the exit code is 1, which says more than 3.
        None if c.outcome() != Outcome::Unsure => format!(
            "Unsure: {count} {noun} could be told neither unchanged nor changed by {} %",
            c.threshold_percent
        ),
        None => format!(
            "Unsure (exit {}, not a pass): {count} {noun} could be told neither unchanged nor changed by {} %",
            crate::results::UNSURE_EXIT_CODE,
            c.threshold_percent
        ),
    }
}

/// The section in Markdown; empty when nothing is unsure. `code` formats an id as a code
/// span and `escape` escapes free text, as the caller's writer does.
pub fn markdown(
    c: &Comparison,
    ctx: &UnsureContext<'_>,
    code: impl Fn(&str) -> String,
    escape: impl Fn(&str) -> String,
) -> String {
    let rows: Vec<&BenchComparison> = c.unsure().collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!("**{}:**\n\n", escape(&heading(c, rows.len())));
    for row in rows {
        let rounds = ctx.round_changes.get(row.id.as_str()).map(Vec::as_slice);
        out += &format!("- 🟡 {}: {}\n", code(&row.id), escape(&why(row, c, rounds)));
    }
    if let Some(line) = noise_line(c, ctx.noise_percent) {
        out += &format!("\n{}\n", escape(&line));
    }
    out += &format!("\nTo decide them: {FIX}.\n\n");
    out
}

/// The section as terminal lines; empty when nothing is unsure.
pub fn lines(c: &Comparison) -> Vec<String> {
    let rows: Vec<&BenchComparison> = c.unsure().collect();
    if rows.is_empty() {
        return Vec::new();
    }
    let mut out = vec![heading(c, rows.len())];
    for row in rows {
        out.push(format!("  unsure {}: {}", row.id, why(row, c, None)));
    }
    out.push(format!("  to decide them: {FIX}"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{HardwareCheck, Judgement, Status, VerdictRule};
    use crate::report::comparison::{RoundFigure, RoundsView, render_gate_markdown};

    /// A gate verdict with one benchmark `flaky`, inconclusive, over three rounds.
    fn unsure_gate() -> Comparison {
        let row = BenchComparison {
            id: "flaky".into(),
            baseline_ns: 100.0,
            candidate_ns: 110.0,
            change_percent: Some(4.0),
            ci95_percent: Some([-60.0, 90.0]),
            p_value: Some(0.6),
            q_value: Some(0.6),
            relative_change_percent: None,
            status: Status::Inconclusive,
            samples: [30, 30],
            noise_floor_percent: None,
            note: None,
            throughput: None,
        };
        Judgement {
            accuracy: Vec::new(),
            accuracy_unmatched: Vec::new(),
            baseline: "base main".into(),
            candidate: "head pr".into(),
            rule: VerdictRule::default(),
            hardware: HardwareCheck::default(),
            rows: vec![row],
            unmeasured: Vec::new(),
            skipped: Vec::new(),
            systemic: None,
            unusable: Vec::new(),
        }
        .into_comparison(String::new)
        .unwrap()
    }

    fn gate_markdown(c: &Comparison, noise_percent: Option<f64>) -> String {
        let env = BTreeMap::new();
        let rounds: Vec<RoundFigure> = [200.0, -66.7, 200.0]
            .iter()
            .enumerate()
            .map(|(i, change)| RoundFigure {
                round: i + 1,
                order: "base first",
                base_ns: 100.0,
                head_ns: 100.0 * (1.0 + change / 100.0),
                change_percent: *change,
                ci95_percent: [change - 1.0, change + 1.0],
                p_value: None,
            })
            .collect();
        let view = RoundsView {
            full_rounds: 3,
            rounds_run: 3,
            remeasured: &[],
            env: [("base", &env), ("head", &env)],
            benchmarks: vec![("flaky", &rounds)],
            noise_percent,
        };
        render_gate_markdown(c, &view)
    }

    #[test]
    fn the_gate_comment_gives_the_rounds_their_sd_and_the_noise_floor_when_calibrated() {
        let c = unsure_gate();
        assert_eq!(c.outcome(), Outcome::Unsure);
        let md = gate_markdown(&c, Some(7.5));
        let line = md
            .lines()
            .find(|l| l.starts_with("- 🟡 `flaky`"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(
            line.contains("+200.0, -66.7, +200.0 % over 3 round(s), sd 154.0 %"),
            "{line}"
        );
        assert!(
            md.contains("Noise floor measured before the rounds: 7.50 %, above the 5 % threshold"),
            "{md}"
        );
        let quiet = gate_markdown(&c, Some(0.8));
        assert!(quiet.contains("0.80 %, below the 5 % threshold"), "{quiet}");
        // No calibration (compare, or a gate without one): no noise line, the rest stays.
        let none = gate_markdown(&c, None);
        assert!(!none.contains("Noise floor"), "{none}");
        assert!(
            none.contains("Unsure (exit 3, not a pass): 1 benchmark"),
            "{none}"
        );
    }

    #[test]
    fn a_change_its_look_held_back_says_so_in_the_unsure_line() {
        let mut c = unsure_gate();
        c.rounds_spread = Some(crate::analysis::RoundsSpread {
            sequential: Some(crate::analysis::SequentialLooks {
                planned_rounds: 4,
                max_rounds: 10,
                first_look_confidence: 0.975,
                later_look_confidence: 1.0 - 0.05 / 12.0,
                held: vec![crate::analysis::HeldChange {
                    id: "flaky".into(),
                    rounds: 6,
                    confidence: 1.0 - 0.05 / 12.0,
                    would_be: "degraded".into(),
                }],
            }),
            ..Default::default()
        });
        let md = gate_markdown(&c, None);
        let line = md
            .lines()
            .find(|l| l.starts_with("- 🟡 `flaky`"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(
            line.contains("degraded at 95 % but not at the 99.58 % its look after round 6 needs"),
            "{line}"
        );
        // Without a held change, nothing is said about looks.
        let plain = gate_markdown(&unsure_gate(), None);
        assert!(!plain.contains("its look after round"), "{plain}");
    }

    #[test]
    fn a_benchmark_stopped_early_gives_its_projection_in_the_comment_and_the_terminal() {
        let mut c = unsure_gate();
        let reason = "rounds disagree by sd 35.0 %: about 12 rounds would be needed for 5 % (--max-rounds 10)";
        c.rounds_spread = Some(crate::analysis::RoundsSpread {
            sequential: None,
            stopped: vec![crate::analysis::StoppedEarly {
                id: "flaky".into(),
                rounds: 2,
                round_sd_percent: 35.0,
                rounds_needed: Some(12),
                max_rounds: 10,
                reason: reason.into(),
            }],
            calibration_check: Some(crate::analysis::CalibrationCheck {
                after_round: 2,
                calibration_noise_percent: 2.42,
                round_sd_percent: 35.0,
                benchmarks: 1,
                ratio: Some(35.0 / 2.42),
                warning: Some("the calibration understated this machine's noise".into()),
            }),
            pooled: None,
            ..Default::default()
        });
        let md = gate_markdown(&c, Some(2.42));
        let pooled = |prior_df| {
            let mut c = c.clone();
            c.rounds_spread.as_mut().unwrap().pooled = Some(crate::analysis::PooledSpread {
                round_sd_percent: 38.2,
                prior_df,
                benchmarks: 25,
            });
            gate_markdown(&c, Some(2.42))
        };
        assert!(
            pooled(None).contains("over 1 benchmark(s); pooled over 25 benchmark(s), a round's change has an sd of 38.2 %, and every interval was built with that spread."),
            "{}",
            pooled(None)
        );
        assert!(
            pooled(Some(3.04)).contains("each interval weighs it as 3.0 rounds beside its own."),
            "{}",
            pooled(Some(3.04))
        );
        let line = md
            .lines()
            .find(|l| l.starts_with("- 🟡 `flaky`"))
            .unwrap_or_else(|| panic!("{md}"));
        let said = format!("stopped after round 2, not measured again: {reason}");
        assert!(line.contains(&said), "{line}");
        assert!(
            md.contains("2.42 %, below the 5 % threshold; after round 2 the rounds disagreed by a median sd of 35.0 % over 1 benchmark(s)."),
            "{md}"
        );
        let terminal = lines(&c).join("\n");
        assert!(terminal.contains(&said), "{terminal}");
        // Another benchmark's stop is not this row's reason.
        c.rounds_spread.as_mut().unwrap().stopped[0].id = "other".into();
        assert!(!lines(&c).join("\n").contains("stopped after"));
    }

    #[test]
    fn an_accepted_unsure_verdict_says_by_whom_and_exits_0() {
        let mut c = unsure_gate();
        c.accepted_unsure = Some(
            crate::results::AcceptedUnsure::new(
                "abcdef0",
                Some("stackbench-accept-unsure:abcdef0"),
            )
            .unwrap(),
        );
        assert_eq!(c.outcome(), Outcome::Clean);
        let md = gate_markdown(&c, None);
        assert!(
            md.contains("Unsure, accepted: 1 benchmark could not be decided; accepted for abcdef0 by label stackbench-accept-unsure:abcdef0"),
            "{md}"
        );
        assert!(!md.contains("exit 3"), "{md}");
    }

    #[test]
    fn sd_of_rounds() {
        assert_eq!(sd(&[1.0]), None);
        let s = sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((s - 2.138).abs() < 1e-3, "{s}");
    }
}
