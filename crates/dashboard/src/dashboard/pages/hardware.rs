//! Page 9, hardware: the cross-hardware report (`analyze-trends hardware`) on the
//! dashboard. Its recommendation matrix on top (per workload family the best device by
//! speed, perf/$ and perf/W), and below it the selected workload's figure on every device
//! as bars. The figures are the report's own ([`crate::analysis::hardware`]), so the page
//! and the report cannot disagree; "not measured" and "n/a" are written out, never drawn
//! as 0.

use crate::analysis::hardware::{Device, HardwareReport, Pick, WorkloadRow};
use crate::dashboard::widgets::{BarItem, Bars, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::{format_figure as number, peak_text};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;

pub const PAGE: Page = Page::new("hardware", "Hardware", render, items);

fn items(data: &Dashboard) -> usize {
    data.hardware.rows.len()
}

/// A device as the page names it: its kind and backend (`AMD EPYC [cpu]`), or its full key
/// when two machines share a kind.
pub fn device_name(report: &HardwareReport, key: &str) -> String {
    let Some(device) = report.devices.iter().find(|d| d.key == key) else {
        return key.to_string();
    };
    let short = |d: &Device| format!("{} [{}]", d.kind, d.backend);
    let name = short(device);
    let shared = report.devices.iter().filter(|d| short(d) == name).count();
    if shared > 1 { key.to_string() } else { name }
}

/// `text` cut to `width` characters at its end, so a device name keeps its start.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// A ranking's winner with its score, the name shortened so the score fits in `width`.
fn pick(report: &HardwareReport, p: &Pick, width: usize) -> String {
    match p {
        Pick::Best { device, score } => {
            let score = format!(" ({})", number(Some(*score)));
            let room = width.saturating_sub(score.chars().count() + 1);
            format!("{}{score}", fit(&device_name(report, device), room))
        }
        // Columns are narrow and truncation keeps a text's end: "n/a" first and short.
        Pick::NotAvailable { reason } if reason.starts_with("n/a") => "n/a".into(),
        Pick::NotAvailable { reason } => format!("n/a: {reason}"),
    }
}

/// The recommendation matrix: one row per workload family.
fn matrix(view: &View, report: &HardwareReport, width: u16) -> TextTable {
    // Borders 2, family 14 columns, its unit 10 (the fastest score is in it), "not
    // measured" at least 16, a space between columns; the three rankings share the rest.
    let column = (width.saturating_sub(2 + 14 + 10 + 16 + 5) / 3).max(12);
    let pick = |p: &Pick| pick(report, p, column as usize);
    let rows = report
        .recommendations
        .iter()
        .map(|r| {
            let not_measured: Vec<String> = r
                .not_measured
                .iter()
                .map(|d| device_name(report, d))
                .collect();
            let cells = vec![
                format!("{} ({})", r.family, r.compared_on),
                r.unit.to_string(),
                pick(&r.fastest),
                pick(&r.best_per_dollar),
                pick(&r.best_per_watt),
                if not_measured.is_empty() {
                    "-".into()
                } else {
                    not_measured.join(", ")
                },
            ];
            (cells, view.theme.series(0))
        })
        .collect();
    TextTable {
        title: format!(
            "Best device per family ({} devices; (n) workloads compared; perf/$: {})",
            report.devices.len(),
            report.price_basis
        ),
        header: [
            "family (n)",
            "unit",
            "fastest",
            "best perf/$",
            "best perf/W",
            "not measured",
        ]
        .map(String::from)
        .to_vec(),
        widths: vec![14, 10, column, column, column],
        rows,
        selected: None,
        selected_style: view.theme.selected(),
    }
}

/// The selected workload's figure per device; a device without one says so.
fn workload_bars(
    view: &View,
    report: &HardwareReport,
    (row, at): (&WorkloadRow, usize),
    width: u16,
) -> Bars {
    let items = report
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let label = device_name(report, &d.key);
            // Borders, a space and at least 8 columns of bar beside the label and text.
            let room = (width as usize).saturating_sub(label.chars().count() + 11);
            match row.cells.iter().find(|c| c.device == d.key) {
                Some(c) => BarItem {
                    label,
                    value: c.figure,
                    text: fit(
                        &format!(
                            "{} {} · {} · perf/$ {} · perf/W {}",
                            number(Some(c.figure)),
                            row.unit,
                            peak_text(c.percent_of_peak, c.suspect_peak.as_ref()),
                            number(c.perf_per_dollar),
                            number(c.perf_per_watt)
                        ),
                        room,
                    ),
                    style: view.theme.series(i),
                },
                None => BarItem {
                    label,
                    value: 0.0,
                    text: "not measured".into(),
                    style: view.theme.dimmed(),
                },
            }
        })
        .collect();
    Bars {
        title: format!(
            "{} ({}) · workload {} of {} (↑/↓)",
            row.workload,
            row.unit,
            at + 1,
            report.rows.len()
        ),
        items,
    }
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let report = &view.data.hardware;
    if report.rows.is_empty() {
        Line::from("No measured workloads: the hardware report needs recorded runs")
            .render(area, buf);
        return;
    }
    let selected = view.selected.min(report.rows.len() - 1);
    let table_height = (report.recommendations.len() as u16 + 4).min(area.height / 2);
    let [top, bottom] =
        Layout::vertical([Constraint::Length(table_height), Constraint::Fill(1)]).areas(area);
    matrix(view, report, area.width).render(top, buf);
    let row = (&report.rows[selected], selected);
    workload_bars(view, report, row, bottom.width).render(bottom, buf);
}
