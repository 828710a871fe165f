//! The real components in the CPU Python stack that `ci/setup_python_env.sh` installs
//! (torch, onnxruntime, onnx, openvino, numpy): PyTorch, SDPA attention, ONNX Runtime,
//! OpenVINO and the tiny GPT must produce checked measurements with their extra metrics;
//! Triton, vLLM, DeepSpeed and MIGraphX must each give a precise skip reason.
//!
//! Runs with the interpreter `STACKBENCH_PYTHON` names, else `.venv-components/bin/python`
//! at the repository root. Without either it says so and passes, unless
//! `STACKBENCH_REQUIRE_COMPONENTS=1` (which CI sets) makes that a failure.

mod components_support;

use components_support::*;
use stackbench::components::suite::run_suite_with;
use stackbench::components::{COMPONENTS, RunnerConfig};

fn number(notes: &std::collections::BTreeMap<String, serde_json::Value>, key: &str) -> f64 {
    notes
        .get(key)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("note {key} missing or not a number in {notes:?}"))
}

#[test]
fn the_cpu_stack_measures_what_it_has_and_names_what_it_lacks() {
    let Some(python) = venv_python() else { return };
    let interpreter = explicit(&python);
    let mut recorder = Recorder::new();
    // collectives launches torchrun; tests/components_collectives.rs covers it.
    let single_process: Vec<&str> = COMPONENTS
        .iter()
        .copied()
        .filter(|c| *c != "collectives")
        .collect();
    run_suite_with(
        &mut recorder,
        interpreter,
        &RunnerConfig::default(),
        &single_process,
    );
    let failures: Vec<_> = recorder
        .outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");

    check_pytorch(&recorder);
    check_attention(&recorder);
    check_onnx_runtimes(&recorder);
    check_tiny_gpt(&recorder);
    check_precise_skips(&recorder);
}

fn check_pytorch(recorder: &Recorder) {
    for id in [
        "components/pytorch/matmul/f32_256x256x256",
        "components/pytorch/matmul/bf16_1024x1024x1024",
        "components/pytorch/conv2d/f32_n4_c64_h56_k64_r3_s1",
        "components/pytorch/mlp_fwd_bwd/f32_t256_d512",
    ] {
        let notes = recorder.notes(id);
        assert!(number(notes, "latency_p50_ns") > 0.0, "{id}");
        assert!(
            number(notes, "latency_p99_ns") >= number(notes, "latency_p50_ns"),
            "{id}"
        );
        assert!(number(notes, "tflops_at_p50") > 0.0, "{id}");
        assert_eq!(notes["device"], "cpu");
        assert!(notes["torch_version"].is_string());
    }
    let transfer = recorder.skipped("components/pytorch/transfer/h2d_pinned_64MiB");
    assert!(
        transfer.contains("torch.cuda.is_available() is False"),
        "{transfer}"
    );
}

fn check_attention(recorder: &Recorder) {
    let shape = "b2_h8_s512_d64_f32";
    let materialized = recorder.notes(&format!("components/attention/materialized/{shape}"));
    let math = recorder.notes(&format!("components/attention/sdpa_math/{shape}"));
    let default = recorder.notes(&format!("components/attention/sdpa_default/{shape}"));
    for notes in [materialized, math, default] {
        assert!(number(notes, "tflops_at_p50") > 0.0);
        assert!(notes.contains_key("peak_memory_bytes"));
    }
    // The S×S scores and probabilities of 2·8 heads in f32: at least 16 MiB live at once.
    assert!(
        number(materialized, "peak_memory_bytes") >= (16 << 20) as f64,
        "{materialized:?}"
    );
    let flash_attn = recorder.skipped(&format!("components/attention/flash_attn/{shape}"));
    assert!(
        flash_attn.contains("flash_attn is not installed in"),
        "{flash_attn}"
    );
}

fn check_onnx_runtimes(recorder: &Recorder) {
    let node_count = |level: &str| {
        let notes = recorder.notes(&format!(
            "components/onnxruntime/transformer_block/cpu_{level}_b1_s128"
        ));
        assert!(number(notes, "tokens_per_s") > 0.0);
        assert!(number(notes, "optimization_time_ns") > 0.0);
        number(notes, "graph_nodes_after")
    };
    let disabled = node_count("disable");
    assert_eq!(
        disabled,
        number(
            recorder.notes("components/onnxruntime/transformer_block/cpu_disable_b1_s128"),
            "graph_nodes_before"
        )
    );
    assert!(node_count("basic") <= disabled);
    assert!(node_count("all") < disabled, "ORT_ENABLE_ALL fused nothing");
    let openvino = recorder.notes("components/openvino/transformer_block/cpu_b1_s128");
    assert!(number(openvino, "compile_time_ns") > 0.0);
    assert!(number(openvino, "graph_nodes_after") > 0.0);
    assert!(number(openvino, "latency_p90_ns") > 0.0);
}

fn check_tiny_gpt(recorder: &Recorder) {
    for batch in [1, 4] {
        let generate = recorder.notes(&format!("components/tiny_gpt/generate/b{batch}_s128_n32"));
        let ttft = number(generate, "ttft_p50_ns");
        let e2e = number(generate, "e2e_p50_ns");
        assert!(ttft > 0.0 && ttft < e2e, "TTFT {ttft} vs E2E {e2e}");
        assert!(number(generate, "tpot_p50_ns") > 0.0);
        assert!(number(generate, "tokens_per_s") > 0.0);
        let prefill = recorder.notes(&format!("components/tiny_gpt/prefill/b{batch}_s128"));
        assert!(number(prefill, "prefill_tokens_per_s") > 0.0);
    }
}

fn check_precise_skips(recorder: &Recorder) {
    let triton = recorder.skipped("components/triton/vector_add/triton_16777216");
    assert!(
        triton.contains("needs a CUDA or ROCm GPU")
            || triton.contains("triton is not installed in"),
        "{triton}"
    );
    let vllm = recorder.skipped("components/vllm/offline/b1_in128_out128");
    assert!(
        vllm.contains("vLLM needs a CUDA GPU; none visible"),
        "{vllm}"
    );
    let deepspeed = recorder.skipped("components/deepspeed/zero_step/stage3_ranks1_d1024_t4096");
    assert!(
        deepspeed.contains("deepspeed is not installed in"),
        "{deepspeed}"
    );
    let migraphx = recorder.skipped("components/migraphx/transformer_block/gpu_b1_s128");
    assert!(
        migraphx.contains("migraphx is not installed in"),
        "{migraphx}"
    );
}
