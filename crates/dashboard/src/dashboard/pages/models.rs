//! Page 10 (key 0), models: the recommendation of `stackbench recommend` on the dashboard.
//! On top the matrix (one row per model and phase, one column per machine, the best cell of
//! each and the pick across them); below it the selected row's score on every machine as
//! bars. The matrix is the recommendation's own ([`crate::analysis::recommend`]), with no
//! SLO and ranked by throughput, so the page and `stackbench recommend` cannot disagree. A
//! machine without a figure reads "no data", never a bar of 0.

use crate::analysis::recommend::{ModelRow, Rank, Recommendation, Verdict};
use crate::dashboard::widgets::{BarItem, Bars, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::format_figure as number;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub const PAGE: Page = Page::new("models", "Models", render, items);

fn items(data: &Dashboard) -> usize {
    data.recommendation.as_ref().map_or(0, |r| r.rows.len())
}

/// A machine as the columns name it: its device, with the fingerprint when two share one.
fn machine(rec: &Recommendation, index: usize) -> String {
    let column = &rec.hardware[index];
    let shared = rec
        .hardware
        .iter()
        .filter(|h| h.device == column.device)
        .count();
    if shared > 1 {
        format!("{} ({})", column.device, column.fingerprint)
    } else {
        column.device.clone()
    }
}

/// A verdict in a cell: the pick's axes and score, or why there is none.
fn cell_text(rec: &Recommendation, verdict: &Verdict) -> String {
    match verdict {
        Verdict::Best { cell, score } => {
            let unit = match rec.rank {
                Rank::Throughput => cell.rate_unit.clone(),
                Rank::PerDollar => format!("{}/$", cell.rate_unit),
                Rank::PerWatt => format!("{}/J", cell.rate_unit.trim_end_matches("/s")),
            };
            format!("{} {} {unit}", cell.axes(), number(Some(*score)))
        }
        other => other.describe(),
    }
}

/// The pick across machines: which machine, then the cell.
fn pick_text(rec: &Recommendation, row: &ModelRow) -> String {
    match &row.pick {
        Verdict::Best { cell, .. } => {
            let at = rec
                .hardware
                .iter()
                .position(|h| h.fingerprint == cell.hardware)
                .map_or_else(|| cell.device.clone(), |i| machine(rec, i));
            format!("{at}: {}", cell_text(rec, &row.pick))
        }
        other => cell_text(rec, other),
    }
}

fn matrix(view: &View, rec: &Recommendation, width: u16) -> TextTable {
    // Borders 2, model/phase 24 columns; the machines and the pick share the rest.
    let columns = rec.hardware.len() as u16 + 1;
    let column = (width.saturating_sub(2 + 24 + columns) / columns).max(14);
    let mut header = vec!["model · phase".to_string()];
    header.extend((0..rec.hardware.len()).map(|i| machine(rec, i)));
    header.push("best".into());
    let rows = rec
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![format!("{} · {}", row.model, row.phase)];
            cells.extend(row.cells.iter().map(|v| cell_text(rec, v)));
            cells.push(pick_text(rec, row));
            (cells, view.theme.series(0))
        })
        .collect();
    let mut widths = vec![24];
    widths.extend(std::iter::repeat_n(column, rec.hardware.len()));
    TextTable {
        title: format!(
            "Best cell per model ({} machines; rank: {}; no SLO — `stackbench recommend --slo` sets one)",
            rec.hardware.len(),
            rec.rank
        ),
        header,
        widths,
        rows,
        selected: Some(view.selected.min(rec.rows.len().saturating_sub(1))),
        selected_style: view.theme.selected(),
    }
}

/// The selected row's score on every machine; one without a figure says why.
fn row_bars(view: &View, rec: &Recommendation, (row, at): (&ModelRow, usize)) -> Bars {
    let items = row
        .cells
        .iter()
        .enumerate()
        .map(|(i, verdict)| match verdict {
            Verdict::Best { score, .. } => BarItem {
                label: machine(rec, i),
                value: *score,
                text: cell_text(rec, verdict),
                style: view.theme.series(i),
            },
            other => BarItem {
                label: machine(rec, i),
                value: 0.0,
                text: other.describe(),
                style: view.theme.dimmed(),
            },
        })
        .collect();
    Bars {
        title: format!(
            "{} · {} on each machine · row {} of {} (↑/↓)",
            row.model,
            row.phase,
            at + 1,
            rec.rows.len()
        ),
        items,
    }
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let rec = match &view.data.recommendation {
        Ok(rec) if !rec.rows.is_empty() => rec,
        Ok(_) => {
            Line::from("No model rows: the stored sweeps measured no cell").render(area, buf);
            return;
        }
        Err(why) => {
            Line::from(format!("No recommendation: {why}")).render(area, buf);
            return;
        }
    };
    let selected = view.selected.min(rec.rows.len() - 1);
    let table_height = (rec.rows.len() as u16 + 4).min(area.height / 2);
    let [top, bottom] =
        Layout::vertical([Constraint::Length(table_height), Constraint::Fill(1)]).areas(area);
    matrix(view, rec, area.width).render(top, buf);
    row_bars(view, rec, (&rec.rows[selected], selected)).render(bottom, buf);
}
