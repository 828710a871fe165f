//! The PostgreSQL engine: one store shared by a fleet of runners (the `postgres` crate's
//! synchronous client, no TLS: a lab network or an SSH tunnel; PostgreSQL 15 or newer).
//!
//! Many writers: each run is one transaction, and the run id is unique, so the insert is
//! `ON CONFLICT (run_id) DO NOTHING`: of two runners storing the same run at once, the
//! second waits on the first's uncommitted row and then finds it, and a retried upload is
//! one run. A writer killed mid-transaction loses its connection, and the server rolls the
//! transaction back: no partial run. Creating and migrating the schema take an advisory
//! lock, so concurrent first writers create the tables once.

mod conn;

pub(super) use conn::PgConn;

use super::migrations::{self, Found, Migrated, Plan, SCHEMA_VERSION};
use super::sql::{Engine, Finish, Sql, Statement};
use super::{DbError, runs};
use ::postgres::error::SqlState;
use ::postgres::{Client, NoTls};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// How long a connection attempt may take before the store counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The advisory lock key schema changes hold (any constant; "stackbnc" in ASCII).
const SCHEMA_LOCK: i64 = 0x737461636b626e63;

pub(super) struct PgDb {
    /// The driver's client needs `&mut` for every query; the store's readers take `&self`.
    client: Mutex<Client>,
    /// The URL as errors print it (no password).
    store: String,
}

/// True when `e` means the server went away rather than refused something.
pub(super) fn connection_lost(e: &::postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::CONNECTION_FAILURE,
            SqlState::CONNECTION_EXCEPTION,
        ]
        .contains(code),
        // No server answer at all: the socket failed.
        None => e.as_db_error().is_none(),
    }
}

impl PgDb {
    pub(super) fn open(url: &str, store: &str, for_migration: bool) -> Result<PgDb, DbError> {
        let pg = |context: &str, source| DbError::Postgres {
            store: store.to_string(),
            context: context.to_string(),
            source,
        };
        let mut config: ::postgres::Config = url
            .parse()
            .map_err(|e| pg("reading the connection URL", e))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let client = config.connect(NoTls).map_err(|source| {
            // A server that answered (wrong password, no such database) was reached.
            if source.as_db_error().is_some() {
                pg("connecting", source)
            } else {
                DbError::Unreachable {
                    store: store.to_string(),
                    source,
                }
            }
        })?;
        let db = PgDb {
            client: Mutex::new(client),
            store: store.to_string(),
        };
        let found = db.with_conn(found)?;
        if migrations::plan(found, store, for_migration)? == Plan::Create {
            db.create()?;
        }
        Ok(db)
    }

    fn client(&self) -> MutexGuard<'_, Client> {
        // A panic elsewhere cannot leave the client half-used: each call is one round trip.
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn pg(&self, context: &str, source: ::postgres::Error) -> DbError {
        DbError::Postgres {
            store: self.store.clone(),
            context: context.to_string(),
            source,
        }
    }

    pub(super) fn found(&self) -> Result<Option<Found>, DbError> {
        self.with_conn(found)
    }

    /// Creates every table of an empty database, once however many writers start at once.
    fn create(&self) -> Result<(), DbError> {
        self.locked_schema_change("creating the store", |c| {
            if found(c)?.is_none() {
                migrations::apply_steps(c, 0)?;
            }
            Ok(())
        })
    }

    /// `store migrate`: every step after the store's version, in one transaction.
    pub(super) fn migrate(&mut self) -> Result<Migrated, DbError> {
        self.locked_schema_change("migrating", |c| {
            let from = found(c)?.map_or(0, |f| f.version);
            if from < SCHEMA_VERSION {
                migrations::apply_steps(c, from)?;
                runs::backfill_checksums(c)?;
            }
            Ok(Migrated {
                from,
                to: from.max(SCHEMA_VERSION),
            })
        })
    }

    /// Runs `work` in one transaction under a session advisory lock. The lock is taken
    /// before the transaction begins: taken inside it, the transaction's catalog snapshot
    /// could predate the tables a concurrent creator just committed.
    fn locked_schema_change<T>(
        &self,
        context: &str,
        work: impl FnOnce(&mut PgConn<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut client = self.client();
        client
            .execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])
            .map_err(|e| self.pg(&format!("{context}: locking the schema"), e))?;
        let result = self.transaction(&mut client, context, |c| work(c).map(Finish::Commit));
        // Released with the connection anyway; an error here changes nothing.
        let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK]);
        result
    }

    /// `work` in one transaction on `client`; the driver rolls it back when it is dropped
    /// unfinished (an error, or a panic).
    fn transaction<T>(
        &self,
        client: &mut Client,
        context: &str,
        work: impl FnOnce(&mut PgConn<'_>) -> Result<Finish<T>, DbError>,
    ) -> Result<T, DbError> {
        let mut tx = client
            .transaction()
            .map_err(|e| self.pg(&format!("{context}: starting"), e))?;
        let (value, commit, ending) = work(&mut PgConn::new(&mut tx, &self.store))?.into_parts();
        let ended = if commit { tx.commit() } else { tx.rollback() };
        ended.map_err(|e| self.pg(&format!("{context}: {ending}"), e))?;
        Ok(value)
    }
}

impl Engine for PgDb {
    type Conn<'c> = PgConn<'c>;

    fn store(&self) -> String {
        self.store.clone()
    }

    fn with_conn<T>(
        &self,
        work: impl FnOnce(&mut PgConn<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut client = self.client();
        work(&mut PgConn::new(&mut *client, &self.store))
    }

    fn write<T>(
        &self,
        context: &str,
        work: impl FnOnce(&mut PgConn<'_>) -> Result<Finish<T>, DbError>,
    ) -> Result<T, DbError> {
        self.transaction(&mut self.client(), context, work)
    }
}

/// Which of the store's tables exist: `to_regclass` is PostgreSQL's own.
static TABLES_PRESENT: Statement = Statement::both(
    "SELECT to_regclass('stackbench_meta') IS NOT NULL, to_regclass('runs') IS NOT NULL",
);

/// The version the database records: the meta table (version 2 on), else version 1 when
/// the tables exist, else `None` (an empty database).
fn found(c: &mut PgConn<'_>) -> Result<Option<Found>, DbError> {
    let tables: Option<(bool, bool)> =
        c.first("reading the schema version", &TABLES_PRESENT, &[], |row| {
            Ok((row.try_get(0)?, row.try_get(1)?))
        })?;
    let (has_meta, has_runs) = tables.unwrap_or_default();
    if !has_meta {
        return Ok(has_runs.then_some(Found {
            version: 1,
            compatible_from: 1,
        }));
    }
    Ok(Some(Found {
        version: migrations::meta_value(c, "schema_version")?,
        compatible_from: migrations::meta_value(c, "compatible_from")?,
    }))
}
