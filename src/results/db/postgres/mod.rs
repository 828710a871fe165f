//! The PostgreSQL engine: one store shared by a fleet of runners (the `postgres` crate's
//! synchronous client, no TLS: a lab network or an SSH tunnel; PostgreSQL 15 or newer).
//!
//! Many writers: each run is one transaction, and the run id is unique, so the insert is
//! `ON CONFLICT (run_id) DO NOTHING`: of two runners storing the same run at once, the
//! second waits on the first's uncommitted row and then finds it, and a retried upload is
//! one run. A writer killed mid-transaction loses its connection, and the server rolls the
//! transaction back: no partial run. Creating and migrating the schema take an advisory
//! lock, so concurrent first writers create the tables once.

mod queries;
mod runs;

use super::DbError;
use super::migrations::{self, Found, Migrated, Plan, SCHEMA_VERSION};
use ::postgres::error::SqlState;
use ::postgres::{Client, GenericClient, NoTls};
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
        let found = found(&mut *db.client(), store)?;
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
        found(&mut *self.client(), &self.store)
    }

    /// Creates every table of an empty database, once however many writers start at once.
    fn create(&self) -> Result<(), DbError> {
        self.locked_schema_change("creating the store", |tx, store| {
            if found(tx, store)?.is_none() {
                apply_steps(tx, store, 0)?;
            }
            Ok(())
        })
    }

    /// `store migrate`: every step after the store's version, in one transaction.
    pub(super) fn migrate(&mut self) -> Result<Migrated, DbError> {
        self.locked_schema_change("migrating", |tx, store| {
            let from = found(tx, store)?.map_or(0, |f| f.version);
            if from < SCHEMA_VERSION {
                apply_steps(tx, store, from)?;
                runs::backfill_checksums(tx, store)?;
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
        work: impl FnOnce(&mut ::postgres::Transaction<'_>, &str) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut client = self.client();
        client
            .execute("SELECT pg_advisory_lock($1)", &[&SCHEMA_LOCK])
            .map_err(|e| self.pg(&format!("{context}: locking the schema"), e))?;
        let result = (|| {
            let mut tx = client
                .transaction()
                .map_err(|e| self.pg(&format!("{context}: starting"), e))?;
            let value = work(&mut tx, &self.store)?;
            tx.commit()
                .map_err(|e| self.pg(&format!("{context}: committing"), e))?;
            Ok(value)
        })();
        // Released with the connection anyway; an error here changes nothing.
        let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&SCHEMA_LOCK]);
        result
    }
}

/// The version the database records: the meta table (version 2 on), else version 1 when
/// the tables exist, else `None` (an empty database).
fn found(client: &mut impl GenericClient, store: &str) -> Result<Option<Found>, DbError> {
    let pg = |source| DbError::Postgres {
        store: store.to_string(),
        context: "reading the schema version".into(),
        source,
    };
    let row = client
        .query_one(
            "SELECT to_regclass('stackbench_meta') IS NOT NULL, to_regclass('runs') IS NOT NULL",
            &[],
        )
        .map_err(pg)?;
    let has_meta: bool = row.try_get(0).map_err(pg)?;
    let has_runs: bool = row.try_get(1).map_err(pg)?;
    if !has_meta {
        return Ok(has_runs.then_some(Found {
            version: 1,
            compatible_from: 1,
        }));
    }
    let mut meta = |key: &str| -> Result<i64, DbError> {
        let row = client
            .query_opt("SELECT value FROM stackbench_meta WHERE key = $1", &[&key])
            .map_err(pg)?;
        let value: Option<String> = row.map(|r| r.try_get(0)).transpose().map_err(pg)?;
        Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
    };
    Ok(Some(Found {
        version: meta("schema_version")?,
        compatible_from: meta("compatible_from")?,
    }))
}

fn apply_steps(client: &mut impl GenericClient, store: &str, from: i64) -> Result<(), DbError> {
    let pg = |context: String, source| DbError::Postgres {
        store: store.to_string(),
        context,
        source,
    };
    for step in migrations::steps_after(from) {
        client
            .batch_execute(step.postgres)
            .map_err(|e| pg(format!("migrating to schema version {}", step.version), e))?;
    }
    for (key, value) in [
        ("schema_version", SCHEMA_VERSION),
        ("compatible_from", migrations::COMPATIBLE_FROM),
    ] {
        client
            .execute(migrations::UPSERT_META, &[&key, &value.to_string()])
            .map_err(|e| pg("writing the schema version".into(), e))?;
    }
    Ok(())
}
