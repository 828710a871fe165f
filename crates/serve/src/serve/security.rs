//! What keeps a dashboard on a lab network safe to run: the write token (read from a file
//! or `STACKBENCH_SERVE_TOKEN`, compared in constant time), the check every write passes,
//! and the headers every response carries (a Content-Security-Policy that runs only the
//! server's own scripts, `nosniff`), so nothing from a run file can become script.

use super::error::ApiError;
use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use subtle::ConstantTimeEq;

/// The environment variable the server reads its write token from when no
/// `--write-token-file` is given.
pub const TOKEN_ENV: &str = "STACKBENCH_SERVE_TOKEN";

/// Scripts and everything else only from this server. The page data is inline, but as
/// `application/json`, which a browser never executes, so no `'unsafe-inline'` is needed.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Why a write token could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the write token file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the write token from {from} is empty: give a non-empty token or none (read-only)")]
    Empty { from: String },
    #[error("the write token from {from} is not valid UTF-8 text")]
    NotText { from: String },
}

/// The token a write must present. Only its SHA-256 digest is kept: comparing two digests
/// of equal length in constant time leaks neither the token's bytes nor its length.
#[derive(Clone)]
pub struct WriteToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for WriteToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteToken(<redacted>)")
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl WriteToken {
    /// The token as given; surrounding whitespace (the newline `echo` writes into a token
    /// file) is not part of it.
    pub fn new(token: &str, from: &str) -> Result<Self, TokenError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(TokenError::Empty { from: from.into() });
        }
        Ok(WriteToken {
            digest: sha256(token.as_bytes()),
        })
    }

    /// Reads the token from `path`.
    pub fn from_file(path: &Path) -> Result<Self, TokenError> {
        let bytes = std::fs::read(path).map_err(|source| TokenError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let from = path.display().to_string();
        let text =
            String::from_utf8(bytes).map_err(|_| TokenError::NotText { from: from.clone() })?;
        WriteToken::new(&text, &from)
    }

    /// `--write-token-file` when given, else `$STACKBENCH_SERVE_TOKEN`, else none (the
    /// server is read-only).
    pub fn resolve(file: Option<&Path>) -> Result<Option<Self>, TokenError> {
        if let Some(path) = file {
            return WriteToken::from_file(path).map(Some);
        }
        match std::env::var_os(TOKEN_ENV) {
            None => Ok(None),
            Some(value) => {
                let from = format!("${TOKEN_ENV}");
                let text = value
                    .into_string()
                    .map_err(|_| TokenError::NotText { from: from.clone() })?;
                WriteToken::new(&text, &from).map(Some)
            }
        }
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        sha256(presented.as_bytes()).ct_eq(&self.digest).into()
    }
}

/// The check every write passes before its body is read: 403 on a read-only server, 401
/// without a bearer token or with a wrong one.
pub fn authorize(token: Option<&WriteToken>, headers: &HeaderMap) -> Result<(), ApiError> {
    use axum::http::StatusCode;
    let Some(token) = token else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "this server is read-only: it was started without a write token (--write-token-file or $STACKBENCH_SERVE_TOKEN)",
        ));
    };
    let unauthorized = |reason: &str| Err(ApiError::new(StatusCode::UNAUTHORIZED, reason));
    let Some(value) = headers.get(AUTHORIZATION) else {
        return unauthorized("no write token: send `Authorization: Bearer <token>`");
    };
    let presented = value
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match presented {
        None => unauthorized("the Authorization header is not `Bearer <token>`"),
        Some(presented) if token.matches(presented) => Ok(()),
        Some(_) => unauthorized("wrong write token"),
    }
}

/// Adds the security headers to every response, errors and assets included.
pub async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(
        axum::http::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_itself_only_and_is_never_printed() {
        let token = WriteToken::new("s3cret-token\n", "test").unwrap();
        assert!(token.matches("s3cret-token"));
        assert!(!token.matches("s3cret-tokem"));
        assert!(!token.matches("s3cret-token-longer"));
        assert!(!token.matches(""));
        assert!(!format!("{token:?}").contains("s3cret"));
        assert!(matches!(
            WriteToken::new(" \n", "the file"),
            Err(TokenError::Empty { .. })
        ));
    }

    #[test]
    fn writes_need_a_configured_token_and_the_right_bearer() {
        let token = WriteToken::new("abc", "test").unwrap();
        let mut headers = HeaderMap::new();
        assert_eq!(authorize(None, &headers).unwrap_err().status, 403);
        assert_eq!(authorize(Some(&token), &headers).unwrap_err().status, 401);
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(authorize(Some(&token), &headers).unwrap_err().status, 401);
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abd"));
        assert_eq!(authorize(Some(&token), &headers).unwrap_err().status, 401);
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert!(authorize(Some(&token), &headers).is_ok());
    }
}
