//! Writers of the cross-hardware report ([`HardwareReport`]): a terminal table, Markdown,
//! one self-contained HTML file, and JSON. The three text formats share one set of rows
//! ([`figure_rows`], [`recommendation_rows`]), so a figure reads the same in each, and
//! "n/a" (never 0) stands wherever a price, a power reading or a peak is missing. Each
//! figure is printed in its own unit; a figure above its peak shows "peak suspect" with the
//! peak's source, never a percentage over 100.

mod html;
mod markdown;
mod table;

use crate::analysis::hardware::{Cell, HardwareReport, Pick};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};
use crate::units::{RateUnit, format_figure as number};

/// The formats `analyze-trends hardware --format` writes.
pub const HARDWARE_FORMATS: &[Format] =
    &[Format::Table, Format::Markdown, Format::Html, Format::Json];

impl ReportWriter for HardwareReport {
    fn command(&self) -> &'static str {
        "analyze-trends hardware"
    }

    fn formats(&self) -> &'static [Format] {
        HARDWARE_FORMATS
    }

    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => table::render(self),
            Format::Markdown => markdown::render(self),
            Format::Html => html::render(self),
            Format::Json => json_text(self)?,
            _ => return Ok(None),
        }))
    }
}

pub(crate) const FIGURE_HEADERS: [&str; 8] = [
    "family",
    "workload",
    "device",
    "figure",
    "% of peak",
    "perf/$",
    "perf/W",
    "spread (runs)",
];

pub(crate) const DEVICE_HEADERS: [&str; 4] = ["device", "name", "measured through", "runs"];

/// One row per device: its key (as the other tables name it), the device's name in the
/// probe, and the API its figures came through.
pub(crate) fn device_rows(report: &HardwareReport) -> Vec<[String; 4]> {
    report
        .devices
        .iter()
        .map(|d| {
            [
                d.key.clone(),
                d.kind.clone(),
                d.api.clone(),
                d.runs.to_string(),
            ]
        })
        .collect()
}

pub(crate) const RECOMMENDATION_HEADERS: [&str; 5] = [
    "family",
    "fastest",
    "best perf/$",
    "best perf/W",
    "not measured",
];

/// One row per (workload, device).
pub(crate) fn figure_rows(report: &HardwareReport) -> Vec<[String; 8]> {
    report
        .rows
        .iter()
        .flat_map(|row| {
            row.cells.iter().map(move |c| {
                [
                    row.family.clone(),
                    row.workload.clone(),
                    c.device.clone(),
                    format!("{} {}", number(Some(c.figure)), row.unit),
                    percent_of_peak(c),
                    number(c.perf_per_dollar),
                    number(c.perf_per_watt),
                    match c.spread_percent {
                        Some(s) => format!("{s:.1} % ({})", c.runs),
                        None => format!("n/a ({})", c.runs),
                    },
                ]
            })
        })
        .collect()
}

/// The "% of peak" cell: `55.1 %`, `n/a`, or the suspect peak and where it came from.
fn percent_of_peak(c: &Cell) -> String {
    match (&c.suspect_peak, c.percent_of_peak) {
        (Some(suspect), _) => suspect.describe(),
        (None, Some(p)) => format!("{p:.1} %"),
        (None, None) => "n/a".into(),
    }
}

/// A ranking's winner and score; `unit` for the figure's own ranking, none for the
/// per-dollar and per-watt ones.
fn pick(p: &Pick, unit: Option<RateUnit>) -> String {
    match p {
        Pick::Best { device, score } => match unit {
            Some(unit) => format!("{device} ({} {unit})", number(Some(*score))),
            None => format!("{device} ({})", number(Some(*score))),
        },
        Pick::NotAvailable { reason } => reason.clone(),
    }
}

/// One row per workload family.
pub(crate) fn recommendation_rows(report: &HardwareReport) -> Vec<[String; 5]> {
    report
        .recommendations
        .iter()
        .map(|r| {
            [
                format!(
                    "{} ({}, over {} workloads)",
                    r.family, r.unit, r.compared_on
                ),
                pick(&r.fastest, Some(r.unit)),
                pick(&r.best_per_dollar, None),
                pick(&r.best_per_watt, None),
                if r.not_measured.is_empty() {
                    "-".into()
                } else {
                    r.not_measured.join(", ")
                },
            ]
        })
        .collect()
}

/// The sentence under each format's title: what perf/$ and perf/W mean here.
pub(crate) fn legend(report: &HardwareReport) -> String {
    format!(
        "{} devices. perf/$ = figure per price ({}); perf/W = figure per watt of mean power while the benchmark ran; n/a = no price, power reading or peak for that device; peak suspect = a figure exceeded the peak the probe recorded, so that peak is wrong and the source it came from is named instead of a percentage. Scores in the recommendation matrix are geometric means over the workloads every ranked device measured.",
        report.devices.len(),
        report.price_basis
    )
}
