//! The cross-hardware page: the recommendation matrix and the figures by workload, the same
//! rows the terminal, Markdown and HTML writers of `analyze-trends hardware` print
//! (`crate::report::hardware`), plus the report model itself for API readers.

use crate::analysis::hardware::HardwareReport;
use crate::report::hardware::{
    FIGURE_HEADERS, RECOMMENDATION_HEADERS, figure_rows, legend, recommendation_rows,
};
use serde::Serialize;

/// A table as headers and rows of text.
#[derive(Clone, Debug, Serialize)]
pub struct TextTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl TextTable {
    fn of<const N: usize>(headers: &[&str; N], rows: Vec<[String; N]>) -> TextTable {
        TextTable {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: rows.into_iter().map(|r| r.to_vec()).collect(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct HardwarePage {
    /// What the numbers mean (units, prices, peaks).
    pub legend: String,
    pub recommendation: TextTable,
    pub figures: TextTable,
    /// The whole model, as `analyze-trends hardware --format json` writes it.
    pub report: HardwareReport,
}

impl HardwarePage {
    pub fn of(report: &HardwareReport) -> HardwarePage {
        HardwarePage {
            legend: legend(report),
            recommendation: TextTable::of(&RECOMMENDATION_HEADERS, recommendation_rows(report)),
            figures: TextTable::of(&FIGURE_HEADERS, figure_rows(report)),
            report: report.clone(),
        }
    }
}
