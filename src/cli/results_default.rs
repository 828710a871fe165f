//! The config layer of `analyze-trends`: the results directory of a command whose
//! `--results` was left out is resolved after parsing by the one rule of
//! [`super::settings`]: `$STACKBENCH_RESULTS_DIR`, else the config's `results_dir`
//! (stackbench.toml, as `stackbench validate` reads it), else `benchmark_results`. Without
//! this, a machine whose config names another directory would record there through
//! `run_benchmarks.sh` and `validate` but query an empty `benchmark_results` through every
//! `analyze-trends` subcommand.
//!
//! clap keeps `benchmark_results` as its declared default only to tell "left out" from
//! "given" (its value source); `--help` states the whole chain instead
//! ([`super::settings::RESULTS_HELP`]). The config is read only when the flag and the
//! environment leave the directory open, so a command given `--results` never depends on
//! the config file.
//!
//! `gate` resolves its own, with the same rule and another default (`cli/gate.rs`).

use super::analyze_trends::{Cli, Command};
use super::settings::{self, FileLayer};
use crate::config::{Config, ConfigError};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::path::PathBuf;

/// Why the command line could not be turned into a command.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error(transparent)]
    Usage(#[from] clap::Error),
    /// The config that would name the results directory is unreadable or invalid.
    #[error("cannot take the results directory from the config: {0:#}")]
    Config(anyhow::Error),
}

/// Parses `args` (program name first) and applies the config's `results_dir` where the
/// results directory was left to its default. `config` finds the config (tests pass a fixed
/// one; the binary passes [`Config::discover`]).
pub fn parse_from<I, T>(
    args: I,
    config: impl FnOnce() -> Result<Config, ConfigError>,
) -> Result<Cli, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.invoked = matches.subcommand_name().map(str::to_owned);
    if let Some(results) = defaulted_results(&mut cli, &matches) {
        let file = FileLayer::new(|| Ok(config()?));
        *results = settings::results_dir(None, &file, settings::DEFAULT_RESULTS_DIR)
            .map_err(ParseError::Config)?
            .value;
    }
    Ok(cli)
}

/// The results directory argument of the chosen command, when clap took its default.
fn defaulted_results<'a>(cli: &'a mut Cli, matches: &ArgMatches) -> Option<&'a mut PathBuf> {
    let defaulted = |m: &ArgMatches, id: &str| {
        m.try_get_raw(id).is_ok_and(|v| v.is_some())
            && m.value_source(id) == Some(ValueSource::DefaultValue)
    };
    let Some(command) = cli.command.as_mut() else {
        // No subcommand: `report` over the positional directory.
        return defaulted(matches, "dir").then_some(&mut cli.report.dir);
    };
    let (_, sub) = matches.subcommand()?;
    let results = match command {
        Command::Record(a) => &mut a.results,
        Command::Compare(a) => &mut a.results,
        Command::Export(a) => &mut a.results,
        Command::Hardware(a) => &mut a.results,
        Command::Import(a) => &mut a.results,
        Command::Runs(a) | Command::Comparisons(a) => &mut a.results,
        Command::History(a) => &mut a.list.results,
        Command::Prune(a) => &mut a.list.results,
        Command::Ack(a) => &mut a.results,
        // The gate resolves its own (flag > env > file > target/stackbench-gate/results).
        Command::Gate(_) => return None,
        Command::Report(a) => return defaulted(sub, "dir").then_some(&mut a.dir),
        // Bisect keeps its steps' runs under its own --out, never in the user's history.
        Command::Simulate(_) | Command::Bisect(_) => return None,
        Command::Store(cmd) => return super::store_admin::defaulted_results(cmd, sub, defaulted),
    };
    defaulted(sub, "results").then_some(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(args: &[&str], config: &str) -> Cli {
        let text = config.to_owned();
        parse_from(
            std::iter::once("analyze-trends").chain(args.iter().copied()),
            move || Config::parse(&text, Path::new("stackbench.toml")),
        )
        .unwrap()
    }

    fn results_of(cli: &Cli) -> PathBuf {
        match &cli.command {
            Some(Command::Runs(a)) => a.results.clone(),
            Some(Command::History(a)) => a.list.results.clone(),
            Some(Command::Report(a)) => a.dir.clone(),
            Some(Command::Record(a)) => a.results.clone(),
            Some(Command::Store(super::super::store_admin::StoreCommand::Flush(a))) => {
                a.results.clone()
            }
            None => cli.report.dir.clone(),
            other => panic!("unexpected {other:?}"),
        }
    }

    const CONFIG: &str = "results_dir = \"from_config\"\n";

    #[test]
    fn an_omitted_results_directory_comes_from_the_config() {
        for args in [
            &["runs"][..],
            &["history", "a/b"],
            &["report"],
            &["record"],
            &["store", "flush"],
            // No subcommand (bare, it prints the help): the report, directory defaulted.
            &["--threshold", "3"],
        ] {
            assert_eq!(
                results_of(&parse(args, CONFIG)),
                Path::new("from_config"),
                "{args:?}"
            );
        }
    }

    #[test]
    fn a_given_results_directory_wins_even_when_it_names_the_default() {
        let cli = parse(&["runs", "--results", "benchmark_results"], CONFIG);
        assert_eq!(results_of(&cli), Path::new("benchmark_results"));
        let cli = parse(&["report", "mine"], CONFIG);
        assert_eq!(results_of(&cli), Path::new("mine"));
    }

    #[test]
    fn without_results_dir_in_the_config_the_default_stays() {
        let cli = parse(&["runs"], "");
        assert_eq!(results_of(&cli), Path::new("benchmark_results"));
    }

    #[test]
    fn a_given_directory_never_reads_the_config() {
        let cli = parse_from(
            ["analyze-trends", "runs", "--results", "r"],
            || -> Result<Config, ConfigError> { panic!("the config was read") },
        )
        .unwrap();
        assert_eq!(results_of(&cli), Path::new("r"));
    }

    #[test]
    fn a_broken_config_is_an_error_naming_its_file() {
        let err = parse_from(["analyze-trends", "runs"], || {
            Config::parse("results_dir = [", Path::new("bad/stackbench.toml"))
        })
        .unwrap_err();
        assert!(matches!(err, ParseError::Config(_)));
        assert!(err.to_string().contains("bad/stackbench.toml"), "{err}");
    }
}
