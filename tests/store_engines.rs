//! The store on both engines through the real `analyze-trends` binary: SQLite (the results
//! directory's `stackbench.db`) and PostgreSQL (a fresh database per test on the server
//! `tests/pg_support` provides). Many writer processes at once, `kill -9` mid-transaction,
//! migrations from a real version-1 store, a newer store refused, `store copy` round trips,
//! the store setting's precedence, and a URL's password never printed.

#[path = "cli_support/mod.rs"]
mod cli_support;
#[path = "pg_support/mod.rs"]
mod pg_support;

use pg_support::{Engine, ORPHAN_BENCHMARKS, PARTIAL_RUNS, PAUSE_ENV};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8")
}

fn command(args: &[&str], engine: &Engine) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .args(engine.store_args())
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove(PAUSE_ENV);
    c
}

fn run(args: &[&str], engine: &Engine) -> Output {
    command(args, engine).output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn record(results: &Path, engine: &Engine) -> Output {
    let fixture = fixture();
    run(
        &[
            "record",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ],
        engine,
    )
}

fn listed_runs(results: &Path, engine: &Engine) -> Vec<Value> {
    let out = ok(run(
        &[
            "runs",
            "--results",
            results.to_str().unwrap(),
            "--format",
            "json",
        ],
        engine,
    ));
    serde_json::from_str(&out).unwrap()
}

/// One recorded run's JSON, to make variants of.
fn recorded_run(tmp: &Path) -> Value {
    let scratch = tmp.join("scratch");
    ok(record(&scratch, &Engine::Sqlite));
    let file = std::fs::read_dir(scratch.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

fn write_variant(dir: &Path, run: &Value, id: &str, created_unix_ms: u64) {
    let mut v = run.clone();
    v["run_id"] = Value::from(id);
    v["created_unix_ms"] = Value::from(created_unix_ms);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{id}.json")), v.to_string()).unwrap();
}

const WRITERS: usize = 8;
const RUNS_PER_WRITER: usize = 50;
/// Runs every writer imports (the same id and fingerprint): each must be stored once.
const SHARED_RUNS: usize = 5;

#[test]
fn eight_writer_processes_of_fifty_runs_each_lose_nothing_on_either_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let base = recorded_run(tmp.path());
    for engine in Engine::all("eight_writers") {
        let root = tmp.path().join(engine.name());
        let results = root.join("results");
        let inputs: Vec<PathBuf> = (0..WRITERS)
            .map(|w| {
                let dir = root.join(format!("writer-{w}"));
                for i in 0..RUNS_PER_WRITER {
                    let ms = 1_790_000_000_000 + (w * RUNS_PER_WRITER + i) as u64;
                    write_variant(&dir, &base, &format!("w{w}-run{i:02}"), ms);
                }
                for s in 0..SHARED_RUNS {
                    write_variant(
                        &dir,
                        &base,
                        &format!("shared-{s}"),
                        1_700_000_000_000 + s as u64,
                    );
                }
                dir
            })
            .collect();
        let imports = inputs.iter().map(|dir| {
            let args = [
                "import",
                dir.to_str().unwrap(),
                "--results",
                results.to_str().unwrap(),
            ];
            command(&args, &engine)
        });
        for out in cli_support::run_at_once(imports) {
            assert!(
                out.status.success(),
                "{}: {}",
                engine.name(),
                text(&out.stderr)
            );
        }
        // Straight from the tables: every run whole, each shared run once.
        let expected = (WRITERS * RUNS_PER_WRITER + SHARED_RUNS) as i64;
        assert_eq!(
            engine.count(&results, "SELECT COUNT(*) FROM runs"),
            expected,
            "{engine:?}"
        );
        assert_eq!(
            engine.count(&results, "SELECT COUNT(DISTINCT run_id) FROM runs"),
            expected
        );
        assert_eq!(engine.count(&results, PARTIAL_RUNS), 0, "{engine:?}");
        assert_eq!(engine.count(&results, ORPHAN_BENCHMARKS), 0, "{engine:?}");
        assert_eq!(listed_runs(&results, &engine).len(), expected as usize);
    }
}

/// `args` killed with SIGKILL between writing its run and committing it.
fn kill_mid_transaction(args: &[&str], engine: &Engine) {
    pg_support::kill_mid_transaction(command(args, engine));
}

#[test]
fn kill_9_mid_transaction_leaves_no_partial_run_on_either_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let base = recorded_run(tmp.path());
    for engine in Engine::all("kill_9") {
        let results = tmp.path().join(engine.name()).join("results");
        let fixture = fixture();
        kill_mid_transaction(
            &[
                "record",
                "--criterion-dir",
                fixture.to_str().unwrap(),
                "--results",
                results.to_str().unwrap(),
            ],
            &engine,
        );
        let incoming = tmp.path().join(engine.name()).join("incoming");
        write_variant(&incoming, &base, "imported-run", 1_790_000_000_000);
        kill_mid_transaction(
            &[
                "import",
                incoming.to_str().unwrap(),
                "--results",
                results.to_str().unwrap(),
            ],
            &engine,
        );
        // Neither transaction left anything behind.
        assert_eq!(
            engine.count(&results, "SELECT COUNT(*) FROM runs"),
            0,
            "{engine:?}"
        );
        assert_eq!(engine.count(&results, "SELECT COUNT(*) FROM benchmarks"), 0);
        assert_eq!(engine.count(&results, "SELECT COUNT(*) FROM samples"), 0);
        // The killed record's file was written first: the next read stores it, whole.
        let runs = listed_runs(&results, &engine);
        assert_eq!(runs.len(), 1, "{engine:?}: {runs:?}");
        assert_eq!(runs[0]["benchmarks"], 12);
        assert_eq!(engine.count(&results, PARTIAL_RUNS), 0);
    }
}

/// A store written by the version before this one (round 2: `PRAGMA user_version = 1`, no
/// meta table, no checksum column), kept as it was made.
fn v1_sqlite_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v1/stackbench.db")
}

#[test]
fn a_version_1_store_is_refused_until_store_migrate_upgrades_it_on_either_engine() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in Engine::all("migrate_v1") {
        let results = tmp.path().join(engine.name());
        match &engine {
            Engine::Sqlite => {
                std::fs::create_dir_all(&results).unwrap();
                std::fs::copy(v1_sqlite_fixture(), results.join("stackbench.db")).unwrap();
            }
            Engine::Postgres(_) => {
                // The version-1 schema with a run in it: this build's store, taken back to
                // version 1 by undoing step 2 (what PostgreSQL stores looked like before it).
                ok(record(&results, &engine));
                std::fs::remove_dir_all(results.join("runs")).unwrap();
                engine.execute(
                    &results,
                    "DROP TABLE stackbench_meta; ALTER TABLE runs DROP COLUMN content_sha256;",
                );
            }
        }
        let before = engine.count(&results, "SELECT COUNT(*) FROM runs");
        assert!(before > 0);
        let r = results.to_str().unwrap();
        let refused = run(&["runs", "--results", r], &engine);
        assert_eq!(refused.status.code(), Some(2), "{engine:?}");
        let err = text(&refused.stderr);
        assert!(
            err.contains("schema version 1")
                && err.contains("analyze-trends store migrate --store"),
            "{err}"
        );
        // Refusing wrote nothing: still version 1.
        assert_eq!(engine.count(&results, meta_table_count(&engine)), 0);
        let migrated = ok(run(&["store", "migrate", "--results", r], &engine));
        assert!(
            migrated.contains("migrated from schema version 1 to 2"),
            "{migrated}"
        );
        let again = ok(run(&["store", "migrate", "--results", r], &engine));
        assert!(again.contains("already at schema version 2"), "{again}");
        assert_eq!(listed_runs(&results, &engine).len() as i64, before);
        // Every run got its checksum; the store says version 1 can still write it.
        assert_eq!(
            engine.count(
                &results,
                "SELECT COUNT(*) FROM runs WHERE content_sha256 IS NULL"
            ),
            0
        );
        assert_eq!(
            engine.count(
                &results,
                "SELECT CAST(value AS BIGINT) FROM stackbench_meta WHERE key = 'compatible_from'"
            ),
            1
        );
        if let Engine::Sqlite = engine {
            // What a round-2 binary checks (it refuses a user_version above 1).
            assert_eq!(engine.count(&results, "PRAGMA user_version"), 1);
        }
        ok(record(&results, &engine));
    }
}

fn meta_table_count(engine: &Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE name = 'stackbench_meta'",
        Engine::Postgres(_) => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'stackbench_meta'"
        }
    }
}

#[test]
fn a_store_newer_than_the_window_is_refused_naming_both_versions_on_either_engine() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in Engine::all("newer_store") {
        let results = tmp.path().join(engine.name());
        ok(record(&results, &engine));
        let r = results.to_str().unwrap();
        // One additive step ahead (version 3, still writable by 2): used as it is.
        engine.execute(
            &results,
            "UPDATE stackbench_meta SET value = '3' WHERE key = 'schema_version';
             UPDATE stackbench_meta SET value = '2' WHERE key = 'compatible_from';",
        );
        assert_eq!(listed_runs(&results, &engine).len(), 1);
        ok(record(&results, &engine));
        // Beyond the window: refused by every command, and left as it was.
        engine.execute(
            &results,
            "UPDATE stackbench_meta SET value = '4' WHERE key = 'schema_version';
             UPDATE stackbench_meta SET value = '3' WHERE key = 'compatible_from';",
        );
        for out in [
            record(&results, &engine),
            run(&["runs", "--results", r], &engine),
            run(&["store", "migrate", "--results", r], &engine),
        ] {
            assert_eq!(out.status.code(), Some(2), "{engine:?}");
            let err = text(&out.stderr);
            assert!(
                err.contains("schema version 4")
                    && err.contains("version 3 and newer")
                    && err.contains("understands version 2"),
                "{err}"
            );
        }
        assert_eq!(engine.count(&results, "SELECT COUNT(*) FROM runs"), 2);
    }
}

#[test]
fn store_copy_round_trips_sqlite_to_postgres_to_sqlite_with_equal_checksums() {
    let Some(pg) = pg_support::fresh_database("store_copy") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let sqlite = Engine::Sqlite;
    ok(record(&a, &sqlite));
    ok(record(&a, &sqlite));
    let r = a.to_str().unwrap();
    let compare = run(&["compare", "previous", "latest", "--results", r], &sqlite);
    assert!(
        matches!(compare.status.code(), Some(0 | 1 | 3)),
        "{}",
        text(&compare.stderr)
    );
    ok(run(
        &[
            "ack",
            "gemm/cpu/axpy/1024",
            "--reason",
            "copy test",
            "--results",
            r,
        ],
        &sqlite,
    ));
    let a_url = format!("sqlite:{}", a.join("stackbench.db").display());
    let b = tmp.path().join("b");
    let b_url = format!("sqlite:{}", b.join("stackbench.db").display());

    let there = ok(run(&["store", "copy", &a_url, &pg], &sqlite));
    assert!(there.contains("runs: 2 copied, 0 already there"), "{there}");
    assert!(there.contains("comparisons: 1 copied"), "{there}");
    assert!(there.contains("acknowledgements: 1 copied"), "{there}");
    assert!(there.contains("verified: 2 runs"), "{there}");
    let back = ok(run(&["store", "copy", &pg, &b_url], &sqlite));
    assert!(back.contains("runs: 2 copied"), "{back}");
    // Idempotent: a second copy finds everything there.
    let again = ok(run(&["store", "copy", &a_url, &pg], &sqlite));
    assert!(again.contains("runs: 0 copied, 2 already there"), "{again}");
    assert!(
        again.contains("comparisons: 0 copied, 1 already there"),
        "{again}"
    );

    // The same rows, ids and checksums at both ends.
    let via = |url: &str, what: &str| {
        ok(run(
            &[
                what,
                "--results",
                b.to_str().unwrap(),
                "--format",
                "json",
                "--store",
                url,
            ],
            &sqlite,
        ))
    };
    for what in ["runs", "comparisons"] {
        let original: Value = serde_json::from_str(&via(&a_url, what)).unwrap();
        let copied: Value = serde_json::from_str(&via(&b_url, what)).unwrap();
        let on_pg: Value = serde_json::from_str(&via(&pg, what)).unwrap();
        assert_eq!(original, copied, "{what}");
        assert_eq!(original, on_pg, "{what}");
    }
    let checksums = |db: &Path| -> Vec<(String, String)> {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut stmt = conn
            .prepare("SELECT run_id, content_sha256 FROM runs ORDER BY run_id")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let original = checksums(&a.join("stackbench.db"));
    assert_eq!(original.len(), 2);
    assert_eq!(original, checksums(&b.join("stackbench.db")));
    let mut pg_client = pg_support::client(&pg);
    let on_pg: Vec<(String, String)> = pg_client
        .query(
            "SELECT run_id, content_sha256 FROM runs ORDER BY run_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(original, on_pg);
}

/// A local port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_store_is_named_without_its_password_exit_2_for_a_query_and_a_spooled_record() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://bench:hunter2@127.0.0.1:{}/stackbench",
        closed_port()
    );
    let fixture = fixture();
    for args in [
        vec!["runs", "--results", tmp.path().to_str().unwrap()],
        vec![
            "record",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--results",
            tmp.path().to_str().unwrap(),
        ],
    ] {
        let out = run(&args, &Engine::Postgres(url.clone()));
        let err = text(&out.stderr);
        if args[0] == "record" {
            // A measured run is never lost to an unreachable store: it waits in the spool
            // (tests/store_spool.rs delivers it), and the command fails saying so.
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains("SPOOLED"), "{err}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        }
        assert!(err.contains("cannot reach the history store"), "{err}");
        assert!(err.contains("postgres://bench:***@127.0.0.1:"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
    // A malformed URL names the accepted forms, without the password either.
    let out = run(
        &[
            "runs",
            "--results",
            ".",
            "--store",
            "mysql://root:hunter2@h/db",
        ],
        &Engine::Sqlite,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("sqlite:PATH") && !err.contains("hunter2"),
        "{err}"
    );
    let out = command(&["runs", "--results", "."], &Engine::Sqlite)
        .env("STACKBENCH_STORE", "postgress://root:hunter2@h/db")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("$STACKBENCH_STORE") && err.contains("root:***@h"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn the_store_comes_from_the_flag_then_the_environment_then_stackbench_toml() {
    let Some(pg) = pg_support::fresh_database("store_precedence") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    ok(record(&results, &Engine::Postgres(pg.clone())));
    std::fs::remove_dir_all(results.join("runs")).unwrap();
    let other = format!("sqlite:{}", tmp.path().join("other.db").display());
    std::fs::write(
        tmp.path().join("stackbench.toml"),
        format!("store = \"{pg}\"\n"),
    )
    .unwrap();
    let count = |extra: &[&str], env: Option<&str>| -> usize {
        let mut args = vec!["runs", "--results", "results", "--format", "json"];
        args.extend_from_slice(extra);
        let mut c = command(&args, &Engine::Sqlite);
        c.current_dir(tmp.path());
        if let Some(env) = env {
            c.env("STACKBENCH_STORE", env);
        }
        serde_json::from_str::<Vec<Value>>(&ok(c.output().unwrap()))
            .unwrap()
            .len()
    };
    // The file's store holds the run; the SQLite one is empty.
    assert_eq!(count(&[], None), 1);
    assert_eq!(count(&[], Some(&other)), 0);
    assert_eq!(count(&["--store", &pg], Some(&other)), 1);
    assert_eq!(count(&["--store", &other], None), 0);
}

/// What the spool (the remote slice) keys on: a refused connection and a session the
/// server ended are "unreachable" (keep the run, store it later); a server that answered
/// with a refusal of its own is not.
#[test]
fn a_refused_connection_or_a_lost_session_is_unreachable_and_a_server_refusal_is_not() {
    use stackbench::results::db::{HistoryDb, StoreUrl};
    let url = format!("postgres://u:pw@127.0.0.1:{}/x", closed_port());
    let err = HistoryDb::open_url(&StoreUrl::parse(&url).unwrap()).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(!err.to_string().contains(":pw@"), "{err}");

    let Some(pg) = pg_support::fresh_database("unreachable") else {
        return;
    };
    let db = HistoryDb::open_url(&StoreUrl::parse(&pg).unwrap()).unwrap();
    assert!(db.list_runs().unwrap().is_empty());
    // The server ends the session, as a restart or a dropped network would.
    let ended: i64 = pg_support::client(&pg)
        .query_one(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1);
    let err = db.list_runs().unwrap_err();
    assert!(err.is_unreachable(), "{err}");

    let missing = format!("{}_missing", pg);
    let err = HistoryDb::open_url(&StoreUrl::parse(&missing).unwrap()).unwrap_err();
    assert!(!err.is_unreachable(), "{err}");
    assert!(err.to_string().contains("does not exist"), "{err}");
}

/// `stackbench show` and `analyze-trends report` read a server store with `--store`; the
/// results directory then holds no run at all, only the reports.
#[test]
fn show_and_report_read_a_postgresql_store_given_by_flag() {
    let Some(pg) = pg_support::fresh_database("show_report") else {
        return;
    };
    let engine = Engine::Postgres(pg.clone());
    let tmp = tempfile::tempdir().unwrap();
    let recorder = tmp.path().join("runner");
    ok(record(&recorder, &engine));
    let viewer = tmp.path().join("viewer");
    std::fs::create_dir(&viewer).unwrap();
    let v = viewer.to_str().unwrap();
    let shown = Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(["show", "--page", "summary", "--results", v, "--store", &pg])
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .unwrap();
    let page = ok(shown);
    assert!(page.contains("12 measured"), "{page}");
    let without = Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(["show", "--page", "summary", "--results", v])
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .unwrap();
    assert_ne!(
        without.status.code(),
        Some(0),
        "the viewer's own store is empty"
    );
    ok(run(&["report", v], &engine));
    let report = std::fs::read_to_string(viewer.join("reports/report.md")).unwrap();
    assert!(report.contains("gemm/cpu/axpy/1024"), "{report}");
    assert!(!viewer.join("runs").exists());
}

/// Same runs, same answers: the cross-hardware fixture (four runs, three machines) imported
/// into each engine gives byte-identical output from every reading command.
#[test]
fn both_engines_answer_every_reading_command_identically() {
    let Some(pg) = pg_support::fresh_database("same_answers") else {
        return;
    };
    let fleet = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hardware/runs");
    let tmp = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for engine in [Engine::Sqlite, Engine::Postgres(pg)] {
        let results = tmp.path().join(engine.name());
        let r = results.to_str().unwrap();
        ok(run(
            &["import", fleet.to_str().unwrap(), "--results", r],
            &engine,
        ));
        let first = std::fs::read_dir(&fleet)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
        let bench = doc["benchmarks"][0]["id"].as_str().unwrap().to_string();
        let answers: Vec<String> = [
            vec!["runs", "--format", "json"],
            vec!["export", "--format", "json"],
            vec!["history", bench.as_str(), "--format", "json"],
            vec!["hardware", "--format", "json"],
            vec![
                "compare",
                "20261123T141129445Z-p2991-8b9d",
                "20261123T142124857Z-p3242-4f36",
            ],
            vec!["comparisons", "--format", "json"],
        ]
        .into_iter()
        .map(|mut args| {
            args.extend(["--results", r]);
            let out = run(&args, &engine);
            assert!(
                matches!(out.status.code(), Some(0 | 1 | 3)),
                "{args:?} on {}: {}",
                engine.name(),
                text(&out.stderr)
            );
            // The results directory is in some messages, and a comparison's time is when
            // it was made: both differ by engine.
            text(&out.stdout)
                .replace(r, "<results>")
                .lines()
                .filter(|l| !l.trim_start().starts_with("\"time\":"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
        outputs.push(answers);
    }
    assert_eq!(outputs[0].len(), outputs[1].len());
    for (sqlite, postgres) in outputs[0].iter().zip(&outputs[1]) {
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, postgres);
    }
}
