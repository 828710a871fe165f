//! The model sweep's worker (`scripts/components/models.py`) driven through the crate's
//! component runner with a tiny plan (GPT-2 and BERT at 2 layers × 64 wide, 2 batch sizes ×
//! 2 sequence lengths) on the real CPU stack: torch, ONNX Runtime and OpenVINO measure every
//! metric of the design, positive and consistent (decode makes exactly `new_tokens`, each cell
//! reports the batch and sequence length it ran, the built models have the parameters the
//! closed-form counts give), and what a backend cannot run is a skip with its reason (vLLM
//! on a CPU, int8 on OpenVINO). A malformed plan fails the
//! worker's describe with the file and the key. A serve cell (requests at a rate, goodput)
//! runs for real on torch and ONNX Runtime at a low rate with few requests, and is a reasoned
//! skip on OpenVINO.
//!
//! The plan and backend reach the worker through `STACKBENCH_MODELS_PLAN` and
//! `STACKBENCH_MODELS_BACKEND`, exported by an interpreter wrapper (tests never mutate
//! their own environment). Runs with the interpreter `STACKBENCH_PYTHON` names, else
//! `.venv-components/bin/python`; without either it says so and passes, unless
//! `STACKBENCH_REQUIRE_COMPONENTS=1` (CI) makes that a failure.

mod components_support;

use components_support::*;
use serde_json::{Value, json};
use stackbench::components::RunnerConfig;
use stackbench::components::suite::run_component;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const NEW_TOKENS: u64 = 8;
const BATCHES: [u64; 2] = [1, 4];
const SEQS: [u64; 2] = [16, 32];
const D: u64 = 64;
const LAYERS: u64 = 2;
const VOCAB: u64 = 1024;
const POSITIONS: u64 = 128;
const FFN: u64 = 4 * D;

/// GPT-2: token and position embeddings, per layer 12·d² + 13·d (fused QKV, output
/// projection, 4d MLP, two LayerNorms), the final LayerNorm; the LM head is tied.
fn gpt2_params() -> u64 {
    VOCAB * D + POSITIONS * D + LAYERS * (12 * D * D + 13 * D) + 2 * D
}

/// BERT: word, position and 2 token-type embeddings with their LayerNorm; per layer
/// Q, K, V, output (4·(d² + d)), two LayerNorms (4·d), the FFN (2·d·f + f + d); the pooler.
fn bert_params() -> u64 {
    let embeddings = VOCAB * D + POSITIONS * D + 2 * D + 2 * D;
    let layer = 4 * (D * D + D) + 4 * D + 2 * D * FFN + FFN + D;
    embeddings + LAYERS * layer + D * D + D
}

fn plan(precisions: &[&str]) -> Value {
    let mut cells = Vec::new();
    for precision in precisions {
        for (model, phases) in [
            ("ci-gpt2", &["prefill", "decode"][..]),
            ("ci-bert", &["forward"][..]),
        ] {
            for phase in phases {
                for batch in BATCHES {
                    for seq in SEQS {
                        cells.push(json!({"model": model, "precision": precision, "phase": phase, "batch": batch, "seq": seq}));
                    }
                }
            }
        }
    }
    json!({
        "version": 1,
        "device": "cpu",
        "new_tokens": NEW_TOKENS,
        "models": {
            "ci-gpt2": {
                "arch": "gpt2", "task": "decoder", "local_dir": null,
                "config": {"n_layer": LAYERS, "n_embd": D, "n_head": 4, "vocab_size": VOCAB,
                           "n_positions": POSITIONS, "bos_token_id": 0, "eos_token_id": 0},
                "params_expected": gpt2_params(), "flops_per_token": 2 * LAYERS * 12 * D * D
            },
            "ci-bert": {
                "arch": "bert", "task": "encoder", "local_dir": null,
                "config": {"num_hidden_layers": LAYERS, "hidden_size": D, "num_attention_heads": 4,
                           "intermediate_size": FFN, "vocab_size": VOCAB, "max_position_embeddings": POSITIONS},
                "params_expected": bert_params(), "flops_per_token": 2 * LAYERS * 12 * D * D
            }
        },
        "cells": cells
    })
}

/// Requests of one serve load run, and the rate they arrive at (requests/s): low, so a
/// tiny model on a shared CPU keeps up, and few, so a cell takes a few seconds.
const SERVE_REQUESTS: u64 = 8;
const SERVE_RATE: f64 = 4.0;

/// ci-gpt2 (the plan above's) in one serve cell: at most 2 requests at once, prompts of 16.
fn serve_plan() -> Value {
    let mut plan = plan(&["fp32"]);
    plan["models"].as_object_mut().unwrap().remove("ci-bert");
    plan["cells"] = json!([{"model": "ci-gpt2", "precision": "fp32", "phase": "serve",
                            "batch": 2, "seq": 16, "rate": SERVE_RATE}]);
    plan["serve"] = json!({"requests": SERVE_REQUESTS, "seed": 0, "slos": [
        {"text": "ttft<=2s", "metric": "ttft", "bound_ns": 2e9},
        {"text": "tpot<=200ms", "metric": "tpot", "bound_ns": 2e8}]});
    plan
}

/// A serve cell's load figures: bounded by what was offered and completed, every request
/// given exactly the fixed tokens, percentiles in order.
fn check_serve(id: &str, notes: &BTreeMap<String, Value>) {
    check_metrics(id, notes, gpt2_params());
    let figure = |key: &str| number(notes, id, key);
    assert_eq!(figure("offered_rps"), SERVE_RATE, "{id}");
    let (achieved, goodput) = (figure("achieved_rps"), figure("goodput_rps"));
    // 8 Poisson arrivals realise a rate around the offered one (seed 1's, the measured
    // run's: 8 over its 1.91 s of arrivals, 4.18/s); a run cannot complete faster than its
    // requests arrive.
    assert!(
        0.0 < achieved && achieved <= 8.0 / 1.91,
        "{id}: achieved {achieved}"
    );
    assert!(goodput <= achieved, "{id}: goodput {goodput} > {achieved}");
    let attainment = figure("slo_attainment");
    assert!((0.0..=1.0).contains(&attainment), "{id}: {attainment}");
    assert!((goodput - achieved * attainment).abs() < 1e-9 * achieved.max(1.0));
    // Verify's cold run is not kept; the one load run the timed calls needed is.
    assert_eq!(figure("requests_completed"), SERVE_REQUESTS as f64, "{id}");
    assert_eq!(figure("load_runs"), 2.0, "{id}");
    // Every completed request produced exactly NEW_TOKENS (the worker fails the cell
    // otherwise), so the output rate is completed x N over the elapsed time.
    let elapsed_s = figure("serve_elapsed_ns") / 1e9;
    let expected = SERVE_REQUESTS as f64 * NEW_TOKENS as f64 / elapsed_s;
    assert!(
        (figure("tokens_per_s") - expected).abs() < 1e-6 * expected,
        "{id}"
    );
    for prefix in ["ttft", "tpot", "request_e2e", "queue_wait"] {
        let p = |q: &str| figure(&format!("{prefix}_{q}_ns"));
        assert!(
            0.0 <= p("p50") && p("p50") <= p("p90") && p("p90") <= p("p99"),
            "{id}: {prefix} percentiles out of order"
        );
    }
    assert!(figure("ttft_p50_ns") < figure("request_e2e_p50_ns"), "{id}");
    assert_eq!(notes["serve_slos"], "ttft<=2s,tpot<=200ms", "{id}");
}

#[test]
fn a_serve_cell_reports_goodput_under_load_on_torch_and_onnxruntime() {
    let Some((python, dir)) = python_and_dir() else {
        return;
    };
    let plan = serve_plan().to_string();
    let id = "components/models/ci-gpt2-fp32-serve/b2_s16_r4";
    for backend in ["torch", "onnxruntime"] {
        let recorder = sweep(&python, dir.path(), backend, &plan);
        no_failures(backend, &recorder);
        check_serve(&format!("{backend} {id}"), recorder.notes(id));
    }
    let openvino = sweep(&python, dir.path(), "openvino", &plan);
    let reason = openvino.skipped(id);
    assert!(reason.contains("no request loop"), "{reason}");
}

/// Runs the worker on `backend` with `plan` (written into `dir`); the outcomes by id.
fn sweep(python: &Path, dir: &Path, backend: &str, plan: &str) -> Recorder {
    let plan_path = dir.join(format!("plan-{backend}.json"));
    std::fs::write(&plan_path, plan).expect("plan written");
    let wrapper = dir.join(format!("python-{backend}"));
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\nexport STACKBENCH_MODELS_PLAN='{}' STACKBENCH_MODELS_BACKEND='{backend}' STACKBENCH_TORCH_THREADS=1\nexec '{}' \"$@\"\n",
            plan_path.display(),
            python.display()
        ),
    );
    let interpreter = explicit(&wrapper).expect("the wrapper runs the venv's python");
    let mut recorder = Recorder::new();
    run_component(
        &mut recorder,
        &interpreter,
        "models",
        &RunnerConfig::default(),
    );
    recorder
}

fn number(notes: &BTreeMap<String, Value>, id: &str, key: &str) -> f64 {
    notes
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{id}: note {key} missing or not a number in {notes:?}"))
}

const POSITIVE: &[&str] = &[
    "latency_p50_ns",
    "latency_p90_ns",
    "latency_p99_ns",
    "e2e_p50_ns",
    "e2e_p90_ns",
    "e2e_p99_ns",
    "batch",
    "seq",
    "params",
    "flops_per_token",
    "memory_peak_bytes",
    "memory_avg_bytes",
];
const DECODE_POSITIVE: &[&str] = &[
    "ttft_p50_ns",
    "ttft_p90_ns",
    "ttft_p99_ns",
    "tpot_p50_ns",
    "tpot_p90_ns",
    "tpot_p99_ns",
];

/// Every metric of the design's list, present and positive.
fn check_metrics(id: &str, notes: &BTreeMap<String, Value>, params: u64) {
    for key in POSITIVE {
        assert!(number(notes, id, key) > 0.0, "{id}: {key} is not positive");
    }
    assert_eq!(number(notes, id, "params"), params as f64, "{id}");
    assert!(number(notes, id, "latency_p99_ns") >= number(notes, id, "latency_p50_ns"));
    assert!(number(notes, id, "memory_peak_bytes") >= number(notes, id, "memory_avg_bytes"));
    assert_eq!(notes["memory_method"], "cpu_rss_sampled", "{id}");
    for key in ["precision", "phase"] {
        assert!(notes[key].is_string(), "{id}: {key}");
    }
    match notes.get("energy_unavailable") {
        Some(reason) => assert!(
            reason.as_str().is_some_and(|r| !r.is_empty()),
            "{id}: {reason}"
        ),
        None => {
            assert!(number(notes, id, "energy_j_per_token") > 0.0, "{id}");
            assert!(notes["energy_method"].is_string(), "{id}");
        }
    }
    if notes["phase"] == "decode" {
        for key in DECODE_POSITIVE {
            assert!(number(notes, id, key) > 0.0, "{id}: {key} is not positive");
        }
        assert_eq!(number(notes, id, "new_tokens"), NEW_TOKENS as f64, "{id}");
        assert!(number(notes, id, "ttft_p50_ns") < number(notes, id, "e2e_p50_ns"));
    }
    assert!(number(notes, id, "tokens_per_s") > 0.0, "{id}");
}

/// Every measured cell's metrics, for the batch and sequence length the id names (the
/// tokens each call counts is `elements_per_call`, unit-tested in `test_models_worker.py`;
/// how fast batch 4 runs beside batch 1 is a benchmark's figure, not a test's).
fn check_measured(recorder: &Recorder, cells: &[(&str, &str, u64)]) {
    for (benchmark, _, params) in cells {
        for seq in SEQS {
            for batch in BATCHES {
                let id = format!("components/models/{benchmark}/b{batch}_s{seq}");
                let notes = recorder.notes(&id);
                check_metrics(&id, notes, *params);
                assert_eq!(number(notes, &id, "batch"), batch as f64, "{id}");
                assert_eq!(number(notes, &id, "seq"), seq as f64, "{id}");
            }
        }
    }
}

fn no_failures(backend: &str, recorder: &Recorder) {
    let failures: Vec<_> = recorder
        .outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .collect();
    assert!(failures.is_empty(), "{backend}: {failures:#?}");
}

fn python_and_dir() -> Option<(PathBuf, tempfile::TempDir)> {
    let python = venv_python()?;
    Some((python, tempfile::tempdir().expect("temp dir")))
}

#[test]
fn torch_measures_every_cell_with_every_metric() {
    let Some((python, dir)) = python_and_dir() else {
        return;
    };
    let recorder = sweep(&python, dir.path(), "torch", &plan(&["fp32"]).to_string());
    no_failures("torch", &recorder);
    let cells = [
        ("ci-gpt2-fp32-prefill", "prefill", gpt2_params()),
        ("ci-gpt2-fp32-decode", "decode", gpt2_params()),
        ("ci-bert-fp32-forward", "forward", bert_params()),
    ];
    check_measured(&recorder, &cells);
    assert_eq!(recorder.outcomes.len(), 12);
}

#[test]
fn the_exported_backends_measure_prefill_decode_and_forward_and_name_what_they_skip() {
    let Some((python, dir)) = python_and_dir() else {
        return;
    };
    let plan = plan(&["fp32", "int8"]).to_string();
    let cells = [
        ("ci-gpt2-fp32-prefill", "prefill", gpt2_params()),
        ("ci-gpt2-fp32-decode", "decode", gpt2_params()),
        ("ci-bert-fp32-forward", "forward", bert_params()),
    ];
    let ort = sweep(&python, dir.path(), "onnxruntime", &plan);
    no_failures("onnxruntime", &ort);
    check_measured(&ort, &cells);
    // ONNX Runtime's dynamic quantization is a real int8 path on the CPU.
    check_measured(
        &ort,
        &[
            ("ci-gpt2-int8-decode", "decode", gpt2_params()),
            ("ci-bert-int8-forward", "forward", bert_params()),
        ],
    );

    let openvino = sweep(&python, dir.path(), "openvino", &plan);
    no_failures("openvino", &openvino);
    check_measured(&openvino, &cells);
    let int8 = openvino.skipped("components/models/ci-bert-int8-forward/b4_s32");
    assert!(int8.contains("NNCF"), "{int8}");
}

#[test]
fn vllm_on_a_cpu_plan_is_a_reasoned_skip_for_every_cell() {
    let Some((python, dir)) = python_and_dir() else {
        return;
    };
    let recorder = sweep(&python, dir.path(), "vllm", &plan(&["fp32"]).to_string());
    assert_eq!(recorder.outcomes.len(), 12, "{:?}", recorder.outcomes);
    for (id, outcome) in &recorder.outcomes {
        match outcome {
            Outcome::Skipped(reason) => assert!(
                reason.contains("vLLM needs a CUDA or ROCm GPU; the plan's device is cpu"),
                "{id}: {reason}"
            ),
            other => panic!("{id}: expected a skip, got {other:?}"),
        }
    }
}

#[test]
fn a_malformed_plan_fails_describe_naming_the_file_and_the_key() {
    let Some((python, dir)) = python_and_dir() else {
        return;
    };
    let mut bad = plan(&["fp32"]);
    bad["cells"][3]["precision"] = json!("fp8");
    let recorder = sweep(&python, dir.path(), "torch", &bad.to_string());
    let error = recorder.failed("components/models/all/all");
    let path = dir.path().join("plan-torch.json");
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(
        error.contains("cells[3].precision: 'fp8' is not one of fp32, bf16, fp16, int8"),
        "{error}"
    );
}
