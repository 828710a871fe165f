//! `analyze-trends`: the `Cli` and `Command` enum and the dispatch to one file per
//! subcommand (`record.rs`, `compare.rs`, `gate.rs`, ...). The binary only maps the
//! [`Outcome`] to an exit code: 0 clean, 1 regression or failure, 2 bad input or usage,
//! 3 unsure (`compare` and `gate`).

use super::report::ReportArgs;
use super::simulate::SimulateCommand;
use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "Examples:
  analyze-trends record --label nightly            # keep target/criterion's `new` baseline
  analyze-trends compare base new                  # Criterion baselines: exit 1 on a regression
  analyze-trends compare previous latest --format markdown
  analyze-trends compare main pr --filter '^gemm/' --threshold 3 --format json
  analyze-trends benchmark_results                 # history report into benchmark_results/reports/
  analyze-trends export --format csv > runs.csv
  analyze-trends import ci-artifacts/             # runs from other machines, idempotent
  analyze-trends runs                              # the stored runs, newest first
  analyze-trends history gemm/f32/1024 --format csv
  analyze-trends ack gemm/f32/1024 --reason 'driver 560 upgrade'
  analyze-trends prune --keep-days 90 --keep-latest 20
  analyze-trends record --store http://bench-server:8765   # upload (token: STACKBENCH_STORE_TOKEN)
  analyze-trends store flush --store http://bench-server:8765  # deliver runs kept in spool/

Exit codes: 0 nothing regressed, 1 a regression was found, 2 bad input or usage,
3 unsure (compare and gate: some benchmark inconclusive; not a pass).";

#[derive(Parser, Debug)]
#[command(
    name = "analyze-trends",
    version,
    about = "Record Criterion runs, gate pull requests on real statistics, and report trends",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    // Bare `analyze-trends` is someone asking what it does: the help (exit 2, as any usage
    // error). `analyze-trends DIR` still writes the trend report of DIR.
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The store: `sqlite:PATH` or `postgres://user@host/db` (else $STACKBENCH_STORE, else
    /// `store` in stackbench.toml, else <results>/stackbench.db). Run files stay in --results.
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// Without a subcommand: `report` over this results directory.
    #[command(flatten)]
    pub report: ReportArgs,
    /// The subcommand as typed (`gate`, `store migrate` is `store`), for the error line;
    /// set by `results_default::parse_from`, not an argument.
    #[arg(skip)]
    pub invoked: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Record one Criterion baseline as a run (<results>/stackbench.db and <results>/runs/).
    Record(super::record::RecordArgs),
    /// Compare two Criterion baselines or recorded runs: the PR gate.
    Compare(super::compare::CompareArgs),
    /// Write the history report (the default command).
    Report(ReportArgs),
    /// Print one row per benchmark per run.
    Export(super::export::ExportArgs),
    /// Cross-hardware report: every machine's figures, perf per $ and per W, recommendations.
    Hardware(super::hardware::HardwareArgs),

    /// Import run files (other machines, CI artifacts) into the history database.
    Import(super::import::ImportArgs),
    /// List the stored runs, newest first.
    Runs(super::store::ListArgs),
    /// One benchmark over time, with its change points and verdict.
    History(super::history::HistoryArgs),
    /// Past `compare` and gate verdicts, newest first.
    Comparisons(super::store::ListArgs),
    /// Remove old runs and comparisons (never one a kept comparison or an acknowledgement needs).
    Prune(super::prune::PruneArgs),
    /// Acknowledge an intentional step: history verdicts then start from its new level.
    Ack(super::ack::AckArgs),
    /// Gate a pull request: base and head built from git, measured in alternating rounds.
    Gate(super::gate::GateArgs),
    /// Find the commit where benchmarks regressed: binary search of the gate's judgement.
    Bisect(super::bisect::BisectArgs),
    /// The store itself: upgrade its schema (`migrate`), copy it to another (`copy`).
    #[command(subcommand)]
    Store(super::store_admin::StoreCommand),
    /// Simulators for the gate's quality and speed measurements.
    #[command(hide = true, subcommand)]
    Simulate(SimulateCommand),
}

/// What a successful command found; it lives below the CLI with the evidence rule.
pub use crate::analysis::Outcome;

pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let store = &super::store::choose_store(cli.store.as_deref(), || {
        crate::config::Config::discover(None)
    })?;
    match cli.command {
        Some(Command::Record(args)) => super::record::record(args, store),
        Some(Command::Compare(args)) => super::compare::compare_command(args, store),
        Some(Command::Report(args)) => super::report::report(args, store),
        Some(Command::Export(args)) => super::export::export(args, store),
        Some(Command::Hardware(args)) => {
            super::hardware::hardware(args, store).map(|()| Outcome::Clean)
        }

        Some(Command::Import(args)) => super::import::import(args, store),
        Some(Command::Runs(args)) => super::runs::runs(args, store),
        Some(Command::History(args)) => super::history::history(args, store),
        Some(Command::Comparisons(args)) => super::comparisons::comparisons(args, store),
        Some(Command::Prune(args)) => super::prune::prune(args, store),
        Some(Command::Ack(args)) => super::ack::ack(args, store),
        Some(Command::Gate(args)) => super::gate::gate_command(args, store),
        Some(Command::Bisect(args)) => super::bisect::bisect_command(args),
        Some(Command::Simulate(cmd)) => super::simulate::simulate(cmd),
        Some(Command::Store(cmd)) => super::store_admin::store_command(cmd, store),
        None => {
            if let Some(command) = mistyped_command(&cli.report.dir) {
                anyhow::bail!(
                    "`{}` is neither a results directory nor a command: did you mean \
                     `analyze-trends {command}`? (`analyze-trends --help` lists the commands)",
                    cli.report.dir.display()
                );
            }
            super::report::report(cli.report, store)
        }
    }
}

/// The subcommand a bare word given as the report's directory was probably meant to be:
/// `analyze-trends histroy` reads `histroy` as a results directory. Only for a word that
/// names no existing path, has no separator, and is within two edits of a command's name.
fn mistyped_command(dir: &std::path::Path) -> Option<String> {
    use clap::CommandFactory;
    let word = dir.to_str()?;
    if dir.exists() || word.contains(['/', '\\', '.']) {
        return None;
    }
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .map(|name| (strsim::damerau_levenshtein(&name, word), name))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| name)
}

#[cfg(test)]
mod mistyped_tests {
    use super::mistyped_command;
    use std::path::Path;

    #[test]
    fn a_bare_word_near_a_command_is_that_command_and_a_directory_is_not() {
        assert_eq!(
            mistyped_command(Path::new("histroy")).as_deref(),
            Some("history")
        );
        assert_eq!(
            mistyped_command(Path::new("compre")).as_deref(),
            Some("compare")
        );
        assert_eq!(mistyped_command(Path::new("gaet")).as_deref(), Some("gate"));
        // The results directory of the design card, a path, and a word far from any command.
        assert_eq!(mistyped_command(Path::new("benchmark_results")), None);
        assert_eq!(mistyped_command(Path::new("out/histroy")), None);
        assert_eq!(mistyped_command(Path::new("nightly")), None);
        // An existing directory is a results directory, whatever its name.
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        assert_eq!(mistyped_command(&runs), None);
    }
}

/// Parsed through the dispatcher (not in `cli/gate.rs`, which the dispatcher imports: a test
/// there reaching up for `Cli` made the two files a circle).
#[cfg(test)]
mod profile_flag_tests {
    use super::{Cli, Command};
    use crate::harness::profile::{DEFAULT_PROFILE_TIME_S, ProfileSettings, Profiler};
    use clap::Parser;

    fn settings(args: &[&str]) -> Result<Option<ProfileSettings>, String> {
        let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
        match cli.command {
            Some(Command::Gate(gate)) => Ok(gate.judge.profile.settings()),
            Some(Command::Bisect(bisect)) => Ok(bisect.judge.profile.settings()),
            other => Err(format!("parsed as {other:?}")),
        }
    }

    #[test]
    fn bare_analyze_trends_prints_its_help_and_a_directory_is_still_the_report() {
        let bare = Cli::try_parse_from(["analyze-trends"]).unwrap_err();
        assert_eq!(
            bare.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
        assert!(bare.to_string().contains("Commands:"), "{bare}");
        let report = Cli::try_parse_from(["analyze-trends", "benchmark_results"]).unwrap();
        assert!(report.command.is_none());
        assert_eq!(
            report.report.dir,
            std::path::PathBuf::from("benchmark_results")
        );
    }

    #[test]
    fn gate_and_bisect_take_a_profiler_and_its_time_and_refuse_unknown_ones_by_name() {
        assert_eq!(settings(&["analyze-trends", "gate"]), Ok(None));
        assert_eq!(
            settings(&["analyze-trends", "gate", "--profile", "perf"]),
            Ok(Some(ProfileSettings {
                tool: Profiler::Perf,
                seconds: DEFAULT_PROFILE_TIME_S
            }))
        );
        let bisect = [
            "analyze-trends",
            "bisect",
            "--good",
            "a",
            "--bad",
            "b",
            "--profile",
            "nsys",
            "--profile-time",
            "3",
        ];
        assert_eq!(
            settings(&bisect),
            Ok(Some(ProfileSettings {
                tool: Profiler::Nsys,
                seconds: 3
            }))
        );
        let unknown = settings(&["analyze-trends", "gate", "--profile", "gprof"]).unwrap_err();
        assert!(
            unknown.contains("gprof") && unknown.contains("rocprof"),
            "{unknown}"
        );
        let zero = [
            "analyze-trends",
            "gate",
            "--profile",
            "perf",
            "--profile-time",
            "0",
        ];
        assert!(settings(&zero).unwrap_err().contains("at least 1"));
        // A profile time without a profiler is a mistake, not silently ignored.
        assert!(settings(&["analyze-trends", "gate", "--profile-time", "3"]).is_err());
    }
}
