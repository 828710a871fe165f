//! Errors as HTTP answers: the JSON API answers `{"error": "<reason>"}` with the status the
//! upload contract names; pages answer the same reason as an HTML page. Every reason names
//! what it concerns (the run id, the benchmark, the path), escaped where it becomes HTML.

use crate::report::format::escape_html;
use crate::report::pages::json_for_script;
use crate::results::ResultsError;
use axum::Json;
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};

/// One failed request: its status and the reason a client is told.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub reason: String,
}

impl ApiError {
    pub fn new(status: StatusCode, reason: impl Into<String>) -> Self {
        ApiError {
            status,
            reason: reason.into(),
        }
    }

    pub fn bad_request(reason: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, reason)
    }

    pub fn not_found(reason: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, reason)
    }

    pub fn internal(reason: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, reason)
    }

    /// The same error rendered as a page instead of JSON.
    pub fn page(self) -> PageError {
        PageError(self)
    }
}

impl From<ResultsError> for ApiError {
    /// A store failure is the server's problem, not the request's: 500 with the store's
    /// own message (it names the store and the run), or 503 when the store cannot be
    /// reached at all, so a client knows a retry may succeed.
    fn from(error: ResultsError) -> Self {
        let status = match &error {
            ResultsError::UnknownRun { .. } => StatusCode::NOT_FOUND,
            ResultsError::Db(e) if e.is_unreachable() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, format!("store error: {error}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.reason });
        (self.status, Json(body)).into_response()
    }
}

/// An [`ApiError`] answered as HTML, for the pages.
#[derive(Debug)]
pub struct PageError(pub ApiError);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError(e)
    }
}

impl From<ResultsError> for PageError {
    fn from(e: ResultsError) -> Self {
        PageError(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let ApiError { status, reason } = self.0;
        let title = status.canonical_reason().unwrap_or("error");
        let body = error_page(status.as_u16(), title, &reason);
        (status, Html(body)).into_response()
    }
}

/// Anything no route matches: 404 naming the path, as JSON under `/api/` and as a page
/// elsewhere (the path is escaped like any other text on a page).
pub async fn not_found(uri: Uri) -> Response {
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        ApiError::not_found(format!("no endpoint {path}")).into_response()
    } else {
        ApiError::not_found(format!("no page {path}"))
            .page()
            .into_response()
    }
}

/// Runs blocking store work on tokio's blocking pool, so a slow query holds up no other
/// request; a task that panicked is a 500, never a dropped connection.
pub async fn blocking<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> Result<T, E>
where
    T: Send + 'static,
    E: From<ApiError> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => Err(ApiError::internal(format!("the request's store work failed: {e}")).into()),
    }
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
