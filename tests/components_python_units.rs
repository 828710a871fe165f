//! Runs the Python unit checks of the component workers' helpers (`tests/python`, stdlib
//! `unittest`): import classification, pre-created CUDA events, the chunked attention
//! reference against the whole one, the SDPA and flash-attn probes, Triton's cold-cache
//! compile, vLLM's per-request times and the notes its chart reads, DeepSpeed's memory
//! phases on a fake allocator, the engine-memory sampler, torch's GPU detection,
//! ONNX Runtime's provider labels, the GPU-run and GPU-sweep checkers, and the model
//! sweep's plan reader, memory and energy windows and tiny-model build, decode and int8
//! quantization. They need the CPU stack's torch (and the triton it brings), so they run
//! with the same interpreter as `components_real` and are required in CI.

mod components_support;

use components_support::*;
use std::process::Command;

#[test]
fn the_python_unit_checks_pass_and_none_is_skipped() {
    let Some(python) = venv_python() else { return };
    let dir = repo_root().join("tests/python");
    let output = Command::new(&python)
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(&dir)
        .arg("-t")
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .expect("start the Python interpreter");
    // unittest reports on stderr.
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    let ran: usize = report
        .lines()
        .find_map(|line| {
            line.strip_prefix("Ran ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no 'Ran N tests' line in:\n{report}"));
    // Every file's checks were found (a file that fails to import counts as one error).
    assert!(ran >= 32, "only {ran} Python checks ran:\n{report}");
    assert!(!report.contains("skipped"), "{report}");
}
