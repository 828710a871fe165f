//! Writers of the history report ([`TrendReport`]): `report.md`, `report.html` (a
//! self-contained snapshot of the dashboard's pages, `crate::report::pages`), `report.json`,
//! `summary.csv`, and the compact terminal summary, all through [`HistoryReport`]'s one
//! [`ReportWriter`].

mod csv_summary;
mod html;
mod json;
mod markdown;
mod terminal;

use crate::analysis::trends::TrendReport;
use crate::files::atomic::{AtomicWriteError, write_atomic};
use crate::report::pages::{PageModel, SnapshotPage};
use crate::report::writer::{Format, ReportWriter, WriteError};
use crate::results::RunRecord;
use std::path::{Path, PathBuf};

/// Writes every file format into `dir` (atomically, each), returning their paths.
/// Without the runs, the reports carry the history only (no run pages or text charts).
pub fn write_reports(report: &TrendReport, dir: &Path) -> Result<Vec<PathBuf>, HistoryWriteError> {
    write_reports_with_runs(report, &[], dir)
}

/// As [`write_reports`], with the runs the report was made from: the HTML report gains
/// the newest run's charts and the Markdown report the dashboard's text charts.
pub fn write_reports_with_runs(
    report: &TrendReport,
    runs: &[RunRecord],
    dir: &Path,
) -> Result<Vec<PathBuf>, HistoryWriteError> {
    write_reports_with_snapshot(report, runs, SnapshotPage::of(report, runs), dir)
}

/// As [`write_reports_with_runs`], with `report.html` drawn from `snapshot` (which can
/// carry the store's runs list, comparisons and hardware matrix besides the history).
pub fn write_reports_with_snapshot(
    report: &TrendReport,
    runs: &[RunRecord],
    snapshot: SnapshotPage,
    dir: &Path,
) -> Result<Vec<PathBuf>, HistoryWriteError> {
    HistoryReport::new(report, runs, snapshot).write_files(dir)
}

/// Why the history report's files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryWriteError {
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    File(#[from] AtomicWriteError),
}

/// The formats of the history report: the terminal summary and the four files.
pub const HISTORY_REPORT_FORMATS: &[Format] = &[
    Format::Table,
    Format::Markdown,
    Format::Html,
    Format::Json,
    Format::Csv,
];

/// The formats written as files into the reports directory (the table is the terminal's).
const HISTORY_FILE_FORMATS: &[Format] =
    &[Format::Markdown, Format::Html, Format::Json, Format::Csv];

/// The file each format is written to: `report.md`, `report.html`, `report.json`, and
/// `summary.csv` (the CSV is a summary, one row per benchmark, not the whole report).
fn file_name(format: Format) -> String {
    match format {
        Format::Csv => "summary.csv".into(),
        other => format!("report.{}", other.extension()),
    }
}

/// The history report as one model for every writer: the trends, the runs they were made
/// from, and the dashboard snapshot `report.html` draws.
pub struct HistoryReport<'a> {
    report: &'a TrendReport,
    runs: &'a [RunRecord],
    page: PageModel,
}

impl<'a> HistoryReport<'a> {
    pub fn new(report: &'a TrendReport, runs: &'a [RunRecord], snapshot: SnapshotPage) -> Self {
        HistoryReport {
            report,
            runs,
            page: PageModel::Snapshot(Box::new(snapshot)),
        }
    }

    /// Writes every file format into `dir` (atomically, each), returning their paths.
    pub fn write_files(&self, dir: &Path) -> Result<Vec<PathBuf>, HistoryWriteError> {
        let mut written = Vec::new();
        for format in HISTORY_FILE_FORMATS {
            let path = dir.join(file_name(*format));
            write_atomic(&path, &self.to_bytes(*format)?)?;
            written.push(path);
        }
        Ok(written)
    }
}

impl ReportWriter for HistoryReport<'_> {
    fn command(&self) -> &'static str {
        "analyze-trends report"
    }

    fn formats(&self) -> &'static [Format] {
        HISTORY_REPORT_FORMATS
    }

    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => terminal::render(self.report),
            Format::Markdown => markdown::render(self.report, self.runs),
            Format::Html => html::render(&self.page),
            Format::Json => json::render(self.report, self.runs),
            Format::Csv => csv_summary::render(self.report)?,
            _ => return Ok(None),
        }))
    }
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

#[cfg(test)]
mod not_measured_tests {
    use crate::analysis::simulate::{HistoryScenario, Scenario, simulate_history};
    use crate::analysis::trends::{TrendOptions, analyze_history};
    use crate::sidecar::{BenchmarkOutcome, TargetReport};
    use crate::workload::{BenchId, Suite};

    #[test]
    fn the_latest_runs_skips_and_failures_reach_the_report_model() {
        let mut runs = simulate_history(&HistoryScenario {
            runs: 3,
            benchmarks: 4,
            stepped: 0,
            step_at: 0,
            step_percent: 0.0,
            run: Scenario::clean(1),
        });
        let mut target = TargetReport::new("gemm", Suite::Quick);
        target.record(
            &BenchId::new("gemm", "cuda", "all", "all"),
            BenchmarkOutcome::Skipped {
                reason: "no driver".into(),
            },
        );
        target.record(
            &BenchId::new("gemm", "cpu", "f16", "512x512x512"),
            BenchmarkOutcome::Failed {
                error: "wrong result".into(),
            },
        );
        target.record(
            &BenchId::new("gemm", "cpu", "f32", "512x512x512"),
            BenchmarkOutcome::Measured {
                notes: Default::default(),
            },
        );
        let last = runs.len() - 1;
        runs[last]
            .targets
            .push(serde_json::to_value(&target).unwrap());
        // A record this version cannot parse is passed over, not fatal.
        runs[last]
            .targets
            .push(serde_json::json!({"schema": "someone.else.v9"}));
        let report = analyze_history(&runs, &TrendOptions::default(), Vec::new());
        let rows = &report.groups[0].not_measured;
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(
            (rows[0].outcome, rows[0].id.as_str()),
            ("failed", "gemm/cpu/f16/512x512x512")
        );
        assert_eq!(
            (rows[1].outcome, rows[1].reason.as_str()),
            ("skipped", "no driver")
        );
        let markdown = super::markdown::render(&report, &runs);
        assert!(
            markdown.contains("| failed | `gemm/cpu/f16/512x512x512` | wrong result |"),
            "{markdown}"
        );
        // No profile was taken: no profiles section.
        assert!(
            !markdown.contains("Profiles of the latest run"),
            "{markdown}"
        );
        let terminal = super::terminal::render(&report);
        assert!(
            terminal.contains("FAILED gemm/cpu/f16/512x512x512: wrong result"),
            "{terminal}"
        );
    }

    #[test]
    fn the_latest_runs_profiles_are_linked_or_explained_in_report_md() {
        use crate::harness::profile::{ProfileOutcome, ProfileRecord, Profiler};
        let mut runs = simulate_history(&HistoryScenario {
            runs: 2,
            benchmarks: 2,
            stepped: 0,
            step_at: 0,
            step_percent: 0.0,
            run: Scenario::clean(1),
        });
        let mut target = TargetReport::new("gemm", Suite::Quick);
        let written = ProfileRecord {
            id: "gemm/cpu/f32/512x512x512".into(),
            tool: Profiler::Perf,
            side: None,
            outcome: ProfileOutcome::Written {
                path: "/c/stackbench/profiles/gemm_cpu_f32_512x512x512.perf.data".into(),
                bytes: 4096,
                command: vec!["perf".into(), "record".into()],
            },
        };
        let refused = ProfileRecord {
            id: "gemm/cpu/f64/512x512x512".into(),
            tool: Profiler::Perf,
            side: None,
            outcome: ProfileOutcome::Failed {
                error: "perf lacks permission: kernel.perf_event_paranoid is 3".into(),
            },
        };
        for record in [&written, &refused] {
            target
                .profiles
                .insert(record.id.clone(), serde_json::to_value(record).unwrap());
        }
        let last = runs.len() - 1;
        runs[last]
            .targets
            .push(serde_json::to_value(&target).unwrap());
        let report = analyze_history(&runs, &TrendOptions::default(), Vec::new());
        let markdown = super::markdown::render(&report, &runs);
        assert!(
            markdown.contains("## Profiles of the latest run")
                && markdown.contains(
                    "| `gemm/cpu/f32/512x512x512` | perf | [/c/stackbench/profiles/gemm_cpu_f32_512x512x512.perf.data](</c/stackbench/profiles/gemm_cpu_f32_512x512x512.perf.data>) (4 KiB) |"
                )
                && markdown.contains(
                    "| `gemm/cpu/f64/512x512x512` | perf | failed: perf lacks permission: kernel.perf_event_paranoid is 3 |"
                ),
            "{markdown}"
        );
    }
}
