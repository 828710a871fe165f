//! The benchmark families, one entry each: the family's name (an id's first part and its
//! bench target, `benches/<name>.rs`), what an id's second part names (a device backend or
//! a Python component), how an id's value places it on a size axis, and how the
//! cross-hardware matrix labels its workloads. Id parsing (`<family>/<backend>/<function>/<value>`),
//! the size axis the charts draw and the list of bench targets all read this table, so a new
//! family (model sweeps, INT8, compile time, allocation) is one entry here, its bench file,
//! its `[[bench]]` in `Cargo.toml` and its line in `run_benchmarks.sh` (the tests check that
//! those agree with this table).

use super::ids::parse_bytes_id;
use std::fmt;

/// One benchmark family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The id's first part, and the bench target that measures the family.
    pub name: &'static str,
    /// What the id's second part names.
    pub runs_on: RunsOn,
    /// How the id's value places a benchmark on a size axis.
    pub size: SizeAxis,
    /// How the cross-hardware matrix names one workload of the family.
    pub label: Label,
}

/// What an id's second part names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsOn {
    /// A device backend (`cpu`, `cuda`, `rocm`): the same workload on two backends is one
    /// workload measured on two devices.
    Backend,
    /// A Python component (`torch_matmul`, `vllm`, ...): the component is part of the
    /// workload, and the device is whichever the run had.
    Component,
}

/// How an id's value places a benchmark on a size axis (before the log2 the charts draw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeAxis {
    /// A size in bytes as ids write it (`256MiB`).
    Bytes,
    /// `MxNxK`: the side of the cube of equal work, the cube root of M·N·K.
    CubeSide,
    /// `RxC`: the element count R·C.
    Elements,
    /// `b1_h8_s1024_d64`: the sequence length S.
    SequenceLength,
    /// Bytes if the value reads as a size, else a plain number (free-form values).
    BytesOrNumber,
    /// `b8_s512` (or `b8` where the input size is fixed): the tokens of one call, B·S (B).
    BatchTokens,
}

/// How the cross-hardware matrix names one workload of a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// One name for every workload of the family (`bandwidth`).
    Fixed(&'static str),
    /// A prefix and the id's function part (`GEMM f32`).
    WithFunction(&'static str),
    /// A prefix and the id's second part (`components/vllm`).
    WithRunsOn(&'static str),
}

impl Family {
    /// A family whose ids name a device backend second (or a runtime that stands for one),
    /// so one workload on two of them is one workload measured two ways.
    pub const fn on_backends(name: &'static str, size: SizeAxis, label: Label) -> Family {
        Family {
            name,
            runs_on: RunsOn::Backend,
            size,
            label,
        }
    }

    /// A family whose ids name a Python component (or a compiler) second, part of the
    /// workload; its values are free-form, and the matrix labels a workload
    /// `<label_prefix><component>`.
    pub const fn of_components(name: &'static str, label_prefix: &'static str) -> Family {
        Family {
            name,
            runs_on: RunsOn::Component,
            size: SizeAxis::BytesOrNumber,
            label: Label::WithRunsOn(label_prefix),
        }
    }
}

pub const GEMM: Family =
    Family::on_backends("gemm", SizeAxis::CubeSide, Label::WithFunction("GEMM "));

pub const MEMORY_BANDWIDTH: Family = Family::on_backends(
    "memory_bandwidth",
    SizeAxis::Bytes,
    Label::Fixed("bandwidth"),
);

pub const TENSOR_OPS: Family =
    Family::on_backends("tensor_ops", SizeAxis::Elements, Label::Fixed("tensor ops"));

pub const ATTENTION: Family = Family::on_backends(
    "attention",
    SizeAxis::SequenceLength,
    Label::Fixed("attention"),
);

pub const COMPONENTS: Family = Family::of_components("components", "components/");

/// Model sweeps: the id's second part is the runtime (torch, onnxruntime, openvino, vllm),
/// so one model cell on two runtimes is one workload measured two ways.
pub const MODELS: Family = Family::on_backends(
    "models",
    SizeAxis::BatchTokens,
    Label::WithFunction("model "),
);

/// Allocation: `alloc/<allocator>/<pattern>/<size>`, the value a block size in bytes; one
/// pattern on two allocators is one workload measured two ways.
pub const ALLOC: Family =
    Family::on_backends("alloc", SizeAxis::Bytes, Label::WithFunction("alloc "));

/// Compile time (issue 20): the id's second part is the compiler (`nvrtc`, `hiprtc`,
/// `triton`, `torch_compile`), part of the workload as a component is; values are free-form
/// (`sm_90`, `4096x1024_sm90`, `cold`), and the machine that compiled is the run's.
pub const COMPILE: Family = Family::of_components("compile", "compile/");

/// Every family, in the order `run_benchmarks.sh` runs their bench targets.
pub const FAMILIES: &[Family] = &[
    GEMM,
    MEMORY_BANDWIDTH,
    TENSOR_OPS,
    ATTENTION,
    COMPONENTS,
    MODELS,
    ALLOC,
    COMPILE,
];

/// The bench targets, one per family, in [`FAMILIES`]' order.
pub const TARGETS: [&str; FAMILIES.len()] = {
    let mut names = [""; FAMILIES.len()];
    let mut i = 0;
    while i < FAMILIES.len() {
        names[i] = FAMILIES[i].name;
        i += 1;
    }
    names
};

/// The family named `name`, if stackbench has it.
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

/// A benchmark id split into its four parts: `<family>/<backend>/<function>/<value>`.
/// The value keeps any further `/` (Criterion allows them in a value string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdParts<'a> {
    pub family: &'a str,
    pub backend: &'a str,
    pub function: &'a str,
    pub value: &'a str,
}

impl<'a> IdParts<'a> {
    /// Splits any id, stackbench's or foreign; missing parts are empty, so an id with fewer
    /// than four parts still reads (as itself) in every view.
    pub fn split(id: &'a str) -> IdParts<'a> {
        let mut parts = id.splitn(4, '/');
        let mut next = || parts.next().unwrap_or_default();
        IdParts {
            family: next(),
            backend: next(),
            function: next(),
            value: next(),
        }
    }

    /// An id with all four parts present and non-empty, else `None`.
    pub fn parse(id: &'a str) -> Option<IdParts<'a>> {
        let parts = IdParts::split(id);
        let all = [parts.family, parts.backend, parts.function, parts.value];
        all.iter().all(|p| !p.is_empty()).then_some(parts)
    }

    /// The family of the id, if it is one of stackbench's.
    pub fn family(&self) -> Option<&'static Family> {
        family(self.family)
    }
}

impl fmt::Display for IdParts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.family, self.backend, self.function, self.value
        )
    }
}

impl Family {
    /// The workload an id of this family measures, as (key, label): ids that differ only in
    /// their backend share a key, so the cross-hardware matrix sets their devices side by
    /// side; a component's id is its own workload.
    pub fn workload(&self, id: &IdParts<'_>) -> (String, String) {
        let key = match self.runs_on {
            RunsOn::Backend => format!("{}/{}/{}", id.family, id.function, id.value),
            RunsOn::Component => id.to_string(),
        };
        let label = match self.label {
            Label::Fixed(name) => name.to_owned(),
            Label::WithFunction(prefix) => format!("{prefix}{}", id.function),
            Label::WithRunsOn(prefix) => format!("{prefix}{}", id.backend),
        };
        (key, label)
    }
}

impl SizeAxis {
    /// The size a value stands for on this axis; `None` when the value does not read.
    pub fn size(self, value: &str) -> Option<f64> {
        match self {
            SizeAxis::Bytes => parse_bytes_id(value).map(|b| b as f64),
            SizeAxis::CubeSide => Some(dims(value)?.iter().product::<f64>().cbrt()),
            SizeAxis::Elements => Some(dims(value)?.iter().product()),
            SizeAxis::SequenceLength => sequence_length(value),
            SizeAxis::BytesOrNumber => parse_bytes_id(value)
                .map(|b| b as f64)
                .or_else(|| value.parse::<f64>().ok()),
            SizeAxis::BatchTokens => batch_tokens(value),
        }
    }
}

/// The x position of a benchmark on a size axis, as log2 of its family's size: `256MiB` →
/// 28, GEMM `MxNxK` → log2 of the cube root of M·N·K, `RxC` → log2(R·C), attention
/// `b_h_s_d` → log2(S). A foreign family reads its value as bytes or a number.
pub fn log2_size(family_name: &str, value: &str) -> Option<f64> {
    let axis = family(family_name).map_or(SizeAxis::BytesOrNumber, |f| f.size);
    let size = axis.size(value)?;
    (size > 0.0).then(|| size.log2())
}

/// The sequence length of an attention id value `b1_h8_s1024_d64`.
pub fn sequence_length(value: &str) -> Option<f64> {
    value
        .split('_')
        .find_map(|p| p.strip_prefix('s'))
        .and_then(|s| s.parse().ok())
}

/// The tokens of one model-sweep call: B·S for `b8_s512`, B for `b8`.
pub fn batch_tokens(value: &str) -> Option<f64> {
    let batch: f64 = value.split('_').next()?.strip_prefix('b')?.parse().ok()?;
    let seq = match value.split_once('_') {
        Some((_, rest)) => sequence_length(rest)?,
        None => 1.0,
    };
    Some(batch * seq)
}

fn dims(value: &str) -> Option<Vec<f64>> {
    let dims: Option<Vec<f64>> = value.split('x').map(|d| d.parse::<f64>().ok()).collect();
    dims.filter(|d| !d.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::attention::{self, AttentionKernel};
    use crate::workload::ids::{BenchId, format_bytes_id};
    use crate::workload::tensor_ops::{self, TensorOp};
    use crate::workload::transfer::{TRANSFER_BYTES, TransferKind};
    use crate::workload::{DType, StreamKernel, Suite, gemm, stream};

    /// Every id the workloads build, on every backend, in both suites, and the component
    /// ids the fixtures and workers carry.
    fn every_built_id() -> Vec<String> {
        let mut ids = Vec::new();
        for suite in [Suite::Quick, Suite::Full] {
            for backend in ["cpu", "cuda", "rocm", "vulkan"] {
                let shapes = [gemm::gpu_shapes(suite), gemm::cpu_shapes(suite)].concat();
                for shape in shapes {
                    for dtype in DType::ALL {
                        ids.push(gemm::bench_id(backend, dtype, shape).full());
                    }
                }
                for kernel in StreamKernel::ALL {
                    ids.push(stream::bench_id(backend, kernel, 256 << 20).full());
                }
                for kind in TransferKind::ALL {
                    let bytes = format_bytes_id(TRANSFER_BYTES);
                    let id = BenchId::new(MEMORY_BANDWIDTH.name, backend, kind.id(), bytes);
                    ids.push(id.full());
                }
                for shape in tensor_ops::shapes(tensor_ops::GPU_ROWS, suite.is_full()) {
                    for op in TensorOp::ALL {
                        ids.push(tensor_ops::bench_id(backend, op, DType::F32, shape).full());
                    }
                }
                let seq = attention::GPU_SEQ_LENS;
                for shape in attention::shapes(seq, seq, 8, 64, suite.is_full()) {
                    for kernel in AttentionKernel::ALL {
                        ids.push(attention::bench_id(backend, kernel, shape, DType::F16).full());
                    }
                }
                for &size in crate::workload::alloc::sizes(suite) {
                    for pattern in crate::workload::alloc::AllocPattern::ALL {
                        ids.push(crate::workload::alloc::bench_id(backend, pattern, size).full());
                    }
                }
                ids.push(BenchId::new(GEMM.name, backend, "all", "all").full());
            }
        }
        let components = [
            "components/tiny_gpt/prefill/b1_s128",
            "components/tiny_gpt/all/all",
            "components/attention/sdpa_flash/b4_h16_s2048_d64_bf16",
            "components/collectives/all_reduce/nccl_8r_1048576",
            "components/deepspeed/zero_step/stage3_ranks1_d1024_t4096",
            "models/torch/gpt2-small-bf16-prefill/b8_s512",
            "models/onnxruntime/ci-vit-fp32-forward/b4",
            "alloc/torch_cuda/out_of_order/1GiB",
            "alloc/cuda_async/interleaved/4KiB",
        ];
        ids.extend(components.map(String::from));
        ids.extend(crate::workload::compile::every_id());
        ids
    }

    #[test]
    fn every_built_id_parses_into_a_known_family_and_round_trips() {
        let ids = every_built_id();
        assert!(ids.len() > 100, "{}", ids.len());
        for id in &ids {
            let parts = IdParts::parse(id).unwrap_or_else(|| panic!("{id} does not parse"));
            assert!(parts.family().is_some(), "{id}: unknown family");
            assert_eq!(parts.to_string(), *id);
            assert_eq!(IdParts::split(id), parts);
        }
    }

    #[test]
    fn every_device_id_has_a_size_on_its_family_axis() {
        for id in every_built_id() {
            let parts = IdParts::split(&id);
            // Components' values are free-form (`b1_s128`); "all" is a whole-backend skip.
            let free_form = parts
                .family()
                .is_none_or(|f| f.runs_on == RunsOn::Component);
            if free_form || parts.value == "all" {
                continue;
            }
            let x = log2_size(parts.family, parts.value);
            assert!(x.is_some_and(f64::is_finite), "{id}: {x:?}");
        }
    }

    #[test]
    fn sizes_are_log2_of_bytes_elements_cube_side_or_sequence() {
        assert_eq!(log2_size("memory_bandwidth", "256MiB"), Some(28.0));
        assert_eq!(log2_size("gemm", "1024x1024x1024"), Some(10.0));
        assert_eq!(log2_size("tensor_ops", "256x4096"), Some(20.0));
        assert_eq!(log2_size("attention", "b1_h8_s1024_d64"), Some(10.0));
        assert_eq!(log2_size("components", "1KiB"), Some(10.0));
        assert_eq!(log2_size("someone_elses", "64"), Some(6.0));
        assert_eq!(log2_size("models", "b8_s512"), Some(12.0));
        assert_eq!(log2_size("models", "b16"), Some(4.0));
        assert_eq!(log2_size("alloc", "4KiB"), Some(12.0));
        assert_eq!(log2_size("models", "s512"), None);
        assert_eq!(log2_size("gemm", "odd"), None);
        assert_eq!(log2_size("memory_bandwidth", "0B"), None);
    }

    #[test]
    fn short_or_empty_parts_split_but_do_not_parse() {
        assert_eq!(IdParts::parse("gemm/cpu/f32"), None);
        assert_eq!(IdParts::parse("gemm//f32/8x8x8"), None);
        let parts = IdParts::split("gemm/cpu");
        assert_eq!(
            (parts.family, parts.backend, parts.function),
            ("gemm", "cpu", "")
        );
        let deep = IdParts::parse("components/vllm/decode/b1/s128").unwrap();
        assert_eq!(deep.value, "b1/s128");
        assert_eq!(deep.to_string(), "components/vllm/decode/b1/s128");
    }

    #[test]
    fn the_targets_are_the_family_names_once_each() {
        let mut sorted = TARGETS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), FAMILIES.len());
        for name in TARGETS {
            assert_eq!(family(name).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn a_workload_is_shared_across_backends_and_a_component_is_its_own() {
        let cpu = IdParts::parse("gemm/cpu/f32/64x64x64").unwrap();
        let cuda = IdParts::parse("gemm/cuda/f32/64x64x64").unwrap();
        assert_eq!(GEMM.workload(&cpu), GEMM.workload(&cuda));
        assert_eq!(GEMM.workload(&cpu).1, "GEMM f32");
        let vllm = IdParts::parse("components/torch_matmul/f16/1024").unwrap();
        assert_eq!(
            COMPONENTS.workload(&vllm),
            (
                "components/torch_matmul/f16/1024".to_string(),
                "components/torch_matmul".to_string()
            )
        );
    }
}
