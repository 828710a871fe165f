//! What the store subcommands (`runs`, `history`, `comparisons`, `prune`, `ack`) share: the
//! list arguments, opening an existing results directory, and printing rows; and which
//! store every command opens: `--store URL` (on every subcommand), else `$STACKBENCH_STORE`,
//! else `store = "..."` in stackbench.toml, else the results directory's own
//! `sqlite:<results>/stackbench.db`. The binary resolves it once, before the command runs
//! (`choose_store`) and hands the [`ChosenStore`] to the command, which opens its results
//! directory through it.

use crate::config::precedence::{Resolved, Setting, resolve};
use crate::config::{Config, ConfigError};
use crate::report::ReportWriter;
use crate::report::rows::ROW_FORMATS;
use crate::report::writer::Format;
use crate::results::{RunStore, StoreUrl};
use anyhow::{Context, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
    /// What to print the rows as
    #[arg(long, value_parser = Format::parser(ROW_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
}

/// The store setting's names in each place it can come from ([`super::settings::TABLE`]).
pub const STORE_SETTING: Setting = super::settings::STORE;

/// A store choice: a URL, or the results directory's own SQLite file (`None`).
#[derive(Clone, Debug, PartialEq)]
struct Choice(Option<StoreUrl>);

impl FromStr for Choice {
    type Err = crate::results::db::StoreUrlError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StoreUrl::parse(s).map(|url| Choice(Some(url)))
    }
}

/// The store a command opens, resolved once by [`choose_store`] and handed to the command
/// (no process-global: two commands in one process, as in tests, each get their own).
/// `None` inside: each results directory's own SQLite file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChosenStore(pub Option<StoreUrl>);

impl ChosenStore {
    /// The results directory `results` with this store (its own SQLite file by default).
    pub fn open(&self, results: &Path) -> RunStore {
        match &self.0 {
            Some(url) => RunStore::with_store(results, url.clone()),
            None => RunStore::new(results),
        }
    }

    /// The store's URL when one was named.
    pub fn url(&self) -> Option<StoreUrl> {
        self.0.clone()
    }

    /// The store of an existing results directory: a query never creates one. A store of
    /// its own (PostgreSQL, or a SQLite file elsewhere that exists) needs no results
    /// directory.
    pub fn existing(&self, results: &Path) -> anyhow::Result<RunStore> {
        let store = self.open(results);
        let elsewhere = match store.store_url() {
            StoreUrl::Sqlite(path) => {
                path != results.join(crate::results::db::DB_FILE) && path.exists()
            }
            _ => true,
        };
        if !results.is_dir() && !elsewhere {
            bail!(
                "results directory {} does not exist (record a run with `analyze-trends record` or import some with `analyze-trends import`)",
                results.display()
            );
        }
        Ok(store)
    }
}

/// Resolves the store (flag > `$STACKBENCH_STORE` > the config's `store` > default).
/// `config` is read only when neither the flag nor the environment decides.
pub fn choose_store(
    flag: Option<&str>,
    config: impl FnOnce() -> Result<Config, ConfigError>,
) -> anyhow::Result<ChosenStore> {
    let flag = flag.map(Choice::from_str).transpose().context("--store")?;
    // Checked here first: the generic environment error would print the value as given,
    // password and all; the store URL's own error prints it redacted.
    if flag.is_none()
        && let Some(text) = std::env::var_os(STORE_SETTING.env).filter(|v| !v.is_empty())
    {
        StoreUrl::parse(text.to_string_lossy().trim())
            .with_context(|| format!("${}", STORE_SETTING.env))?;
    }
    let resolved: Resolved<Choice> = resolve(
        STORE_SETTING,
        flag,
        || -> anyhow::Result<Option<(Choice, PathBuf)>> {
            let config = config()?;
            let path = config
                .source
                .clone()
                .unwrap_or_else(|| PathBuf::from("stackbench.toml"));
            match &config.store {
                None => Ok(None),
                Some(text) => {
                    let choice = Choice::from_str(text)
                        .with_context(|| format!("`store` in {}", path.display()))?;
                    Ok(Some((choice, path)))
                }
            }
        },
        Choice(None),
    )?;
    Ok(ChosenStore(resolved.value.0))
}

/// Where a `stackbench` command that reads or keeps runs finds them: `--config`,
/// `--results` and `--store`, resolved the same way for every such command.
#[derive(Args, Debug, Clone, Default)]
pub struct RunsLocation {
    /// The config file (default: $STACKBENCH_CONFIG, else ./stackbench.toml when present)
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, help = super::settings::RESULTS_HELP)]
    pub results: Option<PathBuf>,
    /// The store: `sqlite:PATH` or `postgres://user@host/db`
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

impl RunsLocation {
    /// The config `--config` names, else the one found by the usual rule.
    pub fn config(&self) -> anyhow::Result<Config> {
        Ok(Config::discover(self.config.as_deref())?)
    }

    /// The results directory and its store: `--results` > `$STACKBENCH_RESULTS_DIR` > the
    /// config's `results_dir`, and
    /// `--store` > `$STACKBENCH_STORE` > the config's `store`.
    pub fn open(&self, config: &Config) -> anyhow::Result<(PathBuf, RunStore)> {
        let results = crate::cli::settings::results_dir_of(self.results.clone(), config);
        let store = store_for(&results, self.store.as_deref(), config)?;
        Ok((results, store))
    }
}

/// For `stackbench` commands, which hold their config already: the results directory with
/// the store that `flag` > `$STACKBENCH_STORE` > the config's `store` names.
pub fn store_for(results: &Path, flag: Option<&str>, config: &Config) -> anyhow::Result<RunStore> {
    Ok(choose_store(flag, || Ok(config.clone()))?.open(results))
}

/// Prints `report` in `format` on stdout.
pub(super) fn emit(report: &dyn ReportWriter, format: Format) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    report
        .write(format, &mut stdout.lock())
        .context("cannot write to stdout")
}
