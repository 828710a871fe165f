//! Profiles on demand through the real gemm bench executable: `STACKBENCH_PROFILE=perf`
//! re-runs a measured CPU GEMM under Linux perf after the measurement, the profile lands
//! under `<criterion>/stackbench/profiles/`, the target report links it, and `perf report`
//! reads it and names the GEMM's own code. A profiler that fails changes nothing about the
//! measurement or the exit code.
//!
//! Needs `perf` (Debian `linux-perf`, which ci/test.sh installs): skipped with a message
//! without it, a failure under `STACKBENCH_REQUIRE_TOOLS=1`. Where perf is installed but
//! `kernel.perf_event_paranoid` forbids recording, the test says so: it fails under
//! `STACKBENCH_REQUIRE_TOOLS=1` and prints an explicit SKIPPED naming the setting otherwise,
//! never a silent pass.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "tool_support/mod.rs"]
mod tool_support;

#[path = "schema_support/mod.rs"]
mod schema_support;

#[path = "profile_support/mod.rs"]
mod profile_support;

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::{bench_executable, output_text};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bench(exe: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(exe)
        .arg("--bench")
        .args(args)
        .current_dir(repo())
        .env("STACKBENCH_SUITE", "quick")
        .env("CRITERION_HOME", home)
        .env_remove("STACKBENCH_PROGRESS")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_MEASURE")
        .env_remove("STACKBENCH_PROFILE_FILTER")
        .envs(env.iter().copied())
        .output()
        .expect("running the bench executable")
}

/// The smallest CPU f32 GEMM of the quick suite (it lists sizes smallest first).
fn small_cpu_gemm(exe: &Path, scratch: &Path) -> String {
    let listing = bench(exe, scratch, &[], &["--list"]);
    assert!(listing.status.success(), "{}", output_text(&listing));
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": benchmark"))
        .find(|id| id.starts_with("gemm/cpu/f32/"))
        .unwrap_or_else(|| panic!("no gemm/cpu/f32 id listed:\n{}", output_text(&listing)))
        .to_owned()
}

fn target_report(home: &Path) -> serde_json::Value {
    let path = home.join("stackbench/targets/gemm.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let report: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    schema_support::assert_valid("target.schema.json", &report);
    report
}

/// Fast Criterion timing: the test checks the profile, not the figure.
const SHORT: &[&str] = &["--warm-up-time", "0.2", "--measurement-time", "0.5"];

#[test]
fn a_cpu_gemm_profiled_under_perf_is_written_linked_and_readable_by_perf_report() {
    if !tool_support::tool_present("perf", "--version") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    if !profile_support::perf_can_record(dir.path()) {
        return;
    }
    let exe = bench_executable("gemm");
    let id = small_cpu_gemm(&exe, &dir.path().join("list"));
    let home = dir.path().join("criterion");
    let filter = format!("^{}$", regex::escape(&id));
    let mut args = vec![filter.as_str()];
    args.extend_from_slice(SHORT);
    let run = bench(
        &exe,
        &home,
        &[
            ("STACKBENCH_PROFILE", "perf"),
            ("STACKBENCH_PROFILE_TIME", "2"),
        ],
        &args,
    );
    assert!(run.status.success(), "{}", output_text(&run));
    let report = target_report(&home);
    assert_eq!(
        report["benchmarks"][&id]["outcome"], "measured",
        "{report:#}"
    );
    let profile = &report["profiles"][&id];
    assert_eq!(
        profile["status"],
        "written",
        "{}\n{profile:#}",
        output_text(&run)
    );
    assert_eq!(profile["tool"], "perf");
    let command = profile["command"].to_string();
    assert!(
        command.contains("--profile-time") && !command.contains(".partial"),
        "{command}"
    );
    let path = PathBuf::from(profile["path"].as_str().expect("a path"));
    assert!(
        path.starts_with(home.join("stackbench/profiles")),
        "{}",
        path.display()
    );
    assert!(path.is_file() && path.metadata().unwrap().len() > 0);
    assert_eq!(
        path.file_name().unwrap().to_string_lossy(),
        format!("{}.perf.data", id.replace('/', "_"))
    );
    // No half-written leftovers beside it.
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    // perf reads it back and names the GEMM's own code among the hottest symbols.
    let symbols = profile_support::top_symbols(&path, 10);
    assert!(
        symbols.iter().any(|l| l.contains("gemm")),
        "perf report names no GEMM routine among the top symbols:\n{}",
        symbols.join("\n")
    );
}

/// A folder holding a `perf` that fails the way a refused perf does.
fn refusing_perf() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("perf");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Error: Access to performance monitoring is limited.' >&2\n\
         echo 'Consider adjusting /proc/sys/kernel/perf_event_paranoid setting' >&2\nexit 255\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn a_refused_profile_fails_the_profile_not_the_measurement_or_the_exit_code() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = bench_executable("gemm");
    let id = small_cpu_gemm(&exe, &dir.path().join("list"));
    let home = dir.path().join("criterion");
    let fake = refusing_perf();
    let path = format!(
        "{}:{}",
        fake.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let filter = format!("^{}$", regex::escape(&id));
    let mut args = vec![filter.as_str()];
    args.extend_from_slice(SHORT);
    let run = bench(
        &exe,
        &home,
        &[
            ("STACKBENCH_PROFILE", "perf"),
            ("STACKBENCH_PROFILE_TIME", "1"),
            ("PATH", &path),
        ],
        &args,
    );
    assert!(run.status.success(), "{}", output_text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("FAILED") && stderr.contains("perf_event_paranoid"),
        "{}",
        output_text(&run)
    );
    let report = target_report(&home);
    assert_eq!(report["benchmarks"][&id]["outcome"], "measured");
    let profile = &report["profiles"][&id];
    assert_eq!(profile["status"], "failed", "{profile:#}");
    let error = profile["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("lacks permission") && error.contains("kernel.perf_event_paranoid"),
        "{error}"
    );
    assert!(
        !home.join("stackbench/profiles").exists() || {
            std::fs::read_dir(home.join("stackbench/profiles"))
                .unwrap()
                .next()
                .is_none()
        }
    );
}

#[test]
fn an_unknown_profiler_is_bad_input_naming_the_variable() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let exe = bench_executable("gemm");
    let run = bench(
        &exe,
        dir.path(),
        &[("STACKBENCH_PROFILE", "vtune")],
        &["^gemm/cpu/f32/"],
    );
    assert_eq!(run.status.code(), Some(2), "{}", output_text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("STACKBENCH_PROFILE") && stderr.contains("vtune"),
        "{stderr}"
    );
}
