//! The schema, as numbered migrations that both engines run: each step has the same
//! tables and columns in SQLite's and PostgreSQL's dialects (`NNN_name.<engine>.sql`).
//!
//! A store records two numbers in `stackbench_meta`: `schema_version`, the newest step
//! applied, and `compatible_from`, the oldest stackbench schema version that can still
//! write it. Every step is additive for one version (new nullable columns, new tables), so
//! after migrating to version N the binaries of version N-1 keep recording into the store;
//! a store whose `compatible_from` is newer than this build is refused, naming both.
//! SQLite also keeps `PRAGMA user_version` = `compatible_from`: the binaries from before
//! the meta table (version 1) read only that pragma, and refuse anything above 1.
//!
//! Upgrading is explicit (`analyze-trends store migrate`): a command that opens an older
//! store says so instead of migrating it as a side effect of a write. An empty store is
//! created at the current version.

use super::DbError;
use super::sql::{Columns, Dialect, Sql, params};
use super::statements::{META_VALUE, UPSERT_META};

/// One step: the SQL that takes a store from `version - 1` to `version`, per engine.
pub struct Migration {
    pub version: i64,
    /// The oldest schema version that can still write a store at this version.
    pub compatible_from: i64,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        compatible_from: 1,
        sqlite: include_str!("001_initial.sqlite.sql"),
        postgres: include_str!("001_initial.postgres.sql"),
    },
    Migration {
        version: 2,
        // Additive: version 1 never reads the checksum or the meta table.
        compatible_from: 1,
        sqlite: include_str!("002_content_checksum.sqlite.sql"),
        postgres: include_str!("002_content_checksum.postgres.sql"),
    },
];

impl Migration {
    pub(super) fn text(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Sqlite => self.sqlite,
            Dialect::Postgres => self.postgres,
        }
    }
}

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The oldest version that can write a store at [`SCHEMA_VERSION`].
pub const COMPATIBLE_FROM: i64 = MIGRATIONS[MIGRATIONS.len() - 1].compatible_from;

/// The version a store says it has. `None` from [`read`](Found) means an empty store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub version: i64,
    pub compatible_from: i64,
}

/// What opening a store has to do before it is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Empty: create every table at the current version.
    Create,
    /// At this version, or newer within the window: use as it is.
    Ready,
    /// Older: only `store migrate` upgrades it, from this version.
    Migrate { from: i64 },
}

/// Whether this build may use a store at `found`; `for_migration` allows an older one.
pub fn plan(found: Option<Found>, store: &str, for_migration: bool) -> Result<Plan, DbError> {
    let Some(found) = found else {
        return Ok(Plan::Create);
    };
    if found.compatible_from > SCHEMA_VERSION {
        return Err(DbError::NewerSchema {
            store: store.to_string(),
            found: found.version,
            compatible_from: found.compatible_from,
            supported: SCHEMA_VERSION,
        });
    }
    if found.version >= SCHEMA_VERSION {
        return Ok(Plan::Ready);
    }
    if for_migration {
        return Ok(Plan::Migrate {
            from: found.version,
        });
    }
    Err(DbError::OlderSchema {
        store: store.to_string(),
        found: found.version,
        supported: SCHEMA_VERSION,
    })
}

/// The steps after `from`, in order.
pub fn steps_after(from: i64) -> impl Iterator<Item = &'static Migration> {
    MIGRATIONS.iter().filter(move |m| m.version > from)
}

/// Runs the steps after `from` and records the new version in the meta table (the caller
/// holds the transaction).
pub(super) fn apply_steps<C: Sql>(c: &mut C, from: i64) -> Result<(), DbError> {
    for step in steps_after(from) {
        c.batch(
            &format!("migrating to schema version {}", step.version),
            step.text(C::DIALECT),
        )?;
    }
    for (key, value) in [
        ("schema_version", SCHEMA_VERSION),
        ("compatible_from", COMPATIBLE_FROM),
    ] {
        c.execute(
            "writing the schema version",
            &UPSERT_META,
            &params![key, &value.to_string()],
        )?;
    }
    Ok(())
}

/// One number of the meta table (0 when absent or not a number).
pub(super) fn meta_value(c: &mut impl Sql, key: &str) -> Result<i64, DbError> {
    let value: Option<String> = c.first(
        "reading the schema version",
        &META_VALUE,
        &params![key],
        |row| row.get(0),
    )?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// What `store migrate` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migrated {
    pub from: i64,
    pub to: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(version: i64, compatible_from: i64) -> Option<Found> {
        Some(Found {
            version,
            compatible_from,
        })
    }

    #[test]
    fn the_window_admits_newer_compatible_stores_and_refuses_the_rest() {
        assert_eq!(plan(None, "s", false).unwrap(), Plan::Create);
        assert_eq!(plan(found(2, 1), "s", false).unwrap(), Plan::Ready);
        // A store one additive step ahead is still ours to write.
        assert_eq!(plan(found(3, 2), "s", false).unwrap(), Plan::Ready);
        let err = plan(found(4, 3), "s", false).unwrap_err().to_string();
        assert!(
            err.contains("version 4") && err.contains("version 2"),
            "{err}"
        );
        let err = plan(found(1, 1), "s", false).unwrap_err().to_string();
        assert!(err.contains("store migrate"), "{err}");
        assert_eq!(
            plan(found(1, 1), "s", true).unwrap(),
            Plan::Migrate { from: 1 }
        );
        assert_eq!(steps_after(1).map(|m| m.version).collect::<Vec<_>>(), [2]);
    }
}
