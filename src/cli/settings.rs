//! Every setting a command takes from more than one place, in one table, resolved by one
//! rule: flag > environment variable > `stackbench.toml` > default
//! ([`crate::config::precedence::resolve`]). Before this, the store went through a
//! process-global cell, the results directory through a patch of clap's default that
//! ignored the environment, and only `gate` knew the environment and `[gate]`; so the same
//! setting meant different things to different commands.
//!
//! | setting | flag | environment | stackbench.toml | default | commands |
//! |---|---|---|---|---|---|
//! | results directory | `--results` | `STACKBENCH_RESULTS_DIR` | `results_dir` | `benchmark_results` (`gate`: `target/stackbench-gate/results`) | every command with `--results` |
//! | store | `--store` | `STACKBENCH_STORE` | `store` | `<results>/stackbench.db` | every command that opens runs |
//! | rounds | `--rounds` | `STACKBENCH_GATE_ROUNDS` | `[gate] rounds` | 4 | `gate`, `bisect` |
//! | threshold | `--threshold` | `STACKBENCH_GATE_THRESHOLD_PERCENT` | `[gate] threshold_percent` | 5 (1 when counting instructions) | `gate`, `bisect`, `compare` |
//! | measure | `--measure` | `STACKBENCH_MEASURE` | `[gate] measure` | `time` | `gate`, `bisect` |
//!
//! The config file is read only when neither the flag nor the environment decides, so a
//! command given every flag never depends on it. `--help` states the whole chain for each
//! setting ([`RESULTS_HELP`], ...), since the value that applies is only known once the
//! file is read. `tests/settings_precedence.rs` walks [`TABLE`] through the real binary.

use crate::config::precedence::{EnvError, Resolved, Setting, Source, resolve};
use crate::config::{CONFIG_FILE, Config};
use crate::harness::measure::Measure;
use anyhow::Context;
use std::cell::OnceCell;
use std::path::PathBuf;

/// The results directory of every command but `gate`.
pub const RESULTS_DIR: Setting = Setting {
    flag: "--results",
    env: "STACKBENCH_RESULTS_DIR",
    file_key: "results_dir",
};
/// Where runs are kept when nothing names a directory.
pub const DEFAULT_RESULTS_DIR: &str = "benchmark_results";
/// `--help` for every `--results`.
pub const RESULTS_HELP: &str = "Results directory [default: $STACKBENCH_RESULTS_DIR, else \
                                `results_dir` in stackbench.toml, else benchmark_results]";

/// The store runs are kept in (run files stay in the results directory).
pub const STORE: Setting = Setting {
    flag: "--store",
    env: "STACKBENCH_STORE",
    file_key: "store",
};

/// Full rounds of the gate and of each bisect step.
pub const ROUNDS: Setting = Setting {
    flag: "--rounds",
    env: "STACKBENCH_GATE_ROUNDS",
    file_key: "[gate] rounds",
};
/// Full rounds when no flag, variable or file sets them.
pub const DEFAULT_ROUNDS: usize = 4;

/// The smallest slowdown, in percent, that is a regression (`gate`, `bisect`, `compare`).
pub const THRESHOLD: Setting = Setting {
    flag: "--threshold",
    env: "STACKBENCH_GATE_THRESHOLD_PERCENT",
    file_key: "[gate] threshold_percent",
};
/// The threshold, in percent, when no flag, variable or file sets it and time is measured.
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 5.0;

/// What a benchmark's number is: wall time or counted instructions.
pub const MEASURE: Setting = Setting {
    flag: "--measure",
    env: "STACKBENCH_MEASURE",
    file_key: "[gate] measure",
};

/// One row of the table: a setting and its default as `--help` and the docs spell it.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub setting: Setting,
    pub default: &'static str,
}

/// Every setting resolved by flag > environment > file > default.
pub const TABLE: &[Row] = &[
    Row {
        setting: RESULTS_DIR,
        default: DEFAULT_RESULTS_DIR,
    },
    Row {
        setting: STORE,
        default: "sqlite:<results>/stackbench.db",
    },
    Row {
        setting: ROUNDS,
        default: "4",
    },
    Row {
        setting: THRESHOLD,
        default: "5",
    },
    Row {
        setting: MEASURE,
        default: "time",
    },
];

/// How a [`FileLayer`] finds its config (discovery, `--config`, or one already loaded).
type LoadConfig<'a> = Box<dyn FnOnce() -> anyhow::Result<Config> + 'a>;

/// The config file layer: loaded at most once, and only when a setting falls through to it.
pub struct FileLayer<'a> {
    load: std::cell::Cell<Option<LoadConfig<'a>>>,
    config: OnceCell<Config>,
}

impl<'a> FileLayer<'a> {
    pub fn new(load: impl FnOnce() -> anyhow::Result<Config> + 'a) -> Self {
        FileLayer {
            load: std::cell::Cell::new(Some(Box::new(load))),
            config: OnceCell::new(),
        }
    }

    /// A layer over a config already in hand.
    pub fn of(config: &Config) -> FileLayer<'static> {
        let config = config.clone();
        FileLayer::new(move || Ok(config))
    }

    /// The config, loading it on first use.
    pub fn config(&self) -> anyhow::Result<&Config> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let load = self
            .load
            .take()
            .context("the config failed to load before")?;
        let loaded = load()?;
        Ok(self.config.get_or_init(|| loaded))
    }

    /// A value the file holds, with the file's path (for messages naming where it came from).
    fn value<T>(
        &self,
        pick: impl FnOnce(&Config) -> anyhow::Result<Option<T>>,
    ) -> anyhow::Result<Option<(T, PathBuf)>> {
        let config = self.config()?;
        let path = config
            .source
            .clone()
            .unwrap_or_else(|| PathBuf::from(CONFIG_FILE));
        Ok(pick(config)?.map(|value| (value, path)))
    }
}

/// The results directory: `flag` > `$STACKBENCH_RESULTS_DIR` > `results_dir` > `default`.
pub fn results_dir(
    flag: Option<PathBuf>,
    file: &FileLayer<'_>,
    default: &str,
) -> anyhow::Result<Resolved<PathBuf>> {
    resolve(
        RESULTS_DIR,
        flag,
        || file.value(|c| Ok(c.results_dir.clone())),
        PathBuf::from(default),
    )
}

/// [`results_dir`] for a command that holds its config already (`stackbench validate`,
/// `serve`, `dashboard`), with the default `benchmark_results`.
pub fn results_dir_of(flag: Option<PathBuf>, config: &Config) -> PathBuf {
    let path = config
        .source
        .clone()
        .unwrap_or_else(|| PathBuf::from(CONFIG_FILE));
    let file = || Ok(config.results_dir.clone().map(|dir| (dir, path)));
    match resolve::<_, EnvError>(RESULTS_DIR, flag, file, DEFAULT_RESULTS_DIR.into()) {
        Ok(resolved) => resolved.value,
        // Unreachable: every text is a path, so the variable cannot fail to parse.
        Err(_) => config.results_dir(),
    }
}

/// Rounds: `flag` > `$STACKBENCH_GATE_ROUNDS` > `[gate] rounds` > 4.
pub fn rounds(flag: Option<usize>, file: &FileLayer<'_>) -> anyhow::Result<Resolved<usize>> {
    resolve(
        ROUNDS,
        flag,
        || file.value(|c| Ok(c.gate().rounds.map(|r| r as usize))),
        DEFAULT_ROUNDS,
    )
}

/// Measure: `flag` > `$STACKBENCH_MEASURE` > `[gate] measure` > time.
pub fn measure(flag: Option<Measure>, file: &FileLayer<'_>) -> anyhow::Result<Resolved<Measure>> {
    resolve(
        MEASURE,
        flag,
        || {
            file.value(|c| {
                c.gate()
                    .measure
                    .as_deref()
                    .map(|text| {
                        let path = c.source.as_deref().unwrap_or(CONFIG_FILE.as_ref());
                        text.parse::<Measure>()
                            .with_context(|| format!("{} in {}", MEASURE.file_key, path.display()))
                    })
                    .transpose()
            })
        },
        Measure::Time,
    )
}

/// Threshold: `flag` > `$STACKBENCH_GATE_THRESHOLD_PERCENT` > `[gate] threshold_percent` >
/// 5, or counting mode's own 1 % when `measure` is instructions and nothing set it: a count
/// does not move with noise, so the time mode's 5 % would hide real changes.
pub fn threshold(
    flag: Option<f64>,
    file: &FileLayer<'_>,
    measure: Measure,
) -> anyhow::Result<Resolved<f64>> {
    let threshold = resolve(
        THRESHOLD,
        flag,
        || file.value(|c| Ok(c.gate().threshold_percent)),
        DEFAULT_THRESHOLD_PERCENT,
    )?;
    Ok(match (measure, &threshold.source) {
        (Measure::Instructions, Source::Default) => Resolved {
            value: crate::harness::measure::verdict::DEFAULT_THRESHOLD * 100.0,
            source: Source::Default,
        },
        _ => threshold,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn layer(text: &'static str) -> FileLayer<'static> {
        FileLayer::new(move || Ok(Config::parse(text, Path::new("s.toml"))?))
    }

    #[test]
    fn every_setting_in_the_table_has_distinct_names() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                assert_ne!(a.setting.flag, b.setting.flag);
                assert_ne!(a.setting.env, b.setting.env);
                assert_ne!(a.setting.file_key, b.setting.file_key);
            }
        }
    }

    #[test]
    fn the_file_decides_when_no_flag_does_and_names_itself() {
        let file = layer("results_dir = \"r\"\n[gate]\nrounds = 6\nthreshold_percent = 2.5\n");
        // The variables of this table are not set in the unit-test process.
        let results = results_dir(None, &file, DEFAULT_RESULTS_DIR).unwrap();
        assert_eq!(results.value, Path::new("r"));
        assert_eq!(results.source.to_string(), "results_dir in s.toml");
        assert_eq!(rounds(None, &file).unwrap().value, 6);
        assert_eq!(threshold(None, &file, Measure::Time).unwrap().value, 2.5);
        assert_eq!(rounds(Some(3), &file).unwrap().value, 3);
    }

    #[test]
    fn counting_has_its_own_default_threshold_but_not_over_a_set_one() {
        let empty = layer("");
        assert_eq!(
            threshold(None, &empty, Measure::Instructions)
                .unwrap()
                .value,
            1.0
        );
        let set = layer("[gate]\nthreshold_percent = 3\n");
        assert_eq!(
            threshold(None, &set, Measure::Instructions).unwrap().value,
            3.0
        );
    }

    #[test]
    fn a_flag_never_loads_the_file() {
        let never = FileLayer::new(|| panic!("the config was read"));
        assert_eq!(rounds(Some(5), &never).unwrap().value, 5);
        assert_eq!(
            results_dir(Some("x".into()), &never, "d").unwrap().value,
            Path::new("x")
        );
    }
}
