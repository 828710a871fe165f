//! The history store: runs, their benchmarks and samples, every comparison verdict and every
//! acknowledged step, in one of two engines with the same tables and the same answers:
//! SQLite (`sqlite/`, the embedded default `<results>/stackbench.db`, compiled in through
//! rusqlite's `bundled` feature) or PostgreSQL (`postgres/`, one store shared by a fleet
//! of runners). JSON run files stay the interchange format; this is what makes history
//! queryable without reading every file.
//!
//! The answers are the same because the questions are written once: one statement set
//! (`statements.rs`) and its row decoding (`queries.rs`, `runs.rs`) run on either engine
//! through `sql.rs`; an engine module is only its connection, its transactions and its
//! way of reading the schema version.
//!
//! Both engines write a run in one transaction (a killed writer leaves all of it or none),
//! keep the run id unique (a retried or concurrent duplicate is one run), and run the same
//! numbered migrations (`migrations/`). [`HistoryDb`] is the one API; the engines are an
//! enum behind it, so a caller never knows which one answers.

mod codec;
mod copy;
pub mod migrations;
mod model;
mod postgres;
mod queries;
mod runs;
mod sql;
mod sqlite;
mod statements;
mod url;

pub use copy::{CopyError, CopyReport, copy_store};
pub use migrations::{COMPATIBLE_FROM, Migrated, SCHEMA_VERSION};
pub use model::{
    Acknowledgement, ComparisonRecord, HistoryPoint, MedianSeries, PruneOutcome, StoredRun,
};
pub use url::{StoreUrl, StoreUrlError, redact};

use crate::run::RunRecord;
use sql::Engine as _;
use std::path::{Path, PathBuf};

/// Every run id in time order (oldest first), each with its hardware fingerprint.
pub type RunOrder = Vec<(String, Option<String>)>;

/// The database's file name inside a results directory.
pub const DB_FILE: &str = "stackbench.db";

/// What [`HistoryDb::insert_run`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    New,
    /// The same run id with the same fingerprint was already stored: imports are idempotent.
    AlreadyPresent,
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot create the results directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the history database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{path} is not a stackbench history database (not SQLite, or damaged: {source}); it was left untouched: move it aside to start a new history"
    )]
    NotADatabase {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{store} has history schema version {found}, which only version {compatible_from} and newer can write; this analyzer understands version {supported}, so it is newer than this analyzer understands: upgrade analyze-trends"
    )]
    NewerSchema {
        store: String,
        found: i64,
        compatible_from: i64,
        supported: i64,
    },
    #[error(
        "{store} has history schema version {found}, older than this analyzer's version {supported}; upgrading a store is explicit: run `analyze-trends store migrate --store {store}` (the previous version can still write it afterwards)"
    )]
    OlderSchema {
        store: String,
        found: i64,
        supported: i64,
    },
    #[error("history database {path}: {context}: {source}")]
    Sql {
        path: PathBuf,
        context: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("cannot reach the history store {store}: {source}")]
    Unreachable {
        store: String,
        #[source]
        source: ::postgres::Error,
    },
    #[error("history store {store}: {context}: {}", pg_message(source))]
    Postgres {
        store: String,
        context: String,
        #[source]
        source: ::postgres::Error,
    },
    #[error(
        "{store} is a results server, not a database: only `record`, `import` and `store flush` deliver runs to it; browse it in a browser or through its /api/, or point this command at the server's own store (--store postgres://… or sqlite:…)"
    )]
    ServerIsNotADatabase { store: String },
    #[error("history store {store}: run {run_id} cannot be read back: {reason}")]
    Unreadable {
        store: String,
        run_id: String,
        reason: String,
    },
    #[error(
        "run {run_id} is already in {store} with hardware fingerprint {stored}, but the incoming run has {incoming}: two different runs share one id, so it was not imported"
    )]
    Conflict {
        store: String,
        run_id: String,
        stored: String,
        incoming: String,
    },
}

/// PostgreSQL's own message for a server error (the driver's `Display` says only "db error").
fn pg_message(e: &::postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

impl DbError {
    /// True when the store could not be reached or the connection was lost (mid-transaction
    /// included): the run is intact on this side and can be stored later.
    pub fn is_unreachable(&self) -> bool {
        match self {
            DbError::Unreachable { .. } => true,
            DbError::Postgres { source, .. } => postgres::connection_lost(source),
            _ => false,
        }
    }
}

/// One open store. Methods answer the same on either engine.
pub struct HistoryDb {
    engine: Engine,
    url: StoreUrl,
}

enum Engine {
    Sqlite(sqlite::SqliteDb),
    Postgres(postgres::PgDb),
}

impl std::fmt::Debug for HistoryDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryDb").field("url", &self.url).finish()
    }
}

/// Calls the same method on whichever engine is open; `conn:` runs one of the shared
/// queries on its connection.
macro_rules! on_engine {
    ($self:expr, $db:ident => $call:expr) => {
        match $self {
            Engine::Sqlite($db) => $call,
            Engine::Postgres($db) => $call,
        }
    };
    ($self:expr, conn: $query:path $(, $arg:expr)*) => {
        on_engine!($self, e => e.with_conn(|c| $query(c $(, $arg)*)))
    };
}

impl HistoryDb {
    /// Opens (creating if absent) `<dir>/stackbench.db`.
    pub fn open(dir: &Path) -> Result<HistoryDb, DbError> {
        HistoryDb::open_url(&StoreUrl::default_for(dir))
    }

    /// Opens the store at `url`, checking that it is a stackbench store of a schema this
    /// version may write before anything writes to it; an empty one is created. An older
    /// store is refused with the `store migrate` command to run.
    pub fn open_url(url: &StoreUrl) -> Result<HistoryDb, DbError> {
        Self::open_for(url, false)
    }

    /// Opens an older store too (for `store migrate`, which upgrades it).
    fn open_for(url: &StoreUrl, for_migration: bool) -> Result<HistoryDb, DbError> {
        let engine = match url {
            StoreUrl::Sqlite(path) => Engine::Sqlite(sqlite::SqliteDb::open(path, for_migration)?),
            StoreUrl::Postgres(conn) => {
                Engine::Postgres(postgres::PgDb::open(conn, &url.to_string(), for_migration)?)
            }
            StoreUrl::Server(server) => {
                return Err(DbError::ServerIsNotADatabase {
                    store: server.to_string(),
                });
            }
        };
        Ok(HistoryDb {
            engine,
            url: url.clone(),
        })
    }

    /// Brings the store at `url` to [`SCHEMA_VERSION`] in one transaction.
    pub fn migrate(url: &StoreUrl) -> Result<Migrated, DbError> {
        let mut db = Self::open_for(url, true)?;
        on_engine!(&mut db.engine, e => e.migrate())
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// (schema_version, compatible_from) as the store records them.
    pub fn schema(&self) -> Result<migrations::Found, DbError> {
        on_engine!(&self.engine, e => e.found()).map(|found| {
            found.unwrap_or(migrations::Found {
                version: 0,
                compatible_from: 0,
            })
        })
    }

    /// Stores `run` unless a run with its id is already there (then nothing changes; a
    /// different fingerprint under the same id is a conflict, not a duplicate).
    pub fn insert_run(&mut self, run: &RunRecord) -> Result<Inserted, DbError> {
        on_engine!(&self.engine, e => runs::insert_run(e, run))
    }

    /// Run ids in time order (oldest first), each with its fingerprint.
    pub fn run_ids(&self) -> Result<RunOrder, DbError> {
        on_engine!(&self.engine, conn: runs::run_ids)
    }

    /// Whether a run with this id is stored.
    pub fn has_run(&self, run_id: &str) -> Result<bool, DbError> {
        on_engine!(&self.engine, conn: runs::has_run, run_id)
    }

    /// One whole run by id, or `None` when the store has no such run.
    pub fn load_run(&self, run_id: &str) -> Result<Option<RunRecord>, DbError> {
        on_engine!(&self.engine, conn: runs::load_run, run_id)
    }

    /// Every run, oldest first; unreadable runs come back as errors beside the others.
    pub fn load_all(&self) -> Result<Vec<Result<RunRecord, DbError>>, DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.load_all(),
            // One connection: PostgreSQL serves the runs one query at a time anyway.
            Engine::Postgres(e) => e.with_conn(|c| runs::load_all(c)),
        }
    }

    /// Every run, newest first, without loading benchmarks.
    pub fn list_runs(&self) -> Result<Vec<StoredRun>, DbError> {
        on_engine!(&self.engine, conn: queries::list_runs)
    }

    /// Every run, oldest first, and per benchmark id its medians as (index into those
    /// runs, median ns) in run order: what the history report is computed from.
    pub fn medians(&self) -> Result<(Vec<StoredRun>, MedianSeries), DbError> {
        on_engine!(&self.engine, conn: queries::medians)
    }

    /// Every measured value of `bench_id`, oldest first.
    pub fn history(&self, bench_id: &str) -> Result<Vec<HistoryPoint>, DbError> {
        on_engine!(&self.engine, conn: queries::history, bench_id)
    }

    /// The failures runs recorded for `bench_id`, oldest run first, as (run id, error).
    pub fn recorded_failures(&self, bench_id: &str) -> Result<Vec<(String, String)>, DbError> {
        on_engine!(&self.engine, conn: queries::recorded_failures, bench_id)
    }

    /// Benchmark ids that contain `fragment`, for "did you mean" messages.
    pub fn similar_benchmark_ids(&self, fragment: &str) -> Result<Vec<String>, DbError> {
        on_engine!(&self.engine, conn: queries::similar_benchmark_ids, fragment)
    }

    pub fn record_comparison(&self, c: &ComparisonRecord) -> Result<i64, DbError> {
        on_engine!(&self.engine, conn: queries::record_comparison, c)
    }

    /// Stored comparisons, newest first.
    pub fn comparisons(&self) -> Result<Vec<ComparisonRecord>, DbError> {
        on_engine!(&self.engine, conn: queries::comparisons)
    }

    pub fn acknowledge(&self, a: &Acknowledgement) -> Result<(), DbError> {
        on_engine!(&self.engine, conn: queries::acknowledge, a)
    }

    /// Every acknowledgement, oldest first.
    pub fn acknowledgements(&self) -> Result<Vec<Acknowledgement>, DbError> {
        on_engine!(&self.engine, conn: queries::acknowledgements)
    }

    /// Removes comparisons older than `cutoff_unix_ms`, then every run older than it that
    /// is not among the `keep_latest` newest of its hardware and that no remaining
    /// comparison and no acknowledgement refers to. One transaction: all of it or none.
    pub fn prune(
        &mut self,
        cutoff_unix_ms: u64,
        keep_latest: usize,
        dry_run: bool,
    ) -> Result<PruneOutcome, DbError> {
        on_engine!(&self.engine, e => queries::prune(e, cutoff_unix_ms, keep_latest, dry_run))
    }

    /// Every run's stored content checksum (`None` where a version-1 writer left it out),
    /// in time order.
    pub fn stored_checksums(&self) -> Result<Vec<(String, Option<String>)>, DbError> {
        on_engine!(&self.engine, conn: runs::stored_checksums)
    }

    /// An engine's own consistency check: `ok`, or its list of problems.
    pub fn integrity_check(&self) -> Result<String, DbError> {
        match &self.engine {
            Engine::Sqlite(e) => e.integrity_check(),
            // PostgreSQL checks its own pages; a reachable server is a consistent one.
            Engine::Postgres(_) => Ok("ok".into()),
        }
    }
}

/// The checksum `store copy` verifies: SHA-256 of the run's JSON with its benchmarks in id
/// order, exactly as the store gives the run back. Hex, lower case.
pub fn content_sha256(run: &RunRecord) -> String {
    use sha2::{Digest, Sha256};
    let mut canonical = run.with_unusable_failed().into_owned();
    canonical.benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Fault injection for the crash tests: with this variable set to a number of
/// milliseconds, a run insert stops that long after writing everything and before
/// committing, and says so on stderr, so a test can `kill -9` it mid-transaction.
const PAUSE_ENV: &str = "STACKBENCH_DB_TEST_PAUSE_BEFORE_COMMIT_MS";

fn pause_before_commit_for_tests(run_id: &str) {
    let Some(ms) = std::env::var(PAUSE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    eprintln!("stackbench-db: run {run_id} written, pausing {ms} ms before commit");
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
