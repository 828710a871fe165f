//! What an engine has to provide so that the store's one statement set runs on it. Every
//! query is written once (`statements.rs`) and decoded once (`queries.rs`, `runs.rs`),
//! against the small traits here; SQLite and PostgreSQL each implement them in a thin
//! connection layer (`sqlite/conn.rs`, `postgres/conn.rs`) and nothing more. What differs
//! between the two dialects is said once: the placeholder rendering and the
//! data-modifying CTE in [`Dialect`], and the few statements written twice in
//! `statements.rs`.
//!
//! Hand-written rather than sqlx or sea-query: the store runs about thirty fixed statements
//! on two synchronous drivers it already has; sqlx would bring an async runtime to every
//! `record`, and a query builder a second way of writing SQL, for a difference of a dozen
//! tokens.

use super::DbError;
use std::sync::OnceLock;

/// The SQL dialect a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// Whether one statement can insert a benchmark and its samples (a data-modifying CTE):
    /// PostgreSQL can, which saves a round trip per benchmark over the network; SQLite
    /// cannot, and in-process a second statement costs nothing.
    pub(super) fn chains_inserts(self) -> bool {
        self == Dialect::Postgres
    }
}

/// One statement of the store, written in PostgreSQL's placeholder style (`$1`, `$2`, ...),
/// which SQLite gets rendered as `?1`, `?2`, ...: SQLite reads `$1` as a *named* parameter
/// numbered by first appearance, while `?N` is the N-th value whatever order the text
/// mentions them in. A statement whose SQL differs beyond placeholders carries SQLite's
/// own text beside PostgreSQL's.
pub(super) struct Statement {
    postgres: &'static str,
    sqlite: Option<&'static str>,
    /// SQLite's text with its placeholders rendered, made on first use.
    rendered: OnceLock<String>,
}

impl Statement {
    /// The same SQL on both engines.
    pub(super) const fn both(text: &'static str) -> Statement {
        Statement {
            postgres: text,
            sqlite: None,
            rendered: OnceLock::new(),
        }
    }

    /// SQL that differs between the engines beyond its placeholders.
    pub(super) const fn each(sqlite: &'static str, postgres: &'static str) -> Statement {
        Statement {
            postgres,
            sqlite: Some(sqlite),
            rendered: OnceLock::new(),
        }
    }

    pub(super) fn text(&self, dialect: Dialect) -> &str {
        match dialect {
            Dialect::Postgres => self.postgres,
            Dialect::Sqlite => self
                .rendered
                .get_or_init(|| sqlite_placeholders(self.sqlite.unwrap_or(self.postgres))),
        }
    }
}

/// `$N` becomes `?N`; a `$` not followed by a digit (a JSON path such as `'$.id'`) stays.
fn sqlite_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let numbered = c == '$' && chars.peek().is_some_and(char::is_ascii_digit);
        out.push(if numbered { '?' } else { c });
    }
    out
}

/// One bound value, in the few shapes the store writes; each engine binds it natively.
#[derive(Clone, Copy, Debug)]
pub(super) enum Param<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
    Real(f64),
    OptReal(Option<f64>),
    OptBool(Option<bool>),
    Bytes(&'a [u8]),
}

/// `From` for each shape the store binds, so `params!` takes fields as they are.
macro_rules! param_from {
    ($($shape:ty => |$v:ident| $param:expr;)*) => {
        $(impl<'a> From<$shape> for Param<'a> {
            fn from($v: $shape) -> Self {
                $param
            }
        })*
    };
}

param_from! {
    &'a str => |v| Param::Text(v);
    &'a String => |v| Param::Text(v);
    Option<&'a str> => |v| Param::OptText(v);
    &'a Option<String> => |v| Param::OptText(v.as_deref());
    i64 => |v| Param::Int(v);
    Option<i64> => |v| Param::OptInt(v);
    f64 => |v| Param::Real(v);
    Option<f64> => |v| Param::OptReal(v);
    Option<bool> => |v| Param::OptBool(v);
    &'a Vec<u8> => |v| Param::Bytes(v);
}

/// `params![a, b, ...]`: the values of one statement, in placeholder order.
macro_rules! params {
    ($($value:expr),* $(,)?) => {
        [$($crate::db::sql::Param::from($value)),*]
    };
}
pub(super) use params;

/// A type both drivers decode from a column (text, integers, reals, booleans, blobs and
/// their `Option`s).
pub(super) trait Column:
    rusqlite::types::FromSql + for<'a> ::postgres::types::FromSql<'a>
{
}
impl<T: rusqlite::types::FromSql + for<'a> ::postgres::types::FromSql<'a>> Column for T {}

/// One result row, as either driver gives it.
pub(super) trait Columns {
    type Error;
    fn get<T: Column>(&self, index: usize) -> Result<T, Self::Error>;
    /// Text borrowed from the row: the bulk reads do not allocate a string per row.
    fn str(&self, index: usize) -> Result<&str, Self::Error>;
    /// A blob (or NULL) borrowed from the row.
    fn bytes(&self, index: usize) -> Result<Option<&[u8]>, Self::Error>;

    /// A count or a time in ms: stored signed (neither engine has an unsigned 64-bit type).
    fn unsigned(&self, index: usize) -> Result<u64, Self::Error> {
        Ok(self.get::<i64>(index)? as u64)
    }
}

/// One connection (or one transaction on it) that runs the store's statements; errors
/// come back as [`DbError`] carrying `context` and the store.
pub(super) trait Sql {
    const DIALECT: Dialect;
    type Error;
    type Row<'r>: Columns<Error = Self::Error>;

    /// The store as errors name it.
    fn store(&self) -> String;

    /// Runs `statement` and hands each row to `each`.
    fn for_each<F>(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
        each: F,
    ) -> Result<(), DbError>
    where
        F: FnMut(&Self::Row<'_>) -> Result<(), Self::Error>;

    /// Runs a statement that returns no rows; the number of rows it changed.
    fn execute(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
    ) -> Result<u64, DbError>;

    /// Runs several statements of this engine's own SQL (a migration step).
    fn batch(&mut self, context: &str, sql: &str) -> Result<(), DbError>;

    /// Every row, each through `map`.
    fn collect<T>(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
        mut map: impl FnMut(&Self::Row<'_>) -> Result<T, Self::Error>,
    ) -> Result<Vec<T>, DbError> {
        let mut out = Vec::new();
        self.for_each(context, statement, params, |row| {
            out.push(map(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row through `map`, or `None` when there is none.
    fn first<T>(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
        mut map: impl FnMut(&Self::Row<'_>) -> Result<T, Self::Error>,
    ) -> Result<Option<T>, DbError> {
        let mut first = None;
        self.for_each(context, statement, params, |row| {
            if first.is_none() {
                first = Some(map(row)?);
            }
            Ok(())
        })?;
        Ok(first)
    }
}

/// How a write transaction ends.
pub(super) enum Finish<T> {
    Commit(T),
    RollBack(T),
}

impl<T> Finish<T> {
    /// The value, whether to commit, and what ending it is called in an error.
    pub(super) fn into_parts(self) -> (T, bool, &'static str) {
        match self {
            Finish::Commit(value) => (value, true, "committing"),
            Finish::RollBack(value) => (value, false, "rolling back"),
        }
    }
}

/// An open store: hands out its connection, as it is (each statement its own
/// transaction) or inside one transaction, which each engine begins and ends in its own
/// way (SQLite's `BEGIN IMMEDIATE`, the PostgreSQL driver's transaction).
pub(super) trait Engine {
    type Conn<'c>: Sql;

    /// The store as errors name it.
    fn store(&self) -> String;

    /// `work` on the connection outside an explicit transaction: reads, and writes of a
    /// single statement.
    fn with_conn<T>(
        &self,
        work: impl FnOnce(&mut Self::Conn<'_>) -> Result<T, DbError>,
    ) -> Result<T, DbError>;

    /// `work` in one transaction, committed or rolled back as it says; an error rolls it
    /// back too. Errors in beginning or ending it read "`context`: starting" and so on.
    fn write<T>(
        &self,
        context: &str,
        work: impl FnOnce(&mut Self::Conn<'_>) -> Result<Finish<T>, DbError>,
    ) -> Result<T, DbError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_gets_positional_placeholders_and_json_paths_stay() {
        let s = Statement::both("SELECT json_extract(v, '$.id') FROM t WHERE a = $2 AND b = $10");
        assert_eq!(
            s.text(Dialect::Sqlite),
            "SELECT json_extract(v, '$.id') FROM t WHERE a = ?2 AND b = ?10"
        );
        assert_eq!(
            s.text(Dialect::Postgres),
            "SELECT json_extract(v, '$.id') FROM t WHERE a = $2 AND b = $10"
        );
        let e = Statement::each("SELECT instr(x, $1)", "SELECT strpos(x, $1)");
        assert_eq!(e.text(Dialect::Sqlite), "SELECT instr(x, ?1)");
        assert_eq!(e.text(Dialect::Postgres), "SELECT strpos(x, $1)");
    }
}
