//! Page 6, trends: the selected benchmark's median per run with its change points marked
//! (the steps `src/analysis/trends.rs` found), and every benchmark × run as a heatmap of
//! run-to-run change, regressions first. The history is the shown run's hardware group.

use crate::analysis::trends::{BenchmarkTrend, HardwareGroup};
use crate::dashboard::widgets::heatmap::Heatmap;
use crate::dashboard::widgets::line::{LegendPosition, XAxis};
use crate::dashboard::widgets::{LineChart, Series};
use crate::dashboard::{Dashboard, Page, View};
use crate::report::format::format_percent;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub const PAGE: Page = Page {
    name: "trends",
    title: "Trends",
    render,
    items,
};

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

/// A time unit that keeps the axis numbers short: (divisor, name).
pub fn time_unit(max_ns: f64) -> (f64, &'static str) {
    match max_ns {
        v if v >= 1e9 => (1e9, "s"),
        v if v >= 1e6 => (1e6, "ms"),
        v if v >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    }
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
    for cp in &b.change_points {
        let x = cp.run_index as f64 - 0.5;
        let top = max / div;
        series.push(Series {
            name: format!("step {}", format_percent(Some(cp.change_percent))),
            points: (0..=8).map(|k| (x, top * k as f64 / 8.0)).collect(),
            style: view.theme.failure(),
            line: true,
        });
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
    let [chart, map] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Fill(1)]).areas(area);
    history_chart(view, g, &g.benchmarks[selected]).render(chart, buf);
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
