//! The bisect report for a terminal: one line per step as it finishes (for stderr while the
//! search runs) and the whole report at the end: the range, what was followed, each step's
//! effect, the result and the total time. The JSON form is the [`super::BisectReport`]
//! itself; the report lives here rather than in `report/` because that floor sits below the
//! gate and bisect whose model it renders.

use super::step::{Effect, Step};
use super::{BisectReport, BisectResult};
use std::fmt::Write;

/// `sum +201.3 % [+190.1, +210.3] degraded`, each followed benchmark of one step.
fn effects_text(effects: &[Effect]) -> String {
    let one = |e: &Effect| {
        let change = e
            .change_percent
            .map_or(String::new(), |c| format!(" {c:+.1} %"));
        let ci = e
            .ci95_percent
            .map_or(String::new(), |[lo, hi]| format!(" [{lo:+.1}, {hi:+.1}]"));
        format!("{}{change}{ci} {}", e.id, e.status)
    };
    effects.iter().map(one).collect::<Vec<_>>().join("; ")
}

/// A duration as people read it: `42.0 s`, `3 m 07 s`.
pub fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else {
        let whole = seconds.round() as u64;
        format!("{} m {:02} s", whole / 60, whole % 60)
    }
}

/// One step, for the progress line and the table.
pub fn step_line(step: &Step, commits: usize) -> String {
    let what = match &step.reason {
        Some(reason) => reason.clone(),
        None => effects_text(&step.effects),
    };
    let rounds = if step.rounds_run == 0 {
        "-".to_string()
    } else {
        step.rounds_run.to_string()
    };
    format!(
        "{:>3}/{commits:<3} {}  {:<9}  {:>6}  {:>9}  {what}",
        step.position,
        step.commit.short(),
        step.verdict.as_str(),
        rounds,
        duration(step.seconds),
    )
}

/// The whole report.
pub fn render(report: &BisectReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "bisect: {} commit(s) after --good {} ({}) up to --bad {} ({}); measure {}, threshold {} %",
        report.commits,
        report.good.short(),
        report.good.subject,
        report.bad.short(),
        report.bad.subject,
        report.judge.measure,
        report.judge.threshold_percent,
    );
    if !report.followed.is_empty() {
        let _ = writeln!(
            out,
            "following what --bad degrades: {}",
            report.followed.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\n{:>7} {:<7}  {:<9}  {:>6}  {:>9}  effect against --good, or why",
        "pos", "commit", "verdict", "rounds", "time"
    );
    for step in &report.steps {
        let _ = writeln!(out, "{}", step_line(step, report.commits));
    }
    out.push('\n');
    match &report.result {
        BisectResult::Culprit {
            commit,
            position,
            effects,
            headlines,
        } => {
            let _ = writeln!(
                out,
                "culprit: {} {} (position {position} of {})",
                commit.commit, commit.subject, report.commits
            );
            let _ = writeln!(out, "  effect: {}", effects_text(effects));
            for line in headlines {
                let _ = writeln!(out, "  {line}");
            }
            for effect in effects.iter().filter(|e| !e.functions.is_empty()) {
                out.push_str(&crate::gate::functions::render_counted(
                    &effect.id,
                    &effect.functions,
                    false,
                ));
            }
            // The culprit step's profiles (`--profile`): the culprit against --good.
            let profiles = report
                .steps
                .iter()
                .filter(|s| s.position == *position)
                .flat_map(|s| &s.profiles);
            for record in profiles {
                let _ = writeln!(out, "  {}", record.line());
            }
        }
        BisectResult::NoRegression => {
            let _ = writeln!(
                out,
                "no regression: --bad degrades no benchmark against --good; nothing to bisect"
            );
        }
        BisectResult::Unresolved { reason, candidates } => {
            let _ = writeln!(out, "unresolved: {reason}");
            for c in candidates {
                let _ = writeln!(
                    out,
                    "  {} {} (position {}): {}",
                    c.commit.short(),
                    c.commit.subject,
                    c.position,
                    c.why
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "total time: {} over {} step(s)",
        duration(report.total_seconds),
        report.steps.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_seconds_then_minutes() {
        assert_eq!(duration(4.25), "4.2 s");
        assert_eq!(duration(187.4), "3 m 07 s");
    }
}
