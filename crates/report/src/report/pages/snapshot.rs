//! `report.html`: the pages of the dashboard in one self-contained document (the library
//! and script inlined, no network): the newest run's page, the regressions, per hardware
//! the latest run against its baseline, each benchmark's history (grouped by family,
//! drawn when its family is opened, so 1,000 benchmarks stay fast), the runs, the stored
//! comparisons, the hardware matrix and, when the store holds model sweeps, the sweep
//! page with its recommendation matrix.

use super::{
    ComparisonPage, ComparisonsPage, HardwarePage, HistoryPage, RunPage, RunsPage, SweepPage,
};
use crate::analysis::trends::{NotMeasured, TrendReport};
use crate::results::{Acknowledgement, MedianSeries, RunStore, StoredRun};
use serde::Serialize;

/// Slices a history chart's runs are thinned to once there are more than twice as many:
/// two points per slice is still more than one per pixel of the plot.
pub const HISTORY_BUCKETS: usize = 120;

/// One row of "latest run vs baseline".
#[derive(Clone, Debug, Serialize)]
pub struct LatestRow {
    pub bench_id: String,
    pub status: &'static str,
    pub baseline_ns: Option<f64>,
    pub latest_ns: f64,
    pub change_percent: Option<f64>,
    pub steps: usize,
}

/// One hardware's summary: its runs, verdict, latest-vs-baseline rows, what the latest run
/// did not measure, and acknowledged steps.
#[derive(Clone, Debug, Serialize)]
pub struct HardwareSummary {
    pub hardware: String,
    pub runs: usize,
    pub status: &'static str,
    pub latest: Vec<LatestRow>,
    pub not_measured: Vec<NotMeasured>,
    pub acknowledged: Vec<Acknowledgement>,
}

/// A regression the history found: where, by how much, from which run.
#[derive(Clone, Debug, Serialize)]
pub struct RegressionRow {
    pub bench_id: String,
    pub hardware: String,
    pub before_ns: f64,
    pub after_ns: f64,
    pub change_percent: f64,
    pub run_id: String,
    pub run_name: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct SnapshotPage {
    pub generated: String,
    pub threshold_percent: f64,
    pub status: &'static str,
    /// Runs that could not be read, each with its reason.
    pub problems: Vec<String>,
    pub latest_run: Option<RunPage>,
    pub regressions: Vec<RegressionRow>,
    pub hardware_groups: Vec<HardwareSummary>,
    pub histories: Vec<HistoryPage>,
    pub runs: RunsPage,
    pub comparisons: ComparisonsPage,
    /// Each stored comparison's page.
    pub comparison_pages: Vec<ComparisonPage>,
    pub hardware: Option<HardwarePage>,
    /// The newest sweep per machine and the recommendation matrix (throughput, no SLO);
    /// `None` when the store holds no measured sweep cell.
    pub sweeps: Option<SweepPage>,
}

impl SnapshotPage {
    /// The snapshot from the history report and the runs it shows whole; the runs list,
    /// comparisons and the hardware matrix come as the caller has them.
    pub fn of(report: &TrendReport, whole_runs: &[crate::results::RunRecord]) -> SnapshotPage {
        SnapshotPage {
            generated: report.generated.clone(),
            threshold_percent: report.threshold_percent,
            status: report.overall_status.as_str(),
            problems: report.problems.clone(),
            latest_run: RunPage::latest_of(whole_runs),
            regressions: regressions(report),
            hardware_groups: report.groups.iter().map(summary).collect(),
            histories: HistoryPage::from_report(report, HISTORY_BUCKETS),
            runs: RunsPage::default(),
            comparisons: ComparisonsPage::default(),
            comparison_pages: Vec::new(),
            hardware: None,
            sweeps: None,
        }
    }

    /// Adds the sweep section when the store holds model sweeps. The newest sweep of each
    /// machine is found from the medians (`series` of `models/` ids, indexing `runs`), so
    /// only those runs are read whole.
    pub fn with_sweeps(
        mut self,
        store: &RunStore,
        runs: &[StoredRun],
        series: &MedianSeries,
    ) -> Result<SnapshotPage, crate::results::ResultsError> {
        let mut newest: std::collections::BTreeMap<Option<&str>, usize> = Default::default();
        for (_, points) in series.iter().filter(|(id, _)| id.starts_with("models/")) {
            for &(index, _) in points.iter().filter(|(index, _)| *index < runs.len()) {
                let key = runs[index].fingerprint.as_deref();
                let entry = newest.entry(key).or_insert(index);
                *entry = (*entry).max(index);
            }
        }
        let mut sweeps = Vec::with_capacity(newest.len());
        for index in newest.into_values() {
            sweeps.push(store.resolve(&runs[index].run_id)?);
        }
        let request = crate::analysis::recommend::Request {
            slos: Vec::new(),
            rank: crate::analysis::recommend::Rank::Throughput,
            models: Vec::new(),
        };
        // No measured cell in those runs (every cell failed) is no sweep section, not an
        // error of the whole report.
        self.sweeps = SweepPage::of(&sweeps, &request, &crate::analysis::prices::NoPrices).ok();
        Ok(self)
    }

    /// Adds the store's runs, comparisons and the hardware matrix of `whole_runs`.
    pub fn with_store(
        mut self,
        store: &RunStore,
        stored_runs: &[StoredRun],
        whole_runs: &[crate::results::RunRecord],
    ) -> Result<SnapshotPage, crate::results::ResultsError> {
        self.runs = RunsPage::from_rows(stored_runs, &super::RunsFilter::default());
        let records = store.comparisons()?;
        self.comparisons = ComparisonsPage::from_records(&records);
        self.comparison_pages = records.iter().map(ComparisonPage::from_record).collect();
        if !whole_runs.is_empty() {
            let report = crate::analysis::hardware::analyze_hardware(
                whole_runs,
                &crate::analysis::prices::NoPrices,
            );
            self.hardware = Some(HardwarePage::of(&report));
        }
        Ok(self)
    }
}

fn regressions(report: &TrendReport) -> Vec<RegressionRow> {
    report
        .regressions()
        .filter_map(|(g, b)| {
            let cp = b.change_points.last()?;
            Some(RegressionRow {
                bench_id: b.id.clone(),
                hardware: g.fingerprint.clone(),
                before_ns: cp.before_ns,
                after_ns: cp.after_ns,
                change_percent: cp.change_percent,
                run_id: cp.run_id.clone(),
                run_name: crate::report::history::run_name(g, cp.run_index),
            })
        })
        .collect()
}

fn summary(g: &crate::analysis::trends::HardwareGroup) -> HardwareSummary {
    HardwareSummary {
        hardware: g.fingerprint.clone(),
        runs: g.runs.len(),
        status: g.overall_status.as_str(),
        latest: g
            .benchmarks
            .iter()
            .map(|b| LatestRow {
                bench_id: b.id.clone(),
                status: b.status.as_str(),
                baseline_ns: b.baseline_ns,
                latest_ns: b.latest_ns,
                change_percent: b.latest_vs_baseline_percent,
                steps: b.change_points.len(),
            })
            .collect(),
        not_measured: g.not_measured.clone(),
        acknowledged: g.acknowledged().map(|(_, a)| a.clone()).collect(),
    }
}
