//! The summary `run_benchmarks.sh` prints at the end of a run: what was run, % of peak per
//! precision as gauges, the benchmarks that moved most against the previous run with
//! their history as sparklines, each benchmark's telemetry (or why none was read), and the
//! outcomes per family.

use super::compare::summary_line;
use super::gemm::best_percent_per_dtype;
use super::outcomes::{outcome_counts, outcomes_bar};
use super::trends::group;
use crate::analysis::trends::not_measured;
use crate::dashboard::widgets::sparkline::SparkRow;
use crate::dashboard::widgets::{PeakGauge, SparkRows, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::{format_ns, format_percent};
use crate::view::model::{changes, run_name};
use crate::view::telemetry::{RunTelemetry, TelemetryRow, run_telemetry};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub const PAGE: Page = Page::new("summary", "Summary", render, |_: &Dashboard| 0);

/// Two lines: the run and its outcomes; how it moved against the run before it.
fn header(view: &View) -> [String; 2] {
    let Some(run) = view.data.current() else {
        return ["no run".into(), String::new()];
    };
    let rows = not_measured(run);
    let failed = rows.iter().filter(|n| n.outcome == "failed").count();
    let text = format!(
        "run {} · {} · {} measured, {} skipped, {} failed",
        run_name(run),
        run.timestamp,
        view.data.measured.len(),
        rows.len() - failed,
        failed
    );
    let versus = view.data.comparison().map_or(String::new(), |before| {
        format!(
            "vs {}: {}",
            run_name(before),
            summary_line(&changes(before, run))
        )
    });
    [text, versus]
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let gemm: Vec<_> = view
        .data
        .measured
        .iter()
        .filter(|m| m.family == "gemm")
        .collect();
    let gauges = best_percent_per_dtype(&gemm);
    let rows = view.data.current().map(not_measured).unwrap_or_default();
    let counts = outcome_counts(view.data, &rows);
    let telemetry = view.data.current().map(run_telemetry);
    let telemetry_height = match &telemetry {
        Some(t) if t.one_line().is_none() => {
            (t.rows().len() as u16 + 3).min((area.height / 4).max(4))
        }
        Some(_) => 1,
        None => 0,
    };
    let [head, gauge_area, sparks, telemetry_area, stacked] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(gauges.len().min(4) as u16),
        Constraint::Fill(1),
        Constraint::Length(telemetry_height),
        Constraint::Length(counts.len() as u16 + 3),
    ])
    .areas(area);
    let [first, second] = header(view);
    Line::from(first).render(Rect { height: 1, ..head }, buf);
    Line::from(second).render(
        Rect {
            y: head.y + 1,
            height: 1,
            ..head
        },
        buf,
    );
    for (i, (label, percent)) in gauges.iter().take(4).enumerate() {
        PeakGauge {
            label: format!("GEMM {label:<9}"),
            percent: *percent,
            style: view.theme.dtype(label.rsplit(' ').next()),
        }
        .render(
            Rect::new(gauge_area.x, gauge_area.y + i as u16, gauge_area.width, 1),
            buf,
        );
    }
    spark_rows(view).render(sparks, buf);
    if let Some(t) = &telemetry {
        telemetry_block(view, t, telemetry_area, buf);
    }
    outcomes_bar(view, counts).render(stacked, buf);
}

/// One line per benchmark: the figures read, then what was not read and why; one line for
/// the whole run when it read nothing (an old run, a VM without RAPL).
fn telemetry_block(view: &View, telemetry: &RunTelemetry, area: Rect, buf: &mut Buffer) {
    if let Some(line) = telemetry.one_line() {
        Line::from(line).render(area, buf);
        return;
    }
    let rows = telemetry.rows();
    let shown = area.height.saturating_sub(3) as usize;
    let title = if shown < rows.len() {
        format!(
            "Telemetry ({} benchmarks, the first {shown} shown; all in the report's run page)",
            rows.len()
        )
    } else {
        format!("Telemetry ({} benchmarks)", rows.len())
    };
    let width = |text: fn(&TelemetryRow) -> &str| {
        rows.iter()
            .map(|r| text(r).chars().count())
            .max()
            .unwrap_or(0) as u16
            + 1
    };
    TextTable {
        title,
        header: ["benchmark", "source", "read, or not read and why"]
            .map(String::from)
            .to_vec(),
        widths: vec![
            width(|r| &r.id).min(area.width / 3),
            width(|r| &r.source).max(5),
        ],
        rows: rows
            .iter()
            .map(|r| {
                let source = if r.source.is_empty() {
                    "none"
                } else {
                    &r.source
                };
                (
                    vec![r.id.clone(), source.to_owned(), r.line()],
                    ratatui::style::Style::new(),
                )
            })
            .collect(),
        selected: None,
        selected_style: view.theme.selected(),
    }
    .render(area, buf);
}

/// The benchmarks with the largest latest change first, each with its history.
fn spark_rows(view: &View) -> SparkRows {
    let mut rows: Vec<(f64, SparkRow)> = group(view.data)
        .map(|g| {
            g.benchmarks
                .iter()
                .map(|b| {
                    let change = b.latest_change_percent.unwrap_or(0.0);
                    let style = match b.status {
                        crate::analysis::trends::TrendStatus::Regressed => view.theme.failure(),
                        crate::analysis::trends::TrendStatus::Suspect => view.theme.warning(),
                        _ => ratatui::style::Style::new(),
                    };
                    let row = SparkRow {
                        label: b.id.clone(),
                        values: b.points.iter().map(|p| p.1).collect(),
                        note: format!(
                            "{} {}",
                            format_ns(b.latest_ns),
                            format_percent(b.latest_change_percent)
                        ),
                        style,
                    };
                    (change.abs(), row)
                })
                .collect()
        })
        .unwrap_or_default();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    SparkRows {
        title: "History (time/iter), largest latest change first".into(),
        rows: rows.into_iter().map(|r| r.1).collect(),
        selected: None,
        selected_style: view.theme.selected(),
    }
}
