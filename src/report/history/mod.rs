//! Writers of the history report ([`TrendReport`]): `report.md`, `report.html` (one
//! self-contained file with inline SVG charts), `report.json`, `summary.csv`, and the
//! compact terminal summary.

mod csv_summary;
mod html;
mod json;
mod markdown;
mod terminal;

use crate::analysis::trends::TrendReport;
use crate::results::atomic::{AtomicWriteError, write_atomic};
use std::path::{Path, PathBuf};

pub use terminal::render as render_terminal;

/// Writes every file format into `dir` (atomically, each), returning their paths.
pub fn write_reports(report: &TrendReport, dir: &Path) -> Result<Vec<PathBuf>, AtomicWriteError> {
    let files: [(&str, Vec<u8>); 4] = [
        ("report.md", markdown::render(report).into_bytes()),
        ("report.html", html::render(report).into_bytes()),
        ("report.json", json::render(report).into_bytes()),
        ("summary.csv", csv_summary::render(report)),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let path = dir.join(name);
        write_atomic(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// Short display of a run: its label, else its id.
pub(crate) fn run_name(
    report_group: &crate::analysis::trends::HardwareGroup,
    index: usize,
) -> String {
    report_group
        .runs
        .get(index)
        .map(|r| r.label.clone().unwrap_or_else(|| r.run_id.clone()))
        .unwrap_or_default()
}
