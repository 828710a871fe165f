//! Page 5, before/after: the shown run against `--compare` (else the run before it). Both
//! runs overlaid, before in red and after in green, as time relative to before; each
//! benchmark marked ▲ improved beyond 5 %, ▼ degraded beyond 5 %, – within; a summary line.

use crate::dashboard::widgets::line::{LegendPosition, XAxis};
use crate::dashboard::widgets::{LineChart, Series, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::results::RunRecord;
use crate::units::{format_ns, format_percent};
use crate::view::model::{changes, run_name};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

/// Beyond this change a benchmark counts as improved or degraded on this page.
pub const MARK_PERCENT: f64 = 5.0;

pub const PAGE: Page = Page::new("compare", "Before/after", render, items);

fn items(data: &Dashboard) -> usize {
    match (data.comparison(), data.current()) {
        (Some(before), Some(after)) => changes(before, after).len(),
        _ => 0,
    }
}

/// `▲` improved (faster), `▼` degraded, `–` within the mark.
pub fn marker(change_percent: f64) -> &'static str {
    if change_percent < -MARK_PERCENT {
        "▲"
    } else if change_percent > MARK_PERCENT {
        "▼"
    } else {
        "–"
    }
}

/// `3 improved ▲ · 1 degraded ▼ · 10 within ±5 %`.
pub fn summary_line(rows: &[(String, f64, f64, f64)]) -> String {
    let count = |m: &str| rows.iter().filter(|r| marker(r.3) == m).count();
    format!(
        "{} improved ▲ · {} degraded ▼ · {} within ±{MARK_PERCENT} %",
        count("▲"),
        count("▼"),
        count("–")
    )
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let (Some(before), Some(after)) = (view.data.comparison(), view.data.current()) else {
        Line::from("Before/after needs two runs: record another, or pass --compare RUN")
            .render(area, buf);
        return;
    };
    let rows = ordered_changes(before, after);
    let [head, chart_area, table_area] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Percentage(40),
        Constraint::Fill(1),
    ])
    .areas(area);
    Line::from(format!(
        "before {} → after {}",
        run_name(before),
        run_name(after)
    ))
    .render(head, buf);
    Line::from(summary_line(&rows)).render(
        Rect {
            y: head.y + 1,
            ..head
        },
        buf,
    );
    overlay_chart(view, &rows).render(chart_area, buf);
    table(view, &rows).render(table_area, buf);
}

type Change = (String, f64, f64, f64);

/// Degraded first, then improved, each largest change first, then the rest: what needs a
/// look leads.
fn ordered_changes(before: &RunRecord, after: &RunRecord) -> Vec<Change> {
    let mut rows = changes(before, after);
    rows.sort_by(|a, b| b.3.total_cmp(&a.3).then_with(|| a.0.cmp(&b.0)));
    let (slower, rest): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.3 > MARK_PERCENT);
    let (mut faster, within): (Vec<_>, Vec<_>) =
        rest.into_iter().partition(|r| r.3 < -MARK_PERCENT);
    faster.reverse();
    slower.into_iter().chain(faster).chain(within).collect()
}

/// Before (a flat 100 %) and after overlaid, per benchmark in table order.
fn overlay_chart(view: &View, rows: &[Change]) -> LineChart {
    let before_points: Vec<(f64, f64)> = (0..rows.len()).map(|i| (i as f64, 100.0)).collect();
    let after_points: Vec<(f64, f64)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (i as f64, 100.0 * r.2 / r.1))
        .collect();
    LineChart {
        title: "Time relative to before, per benchmark".into(),
        x: XAxis::Linear {
            title: "benchmark (table order)".into(),
            labels: vec!["1".into(), rows.len().to_string()],
        },
        y_title: "% of before".into(),
        series: vec![
            Series {
                name: "before".into(),
                points: before_points,
                style: view.theme.before(),
                line: true,
            },
            Series {
                name: "after".into(),
                points: after_points,
                style: view.theme.after(),
                line: false,
            },
        ],
        legend: LegendPosition::BottomRight,
    }
}

fn table(view: &View, rows: &[Change]) -> TextTable {
    let table_rows = rows
        .iter()
        .map(|(id, old, new, change)| {
            let style = match marker(*change) {
                "▲" => view.theme.after(),
                "▼" => view.theme.failure(),
                _ => ratatui::style::Style::new(),
            };
            let cells = vec![
                marker(*change).to_string(),
                format_ns(*old),
                format_ns(*new),
                format_percent(Some(*change)),
                id.clone(),
            ];
            (cells, style)
        })
        .collect();
    TextTable {
        title: "Per benchmark".into(),
        header: ["", "before", "after", "change", "benchmark"]
            .map(String::from)
            .to_vec(),
        widths: vec![1, 9, 9, 9],
        rows: table_rows,
        selected: Some(view.selected.min(rows.len().saturating_sub(1))),
        selected_style: view.theme.selected(),
    }
}
