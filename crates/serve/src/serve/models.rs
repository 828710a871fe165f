//! The data of each page: the report's page models ([`crate::report::pages`]), built from
//! [`RunStore`]. The JSON endpoints return the [`PageModel`] as it is and the pages embed
//! the same value (with the links the page script follows), so a page and its endpoint
//! can never disagree. Every builder is blocking (it reads the store) and runs on the
//! blocking pool.

use super::error::ApiError;
use crate::analysis::hardware::analyze_hardware;
use crate::analysis::prices::{NoPrices, PriceList};
use crate::analysis::trends::TrendOptions;
use crate::report::pages::{
    ComparisonPage, ComparisonsPage, HardwarePage, HistoryPage, PageModel, RunPage, RunsFilter,
    RunsPage, run_suites,
};
use crate::results::{ComparisonRecord, ResultsError, RunRecord, RunStore};
use serde::Deserialize;
use std::fmt::Write;

/// Percent-encodes one path segment (everything but RFC 3986's unreserved characters).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

pub fn run_url(run_id: &str) -> String {
    format!("/runs/{}", encode_segment(run_id))
}

pub fn comparison_url(id: i64) -> String {
    format!("/comparisons/{id}")
}

/// `/` and `/api/runs`: the stored runs, newest first, that pass the filter.
pub fn runs_model(store: &RunStore, filter: RunsFilter) -> Result<PageModel, ApiError> {
    let (rows, problems) = store.list_runs()?;
    let mut page = RunsPage::from_rows(&rows, &filter);
    page.problems = problems.iter().map(ToString::to_string).collect();
    if let Some(suite) = filter.suite.as_deref().filter(|s| !s.is_empty()) {
        // The suite lives in the runs' target reports, not in the run rows: only the runs
        // the other filters kept are read whole, by id from the store (one connection).
        let db = store.database()?;
        let mut kept = Vec::with_capacity(page.runs.len());
        for row in page.runs {
            let run = db.load_run(&row.run_id).map_err(ResultsError::from)?;
            if run.is_some_and(|r| run_suites(&r).iter().any(|s| s == suite)) {
                kept.push(row);
            }
        }
        page.runs = kept;
    }
    Ok(PageModel::Runs(page))
}

/// `/runs/{id}` and `/api/runs/{id}`: one run, compared with the newest earlier run on the
/// same hardware (as the report's run page is).
pub fn run_model(store: &RunStore, run_id: &str) -> Result<PageModel, ApiError> {
    let db = store.database()?;
    let load = |id: &str| -> Result<Option<RunRecord>, ApiError> {
        Ok(db.load_run(id).map_err(ResultsError::from)?)
    };
    let run = load(run_id)?
        .ok_or_else(|| ApiError::not_found(format!("no run `{run_id}` in the store")))?;
    let before_id = db
        .list_runs()
        .map_err(ResultsError::from)?
        .into_iter()
        .find(|r| {
            r.fingerprint == run.fingerprint
                && (r.created_unix_ms, &r.run_id) < (run.created_unix_ms, &run.run_id)
        })
        .map(|r| r.run_id);
    let before = match before_id {
        Some(id) => load(&id)?,
        None => None,
    };
    Ok(PageModel::Run(Box::new(RunPage::of(&run, before.as_ref()))))
}

/// `/history/{bench_id}` and `/api/history/{bench_id}`: the benchmark on every hardware,
/// with its steps and acknowledged shifts.
pub fn history_model(store: &RunStore, bench_id: &str) -> Result<PageModel, ApiError> {
    let options = TrendOptions {
        acknowledgements: store.acknowledgements()?,
        ..TrendOptions::default()
    };
    HistoryPage::from_store(store, bench_id, &options)?
        .map(PageModel::History)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no benchmark `{bench_id}` with a measured value in the store"
            ))
        })
}

/// `/comparisons` and `/api/comparisons`: every stored verdict, newest first.
pub fn comparisons_model(store: &RunStore) -> Result<PageModel, ApiError> {
    Ok(PageModel::Comparisons(ComparisonsPage::from_store(store)?))
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

/// `/comparisons/{id}` and `/api/comparisons/{id}`: one verdict with the rows the PR
/// comment shows.
pub fn comparison_model(
    store: &RunStore,
    reference: &ComparisonRef,
) -> Result<PageModel, ApiError> {
    let found = match reference {
        ComparisonRef::Id(id) => store.comparisons()?.into_iter().find(|c| c.id == *id),
        ComparisonRef::Checksum(sum) => find_by_checksum(store, sum)?,
    };
    let record = found
        .ok_or_else(|| ApiError::not_found(format!("no comparison {reference} in the store")))?;
    Ok(PageModel::Comparison(ComparisonPage::from_record(&record)))
}

/// `/hardware` and `/api/hardware`: the cross-hardware matrix and recommendation over
/// every run, priced by the server's `[prices]` when it has them.
pub fn hardware_model(
    store: &RunStore,
    prices: Option<&crate::analysis::prices::Prices>,
) -> Result<PageModel, ApiError> {
    let loaded = store.load_all()?;
    let list: &dyn PriceList = match prices {
        Some(prices) => prices,
        None => &NoPrices,
    };
    Ok(PageModel::Hardware(HardwarePage::of(&analyze_hardware(
        &loaded.runs,
        list,
    ))))
}

/// The query of `/sweeps` and `/api/sweeps`: what `stackbench recommend` takes as flags,
/// each list comma-separated (`?slo=ttft_p99<=200ms,tpot_p99<=50ms&rank=per-dollar&model=a`).
/// An unknown parameter is a 400 naming it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepQuery {
    pub slo: Option<String>,
    pub rank: Option<String>,
    pub model: Option<String>,
}

impl SweepQuery {
    /// The recommendation request the query asks for; a bad SLO or rank is a 400.
    pub fn request(&self) -> Result<crate::analysis::recommend::Request, ApiError> {
        use crate::analysis::recommend::{Rank, Request, Slo};
        let list = |text: &Option<String>| -> Vec<String> {
            text.iter()
                .flat_map(|t| t.split(','))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let slos = list(&self.slo)
            .iter()
            .map(|t| t.parse::<Slo>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let rank = match self.rank.as_deref() {
            None | Some("") => Rank::Throughput,
            Some(text) => <Rank as clap::ValueEnum>::from_str(text, true).map_err(|_| {
                ApiError::bad_request(format!(
                    "rank {text:?}: valid ranks are throughput, per-dollar, per-watt"
                ))
            })?,
        };
        Ok(Request {
            slos,
            rank,
            models: list(&self.model),
        })
    }
}

/// `/sweeps` and `/api/sweeps`: the newest model sweep per machine and the recommendation
/// matrix for the query, priced by the server's `[prices]` when it has them. A store
/// without a measured sweep cell, or a model it does not hold, is a 404 saying so.
pub fn sweep_model(
    store: &RunStore,
    prices: Option<&crate::analysis::prices::Prices>,
    query: &SweepQuery,
) -> Result<PageModel, ApiError> {
    let request = query.request()?;
    let loaded = store.load_all()?;
    let list: &dyn PriceList = match prices {
        Some(prices) => prices,
        None => &NoPrices,
    };
    crate::report::pages::SweepPage::of(&loaded.runs, &request, list)
        .map(|page| PageModel::Sweep(Box::new(page)))
        .map_err(|e| ApiError::not_found(e.to_string()))
}
