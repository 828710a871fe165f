//! What a benchmark's number is: wall time measured by Criterion, or instructions counted
//! under Valgrind. Time is what a user feels but moves with everything else the machine
//! does; an instruction count of the same code is the same on a loaded machine as on a quiet
//! one, so a verdict on counts needs no rounds and no statistics. The gate and bisect choose
//! one [`Measure`]; this module holds what both measures share and the counting mode's result
//! ([`CountedBenchmark`]), with its stated cost model ([`CostModel`]).
//!
//! The counting itself lives in [`instructions`] (Callgrind around Criterion's `Bencher`),
//! the reader of Callgrind's output in [`callgrind_out`], and the counting verdict in
//! [`verdict`].

pub mod callgrind_error;
pub mod callgrind_functions;
pub mod callgrind_out;
pub mod instructions;
pub mod verdict;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How a benchmark is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Measure {
    /// Criterion's wall-clock samples, judged over rounds.
    Time,
    /// Instructions of one iteration under Callgrind, judged by a plain threshold.
    Instructions,
}

impl Measure {
    pub const ALL: [Measure; 2] = [Measure::Time, Measure::Instructions];

    /// The name on the command line, in `STACKBENCH_MEASURE` and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Time => "time",
            Measure::Instructions => "instructions",
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A measure name that is none of [`Measure::ALL`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown measure '{given}' (expected one of: time, instructions)")]
pub struct UnknownMeasure {
    pub given: String,
}

impl FromStr for Measure {
    type Err = UnknownMeasure;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Measure::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMeasure {
                given: s.to_owned(),
            })
    }
}

/// The environment variable that picks the measure of a `cargo bench` run (`time`, the
/// default, or `instructions`). The instruction counter also sets it in the environment of
/// every bench process it runs under Valgrind, so stackbench's own bench targets know they
/// are being counted and run their CPU work on the calling thread (`crate::harness::counting`).
pub const MEASURE_ENV: &str = "STACKBENCH_MEASURE";

/// The measure `STACKBENCH_MEASURE` names; unset or empty is [`Measure::Time`].
pub fn measure_from_env() -> Result<Measure, UnknownMeasure> {
    match std::env::var(MEASURE_ENV) {
        Ok(value) if !value.is_empty() => value.parse(),
        _ => Ok(Measure::Time),
    }
}

/// How a counted result of stackbench's own benchmarks differs from the timed one: Callgrind
/// counts only the thread that entered the timed routine, so in counting mode stackbench's
/// CPU pool and the GEMM's rayon parallelism run the routine on the calling thread.
pub const SINGLE_THREADED_VARIANT: &str = "single-threaded: in counting mode the CPU pool and \
     rayon run the routine on the calling thread, so Callgrind counts all of its work";

/// One benchmark id of a counting-mode run, as the target report and the run record keep it
/// (as JSON: the formats below the harness do not know this type; the tags are
/// `crate::sidecar`'s `COUNTED_STATUS` and `NOT_COUNTABLE_STATUS`):
/// its counts, or why it could not be counted (a GPU or Python-worker routine, work on other
/// threads). A benchmark that could be counted and whose count failed is a failed benchmark,
/// not one of these.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CountedOutcome {
    Counted {
        result: CountedBenchmark,
        /// How the counted routine differs from the timed one (stackbench's own benches
        /// count a single-threaded variant), so nobody compares it with a timed run unawares.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        variant: Option<String>,
    },
    NotCountable {
        reason: String,
    },
}

/// Callgrind's events with cache simulation on (`--cache-sim=yes`), as its output file names
/// them: instruction reads `Ir`, data reads `Dr` and writes `Dw`; first-level misses `I1mr`,
/// `D1mr`, `D1mw`; last-level misses `ILmr`, `DLmr`, `DLmw`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct CallgrindCounts {
    pub ir: u64,
    pub dr: u64,
    pub dw: u64,
    pub i1mr: u64,
    pub d1mr: u64,
    pub d1mw: u64,
    pub ilmr: u64,
    pub dlmr: u64,
    pub dlmw: u64,
}

impl CallgrindCounts {
    /// Accesses that missed the first level (instruction and data).
    pub fn l1_misses(&self) -> u64 {
        self.i1mr + self.d1mr + self.d1mw
    }

    /// Accesses that missed the last level too, and so went to memory.
    pub fn ll_misses(&self) -> u64 {
        self.ilmr + self.dlmr + self.dlmw
    }
}

/// The cost model that turns counts into estimated cycles and a time estimate.
///
/// The cycle formula is gungraun's (formerly iai-callgrind), which credits it to Itamar
/// Turner-Trauring (<https://pythonspeed.com/articles/consistent-benchmarking-in-ci/>): every
/// memory access (`Ir + Dr + Dw`) that hits L1 costs 1 cycle, one that misses L1 but hits the
/// last level costs 5, and one that misses the last level (RAM) costs 35:
///
/// ```text
/// ram     = ILmr + DLmr + DLmw
/// ll_hits = I1mr + D1mr + D1mw - ram
/// l1_hits = Ir + Dr + Dw - ll_hits - ram
/// cycles  = l1_hits + 5·ll_hits + 35·ram
/// ```
///
/// Source: `CacheSummary` in gungraun/gungraun, `iai-callgrind-runner/src/runner/callgrind/mod.rs`
/// (commit 9342bb25, 2025-09: `let cycles = l1_hits + (l3_hits * 5) + (ram_hits * 35);`).
/// It is a model of a mid-2000s core with no overlap of misses; it ranks changes in memory
/// behaviour, it does not predict a modern core's time. The time estimate divides the cycles
/// by a stated nominal clock ([`CostModel::nominal_clock_hz`], 3 GHz by default) and is named
/// an estimate wherever it is shown: the verdict stands on `Ir`, never on it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CostModel {
    pub l1_hit_cycles: u64,
    pub ll_hit_cycles: u64,
    pub ram_cycles: u64,
    pub nominal_clock_hz: f64,
}

impl CostModel {
    /// gungraun's constants and a 3 GHz nominal clock.
    pub const GUNGRAUN: CostModel = CostModel {
        l1_hit_cycles: 1,
        ll_hit_cycles: 5,
        ram_cycles: 35,
        nominal_clock_hz: 3.0e9,
    };

    /// Estimated cycles of `counts` under this model. Saturating: a malformed file whose
    /// misses exceed its accesses gives a low estimate rather than a wrapped one.
    pub fn estimated_cycles(&self, counts: &CallgrindCounts) -> u64 {
        let ram = counts.ll_misses();
        let ll_hits = counts.l1_misses().saturating_sub(ram);
        let accesses = counts.ir + counts.dr + counts.dw;
        let l1_hits = accesses.saturating_sub(ll_hits).saturating_sub(ram);
        l1_hits * self.l1_hit_cycles + ll_hits * self.ll_hit_cycles + ram * self.ram_cycles
    }

    /// The time estimate: estimated cycles at the nominal clock, in nanoseconds.
    pub fn estimated_time_ns(&self, counts: &CallgrindCounts) -> f64 {
        self.estimated_cycles(counts) as f64 / self.nominal_clock_hz * 1e9
    }
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel::GUNGRAUN
    }
}

/// One Criterion benchmark id counted in counting mode: one iteration of its routine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountedBenchmark {
    /// Criterion's full id (`group/function/value`).
    pub id: String,
    /// Callgrind's raw events for the routine, Criterion's `Bencher` loop included.
    pub counts: CallgrindCounts,
    /// [`CostModel::estimated_cycles`] of `counts`.
    pub estimated_cycles: u64,
    /// [`CostModel::estimated_time_ns`] of `counts`: an estimate, not a measurement.
    pub estimated_time_ns: f64,
    /// The model both estimates came from, so a reader can redo them.
    pub cost_model: CostModel,
    /// Each function's instructions in the same iteration, or why they are unknown. Kept in
    /// memory for the gate's comparison of the two sides, never written with the count.
    #[serde(skip, default = "function_costs_not_kept")]
    pub function_costs: Result<callgrind_functions::FunctionCosts, String>,
}

fn function_costs_not_kept() -> Result<callgrind_functions::FunctionCosts, String> {
    Err("per-function costs are not kept in recorded counts".to_owned())
}

impl CountedBenchmark {
    pub fn new(id: impl Into<String>, counts: CallgrindCounts, cost_model: CostModel) -> Self {
        CountedBenchmark {
            id: id.into(),
            counts,
            estimated_cycles: cost_model.estimated_cycles(&counts),
            estimated_time_ns: cost_model.estimated_time_ns(&counts),
            cost_model,
            function_costs: Err("no per-function costs were read".to_owned()),
        }
    }

    /// The count with the per-function costs read from the same Callgrind file.
    pub fn with_function_costs(
        mut self,
        costs: Result<callgrind_functions::FunctionCosts, String>,
    ) -> Self {
        self.function_costs = costs;
        self
    }
}

/// Whether a benchmark's routine can be counted under Valgrind. Work Valgrind cannot see
/// (a GPU kernel, a Python worker in another process) would be counted as the few host
/// instructions that wait for it: such an id is `not countable`, never a pass, and the
/// gate judges it by time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Countability {
    Countable,
    NotCountable { reason: String },
}

/// Families whose routine runs in a Python worker process.
const PYTHON_WORKER_FAMILIES: &[&str] = &["components"];
/// Backends whose routine runs on a GPU (Vulkan's on a GPU or, on lavapipe, in the driver's
/// own threads: neither is this process's instruction stream).
const GPU_BACKENDS: &[&str] = &["cuda", "rocm", "vulkan"];
/// Families whose routine Valgrind would replace: it swaps malloc and free for its own
/// allocator, so a count would be Valgrind's allocator, not the one the id names.
const ALLOCATOR_FAMILIES: &[&str] = &["alloc"];

/// The countability of one of stackbench's own ids (`<family>/<backend>/<function>/<value>`):
/// the `components` family runs in a Python worker, the `cuda` and `rocm` backends on a GPU.
/// Any other id, a foreign crate's included, is countable.
pub fn stackbench_countability(id: &str) -> Countability {
    let mut parts = id.split('/');
    let family = parts.next().unwrap_or_default();
    let backend = parts.next().unwrap_or_default();
    // The family rules are for ids in stackbench's four-part scheme only: a foreign crate's
    // benchmark named `alloc` (the gate's own fixture has one) is not the alloc family.
    if id.split('/').count() != 4 {
        return if GPU_BACKENDS.contains(&backend) {
            Countability::NotCountable {
                reason: format!("the {backend} backend runs its routine on a GPU"),
            }
        } else {
            Countability::Countable
        };
    }
    let python_compiler = family == crate::workload::family::COMPILE.name
        && crate::workload::compile::PYTHON_COMPILERS.contains(&backend);
    if python_compiler {
        return Countability::NotCountable {
            reason: format!("compile/{backend} compiles in a Python worker process"),
        };
    }
    if PYTHON_WORKER_FAMILIES.contains(&family) {
        return Countability::NotCountable {
            reason: format!("the {family} family runs its routine in a Python worker process"),
        };
    }
    if ALLOCATOR_FAMILIES.contains(&family) {
        return Countability::NotCountable {
            reason: format!(
                "the {family} family times the allocator itself, and Valgrind replaces malloc \
                 and free with its own"
            ),
        };
    }
    if GPU_BACKENDS.contains(&backend) {
        return Countability::NotCountable {
            reason: format!("the {backend} backend runs its routine on a GPU"),
        };
    }
    Countability::Countable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_names_round_trip_and_an_unknown_one_lists_the_valid_ones() {
        for m in Measure::ALL {
            assert_eq!(m.name().parse::<Measure>(), Ok(m));
        }
        let error = "cycles".parse::<Measure>().unwrap_err().to_string();
        assert!(error.contains("'cycles'"), "{error}");
        assert!(error.contains("time, instructions"), "{error}");
    }

    #[test]
    fn estimated_cycles_follow_gungrauns_formula() {
        let counts = CallgrindCounts {
            ir: 1000,
            dr: 300,
            dw: 100,
            i1mr: 10,
            d1mr: 20,
            d1mw: 5,
            ilmr: 2,
            dlmr: 3,
            dlmw: 1,
        };
        // ram = 6, ll_hits = 35 - 6 = 29, l1_hits = 1400 - 29 - 6 = 1365.
        let model = CostModel::GUNGRAUN;
        assert_eq!(model.estimated_cycles(&counts), 1365 + 5 * 29 + 35 * 6);
        let ns = model.estimated_time_ns(&counts);
        assert!((ns - 1720.0 / 3.0).abs() < 1e-9, "{ns}");
    }

    #[test]
    fn estimated_cycles_never_wrap_on_inconsistent_counts() {
        let counts = CallgrindCounts {
            ir: 1,
            i1mr: 50,
            ilmr: 80,
            ..CallgrindCounts::default()
        };
        assert_eq!(CostModel::GUNGRAUN.estimated_cycles(&counts), 35 * 80);
    }

    #[test]
    fn gpu_and_python_worker_ids_are_not_countable_and_others_are() {
        let not = |id: &str| match stackbench_countability(id) {
            Countability::NotCountable { reason } => reason,
            Countability::Countable => panic!("{id} should not be countable"),
        };
        assert!(not("gemm/cuda/f16/4096x4096x4096").contains("GPU"));
        assert!(not("attention/rocm/bf16/x").contains("rocm"));
        assert!(not("memory_bandwidth/vulkan/copy/64MiB").contains("vulkan"));
        assert!(not("components/pytorch/matmul/1024").contains("Python worker"));
        assert!(not("alloc/cpu/steady/4KiB").contains("Valgrind replaces malloc"));
        // A foreign benchmark that happens to be called like a family is judged as foreign.
        for id in ["alloc", "components", "compile/x"] {
            assert_eq!(stackbench_countability(id), Countability::Countable, "{id}");
        }
        assert!(not("compile/torch_compile/mlp/cold").contains("Python worker"));
        assert!(not("compile/triton/softmax/4096x1024_sm90").contains("Python worker"));
        for id in [
            "gemm/cpu/f32/512x512x512",
            "header/value_0064b",
            "sum",
            "compile/nvrtc/gpu_kernels/sm_90",
        ] {
            assert_eq!(stackbench_countability(id), Countability::Countable, "{id}");
        }
    }
}
