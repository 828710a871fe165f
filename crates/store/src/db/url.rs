//! Where a store lives: `sqlite:PATH` (the embedded default, `<results>/stackbench.db`) or
//! `postgres://user@host/db` (a shared PostgreSQL server). The URL is printed in errors and
//! listings, so its `Display` never shows a password: `postgres://user:***@host/db`.

use crate::server_client::ServerUrl;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A store's location. `Debug` prints the same redacted text as `Display`.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL, as given (with its password, if any).
    Postgres(String),
    /// A results server (`stackbench serve`): `record`, `import` and `store flush` upload
    /// to it (`POST /api/runs`); it is not a database this process opens.
    Server(ServerUrl),
}

#[derive(Debug, thiserror::Error)]
#[error(
    "`{given}` is not a store URL: {reason} (use `sqlite:PATH`, `postgres://user@host[:port]/database` or a results server `http(s)://HOST:PORT`)"
)]
pub struct StoreUrlError {
    /// The text as given, password redacted.
    pub given: String,
    pub reason: String,
}

impl StoreUrl {
    pub fn parse(text: &str) -> Result<StoreUrl, StoreUrlError> {
        let error = |reason: &str| StoreUrlError {
            given: redact(text),
            reason: reason.to_string(),
        };
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("sqlite:") {
            // `sqlite:///abs/path` and `sqlite:relative/path` both name a file.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(error("no database file after `sqlite:`"));
            }
            return Ok(StoreUrl::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, rest)) = text.split_once("://")
            && (scheme == "postgres" || scheme == "postgresql")
        {
            if rest.is_empty() || rest.starts_with('/') && rest.len() == 1 {
                return Err(error("no host or database"));
            }
            return Ok(StoreUrl::Postgres(text.to_string()));
        }
        if ServerUrl::is_server_url(text) {
            return ServerUrl::parse(text)
                .map(StoreUrl::Server)
                .map_err(|e| error(&e.to_string()));
        }
        Err(error("unknown scheme"))
    }

    /// The default store of a results directory: `sqlite:<dir>/stackbench.db`.
    pub fn default_for(dir: &Path) -> StoreUrl {
        StoreUrl::Sqlite(dir.join(super::DB_FILE))
    }

    /// The SQLite file, when this is one.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            StoreUrl::Sqlite(path) => Some(path),
            StoreUrl::Postgres(_) | StoreUrl::Server(_) => None,
        }
    }
}

impl FromStr for StoreUrl {
    type Err = StoreUrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StoreUrl::parse(s)
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            StoreUrl::Postgres(url) => f.write_str(&redact(url)),
            StoreUrl::Server(url) => write!(f, "{url}"),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({self})")
    }
}

/// `url` with the password of its user part and any `password=` parameter replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_by_scheme_and_print_without_passwords() {
        let pg = StoreUrl::parse("postgres://bench:s3cret@db.lab:5433/stackbench").unwrap();
        assert_eq!(
            pg.to_string(),
            "postgres://bench:***@db.lab:5433/stackbench"
        );
        assert!(!format!("{pg:?}").contains("s3cret"));
        let q = StoreUrl::parse("postgresql://u@h/d?sslmode=disable&password=p4ss").unwrap();
        assert_eq!(
            q.to_string(),
            "postgresql://u@h/d?sslmode=disable&password=***"
        );
        assert_eq!(
            StoreUrl::parse("sqlite:results/stackbench.db").unwrap(),
            StoreUrl::Sqlite("results/stackbench.db".into())
        );
        assert_eq!(
            StoreUrl::parse("sqlite:///tmp/x.db").unwrap(),
            StoreUrl::Sqlite("/tmp/x.db".into())
        );
        let err = StoreUrl::parse("mysql://root:hunter2@h/d")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown scheme") && !err.contains("hunter2"),
            "{err}"
        );
        assert!(StoreUrl::parse("sqlite:").is_err());
        let server = StoreUrl::parse("http://bench.lab:8765/").unwrap();
        assert_eq!(server.to_string(), "http://bench.lab:8765");
        assert!(matches!(server, StoreUrl::Server(_)));
        let err = StoreUrl::parse("https://u:pw@bench.lab")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("pw@"), "{err}");
    }
}
