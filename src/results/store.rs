//! The directory of runs: saving with unique ids, loading every run in time order, and
//! resolving the names `latest`, `previous` and run ids.

use super::atomic::{AtomicWriteError, write_atomic};
use super::run::{RUN_SCHEMA_PREFIX, RUN_SCHEMA_VERSION, RunRecord};
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
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

fn describe_available(available: &[String]) -> String {
    if available.is_empty() {
        "it holds no runs (record one with `analyze-trends record`)".into()
    } else {
        format!(
            "runs there: {} (or `latest`, `previous`)",
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

/// `benchmark_results/` (or any `--results` directory).
#[derive(Clone, Debug)]
pub struct RunStore {
    pub dir: PathBuf,
}

impl RunStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunStore { dir: dir.into() }
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.dir.join("runs")
    }

    pub fn reports_dir(&self) -> PathBuf {
        self.dir.join("reports")
    }

    /// Writes `run` atomically as `runs/<run_id>.json`; the id carries the process id, so
    /// two concurrent `record`s never pick the same file.
    /// Compact JSON: a run holds every sample, and pretty-printing puts each number on its
    /// own line (about four times the bytes to store and parse).
    pub fn save(&self, run: &RunRecord) -> Result<PathBuf, ResultsError> {
        let path = self.runs_dir().join(format!("{}.json", run.run_id));
        let mut bytes = serde_json::to_vec(run).map_err(|e| AtomicWriteError {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        write_atomic(&path, &bytes)?;
        Ok(path)
    }

    fn run_files(&self) -> Result<Vec<PathBuf>, ResultsError> {
        let dir = self.runs_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(ResultsError::Io { path: dir, source }),
        };
        let mut files: Vec<PathBuf> = entries
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

    /// Every run, oldest first; unreadable files are returned as problems, not fatal.
    pub fn load_all(&self) -> Result<LoadedRuns, ResultsError> {
        let files = self.run_files()?;
        let results = super::parallel_map(&files, |p| load_run(p));
        let mut loaded = LoadedRuns::default();
        for r in results {
            match r {
                Ok(run) => loaded.runs.push(run),
                Err(e) => loaded.problems.push(e),
            }
        }
        loaded
            .runs
            .sort_by(|a, b| (a.created_unix_ms, &a.run_id).cmp(&(b.created_unix_ms, &b.run_id)));
        Ok(loaded)
    }

    /// Resolves `latest`, `previous`, a run id, or a path to a run file.
    pub fn resolve(&self, name: &str) -> Result<RunRecord, ResultsError> {
        let as_path = Path::new(name);
        if name.ends_with(".json") && as_path.is_file() {
            return load_run(as_path);
        }
        let direct = self.runs_dir().join(format!("{name}.json"));
        if direct.is_file() {
            return load_run(&direct);
        }
        if name == "latest" || name == "previous" {
            let mut ids = self.ordered_ids()?;
            let skip = usize::from(name == "previous");
            if let Some(id) = ids.len().checked_sub(1 + skip).map(|i| ids.swap_remove(i)) {
                return load_run(&self.runs_dir().join(format!("{id}.json")));
            }
        }
        Err(ResultsError::UnknownRun {
            name: name.to_string(),
            path: self.runs_dir(),
            available: self.ordered_ids().unwrap_or_default(),
        })
    }

    /// Run ids in time order, reading only each file's header fields.
    fn ordered_ids(&self) -> Result<Vec<String>, ResultsError> {
        #[derive(serde::Deserialize)]
        struct Header {
            run_id: String,
            created_unix_ms: u64,
        }
        let mut headers: Vec<(u64, String)> = Vec::new();
        for path in self.run_files()? {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if let Ok(h) = serde_json::from_slice::<Header>(&bytes) {
                headers.push((h.created_unix_ms, h.run_id));
            }
        }
        headers.sort();
        Ok(headers.into_iter().map(|(_, id)| id).collect())
    }
}

/// Reads one run file, refusing a schema newer than this analyzer (its fields may mean
/// something this version would misread).
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
    run.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(run)
}
