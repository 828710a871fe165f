//! The data of each page, built from [`RunStore`] and the analysis models the reports use:
//! the JSON endpoints return these as they are, and the pages embed the same value, so a
//! page and its endpoint can never disagree. Every builder is blocking (it reads the store)
//! and runs on the blocking pool.

use super::error::ApiError;
use crate::analysis::hardware::{HardwareReport, analyze_hardware};
use crate::analysis::prices::NoPrices;
use crate::analysis::trends::{BenchmarkTrend, TrendOptions, trend_of};
use crate::results::{
    Acknowledgement, ComparisonRecord, HistoryPoint, RunRecord, RunStore, StoredRun,
};
use serde::{Deserialize, Serialize};

/// The runs page's filters (query parameters of `/` and `/api/runs`); each one given must
/// match. `label` is exact, `revision` a prefix of the git revision (a short SHA works),
/// `hardware` a case-insensitive part of the hardware fingerprint, `suite` the named suite
/// one of the run's bench targets ran.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
}

impl RunFilter {
    /// An empty parameter (`?label=`, what an empty form field sends) filters nothing.
    fn normalised(self) -> RunFilter {
        let keep = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        RunFilter {
            label: keep(self.label),
            revision: keep(self.revision),
            hardware: keep(self.hardware),
            suite: keep(self.suite),
        }
    }

    fn matches_row(&self, run: &StoredRun) -> bool {
        let label = self
            .label
            .as_ref()
            .is_none_or(|l| run.label.as_deref() == Some(l.as_str()));
        let revision = self.revision.as_ref().is_none_or(|r| {
            run.git_revision
                .as_deref()
                .is_some_and(|g| g.starts_with(r.as_str()))
        });
        let hardware = self.hardware.as_ref().is_none_or(|h| {
            run.fingerprint
                .as_deref()
                .is_some_and(|f| f.to_lowercase().contains(&h.to_lowercase()))
        });
        label && revision && hardware
    }
}

/// The suites a run's bench targets ran (their `suite` as the harness recorded it).
pub fn run_suites(run: &RunRecord) -> Vec<String> {
    let mut suites: Vec<String> = run
        .targets
        .iter()
        .filter_map(|t| t.get("suite")?.as_str().map(str::to_string))
        .collect();
    suites.sort();
    suites.dedup();
    suites
}

/// One row of the runs page.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    #[serde(flatten)]
    pub run: StoredRun,
    /// The run's page.
    pub url: String,
}

/// `/` and `/api/runs`: the stored runs, newest first, that match the filter.
#[derive(Clone, Debug, Serialize)]
pub struct RunsModel {
    pub page: &'static str,
    pub filter: RunFilter,
    pub runs: Vec<RunRow>,
    /// Run files the store could not read (each with its error); shown, never hidden.
    pub problems: Vec<String>,
}

pub fn run_url(run_id: &str) -> String {
    format!("/runs/{}", super::pages::encode_segment(run_id))
}

pub fn history_url(bench_id: &str) -> String {
    // A benchmark id holds `/` between its parts: each part is encoded, the slashes kept.
    let parts: Vec<String> = bench_id
        .split('/')
        .map(super::pages::encode_segment)
        .collect();
    format!("/history/{}", parts.join("/"))
}

pub fn comparison_url(id: i64) -> String {
    format!("/comparisons/{id}")
}

pub fn runs_model(store: &RunStore, filter: RunFilter) -> Result<RunsModel, ApiError> {
    let filter = filter.normalised();
    let (rows, problems) = store.list_runs()?;
    let mut rows: Vec<StoredRun> = rows.into_iter().filter(|r| filter.matches_row(r)).collect();
    if let Some(suite) = &filter.suite {
        // The suite lives in the run's target reports, not in the run list: only the runs
        // the other filters kept are read whole.
        let db = store.database()?;
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            let run = db
                .load_run(&row.run_id)
                .map_err(crate::results::ResultsError::from)?;
            if run.is_some_and(|r| run_suites(&r).iter().any(|s| s == suite)) {
                kept.push(row);
            }
        }
        rows = kept;
    }
    Ok(RunsModel {
        page: "runs",
        filter,
        runs: rows
            .into_iter()
            .map(|run| RunRow {
                url: run_url(&run.run_id),
                run,
            })
            .collect(),
        problems: problems.iter().map(ToString::to_string).collect(),
    })
}

/// `/runs/{id}` and `/api/runs/{id}`: one whole run, with a link to each benchmark's
/// history.
#[derive(Clone, Debug, Serialize)]
pub struct RunModel {
    pub page: &'static str,
    pub suites: Vec<String>,
    /// Per benchmark id, its history page.
    pub history_urls: std::collections::BTreeMap<String, String>,
    pub run: RunRecord,
}

pub fn run_model(store: &RunStore, run_id: &str) -> Result<RunModel, ApiError> {
    let run = store
        .database()?
        .load_run(run_id)
        .map_err(crate::results::ResultsError::from)?
        .ok_or_else(|| ApiError::not_found(format!("no run `{run_id}` in the store")))?;
    let history_urls = run
        .benchmarks
        .iter()
        .map(|b| (b.id.clone(), history_url(&b.id)))
        .chain(
            run.failed
                .iter()
                .map(|f| (f.id.clone(), history_url(&f.id))),
        )
        .collect();
    Ok(RunModel {
        page: "run",
        suites: run_suites(&run),
        history_urls,
        run,
    })
}

/// One point of a history chart: a run's median, with the link to that run.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryPointRow {
    #[serde(flatten)]
    pub point: HistoryPoint,
    pub url: String,
}

/// One hardware's series of the benchmark, with the trend the history report computes
/// (its steps and the acknowledgement it starts from).
#[derive(Clone, Debug, Serialize)]
pub struct HistoryGroupModel {
    pub hardware: String,
    pub points: Vec<HistoryPointRow>,
    pub trend: BenchmarkTrend,
}

/// `/history/{bench_id}` and `/api/history/{bench_id}`: the benchmark on every hardware.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryModel {
    pub page: &'static str,
    pub benchmark: String,
    pub groups: Vec<HistoryGroupModel>,
    pub acknowledgements: Vec<Acknowledgement>,
}

const UNKNOWN_HARDWARE: &str = "unknown hardware";

pub fn history_model(store: &RunStore, bench_id: &str) -> Result<HistoryModel, ApiError> {
    let (points, all_runs) = store.history(bench_id)?;
    let points: Vec<HistoryPoint> = points
        .into_iter()
        .filter(|p| p.median_ns.is_finite() && p.median_ns > 0.0)
        .collect();
    if points.is_empty() {
        return Err(ApiError::not_found(format!(
            "no benchmark `{bench_id}` with a measured value in the store"
        )));
    }
    let acknowledgements: Vec<Acknowledgement> = store
        .acknowledgements()?
        .into_iter()
        .filter(|a| a.bench_id == bench_id)
        .collect();
    let options = TrendOptions {
        acknowledgements: acknowledgements.clone(),
        ..TrendOptions::default()
    };
    let hardware_of = |f: &Option<String>| f.clone().unwrap_or_else(|| UNKNOWN_HARDWARE.into());
    let mut fingerprints: Vec<String> =
        points.iter().map(|p| hardware_of(&p.fingerprint)).collect();
    fingerprints.sort();
    fingerprints.dedup();
    let groups = fingerprints
        .into_iter()
        .filter_map(|hardware| {
            // A point's index counts every run of its hardware, measured or not, as the
            // history report's does: a gap in the runs stays a gap in the chart.
            let run_ids: Vec<&str> = all_runs
                .iter()
                .filter(|(_, f)| hardware_of(f) == hardware)
                .map(|(id, _)| id.as_str())
                .collect();
            let index_of: std::collections::HashMap<&str, usize> =
                run_ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            let group: Vec<&HistoryPoint> = points
                .iter()
                .filter(|p| hardware_of(&p.fingerprint) == hardware)
                .collect();
            let series: Vec<(usize, f64)> = group
                .iter()
                .filter_map(|p| Some((*index_of.get(p.run_id.as_str())?, p.median_ns)))
                .collect();
            if series.is_empty() {
                // Points of runs the run order lacks cannot be placed (a store being
                // written to between the two reads): left for the next request.
                return None;
            }
            Some(HistoryGroupModel {
                trend: trend_of(bench_id, &series, &run_ids, &options),
                points: group
                    .into_iter()
                    .map(|p| HistoryPointRow {
                        url: run_url(&p.run_id),
                        point: p.clone(),
                    })
                    .collect(),
                hardware,
            })
        })
        .collect();
    Ok(HistoryModel {
        page: "history",
        benchmark: bench_id.to_string(),
        groups,
        acknowledgements,
    })
}

/// One stored verdict in a list, with its page.
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonRow {
    #[serde(flatten)]
    pub comparison: ComparisonRecord,
    pub url: String,
}

/// `/comparisons` and `/api/comparisons`: every stored verdict, newest first.
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonsModel {
    pub page: &'static str,
    pub comparisons: Vec<ComparisonRow>,
}

pub fn comparisons_model(store: &RunStore) -> Result<ComparisonsModel, ApiError> {
    Ok(ComparisonsModel {
        page: "comparisons",
        comparisons: store
            .comparisons()?
            .into_iter()
            .map(|c| ComparisonRow {
                url: comparison_url(c.id),
                comparison: c,
            })
            .collect(),
    })
}

/// `/comparisons/{id}` and `/api/comparisons/{id}`: one verdict and the full comparison
/// (`comparison.json` as `compare` or the gate wrote it).
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonModel {
    pub page: &'static str,
    #[serde(flatten)]
    pub record: ComparisonRow,
    pub comparison: serde_json::Value,
}

/// A comparison as a path names it: the id the store assigned, or its content checksum
/// (`sha256-<hex>`, what the PR comment links to before the server has seen it).
#[derive(Clone, Debug, PartialEq)]
pub enum ComparisonRef {
    Id(i64),
    Checksum(String),
}

impl std::fmt::Display for ComparisonRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ComparisonRef::Id(id) => write!(f, "{id}"),
            ComparisonRef::Checksum(sum) => f.write_str(sum),
        }
    }
}

/// The stored comparison whose content has `checksum`. Details uploaded through the API
/// are kept canonical, so their digest is taken directly; others (written by `compare`
/// or the gate on the server's machine) are canonicalised first.
pub fn find_by_checksum(
    store: &RunStore,
    checksum: &str,
) -> Result<Option<ComparisonRecord>, ApiError> {
    use crate::report::comparison::link::{CHECKSUM_PREFIX, comparison_checksum};
    use sha2::{Digest, Sha256};
    let direct = |text: &str| {
        let hex: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{CHECKSUM_PREFIX}{hex}")
    };
    let all = store.comparisons()?;
    if let Some(found) = all.iter().find(|c| direct(&c.detail_json) == checksum) {
        return Ok(Some(found.clone()));
    }
    Ok(all.into_iter().find(|c| {
        serde_json::from_str::<serde_json::Value>(&c.detail_json)
            .is_ok_and(|v| comparison_checksum(&v) == checksum)
    }))
}

pub fn comparison_model(
    store: &RunStore,
    reference: &ComparisonRef,
) -> Result<ComparisonModel, ApiError> {
    let found = match reference {
        ComparisonRef::Id(id) => store.comparisons()?.into_iter().find(|c| c.id == *id),
        ComparisonRef::Checksum(sum) => find_by_checksum(store, sum)?,
    };
    let record = found
        .ok_or_else(|| ApiError::not_found(format!("no comparison {reference} in the store")))?;
    let id = record.id;
    let comparison = serde_json::from_str(&record.detail_json).map_err(|e| {
        ApiError::internal(format!(
            "comparison {id}: its stored JSON does not parse: {e}"
        ))
    })?;
    Ok(ComparisonModel {
        page: "comparison",
        record: ComparisonRow {
            url: comparison_url(record.id),
            comparison: record,
        },
        comparison,
    })
}

/// `/hardware` and `/api/hardware`: the cross-hardware matrix and recommendation over
/// every run, as `analyze-trends hardware --format json` writes it.
#[derive(Debug, Serialize)]
pub struct HardwareModel {
    pub page: &'static str,
    pub report: HardwareReport,
    pub problems: Vec<String>,
}

pub fn hardware_model(store: &RunStore) -> Result<HardwareModel, ApiError> {
    let loaded = store.load_all()?;
    Ok(HardwareModel {
        page: "hardware",
        report: analyze_hardware(&loaded.runs, &NoPrices),
        problems: loaded.problems.iter().map(ToString::to_string).collect(),
    })
}
