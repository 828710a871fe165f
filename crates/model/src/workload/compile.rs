//! Compile time (`compile/<compiler>/<kernel>/<target>`): how long a cold compile takes of
//! what stackbench runs on a GPU, the cost a user pays on every start of a fresh process or
//! deploy. Four compilers, each with its own target axis:
//!
//! - `compile/nvrtc/<kernel>/<sm_XX>`: stackbench's own kernel source
//!   (`backend::gpu::kernels`), through NVRTC with the backend's own options. NVRTC needs no
//!   GPU or driver (it comes in NVIDIA's `nvidia-cuda-nvrtc` wheel), so these run in CI.
//! - `compile/hiprtc/<kernel>/<gfxNNN>`: the same source's HIP variant through hipRTC,
//!   where ROCm is installed.
//! - `compile/triton/<kernel>/<shape>_<target>`: the Triton kernels of the component tier
//!   (`scripts/components/lib/triton_kernels.py`), compiled for a named GPU target without a
//!   GPU (`triton.compile` with a `GPUTarget`).
//! - `compile/torch_compile/<model>/<cold|warm>`: the first call of a `torch.compile`d
//!   small model, on an empty cache (cold) and on a populated one (warm).
//!
//! A compile time means something only if the compile happened: a cache hit reads as a
//! huge speed-up. So every sample starts from a fresh cache (a new NVRTC program; a new
//! empty cache folder for Triton, Inductor and AMD's comgr), and every sample must show
//! that it compiled (output of nonzero size with every kernel in it, a cache folder that
//! was empty and is filled, Inductor's cache-miss counter); [`ColdCompiles`] keeps the
//! count, and a benchmark whose proven compiles fall short of its samples fails.
//! A warm `torch.compile` sample must instead show a cache hit.

use super::Suite;
use super::family::COMPILE;
use super::ids::BenchId;

/// The compilers, as the ids' second part.
pub const NVRTC: &str = "nvrtc";
pub const HIPRTC: &str = "hiprtc";
pub const TRITON: &str = "triton";
pub const TORCH_COMPILE: &str = "torch_compile";

/// The compilers whose compile runs in a Python worker (`scripts/components/compile.py`).
pub const PYTHON_COMPILERS: &[&str] = &[TRITON, TORCH_COMPILE];

/// The PyPI package that carries NVRTC, named in every skip for its absence.
pub const NVRTC_PACKAGE: &str = "nvidia-cuda-nvrtc";

/// The one compilation unit of stackbench's own GPU kernels: `backend::gpu::kernels`'
/// source (STREAM, tensor ops, attention) is a single NVRTC/hipRTC program, compiled once
/// per process by the backend, so that program is what a compile time is taken of.
pub const GPU_KERNELS: &str = "gpu_kernels";

/// What NVRTC is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvrtcOutput {
    /// The backend's own options (`--gpu-architecture=sm_XX`): NVRTC's front end and its
    /// built-in ptxas, PTX and SASS, exactly what the CUDA backend pays at start-up.
    Backend,
    /// A virtual architecture (`compute_XX`): PTX only, the front end alone; the driver
    /// then assembles it at load time.
    PtxOnly,
}

impl NvrtcOutput {
    pub const ALL: [NvrtcOutput; 2] = [NvrtcOutput::Backend, NvrtcOutput::PtxOnly];

    /// The id's third part.
    pub fn function_id(self) -> String {
        match self {
            NvrtcOutput::Backend => GPU_KERNELS.to_owned(),
            NvrtcOutput::PtxOnly => format!("{GPU_KERNELS}_ptx"),
        }
    }

    /// The `--gpu-architecture` NVRTC gets for `sm` (`sm_90` → `sm_90` or `compute_90`).
    pub fn nvrtc_arch(self, sm: &str) -> String {
        match self {
            NvrtcOutput::Backend => sm.to_owned(),
            NvrtcOutput::PtxOnly => sm.replacen("sm_", "compute_", 1),
        }
    }
}

/// NVIDIA architectures, as the backend names them: Ampere, Hopper, Blackwell (data
/// centre and consumer). The quick suite keeps the two most deployed.
pub const NVRTC_ARCHS_FULL: &[&str] = &["sm_80", "sm_90", "sm_100", "sm_120"];
pub const NVRTC_ARCHS_QUICK: &[&str] = &["sm_80", "sm_90"];

/// AMD architectures: MI200 (gfx90a), MI300 (gfx942), MI355 (gfx950).
pub const HIPRTC_ARCHS_FULL: &[&str] = &["gfx90a", "gfx942", "gfx950"];
pub const HIPRTC_ARCHS_QUICK: &[&str] = &["gfx942"];

/// The NVRTC benchmarks of `suite`: (output, arch). The quick suite times the backend's
/// own compile only.
pub fn nvrtc_cases(suite: Suite) -> Vec<(NvrtcOutput, &'static str)> {
    match suite {
        Suite::Quick => NVRTC_ARCHS_QUICK
            .iter()
            .map(|a| (NvrtcOutput::Backend, *a))
            .collect(),
        Suite::Full => NvrtcOutput::ALL
            .iter()
            .flat_map(|o| NVRTC_ARCHS_FULL.iter().map(move |a| (*o, *a)))
            .collect(),
    }
}

pub fn hiprtc_archs(suite: Suite) -> &'static [&'static str] {
    match suite {
        Suite::Quick => HIPRTC_ARCHS_QUICK,
        Suite::Full => HIPRTC_ARCHS_FULL,
    }
}

/// `compile/nvrtc/<function>/<arch>`.
pub fn nvrtc_id(output: NvrtcOutput, arch: &str) -> BenchId {
    BenchId::new(COMPILE.name, NVRTC, output.function_id(), arch)
}

/// `compile/hiprtc/gpu_kernels/<arch>`.
pub fn hiprtc_id(arch: &str) -> BenchId {
    BenchId::new(COMPILE.name, HIPRTC, GPU_KERNELS, arch)
}

/// Triton targets (`GPUTarget(backend, arch, warp_size)`), named as the ids carry them.
pub const TRITON_TARGETS_FULL: &[&str] = &["sm80", "sm90", "gfx942"];
pub const TRITON_TARGETS_QUICK: &[&str] = &["sm90"];

/// One Python-worker benchmark: the id's third and fourth parts, which the worker offers
/// back in its `describe` and builds from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PythonCase {
    pub benchmark: String,
    pub parameters: String,
}

impl PythonCase {
    fn new(benchmark: &str, parameters: String) -> PythonCase {
        PythonCase {
            benchmark: benchmark.to_owned(),
            parameters,
        }
    }
}

/// The Triton benchmarks of `suite`: `vector_add/<n>_<target>` and
/// `softmax/<rows>x<cols>_<target>` (the shapes of the component tier's Triton benchmarks;
/// the shape decides the kernel's specialisation, `BLOCK` and divisibility).
pub fn triton_cases(suite: Suite) -> Vec<PythonCase> {
    let (targets, adds, softmax): (&[&str], &[u64], &[(u64, u64)]) = match suite {
        Suite::Quick => (TRITON_TARGETS_QUICK, &[1 << 24], &[(4096, 1024)]),
        Suite::Full => (
            TRITON_TARGETS_FULL,
            &[1 << 24],
            &[(4096, 256), (4096, 1024), (4096, 4096), (4096, 16384)],
        ),
    };
    let mut cases = Vec::new();
    for target in targets {
        for n in adds {
            cases.push(PythonCase::new("vector_add", format!("{n}_{target}")));
        }
        for (rows, cols) in softmax {
            cases.push(PythonCase::new(
                "softmax",
                format!("{rows}x{cols}_{target}"),
            ));
        }
    }
    cases
}

/// The `torch.compile` models: a 3-layer MLP and a pre-norm transformer block (both
/// small: the time is the compiler's, not the model's).
pub const TORCH_COMPILE_MODELS_FULL: &[&str] = &["mlp", "transformer_block"];
pub const TORCH_COMPILE_MODELS_QUICK: &[&str] = &["mlp"];

/// Whether the compile cache starts empty (a first deploy) or populated (a restart).
pub const CACHE_STATES: &[&str] = &["cold", "warm"];

pub fn torch_compile_cases(suite: Suite) -> Vec<PythonCase> {
    let models = match suite {
        Suite::Quick => TORCH_COMPILE_MODELS_QUICK,
        Suite::Full => TORCH_COMPILE_MODELS_FULL,
    };
    models
        .iter()
        .flat_map(|m| {
            CACHE_STATES
                .iter()
                .map(move |state| PythonCase::new(m, (*state).to_owned()))
        })
        .collect()
}

/// The cases of a Python compiler; empty for one that is not.
pub fn python_cases(compiler: &str, suite: Suite) -> Vec<PythonCase> {
    match compiler {
        TRITON => triton_cases(suite),
        TORCH_COMPILE => torch_compile_cases(suite),
        _ => Vec::new(),
    }
}

/// Every id the family builds, in both suites (for the id tests).
pub fn every_id() -> Vec<String> {
    let mut ids = Vec::new();
    for suite in [Suite::Quick, Suite::Full] {
        for (output, arch) in nvrtc_cases(suite) {
            ids.push(nvrtc_id(output, arch).full());
        }
        for arch in hiprtc_archs(suite) {
            ids.push(hiprtc_id(arch).full());
        }
        for compiler in PYTHON_COMPILERS {
            for case in python_cases(compiler, suite) {
                let id = BenchId::new(COMPILE.name, compiler, case.benchmark, case.parameters);
                ids.push(id.full());
            }
        }
    }
    ids
}

/// The note keys a cold-compile benchmark leaves.
pub const REQUESTED_NOTE: &str = "compiles_requested";
pub const PROVEN_NOTE: &str = "compiles_proven";

/// The count behind "every sample compiled": compiles the harness asked for (verify, the
/// sizing call, warm-up and samples) against compiles shown to have happened. Kept by the
/// side that asks, never by the compiler's wrapper alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColdCompiles {
    pub requested: u64,
    pub proven: u64,
}

impl ColdCompiles {
    /// `Err` naming the shortfall when a compile was asked for and not shown to happen.
    pub fn check(&self) -> Result<(), String> {
        if self.requested == 0 {
            return Err("no compile was requested: nothing was measured".into());
        }
        if self.proven != self.requested {
            return Err(format!(
                "{} compiles were timed but {} were shown to have compiled (a cache hit or a \
                 compile that produced nothing is not a compile time)",
                self.requested, self.proven
            ));
        }
        Ok(())
    }

    /// The counts and the check as a benchmark's notes (the record shows why a reading is
    /// or is not a compile time).
    pub fn notes(&self) -> [(String, serde_json::Value); 3] {
        let check = match self.check() {
            Ok(()) => "passed".to_owned(),
            Err(why) => why,
        };
        [
            (REQUESTED_NOTE.to_owned(), self.requested.into()),
            (PROVEN_NOTE.to_owned(), self.proven.into()),
            ("check_after_timing".to_owned(), check.into()),
        ]
    }
}

/// `iters` cold compiles back to back, their times summed: each sample is whole compiles,
/// never a share of one.
pub fn time_compiles<E>(
    iters: u64,
    mut compile: impl FnMut() -> Result<std::time::Duration, E>,
) -> Result<std::time::Duration, E> {
    let mut total = std::time::Duration::ZERO;
    for _ in 0..iters {
        total += compile()?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::family::IdParts;

    #[test]
    fn ids_follow_the_four_part_scheme() {
        assert_eq!(
            nvrtc_id(NvrtcOutput::Backend, "sm_90").full(),
            "compile/nvrtc/gpu_kernels/sm_90"
        );
        assert_eq!(
            nvrtc_id(NvrtcOutput::PtxOnly, "sm_80").full(),
            "compile/nvrtc/gpu_kernels_ptx/sm_80"
        );
        assert_eq!(
            hiprtc_id("gfx942").full(),
            "compile/hiprtc/gpu_kernels/gfx942"
        );
        assert_eq!(NvrtcOutput::PtxOnly.nvrtc_arch("sm_100"), "compute_100");
        assert_eq!(NvrtcOutput::Backend.nvrtc_arch("sm_90"), "sm_90");
        let ids = every_id();
        for id in &ids {
            let parts = IdParts::parse(id).unwrap_or_else(|| panic!("{id}"));
            assert_eq!(parts.family, "compile", "{id}");
        }
        for expected in [
            "compile/triton/softmax/4096x1024_sm90",
            "compile/triton/vector_add/16777216_gfx942",
            "compile/torch_compile/mlp/cold",
            "compile/torch_compile/transformer_block/warm",
            "compile/hiprtc/gpu_kernels/gfx90a",
        ] {
            assert!(ids.iter().any(|i| i == expected), "{expected}");
        }
    }

    #[test]
    fn the_quick_suite_is_a_subset_of_the_full_one() {
        let full: Vec<_> = nvrtc_cases(Suite::Full);
        assert!(nvrtc_cases(Suite::Quick).iter().all(|c| full.contains(c)));
        for compiler in PYTHON_COMPILERS {
            let full = python_cases(compiler, Suite::Full);
            let quick = python_cases(compiler, Suite::Quick);
            assert!(!quick.is_empty());
            assert!(quick.iter().all(|c| full.contains(c)), "{compiler}");
        }
    }

    #[test]
    fn a_compile_not_shown_to_happen_fails_the_count() {
        assert!(
            ColdCompiles {
                requested: 12,
                proven: 12
            }
            .check()
            .is_ok()
        );
        let short = ColdCompiles {
            requested: 12,
            proven: 11,
        }
        .check()
        .unwrap_err();
        assert!(short.contains("12") && short.contains("11"), "{short}");
        assert!(ColdCompiles::default().check().is_err());
    }
}
