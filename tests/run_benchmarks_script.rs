//! `./run_benchmarks.sh` on bad input: each case must exit non-zero with a message that
//! says what was wrong, before any benchmark runs. Drives the real script.

mod schema_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The directory of this test build's `stackbench` and `analyze-trends`, which the script
/// runs (`STACKBENCH_BIN_DIR`) instead of building a release pair of its own: its build is
/// then the bench targets' alone, which ci/test.sh has made.
fn test_build_bin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_stackbench"))
        .parent()
        .unwrap()
}

fn run_script(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new(root.join("run_benchmarks.sh"));
    command.args(args).current_dir(root);
    command.env("STACKBENCH_BIN_DIR", test_build_bin_dir());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("running run_benchmarks.sh")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn help_documents_the_stable_flags() {
    let out = run_script(&["--help"], &[]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--quick",
        "--full",
        "--filter",
        "--label",
        "--baseline",
        "--list",
        "--help",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn unknown_suite_is_refused_by_flag_and_by_environment() {
    let out = run_script(&["--suite", "fulll"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown suite 'fulll'"),
        "{}",
        stderr(&out)
    );
    let out = run_script(&[], &[("STACKBENCH_SUITE", "huge")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown suite 'huge'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_binaries_directory_without_the_binaries_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().to_str().unwrap();
    let out = run_script(
        &["--targets", "gemm", "--list"],
        &[("STACKBENCH_BIN_DIR", empty)],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "STACKBENCH_BIN_DIR '{empty}' holds no executable stackbench"
        )),
        "{}",
        stderr(&out)
    );
    // A file of that name that does not run as the binary is refused too.
    let fake = dir.path().join("stackbench");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::copy(&fake, dir.path().join("analyze-trends")).unwrap();
    for name in ["stackbench", "analyze-trends"] {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.path().join(name);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = run_script(
        &["--targets", "gemm", "--list"],
        &[("STACKBENCH_BIN_DIR", empty)],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not run (--version failed)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unknown_option_and_target_are_refused() {
    let out = run_script(&["--fast"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown option '--fast'"));
    let out = run_script(&["--targets", "gemm,nope"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown bench target 'nope'"));
}

#[test]
fn a_filter_that_matches_nothing_is_an_error() {
    let out = run_script(
        &["--targets", "gemm", "--filter", "no-such-benchmark-xyz"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("matches no benchmark"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_suite_that_selects_nothing_is_an_error_naming_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stackbench.toml");
    std::fs::write(
        &config,
        "[suites.none]\ntargets = [\"memory_bandwidth\"]\ninclude = ['^no/such/benchmark$']\n",
    )
    .unwrap();
    let out = run_script(
        &["--suite", "none"],
        &[("STACKBENCH_CONFIG", config.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("suite 'none' selects no benchmark"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unwritable_results_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the directory should be: not writable even for root.
    let blocker = dir.path().join("results");
    std::fs::write(&blocker, "not a directory").unwrap();
    let results = blocker.join("runs");
    let out = run_script(
        &[
            "--targets",
            "gemm",
            "--filter",
            "gemm/cpu/f32/512x",
            "--results",
            results.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("results directory"),
        "{}",
        stderr(&out)
    );
}

/// Runs the script without `--results`, with a config whose `results_dir` is
/// `config_results` and the environment `env`, where the directory the script should pick
/// (`wanted`, under a regular file) cannot be created: it must refuse exactly that one,
/// which it can only know from where it was told.
fn refuses_the_results_dir_it_resolved(
    config_results: impl Fn(&Path) -> String,
    env: impl Fn(&Path) -> Vec<(String, String)>,
    wanted: impl Fn(&Path) -> PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "not a directory").unwrap();
    let config = dir.path().join("stackbench.toml");
    std::fs::write(
        &config,
        format!("results_dir = '{}'\n", config_results(&blocker)),
    )
    .unwrap();
    let env = env(&blocker);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run_script(
        &[
            "--targets",
            "gemm",
            "--filter",
            "gemm/cpu/f32/512x",
            "--config",
            config.to_str().unwrap(),
        ],
        &env,
    );
    let wanted = wanted(&blocker);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("results directory '{}'", wanted.display())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn without_results_the_configs_results_dir_is_used() {
    refuses_the_results_dir_it_resolved(
        |blocker| blocker.join("from-config").display().to_string(),
        |_| Vec::new(),
        |blocker| blocker.join("from-config"),
    );
}

/// `$STACKBENCH_RESULTS_DIR` beats the config's `results_dir`, as in every other command
/// (flag > environment > file > default).
#[test]
fn without_results_the_environment_beats_the_configs_results_dir() {
    refuses_the_results_dir_it_resolved(
        |_| "from-config".to_string(),
        |blocker| {
            let dir = blocker.join("from-environment");
            vec![("STACKBENCH_RESULTS_DIR".into(), dir.display().to_string())]
        },
        |blocker| blocker.join("from-environment"),
    );
}

#[test]
fn list_prints_ids_in_the_documented_scheme() {
    let out = run_script(
        &[
            "--list",
            "--targets",
            "gemm,memory_bandwidth",
            "--filter",
            "cpu/(f32|triad)/",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ids = String::from_utf8_lossy(&out.stdout);
    assert!(
        ids.lines().any(|l| l == "gemm/cpu/f32/2048x2048x2048"),
        "{ids}"
    );
    // A size in the ids' unit scheme (`512KiB`, `256MiB`, `2GiB`: the sizes follow this
    // machine's caches).
    assert!(
        ids.lines().any(|l| l
            .strip_prefix("memory_bandwidth/cpu/triad/")
            .is_some_and(|size| stackbench::workload::ids::parse_bytes_id(size).is_some())),
        "{ids}"
    );
    assert!(
        ids.lines()
            .all(|l| l.contains("cpu/f32/") || l.contains("cpu/triad/")),
        "{ids}"
    );
}

#[test]
fn a_failing_benchmark_is_reported_and_the_other_targets_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let criterion = dir.path().join("criterion");
    let results = dir.path().join("results");
    // The in-cache triad this machine's quick suite runs (its size follows the L2), and the
    // copy of the same size.
    let triad = stackbench::family::memory_bandwidth::cpu_in_cache_triad_id()
        .expect("the CPU backend opens");
    let size = triad.rsplit('/').next().unwrap().to_owned();
    let filter =
        format!("^(gemm/cpu/f(32|64)/512x512x512|memory_bandwidth/cpu/(copy|triad)/{size})$");
    let out = run_script(
        &[
            "--targets",
            "gemm,memory_bandwidth",
            "--filter",
            &filter,
            "--results",
            results.to_str().unwrap(),
        ],
        &[
            ("CRITERION_HOME", criterion.to_str().unwrap()),
            ("STACKBENCH_FAIL_ID", "^gemm/cpu/f32/512x512x512$"),
        ],
    );
    // Target output is teed to stdout; the script's own progress goes to stderr.
    let err = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("FAILED gemm/cpu/f32/512x512x512: "), "{err}");
    assert!(err.contains("gemm FAILED"), "{err}");
    assert!(
        err.contains("memory_bandwidth done"),
        "the next target must still run: {err}"
    );
    // The other gemm benchmark in the failing target ran too, and both records say so.
    let gemm: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(criterion.join("stackbench/targets/gemm.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        gemm["benchmarks"]["gemm/cpu/f32/512x512x512"]["outcome"],
        "failed"
    );
    assert_eq!(
        gemm["benchmarks"]["gemm/cpu/f64/512x512x512"]["outcome"],
        "measured"
    );
    let bandwidth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(criterion.join("stackbench/targets/memory_bandwidth.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        bandwidth["benchmarks"][triad.as_str()]["outcome"],
        "measured"
    );
    // Each bench target's record and the probe it wrote satisfy their published schemas.
    schema_support::assert_valid("target.schema.json", &gemm);
    schema_support::assert_valid("target.schema.json", &bandwidth);
    let probe = std::fs::read(criterion.join("stackbench/system.json"))
        .expect("the probe is written beside the output");
    schema_support::assert_valid(
        "system.schema.json",
        &serde_json::from_slice(&probe).expect("system.json is JSON"),
    );
    // The live progress file: the plan, every benchmark as it landed (with samples when
    // measured), and the end; then the summary page printed as text.
    let progress =
        stackbench::sidecar::progress::Progress::read(&criterion.join("stackbench/progress.jsonl"))
            .unwrap();
    assert_eq!(progress.total, Some(4), "{progress:?}");
    assert_eq!(progress.bad_lines, 0);
    assert!(progress.finished_unix_ms.is_some());
    let landed: Vec<(&str, &str)> = progress
        .landed
        .iter()
        .map(|l| (l.id.as_str(), l.outcome.as_str()))
        .collect();
    assert!(
        landed.contains(&("gemm/cpu/f32/512x512x512", "failed")),
        "{landed:?}"
    );
    assert!(landed.contains(&(triad.as_str(), "measured")), "{landed:?}");
    let live = stackbench::dashboard::live::live_run(&progress, None);
    assert_eq!(
        live.benchmarks.len(),
        3,
        "measured ones carry their samples"
    );
    assert!(live.benchmarks.iter().all(|b| b.samples.iters.len() >= 10));
    assert!(
        err.contains("── 8 Summary ──"),
        "the summary page ends the run: {err}"
    );
}

#[test]
fn a_config_suite_selects_its_targets_and_ids_by_flag_and_by_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = root.join("stackbench.example.toml");
    let example = example.to_str().unwrap();
    let by_flag = run_script(&["--suite", "smoke", "--config", example, "--list"], &[]);
    let by_env = run_script(
        &["--list"],
        &[
            ("STACKBENCH_SUITE", "smoke"),
            ("STACKBENCH_CONFIG", example),
        ],
    );
    for out in [by_flag, by_env] {
        assert!(out.status.success(), "{}", stderr(&out));
        let mut ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        ids.sort();
        // The triad past the caches is sized by this machine's LLC (256MiB on a 32 MiB L3,
        // 2GiB on a 300 MiB one): exactly one, and no in-cache point.
        assert_eq!(ids.len(), 2, "{ids:?} {}", stderr(&out));
        assert_eq!(ids[0], "gemm/cpu/f32/512x512x512", "{}", stderr(&out));
        let size = ids[1]
            .strip_prefix("memory_bandwidth/cpu/triad/")
            .unwrap_or_else(|| panic!("not the CPU triad: {ids:?}"));
        let bytes = stackbench::workload::ids::parse_bytes_id(size)
            .unwrap_or_else(|| panic!("{size}: not a size as ids write them"));
        assert!(bytes >= 256 << 20, "{size}: an in-cache triad, {ids:?}");
    }
    let out = run_script(&["--suite", "nosuch", "--config", example], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown suite 'nosuch'") && stderr(&out).contains("smoke"),
        "{}",
        stderr(&out)
    );
}

/// run_benchmarks.sh and the Slurm fleet's submit.sh take their known targets from
/// Cargo.toml (a list copied into submit.sh had fallen three targets behind): the refusal
/// of an unknown one names all of them, and each script accepts the newest ones. The family
/// table is Cargo.toml's `[[bench]]` list in order (`tests/structure.rs` checks that).
#[test]
fn both_scripts_know_every_bench_target_cargo_declares() {
    let targets = stackbench::workload::family::TARGETS;
    assert!(targets.len() >= 8, "{targets:?}");
    let known = format!("(known: {})", targets.join(" "));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let results = tempfile::tempdir().unwrap();
    let submit = Command::new(root.join("ci/slurm/submit.sh"))
        .args(["--results", results.path().to_str().unwrap()])
        .args(["--targets", "alloc,compile,models,nope"])
        .output()
        .expect("running submit.sh");
    let ours = run_script(&["--targets", "alloc,compile,models,nope"], &[]);
    for (script, out) in [("submit.sh", submit), ("run_benchmarks.sh", ours)] {
        assert_eq!(out.status.code(), Some(2), "{script}: {}", stderr(&out));
        let message = stderr(&out);
        assert!(
            message.contains(&format!("unknown bench target 'nope' {known}")),
            "{script}: {message}"
        );
    }
}

/// A relative `CRITERION_HOME` means the caller's directory, for the script and for the bench
/// executables alike (they run in crates/benches): the run lands there, its live progress
/// file gets every benchmark, and no benchmark warns that it could not append its progress.
#[test]
fn a_relative_criterion_home_is_the_callers_and_the_progress_file_fills() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The scratch directory as a path relative to the root (up to `/`, then down), wherever
    // the target directory is.
    let up: PathBuf = root.components().skip(1).map(|_| "..").collect();
    let relative = up
        .join(scratch.path().strip_prefix("/").unwrap())
        .join("criterion");
    let results = scratch.path().join("results");
    let triad = stackbench::family::memory_bandwidth::cpu_in_cache_triad_id()
        .expect("the CPU backend opens");
    let out = run_script(
        &[
            "--targets",
            "memory_bandwidth",
            "--filter",
            &format!("^{triad}$"),
            "--results",
            results.to_str().unwrap(),
        ],
        &[("CRITERION_HOME", relative.to_str().unwrap())],
    );
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains("cannot append to the progress file"), "{all}");
    let progress = stackbench::sidecar::progress::Progress::read(
        &root.join(&relative).join("stackbench/progress.jsonl"),
    )
    .unwrap();
    let landed: Vec<&str> = progress.landed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(landed, [triad.as_str()], "{progress:?}");
}
