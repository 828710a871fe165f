//! The history database through the real `analyze-trends` binary: concurrent recorders,
//! `kill -9` mid-transaction, damaged, foreign, newer and unwritable databases, import,
//! prune, and acknowledged steps.

#[path = "cli_support/mod.rs"]
mod cli_support;
#[path = "pg_support/mod.rs"]
mod pg_support;
// report.html's page data (the JSON the page script draws from).
mod browser_support;

use pg_support::{Engine, PAUSE_ENV};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8")
}

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove(PAUSE_ENV);
    c
}

fn run(args: &[&str]) -> Output {
    command(args).output().expect("the binary runs")
}

/// `run` against `engine`'s store (`--store URL` for PostgreSQL).
fn run_on(engine: &Engine, args: &[&str]) -> Output {
    command(args)
        .args(engine.store_args())
        .output()
        .expect("the binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn record(results: &Path) -> Output {
    let fixture = fixture();
    run(&[
        "record",
        "--criterion-dir",
        fixture.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ])
}

/// `analyze-trends runs --format json`, which also imports run files the database lacks.
fn listed_runs(results: &Path) -> Vec<Value> {
    listed_runs_on(&Engine::Sqlite, results)
}

fn listed_runs_on(engine: &Engine, results: &Path) -> Vec<Value> {
    let out = run_on(
        engine,
        &[
            "runs",
            "--results",
            results.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap()
}

/// Integrity, and no partial run: every stored run has exactly the benchmarks and sample
/// rows it says it has, and no benchmark belongs to a missing run. Returns the run ids.
fn assert_whole(db: &Path) -> Vec<String> {
    let conn = Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let partial: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM runs r WHERE r.benchmark_count !=
               (SELECT COUNT(*) FROM benchmarks b JOIN samples s ON s.benchmark_pk = b.pk
                WHERE b.run_pk = r.pk)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(partial, 0, "a run is stored in part");
    let orphans: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM benchmarks WHERE run_pk NOT IN (SELECT pk FROM runs)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
    let mut stmt = conn.prepare("SELECT run_id FROM runs").unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn four_records_at_once_all_land_whole_in_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let fixture = fixture();
    let records = (0..4).map(|_| command(&cli_support::record_args(&fixture, &results, &[])));
    for out in cli_support::run_at_once(records) {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // Straight from the database, before any sync from the JSON files could fill gaps.
    let ids = assert_whole(&results.join("stackbench.db"));
    assert_eq!(ids.len(), 4, "{ids:?}");
    let runs = listed_runs(&results);
    assert_eq!(runs.len(), 4);
    assert!(runs.iter().all(|r| r["benchmarks"] == 12));
}

/// `args` killed with SIGKILL between writing its run and committing it.
fn kill_mid_transaction(args: &[&str]) {
    pg_support::kill_mid_transaction(command(args));
}

#[test]
fn kill_9_during_record_or_import_leaves_no_partial_run() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    assert_eq!(record(&results).status.code(), Some(0));
    let db = results.join("stackbench.db");
    assert_eq!(assert_whole(&db).len(), 1);

    let fixture = fixture();
    kill_mid_transaction(&[
        "record",
        "--criterion-dir",
        fixture.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(assert_whole(&db).len(), 1, "the killed run is not stored");
    // Its JSON file was complete before the transaction began: the next read imports it.
    assert_eq!(listed_runs(&results).len(), 2);
    assert_eq!(assert_whole(&db).len(), 2);

    // Import into a second store, killed the same way.
    let other = tmp.path().join("other");
    kill_mid_transaction(&[
        "import",
        results.join("runs").to_str().unwrap(),
        "--results",
        other.to_str().unwrap(),
    ]);
    let other_db = other.join("stackbench.db");
    assert!(assert_whole(&other_db).len() < 2);
    let out = run(&[
        "import",
        results.to_str().unwrap(),
        "--results",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(assert_whole(&other_db).len(), 2);
}

#[test]
fn a_foreign_or_damaged_database_file_is_named_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(foreign.join("stackbench.db"), &garbage).unwrap();

    // A real database whose header was overwritten.
    let damaged = tmp.path().join("damaged");
    assert_eq!(record(&damaged).status.code(), Some(0));
    run(&["runs", "--results", damaged.to_str().unwrap()]);
    let db = damaged.join("stackbench.db");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[..16].copy_from_slice(b"definitely not!\0");
    std::fs::write(&db, &bytes).unwrap();

    for (dir, before) in [(&foreign, garbage), (&damaged, bytes)] {
        let db = dir.join("stackbench.db");
        let runs_before = std::fs::read_dir(dir.join("runs")).map_or(0, |d| d.count());
        for out in [
            record(dir),
            run(&["runs", "--results", dir.to_str().unwrap()]),
        ] {
            assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
            let err = stderr(&out);
            assert!(err.contains(db.to_str().unwrap()), "{err}");
            assert!(err.contains("not a stackbench history database"), "{err}");
            assert!(!err.contains("panicked"), "{err}");
        }
        assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
        let runs_after = std::fs::read_dir(dir.join("runs")).map_or(0, |d| d.count());
        assert_eq!(runs_after, runs_before, "record wrote a run file anyway");
    }
}

#[test]
fn a_database_from_a_newer_schema_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    assert_eq!(record(&results).status.code(), Some(0));
    let db = results.join("stackbench.db");
    Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    for out in [
        record(&results),
        run(&["runs", "--results", results.to_str().unwrap()]),
        run(&[results.to_str().unwrap()]),
    ] {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("schema version 99") && err.contains("newer"),
            "{err}"
        );
    }
    let version: i64 = Connection::open(&db)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, 99);
}

#[test]
fn a_read_only_results_directory_fails_cleanly() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    // Root ignores directory permissions: run the binary as `nobody` there.
    let is_root = unsafe { libc::geteuid() } == 0;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let fresh = tmp.path().join("fresh");
    let existing = tmp.path().join("existing");
    std::fs::create_dir(&fresh).unwrap();
    assert_eq!(record(&existing).status.code(), Some(0));
    for dir in [&fresh, &existing] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let fixture = fixture();
    for dir in [&fresh, &existing] {
        let args = [
            "record",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--results",
            dir.to_str().unwrap(),
        ];
        let out = if is_root {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
                .args(args)
                .output()
                .expect("setpriv (util-linux) runs")
        } else {
            run(&args)
        };
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(dir.to_str().unwrap()), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert_eq!(std::fs::read_dir(&fresh).unwrap().count(), 0);
    assert_eq!(assert_whole(&existing.join("stackbench.db")).len(), 1);
}

/// A copy of the recorded run `run` with a new id, time and (optionally) fingerprint.
fn variant(run: &Value, id: &str, created_unix_ms: u64, fingerprint: Option<&str>) -> Value {
    let mut v = run.clone();
    v["run_id"] = id.into();
    v["created_unix_ms"] = created_unix_ms.into();
    if let Some(f) = fingerprint {
        v["fingerprint"] = f.into();
    }
    v
}

fn only_run_file(results: &Path) -> Value {
    let file = std::fs::read_dir(results.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn import_is_idempotent_and_a_bad_file_stops_only_itself() {
    for engine in Engine::all("import") {
        import_is_idempotent_and_a_bad_file_stops_only_itself_on(&engine);
    }
}

fn import_is_idempotent_and_a_bad_file_stops_only_itself_on(engine: &Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    assert_eq!(record(&source).status.code(), Some(0));
    let recorded = only_run_file(&source);
    let incoming = tmp.path().join("incoming");
    std::fs::create_dir(&incoming).unwrap();
    for (name, doc) in [
        ("a.json", variant(&recorded, "run-a", 1_000, None)),
        (
            "b.json",
            variant(&recorded, "run-b", 2_000, Some("cpu=other x8;gpu=none")),
        ),
    ] {
        std::fs::write(incoming.join(name), doc.to_string()).unwrap();
    }
    std::fs::write(
        incoming.join("broken.json"),
        "{\"schema\": \"stackbench.run.v1\"",
    )
    .unwrap();
    let results = tmp.path().join("results");
    let import = |paths: &[&Path]| {
        let mut args = vec!["import"];
        args.extend(paths.iter().map(|p| p.to_str().unwrap()));
        args.extend(["--results", results.to_str().unwrap()]);
        run_on(engine, &args)
    };
    let out = import(&[&incoming, &source]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("broken.json"), "{err}");
    assert!(!err.contains("a.json") && !err.contains("b.json"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("imported 3 runs"), "{stdout}");
    assert!(stdout.contains("1 on cpu=other x8;gpu=none"), "{stdout}");

    std::fs::remove_file(incoming.join("broken.json")).unwrap();
    let out = import(&[&incoming, &source]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 0 runs"));
    assert_eq!(listed_runs_on(engine, &results).len(), 3);

    // The same id with other hardware is a different run: refused, named.
    let clash = tmp.path().join("clash.json");
    std::fs::write(
        &clash,
        variant(&recorded, "run-a", 1_000, Some("cpu=x x1;gpu=none")).to_string(),
    )
    .unwrap();
    let out = import(&[&clash]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("clash.json") && stderr(&out).contains("run-a"));
    assert_eq!(listed_runs_on(engine, &results).len(), 3);
}

#[test]
fn prune_keeps_recent_runs_and_those_comparisons_or_acknowledgements_need() {
    for engine in Engine::all("prune") {
        prune_keeps_recent_runs_and_those_comparisons_or_acknowledgements_need_on(&engine);
    }
}

fn prune_keeps_recent_runs_and_those_comparisons_or_acknowledgements_need_on(engine: &Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    assert_eq!(record(&results).status.code(), Some(0));
    let recorded = only_run_file(&results);
    let day: u64 = 86_400_000;
    let now = recorded["created_unix_ms"].as_u64().unwrap();
    let runs = results.join("runs");
    for i in 1..=5u64 {
        let doc = variant(&recorded, &format!("old-{i}"), now - (100 - i) * day, None);
        std::fs::write(runs.join(format!("old-{i}.json")), doc.to_string()).unwrap();
    }
    let r = results.to_str().unwrap();
    // The fixture's spread leaves some benchmarks inconclusive: unsure (exit 3), and the
    // verdict is kept all the same, which is what prune must protect.
    assert_eq!(
        run_on(engine, &["compare", "old-1", "old-2", "--results", r])
            .status
            .code(),
        Some(3)
    );
    let ack = run_on(
        engine,
        &[
            "ack",
            "plain function",
            "--reason",
            "new driver",
            "--run",
            "old-3",
            "--results",
            r,
        ],
    );
    assert_eq!(ack.status.code(), Some(0), "{}", stderr(&ack));

    let prune = |extra: &[&str]| {
        let mut args = vec![
            "prune",
            "--keep-days",
            "30",
            "--keep-latest",
            "1",
            "--results",
            r,
        ];
        args.extend_from_slice(extra);
        args.extend(["--format", "json"]);
        let out = run_on(engine, &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let dry = prune(&["--dry-run"]);
    assert_eq!(dry["removed_runs"], serde_json::json!(["old-4", "old-5"]));
    assert_eq!(
        listed_runs_on(engine, &results).len(),
        6,
        "a dry run removes nothing"
    );

    let done = prune(&[]);
    assert_eq!(done["removed_runs"], serde_json::json!(["old-4", "old-5"]));
    let mut protected: Vec<&str> = done["protected_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    protected.sort();
    assert_eq!(protected, ["old-1", "old-2", "old-3"]);
    assert!(
        !runs.join("old-4.json").exists(),
        "a pruned run would come back"
    );
    let ids: Vec<String> = listed_runs_on(engine, &results)
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    let out = run_on(engine, &["comparisons", "--results", r, "--format", "csv"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("old-1,old-2"));
}

#[test]
fn an_acknowledged_step_becomes_the_baseline_of_history_and_report() {
    for engine in Engine::all("ack") {
        an_acknowledged_step_becomes_the_baseline_of_history_and_report_on(&engine);
    }
}

fn an_acknowledged_step_becomes_the_baseline_of_history_and_report_on(engine: &Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let r = results.to_str().unwrap();
    let out = run_on(
        engine,
        &[
            "simulate",
            "history",
            "--results",
            r,
            "--runs",
            "30",
            "--benchmarks",
            "3",
            "--stepped",
            "1",
            "--step-at",
            "20",
            "--step-percent",
            "20",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let history = || {
        let out = run_on(
            engine,
            &["history", "hist/b0000", "--results", r, "--format", "json"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["groups"][0]["trend"].clone()
    };
    let before = history();
    assert_eq!(before["status"], "regressed");
    assert_eq!(before["change_points"][0]["run_id"], "sim-run-020");

    let out = run_on(
        engine,
        &[
            "ack",
            "hist/b0000",
            "--reason",
            "driver 560: intended",
            "--results",
            r,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sim-run-020"));
    let after = history();
    assert_eq!(after["status"], "stable", "{after}");
    assert_eq!(after["acknowledged"]["reason"], "driver 560: intended");

    let out = run_on(engine, &[r, "--fail-on-regression"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("acknowledged hist/b0000 from sim-run-020")
    );
    let md = std::fs::read_to_string(results.join("reports/report.md")).unwrap();
    assert!(md.contains("### Acknowledged steps") && md.contains("driver 560: intended"));
    let html = std::fs::read_to_string(results.join("reports/report.html")).unwrap();
    let data = browser_support::page_data(&html);
    let acknowledged: Vec<&str> = data["hardware_groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["acknowledged"].as_array().unwrap())
        .map(|a| a["reason"].as_str().unwrap())
        .collect();
    assert_eq!(acknowledged, ["driver 560: intended"]);

    let missing = tmp.path().join("missing");
    // A server store needs no results directory; a directory's own store does.
    let own_store = matches!(engine, Engine::Sqlite);
    for cmd in ["runs", "comparisons"].into_iter().filter(|_| own_store) {
        let out = run_on(engine, &[cmd, "--results", missing.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    }
    assert!(!missing.exists(), "a query created a results directory");

    let out = run_on(engine, &["history", "hist/b00", "--results", r]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("similar ids: hist/b0000"),
        "{}",
        stderr(&out)
    );
}

/// The report the binary writes from the store's medians is the report computed from the
/// whole runs: the same steps, statuses, groups, skips and failures, and acknowledgements.
#[test]
fn the_report_from_stored_medians_equals_the_report_from_whole_runs() {
    use stackbench::analysis::simulate::{HistoryScenario, Scenario, simulate_history};
    use stackbench::analysis::trends::{TrendOptions, analyze_history};
    use stackbench::results::RunStore;
    use stackbench::sidecar::{BenchmarkOutcome, TargetReport};
    use stackbench::workload::{BenchId, Suite};

    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let mut runs = simulate_history(&HistoryScenario {
        runs: 24,
        benchmarks: 8,
        stepped: 3,
        step_at: 16,
        step_percent: 25.0,
        run: Scenario::clean(11),
    });
    // Two machines, interleaved in time; the other one lacks a benchmark and measured
    // another's samples as broken (no finite median: no point on either path).
    for (i, run) in runs.iter_mut().enumerate() {
        if i % 3 == 1 {
            run.fingerprint = Some("cpu=other x8;gpu=none".into());
            run.benchmarks.retain(|b| b.id != "hist/b0005");
            run.benchmarks[0].samples.times[0] = f64::NAN;
        }
    }
    let mut target = TargetReport::new("gemm", Suite::Quick);
    target.record(
        &BenchId::new("gemm", "cuda", "all", "all"),
        BenchmarkOutcome::Skipped {
            reason: "no driver".into(),
        },
    );
    let last = runs.len() - 1;
    runs[last]
        .targets
        .push(serde_json::to_value(&target).unwrap());
    let store = RunStore::new(&results);
    for run in &runs {
        store.save(run).unwrap();
    }
    let r = results.to_str().unwrap();
    let out = run(&["ack", "hist/b0001", "--reason", "intended", "--results", r]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = run(&[r]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(results.join("reports/report.json")).unwrap(),
    )
    .unwrap();
    let options = TrendOptions {
        acknowledgements: store.acknowledgements().unwrap(),
        ..TrendOptions::default()
    };
    let whole = store.load_all().unwrap();
    assert!(whole.problems.is_empty(), "{:?}", whole.problems);
    let expected =
        serde_json::to_value(analyze_history(&whole.runs, &options, Vec::new())).unwrap();
    // The trend model only: the generation time differs, and the latest run's telemetry and
    // accuracy are views of one run, not of the history (their own tests are in
    // telemetry_views.rs and the report's accuracy tests).
    let without_time = |mut v: Value| {
        v.as_object_mut().unwrap().remove("generated");
        v.as_object_mut().unwrap().remove("latest_run_telemetry");
        v.as_object_mut().unwrap().remove("latest_run_accuracy");
        v
    };
    let (written, expected) = (without_time(written), without_time(expected));
    // What makes the comparison worth having: both machines, steps, a skip, an ack.
    let groups = expected["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let text = expected.to_string();
    assert!(
        text.contains("\"regressed\"") && text.contains("no driver"),
        "{text}"
    );
    assert!(text.contains("\"reason\":\"intended\""), "{text}");
    assert_eq!(written, expected);
}
