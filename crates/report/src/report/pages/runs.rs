//! The runs page: every stored run, newest first, filtered by label, revision, hardware
//! and suite, each row linking to the run's page. Built from [`RunStore::list_runs`], the
//! store's header rows, so a store of a thousand runs is listed without decoding one.

use crate::results::{ResultsError, RunStore, StoredRun};
use serde::{Deserialize, Serialize};

/// What the runs page is filtered by (the query parameters of `GET /` and `GET /api/runs`).
/// Each is a substring match; empty or absent matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunsFilter {
    pub label: Option<String>,
    pub revision: Option<String>,
    pub hardware: Option<String>,
    /// A suite name (`quick`, `full`): matched against the suites the run's bench targets
    /// recorded, which means reading those runs' records (the store's rows lack it).
    pub suite: Option<String>,
}

impl RunsFilter {
    fn wanted(pattern: &Option<String>, value: Option<&str>) -> bool {
        match pattern.as_deref().filter(|p| !p.is_empty()) {
            None => true,
            Some(p) => value.is_some_and(|v| v.contains(p)),
        }
    }

    /// Whether a run's header row passes every filter but the suite.
    pub fn matches_header(&self, run: &StoredRun) -> bool {
        Self::wanted(&self.label, run.label.as_deref())
            && Self::wanted(&self.revision, run.git_revision.as_deref())
            && Self::wanted(&self.hardware, run.fingerprint.as_deref())
    }

    fn suite(&self) -> Option<&str> {
        self.suite.as_deref().filter(|s| !s.is_empty())
    }
}

/// One row of the runs page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub timestamp: String,
    pub created_unix_ms: u64,
    pub label: Option<String>,
    pub git_revision: Option<String>,
    pub git_dirty: Option<bool>,
    pub hardware: Option<String>,
    pub benchmarks: u64,
    pub failed: u64,
    pub skipped: u64,
    pub unreadable: u64,
}

impl RunRow {
    pub fn of(run: &StoredRun) -> RunRow {
        RunRow {
            run_id: run.run_id.clone(),
            timestamp: run.timestamp.clone(),
            created_unix_ms: run.created_unix_ms,
            label: run.label.clone(),
            git_revision: run.git_revision.clone(),
            git_dirty: run.git_dirty,
            hardware: run.fingerprint.clone(),
            benchmarks: run.benchmarks,
            failed: run.failed,
            skipped: run.skipped,
            unreadable: run.unreadable,
        }
    }

    /// Its label, else its id.
    pub fn name(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.run_id.clone())
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunsPage {
    pub filter: RunsFilter,
    /// Runs in the store, before filtering.
    pub total: usize,
    /// The matching runs, newest first.
    pub runs: Vec<RunRow>,
    /// Every hardware fingerprint in the store (for the filter's choices).
    pub hardware: Vec<String>,
    /// Run files the store could not read, each with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl RunsPage {
    /// The page from the store's run rows.
    pub fn from_store(store: &RunStore, filter: &RunsFilter) -> Result<RunsPage, ResultsError> {
        let (runs, problems) = store.list_runs()?;
        let mut page = RunsPage::from_rows(&runs, filter);
        page.problems = problems.iter().map(|e| e.to_string()).collect();
        if let Some(suite) = filter.suite() {
            page.runs.retain(|row| {
                store
                    .resolve(&row.run_id)
                    .is_ok_and(|run| run_suites(&run).iter().any(|s| s == suite))
            });
        }
        Ok(page)
    }

    /// The page from run rows already read (the suite filter needs the records: see
    /// [`RunsPage::from_store`]).
    pub fn from_rows(runs: &[StoredRun], filter: &RunsFilter) -> RunsPage {
        let mut rows: Vec<RunRow> = runs
            .iter()
            .filter(|r| filter.matches_header(r))
            .map(RunRow::of)
            .collect();
        rows.sort_by(|a, b| {
            b.created_unix_ms
                .cmp(&a.created_unix_ms)
                .then_with(|| b.run_id.cmp(&a.run_id))
        });
        let mut hardware: Vec<String> = runs.iter().filter_map(|r| r.fingerprint.clone()).collect();
        hardware.sort();
        hardware.dedup();
        RunsPage {
            filter: filter.clone(),
            total: runs.len(),
            runs: rows,
            hardware,
            problems: Vec::new(),
        }
    }
}

/// The suites the run's bench targets recorded (`quick`, `full`), from their reports.
pub fn run_suites(run: &crate::results::RunRecord) -> Vec<String> {
    let mut suites: Vec<String> = run
        .targets
        .iter()
        .filter_map(|t| t.get("suite").and_then(|s| s.as_str()).map(str::to_string))
        .collect();
    suites.sort();
    suites.dedup();
    suites
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, ms: u64, label: Option<&str>, fingerprint: &str) -> StoredRun {
        StoredRun {
            run_id: id.into(),
            timestamp: String::new(),
            created_unix_ms: ms,
            label: label.map(str::to_string),
            git_revision: Some(format!("rev-{id}")),
            git_dirty: None,
            fingerprint: Some(fingerprint.into()),
            benchmarks: 3,
            failed: 0,
            skipped: 0,
            unreadable: 0,
        }
    }

    #[test]
    fn filters_by_label_revision_and_hardware_newest_first() {
        let runs = [
            row("a", 1, Some("nightly"), "cpu=x"),
            row("b", 3, Some("nightly"), "cpu=y"),
            row("c", 2, None, "cpu=x"),
        ];
        let all = RunsPage::from_rows(&runs, &RunsFilter::default());
        let ids: Vec<&str> = all.runs.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        assert_eq!(all.hardware, ["cpu=x", "cpu=y"]);
        let nightly_x = RunsPage::from_rows(
            &runs,
            &RunsFilter {
                label: Some("night".into()),
                hardware: Some("cpu=x".into()),
                ..RunsFilter::default()
            },
        );
        assert_eq!(nightly_x.runs.len(), 1);
        assert_eq!(nightly_x.runs[0].run_id, "a");
        assert_eq!(nightly_x.total, 3);
        let by_revision = RunsPage::from_rows(
            &runs,
            &RunsFilter {
                revision: Some("rev-c".into()),
                ..RunsFilter::default()
            },
        );
        assert_eq!(by_revision.runs[0].run_id, "c");
    }
}
