//! The spool, `<results>/spool/`: run files whose store could not be reached when they were
//! recorded or imported (a results server down, a PostgreSQL store down or its connection
//! lost). A fleet node that measured for an hour must not lose the run because the network
//! blinked, and must not hide that it did not deliver either: the run is written here
//! atomically (temporary name + rename, so a flusher never reads half a file), the command
//! says so and exits non-zero, and the next `record`, `import` or `analyze-trends store
//! flush` delivers the spool first, oldest run first. A file leaves the spool only after the
//! store confirmed it ("already present" counts: delivery is idempotent), so a flush killed
//! at any point delivers each run once. A file that can never be delivered (not a run file,
//! or one the store refuses for what it is) is moved to `spool/rejected/` beside a
//! `.reason.txt`, never deleted: it is somebody's measurement.

use super::db::{DbError, Inserted};
use super::run::RunRecord;
use super::server_client::{ServerClient, Stored, UploadError};
use super::store::{ResultsError, RunStore, json_files, load_run};
use crate::files::atomic::{AtomicWriteError, write_atomic};
use std::path::{Path, PathBuf};

/// The spool's directory name inside a results directory.
pub const SPOOL_DIR: &str = "spool";
/// Where undeliverable spooled files are kept, inside the spool.
pub const REJECTED_DIR: &str = "rejected";

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("cannot read the spool {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot keep run {run_id} in the spool: {source}")]
    Write {
        run_id: String,
        #[source]
        source: AtomicWriteError,
    },
    #[error("cannot move {path} out of the spool into {to}: {source}")]
    Move {
        path: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a destination said about one delivered run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    New,
    AlreadyPresent,
}

/// Why a run was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// The store cannot be reached now: keep the run, try again later.
    #[error("{0}")]
    Unreachable(String),
    /// The store will never take this run as it is: quarantine it.
    #[error("{0}")]
    Rejected(String),
    /// Anything else (a wrong token, a read-only server, a damaged local database): the run
    /// is kept, and the flush stops, since the next run would fail the same way.
    #[error("{0}")]
    Failed(String),
}

/// Somewhere runs can be delivered: a results server or a store opened here.
pub trait RunSink {
    /// Stores `run`, whose run file is `bytes`.
    fn deliver(&mut self, run: &RunRecord, bytes: &[u8]) -> Result<Delivered, DeliveryError>;
    /// The destination, for messages (never with a password).
    fn describe(&self) -> String;
}

impl RunSink for ServerClient {
    fn deliver(&mut self, run: &RunRecord, bytes: &[u8]) -> Result<Delivered, DeliveryError> {
        match self.upload_run(&run.run_id, bytes) {
            Ok(uploaded) => Ok(match uploaded.stored {
                Stored::New => Delivered::New,
                Stored::AlreadyPresent => Delivered::AlreadyPresent,
            }),
            Err(e) => Err(classify_upload(e)),
        }
    }

    fn describe(&self) -> String {
        self.url().to_string()
    }
}

/// An upload failure, sorted by what the spool should do with the run.
pub fn classify_upload(error: UploadError) -> DeliveryError {
    if error.is_unreachable() {
        DeliveryError::Unreachable(error.to_string())
    } else if error.rejects_the_run() {
        DeliveryError::Rejected(error.to_string())
    } else {
        DeliveryError::Failed(error.to_string())
    }
}

impl RunSink for RunStore {
    fn deliver(&mut self, run: &RunRecord, _bytes: &[u8]) -> Result<Delivered, DeliveryError> {
        let inserted = self.database().and_then(|mut db| Ok(db.insert_run(run)?));
        match inserted {
            Ok(Inserted::New) => Ok(Delivered::New),
            Ok(Inserted::AlreadyPresent) => Ok(Delivered::AlreadyPresent),
            Err(ResultsError::Db(e @ DbError::Conflict { .. })) => {
                Err(DeliveryError::Rejected(e.to_string()))
            }
            Err(e) if store_unreachable(&e) => Err(DeliveryError::Unreachable(e.to_string())),
            Err(e) => Err(DeliveryError::Failed(e.to_string())),
        }
    }

    fn describe(&self) -> String {
        self.store_url().to_string()
    }
}

/// Whether storing failed because the store could not be reached (as opposed to refusing
/// the run or being damaged): then the run goes to the spool.
pub fn store_unreachable(error: &ResultsError) -> bool {
    matches!(error, ResultsError::Db(e) if e.is_unreachable())
}

pub use super::store::run_file_bytes;

/// What one flush did.
#[derive(Debug, Default)]
pub struct FlushReport {
    /// Delivered runs, oldest first.
    pub delivered: Vec<(String, Delivered)>,
    /// Files moved to `rejected/`: (where they are now, why).
    pub rejected: Vec<(PathBuf, String)>,
    /// Why the flush stopped early, if it did; the runs not yet delivered stay spooled.
    pub stopped: Option<DeliveryError>,
    /// Runs still in the spool afterwards.
    pub remaining: usize,
}

/// `<results>/spool/`.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    pub fn of_results(results: &Path) -> Spool {
        Spool {
            dir: results.join(SPOOL_DIR),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps run `run_id`'s file in the spool (atomically); returns its path. A run spooled
    /// twice (recorded, then imported again while still down) is one file.
    pub fn keep(&self, run_id: &str, bytes: &[u8]) -> Result<PathBuf, SpoolError> {
        let path = self.dir.join(format!("{}.json", file_safe(run_id)));
        write_atomic(&path, bytes).map_err(|source| SpoolError::Write {
            run_id: run_id.to_string(),
            source,
        })?;
        Ok(path)
    }

    /// The spooled run files, by name; none when the spool does not exist. Hidden files are
    /// atomic writes in progress.
    pub fn pending(&self) -> Result<Vec<PathBuf>, SpoolError> {
        match json_files(&self.dir) {
            Ok(mut files) => {
                files.retain(|p| p.is_file());
                Ok(files)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(SpoolError::Io {
                path: self.dir.clone(),
                source,
            }),
        }
    }

    /// Delivers every spooled run to `sink`, oldest first (by the time the run was
    /// created), removing each file once the sink confirmed it. Files that are not run
    /// files, or that the sink rejects, go to `rejected/`. Stops at the first run the sink
    /// could not take for another reason (unreachable, wrong token): the rest would fail
    /// the same way, and each try may wait through the retries.
    pub fn flush(&self, sink: &mut dyn RunSink) -> Result<FlushReport, SpoolError> {
        let mut report = FlushReport::default();
        let mut runs = Vec::new();
        for file in self.pending()? {
            match load_run(&file) {
                Ok(run) => runs.push((run, file)),
                Err(e) => report.rejected.push(self.reject(&file, &e.to_string())?),
            }
        }
        runs.sort_by(|(a, fa), (b, fb)| {
            (a.created_unix_ms, &a.run_id, fa).cmp(&(b.created_unix_ms, &b.run_id, fb))
        });
        let total = runs.len();
        for (index, (run, file)) in runs.into_iter().enumerate() {
            let bytes = std::fs::read(&file).map_err(|source| SpoolError::Io {
                path: file.clone(),
                source,
            })?;
            match sink.deliver(&run, &bytes) {
                Ok(how) => {
                    remove_delivered(&file)?;
                    report.delivered.push((run.run_id, how));
                }
                Err(DeliveryError::Rejected(reason)) => {
                    report.rejected.push(self.reject(&file, &reason)?)
                }
                Err(stop) => {
                    report.stopped = Some(stop);
                    report.remaining = total - index;
                    break;
                }
            }
        }
        Ok(report)
    }

    /// Moves `file` into `rejected/` (never over another rejected file) and writes why
    /// beside it.
    fn reject(&self, file: &Path, reason: &str) -> Result<(PathBuf, String), SpoolError> {
        let rejected = self.dir.join(REJECTED_DIR);
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run.json".into());
        let move_error = |to: &Path, source| SpoolError::Move {
            path: file.to_path_buf(),
            to: to.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(&rejected).map_err(|e| move_error(&rejected, e))?;
        let mut to = rejected.join(&name);
        let mut n = 2;
        while to.exists() {
            to = rejected.join(format!("{name}.{n}"));
            n += 1;
        }
        std::fs::rename(file, &to).map_err(|e| move_error(&to, e))?;
        let mut note = to.clone().into_os_string();
        note.push(".reason.txt");
        let text = format!("{reason}\n");
        write_atomic(Path::new(&note), text.as_bytes()).map_err(|e| move_error(&to, e.source))?;
        Ok((to, reason.to_string()))
    }
}

/// Another flusher may have delivered and removed the same file first: that is fine.
fn remove_delivered(file: &Path) -> Result<(), SpoolError> {
    match std::fs::remove_file(file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(SpoolError::Io {
            path: file.to_path_buf(),
            source,
        }),
    }
}

/// Run ids are made by stackbench (letters, digits, `-`, `_`, `.`), but an imported file
/// may carry anything: nothing in one may leave the spool directory.
fn file_safe(run_id: &str) -> String {
    let safe: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.trim_start_matches('.') {
        "" => "run".into(),
        rest => rest.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_from_criterion;

    fn fixture_run(id: &str, created: u64) -> RunRecord {
        let mut run = run_from_criterion(Path::new(crate::CRITERION_FIXTURE), "new", None).unwrap();
        run.run_id = id.into();
        run.created_unix_ms = created;
        run
    }

    /// Records what it was given; unreachable from the `fail_at`-th delivery on.
    struct Recorder {
        got: Vec<String>,
        fail_at: Option<usize>,
    }

    impl RunSink for Recorder {
        fn deliver(&mut self, run: &RunRecord, _: &[u8]) -> Result<Delivered, DeliveryError> {
            if self.fail_at == Some(self.got.len()) {
                return Err(DeliveryError::Unreachable("down".into()));
            }
            self.got.push(run.run_id.clone());
            Ok(Delivered::New)
        }
        fn describe(&self) -> String {
            "recorder".into()
        }
    }

    #[test]
    fn a_flush_delivers_oldest_first_and_stops_where_the_store_went_away() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::of_results(dir.path());
        // Names sort the other way round from creation times.
        for (id, created) in [("a", 30), ("b", 20), ("c", 10)] {
            let run = fixture_run(id, created);
            spool.keep(id, &run_file_bytes(&run).unwrap()).unwrap();
        }
        let mut sink = Recorder {
            got: Vec::new(),
            fail_at: Some(2),
        };
        let report = spool.flush(&mut sink).unwrap();
        assert_eq!(sink.got, ["c", "b"]);
        assert_eq!(report.remaining, 1);
        assert!(matches!(
            report.stopped,
            Some(DeliveryError::Unreachable(_))
        ));
        assert_eq!(spool.pending().unwrap(), vec![spool.dir().join("a.json")]);
    }

    #[test]
    fn a_malformed_file_is_quarantined_with_its_reason_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::of_results(dir.path());
        let bad = spool.keep("bad", b"{not json").unwrap();
        let mut sink = Recorder {
            got: Vec::new(),
            fail_at: None,
        };
        let report = spool.flush(&mut sink).unwrap();
        assert!(!bad.exists());
        let (moved, reason) = &report.rejected[0];
        assert_eq!(std::fs::read(moved).unwrap(), b"{not json");
        assert!(reason.contains("invalid JSON"), "{reason}");
        let note = std::fs::read_to_string(format!("{}.reason.txt", moved.display())).unwrap();
        assert!(note.contains("invalid JSON"), "{note}");
        assert!(spool.pending().unwrap().is_empty());
        // A second bad file of the same name does not overwrite the first.
        spool.keep("bad", b"[]").unwrap();
        let again = spool.flush(&mut sink).unwrap();
        assert_ne!(&again.rejected[0].0, moved);
        assert!(moved.exists());
    }

    #[test]
    fn spool_names_stay_inside_the_spool() {
        assert_eq!(file_safe("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(file_safe(".."), "run");
        assert_eq!(file_safe("20261125-1-host"), "20261125-1-host");
    }
}
