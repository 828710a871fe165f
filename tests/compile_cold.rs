//! The compile family's readings are compiles, not cache hits: every sample is checked to
//! have compiled, and the counts of compiles asked for and shown agree.
//!
//! - NVRTC, for real, from NVIDIA's `nvidia-cuda-nvrtc` wheel in the component virtualenv
//!   (`STACKBENCH_PYTHON`, else `.venv-components` at the repository root). Without it the
//!   test says it skips, unless CI expects the virtualenv (`STACKBENCH_REQUIRE_COMPONENTS=1`
//!   or `STACKBENCH_REQUIRE_NVRTC=1`): then a missing wheel fails it.
//! - Triton and `torch.compile`, for real, through `scripts/components/compile.py` and the
//!   runner's count check (the same loop `cargo bench --bench compile` runs).

mod components_support;

use components_support::{Outcome, Recorder, explicit, venv_python};
use stackbench::backend::TimedWorkload;
use stackbench::backend::cuda::compile::{NvrtcCompile, compile_once, nvrtc_missing_reason};
use stackbench::backend::cuda::loader::{self, LibrarySpec};
use stackbench::components::RunnerConfig;
use stackbench::components::compile::run_compiler;
use stackbench::workload::Suite;
use stackbench::workload::compile::{
    self, NvrtcOutput, PROVEN_NOTE, REQUESTED_NOTE, TORCH_COMPILE, TRITON, python_cases,
};
use std::ffi::CString;

fn required() -> bool {
    ["STACKBENCH_REQUIRE_NVRTC", "STACKBENCH_REQUIRE_COMPONENTS"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| v == "1"))
}

/// Loads NVRTC from the test virtualenv's wheels (the bench finds them through
/// `STACKBENCH_PYTHON`); false, after saying why, when it is not there and not required.
fn nvrtc_here() -> bool {
    if let Some(python) = venv_python()
        && let Some(prefix) = loader::python_prefix(&python)
    {
        let dirs = loader::pip_wheel_dirs_in(&[prefix], "nvidia");
        for stem in ["nvrtc-builtins", "nvrtc"] {
            let spec = LibrarySpec {
                stem,
                majors: &["13", "12"],
            };
            loader::preload(spec, &dirs);
        }
    }
    match nvrtc_missing_reason() {
        None => true,
        Some(reason) => {
            assert!(!required(), "NVRTC is required here: {reason}");
            assert!(reason.contains(compile::NVRTC_PACKAGE), "{reason}");
            eprintln!("skipping: {reason}");
            false
        }
    }
}

fn note_u64(notes: &std::collections::BTreeMap<String, serde_json::Value>, key: &str) -> u64 {
    notes
        .get(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("no numeric '{key}' in {notes:?}"))
}

#[test]
fn every_nvrtc_sample_is_a_new_program_that_compiled_every_kernel() {
    if !nvrtc_here() {
        return;
    }
    for (output, arch, runs) in [
        (NvrtcOutput::Backend, "sm_90", [1, 2]),
        (NvrtcOutput::PtxOnly, "sm_80", [1, 1]),
    ] {
        let id = compile::nvrtc_id(output, arch);
        let mut workload =
            NvrtcCompile::prepare(&id, output, arch).unwrap_or_else(|e| panic!("{id}: {e}"));
        workload.verify().unwrap_or_else(|e| panic!("{id}: {e}"));
        let mut asked = 1;
        for iters in runs {
            let took = workload.run(iters).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(!took.is_zero());
            asked += iters;
        }
        let counts = workload.counts();
        assert_eq!((counts.requested, counts.proven), (asked, asked), "{id}");
        let notes = workload.notes();
        assert_eq!(note_u64(&notes, REQUESTED_NOTE), asked);
        assert_eq!(note_u64(&notes, PROVEN_NOTE), asked);
        assert_eq!(notes["check_after_timing"], "passed");
        assert!(note_u64(&notes, "ptx_bytes") > 100_000, "{notes:?}");
        // A real architecture runs NVRTC's assembler too; a virtual one stops at PTX.
        let cubin = note_u64(&notes, "cubin_bytes");
        assert_eq!(cubin > 0, output == NvrtcOutput::Backend, "{notes:?}");
        let flags = notes["nvrtc_flags"].as_str().unwrap();
        assert!(flags.contains(&output.nvrtc_arch(arch)), "{flags}");
        assert!(
            notes.contains_key("nvrtc"),
            "the library's version and file: {notes:?}"
        );
    }
}

#[test]
fn an_nvrtc_compile_that_fails_says_why_and_proves_nothing() {
    if !nvrtc_here() {
        return;
    }
    let broken = CString::new("extern \"C\" __global__ void k(float* x) { x[0] = nope; }").unwrap();
    let flags = ["--gpu-architecture=sm_90".to_owned()];
    let error = compile_once(&broken, &flags, true).unwrap_err();
    assert!(error.contains("nope"), "NVRTC's log: {error}");
    // A program with none of stackbench's kernels compiles, and the check refuses it.
    let empty =
        CString::new("extern \"C\" __global__ void other(float* x) { x[0] = 1.0f; }").unwrap();
    let (_, out) = compile_once(&empty, &flags, true).unwrap();
    let kernels = stackbench::backend::gpu::kernels::kernel_names();
    let why = stackbench::backend::cuda::compile::check_outputs(&out, &kernels, true).unwrap_err();
    assert!(why.contains("stream_triad"), "{why}");
}

/// Runs one Python compiler's quick cases through the real worker, or says it skips.
fn python_compiler(compiler: &str) -> Option<Recorder> {
    let python = venv_python()?;
    let interpreter = explicit(&python).map_err(|e| e.to_string());
    let mut recorder = Recorder::new();
    let cases = python_cases(compiler, Suite::Quick);
    run_compiler(
        &mut recorder,
        &interpreter,
        &RunnerConfig::default(),
        compiler,
        &cases,
    );
    assert_eq!(
        recorder.outcomes.len(),
        cases.len(),
        "{:?}",
        recorder.outcomes
    );
    Some(recorder)
}

/// Verify once, then runs of 1 and 3 (the recorder's): five compiles asked for.
const RECORDER_CALLS: u64 = 5;

#[test]
fn every_triton_sample_compiled_into_an_empty_cache() {
    let Some(recorder) = python_compiler(TRITON) else {
        return;
    };
    for (id, outcome) in &recorder.outcomes {
        let Outcome::Measured { notes, .. } = outcome else {
            panic!("{id}: {outcome:?} (triton comes with the component virtualenv's torch)");
        };
        assert_eq!(note_u64(notes, REQUESTED_NOTE), RECORDER_CALLS, "{id}");
        assert_eq!(note_u64(notes, PROVEN_NOTE), RECORDER_CALLS, "{id}");
        assert_eq!(notes["check_after_timing"], "passed");
        assert!(
            note_u64(notes, "kernel_binary_bytes") > 0,
            "{id}: {notes:?}"
        );
        // The cache hit verify provoked is far cheaper than any timed sample: the samples
        // were not hits.
        let hit = note_u64(notes, "cache_hit_ns");
        let fastest = note_u64(notes, "latency_p50_ns");
        assert!(
            hit * 5 < fastest,
            "{id}: a hit took {hit} ns, a sample {fastest} ns"
        );
    }
}

#[test]
fn torch_compile_cold_samples_miss_and_warm_samples_hit() {
    let Some(recorder) = python_compiler(TORCH_COMPILE) else {
        return;
    };
    for state in ["cold", "warm"] {
        let id = format!("compile/torch_compile/mlp/{state}");
        let notes = recorder.notes(&id);
        assert_eq!(note_u64(notes, REQUESTED_NOTE), RECORDER_CALLS, "{id}");
        assert_eq!(note_u64(notes, PROVEN_NOTE), RECORDER_CALLS, "{id}");
        assert_eq!(notes["check_after_timing"], "passed");
        let (misses, hits) = (
            note_u64(notes, "fxgraph_cache_misses"),
            note_u64(notes, "cache_hits"),
        );
        match state {
            "cold" => assert!(misses >= 1 && hits == 0, "{id}: {notes:?}"),
            _ => assert!(hits >= 1 && misses == 0, "{id}: {notes:?}"),
        }
    }
}
