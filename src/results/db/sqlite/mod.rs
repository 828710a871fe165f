//! The SQLite engine: one file, `<results>/stackbench.db` by default.
//!
//! Why these settings: WAL lets readers work while a `record` writes; a long busy timeout
//! lets concurrent recorders queue instead of failing; each run is written in one
//! `BEGIN IMMEDIATE` transaction, so a killed writer leaves either the whole run or none,
//! and two writers of the same run id are serialised (the second finds the first's row).

mod queries;
mod runs;

use super::DbError;
use super::migrations::{self, Found, Migrated, Plan, SCHEMA_VERSION};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another's transaction before giving up: far longer than
/// the slowest single-run insert, so concurrent `record`s queue rather than fail.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) struct SqliteDb {
    conn: Connection,
    path: PathBuf,
}

impl SqliteDb {
    /// Opens (creating if absent) the database file at `path`, checking that an existing
    /// file is a stackbench database this version may use before anything writes to it.
    pub(super) fn open(path: &Path, for_migration: bool) -> Result<SqliteDb, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| DbError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|source| DbError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let db = SqliteDb {
            conn,
            path: path.to_path_buf(),
        };
        db.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| db.sql("setting the busy timeout", e))?;
        // Reading the header first: a file that is not SQLite fails here, before the
        // journal-mode change or a migration could write to it.
        let plan = migrations::plan(db.found()?, &db.store(), for_migration)?;
        db.configure()?;
        if plan == Plan::Create {
            db.create()?;
        }
        Ok(db)
    }

    /// The store as errors name it.
    fn store(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    /// The version the file records: the meta table where there is one (version 2 on),
    /// else `PRAGMA user_version` (version 1; 0 is an empty file). A `user_version` above
    /// the meta table's `compatible_from` was set by a newer writer and counts.
    pub(super) fn found(&self) -> Result<Option<Found>, DbError> {
        let user_version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| self.classify(e, "reading the schema version"))?;
        let has_meta: bool = self
            .conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stackbench_meta'",
                [],
                |_| Ok(()),
            )
            .optional()
            .map_err(|e| self.classify(e, "reading the schema version"))?
            .is_some();
        if !has_meta {
            return Ok((user_version > 0).then_some(Found {
                version: user_version,
                compatible_from: user_version,
            }));
        }
        let meta = |key: &str| -> Result<i64, DbError> {
            let value: Option<String> = self
                .conn
                .query_row(
                    "SELECT value FROM stackbench_meta WHERE key = ?1",
                    [key],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.sql("reading the schema version", e))?;
            Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
        };
        Ok(Some(Found {
            version: meta("schema_version")?.max(user_version),
            compatible_from: meta("compatible_from")?.max(user_version),
        }))
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

    /// Creates every table of an empty file. The version is re-read inside an immediate
    /// transaction, so two processes opening a fresh file at once create it exactly once.
    fn create(&self) -> Result<(), DbError> {
        self.in_transaction("creating the store", |db| {
            if db.found()?.is_none() {
                db.apply_steps(0)?;
            }
            Ok(())
        })
    }

    /// `store migrate`: every step after the file's version, in one transaction.
    pub(super) fn migrate(&mut self) -> Result<Migrated, DbError> {
        self.in_transaction("migrating", |db| {
            let from = db.found()?.map_or(0, |f| f.version);
            if from < SCHEMA_VERSION {
                db.apply_steps(from)?;
                db.backfill_checksums()?;
            }
            Ok(Migrated {
                from,
                to: from.max(SCHEMA_VERSION),
            })
        })
    }

    /// Runs the steps after `from` and records the new version (the caller holds the
    /// transaction).
    fn apply_steps(&self, from: i64) -> Result<(), DbError> {
        for step in migrations::steps_after(from) {
            self.conn.execute_batch(step.sqlite).map_err(|e| {
                self.sql(&format!("migrating to schema version {}", step.version), e)
            })?;
        }
        for (key, value) in [
            ("schema_version", SCHEMA_VERSION),
            ("compatible_from", migrations::COMPATIBLE_FROM),
        ] {
            self.conn
                .execute(migrations::UPSERT_META, [key, &value.to_string()])
                .map_err(|e| self.sql("writing the schema version", e))?;
        }
        self.conn
            .pragma_update(None, "user_version", migrations::COMPATIBLE_FROM)
            .map_err(|e| self.sql("writing the schema version", e))
    }

    /// Fills `content_sha256` of runs written without it (by version 1).
    fn backfill_checksums(&self) -> Result<(), DbError> {
        let missing: Vec<String> = self.collect(
            "listing runs without a checksum",
            "SELECT run_id FROM runs WHERE content_sha256 IS NULL",
            [],
            |row| row.get(0),
        )?;
        for run_id in missing {
            if let Some(run) = self.load_run(&run_id)? {
                self.conn
                    .execute(
                        "UPDATE runs SET content_sha256 = ?1 WHERE run_id = ?2",
                        [super::content_sha256(&run), run_id.clone()],
                    )
                    .map_err(|e| self.sql(&format!("run {run_id}: writing its checksum"), e))?;
            }
        }
        Ok(())
    }

    /// `BEGIN IMMEDIATE` around `work`, committed when it succeeds and rolled back when not.
    fn in_transaction<T>(
        &self,
        context: &str,
        work: impl FnOnce(&Self) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.sql(&format!("{context}: starting"), e))?;
        match work(self) {
            Ok(value) => {
                self.conn
                    .execute_batch("COMMIT")
                    .map_err(|e| self.sql(&format!("{context}: committing"), e))?;
                Ok(value)
            }
            Err(e) => {
                // The error that stopped the work is the one to report.
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// `PRAGMA integrity_check`: `ok`, or SQLite's list of problems.
    pub(super) fn integrity_check(&self) -> Result<String, DbError> {
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
