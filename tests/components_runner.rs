//! The runner against bad input: no Python, a `STACKBENCH_PYTHON` that does not exist,
//! Python without any of the packages, and fake workers that crash on import or in
//! `describe`, raise in `describe`, hang, print garbage, have a library print to stdout, die mid-run or compute a wrong result. Each
//! must give a clear message naming what went wrong, and the rest of the suite must run.
//!
//! Needs only a bare `python3` (no packages); without one these tests say so and pass.

mod components_support;

use components_support::*;
use stackbench::components::protocol::Op;
use stackbench::components::suite::run_suite_with;
use stackbench::components::{COMPONENTS, ComponentSession, RunnerConfig, Worker, WorkerError};
use std::time::Duration;

fn fixture_config() -> RunnerConfig {
    RunnerConfig {
        scripts_dir: fixtures_dir(),
        setup_timeout: Duration::from_secs(60),
        call_timeout: Duration::from_secs(60),
        ..RunnerConfig::default()
    }
}

/// The suite of the fake components `names` (tests/fixtures' workers) under a bare python3
/// with `config`; `None`, the test passing with the reason, where there is no python3.
fn run_fakes_with(config: &RunnerConfig, names: &[&str]) -> Option<Recorder> {
    let python = bare_python()?;
    let mut recorder = Recorder::new();
    run_suite_with(&mut recorder, Ok(python), config, names);
    Some(recorder)
}

/// [`run_fakes_with`] the fixture configuration.
fn run_fakes(names: &[&str]) -> Option<Recorder> {
    run_fakes_with(&fixture_config(), names)
}

/// The fake worker `name` (tests/fixtures/`name`.py) started under a bare python3 with the
/// fixture configuration; `None` as in [`run_fakes_with`].
fn fake_worker(name: &str) -> Option<Worker> {
    let python = bare_python()?;
    let script = fixtures_dir().join(format!("{name}.py"));
    Some(Worker::spawn_script(&python.path, name, &script, &fixture_config()).unwrap())
}

/// `id`, of a component beside a broken one, was measured: a broken worker stops only its
/// own component.
fn assert_measured(recorder: &Recorder, id: &str) {
    let outcome = recorder.get(id);
    assert!(
        matches!(outcome, Outcome::Measured { .. }),
        "{id}: {outcome:?}"
    );
}

#[test]
fn a_stackbench_python_that_does_not_exist_skips_every_component_naming_the_path() {
    let interpreter = explicit(std::path::Path::new("/no/such/dir/python3"));
    let mut recorder = Recorder::new();
    run_suite_with(
        &mut recorder,
        interpreter,
        &RunnerConfig::default(),
        COMPONENTS,
    );
    assert_eq!(recorder.outcomes.len(), COMPONENTS.len());
    for component in COMPONENTS {
        let reason = recorder.skipped(&format!("components/{component}/all/all"));
        assert!(
            reason.contains("STACKBENCH_PYTHON=/no/such/dir/python3 does not exist"),
            "{reason}"
        );
    }
}

#[test]
fn no_python_at_all_skips_every_component_with_one_clear_reason() {
    let empty = tempfile::tempdir().unwrap();
    let lookup = env_with_path(&empty.path().to_string_lossy());
    let interpreter = stackbench::components::Interpreter::discover_in(&lookup);
    let mut recorder = Recorder::new();
    run_suite_with(
        &mut recorder,
        interpreter,
        &RunnerConfig::default(),
        COMPONENTS,
    );
    for component in COMPONENTS {
        let reason = recorder.skipped(&format!("components/{component}/all/all"));
        assert!(reason.contains("no python3 found on PATH"), "{reason}");
    }
}

#[test]
fn python_without_any_package_skips_each_component_with_the_missing_import() {
    let Some(python) = bare_python() else {
        return;
    };
    // `-S` hides every site-packages folder: the interpreter has the standard library only.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = python_wrapper(dir.path(), &python.path, "-S", None);
    let mut recorder = Recorder::new();
    run_suite_with(
        &mut recorder,
        explicit(&wrapper),
        &RunnerConfig::default(),
        COMPONENTS,
    );
    assert_eq!(
        recorder.count(|o| !matches!(o, Outcome::Skipped(_))),
        0,
        "{:#?}",
        recorder.outcomes
    );
    for component in COMPONENTS {
        let (id, outcome) = recorder
            .outcomes
            .iter()
            .find(|(id, _)| id.starts_with(&format!("components/{component}/")))
            .unwrap_or_else(|| panic!("nothing recorded for {component}"));
        let Outcome::Skipped(reason) = outcome else {
            unreachable!()
        };
        assert!(reason.contains("is not installed in"), "{id}: {reason}");
        assert!(reason.contains("No module named"), "{id}: {reason}");
    }
    let torch = recorder.skipped("components/pytorch/matmul/f32_256x256x256");
    assert!(torch.starts_with("torch is not installed in"), "{torch}");
}

#[test]
fn a_worker_that_crashes_on_import_fails_with_its_stderr_and_the_rest_runs() {
    let Some(recorder) = run_fakes(&["crash_on_import", "library_prints"]) else {
        return;
    };
    // The worker died before answering: a broken worker, not "cannot run here".
    let reason = recorder.failed("components/crash_on_import/all/all");
    assert!(
        reason.contains("exited (exit status: 1) during 'describe'"),
        "{reason}"
    );
    assert!(
        reason.contains("stackbench_definitely_missing_package"),
        "{reason}"
    );
    assert!(
        reason.contains("crash_on_import: importing the stack"),
        "{reason}"
    );
    assert!(
        recorder
            .notes("components/library_prints/sum/n1000")
            .contains_key("latency_p50_ns")
    );
    assert_eq!(
        recorder.skipped("components/library_prints/gpu_only/n1"),
        "fake needs a GPU; none visible"
    );
}

#[test]
fn a_worker_that_crashes_in_describe_fails_with_its_stderr() {
    let Some(recorder) = run_fakes(&["crash_in_describe", "library_prints"]) else {
        return;
    };
    assert_eq!(
        recorder
            .outcomes
            .keys()
            .filter(|id| id.contains("crash_in_describe"))
            .count(),
        1
    );
    let error = recorder.failed("components/crash_in_describe/all/all");
    assert!(
        error.contains("exited (exit status: 9) during 'describe'"),
        "{error}"
    );
    assert!(
        error.contains("crash_in_describe: probing the device"),
        "{error}"
    );
    assert_measured(&recorder, "components/library_prints/sum/n1000");
}

#[test]
fn a_package_that_fails_inside_its_import_fails_the_component_with_the_traceback() {
    let Some(recorder) = run_fakes(&["raises_in_describe"]) else {
        return;
    };
    let error = recorder.failed("components/raises_in_describe/all/all");
    assert!(
        error.contains("fake_broken_package is installed in"),
        "{error}"
    );
    assert!(
        error.contains("ImportError: cannot import name 'Sentinel'"),
        "{error}"
    );
    // The traceback the worker logged comes with it, naming the file that raised.
    assert!(error.contains("last lines of its stderr"), "{error}");
    assert!(error.contains("fake_broken_package/__init__.py"), "{error}");
    assert!(!error.contains("is not installed"), "{error}");
}

#[test]
fn a_hanging_worker_times_out_is_killed_and_the_rest_runs() {
    let config = RunnerConfig {
        setup_timeout: Duration::from_secs(5),
        ..fixture_config()
    };
    let Some(recorder) = run_fakes_with(&config, &["hang", "library_prints"]) else {
        return;
    };
    let error = recorder.failed("components/hang/sum/n1000");
    assert!(
        error.contains("did not answer 'setup' within 5.0 s"),
        "{error}"
    );
    assert!(error.contains("process group was killed"), "{error}");
    assert!(error.contains("hang: about to hang in setup"), "{error}");
    let later = recorder.skipped("components/hang/sum/n5000");
    assert!(later.contains("worker died earlier"), "{later}");
    assert_measured(&recorder, "components/library_prints/sum/n5000");
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let Some(python) = bare_python() else {
        return;
    };
    let config = RunnerConfig {
        setup_timeout: Duration::from_secs(5),
        ..fixture_config()
    };
    let session = ComponentSession::start(&python, "hang", &config).unwrap();
    let grandchild = session.description().facts["grandchild_pid"]
        .as_u64()
        .unwrap() as u32;
    assert!(
        !process_gone(grandchild),
        "the grandchild should run before the timeout"
    );
    let offered = session.offered();
    let error = session
        .workload(&offered[0])
        .err()
        .expect("setup must time out");
    assert!(error.to_string().contains("within 5.0 s"), "{error}");
    assert!(
        process_gone(grandchild),
        "grandchild {grandchild} survived the group kill"
    );
    assert!(
        session
            .dead_reason()
            .unwrap()
            .contains("did not answer 'setup'")
    );
}

#[test]
fn dropping_a_worker_kills_its_group_without_panicking() {
    let Some(mut worker) = fake_worker("hang") else {
        return;
    };
    let description = worker.call(Op::Describe, Duration::from_secs(60)).unwrap();
    let grandchild = description["facts"]["grandchild_pid"].as_u64().unwrap() as u32;
    let pid = worker.pid();
    drop(worker);
    assert!(process_gone(pid), "worker {pid} survived drop");
    assert!(
        process_gone(grandchild),
        "grandchild {grandchild} survived drop"
    );
}

#[test]
fn garbage_on_stdout_is_logged_and_skipped_not_fatal() {
    let Some(mut worker) = fake_worker("garbage") else {
        return;
    };
    let description = worker.call(Op::Describe, Duration::from_secs(60)).unwrap();
    assert_eq!(description["component"], "garbage");
    // banner, stray JSON, progress line, wrong-id response
    assert_eq!(worker.stray_lines(), 4);
    let run = worker
        .call(Op::Run { iters: 5 }, Duration::from_secs(60))
        .unwrap();
    assert_eq!(run["elapsed_ns"], 5000);
    assert_eq!(worker.stray_lines(), 6);
    worker.shutdown(Duration::from_secs(10)).unwrap();

    let recorder = run_fakes(&["garbage"]).expect("python3 ran the worker above");
    let notes = recorder.notes("components/garbage/noop/x1");
    assert_eq!(notes["latency_p50_ns"], 1000);
}

#[test]
fn a_library_printing_to_stdout_cannot_reach_the_protocol_channel() {
    let Some(mut worker) = fake_worker("library_prints") else {
        return;
    };
    let timeout = Duration::from_secs(60);
    worker.call(Op::Describe, timeout).unwrap();
    worker
        .call(
            Op::Setup {
                benchmark: "sum".into(),
                parameters: "n1000".into(),
            },
            timeout,
        )
        .unwrap();
    worker.call(Op::Verify, timeout).unwrap();
    let run = worker.call(Op::Run { iters: 10 }, timeout).unwrap();
    assert_eq!(run["iters"], 10);
    assert!(run["elapsed_ns"].as_u64().unwrap() > 0);
    assert_eq!(
        worker.stray_lines(),
        0,
        "library output leaked into the channel"
    );
    std::thread::sleep(Duration::from_millis(200));
    let tail = worker.stderr_tail();
    assert!(tail.contains("C-level noise from a library"), "{tail}");
    assert!(tail.contains("python-level noise in setup"), "{tail}");
    worker.shutdown(timeout).unwrap();
}

#[test]
fn a_worker_dying_mid_run_fails_that_benchmark_and_skips_the_rest_of_its_component() {
    let Some(recorder) = run_fakes(&["dies_in_run", "library_prints"]) else {
        return;
    };
    let error = recorder.failed("components/dies_in_run/sum/n1000");
    assert!(
        error.contains("exited (exit status: 3) during 'run'"),
        "{error}"
    );
    assert!(error.contains("segfault-like exit now"), "{error}");
    assert!(
        recorder
            .skipped("components/dies_in_run/sum/n5000")
            .contains("died earlier")
    );
    assert_measured(&recorder, "components/library_prints/sum/n1000");
}

#[test]
fn a_wrong_result_fails_verification_and_is_never_timed() {
    let Some(recorder) = run_fakes(&["mismatch"]) else {
        return;
    };
    let error = recorder.failed("components/mismatch/sum/n1000");
    assert!(error.contains("wrong result"), "{error}");
    assert!(error.contains("expected 499500"), "{error}");
}

#[test]
fn a_reading_below_the_timers_resolution_fails_the_benchmark() {
    let Some(recorder) = run_fakes(&["frozen_clock"]) else {
        return;
    };
    let error = recorder.failed("components/frozen_clock/sum/n1000");
    assert!(
        error.contains("0 ns") && error.contains("below the timer's resolution"),
        "{error}"
    );
}

#[test]
fn a_missing_worker_script_is_named() {
    let Some(recorder) = run_fakes(&["no_such_component"]) else {
        return;
    };
    let reason = recorder.skipped("components/no_such_component/all/all");
    assert!(reason.contains("no_such_component.py"), "{reason}");
    assert!(reason.contains("not found"), "{reason}");
}

#[test]
fn a_worker_error_keeps_the_worker_alive() {
    let Some(mut worker) = fake_worker("library_prints") else {
        return;
    };
    let timeout = Duration::from_secs(60);
    let error = worker.call(Op::Run { iters: 1 }, timeout).unwrap_err();
    assert!(matches!(error, WorkerError::Failed { .. }), "{error}");
    assert!(
        error.to_string().contains("no benchmark is set up"),
        "{error}"
    );
    assert!(worker.call(Op::Describe, timeout).is_ok());
    worker.shutdown(timeout).unwrap();
}
