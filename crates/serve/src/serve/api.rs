//! The JSON API (`/api/...`): each endpoint returns the model its page shows (see
//! [`super::models`]); documented, with every parameter and error, in `docs/reference/http-api.md`.

use super::error::{ApiError, blocking};
use super::models;
use super::{Shared, params, upload};
use crate::report::pages::{PageModel, RunsFilter};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/runs", get(runs).post(upload::upload_run))
        .route("/api/runs/{id}", get(run))
        .route("/api/history/{*bench_id}", get(history))
        .route(
            "/api/comparisons",
            get(comparisons).post(upload::upload_comparison),
        )
        .route("/api/comparisons/{id}", get(comparison))
        .route("/api/hardware", get(hardware))
        .route("/api/sweeps", get(sweeps))
}

type ApiResult<T> = Result<Json<T>, ApiError>;

async fn runs(
    State(state): State<Shared>,
    query: Result<Query<RunsFilter>, QueryRejection>,
) -> ApiResult<PageModel> {
    let filter = params::filter_of(query)?;
    let store = state.config.store.clone();
    blocking(move || models::runs_model(&store, filter))
        .await
        .map(Json)
}

async fn run(State(state): State<Shared>, Path(id): Path<String>) -> ApiResult<PageModel> {
    params::check_run_id(&id)?;
    let store = state.config.store.clone();
    blocking(move || models::run_model(&store, &id))
        .await
        .map(Json)
}

async fn history(
    State(state): State<Shared>,
    Path(bench_id): Path<String>,
) -> ApiResult<PageModel> {
    let store = state.config.store.clone();
    blocking(move || models::history_model(&store, &bench_id))
        .await
        .map(Json)
}

async fn comparisons(State(state): State<Shared>) -> ApiResult<PageModel> {
    let store = state.config.store.clone();
    blocking(move || models::comparisons_model(&store))
        .await
        .map(Json)
}

async fn comparison(State(state): State<Shared>, Path(id): Path<String>) -> ApiResult<PageModel> {
    let id = params::comparison_id(&id)?;
    let store = state.config.store.clone();
    blocking(move || models::comparison_model(&store, &id))
        .await
        .map(Json)
}

async fn hardware(State(state): State<Shared>) -> ApiResult<PageModel> {
    let store = state.config.store.clone();
    let prices = state.config.prices.clone();
    blocking(move || models::hardware_model(&store, prices.as_ref()))
        .await
        .map(Json)
}

async fn sweeps(
    State(state): State<Shared>,
    query: Result<Query<models::SweepQuery>, QueryRejection>,
) -> ApiResult<PageModel> {
    let query = params::sweep_query_of(query)?;
    let store = state.config.store.clone();
    let prices = state.config.prices.clone();
    blocking(move || models::sweep_model(&store, prices.as_ref(), &query))
        .await
        .map(Json)
}
