//! `stackbench serve`: the web dashboard and upload API over one store. Pages and JSON
//! endpoints read the store through [`RunStore`] only (never its tables), so the server
//! shows what every other command shows; runners upload run files and comparisons with a
//! write token.
//!
//! Why this shape: store calls are blocking (SQLite, the PostgreSQL sync client), so every
//! handler hands its store work to tokio's blocking pool and each call opens its own
//! connection: a slow history query never holds up another reader, and a write is one
//! transaction of its own. The runtime is built here (two workers), not by a macro, so the
//! library stays free of a global runtime and the binary stays synchronous elsewhere.

mod api;
mod assets;
mod error;
mod models;
mod pages;
mod params;
mod security;
mod upload;

pub use error::ApiError;
pub use security::{TokenError, WriteToken};

use crate::results::RunStore;
use axum::Router;
use axum::routing::get;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

/// The body limit when `--max-upload-bytes` is not given: a run file holds every sample of
/// every benchmark, and the largest real ones (1,000 benchmarks × 100 samples) are a few
/// MiB; 32 MiB leaves room without letting one request exhaust memory.
pub const DEFAULT_MAX_UPLOAD_BYTES: usize = 32 * 1024 * 1024;

/// What the server needs: the store, how it is named in messages, and the write settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub store: RunStore,
    /// The store as messages name it (a URL without its password).
    pub store_label: String,
    /// None: the server is read-only and every write answers 403.
    pub write_token: Option<WriteToken>,
    pub max_upload_bytes: usize,
    /// The `[prices]` of the config, for the hardware page's perf/$ (n/a without).
    pub prices: Option<crate::config::Prices>,
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot start the server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// State shared by every handler.
pub(crate) struct AppState {
    pub(crate) config: ServeConfig,
}

pub(crate) type Shared = Arc<AppState>;

/// Every route: pages, the JSON API, uploads and assets; anything else is a 404 naming the
/// path (JSON under `/api/`, HTML elsewhere).
pub fn router(config: ServeConfig) -> Router {
    let max_upload_bytes = config.max_upload_bytes;
    let state: Shared = Arc::new(AppState { config });
    Router::new()
        .merge(pages::routes())
        .merge(api::routes())
        .route("/assets/{*path}", get(assets::asset))
        // Browsers ask for it on every page: "no icon", not a 404 in every console.
        .route(
            "/favicon.ico",
            get(|| async { axum::http::StatusCode::NO_CONTENT }),
        )
        .fallback(error::not_found)
        // The Bytes extractor of the upload routes reads this; nothing else takes a body.
        .layer(axum::extract::DefaultBodyLimit::max(max_upload_bytes))
        .layer(axum::middleware::from_fn(security::headers))
        .with_state(state)
}

/// Serves `config` on `listener` until the process ends. A listener bound by the caller
/// (rather than an address) lets the command print the real port of `--bind host:0`
/// before anything is served.
pub fn run(config: ServeConfig, listener: TcpListener) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(ServeError::Runtime)?;
    let app = router(config);
    runtime.block_on(async move {
        listener.set_nonblocking(true).map_err(ServeError::Serve)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Serve)?;
        axum::serve(listener, app).await.map_err(ServeError::Serve)
    })
}

/// Binds `addr` (a listener the caller can ask for its port before serving).
pub fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr).map_err(|source| ServeError::Listen {
        addr: addr.to_string(),
        source,
    })
}
