//! A real PostgreSQL server for the store tests. `ci/test.sh` starts one and exports its URL
//! as `STACKBENCH_TEST_POSTGRES_URL`; without it, the first test that asks starts a cluster
//! of its own through `ci/postgres.sh` (once per test binary, stopped when the binary exits).
//! Each test gets its own database (`CREATE DATABASE test_<pid>_<n>_<name>`), so tests run in
//! parallel. Where no server can be had, the PostgreSQL half of a test is skipped with a
//! message, unless `STACKBENCH_REQUIRE_TOOLS=1` (CI), where that is a failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

pub const URL_ENV: &str = "STACKBENCH_TEST_POSTGRES_URL";

/// The server's base URL (its `postgres` database), or why there is none.
fn server() -> &'static Result<String, String> {
    static SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var(URL_ENV)
            && !url.is_empty()
        {
            return Ok(url);
        }
        start_own_cluster()
    })
}

/// Where this binary's own cluster lives, for the exit handler.
static OWN_CLUSTER: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn stop_own_cluster() {
    if let Some(dir) = OWN_CLUSTER.get() {
        let _ = std::process::Command::new(script())
            .arg("stop")
            .arg(dir)
            .output();
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/postgres.sh")
}

fn start_own_cluster() -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("stackbench-pg-{}", std::process::id()));
    let out = std::process::Command::new(script())
        .arg("start")
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run ci/postgres.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ci/postgres.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let _ = OWN_CLUSTER.set(dir);
    // Safety: registering a plain function with no captured state.
    unsafe { libc::atexit(stop_own_cluster) };
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if url.is_empty() {
        return Err("ci/postgres.sh printed no URL".into());
    }
    Ok(url)
}

/// A fresh, empty database on the test server, as a store URL; `None` (after saying why on
/// stderr) where PostgreSQL is unavailable and not required.
pub fn fresh_database(name: &str) -> Option<String> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let base = match server() {
        Ok(url) => url,
        Err(reason) => {
            if std::env::var("STACKBENCH_REQUIRE_TOOLS").as_deref() == Ok("1") {
                panic!("PostgreSQL is required (STACKBENCH_REQUIRE_TOOLS=1): {reason}");
            }
            eprintln!("skipping the PostgreSQL half of {name}: {reason}");
            return None;
        }
    };
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let db = format!("test_{}_{n}_{safe}", std::process::id());
    let mut client = postgres::Client::connect(base, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to the test server {base}: {e}"));
    client
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .unwrap_or_else(|e| panic!("creating database {db}: {e}"));
    Some(with_database(base, &db))
}

/// `base` (…/postgres) with its database replaced by `db`.
fn with_database(base: &str, db: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, format!("?{q}")),
        None => (base, String::new()),
    };
    let cut = head
        .rfind('/')
        .filter(|&i| i > "postgres://".len())
        .unwrap_or(head.len());
    format!("{}/{db}{query}", &head[..cut])
}

/// A client on the store at `url`, for checks the binaries cannot make (partial runs).
pub fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

/// The engines a store test runs on: SQLite always, PostgreSQL where a server can be had.
#[derive(Clone, Debug)]
pub enum Engine {
    /// The results directory's own `stackbench.db`.
    Sqlite,
    /// A fresh database on the test server.
    Postgres(String),
}

impl Engine {
    /// SQLite, then PostgreSQL (a database named after `test`) when available.
    pub fn all(test: &str) -> Vec<Engine> {
        let mut engines = vec![Engine::Sqlite];
        engines.extend(fresh_database(test).map(Engine::Postgres));
        engines
    }

    /// `--store URL` arguments for the binaries (none for the default SQLite store).
    pub fn store_args(&self) -> Vec<String> {
        match self {
            Engine::Sqlite => Vec::new(),
            Engine::Postgres(url) => vec!["--store".into(), url.clone()],
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres(_) => "postgres",
        }
    }

    /// Runs `sql` (one `SELECT COUNT(*)`-like query returning one i64) against the store
    /// of `results`.
    pub fn count(&self, results: &Path, sql: &str) -> i64 {
        match self {
            Engine::Sqlite => rusqlite::Connection::open(results.join("stackbench.db"))
                .unwrap()
                .query_row(sql, [], |r| r.get(0))
                .unwrap(),
            Engine::Postgres(url) => client(url).query_one(sql, &[]).unwrap().get(0),
        }
    }

    /// Runs `sql` statements against the store of `results` (test set-up).
    pub fn execute(&self, results: &Path, sql: &str) {
        match self {
            Engine::Sqlite => rusqlite::Connection::open(results.join("stackbench.db"))
                .unwrap()
                .execute_batch(sql)
                .unwrap(),
            Engine::Postgres(url) => client(url).batch_execute(sql).unwrap(),
        }
    }
}

/// Every stored run has exactly the benchmarks and sample rows it says it has, and no
/// benchmark belongs to a missing run: no partial run.
pub const PARTIAL_RUNS: &str = "SELECT COUNT(*) FROM runs r WHERE r.benchmark_count !=
    (SELECT COUNT(*) FROM benchmarks b JOIN samples s ON s.benchmark_pk = b.pk
     WHERE b.run_pk = r.pk)";
pub const ORPHAN_BENCHMARKS: &str =
    "SELECT COUNT(*) FROM benchmarks WHERE run_pk NOT IN (SELECT pk FROM runs)";

/// The store's fault-injection hook: a run insert pauses this many milliseconds after
/// writing everything and before committing, and says so on stderr.
pub const PAUSE_ENV: &str = "STACKBENCH_DB_TEST_PAUSE_BEFORE_COMMIT_MS";

/// Starts `command` with the pause hook, waits until its run is written but not committed,
/// and kills it with SIGKILL.
pub fn kill_mid_transaction(mut command: std::process::Command) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = command
        .env(PAUSE_ENV, "60000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let paused = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("pausing") && l.contains("before commit"));
    assert!(paused, "the writer never reached its transaction");
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());
}
