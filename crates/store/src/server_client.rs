//! The client side of a results server (`stackbench serve`): `record` and `import` with
//! `--store http(s)://host:port` upload each run file through `POST /api/runs`, the same
//! bytes `record` writes into `runs/`. A runner on a lab network loses its connection or
//! meets a restarting server more often than it meets a bad request, so connection errors
//! and 5xx answers are retried with a doubling backoff (bounded: by default 5 tries over
//! about 8 s), while a 4xx is the server's considered answer and is never retried. The
//! server's run identity is idempotent, so a retry of an upload whose answer was lost
//! stores one run ("already present" counts as delivered).
//!
//! The token comes from `STACKBENCH_STORE_TOKEN`, never from the URL: a URL ends up in logs
//! and error messages, and one with credentials in it is refused.

use std::fmt;
use std::time::Duration;

/// The environment variable holding the bearer token for uploads.
pub const TOKEN_ENV: &str = "STACKBENCH_STORE_TOKEN";
/// Tries per upload (at least 1); for fleets that want to wait longer, or tests that want
/// to wait less.
pub const TRIES_ENV: &str = "STACKBENCH_UPLOAD_TRIES";
/// The first backoff in milliseconds; each later one doubles.
pub const BACKOFF_ENV: &str = "STACKBENCH_UPLOAD_BACKOFF_MS";

const DEFAULT_TRIES: u32 = 5;
const DEFAULT_FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// An upstream proxy or a server under load may take a while to accept; a node that cannot
/// connect in this time is as good as unreachable for this try.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One whole request: a run holding every sample of a full suite is tens of MB at most.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The server's answers are small JSON objects; anything longer is not one of them.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ServerUrlError {
    #[error("`{0}` is not a results server URL (expected http://HOST[:PORT] or https://…)")]
    NotHttp(String),
    #[error(
        "results server URL `{0}` carries credentials: give the token in {TOKEN_ENV} instead, so it never reaches a log"
    )]
    Credentials(String),
    #[error("results server URL `{url}` has {what}")]
    Malformed { url: String, what: &'static str },
}

/// `http://host:port` (or `https://…`, optionally with a path prefix), without a trailing
/// slash; the API lives under `<url>/api/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerUrl {
    base: String,
}

impl ServerUrl {
    /// Whether `text` names a server at all (as opposed to a database URL or a path).
    pub fn is_server_url(text: &str) -> bool {
        let lower = text.trim().to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://")
    }

    pub fn parse(text: &str) -> Result<ServerUrl, ServerUrlError> {
        let text = text.trim();
        if !Self::is_server_url(text) {
            return Err(ServerUrlError::NotHttp(text.to_string()));
        }
        let (scheme, rest) = text.split_once("://").unwrap_or(("http", text));
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let malformed = |what| ServerUrlError::Malformed {
            url: text.to_string(),
            what,
        };
        if authority.contains('@') {
            // Not echoed: the part before `@` is the secret.
            let redacted = format!(
                "{scheme}://***@{}",
                authority.rsplit('@').next().unwrap_or("")
            );
            return Err(ServerUrlError::Credentials(redacted));
        }
        if authority.is_empty() || authority.starts_with(':') {
            return Err(malformed("no host"));
        }
        if rest.contains(['?', '#']) {
            return Err(malformed(
                "a query or fragment (give the server's base URL)",
            ));
        }
        let base = format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            rest.trim_end_matches('/')
        );
        Ok(ServerUrl { base })
    }

    /// `POST` here uploads one run file.
    pub fn runs_endpoint(&self) -> String {
        format!("{}/api/runs", self.base)
    }

    /// A path the server answered (`/runs/<id>`) as a full URL to print.
    pub fn page(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }
}

impl fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.base)
    }
}

/// How often and how patiently an upload is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub tries: u32,
    pub first_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            tries: DEFAULT_TRIES,
            first_backoff: DEFAULT_FIRST_BACKOFF,
        }
    }
}

impl RetryPolicy {
    /// The default, with `STACKBENCH_UPLOAD_TRIES` / `STACKBENCH_UPLOAD_BACKOFF_MS` where set.
    pub fn from_env() -> Result<RetryPolicy, UploadError> {
        let mut policy = RetryPolicy::default();
        let read = |name: &'static str| -> Result<Option<u64>, UploadError> {
            match std::env::var(name) {
                Ok(v) if !v.trim().is_empty() => {
                    v.trim()
                        .parse()
                        .map(Some)
                        .map_err(|_| UploadError::Setting {
                            name,
                            value: v.clone(),
                        })
                }
                _ => Ok(None),
            }
        };
        if let Some(tries) = read(TRIES_ENV)? {
            policy.tries = u32::try_from(tries).unwrap_or(u32::MAX).max(1);
        }
        if let Some(ms) = read(BACKOFF_ENV)? {
            policy.first_backoff = Duration::from_millis(ms);
        }
        Ok(policy)
    }

    /// The wait before try `next` (2, 3, …): the first backoff, doubled each time, capped so
    /// a large try count cannot make a node wait for hours between two tries.
    fn backoff_before(&self, next: u32) -> Duration {
        let doublings = next.saturating_sub(2).min(6);
        self.first_backoff.saturating_mul(1 << doublings)
    }
}

/// How the server stored an uploaded run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    New,
    AlreadyPresent,
}

/// The server's answer to a successful upload.
#[derive(Clone, Debug)]
pub struct Uploaded {
    pub run_id: String,
    pub stored: Stored,
    /// The run's page, as a full URL, when the server named one.
    pub page: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("results server {url} is unreachable ({tries} tries): {last}")]
    Unreachable {
        url: ServerUrl,
        tries: u32,
        last: String,
    },
    #[error("results server {url} refused run {run_id} (HTTP {status}): {reason}")]
    Refused {
        url: ServerUrl,
        run_id: String,
        status: u16,
        reason: String,
    },
    #[error("results server {url}: {reason}")]
    Failed { url: ServerUrl, reason: String },
    #[error("{name}=`{value}` is not a whole number")]
    Setting { name: &'static str, value: String },
}

impl UploadError {
    /// The server could not be reached or kept failing (connection errors, 5xx): the run
    /// belongs in the spool, to be delivered later.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, UploadError::Unreachable { .. })
    }

    /// The server looked at this run and will never take it (malformed, too large, the
    /// same id with a different fingerprint): a spooled copy of it goes to `rejected/`.
    /// 401 and 403 are not about the run (wrong token, read-only server): not this.
    pub fn rejects_the_run(&self) -> bool {
        matches!(self, UploadError::Refused { status, .. } if matches!(status, 400 | 409 | 413 | 415 | 422))
    }
}

/// One server, its token and its retry policy.
pub struct ServerClient {
    url: ServerUrl,
    token: Option<String>,
    retry: RetryPolicy,
    agent: ureq::Agent,
}

impl fmt::Debug for ServerClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the token.
        f.debug_struct("ServerClient")
            .field("url", &self.url)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("retry", &self.retry)
            .finish()
    }
}

impl ServerClient {
    /// A client with the token from `STACKBENCH_STORE_TOKEN` and the retry policy from the
    /// environment.
    pub fn from_env(url: ServerUrl) -> Result<ServerClient, UploadError> {
        let token = std::env::var(TOKEN_ENV)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        Ok(ServerClient::new(url, token, RetryPolicy::from_env()?))
    }

    pub fn new(url: ServerUrl, token: Option<String>, retry: RetryPolicy) -> ServerClient {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            // Statuses are answers to read (4xx reason, 5xx retry), not transport errors.
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(REQUEST_TIMEOUT))
            // A POST is never redirected (ureq refuses to resend the body): say so.
            .max_redirects(0)
            .build()
            .into();
        ServerClient {
            url,
            token,
            retry,
            agent,
        }
    }

    pub fn url(&self) -> &ServerUrl {
        &self.url
    }

    /// Uploads one run file (`body`, as `record` writes it) for run `run_id`, retrying
    /// connection errors and 5xx answers per the retry policy.
    pub fn upload_run(&self, run_id: &str, body: &[u8]) -> Result<Uploaded, UploadError> {
        let mut last = String::new();
        for attempt in 1..=self.retry.tries {
            if attempt > 1 {
                let wait = self.retry.backoff_before(attempt);
                eprintln!(
                    "note: upload of run {run_id} to {}: {last}; try {attempt} of {} in {:.1} s",
                    self.url,
                    self.retry.tries,
                    wait.as_secs_f64()
                );
                std::thread::sleep(wait);
            }
            match self.post_once(run_id, body) {
                Ok(uploaded) => return Ok(uploaded),
                Err(Attempt::Transient(reason)) => last = reason,
                Err(Attempt::Final(error)) => return Err(error),
            }
        }
        Err(UploadError::Unreachable {
            url: self.url.clone(),
            tries: self.retry.tries,
            last,
        })
    }

    fn post_once(&self, run_id: &str, body: &[u8]) -> Result<Uploaded, Attempt> {
        let mut request = self
            .agent
            .post(self.url.runs_endpoint())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.send(body).map_err(|e| self.transport(e))?;
        let status = response.status().as_u16();
        // An answer cut short is as good as no answer for a 5xx; for a 2xx the status
        // already says the run is stored.
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .unwrap_or_default();
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let field = |name: &str| {
            answer
                .get(name)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        match status {
            200 | 201 => Ok(Uploaded {
                run_id: field("run_id").unwrap_or_else(|| run_id.to_string()),
                stored: if status == 201 {
                    Stored::New
                } else {
                    Stored::AlreadyPresent
                },
                page: field("url").map(|path| self.url.page(&path)),
            }),
            500..=599 => Err(Attempt::Transient(format!(
                "HTTP {status}: {}",
                field("error").unwrap_or_else(|| summarize(&text))
            ))),
            400..=499 => Err(Attempt::Final(UploadError::Refused {
                url: self.url.clone(),
                run_id: run_id.to_string(),
                status,
                reason: field("error").unwrap_or_else(|| summarize(&text)),
            })),
            _ => Err(Attempt::Final(self.failed(format!(
                "unexpected HTTP {status} to POST /api/runs (is this a stackbench server?): {}",
                summarize(&text)
            )))),
        }
    }

    /// Connection-level trouble is worth another try; a bad URL or a TLS failure (wrong
    /// certificate) is not: it will fail the same way every time.
    fn transport(&self, error: ureq::Error) -> Attempt {
        match error {
            ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_) => Attempt::Transient(error.to_string()),
            other => Attempt::Final(self.failed(other.to_string())),
        }
    }

    fn failed(&self, reason: String) -> UploadError {
        UploadError::Failed {
            url: self.url.clone(),
            reason,
        }
    }
}

enum Attempt {
    Transient(String),
    Final(UploadError),
}

/// The start of a body that is not the JSON the API promises (a proxy's HTML page).
fn summarize(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "no reason given".into();
    }
    let short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls_are_normalised_and_credentials_refused() {
        let url = ServerUrl::parse("HTTP://127.0.0.1:8765/").unwrap();
        assert_eq!(url.to_string(), "http://127.0.0.1:8765");
        assert_eq!(url.runs_endpoint(), "http://127.0.0.1:8765/api/runs");
        assert_eq!(url.page("/runs/x"), "http://127.0.0.1:8765/runs/x");
        let prefixed = ServerUrl::parse("https://bench.lab/stackbench/").unwrap();
        assert_eq!(
            prefixed.runs_endpoint(),
            "https://bench.lab/stackbench/api/runs"
        );
        let err = ServerUrl::parse("http://user:hunter2@host:1").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains(TOKEN_ENV), "{err}");
        assert!(ServerUrl::parse("postgres://u@h/db").is_err());
        assert!(ServerUrl::parse("http://").is_err());
        assert!(ServerUrl::parse("http://h:1/?x=1").is_err());
    }

    #[test]
    fn backoff_doubles_from_the_first_wait_and_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff_before(2), Duration::from_millis(500));
        assert_eq!(policy.backoff_before(3), Duration::from_millis(1000));
        assert_eq!(policy.backoff_before(5), Duration::from_millis(4000));
        let total: Duration = (2..=policy.tries).map(|n| policy.backoff_before(n)).sum();
        assert_eq!(total, Duration::from_millis(7500));
        assert_eq!(policy.backoff_before(100), Duration::from_millis(32_000));
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let url = ServerUrl::parse("http://127.0.0.1:1").unwrap();
        let client = ServerClient::new(url, Some("s3cret".into()), RetryPolicy::default());
        assert!(!format!("{client:?}").contains("s3cret"));
    }
}
