//! Named suites: which bench targets run, which benchmark ids they keep, and how long
//! Criterion samples them. `quick` and `full` are the axis sets the bench targets have
//! always had; every other suite is one of them narrowed by id regexes, so a suite never
//! invents a benchmark, it only selects. The bench targets resolve `STACKBENCH_SUITE`
//! through here, so a config suite means the same under `cargo bench`,
//! `./run_benchmarks.sh` and `stackbench validate`.

use super::{Config, ConfigError, seconds};
use crate::backend::SamplingProfile;
use crate::workload::Suite;
use regex::Regex;
use serde::Deserialize;
use std::time::Duration;

/// The bench targets, in the order `run_benchmarks.sh` runs them: one per family of the
/// family table.
pub const ALL_TARGETS: &[&str] = &crate::workload::family::TARGETS;

/// Suites that exist without a config file.
pub const BUILT_IN: &[&str] = &[
    "quick",
    "full",
    "pre-installation",
    "component",
    "sweep",
    "level-1",
    "level-2",
    "level-3",
];

/// One `[suites.NAME]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    pub description: Option<String>,
    /// The axis values the targets generate before the filters: `quick` (default) or `full`.
    pub base: Option<String>,
    /// Bench targets to run (default: all).
    pub targets: Option<Vec<String>>,
    /// Keep only ids matching any of these regexes (default: every id).
    #[serde(default)]
    pub include: Vec<String>,
    /// Then drop ids matching any of these.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Python components whose workers start (default: every enabled one). Starting a
    /// worker imports its stack, tens of seconds for torch, so a suite that keeps few
    /// component ids names them here instead of starting all to skip most.
    pub components: Option<Vec<String>>,
    pub warm_up_s: Option<f64>,
    pub measurement_s: Option<f64>,
    pub sample_size: Option<usize>,
    /// Run the GPU backends of each target before its CPU one (the validate levels: a
    /// GPU machine's check reaches its GPUs first).
    pub gpu_first: Option<bool>,
}

/// Criterion sampling a suite imposes on every benchmark it runs; unset keeps the
/// benchmark's own profile.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SamplingOverride {
    pub warm_up: Option<Duration>,
    pub measurement: Option<Duration>,
    pub sample_size: Option<usize>,
}

impl SamplingOverride {
    pub fn apply(&self, profile: SamplingProfile) -> SamplingProfile {
        SamplingProfile {
            sample_size: self.sample_size.unwrap_or(profile.sample_size),
            warm_up: self.warm_up.unwrap_or(profile.warm_up),
            measurement: self.measurement.unwrap_or(profile.measurement),
        }
    }
}

/// A suite ready to select benchmarks.
#[derive(Clone, Debug)]
pub struct ResolvedSuite {
    pub name: String,
    pub description: String,
    pub base: Suite,
    /// The bench targets a runner starts for this suite (all of the family table's when the
    /// suite names none).
    pub targets: Vec<String>,
    /// The suite names no targets, so it runs whichever target starts, one that is not in
    /// the family table included: a family defined outside the table (a test's) runs under
    /// `quick` and `full` through the same harness as the native ones.
    pub every_target: bool,
    pub include: Vec<Regex>,
    pub exclude: Vec<Regex>,
    /// Components whose workers start; `None`: all.
    pub components: Option<Vec<String>>,
    pub sampling: SamplingOverride,
    /// Each target runs its GPU backends before the CPU ([`SuiteConfig::gpu_first`]).
    pub gpu_first: bool,
}

impl ResolvedSuite {
    /// Whether this suite runs the bench target at all.
    pub fn runs_target(&self, target: &str) -> bool {
        self.every_target || self.targets.iter().any(|t| t == target)
    }

    /// Whether the suite starts the worker of this Python component.
    pub fn runs_component(&self, component: &str) -> bool {
        self.components
            .as_ref()
            .is_none_or(|c| c.iter().any(|name| name == component))
    }

    /// Whether the suite keeps the benchmark `id` (`<family>/...`, the family being the
    /// target's name).
    pub fn selects(&self, id: &str) -> bool {
        let family = id.split('/').next().unwrap_or("");
        self.runs_target(family)
            && (self.include.is_empty() || self.include.iter().any(|re| re.is_match(id)))
            && !self.exclude.iter().any(|re| re.is_match(id))
    }

    /// The suite `STACKBENCH_SUITE` names in `config`. Unset or empty means `quick`.
    pub fn from_env_with(config: &Config) -> Result<ResolvedSuite, ConfigError> {
        let name = std::env::var(crate::workload::suite::SUITE_ENV).unwrap_or_default();
        let name = match name.trim() {
            "" => "quick",
            other => other,
        };
        config.suite(name)
    }
}

impl SuiteConfig {
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        if let Some(base) = &self.base {
            Suite::parse(base).map_err(|_| {
                (
                    "base".to_string(),
                    format!("'{base}' is not 'quick' or 'full'"),
                )
            })?;
        }
        if self.targets.as_ref().is_some_and(|t| t.is_empty()) {
            return Err((
                "targets".into(),
                format!(
                    "an empty list selects no benchmark (known targets: {})",
                    ALL_TARGETS.join(", ")
                ),
            ));
        }
        for target in self.targets.iter().flatten() {
            if !ALL_TARGETS.contains(&target.as_str()) {
                return Err((
                    "targets".into(),
                    format!(
                        "unknown bench target '{target}' (known: {})",
                        ALL_TARGETS.join(", ")
                    ),
                ));
            }
        }
        for component in self.components.iter().flatten() {
            if !crate::workload::components::COMPONENTS.contains(&component.as_str()) {
                return Err((
                    "components".into(),
                    format!(
                        "unknown component '{component}' (known: {})",
                        crate::workload::components::COMPONENTS.join(", ")
                    ),
                ));
            }
        }
        for (key, patterns) in [("include", &self.include), ("exclude", &self.exclude)] {
            compile(patterns).map_err(|m| (key.to_string(), m))?;
        }
        seconds("warm_up_s", self.warm_up_s)?;
        seconds("measurement_s", self.measurement_s)?;
        if self.sample_size.is_some_and(|n| n < 10) {
            return Err((
                "sample_size".into(),
                "Criterion needs at least 10 samples".into(),
            ));
        }
        Ok(())
    }
}

fn compile(patterns: &[String]) -> Result<Vec<Regex>, String> {
    patterns
        .iter()
        .map(|p| Regex::new(p).map_err(|e| format!("'{p}' is not a valid regex: {e}")))
        .collect()
}

/// The built-in definition of `name`, when there is one.
fn built_in(name: &str) -> Option<SuiteConfig> {
    let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match name {
        "quick" => Some(SuiteConfig {
            description: Some("a few points per axis: minutes on a laptop".into()),
            ..SuiteConfig::default()
        }),
        "full" => Some(SuiteConfig {
            description: Some("every axis value".into()),
            base: Some("full".into()),
            ..SuiteConfig::default()
        }),
        "pre-installation" => Some(SuiteConfig {
            description: Some(
                "does this machine perform as it should: bandwidth, transfers, GEMM per precision, inference"
                    .into(),
            ),
            targets: Some(strings(&["memory_bandwidth", "gemm", "components"])),
            include: strings(super::levels::PRE_INSTALLATION_INCLUDE),
            components: Some(strings(&["tiny_gpt"])),
            ..SuiteConfig::default()
        }),
        "component" => Some(SuiteConfig {
            description: Some("the installed Python components only".into()),
            targets: Some(strings(&["components"])),
            ..SuiteConfig::default()
        }),
        "sweep" => Some(SuiteConfig {
            description: Some(
                "a model sweep (stackbench sweep): the cells of STACKBENCH_MODELS_PLAN".into(),
            ),
            targets: Some(strings(&["models"])),
            ..SuiteConfig::default()
        }),
        other => super::levels::Level::of_suite(other).map(level_suite),
    }
}

/// The suite of a validate level: its selection, its sampling, GPUs first.
fn level_suite(level: super::levels::Level) -> SuiteConfig {
    let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    SuiteConfig {
        description: Some(format!(
            "stackbench validate --level {}: {} (budget {} s)",
            level.number, level.summary, level.budget_s
        )),
        targets: Some(strings(level.targets)),
        include: strings(&level.include.concat()),
        components: Some(strings(level.components)),
        warm_up_s: Some(level.warm_up_s),
        measurement_s: Some(level.measurement_s),
        sample_size: Some(level.sample_size),
        gpu_first: Some(true),
        ..SuiteConfig::default()
    }
}

pub(super) fn resolve(config: &Config, name: &str) -> Result<ResolvedSuite, ConfigError> {
    let Some(suite) = config.suites.get(name).cloned().or_else(|| built_in(name)) else {
        return Err(ConfigError::UnknownSuite {
            name: name.into(),
            known: config.suite_names().join(", "),
        });
    };
    // Checked when the file was parsed; built-ins are checked by a test. Re-checking here
    // keeps a hand-built Config from panicking on a bad regex.
    let invalid = |(key, message): (String, String)| ConfigError::Invalid {
        path: config
            .source
            .clone()
            .unwrap_or_else(|| super::CONFIG_FILE.into()),
        key: format!("suites.{name}.{key}"),
        message,
    };
    suite.check().map_err(invalid)?;
    let default_base = if name == "full" { "full" } else { "quick" };
    let base = Suite::parse(suite.base.as_deref().unwrap_or(default_base))
        .map_err(|m| invalid(("base".into(), m)))?;
    let compiled = |key: &str, patterns: &[String]| {
        compile(patterns).map_err(|m| invalid((key.to_string(), m)))
    };
    Ok(ResolvedSuite {
        name: name.into(),
        description: suite.description.clone().unwrap_or_default(),
        base,
        targets: suite
            .targets
            .clone()
            .unwrap_or_else(|| ALL_TARGETS.iter().map(|t| t.to_string()).collect()),
        every_target: suite.targets.is_none(),
        include: compiled("include", &suite.include)?,
        exclude: compiled("exclude", &suite.exclude)?,
        components: suite.components.clone(),
        sampling: SamplingOverride {
            warm_up: suite.warm_up_s.map(Duration::from_secs_f64),
            measurement: suite.measurement_s.map(Duration::from_secs_f64),
            sample_size: suite.sample_size,
        },
        gpu_first: suite.gpu_first.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{parsed, refusal};

    #[test]
    fn built_in_suites_resolve_and_quick_and_full_select_everything() {
        let config = Config::default();
        for name in BUILT_IN {
            config.suite(name).unwrap();
        }
        let quick = config.suite("quick").unwrap();
        assert_eq!(quick.base, Suite::Quick);
        assert!(quick.selects("gemm/cpu/f32/512x512x512"));
        assert!(quick.selects("components/pytorch/matmul/f32_256x256x256"));
        assert_eq!(config.suite("full").unwrap().base, Suite::Full);
        let err = config.suite("nightly").unwrap_err().to_string();
        assert!(
            err.contains("unknown suite 'nightly'") && err.contains("pre-installation"),
            "{err}"
        );
    }

    #[test]
    fn pre_installation_keeps_the_installation_checks_only() {
        let suite = Config::default().suite("pre-installation").unwrap();
        for id in [
            "memory_bandwidth/cpu/triad/256MiB",
            "memory_bandwidth/cpu/triad/1GiB",
            "memory_bandwidth/cuda/h2d_pinned/512MiB",
            "gemm/cpu/bf16/2048x2048x2048",
            "gemm/cuda/bf16/8192x8192x8192",
            "gemm/cuda/all/all",
            "components/tiny_gpt/prefill/b1_s128",
            "components/tiny_gpt/all/all",
        ] {
            assert!(suite.selects(id), "{id}");
        }
        assert!(suite.runs_component("tiny_gpt") && !suite.runs_component("vllm"));
        for id in [
            "memory_bandwidth/cpu/triad/256KiB",
            "memory_bandwidth/cpu/triad/64MiB",
            "gemm/cpu/f32/512x512x512",
            "tensor_ops/cpu/add_f32/256x4096",
            "components/pytorch/matmul/f32_256x256x256",
            "components/tiny_gpt/generate/b4_s128_n32",
        ] {
            assert!(!suite.selects(id), "{id}");
        }
    }

    #[test]
    fn a_config_suite_narrows_targets_and_ids_and_overrides_sampling() {
        let config = parsed(
            "[suites.smoke]\ntargets = [\"memory_bandwidth\"]\ninclude = [\"triad\"]\nexclude = [\"256MiB\"]\nwarm_up_s = 0.1\nsample_size = 10\n",
            "stackbench.toml",
        );
        let smoke = config.suite("smoke").unwrap();
        assert!(smoke.selects("memory_bandwidth/cpu/triad/256KiB"));
        assert!(!smoke.selects("memory_bandwidth/cpu/triad/256MiB"));
        assert!(!smoke.selects("memory_bandwidth/cpu/copy/256KiB"));
        assert!(!smoke.selects("gemm/cpu/triad/x"));
        let profile = smoke.sampling.apply(SamplingProfile {
            sample_size: 30,
            warm_up: Duration::from_secs(2),
            measurement: Duration::from_secs(5),
        });
        assert_eq!(profile.sample_size, 10);
        assert_eq!(profile.warm_up, Duration::from_millis(100));
        assert_eq!(profile.measurement, Duration::from_secs(5));
    }

    #[test]
    fn bad_suites_name_the_key() {
        for (text, key) in [
            ("[suites.x]\ntargets = [\"gemmm\"]\n", "suites.x.targets"),
            ("[suites.x]\ntargets = []\n", "suites.x.targets"),
            ("[suites.x]\ninclude = [\"(\"]\n", "suites.x.include"),
            ("[suites.x]\nbase = \"huge\"\n", "suites.x.base"),
            ("[suites.x]\nsample_size = 5\n", "suites.x.sample_size"),
            (
                "[suites.x]\ncomponents = [\"torch\"]\n",
                "suites.x.components",
            ),
        ] {
            let err = refusal(text, "s.toml");
            assert!(err.contains(key) && err.contains("s.toml"), "{text}: {err}");
        }
    }
}
