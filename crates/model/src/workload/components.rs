//! The Python components stackbench measures in a user's own environment. The runner that
//! starts their workers is in stackbench-measure (`components`); the names live here, with
//! the other things that are measured, so the configuration that checks a suite's list and
//! the runner read one list.

/// Every component, in the order the suite runs them. Each is a worker script
/// `scripts/components/<name>.py`.
pub const COMPONENTS: &[&str] = &[
    "pytorch",
    "attention",
    "triton",
    "vllm",
    "deepspeed",
    "onnxruntime",
    "openvino",
    "migraphx",
    "tiny_gpt",
    "collectives",
];
