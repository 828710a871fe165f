//! The store's statements on rusqlite: statements come from the connection's cache of
//! prepared statements (a run's benchmarks reuse one), values are bound natively, and rows
//! are read in place.

use crate::db::DbError;
use crate::db::sql::{Column, Columns, Dialect, Param, Sql, Statement};
use rusqlite::types::{Null, ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, Row};
use std::path::Path;

/// The connection (or the transaction open on it) and the file, for errors.
pub(in crate::db) struct SqliteConn<'c> {
    pub(super) conn: &'c Connection,
    pub(super) path: &'c Path,
}

impl SqliteConn<'_> {
    pub(super) fn sql(&self, context: &str, source: rusqlite::Error) -> DbError {
        DbError::Sql {
            path: self.path.to_path_buf(),
            context: context.to_string(),
            source,
        }
    }

    /// A damaged or foreign file gets its own error: it is the user's file, not ours.
    pub(super) fn classify(&self, source: rusqlite::Error, context: &str) -> DbError {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => DbError::NotADatabase {
                path: self.path.to_path_buf(),
                source,
            },
            _ => self.sql(context, source),
        }
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Text(v) | Param::OptText(Some(v)) => {
                ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes()))
            }
            Param::Int(v) | Param::OptInt(Some(v)) => ToSqlOutput::from(*v),
            Param::Real(v) | Param::OptReal(Some(v)) => ToSqlOutput::from(*v),
            // An INTEGER column: SQLite has no boolean type.
            Param::OptBool(Some(v)) => ToSqlOutput::from(*v),
            Param::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
            Param::OptText(None)
            | Param::OptInt(None)
            | Param::OptReal(None)
            | Param::OptBool(None) => ToSqlOutput::from(Null),
        })
    }
}

impl Columns for Row<'_> {
    type Error = rusqlite::Error;

    fn get<T: Column>(&self, index: usize) -> rusqlite::Result<T> {
        Row::get(self, index)
    }

    fn str(&self, index: usize) -> rusqlite::Result<&str> {
        Ok(self.get_ref(index)?.as_str()?)
    }

    fn bytes(&self, index: usize) -> rusqlite::Result<Option<&[u8]>> {
        Ok(self.get_ref(index)?.as_blob_or_null()?)
    }
}

impl Sql for SqliteConn<'_> {
    const DIALECT: Dialect = Dialect::Sqlite;
    type Error = rusqlite::Error;
    type Row<'r> = rusqlite::Row<'r>;

    fn store(&self) -> String {
        format!("sqlite:{}", self.path.display())
    }

    fn for_each<F>(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
        mut each: F,
    ) -> Result<(), DbError>
    where
        F: FnMut(&Self::Row<'_>) -> Result<(), Self::Error>,
    {
        let sql = |e| self.sql(context, e);
        let mut stmt = self
            .conn
            .prepare_cached(statement.text(Dialect::Sqlite))
            .map_err(sql)?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(sql)?;
        while let Some(row) = rows.next().map_err(sql)? {
            each(row).map_err(sql)?;
        }
        Ok(())
    }

    fn execute(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
    ) -> Result<u64, DbError> {
        let sql = |e| self.sql(context, e);
        let mut stmt = self
            .conn
            .prepare_cached(statement.text(Dialect::Sqlite))
            .map_err(sql)?;
        let changed = stmt
            .execute(rusqlite::params_from_iter(params))
            .map_err(sql)?;
        Ok(changed as u64)
    }

    fn batch(&mut self, context: &str, sql: &str) -> Result<(), DbError> {
        self.conn
            .execute_batch(sql)
            .map_err(|e| self.sql(context, e))
    }
}
