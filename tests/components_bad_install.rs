//! Broken and absent installs through the real component workers: a package that is not
//! installed is a skip ("cannot run here"), a package that is installed but broken is a
//! failure with the exception, and an ONNX Runtime session that silently fell back to the
//! CPU fails the GPU id it was timed under. Each case puts a fake package first on the
//! worker's `PYTHONPATH` (through an interpreter wrapper), so it shadows a real install.
//!
//! The torch cases need only a bare `python3`; the ONNX Runtime case needs the CPU stack's
//! numpy and onnx (`STACKBENCH_PYTHON` or `.venv-components`, required in CI).

mod components_support;

use components_support::*;
use stackbench::components::RunnerConfig;
use stackbench::components::suite::run_suite_with;

/// Runs `components` with `python` and `fake` first on the import path.
fn run_with_fake(
    python: &std::path::Path,
    flags: &str,
    fake: Option<&str>,
    components: &[&str],
) -> Recorder {
    let dir = tempfile::tempdir().unwrap();
    let fake_dir = fake.map(fake_packages);
    let wrapper = python_wrapper(dir.path(), python, flags, fake_dir.as_deref());
    let mut recorder = Recorder::new();
    run_suite_with(
        &mut recorder,
        explicit(&wrapper),
        &RunnerConfig::default(),
        components,
    );
    recorder
}

#[test]
fn torch_whose_import_raises_oserror_fails_the_pytorch_component_with_that_message() {
    let Some(python) = bare_python() else {
        return;
    };
    let recorder = run_with_fake(&python.path, "", Some("broken_torch"), &["pytorch"]);
    assert_eq!(recorder.outcomes.len(), 1, "{:#?}", recorder.outcomes);
    let error = recorder.failed("components/pytorch/all/all");
    assert!(
        error.contains("torch is installed in")
            && error.contains(
                "OSError: libcudnn.so.9: cannot open shared object file: No such file or directory"
            ),
        "{error}"
    );
    // What the package printed before raising is kept (the stderr tail).
    assert!(
        error.contains("fake torch: loading libtorch_cuda.so"),
        "{error}"
    );
    assert!(!error.contains("not installed"), "{error}");
}

#[test]
fn torch_missing_one_of_its_own_dependencies_is_a_failure_not_an_absence() {
    let Some(python) = bare_python() else {
        return;
    };
    let recorder = run_with_fake(
        &python.path,
        "",
        Some("torch_missing_dependency"),
        &["pytorch", "attention"],
    );
    for component in ["pytorch", "attention"] {
        let error = recorder.failed(&format!("components/{component}/all/all"));
        assert!(
            error.contains("ModuleNotFoundError: No module named 'stackbench_fake_missing_sympy'"),
            "{error}"
        );
        assert!(error.contains("torch is installed in"), "{error}");
    }
}

#[test]
fn torch_absent_skips_the_pytorch_component_as_not_installed() {
    let Some(python) = bare_python() else {
        return;
    };
    // `-S` drops site-packages and the (empty) fake folder holds no torch: it cannot be found.
    let recorder = run_with_fake(&python.path, "-S", None, &["pytorch"]);
    assert!(!recorder.outcomes.is_empty());
    for (id, outcome) in &recorder.outcomes {
        let Outcome::Skipped(reason) = outcome else {
            panic!("{id}: expected a skip, got {outcome:?}");
        };
        assert!(
            reason.starts_with("torch is not installed in"),
            "{id}: {reason}"
        );
        assert!(reason.contains("No module named 'torch'"), "{id}: {reason}");
    }
    assert!(
        recorder
            .outcomes
            .contains_key("components/pytorch/matmul/f32_256x256x256")
    );
}

#[test]
fn onnxruntime_whose_cuda_provider_does_not_start_fails_the_cuda_ids() {
    let Some(python) = venv_python() else { return };
    let recorder = run_with_fake(&python, "", Some("ort_cpu_fallback"), &["onnxruntime"]);
    let cuda: Vec<_> = recorder
        .outcomes
        .keys()
        .filter(|id| id.starts_with("components/onnxruntime/transformer_block/cuda_"))
        .cloned()
        .collect();
    assert_eq!(cuda.len(), 4, "{:#?}", recorder.outcomes);
    for id in &cuda {
        let error = recorder.failed(id);
        assert!(
            error.contains("did not start CUDAExecutionProvider")
                && error.contains("['CPUExecutionProvider']"),
            "{id}: {error}"
        );
        // ORT's own log line saying why is in the failure.
        assert!(error.contains("libcublasLt.so.12"), "{id}: {error}");
    }
    // The CPU ids of the same fake really ran and were checked: the provider check does
    // not fail a session that got what it asked for.
    let notes = recorder.notes("components/onnxruntime/transformer_block/cpu_all_b1_s128");
    assert_eq!(notes["execution_provider"], "CPUExecutionProvider");
    assert_eq!(notes["device"], "cpu");
}
