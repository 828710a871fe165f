//! The runner's knobs. Criterion owns argv in `cargo bench`, so these are environment
//! variables, read once into a [`RunnerConfig`]; tests build the struct directly so they
//! never race on process-global environment.

use super::COMPONENTS;
use crate::backend::SamplingProfile;
use crate::config::ComponentSettings;
use crate::workload::Suite;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Seconds one `run` (or `verify`) call may take before the worker is killed.
pub const TIMEOUT_ENV: &str = "STACKBENCH_COMPONENT_TIMEOUT_S";
/// Seconds `describe` and `setup` may take: they import stacks and compile models.
pub const SETUP_TIMEOUT_ENV: &str = "STACKBENCH_COMPONENT_SETUP_TIMEOUT_S";
/// Folder holding the worker scripts (default: this crate's `scripts/components`).
pub const SCRIPTS_ENV: &str = "STACKBENCH_COMPONENT_SCRIPTS";
/// `1` copies every worker's stderr to ours as it arrives (for debugging a worker).
pub const ECHO_STDERR_ENV: &str = "STACKBENCH_COMPONENT_ECHO_STDERR";
/// Comma-separated components to run (default: all), e.g. `pytorch,onnxruntime`.
pub const ONLY_ENV: &str = "STACKBENCH_COMPONENTS";
/// Criterion samples per component benchmark (at least 10).
pub const SAMPLE_SIZE_ENV: &str = "STACKBENCH_COMPONENT_SAMPLE_SIZE";
/// Criterion warm-up seconds per component benchmark.
pub const WARM_UP_ENV: &str = "STACKBENCH_COMPONENT_WARM_UP_S";
/// Criterion measurement seconds per component benchmark.
pub const MEASUREMENT_ENV: &str = "STACKBENCH_COMPONENT_MEASUREMENT_S";

const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
// Importing torch cold on a busy 2-core machine takes tens of seconds; vLLM loads a model.
const DEFAULT_SETUP_TIMEOUT: Duration = Duration::from_secs(600);

/// How workers are started and bounded.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// Folder with `<component>.py`.
    pub scripts_dir: PathBuf,
    /// Folder with the shared Python helpers (`stackbench_worker.py`), put first on the
    /// workers' `PYTHONPATH`; kept apart from `scripts_dir` so test fixtures can use it.
    pub helpers_dir: PathBuf,
    /// Bound on `run` and `verify` calls.
    pub call_timeout: Duration,
    /// Bound on `describe`, `setup` and `shutdown` (imports, model builds, compiles).
    pub setup_timeout: Duration,
    /// Lines of worker stderr kept for error messages.
    pub stderr_tail_lines: usize,
    /// Stray stdout lines echoed to our stderr per worker before going quiet.
    pub max_logged_stray_lines: usize,
    /// Copy worker stderr to ours as it arrives.
    pub echo_stderr: bool,
    /// Overrides of the suite's Criterion sampling.
    pub sample_size: Option<usize>,
    pub warm_up: Option<Duration>,
    pub measurement: Option<Duration>,
    /// Components to run; `None` runs every one.
    pub only: Option<Vec<String>>,
    /// The id's first part: `components`, or `models` for the model sweep, whose workers
    /// are one script run once per backend (the id's second part).
    pub family: &'static str,
    /// Extra environment of each worker (the sweep's plan file and backend).
    pub env: Vec<(String, String)>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            scripts_dir: default_scripts_dir(),
            helpers_dir: default_scripts_dir().join("lib"),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            setup_timeout: DEFAULT_SETUP_TIMEOUT,
            stderr_tail_lines: 40,
            max_logged_stray_lines: 20,
            echo_stderr: false,
            sample_size: None,
            warm_up: None,
            measurement: None,
            only: None,
            family: super::FAMILY,
            env: Vec::new(),
        }
    }
}

/// One component to run, with its own settings and, where the config names one, its
/// own interpreter.
#[derive(Clone, Debug)]
pub struct ComponentRun {
    pub component: &'static str,
    pub config: RunnerConfig,
    pub python: Option<PathBuf>,
}

/// Errors in the runner's environment variables name the variable and the value.
#[derive(Debug, thiserror::Error)]
#[error(
    "{variable}={value:?} is not valid: expected a positive number of seconds (an integer >= 10 for the sample size)"
)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
}

impl RunnerConfig {
    /// Reads the environment; unset variables keep their defaults, bad ones are errors so a
    /// typo never silently runs with a different timeout.
    pub fn from_env() -> Result<RunnerConfig, ConfigError> {
        RunnerConfig::from_env_over(RunnerConfig::default())
    }

    /// `base` (the defaults with `stackbench.toml` applied) with the environment on top:
    /// a variable set for one run beats the file.
    pub fn from_env_over(mut config: RunnerConfig) -> Result<RunnerConfig, ConfigError> {
        if let Some(timeout) = seconds_from_env(TIMEOUT_ENV)? {
            config.call_timeout = timeout;
        }
        if let Some(timeout) = seconds_from_env(SETUP_TIMEOUT_ENV)? {
            config.setup_timeout = timeout;
        }
        if let Some(dir) = std::env::var_os(SCRIPTS_ENV).filter(|v| !v.is_empty()) {
            config.scripts_dir = PathBuf::from(dir);
            config.helpers_dir = config.scripts_dir.join("lib");
        }
        config.echo_stderr = std::env::var(ECHO_STDERR_ENV).is_ok_and(|v| v == "1");
        if let Some(raw) = std::env::var_os(ONLY_ENV).filter(|v| !v.is_empty()) {
            let names = raw.to_string_lossy().into_owned();
            let only: Vec<String> = names
                .split(',')
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect();
            if let Some(unknown) = only.iter().find(|n| !COMPONENTS.contains(&n.as_str())) {
                return Err(ConfigError {
                    variable: ONLY_ENV,
                    value: format!("{unknown} (known: {})", COMPONENTS.join(", ")),
                });
            }
            config.only = Some(only);
        }
        if let Some(warm_up) = seconds_from_env(WARM_UP_ENV)? {
            config.warm_up = Some(warm_up);
        }
        if let Some(measurement) = seconds_from_env(MEASUREMENT_ENV)? {
            config.measurement = Some(measurement);
        }
        if let Some(raw) = std::env::var_os(SAMPLE_SIZE_ENV) {
            let value = raw.to_string_lossy().into_owned();
            let size = value.trim().parse::<usize>().ok().filter(|n| *n >= 10);
            config.sample_size = Some(size.ok_or(ConfigError {
                variable: SAMPLE_SIZE_ENV,
                value,
            })?);
        }
        Ok(config)
    }

    /// This config with one component's `[components.NAME]` settings applied (values the
    /// file leaves unset keep this config's).
    pub fn with_settings(&self, settings: &ComponentSettings) -> RunnerConfig {
        let seconds = |v: Option<f64>| v.filter(|s| s.is_finite() && *s > 0.0);
        let mut config = self.clone();
        if let Some(s) = seconds(settings.timeout_s) {
            config.call_timeout = Duration::from_secs_f64(s);
        }
        if let Some(s) = seconds(settings.setup_timeout_s) {
            config.setup_timeout = Duration::from_secs_f64(s);
        }
        config.warm_up = seconds(settings.warm_up_s)
            .map(Duration::from_secs_f64)
            .or(config.warm_up);
        config.measurement = seconds(settings.measurement_s)
            .map(Duration::from_secs_f64)
            .or(config.measurement);
        config.sample_size = settings.sample_size.or(config.sample_size);
        config
    }

    /// Each component to run with its own config and the interpreter the file names for
    /// it: components the file disables are left out, and the environment still wins.
    pub fn per_component(file: &crate::config::Config) -> Result<Vec<ComponentRun>, ConfigError> {
        let mut runs = Vec::new();
        for component in RunnerConfig::default().components() {
            let settings = file.component(component);
            if settings.enabled == Some(false) {
                continue;
            }
            let config =
                RunnerConfig::from_env_over(RunnerConfig::default().with_settings(&settings))?;
            if config.components().contains(&component) {
                runs.push(ComponentRun {
                    component,
                    config,
                    python: settings.python.clone(),
                });
            }
        }
        Ok(runs)
    }

    /// Criterion sampling for component benchmarks. Each sample is one `run` round trip
    /// whose time is measured inside the worker, so the pipe costs nothing measured; a
    /// sample should still be long (tenths of a second) so per-call Python overhead and
    /// scheduler noise average out, and the quick suite must finish in minutes on 2 cores.
    pub fn sampling(&self, suite: Suite) -> SamplingProfile {
        let (sample_size, warm_up, measurement) = match suite {
            Suite::Quick => (10, Duration::from_secs(1), Duration::from_secs(3)),
            Suite::Full => (30, Duration::from_secs(2), Duration::from_secs(8)),
        };
        SamplingProfile {
            sample_size: self.sample_size.unwrap_or(sample_size),
            warm_up: self.warm_up.unwrap_or(warm_up),
            measurement: self.measurement.unwrap_or(measurement),
        }
    }

    /// The components this run covers, in the suite's order.
    pub fn components(&self) -> Vec<&'static str> {
        COMPONENTS
            .iter()
            .copied()
            .filter(|c| {
                self.only
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|o| o == c))
            })
            .collect()
    }

    /// The worker script of `component`.
    pub fn script_for(&self, component: &str) -> PathBuf {
        self.scripts_dir.join(format!("{component}.py"))
    }
}

/// The scripts shipped with this crate, found at run time (after the
/// `STACKBENCH_COMPONENT_SCRIPTS` override, applied by the caller): the first of the current
/// directory (bench targets run from the package root) and the folders above the running
/// executable (`<checkout>/target/<profile>/deps/<bench>`) that holds `scripts/components`.
/// Never a build-time path: a target directory shared between two checkouts (the gate's
/// base and head) would otherwise run the other checkout's workers.
pub fn default_scripts_dir() -> PathBuf {
    let relative = Path::new("scripts").join("components");
    let mut candidates: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(exe) = std::env::current_exe() {
        candidates.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    candidates
        .iter()
        .map(|dir| dir.join(&relative))
        .find(|dir| dir.is_dir())
        // Nothing found: name the place the workers were expected, so the error says it.
        .unwrap_or(relative)
}

fn seconds_from_env(variable: &'static str) -> Result<Option<Duration>, ConfigError> {
    let Some(raw) = std::env::var_os(variable) else {
        return Ok(None);
    };
    let value = raw.to_string_lossy().into_owned();
    if value.trim().is_empty() {
        return Ok(None);
    }
    parse_seconds(&value)
        .map(Some)
        .ok_or(ConfigError { variable, value })
}

/// Parses a positive, finite number of seconds (`"90"`, `"0.5"`).
pub fn parse_seconds(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_must_be_positive_and_finite() {
        assert_eq!(parse_seconds("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_seconds(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_seconds("0"), None);
        assert_eq!(parse_seconds("-3"), None);
        assert_eq!(parse_seconds("inf"), None);
        assert_eq!(parse_seconds("soon"), None);
    }

    #[test]
    fn only_keeps_the_suite_order() {
        let config = RunnerConfig {
            only: Some(vec!["tiny_gpt".into(), "pytorch".into()]),
            ..RunnerConfig::default()
        };
        assert_eq!(config.components(), vec!["pytorch", "tiny_gpt"]);
        assert_eq!(RunnerConfig::default().components(), COMPONENTS.to_vec());
    }

    #[test]
    fn sampling_overrides_replace_the_suite_defaults() {
        let config = RunnerConfig {
            sample_size: Some(50),
            measurement: Some(Duration::from_secs(10)),
            ..RunnerConfig::default()
        };
        let quick = config.sampling(Suite::Quick);
        assert_eq!(
            (quick.sample_size, quick.measurement),
            (50, Duration::from_secs(10))
        );
        assert_eq!(quick.warm_up, Duration::from_secs(1));
        assert_eq!(
            RunnerConfig::default().sampling(Suite::Full).sample_size,
            30
        );
    }

    #[test]
    fn file_settings_fill_what_the_runner_leaves_unset() {
        let settings = ComponentSettings {
            timeout_s: Some(7.0),
            warm_up_s: Some(0.5),
            sample_size: Some(20),
            ..ComponentSettings::default()
        };
        let config = RunnerConfig {
            measurement: Some(Duration::from_secs(4)),
            ..RunnerConfig::default()
        }
        .with_settings(&settings);
        assert_eq!(config.call_timeout, Duration::from_secs(7));
        assert_eq!(config.setup_timeout, DEFAULT_SETUP_TIMEOUT);
        let quick = config.sampling(Suite::Quick);
        assert_eq!(
            (quick.sample_size, quick.warm_up, quick.measurement),
            (20, Duration::from_millis(500), Duration::from_secs(4))
        );
    }

    #[test]
    fn scripts_are_found_by_component_name() {
        let config = RunnerConfig::default();
        assert!(
            config
                .script_for("pytorch")
                .ends_with("scripts/components/pytorch.py")
        );
    }
}
