//! `stackbench sweep` through the real binary: bad input exits 2 naming the valid values,
//! and a sweep runs `cargo bench --bench models` with a fake worker (no torch): its run is
//! recorded with the ids, the compatibility map gives every cell's outcome and reason
//! (predicted out of memory, backend not installed), a crashed cell fails alone, and Ctrl-C
//! keeps the finished cells in a run marked partial.

mod schema_support;

use schema_support::{assert_valid, violations};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stackbench(args: &[&str], cwd: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stackbench"));
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .env_remove("STACKBENCH_MODELS_PLAN")
        .env_remove("CRITERION_HOME");
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn bad_axes_exit_2_and_name_the_valid_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("stackbench.toml"),
        "[sweeps.nightly]\nmodels = [\"ci-bert\"]\n",
    )
    .unwrap();
    for (args, expected) in [
        (
            vec!["--models", "gpt3"],
            "unknown model 'gpt3' (valid: gpt2-small, tinyllama-1.1b",
        ),
        (
            vec!["--precision", "fp32,fp8"],
            "unknown precision 'fp8' (valid: fp32, bf16, fp16, int8)",
        ),
        (
            vec!["--backend", "tensorrt"],
            "unknown backend 'tensorrt' (valid: torch, onnxruntime, openvino, vllm)",
        ),
        (
            vec!["--device", "tpu"],
            "unknown device 'tpu' (valid: cpu, cuda, rocm, mps, qnn)",
        ),
        (
            vec!["--batch", "0"],
            "batch: '0' is not a positive whole number",
        ),
        (
            vec!["--sweep", "weekly"],
            "unknown sweep 'weekly' (defined in the config: nightly)",
        ),
        (
            vec!["--rate", "0"],
            "rate: '0' is not a request rate (a number of requests/s from 0.001 to 1000000)",
        ),
        (vec!["--rate", "2,-1"], "rate: '-1' is not a request rate"),
        (vec!["--rate", "x"], "rate: 'x' is not a request rate"),
        (
            vec!["--rate", "2", "--serve-slo", "ttft_p99<=1s"],
            "serve SLO 'ttft_p99<=1s': unknown metric 'ttft_p99'",
        ),
    ] {
        let mut all = vec!["sweep"];
        all.extend(args.iter().copied());
        let out = stackbench(&all, dir.path()).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    let bad_file = dir.path().join("bad.toml");
    std::fs::write(&bad_file, "[sweeps.x]\nprecision = [\"fp4\"]\n").unwrap();
    let out = stackbench(
        &[
            "sweep",
            "--sweep",
            "x",
            "--config",
            bad_file.to_str().unwrap(),
        ],
        dir.path(),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("sweeps.x.precision"),
        "{}",
        text(&out.stderr)
    );
}

/// `stackbench sweep ARGS --print-plan`, which must succeed; the plan, checked against its
/// schema.
fn print_plan(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut all = args.to_vec();
    all.push("--print-plan");
    let out = stackbench(&all, dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("models-plan.schema.json", &plan);
    plan
}

#[test]
fn the_plan_the_worker_reads_matches_its_schema() {
    let plan = print_plan(&[
        "sweep",
        "--models",
        "ci-gpt2,ci-whisper,tinyllama-1.1b",
        "--batch",
        "1,4",
        "--seq",
        "64",
        "--precision",
        "fp32,bf16",
        "--backend",
        "torch,onnxruntime",
        "--device",
        "cpu",
    ]);
    // ci-gpt2: 2 precisions x 2 phases x 2 batches; whisper (fixed input): 2 x 2 x 2; the same for tinyllama.
    assert_eq!(plan["cells"].as_array().unwrap().len(), 24);
    assert_eq!(
        plan["models"]["tinyllama-1.1b"]["params_expected"],
        1_100_048_384u64
    );
    assert_eq!(plan["models"]["ci-whisper"]["task"], "speech");
    let mut broken = plan.clone();
    broken["cells"][0]["precision"] = Value::from("fp8");
    broken.as_object_mut().unwrap().remove("new_tokens");
    assert!(violations("models-plan.schema.json", &broken).len() >= 2);
    assert!(plan.get("serve").is_none(), "no rates, no serve settings");
}

#[test]
fn rates_add_serve_cells_to_the_plan_in_its_schema() {
    let plan = print_plan(&[
        "sweep",
        "--models",
        "ci-gpt2,ci-bert",
        "--batch",
        "4",
        "--seq",
        "64",
        "--rate",
        "2,0.5",
        "--serve-slo",
        "ttft<=300ms,e2e<=2s",
        "--serve-requests",
        "10",
        "--device",
        "cpu",
    ]);
    let serve: Vec<&Value> = plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["phase"] == "serve")
        .collect();
    // ci-gpt2 only (BERT does not generate): one cell per rate.
    assert_eq!(serve.len(), 2, "{serve:?}");
    assert_eq!(serve[1]["rate"], 0.5);
    assert_eq!(plan["serve"]["requests"], 10);
    assert_eq!(plan["serve"]["slos"][0]["bound_ns"], 3e8);
    assert_eq!(plan["serve"]["slos"][1]["text"], "e2e<=2s");
    let mut broken = plan.clone();
    broken["cells"][0]["rate"] = Value::from(2.0);
    assert!(!violations("models-plan.schema.json", &broken).is_empty());
}

/// A directory with the fake worker and the protocol helper, a config with fast sampling
/// and the sweep `t`, and where results go.
struct Setup {
    dir: tempfile::TempDir,
    python: PathBuf,
}

impl Setup {
    fn new(sweep: &str) -> Option<Setup> {
        let python = which_python3()?;
        let dir = tempfile::tempdir().unwrap();
        let scripts = dir.path().join("scripts");
        std::fs::create_dir_all(scripts.join("lib")).unwrap();
        std::fs::copy(
            root().join("tests/fixtures/models/models.py"),
            scripts.join("models.py"),
        )
        .unwrap();
        std::fs::copy(
            root().join("scripts/components/lib/stackbench_worker.py"),
            scripts.join("lib/stackbench_worker.py"),
        )
        .unwrap();
        let config = format!(
            "[components.models]\nwarm_up_s = 0.05\nmeasurement_s = 0.1\nsample_size = 10\n\n[sweeps.t]\n{sweep}"
        );
        std::fs::write(dir.path().join("stackbench.toml"), config).unwrap();
        Some(Setup { dir, python })
    }

    fn command(&self, extra: &[&str]) -> Command {
        let config = self.dir.path().join("stackbench.toml");
        let results = self.dir.path().join("results");
        let mut args = vec![
            "sweep",
            "--sweep",
            "t",
            "--config",
            config.to_str().unwrap(),
            "--results",
            results.to_str().unwrap(),
        ];
        args.extend(extra);
        let mut command = stackbench(&args, self.dir.path());
        command
            .env(
                "STACKBENCH_COMPONENT_SCRIPTS",
                self.dir.path().join("scripts"),
            )
            .env("STACKBENCH_PYTHON", &self.python);
        command
    }

    /// The one run kept in the results directory.
    fn run(&self) -> Value {
        let runs: Vec<_> = std::fs::read_dir(self.dir.path().join("results/runs"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(runs.len(), 1);
        serde_json::from_slice(&std::fs::read(runs[0].path()).unwrap()).unwrap()
    }
}

fn which_python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file());
    if found.is_none() {
        let required = std::env::var("STACKBENCH_REQUIRE_COMPONENTS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "STACKBENCH_REQUIRE_COMPONENTS=1 but no python3 on PATH"
        );
        eprintln!("skipping: no python3 on PATH");
    }
    found
}

/// The compatibility map's line of `id` in a sweep's stdout.
fn map_line(stdout: &str, id: &str) -> String {
    stdout
        .lines()
        .find(|l| l.trim_start().starts_with(id))
        .unwrap_or_else(|| panic!("no line for {id} in\n{stdout}"))
        .to_owned()
}

fn measured_ids(run: &Value) -> Vec<String> {
    run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A sweep whose every cell is skipped (here: each predicted out of memory) measured
/// nothing: it is no pass. Exit 2 with the evidence rule's words, the map still printed,
/// and no run kept.
#[test]
fn a_sweep_that_measured_nothing_is_not_a_pass_and_keeps_no_run() {
    let sweep = "models = [\"gpt2-small\"]\nbatch = [1]\nseq = [16]\nmemory_limit_gib = 0.2\n";
    let Some(setup) = Setup::new(sweep) else {
        return;
    };
    let out = setup.command(&[]).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("nothing to judge"), "{stderr}");
    assert!(stdout.contains("out of memory"), "{stdout}");
    assert!(
        !setup.dir.path().join("results/runs").exists()
            || std::fs::read_dir(setup.dir.path().join("results/runs"))
                .unwrap()
                .next()
                .is_none(),
        "a sweep that measured nothing kept a run"
    );
}

#[test]
fn a_sweep_records_its_cells_and_prints_the_compatibility_map() {
    let sweep = "models = [\"ci-gpt2\", \"ci-vit\", \"gpt2-small\"]\nbatch = [1, 2]\nseq = [16]\n\
                 backend = [\"torch\", \"vllm\"]\nmemory_limit_gib = 0.2\ntimeout_s = 30\n";
    let Some(setup) = Setup::new(sweep) else {
        return;
    };
    let out = setup
        .command(&[])
        .env("FAKE_MODELS_CRASH", "ci-gpt2-fp32-decode/b1_s16")
        .env("FAKE_MODELS_MISSING", "vllm")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // One cell crashed: a failure, so exit 1, and everything else has its outcome.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let run = setup.run();
    assert_eq!(run["label"], "sweep/t");
    let measured = measured_ids(&run);
    for id in [
        "models/torch/ci-gpt2-fp32-prefill/b1_s16",
        "models/torch/ci-gpt2-fp32-prefill/b2_s16",
        "models/torch/ci-gpt2-fp32-decode/b2_s16",
        "models/torch/ci-vit-fp32-forward/b1",
        "models/torch/ci-vit-fp32-forward/b2",
    ] {
        assert!(
            measured.contains(&id.to_string()),
            "{id} not in {measured:?}\n{stderr}"
        );
    }
    assert_eq!(measured.len(), 5, "{measured:?}");
    let failed = run["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["id"], "models/torch/ci-gpt2-fp32-decode/b1_s16");
    assert!(
        stdout.contains(
            "compatibility map on cpu (20 cells: 5 measured, 1 failed, 14 skipped, 0 missing)"
        ),
        "{stdout}"
    );
    let line = |id: &str| map_line(&stdout, id);
    // Every device is a column: MPS and QNN say why there are no runs on this Linux machine,
    // in the output and in the run kept.
    assert!(stdout.contains("  cpu: swept\n"), "{stdout}");
    for (device, reason) in [
        ("mps", "MPS is not present on this machine"),
        ("qnn", "QNN is not present on this machine"),
    ] {
        assert!(
            stdout.contains(&format!("  {device}: absent: {reason}")),
            "{stdout}"
        );
        let notes = run["notes"].as_array().unwrap();
        assert!(
            notes.iter().any(|n| n
                .as_str()
                .unwrap()
                .starts_with(&format!("device column {device}: absent: {reason}"))),
            "{notes:?}"
        );
    }
    let oom = line("models/torch/gpt2-small-fp32-prefill/b1_s16");
    assert!(
        oom.contains("skipped") && oom.contains("out of memory (predicted 0."),
        "{oom}"
    );
    assert!(oom.contains("GiB of 0.2 GiB free on cpu"), "{oom}");
    let vllm = line("models/vllm/ci-vit-fp32-forward/b2");
    assert!(
        vllm.contains("skipped") && vllm.contains("vllm is not installed (fake)"),
        "{vllm}"
    );
    let prefill = line("models/torch/ci-gpt2-fp32-prefill/b1_s16");
    assert!(
        prefill.contains("measured") && prefill.contains("tokens/s"),
        "{prefill}"
    );
    // The measured notes carry the sweep's own (MFU against the probe's CPU peak).
    let notes = &run["targets"][0]["benchmarks"]["models/torch/ci-vit-fp32-forward/b1"]["notes"];
    assert!(notes["samples_per_s"].as_f64().unwrap() > 0.0, "{notes}");
    assert!(
        notes.get("mfu").is_some() || notes.get("mfu_unavailable").is_some(),
        "{notes}"
    );
}

/// Serve cells through the real sweep: their ids carry the rate, their load figures reach
/// the run's notes, and a backend or model that cannot serve is a skip with its reason.
#[test]
fn serve_cells_record_their_load_figures_and_skip_what_cannot_serve() {
    let sweep = "models = [\"ci-gpt2\", \"ci-t5\"]\nbatch = [2]\nseq = [16]\nrates = [4, 0.5]\n\
                 serve_slo = [\"ttft<=100ms\"]\nbackend = [\"torch\", \"openvino\"]\n";
    let Some(setup) = Setup::new(sweep) else {
        return;
    };
    let out = setup.command(&[]).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let run = setup.run();
    let measured = measured_ids(&run);
    for id in [
        "models/torch/ci-gpt2-fp32-serve/b2_s16_r4",
        "models/torch/ci-gpt2-fp32-serve/b2_s16_r0.5",
        "models/openvino/ci-gpt2-fp32-decode/b2_s16",
    ] {
        assert!(
            measured.contains(&id.to_string()),
            "{id} not in {measured:?}"
        );
    }
    let notes =
        &run["targets"][0]["benchmarks"]["models/torch/ci-gpt2-fp32-serve/b2_s16_r4"]["notes"];
    assert_eq!(notes["offered_rps"], 4.0, "{notes}");
    assert_eq!(notes["goodput_rps"], 3.0, "{notes}");
    assert_eq!(notes["serve_slos"], "ttft<=100ms", "{notes}");
    let line = |id: &str| map_line(&stdout, id);
    let openvino = line("models/openvino/ci-gpt2-fp32-serve/b2_s16_r4");
    assert!(
        openvino.contains("skipped") && openvino.contains("openvino has no request loop"),
        "{openvino}"
    );
    let t5 = line("models/torch/ci-t5-fp32-serve/b2_s16_r0.5");
    assert!(
        t5.contains("skipped") && t5.contains("decoder-only"),
        "{t5}"
    );
}

#[test]
fn ctrl_c_keeps_the_finished_cells_and_marks_the_run_partial() {
    let sweep = "models = [\"ci-bert\"]\nbatch = [1, 2, 3, 4, 5, 6, 7, 8]\nseq = [16]\n";
    let Some(setup) = Setup::new(sweep) else {
        return;
    };
    let log = setup.dir.path().join("workers.log");
    let child = setup
        .command(&[])
        .env("FAKE_MODELS_LOG", &log)
        .env("FAKE_MODELS_SLEEP_S", "0.02")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the worker runs (the bench target is built and started), let a cell or two
    // finish, then Ctrl-C the sweep alone: it passes the request on to its target.
    let started = Instant::now();
    while !log.exists() && started.elapsed() < Duration::from_secs(900) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out: Output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    let run = setup.run();
    assert_eq!(run["label"], "sweep/t (partial)");
    let notes: Vec<&str> = run["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("partial: the sweep was interrupted")),
        "{notes:?}"
    );
    let measured = measured_ids(&run);
    assert!(
        !measured.is_empty() && measured.len() < 8,
        "{measured:?}\n{stderr}"
    );
    assert!(stdout.contains("interrupted (Ctrl-C)"), "{stdout}");
}
