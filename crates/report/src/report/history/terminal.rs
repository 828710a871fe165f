//! The compact terminal summary printed after a report: per hardware group the status,
//! the top regressions and sparklines of the most-changed benchmarks.

use crate::analysis::trends::{TrendReport, TrendStatus};
use crate::report::format::{format_ns, format_percent, sparkline};
use std::fmt::Write;

const TOP: usize = 10;

pub fn render(report: &TrendReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "overall: {}",
        report.overall_status.as_str().to_uppercase()
    );
    for p in &report.problems {
        let _ = writeln!(out, "warning: run not read: {p}");
    }
    for g in &report.groups {
        let count = |s: TrendStatus| g.benchmarks.iter().filter(|b| b.status == s).count();
        let _ = writeln!(
            out,
            "{} ({} runs, {} benchmarks): {} regressed, {} suspect, {} improved, {} stable",
            g.fingerprint,
            g.runs.len(),
            g.benchmarks.len(),
            count(TrendStatus::Regressed),
            count(TrendStatus::Suspect),
            count(TrendStatus::Improved),
            count(TrendStatus::Stable)
        );
        let failed = g
            .not_measured
            .iter()
            .filter(|n| n.outcome == "failed")
            .count();
        if !g.not_measured.is_empty() {
            let _ = writeln!(
                out,
                "  latest run: {failed} failed, {} skipped (reasons in report.md)",
                g.not_measured.len() - failed
            );
        }
        for n in g
            .not_measured
            .iter()
            .filter(|n| n.outcome == "failed")
            .take(TOP)
        {
            let _ = writeln!(out, "  FAILED {}: {}", n.id, n.reason);
        }
        for (b, a) in g.acknowledged() {
            let _ = writeln!(
                out,
                "  acknowledged {} from {}: {} (by {})",
                b.id, a.run_id, a.reason, a.who
            );
        }
        let width = g
            .benchmarks
            .iter()
            .take(TOP)
            .map(|b| b.id.chars().count())
            .max()
            .unwrap_or(0);
        for b in g
            .benchmarks
            .iter()
            .filter(|b| b.status != TrendStatus::Stable)
            .take(TOP)
        {
            let values: Vec<f64> = b.points.iter().rev().take(30).rev().map(|p| p.1).collect();
            let change = match (b.status, b.change_points.last()) {
                (TrendStatus::Regressed | TrendStatus::Improved, Some(cp)) => format!(
                    "step {} at {}",
                    format_percent(Some(cp.change_percent)),
                    super::run_name(g, cp.run_index)
                ),
                _ => format!(
                    "{} vs previous runs",
                    format_percent(b.latest_change_percent)
                ),
            };
            let _ = writeln!(
                out,
                "  {:<9} {:<width$}  {}  {}  {change}",
                b.status.as_str(),
                b.id,
                sparkline(&values),
                format_ns(b.latest_ns),
            );
        }
    }
    out
}
