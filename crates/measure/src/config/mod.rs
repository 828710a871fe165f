//! `stackbench.toml`: the one place a team writes down what "a suite", "fast enough" and
//! "what an hour of this machine costs" mean for them. The file is optional: every value
//! has a default, so a fresh clone runs without one. Unknown keys are errors that name the
//! key with its line and column, so a typo never silently runs with a default instead.
//!
//! Precedence everywhere: an environment variable set for one run beats the file, and the
//! file beats the built-in default.

pub mod accuracy;
pub mod levels;
pub mod precedence;
pub mod prices;
pub mod suites;
pub mod sweeps;
pub mod thresholds;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use accuracy::{AccuracyRule, AccuracyRules};
pub use prices::{PriceBasis, Prices};
pub use suites::{ResolvedSuite, SamplingOverride, SuiteConfig};
pub use sweeps::SweepConfig;
pub use thresholds::{ThresholdRule, ValidateConfig};

/// The file looked up in the current directory when no path is given.
pub const CONFIG_FILE: &str = "stackbench.toml";
/// Names the config file for bench targets (Criterion owns their argv).
pub const CONFIG_ENV: &str = "STACKBENCH_CONFIG";

/// Everything that can go wrong reading the config; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The I/O error is in the message, not a `source`: `{:#}` would print it twice.
    #[error("cannot read the config file {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// toml's message carries the line, the column and the offending key.
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("unknown suite '{name}' (known: {known})")]
    UnknownSuite { name: String, known: String },
    #[error("unknown sweep '{name}' (defined in the config: {known})")]
    UnknownSweep { name: String, known: String },
}

/// The whole file. Every section defaults, so `""` is a valid config.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where runs, reports and validation results are kept (default `benchmark_results`).
    pub results_dir: Option<PathBuf>,
    /// Where runs are stored: `sqlite:PATH` or `postgres://user@host/db` (default: the
    /// results directory's `stackbench.db`). `--store` and `$STACKBENCH_STORE` win over it.
    pub store: Option<String>,
    /// Named suites; `quick`, `full`, `pre-installation` and `component` exist without
    /// the file, and an entry here replaces the built-in one of that name.
    #[serde(default)]
    pub suites: BTreeMap<String, SuiteConfig>,
    /// Model sweeps by name (`stackbench sweep --sweep NAME`).
    #[serde(default)]
    pub sweeps: BTreeMap<String, SweepConfig>,
    /// Settings of the Python component tier, per component name.
    #[serde(default)]
    pub components: BTreeMap<String, ComponentSettings>,
    /// Expected values per benchmark id pattern for `stackbench validate`.
    #[serde(default)]
    pub thresholds: Vec<ThresholdRule>,
    #[serde(default)]
    pub validate: ValidateConfig,
    /// How much accuracy a benchmark may lose in a comparison or the gate, per id glob
    /// (see [`accuracy`]).
    #[serde(default)]
    pub accuracy: BTreeMap<String, AccuracyRule>,
    #[serde(default)]
    pub gate: GateSettings,
    /// `stackbench serve` as others reach it: `[serve] url` makes the PR comment link to
    /// the comparison's page there.
    #[serde(default)]
    pub serve: ServeSettings,
    /// What a device costs, for the cross-hardware report's performance per dollar: one
    /// basis and currency, prices keyed by device name (see [`prices`]).
    #[serde(default)]
    pub prices: Option<Prices>,
    /// Where the config was read from (`None`: defaults only). Not a key in the file.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// One component's settings; each unset value keeps the runner's default.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ComponentSettings {
    /// `false` leaves the component out of every suite.
    pub enabled: Option<bool>,
    /// Seconds one `run`/`verify` call may take before the worker is killed.
    pub timeout_s: Option<f64>,
    /// Seconds `describe`/`setup` may take (imports, model builds, compiles).
    pub setup_timeout_s: Option<f64>,
    pub warm_up_s: Option<f64>,
    pub measurement_s: Option<f64>,
    pub sample_size: Option<usize>,
    /// The interpreter whose packages this component measures.
    pub python: Option<PathBuf>,
}

/// The pull-request gate's knobs (`analyze-trends gate` reads them through [`Config::gate`],
/// below its flags and environment variables: [`precedence`]). `None` when the file says
/// nothing, so the gate's own default applies.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GateSettings {
    /// Smallest slowdown, in percent, that fails the gate.
    pub threshold_percent: Option<f64>,
    /// Full interleaved base/head rounds (at least 2: the verdict needs round-to-round
    /// differences).
    pub rounds: Option<u32>,
    /// `time` or `instructions` (counting mode); `analyze-trends gate` parses it, so the
    /// config does not depend on the harness that defines the measures.
    pub measure: Option<String>,
}

/// `[serve]`: where the dashboard is reachable (`url = "http://bench.lab:8765"`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServeSettings {
    pub url: Option<String>,
}

impl Config {
    /// `explicit` when given (it must exist), else `$STACKBENCH_CONFIG`, else the nearest
    /// `stackbench.toml` in the current directory or a folder above it (as cargo finds
    /// `Cargo.toml`: bench targets run from their package's folder inside the workspace,
    /// below the file the user wrote), else the defaults.
    pub fn discover(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let from_env = std::env::var_os(CONFIG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        match explicit.map(Path::to_path_buf).or(from_env) {
            Some(path) => Config::load(&path),
            None => match nearest_config_file() {
                Some(found) => Config::load(&found),
                None => Ok(Config::default()),
            },
        }
    }

    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Config::parse(&text, path)
    }

    /// Parses and checks `text`; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        config.source = Some(path.to_path_buf());
        config
            .check()
            .map_err(|(key, message)| ConfigError::Invalid {
                path: path.to_path_buf(),
                key,
                message,
            })?;
        Ok(config)
    }

    /// Checks what serde's types cannot: regexes compile, numbers are in range.
    fn check(&self) -> Result<(), (String, String)> {
        for (name, suite) in &self.suites {
            suite
                .check()
                .map_err(|(k, m)| (format!("suites.{name}.{k}"), m))?;
        }
        for (name, sweep) in &self.sweeps {
            sweep
                .check()
                .map_err(|(k, m)| (format!("sweeps.{name}.{k}"), m))?;
        }
        for (name, settings) in &self.components {
            settings
                .check()
                .map_err(|(k, m)| (format!("components.{name}.{k}"), m))?;
        }
        for (i, rule) in self.thresholds.iter().enumerate() {
            rule.check()
                .map_err(|(k, m)| (format!("thresholds[{i}].{k}"), m))?;
        }
        self.validate.check()?;
        AccuracyRules::new(&self.accuracy)?;
        if self
            .gate
            .threshold_percent
            .is_some_and(|t| !(t.is_finite() && t >= 0.0))
        {
            return Err((
                "gate.threshold_percent".into(),
                "must be a non-negative percentage".into(),
            ));
        }
        if self.gate.rounds.is_some_and(|r| r < 2) {
            return Err((
                "gate.rounds".into(),
                "must be at least 2 (the verdict needs round-to-round differences)".into(),
            ));
        }
        if let Some(prices) = &self.prices {
            prices.check()?;
        }
        Ok(())
    }

    /// The `[accuracy]` rules, compiled (checked when the file was read, so never an error
    /// here; a rule that could not compile would have failed `parse`).
    pub fn accuracy_rules(&self) -> AccuracyRules {
        AccuracyRules::new(&self.accuracy).unwrap_or_default()
    }

    /// The results directory: the file's value, else `benchmark_results`.
    pub fn results_dir(&self) -> PathBuf {
        self.results_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("benchmark_results"))
    }

    /// The gate's threshold and rounds as the file sets them.
    pub fn gate(&self) -> &GateSettings {
        &self.gate
    }

    /// The price of a device (see [`Prices::price_for`]); `None` without a `[prices]` table.
    pub fn price_for(&self, device: &str) -> Option<f64> {
        self.prices.as_ref()?.price_for(device)
    }

    /// The suite `name`: the file's entry, else the built-in one.
    pub fn suite(&self, name: &str) -> Result<ResolvedSuite, ConfigError> {
        suites::resolve(self, name)
    }

    /// Every suite name this config knows, built-in ones included.
    pub fn suite_names(&self) -> Vec<String> {
        let mut names: Vec<String> = suites::BUILT_IN.iter().map(|s| s.to_string()).collect();
        names.extend(self.suites.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// The sweep `name` of `[sweeps.NAME]`.
    pub fn sweep(&self, name: &str) -> Result<&SweepConfig, ConfigError> {
        self.sweeps.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.sweeps.keys().map(String::as_str).collect();
            ConfigError::UnknownSweep {
                name: name.into(),
                known: if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                },
            }
        })
    }

    /// Settings of one component (all unset when the file has none).
    pub fn component(&self, name: &str) -> ComponentSettings {
        self.components.get(name).cloned().unwrap_or_default()
    }
}

impl ComponentSettings {
    fn check(&self) -> Result<(), (String, String)> {
        for (key, value) in [
            ("timeout_s", self.timeout_s),
            ("setup_timeout_s", self.setup_timeout_s),
            ("warm_up_s", self.warm_up_s),
            ("measurement_s", self.measurement_s),
        ] {
            seconds(key, value)?;
        }
        if self.sample_size.is_some_and(|n| n < 10) {
            return Err((
                "sample_size".into(),
                "Criterion needs at least 10 samples".into(),
            ));
        }
        Ok(())
    }
}

/// A positive, finite number of seconds, or unset.
pub(crate) fn seconds(key: &str, value: Option<f64>) -> Result<Option<Duration>, (String, String)> {
    match value {
        None => Ok(None),
        Some(v) if v.is_finite() && v > 0.0 => Ok(Some(Duration::from_secs_f64(v))),
        Some(v) => Err((
            key.into(),
            format!("{v} is not a positive number of seconds"),
        )),
    }
}

/// The nearest `stackbench.toml` from the current directory up, as a path relative to the
/// current directory (`stackbench.toml`, `../../stackbench.toml`), so messages name it as
/// the user would type it; `None` when there is none (or the current directory cannot be
/// read, as in a deleted folder).
fn nearest_config_file() -> Option<PathBuf> {
    nearest_config_from(&std::env::current_dir().ok()?)
}

fn nearest_config_from(here: &Path) -> Option<PathBuf> {
    here.ancestors().enumerate().find_map(|(up, dir)| {
        dir.join(CONFIG_FILE).is_file().then(|| {
            let mut relative: PathBuf = std::iter::repeat_n("..", up).collect();
            relative.push(CONFIG_FILE);
            relative
        })
    })
}

/// Config texts as the submodules' tests write them, read as if from the file `file` (the
/// name their messages carry).
#[cfg(test)]
pub(crate) mod testing {
    use super::Config;
    use std::path::Path;

    /// `text` read, for a test whose text is valid.
    pub fn parsed(text: &str, file: &str) -> Config {
        Config::parse(text, Path::new(file)).unwrap()
    }

    /// The message `text` is refused with, for a test whose text is not valid.
    pub fn refusal(text: &str, file: &str) -> String {
        Config::parse(text, Path::new(file))
            .unwrap_err()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_config_up_the_tree_is_found_relative_to_where_we_stand() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("crates").join("benches");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(root.path().join(CONFIG_FILE), "").unwrap();
        assert_eq!(
            nearest_config_from(root.path()),
            Some(PathBuf::from("stackbench.toml"))
        );
        assert_eq!(
            nearest_config_from(&deep),
            Some(PathBuf::from("../../stackbench.toml"))
        );
        // The nearest one wins over one further up.
        std::fs::write(deep.join(CONFIG_FILE), "").unwrap();
        assert_eq!(
            nearest_config_from(&deep),
            Some(PathBuf::from("stackbench.toml"))
        );
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("stackbench.toml"))
    }

    #[test]
    fn an_empty_file_is_all_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.results_dir(), PathBuf::from("benchmark_results"));
        assert_eq!(config.gate(), &GateSettings::default());
        assert!(
            config
                .suite_names()
                .contains(&"pre-installation".to_string())
        );
    }

    #[test]
    fn an_unknown_key_is_named_with_line_and_column() {
        let err = parse("results_dir = \"r\"\n\n[gate]\nrounds = 3\nthreshold = 5\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("stackbench.toml"), "{err}");
        assert!(err.contains("line 5"), "{err}");
        assert!(err.contains("column 1"), "{err}");
        assert!(err.contains("threshold"), "{err}");
    }

    #[test]
    fn out_of_range_values_name_their_key() {
        let err = parse("[components.pytorch]\ntimeout_s = -1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("components.pytorch.timeout_s"), "{err}");
        let err = parse("[gate]\nrounds = 0\n").unwrap_err().to_string();
        assert!(err.contains("gate.rounds"), "{err}");
        let err = parse("[prices]\nbasis = \"hour\"\n[prices.devices]\ncpu = -1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("prices.devices.\"cpu\""), "{err}");
    }

    #[test]
    fn the_shipped_example_loads_and_says_what_it_shows() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../stackbench.example.toml");
        let config = Config::load(&path).unwrap();
        assert_eq!(config.suite("smoke").unwrap().targets.len(), 2);
        assert_eq!(config.component("vllm").enabled, Some(false));
        assert_eq!(config.sweep("serving").unwrap().batch, Some(vec![1, 8, 32]));
        assert_eq!(config.thresholds.len(), 2);
        assert_eq!(config.gate().rounds, Some(3));
        assert_eq!(config.price_for("NVIDIA H100 80GB HBM3"), Some(2.5));
        assert_eq!(config.source.as_deref(), Some(path.as_path()));
    }

    #[test]
    fn prices_match_exactly_then_by_the_longest_contained_key() {
        let config = parse(
            "[prices]\nbasis = \"hour\"\n[prices.devices]\nH100 = 2.0\n\"H100 80GB\" = 3.0\ncpu = 900\n",
        )
        .unwrap();
        assert_eq!(config.price_for("NVIDIA H100 80GB HBM3"), Some(3.0));
        assert_eq!(config.price_for("NVIDIA H100 PCIe"), Some(2.0));
        assert_eq!(config.price_for("cpu"), Some(900.0));
        assert!(config.price_for("AMD Instinct MI300X").is_none());
    }
}
