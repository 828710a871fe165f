//! `report.md`: status, regressions first, then every benchmark with a sparkline.

use super::run_name;
use crate::analysis::trends::{HardwareGroup, TrendReport, TrendStatus};
use crate::report::format::{format_ns, format_percent, sparkline};
use crate::results::RunRecord;
use std::fmt::Write;

pub fn render(report: &TrendReport, runs: &[RunRecord]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Benchmark trends\n\nOverall: **{}** · generated {} · threshold {} %\n",
        report.overall_status.as_str(),
        report.generated,
        report.threshold_percent
    );
    for p in &report.problems {
        let _ = writeln!(out, "> ⚠️ run not read: {p}\n");
    }
    text_charts(&mut out, report, runs);
    if let Some(latest) = runs.last() {
        accuracy_section(&mut out, latest);
        telemetry_section(&mut out, latest);
        benchmark_notes(&mut out, latest);
        profiles_section(&mut out, latest);
    }
    for g in &report.groups {
        group_section(&mut out, g);
    }
    out
}

/// The dashboard's summary and before/after pages as text, in code blocks: the same
/// widgets the terminal draws, over the newest of `runs` and the run before it.
fn text_charts(out: &mut String, report: &TrendReport, runs: &[RunRecord]) {
    use crate::dashboard::{Dashboard, page_by_name, text::render_page, theme::Theme};
    if runs.is_empty() {
        return;
    }
    let latest = runs.len() - 1;
    let data = Dashboard::with_trends(runs.to_vec(), report.clone(), Vec::new(), latest, None);
    out.push_str("## The latest run at a glance\n\n");
    for name in ["summary", "compare"] {
        if let Ok(index) = page_by_name(name) {
            let _ = writeln!(
                out,
                "```text\n{}```\n",
                render_page(&data, index, 100, Theme::plain())
            );
        }
    }
}

/// Each benchmark's error against its float64 reference beside its rate; one line when the
/// run recorded none.
fn accuracy_section(out: &mut String, run: &RunRecord) {
    use crate::view::model::{ACCURACY_HEADERS, accuracy_table};
    out.push_str(
        "## Accuracy of the latest run

",
    );
    match accuracy_table(run) {
        Err(line) => {
            let _ = writeln!(out, "{line}\n");
        }
        Ok(rows) => {
            let _ = writeln!(out, "| {} |", ACCURACY_HEADERS.join(" | "));
            let _ = writeln!(out, "|---|{}", "---:|".repeat(ACCURACY_HEADERS.len() - 1));
            for row in rows {
                let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
                let _ = writeln!(out, "| `{}` | {} |", cells[0], cells[1..].join(" | "));
            }
            out.push('\n');
        }
    }
}

/// Each benchmark's power, temperature, clock and utilisation, with "not read" and the
/// reason for each quantity that was not; one line when the run read none at all.
fn telemetry_section(out: &mut String, run: &RunRecord) {
    use crate::view::telemetry::{QUANTITIES, run_telemetry};
    out.push_str("## Telemetry of the latest run\n\n");
    let telemetry = run_telemetry(run);
    if let Some(line) = telemetry.one_line() {
        let _ = writeln!(out, "{line}\n");
        return;
    }
    let _ = writeln!(out, "| Benchmark | Source | {} |", QUANTITIES.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---:|".repeat(QUANTITIES.len()));
    for row in telemetry.rows() {
        let cells: Vec<String> = row.readings.iter().map(|r| cell(&r.cell())).collect();
        let source = if row.source.is_empty() {
            "none"
        } else {
            &row.source
        };
        let _ = writeln!(
            out,
            "| `{}` | {source} | {} |",
            cell(&row.id),
            cells.join(" | ")
        );
    }
    out.push('\n');
}

/// What the record says about single benchmarks (a peak the figure exceeded, a sample
/// file the reader repaired), so the report never shows a figure without its caveat.
fn benchmark_notes(out: &mut String, run: &RunRecord) {
    let notes = crate::view::model::benchmark_notes(run);
    if notes.is_empty() {
        return;
    }
    out.push_str("## Notes on the latest run's benchmarks\n\n");
    for (id, note) in notes {
        let _ = writeln!(out, "- `{id}`: {}", note.replace('\n', " "));
    }
    out.push('\n');
}

/// The profiles the latest run took (`STACKBENCH_PROFILE`): each a link to its file, or why
/// there is none.
fn profiles_section(out: &mut String, run: &RunRecord) {
    use crate::harness::profile::{ProfileOutcome, profiles_in_targets};
    let profiles = profiles_in_targets(&run.targets);
    if profiles.is_empty() {
        return;
    }
    out.push_str(
        "## Profiles of the latest run

| Benchmark | Profiler | Profile |\n|---|---|---|\n",
    );
    for p in &profiles {
        let what = match &p.outcome {
            ProfileOutcome::Written { path, bytes, .. } => format!(
                "[{}](<{}>) ({} KiB)",
                cell(&path.display().to_string()),
                path.display(),
                bytes.div_ceil(1024)
            ),
            ProfileOutcome::Unavailable { reason } => format!("unavailable: {}", cell(reason)),
            ProfileOutcome::Failed { error } => format!("failed: {}", cell(error)),
        };
        let _ = writeln!(out, "| `{}` | {} | {what} |", cell(&p.id), p.tool);
    }
    out.push('\n');
}

/// Text safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn group_section(out: &mut String, g: &HardwareGroup) {
    let _ = writeln!(
        out,
        "## Hardware `{}` — {} runs, {}\n",
        g.fingerprint,
        g.runs.len(),
        g.overall_status.as_str()
    );
    let regressions: Vec<_> = g
        .benchmarks
        .iter()
        .filter(|b| b.status == TrendStatus::Regressed)
        .collect();
    if !regressions.is_empty() {
        out.push_str("### Regressions\n\n");
        for b in regressions {
            if let Some(cp) = b.change_points.last() {
                let _ = writeln!(
                    out,
                    "- `{}`: {} → {} ({}) starting with `{}`",
                    b.id,
                    format_ns(cp.before_ns),
                    format_ns(cp.after_ns),
                    format_percent(Some(cp.change_percent)),
                    run_name(g, cp.run_index)
                );
            }
        }
        out.push('\n');
    }
    acknowledged_section(out, g);
    if !g.not_measured.is_empty() {
        out.push_str("### Not measured in the latest run\n\n| Outcome | Benchmark | Reason |\n|---|---|---|\n");
        for n in &g.not_measured {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} |",
                n.outcome,
                n.id,
                n.reason.replace('|', "\\|").replace('\n', " ")
            );
        }
        out.push('\n');
    }
    out.push_str("| Status | Benchmark | History | Latest | vs baseline | vs previous runs | Slope/run | Noise | Steps |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    for b in &g.benchmarks {
        let values: Vec<f64> = b.points.iter().map(|p| p.1).collect();
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            b.status.as_str(),
            b.id.replace('|', "\\|"),
            sparkline(&values),
            format_ns(b.latest_ns),
            format_percent(b.latest_vs_baseline_percent),
            format_percent(b.latest_change_percent),
            format_percent(b.slope_percent_per_run),
            b.noise_floor_percent
                .map_or("n/a".into(), |n| format!("{n:.2} %")),
            b.change_points.len()
        );
    }
    out.push('\n');
}

/// Steps someone declared intentional: the verdicts above start from their new level.
fn acknowledged_section(out: &mut String, g: &HardwareGroup) {
    let acknowledged: Vec<_> = g.acknowledged().collect();
    if acknowledged.is_empty() {
        return;
    }
    out.push_str(
        "### Acknowledged steps

",
    );
    for (b, a) in acknowledged {
        let _ = writeln!(
            out,
            "- `{}` from `{}`: {} (by {}, {}); judged from the new level",
            b.id,
            a.run_id,
            a.reason.replace('\n', " "),
            a.who,
            crate::results::format_rfc3339_ms(a.created_unix_ms)
        );
    }
    out.push('\n');
}
