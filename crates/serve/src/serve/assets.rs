//! `/assets/...`: the files the pages load (the vendored ECharts with its licence,
//! `stackbench.js`, `stackbench.css`), compiled into the binary by
//! [`crate::report::pages::assets`] (runners are often offline; nothing comes from a CDN),
//! each with its content type and a strong ETag, so a browser revalidates cheaply and
//! never runs a stale script.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

fn etag(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// `GET /assets/{path}`: the file, or 404 naming the path (as text, never echoed as HTML).
pub async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    let Some(asset) = crate::report::pages::assets::asset(&path) else {
        return super::error::ApiError::not_found(format!("no asset `{path}`")).into_response();
    };
    let tag = etag(asset.content.as_bytes());
    // Revalidated on every load (`no-cache`), answered 304 while unchanged: a new binary's
    // scripts are never shadowed by a cached old one.
    let cache = HeaderValue::from_static("public, no-cache");
    let tag_value = HeaderValue::from_str(&tag).unwrap_or(HeaderValue::from_static("\"0\""));
    if headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag))
    {
        return (
            StatusCode::NOT_MODIFIED,
            [(ETAG, tag_value), (CACHE_CONTROL, cache)],
        )
            .into_response();
    }
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
            (ETAG, tag_value),
            (CACHE_CONTROL, cache),
        ],
        asset.content,
    )
        .into_response()
}
