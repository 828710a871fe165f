//! The results directory: saving with unique ids, loading every run in time order, and
//! resolving the names `latest`, `previous` and run ids. The history store (by default
//! `sqlite:<results>/stackbench.db`, or any [`StoreUrl`]: a PostgreSQL store shared by a
//! fleet; see [`super::db`]) is the store of record; each run is also written as a JSON file
//! under the results directory's `runs/`, whatever the engine, the interchange format, and
//! any run file there that the store lacks (an existing `runs/` on first use, a recorder
//! killed between the two writes, a file copied in by hand) is imported the next time the
//! store is read.

use super::db::{
    Acknowledgement, ComparisonRecord, DbError, HistoryDb, HistoryPoint, Inserted, MedianSeries,
    Migrated, PruneOutcome, RunOrder, StoreUrl, StoredRun,
};
use super::evidence::Evidence;
use super::run::{FailedBenchmark, RUN_SCHEMA_PREFIX, RUN_SCHEMA_VERSION, RunRecord};
use crate::files::atomic::{AtomicWriteError, write_atomic};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("cannot read results directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid run file: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error(
        "{path} uses run schema `{schema}`, newer than this analyzer understands (stackbench.run.v{RUN_SCHEMA_VERSION}); upgrade analyze-trends"
    )]
    FutureSchema { path: PathBuf, schema: String },
    #[error("no run `{name}` in {path}; {}", describe_available(available))]
    UnknownRun {
        name: String,
        path: PathBuf,
        available: Vec<String>,
    },
    #[error("`{name}`: {reason}")]
    BadSelection { name: String, reason: String },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
    #[error(transparent)]
    Db(#[from] DbError),
}

fn describe_available(available: &[String]) -> String {
    if available.is_empty() {
        "it holds no runs (record one with `analyze-trends record`)".into()
    } else {
        format!(
            "runs there: {} (or `latest`, `previous`, `label:NAME`, `rev:SHA`)",
            available.join(", ")
        )
    }
}

/// Runs that loaded, in time order, and the files that did not, each with its error.
#[derive(Debug, Default)]
pub struct LoadedRuns {
    pub runs: Vec<RunRecord>,
    pub problems: Vec<ResultsError>,
}

/// The history report's input (see [`RunStore::report_history`]).
#[derive(Debug, Default)]
pub struct ReportHistory {
    /// Every run, oldest first.
    pub runs: Vec<StoredRun>,
    /// Per benchmark id, (index into `runs`, median ns) in run order.
    pub series: MedianSeries,
    /// The runs the report shows whole, oldest first.
    pub whole_runs: Vec<RunRecord>,
    pub problems: Vec<ResultsError>,
}

/// `benchmark_results/` (or any `--results` directory) and the store its runs go to.
#[derive(Clone, Debug)]
pub struct RunStore {
    pub dir: PathBuf,
    /// `None`: the default, `sqlite:<dir>/stackbench.db`.
    url: Option<StoreUrl>,
}

impl RunStore {
    /// The results directory `dir` with its SQLite store, `<dir>/stackbench.db`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunStore {
            dir: dir.into(),
            url: None,
        }
    }

    /// The results directory `dir` (run files, reports) with its runs stored at `url`.
    pub fn with_store(dir: impl Into<PathBuf>, url: StoreUrl) -> Self {
        RunStore {
            dir: dir.into(),
            url: Some(url),
        }
    }

    /// Where the runs are stored (`Display` hides a password).
    pub fn store_url(&self) -> StoreUrl {
        self.url
            .clone()
            .unwrap_or_else(|| StoreUrl::default_for(&self.dir))
    }

    /// True when there is nothing to read: no results directory and no store of its own
    /// (a query never creates one). A server store always exists once reachable.
    pub fn is_absent(&self) -> bool {
        match &self.url {
            None => !self.dir.is_dir(),
            Some(StoreUrl::Sqlite(path)) => !self.dir.is_dir() && !path.exists(),
            Some(_) => false,
        }
    }

    /// Upgrades the store to this version's schema (`analyze-trends store migrate`).
    pub fn migrate(&self) -> Result<Migrated, ResultsError> {
        Ok(HistoryDb::migrate(&self.store_url())?)
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    pub fn reports_dir(&self) -> PathBuf {
        self.dir.join("reports")
    }

    /// Writes `run` atomically as `runs/<run_id>.json`, then stores it in the database in
    /// one transaction; the id carries the process id, so two concurrent `record`s never
    /// pick the same file. The database is opened (and checked) first, so a damaged or
    /// newer database stops the save before anything is written. The file's bytes are
    /// [`run_file_bytes`].
    pub fn save(&self, run: &RunRecord) -> Result<PathBuf, ResultsError> {
        let mut db = self.database()?;
        let path =
            run_file_in(&self.runs_dir(), &run.run_id).ok_or_else(|| ResultsError::Invalid {
                path: self.runs_dir(),
                reason: not_a_plain_file_name(&run.run_id),
            })?;
        let bytes = run_file_bytes(run).map_err(|e| AtomicWriteError {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_atomic(&path, &bytes)?;
        db.insert_run(run)?;
        Ok(path)
    }

    /// The SQLite file of the store (`<dir>/stackbench.db` by default); for a server store,
    /// where the default one would be.
    pub fn db_path(&self) -> PathBuf {
        match &self.url {
            Some(StoreUrl::Sqlite(path)) => path.clone(),
            _ => self.dir.join(super::db::DB_FILE),
        }
    }

    /// Opens the store, creating the directory and an empty store if absent.
    pub fn database(&self) -> Result<HistoryDb, ResultsError> {
        Ok(HistoryDb::open_url(&self.store_url())?)
    }

    /// The database with every run file of `runs/` in it; files that cannot be imported
    /// come back as problems (they are tried again next time).
    fn synced(&self) -> Result<(HistoryDb, Vec<ResultsError>), ResultsError> {
        let mut db = self.database()?;
        let known: std::collections::HashSet<String> =
            db.run_ids()?.into_iter().map(|(id, _)| id).collect();
        let mut problems = Vec::new();
        for file in self.run_files()? {
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if known.contains(stem) {
                continue;
            }
            if let Err(e) = load_run(&file).and_then(|run| Ok(db.insert_run(&run)?)) {
                problems.push(e);
            }
        }
        Ok((db, problems))
    }

    fn run_files(&self) -> Result<Vec<PathBuf>, ResultsError> {
        let dir = self.runs_dir();
        match json_files(&dir) {
            Ok(files) => Ok(files),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(ResultsError::Io { path: dir, source }),
        }
    }

    /// Every run, oldest first; unreadable files and stored runs are returned as
    /// problems, not fatal. A directory that does not exist holds no runs (and is not
    /// created by reading it).
    pub fn load_all(&self) -> Result<LoadedRuns, ResultsError> {
        let mut loaded = LoadedRuns::default();
        if self.is_absent() {
            return Ok(loaded);
        }
        let (db, problems) = self.synced()?;
        loaded.problems = problems;
        for r in db.load_all()? {
            match r {
                Ok(run) => loaded.runs.push(run),
                Err(e) => loaded.problems.push(e.into()),
            }
        }
        loaded
            .runs
            .sort_by(|a, b| (a.created_unix_ms, &a.run_id).cmp(&(b.created_unix_ms, &b.run_id)));
        Ok(loaded)
    }

    /// Resolves `latest`, `previous`, `label:NAME` (the newest run recorded with that
    /// label), `rev:SHA` (the newest run of the git revision SHA abbreviates), a run id, or a
    /// path to a run file.
    pub fn resolve(&self, name: &str) -> Result<RunRecord, ResultsError> {
        let as_path = Path::new(name);
        if name.ends_with(".json") && as_path.is_file() {
            return load_run(as_path);
        }
        let unknown = |available| ResultsError::UnknownRun {
            name: name.to_string(),
            path: self.runs_dir(),
            available,
        };
        if self.is_absent() {
            return Err(unknown(Vec::new()));
        }
        let (db, _) = self.synced()?;
        if let Some(selection) = RunSelection::parse(name)? {
            let stored = db.list_runs()?;
            let id = selection
                .pick(&stored)
                .map_err(|reason| ResultsError::BadSelection {
                    name: name.to_string(),
                    reason: format!("{reason} in {}", self.runs_dir().display()),
                })?;
            return db.load_run(&id)?.ok_or_else(|| unknown(Vec::new()));
        }
        if let Some(run) = db.load_run(name)? {
            return Ok(run);
        }
        // A file the database could not take (a newer schema, a damaged file): its own
        // error says why, which is more use than "no such run".
        let direct = self.runs_dir().join(format!("{name}.json"));
        if direct.is_file() {
            return load_run(&direct);
        }
        let mut ids: Vec<String> = db.run_ids()?.into_iter().map(|(id, _)| id).collect();
        if name == "latest" || name == "previous" {
            let skip = usize::from(name == "previous");
            if let Some(id) = ids.len().checked_sub(1 + skip).map(|i| ids.swap_remove(i))
                && let Some(run) = db.load_run(&id)?
            {
                return Ok(run);
            }
        }
        Err(unknown(ids))
    }

    /// Imports run files and directories of them (a results directory's `runs/` is
    /// found too). Each run is its own transaction; a file that cannot be read or
    /// stored is reported and the others still go in (a store that became unreachable
    /// ends the import with that error instead: see `DbError::is_unreachable`). Each file is read and checked
    /// before anything is written, and the store is opened (created) only for the first
    /// run that can go in: input of which nothing can be imported leaves no trace.
    pub fn import(&self, paths: &[PathBuf]) -> Result<ImportReport, ResultsError> {
        let mut db: Option<HistoryDb> = None;
        let mut report = ImportReport::default();
        for file in import_files(paths, &mut report.problems) {
            let run = match load_run(&file).and_then(|run| importable(&file, run)) {
                Ok(run) => run,
                Err(e) => {
                    report.problems.push(ImportProblem {
                        file,
                        error: e.to_string(),
                    });
                    continue;
                }
            };
            let db = match &mut db {
                Some(db) => db,
                None => db.insert(self.database()?),
            };
            match db.insert_run(&run) {
                Ok(Inserted::New) => {
                    report.evidence.add_run(&run);
                    report
                        .failed
                        .extend(run.failed.iter().map(|f| (file.clone(), f.clone())));
                    report.imported.push((run.run_id, run.fingerprint));
                }
                Ok(Inserted::AlreadyPresent) => report.already_present.push(run.run_id),
                // The connection is gone: every later run would fail the same way. The
                // caller keeps the files (`import` spools them all; the ones already in
                // count as delivered when the spool is flushed).
                Err(e) if e.is_unreachable() => return Err(e.into()),
                Err(e) => report.problems.push(ImportProblem {
                    file,
                    error: ResultsError::from(e).to_string(),
                }),
            }
        }
        Ok(report)
    }

    /// What the history report reads: every run's medians (no samples), and whole runs
    /// only where the report shows more than medians. Those are the newest run, the run
    /// before it and the one before it on the same hardware (the run pages), and the
    /// latest run of each hardware group (its skips and failures).
    pub fn report_history(&self) -> Result<ReportHistory, ResultsError> {
        let mut out = ReportHistory::default();
        if self.is_absent() {
            return Ok(out);
        }
        let (db, problems) = self.synced()?;
        out.problems = problems;
        let (runs, series) = db.medians()?;
        let mut wanted = std::collections::BTreeSet::new();
        if let Some(newest) = runs.len().checked_sub(1) {
            wanted.extend(newest.checked_sub(1));
            wanted.extend(
                runs[..newest]
                    .iter()
                    .rposition(|r| r.fingerprint == runs[newest].fingerprint),
            );
        }
        let mut latest_of_group = std::collections::HashMap::new();
        for (index, run) in runs.iter().enumerate() {
            latest_of_group.insert(run.fingerprint.as_deref(), index);
        }
        wanted.extend(latest_of_group.into_values());
        for index in wanted {
            match db.load_run(&runs[index].run_id) {
                Ok(Some(run)) => out.whole_runs.push(run),
                Ok(None) => {}
                Err(e) => out.problems.push(e.into()),
            }
        }
        out.runs = runs;
        out.series = series;
        Ok(out)
    }

    /// Every run, newest first, from the database alone (no benchmarks loaded).
    pub fn list_runs(&self) -> Result<(Vec<StoredRun>, Vec<ResultsError>), ResultsError> {
        let (db, problems) = self.synced()?;
        Ok((db.list_runs()?, problems))
    }

    /// One benchmark's stored values, oldest first, and the time order of all runs with
    /// their fingerprints (a history's run index counts every run of its hardware).
    pub fn history(&self, bench_id: &str) -> Result<(Vec<HistoryPoint>, RunOrder), ResultsError> {
        let (db, _) = self.synced()?;
        Ok((db.history(bench_id)?, db.run_ids()?))
    }

    /// The failures stored runs recorded for `bench_id`, oldest first: (run id, failure).
    pub fn recorded_failures(
        &self,
        bench_id: &str,
    ) -> Result<Vec<(String, FailedBenchmark)>, ResultsError> {
        let (db, _) = self.synced()?;
        Ok(db
            .recorded_failures(bench_id)?
            .into_iter()
            .map(|(run_id, error)| {
                let id = bench_id.to_string();
                (run_id, FailedBenchmark { id, error })
            })
            .collect())
    }

    /// Stores a `compare` or gate verdict; returns its id.
    pub fn record_comparison(&self, c: &ComparisonRecord) -> Result<i64, ResultsError> {
        Ok(self.database()?.record_comparison(c)?)
    }

    /// Stored verdicts, newest first.
    pub fn comparisons(&self) -> Result<Vec<ComparisonRecord>, ResultsError> {
        Ok(self.database()?.comparisons()?)
    }

    pub fn acknowledge(&self, a: &Acknowledgement) -> Result<(), ResultsError> {
        Ok(self.database()?.acknowledge(a)?)
    }

    /// Every acknowledgement, oldest first; none when the directory does not exist.
    pub fn acknowledgements(&self) -> Result<Vec<Acknowledgement>, ResultsError> {
        if self.is_absent() {
            return Ok(Vec::new());
        }
        Ok(self.database()?.acknowledgements()?)
    }

    /// Removes old runs and comparisons (see [`HistoryDb::prune`]) and the removed runs'
    /// JSON files, so the next sync does not bring them back.
    pub fn prune(
        &self,
        cutoff_unix_ms: u64,
        keep_latest: usize,
        dry_run: bool,
    ) -> Result<PruneOutcome, ResultsError> {
        let (mut db, _) = self.synced()?;
        let outcome = db.prune(cutoff_unix_ms, keep_latest, dry_run)?;
        if !dry_run {
            for id in &outcome.removed_runs {
                // An imported id may hold `/` or `..`: such a run's file is never one of ours
                // to delete, wherever the joined path would point.
                let Some(file) = run_file_in(&self.runs_dir(), id) else {
                    continue;
                };
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => return Err(ResultsError::Io { path: file, source }),
                }
            }
        }
        Ok(outcome)
    }
}

/// A file `import` could not take, and why.
#[derive(Debug)]
pub struct ImportProblem {
    pub file: PathBuf,
    pub error: String,
}

/// What `import` did: runs new to the store (with their fingerprints), runs it already
/// held, and files it could not import; what the new runs measured, and their failures
/// (with the file each came from).
#[derive(Debug, Default)]
pub struct ImportReport {
    pub imported: Vec<(String, Option<String>)>,
    pub already_present: Vec<String>,
    pub problems: Vec<ImportProblem>,
    pub evidence: Evidence,
    pub failed: Vec<(PathBuf, FailedBenchmark)>,
}

/// `run` when it holds evidence of something: a run with no measured benchmark and no
/// failure says nothing, and importing it would add a run that every view must explain.
pub fn importable(file: &Path, run: RunRecord) -> Result<RunRecord, ResultsError> {
    if run.benchmarks.is_empty() && run.failed.is_empty() {
        return Err(ResultsError::Invalid {
            path: file.to_path_buf(),
            reason: format!(
                "run {} measured nothing (no benchmark with usable samples, no failure, {} skipped): nothing to import",
                run.run_id,
                run.skipped.len()
            ),
        });
    }
    Ok(run)
}

/// The run files named by `paths`: files as given; in a directory, its `*.json` files, or
/// those of its `runs/` when it is a results directory.
pub fn import_files(paths: &[PathBuf], problems: &mut Vec<ImportProblem>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let dir = if path.join("runs").is_dir() {
            path.join("runs")
        } else {
            path.clone()
        };
        match json_files(&dir) {
            Ok(found) => files.extend(found),
            Err(source) => problems.push(ImportProblem {
                file: dir.clone(),
                error: ResultsError::Io { path: dir, source }.to_string(),
            }),
        }
    }
    files
}

/// The `*.json` files of `dir` (not hidden ones: those are atomic writes in progress),
/// sorted by name.
pub(crate) fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Reads one run file, refusing a schema newer than this analyzer (its fields may mean
/// something this version would misread).
/// `<runs>/<id>.json` when that names a file directly inside `runs` (an id with a path
/// separator or a leading dot, `..` included, names none).
pub(crate) fn run_file_in(runs: &Path, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty() && !id.starts_with('.') && !id.contains(['/', '\\', '\0']);
    plain.then(|| runs.join(format!("{id}.json")))
}

fn not_a_plain_file_name(id: &str) -> String {
    format!("run id `{id}` is not a plain file name (no `/`, `\\`, NUL or leading dot)")
}

/// The run file for `run`, byte for byte as `record` writes it into `runs/` (and the spool
/// keeps it): compact JSON, unusable samples failed (see `fail_unusable`), one newline.
/// Compact: a run holds every sample, and pretty-printing puts each number on its own line.
pub fn run_file_bytes(run: &RunRecord) -> Result<Vec<u8>, serde_json::Error> {
    let kept = run.with_unusable_failed();
    let mut bytes = serde_json::to_vec(kept.as_ref())?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The distinct names among `names`, sorted.
fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut names: Vec<&str> = names.collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A run named by what it was recorded with rather than by id: `label:NAME` or `rev:SHA`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum RunSelection {
    /// The newest run whose label is exactly this.
    Label(String),
    /// The newest run whose git revision starts with this (lower-case hex, 4 to 40 digits).
    Revision(String),
}

impl RunSelection {
    /// `None` for a name that is no selection (an id, `latest`, a file); an error for a
    /// selection that cannot select anything (`label:` with no label, `rev:` not hex).
    fn parse(name: &str) -> Result<Option<Self>, ResultsError> {
        let bad = |reason: &str| ResultsError::BadSelection {
            name: name.to_string(),
            reason: reason.to_string(),
        };
        if let Some(label) = name.strip_prefix("label:") {
            if label.is_empty() {
                return Err(bad("`label:` needs a label, as in `label:nightly`"));
            }
            return Ok(Some(RunSelection::Label(label.to_string())));
        }
        if let Some(rev) = name.strip_prefix("rev:") {
            let hex =
                rev.len() >= 4 && rev.len() <= 40 && rev.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex {
                return Err(bad(
                    "`rev:` takes a commit SHA or an abbreviation of at least 4 hex digits, as in `rev:abc1234` (a branch or tag name is not stored with a run)",
                ));
            }
            return Ok(Some(RunSelection::Revision(rev.to_ascii_lowercase())));
        }
        Ok(None)
    }

    /// The id of the run this selects among `stored` (newest first), or why none.
    fn pick(&self, stored: &[StoredRun]) -> Result<String, String> {
        match self {
            RunSelection::Label(label) => stored
                .iter()
                .find(|run| run.label.as_deref() == Some(label.as_str()))
                .map(|run| run.run_id.clone())
                .ok_or_else(|| {
                    let labels = distinct(stored.iter().filter_map(|run| run.label.as_deref()));
                    format!(
                        "no run is labelled `{label}` (labels there: {})",
                        if labels.is_empty() {
                            "none; `analyze-trends record --label NAME` sets one".to_string()
                        } else {
                            labels.join(", ")
                        }
                    )
                }),
            RunSelection::Revision(prefix) => {
                let matching: Vec<&StoredRun> = stored
                    .iter()
                    .filter(|run| {
                        run.git_revision.as_deref().is_some_and(|rev| {
                            rev.to_ascii_lowercase().starts_with(prefix.as_str())
                        })
                    })
                    .collect();
                let revisions = distinct(
                    matching
                        .iter()
                        .filter_map(|run| run.git_revision.as_deref()),
                );
                match (matching.first(), revisions.len()) {
                    (None, _) => Err(format!(
                        "no run was recorded at a git revision starting with {prefix} ({} of {} runs record their revision)",
                        stored
                            .iter()
                            .filter(|run| run.git_revision.is_some())
                            .count(),
                        stored.len()
                    )),
                    (Some(newest), 1) => Ok(newest.run_id.clone()),
                    (Some(_), _) => Err(format!(
                        "{prefix} abbreviates {} revisions with runs: {}; give more digits",
                        revisions.len(),
                        revisions.join(", ")
                    )),
                }
            }
        }
    }
}

pub fn load_run(path: &Path) -> Result<RunRecord, ResultsError> {
    let invalid = |reason: String| ResultsError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // The schema is checked before the body is trusted; skipping the body in this first
    // pass is cheaper than building a `Value` tree of a file holding every sample.
    #[derive(serde::Deserialize)]
    struct SchemaOnly {
        schema: Option<String>,
    }
    let header: SchemaOnly =
        serde_json::from_slice(&bytes).map_err(|e| invalid(format!("invalid JSON: {e}")))?;
    let schema = header
        .schema
        .ok_or_else(|| invalid("no `schema` field".into()))?;
    let version = schema
        .strip_prefix(RUN_SCHEMA_PREFIX)
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| invalid(format!("schema `{schema}` is not a stackbench run")))?;
    if version > RUN_SCHEMA_VERSION {
        return Err(ResultsError::FutureSchema {
            path: path.to_path_buf(),
            schema,
        });
    }
    let mut run: RunRecord =
        serde_json::from_slice(&bytes).map_err(|e| invalid(format!("unexpected shape: {e}")))?;
    // The id names the run's file in `runs/`: one that could point elsewhere is refused.
    if run_file_in(Path::new("runs"), &run.run_id).is_none() {
        return Err(invalid(not_a_plain_file_name(&run.run_id)));
    }
    run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    // The Criterion reader's sample check, for runs written by hand, by another tool or by
    // an older version: samples no statistic can use make the benchmark a failure.
    run.fail_unusable();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_from_criterion;

    fn fixture_run() -> RunRecord {
        run_from_criterion(Path::new(crate::CRITERION_FIXTURE), "new", Some("x".into())).unwrap()
    }

    #[test]
    fn a_saved_run_reads_back_identical_from_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let run = fixture_run();
        assert!(run.benchmarks.iter().any(|b| b.estimates.is_some()));
        let file = store.save(&run).unwrap();
        // The database answers even when the JSON file is gone.
        std::fs::remove_file(&file).unwrap();
        assert_eq!(store.resolve(&run.run_id).unwrap(), run);
        assert_eq!(store.resolve("latest").unwrap(), run);
        let loaded = store.load_all().unwrap();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.runs, vec![run]);
    }

    #[test]
    fn runs_are_selected_by_label_and_by_revision_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let base = fixture_run();
        let run = |id: &str, at: u64, label: &str, rev: &str| RunRecord {
            run_id: id.into(),
            created_unix_ms: base.created_unix_ms + at,
            label: Some(label.into()),
            git_revision: Some(rev.into()),
            ..base.clone()
        };
        let nightly_old = run("n1", 1, "nightly", "abcd234aaaa");
        let pr = run("p1", 2, "pr", "abcd999bbbb");
        let nightly_new = run("n2", 3, "nightly", "abcd234aaaa");
        for r in [&nightly_old, &pr, &nightly_new] {
            store.save(r).unwrap();
        }
        let id = |name: &str| store.resolve(name).map(|r| r.run_id);
        assert_eq!(id("label:nightly").unwrap(), "n2");
        assert_eq!(id("label:pr").unwrap(), "p1");
        assert_eq!(id("rev:abcd2").unwrap(), "n2");
        assert_eq!(id("rev:ABCD9").unwrap(), "p1");
        let message = |name: &str| store.resolve(name).unwrap_err().to_string();
        let missing = message("label:weekly");
        assert!(
            missing.contains("label:weekly") && missing.contains("nightly, pr"),
            "{missing}"
        );
        let ambiguous = message("rev:abcd");
        assert!(
            ambiguous.contains("abcd234aaaa") && ambiguous.contains("abcd999bbbb"),
            "{ambiguous}"
        );
        assert!(message("rev:beef").contains("no run was recorded"));
        assert!(message("rev:main").contains("hex digits"));
        assert!(message("rev:ab").contains("hex digits"));
        assert!(message("label:").contains("needs a label"));
        // Ids, `latest` and `previous` are unchanged.
        assert_eq!(id("latest").unwrap(), "n2");
        assert_eq!(id("previous").unwrap(), "p1");
        assert_eq!(id("n1").unwrap(), "n1");
    }

    #[test]
    fn run_files_are_imported_once_and_a_reused_id_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let run = fixture_run();
        // A runs/ directory from before the database: imported on first use.
        crate::files::atomic::write_json_atomic(
            &store.runs_dir().join(format!("{}.json", run.run_id)),
            &run,
        )
        .unwrap();
        assert!(!store.db_path().exists());
        assert_eq!(store.load_all().unwrap().runs.len(), 1);
        let again = store.import(&[store.runs_dir()]).unwrap();
        assert_eq!(again.already_present, vec![run.run_id.clone()]);
        assert!(again.imported.is_empty() && again.problems.is_empty());

        let other_machine = RunRecord {
            fingerprint: Some("cpu=other x8;gpu=none".into()),
            ..run.clone()
        };
        let elsewhere = dir.path().join("elsewhere.json");
        crate::files::atomic::write_json_atomic(&elsewhere, &other_machine).unwrap();
        let report = store.import(std::slice::from_ref(&elsewhere)).unwrap();
        assert_eq!(report.problems.len(), 1);
        assert_eq!(report.problems[0].file, elsewhere);
        assert!(report.problems[0].error.contains("cpu=other x8"));
        assert_eq!(store.list_runs().unwrap().0.len(), 1);
    }

    #[test]
    fn prune_deletes_only_files_directly_inside_runs() {
        let runs = Path::new("/r/runs");
        assert_eq!(
            run_file_in(runs, "nightly-3"),
            Some(PathBuf::from("/r/runs/nightly-3.json"))
        );
        for id in ["../../etc/passwd", "a/b", "..", ".hidden", "", "a\\b"] {
            assert_eq!(run_file_in(runs, id), None, "{id}");
        }
    }
}
