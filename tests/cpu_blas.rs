//! The CPU BLAS GEMM ids (`gemm/cpu/blas_f32/...`, `blas_f64`) through the real gemm bench
//! executable in Criterion's `--test` mode: with a BLAS installed they run and are checked
//! against the float64 reference, their notes naming the library, its version and threads;
//! with `STACKBENCH_BLAS` naming a library that is not there they are skipped, the reason
//! naming that path. No BLAS here skips the first test with a message, and fails it under
//! `STACKBENCH_REQUIRE_TOOLS=1` (ci/test.sh sets it and installs libopenblas0-pthread).
//!
//! The bench executable is built in the bench profile (`cargo bench --no-run`, which
//! ci/test.sh runs before the tests, so here it only finds it).

use std::path::Path;
use std::process::Output;

#[path = "tool_support/mod.rs"]
#[allow(dead_code)] // its tool lookup: the BLAS is a library, not a command
mod tool_support;

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::{bench_executable, output_text};

/// The smallest quick-suite BLAS GEMM of `dtype`: cheap to check in full.
const SHAPE: &str = "512x512x512";

/// `gemm --bench --test ^id$` in the quick suite with `blas` as `STACKBENCH_BLAS` (unset
/// when `None`), writing into `home`; returns the output and the id's target-report entry.
fn run_test_mode(id: &str, blas: Option<&str>, home: &Path) -> (Output, serde_json::Value) {
    let exe = bench_executable("gemm");
    let mut command = std::process::Command::new(exe);
    command
        .args(["--bench", "--test", &format!("^{}$", regex::escape(id))])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("STACKBENCH_SUITE", "quick")
        .env("CRITERION_HOME", home)
        .env_remove("STACKBENCH_MEASURE")
        .env_remove("STACKBENCH_PROGRESS")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_FAIL_ID");
    match blas {
        Some(value) => command.env("STACKBENCH_BLAS", value),
        None => command.env_remove("STACKBENCH_BLAS"),
    };
    let output = command.output().expect("running the gemm bench");
    let report = home.join("stackbench/targets/gemm.json");
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&report)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", report.display(), output_text(&output))),
    )
    .expect("the target report is JSON");
    let entry = report["benchmarks"][id].clone();
    assert!(
        !entry.is_null(),
        "{id} is not in the target report:\n{report:#}\n{}",
        output_text(&output)
    );
    (output, entry)
}

#[test]
fn blas_gemms_run_checked_and_named_where_a_library_is_installed() {
    for dtype in ["f32", "f64"] {
        let home = tempfile::tempdir().unwrap();
        let id = format!("gemm/cpu/blas_{dtype}/{SHAPE}");
        let (output, entry) = run_test_mode(&id, None, home.path());
        if entry["outcome"] == "skipped" {
            let reason = entry["reason"].as_str().unwrap_or_default();
            assert!(
                reason.contains("no CPU BLAS found") && reason.contains("libopenblas.so.0"),
                "a skip names what was searched: {reason}"
            );
            tool_support::skipping(&format!(
                "no CPU BLAS for {id} (libopenblas0-pthread): {reason}"
            ));
            return;
        }
        assert!(output.status.success(), "{}", output_text(&output));
        assert_eq!(entry["outcome"], "measured", "{id}: {entry:#}");
        let notes = &entry["notes"];
        // Checked before it was timed: the accuracy set of the float64 comparison.
        let accuracy = &notes["accuracy"];
        assert_eq!(accuracy["dtype"], dtype, "{id}: {notes:#}");
        assert_eq!(
            accuracy["elements"],
            512 * 512,
            "{id}: checked in full: {notes:#}"
        );
        let kernel = notes["kernel"].as_str().unwrap_or_default();
        assert!(kernel.starts_with("CPU BLAS "), "{id}: {kernel}");
        let blas = &notes["blas"];
        assert!(
            blas["library"].as_str().is_some_and(|l| !l.is_empty()),
            "{id}: {notes:#}"
        );
        assert!(blas["vendor"].is_string(), "{id}: {notes:#}");
        // The library's thread count was set to the own kernels' (every CPU here).
        if blas["threads"].is_u64() {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            assert_eq!(notes["threads"], blas["threads"], "{id}: {notes:#}");
            assert_eq!(blas["threads"], cpus as u64, "{id}: {notes:#}");
        }
    }
}

#[test]
fn a_named_library_that_is_not_there_is_a_skip_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let missing = "/nonexistent/libstackbench-no-blas.so";
    let id = format!("gemm/cpu/blas_f32/{SHAPE}");
    let (output, entry) = run_test_mode(&id, Some(missing), home.path());
    assert!(
        output.status.success(),
        "a skip is not a failure: {}",
        output_text(&output)
    );
    assert_eq!(entry["outcome"], "skipped", "{entry:#}");
    let reason = entry["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!("STACKBENCH_BLAS={missing}"))
            && reason.contains("apt-get install libopenblas0"),
        "{reason}"
    );
    // The own kernel of the same shape is not affected by the BLAS's absence.
    let own = format!("gemm/cpu/f32/{SHAPE}");
    let (output, entry) = run_test_mode(&own, Some(missing), home.path());
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(entry["outcome"], "measured", "{entry:#}");
    let kernel = entry["notes"]["kernel"].as_str().unwrap_or_default();
    assert!(kernel.contains("own kernels, not a BLAS"), "{kernel}");
}
