//! The history database, `<results>/stackbench.db`: SQLite (compiled in through rusqlite's
//! `bundled` feature) as the store of record for runs, their benchmarks and samples, every
//! comparison verdict and every acknowledged step. JSON run files stay the interchange
//! format; this is what makes history queryable without reading every file.
//!
//! Why these settings: WAL lets readers work while a `record` writes; a long busy timeout
//! lets concurrent recorders queue instead of failing; each run is written in one
//! `BEGIN IMMEDIATE` transaction, so a killed writer leaves either the whole run or none.
//! `PRAGMA user_version` is the schema version: older databases are migrated forward,
//! newer ones refused (their tables may mean something this version would misread).

mod codec;
mod queries;
mod runs;
mod schema;

pub use queries::{
    Acknowledgement, ComparisonRecord, HistoryPoint, MedianSeries, PruneOutcome, StoredRun,
};
pub use runs::Inserted;
pub use schema::SCHEMA_VERSION;

use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Every run id in time order (oldest first), each with its hardware fingerprint.
pub type RunOrder = Vec<(String, Option<String>)>;

/// The database's file name inside a results directory.
pub const DB_FILE: &str = "stackbench.db";

/// How long a writer waits for another's transaction before giving up: far longer than
/// the slowest single-run insert, so concurrent `record`s queue rather than fail.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

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
        "{path} has history schema version {found}, newer than this analyzer understands (version {supported}); upgrade analyze-trends"
    )]
    NewerSchema {
        path: PathBuf,
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
    #[error("history database {path}: run {run_id} cannot be read back: {reason}")]
    Unreadable {
        path: PathBuf,
        run_id: String,
        reason: String,
    },
    #[error(
        "run {run_id} is already in {path} with hardware fingerprint {stored}, but the incoming run has {incoming}: two different runs share one id, so it was not imported"
    )]
    Conflict {
        path: PathBuf,
        run_id: String,
        stored: String,
        incoming: String,
    },
}

/// One open connection to a results directory's history database.
pub struct HistoryDb {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for HistoryDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryDb")
            .field("path", &self.path)
            .finish()
    }
}

impl HistoryDb {
    /// Opens (creating if absent) `<dir>/stackbench.db`, checking that an existing file is
    /// a stackbench database of a schema this version understands before anything writes
    /// to it, then migrating an older schema forward.
    pub fn open(dir: &Path) -> Result<HistoryDb, DbError> {
        std::fs::create_dir_all(dir).map_err(|source| DbError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(DB_FILE);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags).map_err(|source| DbError::Open {
            path: path.clone(),
            source,
        })?;
        let mut db = HistoryDb { conn, path };
        db.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| db.sql("setting the busy timeout", e))?;
        // Reading the header first: a file that is not SQLite fails here, before the
        // journal-mode change or a migration could write to it.
        let found = db.user_version()?;
        db.refuse_newer(found)?;
        db.configure()?;
        schema::migrate(&mut db)?;
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn user_version(&self) -> Result<i64, DbError> {
        self.conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.classify(e, "reading the schema version"))
    }

    fn refuse_newer(&self, found: i64) -> Result<(), DbError> {
        if found > SCHEMA_VERSION {
            return Err(DbError::NewerSchema {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// WAL so readers never block a recorder; `synchronous = NORMAL` is safe against a
    /// killed process in WAL mode (only a power cut can lose the last commit, and the run's
    /// JSON file, written and fsynced first, brings it back on the next sync).
    fn configure(&self) -> Result<(), DbError> {
        // Switching a fresh file to WAL needs a moment of exclusive access: concurrent
        // first openers can see SQLITE_BUSY here even with a busy timeout, so retry.
        let mut attempts = 0;
        loop {
            match self
                .conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
            {
                Ok(_) => break,
                Err(e) if is_busy(&e) && attempts < 600 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(self.classify(e, "switching to WAL")),
            }
        }
        // Memory-mapped reads: loading every run of a large history is mostly reading
        // sample blobs, and a mapping spares a system call and a copy per page.
        self.conn
            .execute_batch(
                "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
                 PRAGMA mmap_size = 2147418112;",
            )
            .map_err(|e| self.sql("setting pragmas", e))
    }

    /// `PRAGMA integrity_check`: `ok`, or SQLite's list of problems.
    pub fn integrity_check(&self) -> Result<String, DbError> {
        self.conn
            .pragma_query_value(None, "integrity_check", |row| row.get(0))
            .map_err(|e| self.sql("checking integrity", e))
    }

    fn sql(&self, context: &str, source: rusqlite::Error) -> DbError {
        DbError::Sql {
            path: self.path.clone(),
            context: context.to_string(),
            source,
        }
    }

    /// A damaged or foreign file gets its own error: it is the user's file, not ours.
    fn classify(&self, source: rusqlite::Error, context: &str) -> DbError {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => DbError::NotADatabase {
                path: self.path.clone(),
                source,
            },
            _ => self.sql(context, source),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
