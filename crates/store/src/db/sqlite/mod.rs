//! The SQLite engine: one file, `<results>/stackbench.db` by default.
//!
//! Why these settings: WAL lets readers work while a `record` writes; a long busy timeout
//! lets concurrent recorders queue instead of failing; each run is written in one
//! `BEGIN IMMEDIATE` transaction, so a killed writer leaves either the whole run or none,
//! and two writers of the same run id are serialised (the second finds the first's row).

mod conn;

pub(super) use conn::SqliteConn;

use super::migrations::{self, Found, Migrated, Plan, SCHEMA_VERSION};
use super::sql::{Engine, Finish, Sql};
use super::{DbError, runs};
use crate::run::RunRecord;
use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};
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

    fn conn(&self) -> SqliteConn<'_> {
        SqliteConn {
            conn: &self.conn,
            path: &self.path,
        }
    }

    fn sql(&self, context: &str, source: rusqlite::Error) -> DbError {
        self.conn().sql(context, source)
    }

    pub(super) fn found(&self) -> Result<Option<Found>, DbError> {
        found(&mut self.conn())
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
                Err(e) => return Err(self.conn().classify(e, "switching to WAL")),
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
        self.write("creating the store", |c| {
            if found(c)?.is_none() {
                apply_steps(c, 0)?;
            }
            Ok(Finish::Commit(()))
        })
    }

    /// `store migrate`: every step after the file's version, in one transaction.
    pub(super) fn migrate(&mut self) -> Result<Migrated, DbError> {
        self.write("migrating", |c| {
            let from = found(c)?.map_or(0, |f| f.version);
            if from < SCHEMA_VERSION {
                apply_steps(c, from)?;
                runs::backfill_checksums(c)?;
            }
            Ok(Finish::Commit(Migrated {
                from,
                to: from.max(SCHEMA_VERSION),
            }))
        })
    }

    /// Every run, oldest first. Runs are rebuilt on all cores, each thread with its own
    /// connection (WAL readers do not block each other); unreadable runs come back as
    /// errors beside the others.
    pub(super) fn load_all(&self) -> Result<Vec<Result<RunRecord, DbError>>, DbError> {
        let ids: Vec<String> = self
            .with_conn(|c| runs::run_ids(c))?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 16);
        let path = self.path.as_path();
        let load_chunk = |chunk: &[String]| -> Vec<Result<RunRecord, DbError>> {
            let loaded = SqliteDb::open(path, false).and_then(|db| {
                db.with_conn(|c| {
                    Ok(chunk
                        .iter()
                        .filter_map(|id| runs::load_run(c, id).transpose())
                        .collect())
                })
            });
            loaded.unwrap_or_else(|e| vec![Err(e)])
        };
        // One chunk per thread (not `parallel_map`, which parallelises only long lists):
        // each thread pays for one connection, then streams its runs.
        let per_chunk: Vec<Vec<Result<RunRecord, DbError>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ids
                .chunks(ids.len().div_ceil(threads).max(1))
                .map(|chunk| scope.spawn(|| load_chunk(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        Ok(per_chunk.into_iter().flatten().collect())
    }

    /// `PRAGMA integrity_check`: `ok`, or SQLite's list of problems.
    pub(super) fn integrity_check(&self) -> Result<String, DbError> {
        self.conn
            .pragma_query_value(None, "integrity_check", |row| row.get(0))
            .map_err(|e| self.sql("checking integrity", e))
    }
}

impl Engine for SqliteDb {
    type Conn<'c> = SqliteConn<'c>;

    fn store(&self) -> String {
        self.conn().store()
    }

    fn with_conn<T>(
        &self,
        work: impl FnOnce(&mut SqliteConn<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        work(&mut self.conn())
    }

    /// `BEGIN IMMEDIATE`: the write lock is taken at the start, so two writers of one run
    /// id are serialised (the second finds the first's row) and a prune's ranks hold.
    fn write<T>(
        &self,
        context: &str,
        work: impl FnOnce(&mut SqliteConn<'_>) -> Result<Finish<T>, DbError>,
    ) -> Result<T, DbError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(&format!("{context}: starting"), e))?;
        // Dropped on an error: rusqlite rolls the transaction back.
        let (value, commit, ending) = work(&mut SqliteConn {
            conn: &tx,
            path: &self.path,
        })?
        .into_parts();
        let ended = if commit { tx.commit() } else { tx.rollback() };
        ended.map_err(|e| self.sql(&format!("{context}: {ending}"), e))?;
        Ok(value)
    }
}

/// The version the file records: the meta table where there is one (version 2 on), else
/// `PRAGMA user_version` (version 1; 0 is an empty file). A `user_version` above the meta
/// table's `compatible_from` was set by a newer writer and counts.
fn found(c: &mut SqliteConn<'_>) -> Result<Option<Found>, DbError> {
    let user_version: i64 = c
        .conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| c.classify(e, "reading the schema version"))?;
    let has_meta: bool = c
        .conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stackbench_meta'",
            [],
            |_| Ok(()),
        )
        .optional()
        .map_err(|e| c.classify(e, "reading the schema version"))?
        .is_some();
    if !has_meta {
        return Ok((user_version > 0).then_some(Found {
            version: user_version,
            compatible_from: user_version,
        }));
    }
    Ok(Some(Found {
        version: migrations::meta_value(c, "schema_version")?.max(user_version),
        compatible_from: migrations::meta_value(c, "compatible_from")?.max(user_version),
    }))
}

/// The shared steps, then `PRAGMA user_version` = `compatible_from` for the version-1
/// binaries, which read only that (the caller holds the transaction).
fn apply_steps(c: &mut SqliteConn<'_>, from: i64) -> Result<(), DbError> {
    migrations::apply_steps(c, from)?;
    c.conn
        .pragma_update(None, "user_version", migrations::COMPATIBLE_FROM)
        .map_err(|e| c.sql("writing the schema version", e))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
