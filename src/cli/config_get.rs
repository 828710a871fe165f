//! `stackbench config --get KEY`: one setting as the tools resolve it (its environment
//! variable, else stackbench.toml's value, else the default; `cli::settings`), for scripts
//! such as run_benchmarks.sh that must agree with the binaries on where results live
//! without parsing TOML or repeating the precedence themselves.

use crate::config::Config;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// The setting to print
    #[arg(long, value_enum)]
    pub get: ConfigKey,
    /// The config file (default: $STACKBENCH_CONFIG, else ./stackbench.toml when present)
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConfigKey {
    /// Where runs and reports are kept ($STACKBENCH_RESULTS_DIR, else `results_dir`, else
    /// benchmark_results)
    #[value(name = "results_dir")]
    ResultsDir,
}

/// The resolved value of `key` in `config`.
pub fn value(config: &Config, key: ConfigKey) -> String {
    match key {
        ConfigKey::ResultsDir => super::settings::results_dir_of(None, config)
            .display()
            .to_string(),
    }
}

/// Prints the value; exit 2 naming the file when the config cannot be read.
pub fn config_main(args: ConfigArgs) -> ExitCode {
    match Config::discover(args.config.as_deref()) {
        Ok(config) => {
            println!("{}", value(&config, args.get));
            ExitCode::SUCCESS
        }
        Err(error) => {
            super::errors::report("stackbench config", error);
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn results_dir_is_the_files_value_else_the_default() {
        let set = Config::parse("results_dir = \"elsewhere/r\"\n", Path::new("s.toml")).unwrap();
        assert_eq!(value(&set, ConfigKey::ResultsDir), "elsewhere/r");
        let unset = Config::parse("", Path::new("s.toml")).unwrap();
        assert_eq!(value(&unset, ConfigKey::ResultsDir), "benchmark_results");
    }
}
