//! A request's parameters, checked before anything reads the store: run ids, comparison ids
//! and the query strings of the run and sweep lists. The pages, the JSON API and the upload
//! handlers all take them from here, below all three, so none of them imports another for
//! a helper.

use super::error::ApiError;
use super::models;
use crate::report::pages::RunsFilter;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;

/// The query of `/api/sweeps` and `/sweeps`; an unknown parameter is a 400 naming it.
pub fn sweep_query_of(
    query: Result<Query<models::SweepQuery>, QueryRejection>,
) -> Result<models::SweepQuery, ApiError> {
    query
        .map(|Query(q)| q)
        .map_err(|e| ApiError::bad_request(format!("bad query: {}", e.body_text())))
}

/// The filter of `/api/runs` and `/`; an unknown parameter is a 400 naming it, so a typo
/// (`?lable=`) is not silently "every run".
pub fn filter_of(query: Result<Query<RunsFilter>, QueryRejection>) -> Result<RunsFilter, ApiError> {
    query
        .map(|Query(f)| f)
        .map_err(|e| ApiError::bad_request(format!("bad query: {}", e.body_text())))
}

/// Run ids are what `record` makes (`20261125T101500123Z-p42-1a2b`) or what a user named a
/// file: letters, digits, `.`, `_`, `-`, starting with a letter or digit. Anything else is
/// refused before it reaches the store, a file name or a page.
pub fn check_run_id(id: &str) -> Result<(), ApiError> {
    match run_id_problem(id) {
        None => Ok(()),
        Some(problem) => Err(ApiError::not_found(format!("no run `{id}`: {problem}"))),
    }
}

/// Why `id` cannot be a run id, if it cannot.
pub fn run_id_problem(id: &str) -> Option<String> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    (!ok).then(|| {
        "a run id holds only letters, digits, `.`, `_` and `-`, and starts with a letter or digit"
            .to_string()
    })
}

/// A comparison from a path segment: a positive id, or `sha256-` and 64 hex digits.
pub fn comparison_id(segment: &str) -> Result<models::ComparisonRef, ApiError> {
    use crate::report::comparison::link::CHECKSUM_PREFIX;
    if let Some(hex) = segment.strip_prefix(CHECKSUM_PREFIX)
        && hex.len() == 64
        && hex
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return Ok(models::ComparisonRef::Checksum(segment.to_string()));
    }
    segment
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .map(models::ComparisonRef::Id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no comparison `{segment}`: a comparison is a positive id or sha256-<64 hex digits>"
            ))
        })
}
