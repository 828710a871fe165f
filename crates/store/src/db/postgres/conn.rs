//! The store's statements on the `postgres` driver, on the client or on a transaction
//! open on it: each statement is prepared once per use of the connection (a run's
//! benchmarks reuse one), values are bound natively and rows decoded in place.

use crate::db::DbError;
use crate::db::sql::{Column, Columns, Dialect, Param, Sql, Statement};
use ::postgres::types::ToSql;
use ::postgres::{GenericClient, Row};
use std::collections::HashMap;

/// What the store needs of a client or a transaction: the driver's `GenericClient` is not
/// object safe, and one connection type has to serve both.
pub(super) trait PgClient {
    fn prepare(&mut self, query: &str) -> Result<::postgres::Statement, ::postgres::Error>;
    fn query(
        &mut self,
        statement: &::postgres::Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, ::postgres::Error>;
    fn execute(
        &mut self,
        statement: &::postgres::Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, ::postgres::Error>;
    fn batch_execute(&mut self, query: &str) -> Result<(), ::postgres::Error>;
}

impl<C: GenericClient> PgClient for C {
    fn prepare(&mut self, query: &str) -> Result<::postgres::Statement, ::postgres::Error> {
        GenericClient::prepare(self, query)
    }

    fn query(
        &mut self,
        statement: &::postgres::Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, ::postgres::Error> {
        GenericClient::query(self, statement, params)
    }

    fn execute(
        &mut self,
        statement: &::postgres::Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, ::postgres::Error> {
        GenericClient::execute(self, statement, params)
    }

    fn batch_execute(&mut self, query: &str) -> Result<(), ::postgres::Error> {
        GenericClient::batch_execute(self, query)
    }
}

pub(in crate::db) struct PgConn<'c> {
    client: &'c mut (dyn PgClient + 'c),
    /// The URL as errors print it (no password).
    store: &'c str,
    /// Keyed by the statement's address: every statement is a `static`.
    prepared: HashMap<*const Statement, ::postgres::Statement>,
}

impl<'c> PgConn<'c> {
    pub(super) fn new(client: &'c mut (dyn PgClient + 'c), store: &'c str) -> PgConn<'c> {
        PgConn {
            client,
            store,
            prepared: HashMap::new(),
        }
    }

    pub(super) fn pg(&self, context: &str, source: ::postgres::Error) -> DbError {
        DbError::Postgres {
            store: self.store.to_string(),
            context: context.to_string(),
            source,
        }
    }

    fn prepared(
        &mut self,
        context: &str,
        statement: &'static Statement,
    ) -> Result<::postgres::Statement, DbError> {
        let key = std::ptr::from_ref(statement);
        if let Some(prepared) = self.prepared.get(&key) {
            return Ok(prepared.clone());
        }
        let prepared = self
            .client
            .prepare(statement.text(Dialect::Postgres))
            .map_err(|e| self.pg(context, e))?;
        self.prepared.insert(key, prepared.clone());
        Ok(prepared)
    }
}

impl Param<'_> {
    fn as_pg(&self) -> &(dyn ToSql + Sync) {
        match self {
            Param::Text(v) => v,
            Param::OptText(v) => v,
            Param::Int(v) => v,
            Param::OptInt(v) => v,
            Param::Real(v) => v,
            Param::OptReal(v) => v,
            Param::OptBool(v) => v,
            Param::Bytes(v) => v,
        }
    }
}

impl Columns for Row {
    type Error = ::postgres::Error;

    fn get<T: Column>(&self, index: usize) -> Result<T, ::postgres::Error> {
        self.try_get(index)
    }

    fn str(&self, index: usize) -> Result<&str, ::postgres::Error> {
        self.try_get(index)
    }

    fn bytes(&self, index: usize) -> Result<Option<&[u8]>, ::postgres::Error> {
        self.try_get(index)
    }
}

impl Sql for PgConn<'_> {
    const DIALECT: Dialect = Dialect::Postgres;
    type Error = ::postgres::Error;
    type Row<'r> = Row;

    fn store(&self) -> String {
        self.store.to_string()
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
        let prepared = self.prepared(context, statement)?;
        let values: Vec<_> = params.iter().map(Param::as_pg).collect();
        let rows = self
            .client
            .query(&prepared, &values)
            .map_err(|e| self.pg(context, e))?;
        rows.iter()
            .try_for_each(&mut each)
            .map_err(|e| self.pg(context, e))
    }

    fn execute(
        &mut self,
        context: &str,
        statement: &'static Statement,
        params: &[Param<'_>],
    ) -> Result<u64, DbError> {
        let prepared = self.prepared(context, statement)?;
        let values: Vec<_> = params.iter().map(Param::as_pg).collect();
        self.client
            .execute(&prepared, &values)
            .map_err(|e| self.pg(context, e))
    }

    fn batch(&mut self, context: &str, sql: &str) -> Result<(), DbError> {
        self.client
            .batch_execute(sql)
            .map_err(|e| self.pg(context, e))
    }
}
