//! Writers of the cross-hardware report ([`HardwareReport`]): a terminal table, Markdown,
//! one self-contained HTML file, and JSON. The three text formats share one set of rows
//! ([`figure_rows`], [`recommendation_rows`]), so a figure reads the same in each, and
//! "n/a" (never 0) stands wherever a price, a power reading or a peak is missing.

mod html;
mod markdown;
mod table;

use crate::analysis::hardware::{HardwareReport, Pick};

/// The formats `analyze-trends hardware --format` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HardwareFormat {
    Table,
    Markdown,
    Html,
    Json,
}

/// The report in `format`.
pub fn render(report: &HardwareReport, format: HardwareFormat) -> String {
    match format {
        HardwareFormat::Table => table::render(report),
        HardwareFormat::Markdown => markdown::render(report),
        HardwareFormat::Html => html::render(report),
        HardwareFormat::Json => {
            let mut text = serde_json::to_string_pretty(report)
                .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
            text.push('\n');
            text
        }
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

pub(crate) const RECOMMENDATION_HEADERS: [&str; 5] = [
    "family",
    "fastest",
    "best perf/$",
    "best perf/W",
    "not measured",
];

/// A number with three significant figures, or "n/a".
pub(crate) fn number(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => {
            let magnitude = v.abs();
            if magnitude >= 100.0 {
                format!("{v:.0}")
            } else if magnitude >= 10.0 {
                format!("{v:.1}")
            } else if magnitude >= 0.01 || magnitude == 0.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3e}")
            }
        }
        _ => "n/a".into(),
    }
}

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
                    c.percent_of_peak
                        .map(|p| format!("{p:.1} %"))
                        .unwrap_or_else(|| "n/a".into()),
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

fn pick(p: &Pick) -> String {
    match p {
        Pick::Best { device, score } => format!("{device} ({})", number(Some(*score))),
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
                format!("{} (over {} workloads)", r.family, r.compared_on),
                pick(&r.fastest),
                pick(&r.best_per_dollar),
                pick(&r.best_per_watt),
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
        "{} devices. perf/$ = figure per price ({}); perf/W = figure per watt of mean power while the benchmark ran; n/a = no price, power reading or peak for that device. Scores in the recommendation matrix are geometric means over the workloads every ranked device measured.",
        report.devices.len(),
        report.price_basis
    )
}
