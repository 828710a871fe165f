//! `stackbench validate --level 1|2|3` through the real binary on the CPU backend: which
//! ids each level judges (on a stored run, fast), how `--level` combines with `--suite`
//! and `--filter`, a bad level, and one real level-1 run held to a tiny budget, which must
//! record its wall time and say that it went over.

mod schema_support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn stackbench(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(args)
        .current_dir(cwd)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .env_remove("STACKBENCH_VALIDATE_BUDGET_S")
        .envs(env.iter().copied())
        .output()
        .expect("running stackbench")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_schema(doc: &Value) {
    schema_support::assert_valid("validation.schema.json", doc);
}

const LEVEL_1_GEMM: &str = "gemm/cpu/f32/512x512x512";
const LEVEL_2_GEMM: &str = "gemm/cpu/f64/2048x2048x2048";
/// In the quick suite, in no level.
const NO_LEVEL_GEMM: &str = "gemm/cpu/bf16/512x512x512";

/// A stored CPU run holding one GEMM of level 1, one of level 2 and one of neither.
fn stored_run(dir: &Path) -> PathBuf {
    let benchmark = |id: &str| {
        serde_json::json!({"id": id, "group": "gemm/cpu",
            "samples": {"sampling_mode": "Flat", "iters": [1.0, 1.0, 1.0], "times": [5e6, 6e6, 5.5e6]}})
    };
    let run = serde_json::json!({
        "schema": "stackbench.run.v1", "run_id": "stored", "created_unix_ms": 0, "timestamp": "t",
        "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
        "system": {"gpus": [], "peaks": [], "backends": {"cpu": {"status": "available",
            "devices": [{"name": "cpu"}]}}},
        "benchmarks": [benchmark(LEVEL_1_GEMM), benchmark(LEVEL_2_GEMM), benchmark(NO_LEVEL_GEMM)]
    });
    let path = dir.join("run.json");
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    path
}

/// `validate --json --results <dir>/results` with `extra` and `env`; (exit code, verdict
/// or null, stderr).
fn validate(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value, String) {
    let results = dir.join("results");
    let mut args = vec!["validate", "--json", "--results", results.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = stackbench(&args, dir, env);
    let verdict = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), verdict, stderr(&out))
}

/// Judges the stored run ([`stored_run`]) with `extra`, keeping nothing.
fn judge(dir: &Path, extra: &[&str]) -> (Option<i32>, Value, String) {
    let run = stored_run(dir);
    let mut args = vec!["--run", run.to_str().unwrap(), "--no-save"];
    args.extend_from_slice(extra);
    validate(dir, &args, &[])
}

/// The ids of the verdict's results, of one outcome (`measured`) or all.
fn result_ids<'a>(verdict: &'a Value, outcome: Option<&str>) -> Vec<&'a str> {
    verdict["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results in {verdict:#}"))
        .iter()
        .filter(|r| outcome.is_none_or(|o| r["outcome"] == o))
        .filter_map(|r| r["id"].as_str())
        .collect()
}

fn judged_ids(verdict: &Value) -> Vec<&str> {
    result_ids(verdict, None)
}

#[test]
fn each_level_judges_its_own_ids_and_level_2_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, level, budget_s, ids) in [
        (&["--level", "1"][..], 1, 30.0, vec![LEVEL_1_GEMM]),
        (&["--level", "2"][..], 2, 120.0, vec![LEVEL_2_GEMM]),
        (&[][..], 2, 120.0, vec![LEVEL_2_GEMM]),
    ] {
        let (code, verdict, err) = judge(dir.path(), flags);
        assert_ne!(code, Some(2), "{flags:?}: {err}");
        assert_schema(&verdict);
        assert_eq!(judged_ids(&verdict), ids, "{flags:?}");
        assert_eq!(verdict["suite"], format!("level-{level}"));
        assert_eq!(
            verdict["level"],
            serde_json::json!({"level": level, "budget_s": budget_s, "over_budget": false})
        );
        // A stored run was judged: nothing was measured, so there is no wall time.
        assert!(verdict.get("wall_s").is_none(), "{verdict:#}");
    }
}

/// `--filter` narrows within the level; `--suite` replaces the level (no budget), and
/// both together are refused.
#[test]
fn filter_narrows_within_a_level_and_suite_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = judge(dir.path(), &["--level", "1", "--filter", "f64"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the filter 'f64' selects no benchmark of suite 'level-1'"),
        "{err}"
    );
    let (code, verdict, err) = judge(dir.path(), &["--level", "2", "--filter", "f64"]);
    assert_ne!(code, Some(2), "{err}");
    assert_eq!(judged_ids(&verdict), vec![LEVEL_2_GEMM]);

    let (code, verdict, err) = judge(dir.path(), &["--suite", "quick"]);
    assert_ne!(code, Some(2), "{err}");
    assert_eq!(verdict["suite"], "quick");
    assert!(verdict.get("level").is_none(), "{verdict:#}");
    assert_eq!(judged_ids(&verdict).len(), 3);

    let (code, _, err) = judge(dir.path(), &["--level", "1", "--suite", "quick"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--level") && err.contains("--suite"), "{err}");
}

#[test]
fn a_bad_level_exits_2_naming_the_value_and_the_allowed_ones() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["4", "0", "two"] {
        let (code, verdict, err) = judge(dir.path(), &["--level", bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(verdict.is_null());
        assert!(
            err.contains(&format!("'{bad}' is not a validate level")) && err.contains("1, 2, 3"),
            "{err}"
        );
    }
    // A budget that is not a number of seconds is bad input too, named.
    let out = stackbench(
        &["validate", "--level", "1", "--run", "latest"],
        dir.path(),
        &[("STACKBENCH_VALIDATE_BUDGET_S", "soon")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("STACKBENCH_VALIDATE_BUDGET_S='soon'"),
        "{}",
        stderr(&out)
    );
}

/// The real level 1 on this machine's CPU, held to a budget no run can meet: the run
/// records the level, its wall time and that it went over, and says so on stderr. What it
/// measured is level 1's selection and nothing else.
#[test]
fn a_real_level_1_run_over_its_budget_is_reported_with_its_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let (code, verdict, err) = validate(
        dir.path(),
        &["--level", "1"],
        &[("STACKBENCH_VALIDATE_BUDGET_S", "0.001")],
    );
    assert!(!verdict.is_null(), "{err}");
    assert_schema(&verdict);
    assert_ne!(code, Some(2), "{err}");
    assert!(
        err.contains("==> validate: level 1 (") && err.contains("budget 0.001 s"),
        "{err}"
    );
    assert!(
        err.contains("warning: level 1 took") && err.contains("over its budget of 0.001 s"),
        "{err}"
    );
    assert_eq!(verdict["level"]["level"], 1);
    assert_eq!(verdict["level"]["budget_s"], 0.001);
    assert_eq!(verdict["level"]["over_budget"], true);
    let wall_s = verdict["wall_s"].as_f64().expect("a wall time");
    assert!(wall_s > 0.001, "{wall_s}");
    assert!(
        verdict["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("over its budget"))),
        "{verdict:#}"
    );
    let mut measured = result_ids(&verdict, Some("measured"));
    measured.sort();
    assert_eq!(measured.len(), 3, "{measured:?}");
    assert_eq!(measured[0], LEVEL_1_GEMM);
    assert!(measured[1].starts_with("memory_bandwidth/cpu/copy/"));
    assert!(measured[2].starts_with("memory_bandwidth/cpu/triad/"));
    assert_eq!(
        measured[1].rsplit('/').next(),
        measured[2].rsplit('/').next()
    );
    // The level's sampling reached Criterion: 10 samples each.
    let runs: Vec<_> = std::fs::read_dir(dir.path().join("results/runs"))
        .unwrap()
        .collect();
    let run: Value =
        serde_json::from_slice(&std::fs::read(runs[0].as_ref().unwrap().path()).unwrap()).unwrap();
    assert_eq!(run["label"], "validate/level-1");
    for benchmark in run["benchmarks"].as_array().unwrap() {
        assert_eq!(benchmark["samples"]["iters"].as_array().unwrap().len(), 10);
    }
}
