//! Page 6, trends: the selected benchmark's median per run with its change points marked
//! (the steps `crates/analysis/src/trends.rs` found), and every benchmark × run as a heatmap of
//! run-to-run change, regressions first. The history is the shown run's hardware group.
//! An acknowledged step (`analyze-trends ack`) is marked at its run, with who and why
//! beneath the chart, because the verdict is judged from there on.

use crate::analysis::trends::{BenchmarkTrend, HardwareGroup};
use crate::dashboard::widgets::heatmap::Heatmap;
use crate::dashboard::widgets::line::{LegendPosition, XAxis};
use crate::dashboard::widgets::{LineChart, Series};
use crate::dashboard::{Dashboard, Page, View};
use crate::results::Acknowledgement;
use crate::units::{format_percent, time_unit};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub const PAGE: Page = Page::new("trends", "Trends", render, items);

fn items(data: &Dashboard) -> usize {
    group(data).map_or(0, |g| g.benchmarks.len())
}

/// The hardware group holding the shown run (history is only compared within one).
pub fn group(data: &Dashboard) -> Option<&HardwareGroup> {
    let id = data.current().map(|r| r.run_id.as_str());
    data.trends
        .groups
        .iter()
        .find(|g| g.runs.iter().any(|r| Some(r.run_id.as_str()) == id))
        .or(data.trends.groups.first())
}

fn history_chart(view: &View, g: &HardwareGroup, b: &BenchmarkTrend) -> LineChart {
    let max = b.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let (div, unit) = time_unit(max);
    let points: Vec<(f64, f64)> = b.points.iter().map(|&(i, v)| (i as f64, v / div)).collect();
    let mut series = vec![Series {
        name: "median".into(),
        points,
        style: view.theme.series(0),
        line: true,
    }];
    let top = max / div;
    for cp in &b.change_points {
        let name = format!("step {}", format_percent(Some(cp.change_percent)));
        let x = cp.run_index as f64 - 0.5;
        series.push(vertical(name, x, top, view.theme.failure()));
    }
    if let Some((index, a)) = acknowledged_run(g, b) {
        let name = format!("ack by {}", a.who);
        series.push(vertical(name, index as f64, top, view.theme.warning()));
    }
    LineChart {
        title: format!(
            "{} ({}, {} steps)",
            b.id,
            b.status.as_str(),
            b.change_points.len()
        ),
        x: XAxis::Linear {
            title: "run".into(),
            labels: vec!["1".into(), g.runs.len().to_string()],
        },
        y_title: format!("time/iter ({unit})"),
        series,
        legend: LegendPosition::TopLeft,
    }
}

/// A vertical marker at run position `x`, from 0 to `top`.
fn vertical(name: String, x: f64, top: f64, style: ratatui::style::Style) -> Series {
    Series {
        name,
        points: (0..=8).map(|k| (x, top * k as f64 / 8.0)).collect(),
        style,
        line: true,
    }
}

/// The benchmark's acknowledged step and its run's index in the group, when it has one.
pub fn acknowledged_run<'a>(
    g: &HardwareGroup,
    b: &'a BenchmarkTrend,
) -> Option<(usize, &'a Acknowledgement)> {
    let a = b.acknowledged.as_ref()?;
    let index = g.runs.iter().position(|r| r.run_id == a.run_id)?;
    Some((index, a))
}

/// The line under the chart: who acknowledged the selected benchmark's step and why, else
/// which other benchmarks of this history carry an acknowledgement.
fn acknowledgement_line(g: &HardwareGroup, b: &BenchmarkTrend) -> String {
    if let Some((index, a)) = acknowledged_run(g, b) {
        let run = &g.runs[index];
        let name = run.label.as_deref().unwrap_or(&run.run_id);
        return format!(
            "Acknowledged at run {} ({name}) by {}: {}",
            index + 1,
            a.who,
            a.reason
        );
    }
    let others: Vec<&str> = g.acknowledged().map(|(t, _)| t.id.as_str()).collect();
    match others.len() {
        0 => "No acknowledged steps in this history".into(),
        n => format!(
            "{n} acknowledged (↑/↓ to see who and why): {}",
            others.join(", ")
        ),
    }
}

/// Per benchmark, each run's change against the run before it, in percent.
pub fn run_to_run(g: &HardwareGroup, b: &BenchmarkTrend) -> Vec<Option<f64>> {
    let mut changes = vec![None; g.runs.len()];
    for pair in b.points.windows(2) {
        let ((_, old), (i, new)) = (pair[0], pair[1]);
        if old > 0.0 {
            changes[i] = Some(100.0 * (new / old - 1.0));
        }
    }
    changes
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let Some(g) = group(view.data).filter(|g| !g.benchmarks.is_empty()) else {
        Line::from("No history: trends need recorded runs").render(area, buf);
        return;
    };
    let selected = view.selected.min(g.benchmarks.len() - 1);
    let [chart, ack, map] = Layout::vertical([
        Constraint::Percentage(55),
        Constraint::Length(1),
        Constraint::Fill(1),
    ])
    .areas(area);
    let b = &g.benchmarks[selected];
    history_chart(view, g, b).render(chart, buf);
    Line::from(acknowledgement_line(g, b)).render(ack, buf);
    // The selected benchmark first, then the rest in report order (regressions first).
    let mut rows: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for (i, b) in g.benchmarks.iter().enumerate() {
        let label = format!("{} {}", if i == selected { "›" } else { " " }, b.id);
        rows.push((label, run_to_run(g, b)));
    }
    rows.rotate_left(selected);
    Heatmap {
        title: "Change vs previous run (▼ slower, ▲ faster, · within 5 %)".into(),
        rows,
        threshold_percent: view.data.trends.threshold_percent,
        theme: view.theme,
    }
    .render(map, buf);
}
