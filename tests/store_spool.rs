//! `record`, `import` and `analyze-trends store flush` with a results server as the store,
//! through the real binary: a run recorded while the server is down is kept in
//! `<results>/spool/` (exit 1, a message naming the spool) and the next command delivers it
//! exactly once, oldest first; a retried upload is one run; 5xx is retried and 4xx is not;
//! a malformed spooled file is quarantined with its reason, never deleted.

#[path = "cli_support/mod.rs"]
mod cli_support;
mod pg_support;
#[path = "schema_support/mod.rs"]
mod schema_support;
mod serve_support;
mod upload_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use upload_support::{Faults, Stub, closed_port_url};

const ANALYZE_TRENDS: &str = env!("CARGO_BIN_EXE_analyze-trends");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion-0.8");

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// analyze-trends with fast retries (the backoff is not what these tests are about) and no
/// store or token from the caller's environment.
fn analyze(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut command = Command::new(ANALYZE_TRENDS);
    command
        .args(args)
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_STORE_TOKEN")
        .env("STACKBENCH_UPLOAD_TRIES", "3")
        .env("STACKBENCH_UPLOAD_BACKOFF_MS", "20");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("start analyze-trends");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `record` of the fixture into `results`, with `extra` arguments.
fn record_with(results: &Path, extra: &[&str]) -> Ran {
    analyze(
        &cli_support::record_args(Path::new(FIXTURE), results, extra),
        &[],
    )
}

fn record(results: &Path, store: &str) -> Ran {
    record_with(results, &["--store", store])
}

/// Records the fixture into `results` while the server is down (spooled); the run's id.
fn spool_one(results: &Path) -> String {
    assert_eq!(record(results, &closed_port_url()).code, Some(1));
    run_id_of(&json_files(&results.join("spool"))[0])
}

fn flush(results: &Path, store: &str) -> Ran {
    analyze(
        &[
            "store",
            "flush",
            "--results",
            results.to_str().unwrap(),
            "--store",
            store,
        ],
        &[],
    )
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn run_id_of(file: &Path) -> String {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    doc["run_id"].as_str().unwrap().to_string()
}

#[test]
fn a_run_recorded_while_the_server_is_down_is_spooled_and_one_flush_delivers_it_once() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let down = closed_port_url();
    let out = record(&results, &down);
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert!(out.stderr.contains("SPOOLED"), "{}", out.text());
    assert!(out.stderr.contains("unreachable"), "{}", out.text());
    let spooled = json_files(&results.join("spool"));
    assert_eq!(spooled.len(), 1, "{}", out.text());
    assert!(out.stderr.contains(&spooled[0].display().to_string()));
    // The local copy in runs/ is the same file, byte for byte.
    let local = json_files(&results.join("runs"));
    assert_eq!(local.len(), 1);
    assert_eq!(
        std::fs::read(&local[0]).unwrap(),
        std::fs::read(&spooled[0]).unwrap()
    );
    let run_id = run_id_of(&spooled[0]);

    let server = Stub::start(Faults::default());
    let out = flush(&results, &server.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(
        out.stdout.contains("delivered 1 spooled runs"),
        "{}",
        out.text()
    );
    assert_eq!(server.stored(), vec![run_id.clone()]);
    assert!(json_files(&results.join("spool")).is_empty());

    // Nothing left to deliver: a second flush sends nothing.
    let out = flush(&results, &server.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(out.stdout.contains("nothing to deliver"), "{}", out.text());
    assert_eq!(server.requests(), 1);
}

#[test]
fn the_next_record_delivers_the_spool_first_oldest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let down = closed_port_url();
    assert_eq!(record(&results, &down).code, Some(1));
    let first = run_id_of(&json_files(&results.join("spool"))[0]);
    // The second record finds the server still down: both runs wait.
    let out = record(&results, &down);
    assert_eq!(out.code, Some(1), "{}", out.text());
    let spooled: Vec<String> = json_files(&results.join("spool"))
        .iter()
        .map(|f| run_id_of(f))
        .collect();
    assert_eq!(spooled.len(), 2, "{spooled:?}");
    let second = spooled.into_iter().find(|id| *id != first).unwrap();

    let server = Stub::start(Faults::default());
    let out = record(&results, &server.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(
        out.stdout.contains("delivered 2 spooled runs"),
        "{}",
        out.text()
    );
    let stored = server.stored();
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert_eq!(
        stored[..2],
        [first, second],
        "spooled runs go first, oldest first"
    );
    assert!(
        out.stdout.contains(&format!("/runs/{}", stored[2])),
        "{}",
        out.text()
    );
    assert!(json_files(&results.join("spool")).is_empty());
}

#[test]
fn an_upload_whose_answer_was_lost_is_retried_and_stays_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let server = Stub::start(Faults {
        drop_answer_first: 1,
        ..Faults::default()
    });
    let out = record(&results, &server.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(server.requests(), 2, "one lost answer, one retry");
    assert_eq!(server.stored().len(), 1);
    assert!(out.stdout.contains("already present"), "{}", out.text());
    assert!(json_files(&results.join("spool")).is_empty());
}

#[test]
fn a_5xx_is_retried_and_a_4xx_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let busy = Stub::start(Faults {
        unavailable_first: 2,
        ..Faults::default()
    });
    let out = record(&results, &busy.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(busy.requests(), 3);
    assert_eq!(busy.stored().len(), 1);
    assert!(out.stderr.contains("HTTP 503"), "{}", out.text());

    // A wrong token: the server's reason, no retry, nothing spooled, the run file named.
    let guarded = Stub::start(Faults {
        token: Some("right".into()),
        ..Faults::default()
    });
    let out = analyze(
        &[
            "record",
            "--criterion-dir",
            FIXTURE,
            "--results",
            results.to_str().unwrap(),
            "--store",
            &guarded.url,
        ],
        &[("STACKBENCH_STORE_TOKEN", "t0k3n-wr0ng")],
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert_eq!(guarded.requests(), 1);
    assert!(out.stderr.contains("HTTP 401"), "{}", out.text());
    assert!(out.stderr.contains("no or wrong token"), "{}", out.text());
    assert!(!out.text().contains("t0k3n-wr0ng"), "{}", out.text());
    assert!(json_files(&results.join("spool")).is_empty());
    assert!(
        out.stderr
            .contains(&results.join("runs").display().to_string())
    );

    // The right token, from the environment only.
    let out = analyze(
        &["store", "flush", "--results", results.to_str().unwrap()],
        &[
            ("STACKBENCH_STORE", &guarded.url),
            ("STACKBENCH_STORE_TOKEN", "right"),
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    let out = analyze(
        &["import", results.to_str().unwrap(), "--store", &guarded.url],
        &[("STACKBENCH_STORE_TOKEN", "right")],
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(guarded.stored().len(), 2, "{}", out.text());
}

#[test]
fn a_malformed_spooled_file_is_quarantined_with_its_reason_and_the_rest_delivered() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let good = spool_one(&results);
    let bad = results.join("spool/half-written.json");
    std::fs::write(&bad, b"{\"schema\": \"stackbench.run.v1\", \"run_id\": ").unwrap();

    let server = Stub::start(Faults::default());
    let out = flush(&results, &server.url);
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert_eq!(server.stored(), vec![good]);
    let kept = results.join("spool/rejected/half-written.json");
    assert!(kept.is_file(), "{}", out.text());
    assert!(!bad.exists());
    let reason =
        std::fs::read_to_string(results.join("spool/rejected/half-written.json.reason.txt"))
            .unwrap();
    assert!(reason.contains("invalid JSON"), "{reason}");
    assert!(
        out.stderr.contains(&kept.display().to_string()),
        "{}",
        out.text()
    );
    // Quarantined files are not retried: the spool is clean now.
    assert_eq!(flush(&results, &server.url).code, Some(0));
}

#[test]
fn import_while_the_server_is_down_spools_every_run_for_the_next_flush() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    // Two runs recorded locally (the default SQLite store).
    for _ in 0..2 {
        let out = record_with(&source, &[]);
        assert_eq!(out.code, Some(0), "{}", out.text());
    }
    let results = tmp.path().join("results");
    let out = analyze(
        &[
            "import",
            source.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
            "--store",
            &closed_port_url(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert_eq!(out.stderr.matches("SPOOLED").count(), 2, "{}", out.text());
    // The retries were spent once, on the first run, not again for the second.
    assert_eq!(out.stderr.matches("note: upload of run").count(), 2);
    assert_eq!(json_files(&results.join("spool")).len(), 2);

    let server = Stub::start(Faults::default());
    let out = flush(&results, &server.url);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(server.stored().len(), 2);
    // Importing the same files again: already there, nothing new stored.
    let out = analyze(
        &["import", source.to_str().unwrap(), "--store", &server.url],
        &[],
    );
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(out.stdout.contains("(2 already there)"), "{}", out.text());
    assert_eq!(server.stored().len(), 2);
}

#[test]
fn a_server_url_with_a_password_is_refused_without_echoing_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = record(&tmp.path().join("r"), "http://ci:hunter2@127.0.0.1:9");
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(!out.text().contains("hunter2"), "{}", out.text());
    assert!(
        out.stderr.contains("STACKBENCH_STORE_TOKEN"),
        "{}",
        out.text()
    );
}

/// A PostgreSQL URL on a localhost port nothing listens on.
fn postgres_down() -> String {
    let closed = closed_port_url();
    let port = closed.rsplit(':').next().unwrap();
    format!("postgres://stackbench@127.0.0.1:{port}/stackbench")
}

#[test]
fn a_run_recorded_while_postgresql_is_down_is_spooled_and_flush_delivers_it_once() {
    let Some(live) = pg_support::fresh_database("spool") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let out = record(&results, &postgres_down());
    assert_eq!(out.code, Some(1), "{}", out.text());
    assert!(out.stderr.contains("SPOOLED"), "{}", out.text());
    let spooled = json_files(&results.join("spool"));
    assert_eq!(spooled.len(), 1, "{}", out.text());
    let first = run_id_of(&spooled[0]);

    // The next record into the live store delivers the spooled run first, then its own.
    let out = record(&results, &live);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(
        out.stdout.contains("delivered 1 spooled runs"),
        "{}",
        out.text()
    );
    let client = || pg_support::client(&live);
    let ids: Vec<String> = client()
        .query(
            "SELECT run_id FROM runs ORDER BY created_unix_ms, run_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_eq!(ids[0], first);
    assert!(json_files(&results.join("spool")).is_empty());

    // The second run spooled again, as a flush killed between the store's commit and the
    // file's removal leaves it: delivering it again is one run.
    let second = json_files(&results.join("runs"))
        .into_iter()
        .find(|f| run_id_of(f) == ids[1])
        .expect("record wrote the run file of the stored run");
    std::fs::create_dir_all(results.join("spool")).unwrap();
    std::fs::copy(&second, results.join("spool/again.json")).unwrap();
    let out = flush(&results, &live);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert!(
        out.stdout.contains("1 were already there"),
        "{}",
        out.text()
    );
    let count: i64 = client()
        .query_one("SELECT COUNT(*) FROM runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 2);
}

#[test]
fn an_import_whose_postgresql_connection_is_lost_mid_transaction_spools_and_loses_nothing() {
    use std::io::{BufRead, BufReader, Read};
    let Some(live) = pg_support::fresh_database("spool_lost") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    let out = record_with(&source, &[]);
    assert_eq!(out.code, Some(0), "{}", out.text());
    let results = tmp.path().join("results");
    let mut child = Command::new(ANALYZE_TRENDS)
        .args([
            "import",
            source.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
            "--store",
            &live,
        ])
        .env_remove("STACKBENCH_STORE")
        // Long enough that the connection is cut inside the transaction, never after it.
        .env("STACKBENCH_DB_TEST_PAUSE_BEFORE_COMMIT_MS", "10000")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no pause: {seen}");
        seen.push_str(&line);
        if line.contains("pausing") {
            break;
        }
    }
    // The server ends the importer's session mid-transaction (as a restart or a network
    // cut would).
    let cut: i64 = pg_support::client(&live)
        .query_one(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(cut, 1);
    stderr.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{seen}");
    assert!(seen.contains("SPOOLED"), "{seen}");
    let count = |url: &str| -> i64 {
        pg_support::client(url)
            .query_one("SELECT COUNT(*) FROM runs", &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count(&live), 0, "the cut transaction left a partial run");
    assert_eq!(json_files(&results.join("spool")).len(), 1);

    let out = flush(&results, &live);
    assert_eq!(out.code, Some(0), "{}", out.text());
    assert_eq!(count(&live), 1);
}

/// The run ids `GET /api/runs` lists.
fn served_run_ids(server: &serve_support::Server) -> Vec<String> {
    let response = server.get("/api/runs");
    assert_eq!(response.status, 200, "{}", response.text());
    let doc: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    let mut ids: Vec<String> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn stackbench_serve_takes_a_spooled_run_once_and_repeated_uploads_stay_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let run_id = spool_one(&results);

    let server_dir = tmp.path().join("server");
    let server = serve_support::Server::writable(&server_dir);
    let url = format!("http://127.0.0.1:{}", server.port);
    let token = [("STACKBENCH_STORE_TOKEN", serve_support::TOKEN)];
    let flushed = analyze(
        &[
            "store",
            "flush",
            "--results",
            results.to_str().unwrap(),
            "--store",
            &url,
        ],
        &token,
    );
    assert_eq!(flushed.code, Some(0), "{}", flushed.text());
    assert_eq!(served_run_ids(&server), vec![run_id.clone()]);

    // The same run file uploaded again, and by two importers at once: still one run.
    let spooled_copy = tmp.path().join("copy.json");
    std::fs::copy(&json_files(&results.join("runs"))[0], &spooled_copy).unwrap();
    let import = || {
        let file = spooled_copy.to_str().unwrap().to_string();
        let url = url.clone();
        std::thread::spawn(move || {
            analyze(
                &["import", &file, "--store", &url],
                &[("STACKBENCH_STORE_TOKEN", serve_support::TOKEN)],
            )
        })
    };
    let (a, b) = (import(), import());
    for out in [a.join().unwrap(), b.join().unwrap()] {
        assert_eq!(out.code, Some(0), "{}", out.text());
        assert!(out.stdout.contains("(1 already there)"), "{}", out.text());
    }
    assert_eq!(served_run_ids(&server), vec![run_id]);
}

#[test]
fn a_read_only_server_answers_403_and_the_run_is_not_spooled() {
    let tmp = tempfile::tempdir().unwrap();
    let server_dir = tmp.path().join("server");
    std::fs::create_dir_all(&server_dir).unwrap();
    let server = serve_support::Server::start(&server_dir, &[]);
    let results = tmp.path().join("results");
    let out = record(&results, &format!("http://127.0.0.1:{}", server.port));
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains("HTTP 403"), "{}", out.text());
    assert!(json_files(&results.join("spool")).is_empty());
    assert_eq!(
        json_files(&results.join("runs")).len(),
        1,
        "the local copy stays"
    );
    assert!(served_run_ids(&server).is_empty());
}

#[test]
fn a_command_that_reads_the_store_says_a_server_is_not_a_database() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let out = analyze(
        &[
            "runs",
            "--results",
            results.to_str().unwrap(),
            "--store",
            "http://127.0.0.1:9",
        ],
        &[],
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(
        out.stderr.contains("is a results server, not a database"),
        "{}",
        out.text()
    );
}
