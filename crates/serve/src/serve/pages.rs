//! The HTML pages: each one is [`render_page`] of its JSON endpoint's model, with the
//! scripts linked under `/assets/` (so the Content-Security-Policy can allow only
//! `script-src 'self'`): the model goes into `<script type="application/json"
//! id="page-data">`, which a browser never executes, and `stackbench.js` builds the page
//! from it with `textContent` only. Error pages are plain HTML with the reason escaped.
//!
//! Path segments (run ids, benchmark ids) are checked or escaped before they reach a page
//! or a message: a hostile id can only ever be text.

use super::error::{PageError, blocking};
use super::models;
use super::{Shared, params};
use crate::report::pages::{PageContext, PageModel, RunsFilter, render_page};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use axum::routing::get;

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

/// A page of `model` as the server serves it.
fn served(model: &PageModel) -> Html<String> {
    Html(render_page(model, &PageContext::served()))
}

async fn runs_page(
    State(state): State<Shared>,
    query: Result<Query<RunsFilter>, QueryRejection>,
) -> PageResult {
    let filter = params::filter_of(query)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::runs_model(&store, filter)).await?;
    Ok(served(&model))
}

async fn run_page(State(state): State<Shared>, Path(id): Path<String>) -> PageResult {
    params::check_run_id(&id)?;
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
    let id = params::comparison_id(&id)?;
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
    let query = params::sweep_query_of(query)?;
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
        let html = crate::serve::error::error_page(
            404,
            "Not Found",
            "no run `\"><img src=x onerror=alert(1)>`",
        );
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
        assert!(params::check_run_id("20261125T101500123Z-p42-1a2b").is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b", "<script>"] {
            assert_eq!(params::check_run_id(bad).unwrap_err().status, 404, "{bad}");
        }
        assert_eq!(models::encode_segment("a b/<c>"), "a%20b%2F%3Cc%3E");
        assert_eq!(
            params::comparison_id("7").unwrap(),
            models::ComparisonRef::Id(7)
        );
        let sum = format!("sha256-{}", "ab".repeat(32));
        assert_eq!(
            params::comparison_id(&sum).unwrap(),
            models::ComparisonRef::Checksum(sum.clone())
        );
        assert!(params::comparison_id("sha256-../x").is_err());
        assert!(params::comparison_id("0").is_err() && params::comparison_id("x").is_err());
    }
}
