//! Page 7, skips and failures: per family, how many benchmarks were measured, skipped and
//! failed (a stacked bar), then every skip and failure with its reason, failures first.

use crate::analysis::trends::{NotMeasured, not_measured};
use crate::dashboard::widgets::{Segment, StackedBar, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;
use std::collections::BTreeMap;

pub const PAGE: Page = Page::new("outcomes", "Skips/failures", render, items);

fn items(data: &Dashboard) -> usize {
    data.current().map_or(0, |r| not_measured(r).len())
}

/// (family → [measured, skipped, failed]) for the shown run.
pub fn outcome_counts(data: &Dashboard, rows: &[NotMeasured]) -> BTreeMap<String, [f64; 3]> {
    let mut counts: BTreeMap<String, [f64; 3]> = BTreeMap::new();
    for m in &data.measured {
        counts.entry(m.family.clone()).or_default()[0] += 1.0;
    }
    for n in rows {
        let family = n.id.split('/').next().unwrap_or_default().to_string();
        let slot = if n.outcome == "failed" { 2 } else { 1 };
        counts.entry(family).or_default()[slot] += 1.0;
    }
    counts
}

/// Measured, skipped and failed per family as one stacked bar each.
pub fn outcomes_bar(view: &View, counts: BTreeMap<String, [f64; 3]>) -> StackedBar {
    StackedBar {
        title: "Outcomes per family".into(),
        segments: vec![
            Segment {
                name: "measured".into(),
                style: view.theme.after(),
            },
            Segment {
                name: "skipped".into(),
                style: view.theme.warning(),
            },
            Segment {
                name: "failed".into(),
                style: view.theme.failure(),
            },
        ],
        rows: counts.into_iter().map(|(f, c)| (f, c.to_vec())).collect(),
        unit: "benchmarks".into(),
    }
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let rows = view.data.current().map(not_measured).unwrap_or_default();
    let counts = outcome_counts(view.data, &rows);
    let bar_height = (counts.len() as u16 + 3).min(area.height / 2);
    let [bars, table] =
        Layout::vertical([Constraint::Length(bar_height), Constraint::Fill(1)]).areas(area);
    outcomes_bar(view, counts).render(bars, buf);
    let table_rows = rows
        .iter()
        .map(|n| {
            let style = if n.outcome == "failed" {
                view.theme.failure()
            } else {
                view.theme.warning()
            };
            (
                vec![n.outcome.to_string(), n.id.clone(), n.reason.clone()],
                style,
            )
        })
        .collect();
    TextTable {
        title: format!("Not measured in this run ({})", rows.len()),
        header: ["outcome", "benchmark", "reason"]
            .map(String::from)
            .to_vec(),
        widths: vec![8, (area.width / 3).max(20)],
        rows: table_rows,
        selected: (!rows.is_empty()).then(|| view.selected.min(rows.len() - 1)),
        selected_style: view.theme.selected(),
    }
    .render(table, buf);
}
