//! `stackbench validate --level 1|2|3`: machine checks in levels, after DCGM's
//! `dcgmi diag -r 1|2|3` (seconds, about two minutes, about fifteen minutes). Each level is
//! a built-in suite (`level-1`, `level-2`, `level-3`) so the bench targets, which resolve
//! `STACKBENCH_SUITE` by name, select the same ids under `cargo bench` and from a bundle of
//! prebuilt executables; beside the selection it declares the Criterion settings that make
//! it fit and the wall-time budget `validate` holds it to.
//!
//! The ids are chosen by role, as the pre-installation suite's are: the CPU triad and copy
//! past the caches are whatever power of two the machine's LLC gives (never under 256 MiB,
//! `backend::cpu::stream_sizes_for`); the GPU triad is the one point the quick GPU axis
//! has. Each level also keeps the `all/all` skip ids, so "no GPU here" reaches the verdict.
//!
//! Vulkan is a GPU backend like CUDA and ROCm here: its triad, its pinned copies and a GEMM
//! per level. Its GEMM is f32 (and f16 at level 2), the precisions every Vulkan device
//! runs without cooperative matrices; level 1 also names 512³, the largest shape a CPU
//! driver such as lavapipe (opted in with `STACKBENCH_VULKAN_ALLOW_CPU=1`) generates, since
//! a GPU's quick axis has no 512³.

/// The skip records of a backend that did not open, in every level.
const SKIP_IDS: &str = r"^(memory_bandwidth|gemm)/[^/]+/all/all$";
const CPU_TRIAD_PAST_CACHES: &str = r"^memory_bandwidth/cpu/triad/(256MiB|512MiB|[0-9]+GiB)$";
/// The CPU's equivalent of a host-device copy: STREAM copy past the caches.
const CPU_COPY_PAST_CACHES: &str = r"^memory_bandwidth/cpu/copy/(256MiB|512MiB|[0-9]+GiB)$";
const GPU_TRIAD: &str = r"^memory_bandwidth/(cuda|rocm|vulkan)/triad/";
const GPU_COPIES_PINNED: &str = r"^memory_bandwidth/(cuda|rocm|vulkan)/(h2d|d2h)_pinned/";
/// What levels 1 and 2 share: every backend's triad and copies, and the skip records.
const BANDWIDTH_AND_COPIES: &[&str] = &[
    SKIP_IDS,
    CPU_TRIAD_PAST_CACHES,
    CPU_COPY_PAST_CACHES,
    GPU_TRIAD,
    GPU_COPIES_PINNED,
];

/// What the pre-installation suite (and level 3) measures: memory bandwidth beyond the
/// caches, host to device and back, GEMM per precision at one size each backend's quick
/// axes carry, and a small model's inference. Each GPU family is matched whatever backend runs it.
///
/// Points are chosen by role, not by a size that exists only on some machines: the CPU
/// triad past the caches is a power of two of at least 4x the LLC and never under 256 MiB
/// (`backend::cpu::stream_sizes_for`), so on a 256 MiB-LLC server it is 1 GiB; every quick
/// size at or above 256 MiB is that one point. The GEMM sizes are those of the CPU and GPU
/// quick axes (`workload::gemm`): the GPU axis has no 2048³; its 8192³ is past the shape
/// the vendors quote acceptance figures for (RVS: 4864x4096x8192), so those can judge it.
/// `validate::selection` checks both on described machines.
pub(super) const PRE_INSTALLATION_INCLUDE: &[&str] = &[
    CPU_TRIAD_PAST_CACHES,
    GPU_TRIAD,
    r"^memory_bandwidth/[^/]+/(h2d|d2h)_pinned/",
    r"^gemm/cpu/[^/]+/2048x2048x2048$",
    r"^gemm/(cuda|rocm|vulkan)/[^/]+/8192x8192x8192$",
    r"^components/tiny_gpt/prefill/b1_s128$",
    // The whole-backend and whole-component skip ids, so "no GPU here" reaches the result.
    SKIP_IDS,
    r"^components/tiny_gpt/all/all$",
];

/// One validate level: what it runs, how Criterion samples it, and how long it may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub number: u8,
    /// What a user gets from it, for `--help` and the run's first line.
    pub summary: &'static str,
    pub targets: &'static [&'static str],
    /// Id regexes, in groups (a suite keeps an id any of them matches).
    pub include: &'static [&'static [&'static str]],
    /// Python components whose workers start (none: the level runs no component id).
    pub components: &'static [&'static str],
    pub warm_up_s: f64,
    pub measurement_s: f64,
    pub sample_size: usize,
    /// Wall time the whole level (every target, its checks included) should stay within on
    /// one H100/H200 or a CPU-only machine; past it `validate` says so, never silently.
    pub budget_s: f64,
}

/// The levels, in order; `--level N` is `LEVELS[N - 1]`.
pub const LEVELS: &[Level] = &[
    Level {
        number: 1,
        summary: "seconds: the backends load, one GEMM, one triad, both copy directions",
        targets: &["memory_bandwidth", "gemm"],
        include: &[
            BANDWIDTH_AND_COPIES,
            &[
                r"^gemm/cpu/f32/512x512x512$",
                r"^gemm/(cuda|rocm)/bf16/4096x4096x4096$",
                r"^gemm/vulkan/f32/(4096x4096x4096|512x512x512)$",
            ],
        ],
        components: &[],
        warm_up_s: 0.1,
        measurement_s: 0.3,
        sample_size: 10,
        budget_s: 30.0,
    },
    Level {
        number: 2,
        summary: "about two minutes: bandwidth, copies, GEMM in the headline precisions at the vendors' sizes",
        targets: &["memory_bandwidth", "gemm"],
        include: &[
            BANDWIDTH_AND_COPIES,
            &[
                r"^gemm/cpu/(f32|f64)/2048x2048x2048$",
                r"^gemm/(cuda|rocm)/(f32|tf32|bf16|f16|fp8e4m3|int8)/8192x8192x8192$",
                r"^gemm/vulkan/(f32|f16)/8192x8192x8192$",
            ],
        ],
        components: &[],
        warm_up_s: 0.3,
        measurement_s: 1.0,
        sample_size: 10,
        budget_s: 120.0,
    },
    Level {
        number: 3,
        summary: "up to fifteen minutes: the pre-installation suite, every precision, and a small model's inference",
        targets: &["memory_bandwidth", "gemm", "components"],
        include: &[PRE_INSTALLATION_INCLUDE],
        components: &["tiny_gpt"],
        warm_up_s: 1.0,
        measurement_s: 3.0,
        sample_size: 10,
        budget_s: 900.0,
    },
];

/// The level used when `validate` is given neither `--level` nor `--suite`.
pub const DEFAULT_LEVEL: u8 = 2;

/// Environment variable that replaces every level's budget, in seconds (tests, and a slow
/// machine whose owner knows it is slow).
pub const BUDGET_ENV: &str = "STACKBENCH_VALIDATE_BUDGET_S";

/// Why a `--level` value is not one.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("'{given}' is not a validate level: expected one of {}", allowed())]
pub struct BadLevel {
    pub given: String,
}

fn allowed() -> String {
    let numbers: Vec<String> = LEVELS.iter().map(|l| l.number.to_string()).collect();
    numbers.join(", ")
}

impl Level {
    /// The level `text` names (`1`, `2`, `3`), or an error naming it and the allowed ones.
    pub fn parse(text: &str) -> Result<Level, BadLevel> {
        let number: Option<u8> = text.trim().parse().ok();
        LEVELS
            .iter()
            .find(|level| Some(level.number) == number)
            .copied()
            .ok_or_else(|| BadLevel {
                given: text.to_owned(),
            })
    }

    /// The level `validate` runs when given neither `--level` nor `--suite`.
    pub fn default_level() -> Level {
        *LEVELS
            .iter()
            .find(|level| level.number == DEFAULT_LEVEL)
            .expect("DEFAULT_LEVEL names one of LEVELS")
    }

    /// The built-in suite that carries this level's selection: `level-N`.
    pub fn suite_name(&self) -> String {
        format!("level-{}", self.number)
    }

    /// The level whose suite is `name`, if it is one.
    pub fn of_suite(name: &str) -> Option<Level> {
        let number = name.strip_prefix("level-")?;
        Level::parse(number).ok()
    }

    /// This level's budget, or `$STACKBENCH_VALIDATE_BUDGET_S` when set: an error naming
    /// the variable when that is not a positive number of seconds.
    pub fn budget_s_from_env(&self) -> Result<f64, String> {
        match std::env::var(BUDGET_ENV) {
            Ok(text) if !text.trim().is_empty() => match text.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
                _ => Err(format!(
                    "{BUDGET_ENV}='{text}' is not a positive number of seconds"
                )),
            },
            _ => Ok(self.budget_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn levels_are_numbered_in_order_and_their_budgets_grow() {
        for (i, level) in LEVELS.iter().enumerate() {
            assert_eq!(level.number as usize, i + 1);
            assert_eq!(Level::parse(&level.number.to_string()), Ok(*level));
            assert_eq!(Level::of_suite(&level.suite_name()), Some(*level));
        }
        let budgets: Vec<f64> = LEVELS.iter().map(|l| l.budget_s).collect();
        assert_eq!(budgets, [30.0, 120.0, 900.0]);
        assert!(LEVELS.iter().any(|l| l.number == DEFAULT_LEVEL));
    }

    #[test]
    fn a_bad_level_names_the_value_and_the_allowed_ones() {
        for bad in ["0", "4", "two", "", "-1"] {
            let err = Level::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("'{bad}'")), "{err}");
            assert!(err.contains("1, 2, 3"), "{err}");
        }
        assert_eq!(Level::of_suite("quick"), None);
        assert_eq!(Level::of_suite("level-9"), None);
    }

    /// What each level selects, by id: level 1 one GEMM per backend, level 2 the headline
    /// precisions, level 3 the pre-installation suite's every precision.
    #[test]
    fn each_level_selects_its_declared_ids() {
        let config = Config::default();
        let suite = |n: u8| config.suite(&format!("level-{n}")).unwrap();
        let (one, two, three) = (suite(1), suite(2), suite(3));
        for id in [
            "memory_bandwidth/cpu/triad/256MiB",
            "memory_bandwidth/cpu/copy/1GiB",
            "memory_bandwidth/cuda/triad/1GiB",
            "memory_bandwidth/cuda/h2d_pinned/512MiB",
            "memory_bandwidth/rocm/d2h_pinned/512MiB",
            "gemm/cuda/all/all",
        ] {
            assert!(one.selects(id) && two.selects(id), "{id}");
        }
        assert!(one.selects("gemm/cpu/f32/512x512x512"));
        assert!(one.selects("gemm/cuda/bf16/4096x4096x4096"));
        for id in [
            "gemm/cpu/f32/2048x2048x2048",
            "gemm/cpu/f64/512x512x512",
            "gemm/cuda/bf16/8192x8192x8192",
            "memory_bandwidth/cpu/triad/64MiB",
            "components/tiny_gpt/prefill/b1_s128",
        ] {
            assert!(!one.selects(id), "level 1 selects {id}");
        }
        for id in [
            "gemm/cpu/f64/2048x2048x2048",
            "gemm/cuda/fp8e4m3/8192x8192x8192",
            "gemm/rocm/int8/8192x8192x8192",
        ] {
            assert!(two.selects(id), "{id}");
        }
        for id in [
            "gemm/cpu/bf16/2048x2048x2048",
            "gemm/cuda/f64/8192x8192x8192",
            "gemm/cuda/bf16/4096x4096x4096",
            "components/tiny_gpt/prefill/b1_s128",
        ] {
            assert!(!two.selects(id), "level 2 selects {id}");
            assert!(
                id.contains("4096x4096") || three.selects(id),
                "level 3 lacks {id}"
            );
        }
        assert!(three.runs_component("tiny_gpt") && !one.runs_component("tiny_gpt"));
        // Vulkan as a GPU backend: its triad and pinned copies in levels 1 and 2, f32 GEMM
        // at level 1 (4096³ on a GPU, 512³ on a CPU driver), f32 and f16 at level 2, every
        // precision at 8192³ at level 3.
        for id in [
            "memory_bandwidth/vulkan/triad/1GiB",
            "memory_bandwidth/vulkan/h2d_pinned/512MiB",
            "memory_bandwidth/vulkan/d2h_pinned/64MiB",
            "gemm/vulkan/all/all",
        ] {
            assert!(one.selects(id) && two.selects(id), "{id}");
        }
        for id in [
            "gemm/vulkan/f32/4096x4096x4096",
            "gemm/vulkan/f32/512x512x512",
        ] {
            assert!(one.selects(id) && !two.selects(id), "{id}");
        }
        for id in [
            "gemm/vulkan/f16/8192x8192x8192",
            "gemm/vulkan/f32/8192x8192x8192",
        ] {
            assert!(
                !one.selects(id) && two.selects(id) && three.selects(id),
                "{id}"
            );
        }
        for id in [
            "gemm/vulkan/f16/4096x4096x4096",
            "memory_bandwidth/vulkan/h2d_pageable/512MiB",
            "memory_bandwidth/vulkan/copy/1GiB",
        ] {
            assert!(!one.selects(id) && !two.selects(id), "{id}");
        }
        for suite in [&one, &two, &three] {
            assert!(suite.gpu_first, "{}", suite.name);
            assert_eq!(suite.sampling.sample_size, Some(10));
        }
    }
}
