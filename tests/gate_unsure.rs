//! Drives the real `analyze-trends gate` to an unsure verdict on purpose, in a tiny
//! Criterion 0.8 crate written into a temporary git repository (built offline): the head's
//! `sum` does 3× the base's work in odd rounds and ⅓ of it in even ones (it counts its
//! round runs in a file named by `--head-env`), so the rounds disagree by far more than any
//! threshold and the verdict cannot be sure, whatever the machine's noise; `steady` beside it
//! is the same on both sides. Checks: after round 2 the gate projects that `--max-rounds`
//! cannot decide `sum` and stops measuring it (exit 3 naming it with its per-round changes,
//! the projection and the fix), while `steady` runs every round and is judged; a maintainer's acceptance
//! for the head SHA exits 0 and is recorded in comparison.json and the store; an
//! acceptance for another SHA is bad input before anything is built.
//!
//! And the load of other processes: the same commit on both sides, the head's round runs
//! beside four busy processes per CPU, must never read as a regression. The gate sees the
//! load in every round and holds the slowdown as unsure (exit 3), with the loads.
//!
//! The gates share one repository and take turns through a mutex, as in `gate_cli.rs`.

mod schema_support;

#[path = "gate_support/repo.rs"]
mod repo;
use repo::{
    EMPTY_LIB, Fixture, commit_tagged, git, prebuild, prebuild_current, probe_repo, shared, write,
};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

const BIN: &str = env!("CARGO_BIN_EXE_analyze-trends");

const BENCH: &str = r#"use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn sum(n: u64) -> u64 {
    (0..n).fold(0u64, |a, x| a.wrapping_add(black_box(x)))
}

fn units() -> u64 { 3 }

/// With GATE_TEST_HOGS set, a round run shares the machine with four busy `yes` per CPU:
/// other processes' work, as far as the gate can tell (they are never waited for).
fn hogs() -> Vec<std::process::Child> {
    if std::env::var_os("GATE_TEST_HOGS").is_none() || !std::env::args().any(|a| a == "--save-baseline") {
        return Vec::new();
    }
    let n = std::thread::available_parallelism().map_or(2, |n| n.get());
    (0..4 * n)
        .map(|_| {
            let mut yes = std::process::Command::new("yes");
            yes.stdout(std::process::Stdio::null());
            yes.spawn().expect("starting yes")
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let mut hogs = hogs();
    let units = units();
    c.bench_function("sum", |b| b.iter(|| sum(black_box(20_000 * units))));
    c.bench_function("steady", |b| b.iter(|| sum(black_box(40_000))));
    for hog in &mut hogs {
        let _ = hog.kill();
    }
}

criterion_group!(group, benches);
criterion_main!(group);
"#;

/// The head's work: 9 units in odd round runs, 1 in even ones (the gate's rounds pass
/// `--save-baseline`; nothing else counts).
const FLAKY_UNITS: &str = r#"fn units() -> u64 {
    let Ok(path) = std::env::var("UNSURE_COUNTER") else { return 3 };
    if !std::env::args().any(|a| a == "--save-baseline") { return 3 }
    let runs: u64 = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0) + 1;
    std::fs::write(&path, runs.to_string()).expect("counter file");
    if runs % 2 == 1 { 9 } else { 1 }
}"#;

fn create_repo() -> Fixture {
    let fixture = probe_repo("gate_unsure_probe", EMPTY_LIB, &[("work", BENCH)], "base");
    let repo = &fixture.repo;
    let flaky = BENCH.replace("fn units() -> u64 { 3 }", FLAKY_UNITS);
    assert_ne!(flaky, BENCH);
    write(&repo.join("benches/work.rs"), &flaky);
    commit_tagged(repo, "flaky");
    git(repo, &["checkout", "-q", "base"]);
    prebuild(repo);
    fixture
}

fn fixture() -> MutexGuard<'static, Fixture> {
    static FIXTURE: OnceLock<Mutex<Fixture>> = OnceLock::new();
    shared(&FIXTURE, create_repo)
}

/// Five full rounds, at most eight. `sum` goes odd, even (+200 %, −67 %), and there its
/// projection (about 15 rounds) stops it; `steady` alone runs round 3 and the rounds after.
/// (With `--max-rounds 3` a loaded machine's two disagreeing rounds can stop `steady` too,
/// rightly: the budget is that small.) Five, not three: on a 2-vCPU VM `steady` takes about
/// 15 µs in one process and about 26 in the next, whichever state the process lands in, and
/// three rounds in which the head happened to land slow and the base fast read as a
/// consistent +35 % (one CI run's gate rightly called that degraded, exit 1); with each
/// round's odds of that near ¼, five such rounds in a row are some sixteen times rarer.
fn gate(repo: &Path, out: &Path, extra: &[&str]) -> Output {
    let counter = out.join("round-runs");
    let sides = ["--base", "base", "--head", "flaky"];
    let rounds = ["--rounds", "5", "--max-rounds", "8", "--threshold", "25"];
    let head_env = format!("UNSURE_COUNTER={}", counter.display());
    let args: Vec<&str> = [&sides[..], &rounds, &["--head-env", &head_env], extra].concat();
    run_gate(repo, out, &args)
}

/// A gate with `args` (its sides and rounds) writing into `out`, with the short Criterion
/// timing, offline in `repo`, with none of the user's settings.
fn run_gate(repo: &Path, out: &Path, args: &[&str]) -> Output {
    repo::gate_command(BIN, repo, out)
        .args(args)
        .args(["--", "--warm-up-time", "0.2", "--measurement-time", "0.5"])
        .args(["--sample-size", "10"])
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn comparison(out: &Path) -> Value {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out.join("out/comparison.json")).unwrap()).unwrap();
    schema_support::assert_valid("comparison.schema.json", &doc);
    doc
}

/// The entry for `id` in one of comparison.json's lists (`comparisons`, `rounds`).
fn entry<'a>(doc: &'a Value, list: &str, id: &str) -> Option<&'a Value> {
    doc[list].as_array().unwrap().iter().find(|r| r["id"] == id)
}

fn status_of(doc: &Value, id: &str) -> String {
    entry(doc, "comparisons", id).map_or("absent".into(), |r| r["status"].as_str().unwrap().into())
}

#[test]
fn rounds_that_disagree_make_the_gate_unsure_exit_3_with_the_rounds_and_the_fix() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    let result = gate(&f.repo, out.path(), &[]);
    assert_eq!(result.status.code(), Some(3), "{}", text(&result));
    let doc = comparison(out.path());
    assert_eq!(status_of(&doc, "sum"), "inconclusive", "{doc:#}");
    assert!(doc.get("accepted_unsure").is_none(), "{doc:#}");
    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).unwrap();
    assert!(md.contains("**UNSURE:"), "{md}");
    let section = md
        .split("**Unsure (exit 3, not a pass)")
        .nth(1)
        .unwrap_or_else(|| panic!("no unsure section: {md}"));
    let line = section
        .lines()
        .find(|l| l.starts_with("- 🟡 `sum`"))
        .unwrap_or_else(|| panic!("sum not listed: {section}"));
    assert!(
        line.contains("the rounds disagree") && line.contains("over 2 round(s), sd "),
        "{line}"
    );
    assert!(
        line.contains("stopped after round 2, not measured again: rounds disagree by sd ")
            && line.contains("rounds would be needed for 25 % (--max-rounds 8)"),
        "{line}"
    );
    let stopped = &doc["rounds_spread"]["stopped"];
    assert_eq!(stopped.as_array().map(Vec::len), Some(1), "{doc:#}");
    assert_eq!(
        (&stopped[0]["id"], &stopped[0]["rounds"]),
        (&"sum".into(), &2.into())
    );
    assert!(
        stopped[0]["rounds_needed"].as_u64().unwrap_or(u64::MAX) > 8,
        "{stopped:#}"
    );
    // Stopped, it ran in two rounds only; `steady` beside it ran every full round (and
    // any extra one it needed) and is judged.
    let rounds_of =
        |id: &str| entry(&doc, "rounds", id).map_or(0, |r| r["rounds"].as_array().unwrap().len());
    assert_eq!(rounds_of("sum"), 2, "{doc:#}");
    assert!(rounds_of("steady") >= 5, "{doc:#}");
    assert_ne!(status_of(&doc, "steady"), "absent", "{doc:#}");
    // The head ran in round 3 and after, for `steady` alone.
    let head_runs = std::fs::read_to_string(out.path().join("round-runs")).unwrap();
    assert_eq!(
        head_runs.trim().parse::<usize>().ok(),
        Some(rounds_of("steady"))
    );
    let log = text(&result);
    assert!(
        log.contains("`sum` is unsure after round 2, not measured again: rounds disagree by sd"),
        "{log}"
    );
    assert!(section.contains("--cpus") && section.contains("--max-rounds"));
    assert!(section.contains("--measure instructions"), "{section}");
    // The exit code is explained where a user looks for it.
    let help = Command::new(BIN).args(["gate", "--help"]).output().unwrap();
    assert!(text(&help).contains("3 unsure"), "{}", text(&help));
}

#[test]
fn an_acceptance_for_the_head_exits_0_and_is_recorded_with_the_verdict() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    let head = git(&f.repo, &["rev-parse", "flaky"]);
    let label = format!("stackbench-accept-unsure:{}", &head[..7]);
    // `sum` alone: an acceptance covers an unsure verdict, and `steady` beside it could be
    // judged (even misjudged, on a runner whose rounds disagree by tens of percent) in a way
    // that exits 1 whatever was accepted; the first test covers the two side by side.
    let args = [
        "--filter",
        "^sum$",
        "--accept-unsure",
        &head[..7],
        "--accept-unsure-label",
        &label,
    ];
    let result = gate(&f.repo, out.path(), &args);
    assert_eq!(result.status.code(), Some(0), "{}", text(&result));
    let doc = comparison(out.path());
    assert_eq!(status_of(&doc, "sum"), "inconclusive", "{doc:#}");
    assert_eq!(
        doc["accepted_unsure"],
        serde_json::json!({"by_label": label, "sha": &head[..7]})
    );
    let md = std::fs::read_to_string(out.path().join("out/comparison.md")).unwrap();
    assert!(md.contains("Unsure, accepted"), "{md}");
    assert!(md.contains(&label), "{md}");
    let store = stackbench::results::RunStore::new(out.path().join("results"));
    let kept = store.comparisons().unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].verdict, "unsure, accepted");
    let detail: Value = serde_json::from_str(&kept[0].detail_json).unwrap();
    assert_eq!(detail["accepted_unsure"], doc["accepted_unsure"]);
}

#[test]
fn an_acceptance_for_another_commit_is_bad_input_before_anything_runs() {
    let f = fixture();
    let out = tempfile::tempdir().unwrap();
    let base = git(&f.repo, &["rev-parse", "base"]);
    let head = git(&f.repo, &["rev-parse", "flaky"]);
    let result = gate(&f.repo, out.path(), &["--accept-unsure", &base]);
    assert_eq!(result.status.code(), Some(2), "{}", text(&result));
    let message = text(&result);
    assert!(
        message.contains(&base) && message.contains(&head),
        "{message}"
    );
    assert!(!out.path().join("round-runs").exists(), "a round ran");
    assert!(!out.path().join("out/comparison.json").exists());
    for bad in ["HEAD", "12345"] {
        let result = gate(&f.repo, out.path(), &["--accept-unsure", bad]);
        assert_eq!(result.status.code(), Some(2), "{bad}: {}", text(&result));
        assert!(
            text(&result).contains("not a commit SHA"),
            "{}",
            text(&result)
        );
    }
}

#[test]
fn a_slowdown_from_other_processes_load_on_the_head_is_unsure_never_a_regression() {
    let f = fixture();
    prebuild_current(&f.repo);
    // How much the hogs slow a round is chance (how the scheduler shares two CPUs among
    // nine processes): stop 38's third CI run saw the head's rounds at +389 % and +123 %.
    // After two rounds that disagree that much the interval still holds zero, and with
    // `--max-rounds 3` the projection stopped both benchmarks as unsure for their spread
    // before a third round could make them `degraded` by the rounds, which is where the
    // load rule acts: right, but the rule untried (in about one gate of three, locally).
    // So the gate may run 6 rounds, and runs up to three times: every run must keep
    // everything below, and one must hold.
    const ATTEMPTS: usize = 3;
    for attempt in 1..=ATTEMPTS {
        let out = tempfile::tempdir().unwrap();
        // The checked-out commit on both sides; the head's round runs share every CPU with
        // four busy processes, so its benchmarks take several times as long in every round.
        let args = [
            "--rounds",
            "2",
            "--max-rounds",
            "6",
            "--threshold",
            "25",
            "--head-env",
            "GATE_TEST_HOGS=1",
        ];
        let result = run_gate(&f.repo, out.path(), &args);
        let log = text(&result);
        let doc = comparison(out.path());
        // Every round saw the head's runs beside more than half of the CPUs' worth of
        // others' work, and the base's not.
        let loads = doc["rounds_spread"]["loads"]
            .as_array()
            .unwrap_or_else(|| panic!("{doc:#}"));
        assert!(loads.len() >= 2, "{doc:#}");
        for l in loads {
            let cpus = l["cpus"].as_f64().unwrap();
            assert!(
                l["head_foreign_cpus"].as_f64().unwrap() >= 0.5 * cpus,
                "the hogs were not seen: {l}"
            );
            assert_eq!(l["unbalanced_toward"], "head", "{l}");
        }
        // Nothing is called a regression, and the gate is unsure.
        for id in ["sum", "steady"] {
            assert_ne!(status_of(&doc, id), "degraded", "{id}: {doc:#}\n{log}");
        }
        assert_eq!(result.status.code(), Some(3), "{log}");
        // The slowdown the load made is held, with its reason.
        let held = doc["rounds_spread"]["load_held"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if held.is_empty() {
            let stopped = &doc["rounds_spread"]["stopped"];
            eprintln!("attempt {attempt}: nothing held; stopped for their spread: {stopped}");
            continue;
        }
        eprintln!("attempt {attempt}: held {}", held.len());
        for h in &held {
            assert_eq!(h["would_be"], "degraded", "{h}");
            assert_eq!(status_of(&doc, h["id"].as_str().unwrap()), "inconclusive");
        }
        assert!(log.contains("other processes kept"), "{log}");
        let md = std::fs::read_to_string(out.path().join("out/comparison.md")).unwrap();
        assert!(
            md.contains("the load explains the change as well as the code"),
            "{md}"
        );
        return;
    }
    panic!("in {ATTEMPTS} gates the load's slowdown was never held");
}
