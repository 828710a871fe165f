//! The HTML pages: each one is [`render_page`] of its JSON endpoint's model, with the
//! scripts linked under `/assets/` (so the Content-Security-Policy can allow only
//! `script-src 'self'`): the model goes into `<script type="application/json"
//! id="page-data">`, which a browser never executes, and `stackbench.js` builds the page
//! from it with `textContent` only. Error pages are plain HTML with the reason escaped.
//!
//! Path segments (run ids, benchmark ids) are checked or escaped before they reach a page
//! or a message: a hostile id can only ever be text.

use super::error::{ApiError, PageError, blocking};
use super::models;
use super::{Shared, api};
use crate::report::format::escape_html;
use crate::report::pages::{PageContext, PageModel, RunsFilter, json_for_script, render_page};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use axum::routing::get;
use std::fmt::Write;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(runs_page))
        .route("/runs/{id}", get(run_page))
        .route("/history/{*bench_id}", get(history_page))
        .route("/comparisons", get(comparisons_page))
        .route("/comparisons/{id}", get(comparison_page))
        .route("/hardware", get(hardware_page))
        .route("/sweeps", get(sweeps_page))
}

type PageResult = Result<Html<String>, PageError>;

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

/// Percent-encodes one path segment (everything but RFC 3986's unreserved characters).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// A page of `model` as the server serves it.
fn served(model: &PageModel) -> Html<String> {
    Html(render_page(model, &PageContext::served()))
}

/// The page an error answers with: no script, the reason as escaped text, the same
/// `{"error": ...}` as the JSON endpoints in the page data.
pub fn error_page(status: u16, title: &str, reason: &str) -> String {
    let model = serde_json::json!({"page": "error", "status": status, "error": reason});
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title} · stackbench</title><link rel=\"stylesheet\" href=\"/assets/{css}\">\
         </head><body><main><h1>{title}</h1><p class=\"error\">{reason}</p>\
         <p><a href=\"/\">Runs</a> · <a href=\"/comparisons\">Comparisons</a> · \
         <a href=\"/hardware\">Hardware</a> · <a href=\"/sweeps\">Sweeps</a></p></main>\
         <script type=\"application/json\" id=\"page-data\">{data}</script></body></html>\n",
        title = escape_html(&format!("{status} {title}")),
        css = crate::report::pages::assets::CSS_PATH,
        reason = escape_html(reason),
        data = json_for_script(&model),
    )
}

async fn runs_page(
    State(state): State<Shared>,
    query: Result<Query<RunsFilter>, QueryRejection>,
) -> PageResult {
    let filter = api::filter_of(query)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::runs_model(&store, filter)).await?;
    Ok(served(&model))
}

async fn run_page(State(state): State<Shared>, Path(id): Path<String>) -> PageResult {
    check_run_id(&id)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::run_model(&store, &id)).await?;
    Ok(served(&model))
}

async fn history_page(State(state): State<Shared>, Path(bench_id): Path<String>) -> PageResult {
    let store = state.config.store.clone();
    let model = blocking(move || models::history_model(&store, &bench_id)).await?;
    Ok(served(&model))
}

async fn comparisons_page(State(state): State<Shared>) -> PageResult {
    let store = state.config.store.clone();
    let model = blocking(move || models::comparisons_model(&store)).await?;
    Ok(served(&model))
}

async fn comparison_page(State(state): State<Shared>, Path(id): Path<String>) -> PageResult {
    let id = comparison_id(&id)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::comparison_model(&store, &id)).await?;
    Ok(served(&model))
}

async fn hardware_page(State(state): State<Shared>) -> PageResult {
    let store = state.config.store.clone();
    let prices = state.config.prices.clone();
    let model = blocking(move || models::hardware_model(&store, prices.as_ref())).await?;
    Ok(served(&model))
}

async fn sweeps_page(
    State(state): State<Shared>,
    query: Result<Query<models::SweepQuery>, QueryRejection>,
) -> PageResult {
    let query = api::sweep_query_of(query)?;
    let store = state.config.store.clone();
    let prices = state.config.prices.clone();
    let model = blocking(move || models::sweep_model(&store, prices.as_ref(), &query)).await?;
    Ok(served(&model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_page_shows_a_hostile_reason_as_text_only() {
        let html = error_page(404, "Not Found", "no run `\"><img src=x onerror=alert(1)>`");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        let data = html.split("id=\"page-data\">").nth(1).unwrap();
        assert!(
            data.starts_with("{") && data.contains("\\u003cimg"),
            "{data}"
        );
    }

    #[test]
    fn run_ids_are_checked_and_segments_encoded() {
        assert!(check_run_id("20261125T101500123Z-p42-1a2b").is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b", "<script>"] {
            assert_eq!(check_run_id(bad).unwrap_err().status, 404, "{bad}");
        }
        assert_eq!(encode_segment("a b/<c>"), "a%20b%2F%3Cc%3E");
        assert_eq!(comparison_id("7").unwrap(), models::ComparisonRef::Id(7));
        let sum = format!("sha256-{}", "ab".repeat(32));
        assert_eq!(
            comparison_id(&sum).unwrap(),
            models::ComparisonRef::Checksum(sum.clone())
        );
        assert!(comparison_id("sha256-../x").is_err());
        assert!(comparison_id("0").is_err() && comparison_id("x").is_err());
    }
}
