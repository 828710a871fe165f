//! `stackbench validate` and `stackbench suite`: argument structs and the glue from them
//! to the library (config, suite run, verdict, store). Exit codes: 0 every check passed
//! (warnings allowed), 1 a check failed, 2 bad input (config, suite, run name).

use crate::config::Config;
use crate::config::levels::Level;
use crate::report::writer::{Format, ReportWriter};
use crate::results::{RunRecord, RunStore};
use crate::validate::render::VALIDATE_FORMATS;
use crate::validate::{self, Inputs, Status, ValidationResult, runner};
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Levels (after DCGM's `dcgmi diag -r 1|2|3`; GPU work runs before CPU work):
  1  at most 30 s: the backends load, one GEMM, one triad, both copy directions
     (on a CPU-only machine: STREAM copy past the caches)
  2  at most 2 minutes on one H100/H200 (the default): triad, copies, GEMM in
     f32/tf32/bf16/f16/fp8/int8 at 8192³ on GPUs, f32/f64 at 2048³ on the CPU
  3  up to 15 minutes: the pre-installation suite, every precision, tiny_gpt inference
  The run prints the level, its budget and the wall time it took; a level over its
  budget prints a warning and sets `level.over_budget` in the verdict
  ($STACKBENCH_VALIDATE_BUDGET_S replaces the budget).
  --filter narrows within the level (its budget still applies); --suite replaces the
  level (no budget), and the two cannot be combined.

Examples:
  stackbench validate                               # level 2, judged
  stackbench validate --level 1                     # the seconds-long check
  stackbench validate --level 3 --format json > verdict.json
  stackbench validate --level 2 --filter '/cuda/'   # level 2's CUDA ids only
  stackbench validate --base latest                 # deltas against the last stored run
  stackbench validate --run latest --suite quick    # judge a stored run, measure nothing
  stackbench validate --config lab.toml --suite smoke --filter triad"
)]
pub struct ValidateArgs {
    /// Level to run: 1 (seconds), 2 (about two minutes, the default) or 3 (up to fifteen
    /// minutes); see below
    #[arg(long, value_parser = parse_level, conflicts_with = "suite")]
    pub level: Option<Level>,
    /// Suite to run instead of a level: built-in (quick, full, pre-installation, component,
    /// sweep, level-1..3) or from the config
    #[arg(long)]
    pub suite: Option<String>,
    /// The config file (default: $STACKBENCH_CONFIG, else ./stackbench.toml when present)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// What to print the verdict as: `table`, or `json` (schema stackbench.validation.v1,
    /// the verdict file's content)
    #[arg(long, value_parser = Format::parser(VALIDATE_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// The same as `--format json` (kept for scripts written before `--format`)
    #[arg(long, hide = true, conflicts_with = "format")]
    pub json: bool,
    /// The base: a stored run (id, latest, previous, label:NAME, rev:SHA or a file) to show
    /// before/after deltas against
    #[arg(long, value_name = "RUN")]
    pub base: Option<String>,
    /// --base's spelling before one vocabulary
    #[arg(long = "compare-to", hide = true, conflicts_with = "base")]
    pub compare_to: Option<String>,
    #[arg(long, help = crate::cli::settings::RESULTS_HELP)]
    pub results: Option<PathBuf>,
    /// The store: `sqlite:PATH` or `postgres://user@host/db` (default: $STACKBENCH_STORE,
    /// else the config's `store`, else <results>/stackbench.db)
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Judge this stored run instead of measuring (id, latest, previous, label:NAME, rev:SHA or a file)
    #[arg(long)]
    pub run: Option<String>,
    /// Criterion's filter: only ids matching this regex, within the level or suite
    #[arg(long)]
    pub filter: Option<String>,
    /// Do not keep the measured run in the results directory
    #[arg(long)]
    pub no_save: bool,
}

/// `--level`'s parser: clap prints the error with the value and exits 2.
fn parse_level(text: &str) -> Result<Level, String> {
    Level::parse(text).map_err(|bad| bad.to_string())
}

impl ValidateArgs {
    /// The level this run holds to: `--level`, else the default unless `--suite` replaces it.
    fn level(&self) -> Option<Level> {
        match (&self.level, &self.suite) {
            (Some(level), _) => Some(*level),
            (None, Some(_)) => None,
            (None, None) => Some(Level::default_level()),
        }
    }

    /// The suite that selects what runs: `--suite`, else the level's.
    fn suite_name(&self) -> String {
        match (&self.suite, self.level()) {
            (Some(suite), _) => suite.clone(),
            (None, level) => level.unwrap_or_else(Level::default_level).suite_name(),
        }
    }
}

/// Runs `stackbench validate`: prints the verdict and maps it to the exit code.
pub fn main(args: ValidateArgs) -> ExitCode {
    match execute(&args) {
        Ok(result) => {
            if result.status == Status::Failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            super::errors::report("stackbench validate", format_args!("{error:#}"));
            ExitCode::from(2)
        }
    }
}

fn execute(args: &ValidateArgs) -> anyhow::Result<ValidationResult> {
    let config = Config::discover(args.config.as_deref())?;
    let suite = config.suite(&args.suite_name())?;
    let level = args.level();
    let budget_s = level
        .map(|level| level.budget_s_from_env())
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let results_dir = crate::cli::settings::results_dir_of(args.results.clone(), &config);
    let store = crate::cli::store::store_for(&results_dir, args.store.as_deref(), &config)?;
    let base = crate::cli::spelling::renamed(
        "stackbench validate",
        ("--base", args.base.as_ref()),
        ("--compare-to", args.compare_to.as_ref()),
    );
    let before = match &base {
        Some(name) => Some(store.resolve(name).context("--base")?),
        None => None,
    };
    if let Some(filter) = &args.filter {
        // Before anything runs: a bad regex is bad input, not minutes of benchmarks later.
        regex::Regex::new(filter).with_context(|| format!("--filter '{filter}'"))?;
    }
    let (run, wall_s) = match &args.run {
        Some(name) => (store.resolve(name).context("--run")?, None),
        None => {
            let (run, wall_s) = measure_timed(args, &config, &suite, level.zip(budget_s))?;
            (run, Some(wall_s))
        }
    };
    let measured = wall_s.is_some();
    let history = same_hardware_history(&store, &run);
    // An empty selection is an error here, and leaves no measured run behind.
    let mut result = validate::validate(&Inputs {
        run: &run,
        suite: &suite,
        config: &config,
        history: &history,
        before: before.as_ref(),
        filter: args.filter.as_deref(),
    })?;
    match (level, budget_s) {
        (Some(level), Some(budget_s)) => result.record_level(level.number, budget_s, wall_s),
        _ => result.wall_s = wall_s,
    }
    if measured && !args.no_save {
        // Kept so the next validation can learn from it.
        let path = store.save(&run).context("keeping the measured run")?;
        eprintln!("==> validate: run kept as {}", path.display());
    }
    let path = store
        .dir
        .join("validation")
        .join(format!("{}-{}.json", run.run_id, suite.name));
    crate::files::atomic::write_json_atomic(&path, &result)
        .with_context(|| format!("writing the verdict to {}", path.display()))?;
    let format = if args.json { Format::Json } else { args.format };
    result
        .write(format, &mut std::io::stdout().lock())
        .context("cannot write the verdict to stdout")?;
    if format == Format::Table {
        println!("verdict written to {}", path.display());
    }
    Ok(result)
}

/// Measures the suite, saying first which level and budget it runs under, and returns the
/// run with its wall time in seconds.
fn measure_timed(
    args: &ValidateArgs,
    config: &Config,
    suite: &crate::config::ResolvedSuite,
    level: Option<(Level, f64)>,
) -> anyhow::Result<(RunRecord, f64)> {
    if let Some((level, budget_s)) = level {
        eprintln!(
            "==> validate: level {} ({}), budget {budget_s} s",
            level.number, level.summary
        );
    }
    let started = std::time::Instant::now();
    let run = measure(args, config, suite)?;
    let wall_s = started.elapsed().as_secs_f64();
    announce_wall_time(level, wall_s);
    Ok((run, wall_s))
}

/// The wall time on stderr, with the level's budget; a level over it is a warning line.
fn announce_wall_time(level: Option<(Level, f64)>, wall_s: f64) {
    match level {
        Some((level, budget_s)) if wall_s > budget_s => eprintln!(
            "stackbench validate: warning: {}",
            validate::over_budget_line(level.number, wall_s, budget_s)
        ),
        Some((level, budget_s)) => eprintln!(
            "==> validate: level {} took {wall_s:.1} s of its {budget_s} s budget",
            level.number
        ),
        None => eprintln!("==> validate: measured in {wall_s:.1} s"),
    }
}

/// Runs the suite into a fresh Criterion directory.
fn measure(
    args: &ValidateArgs,
    config: &Config,
    suite: &crate::config::ResolvedSuite,
) -> anyhow::Result<RunRecord> {
    let criterion_dir = tempfile::Builder::new()
        .prefix("stackbench-validate-")
        .tempdir()
        .context("creating a directory for Criterion's output")?;
    let config_path = config.source.as_deref().map(absolute);
    let source = crate::validate::parts::locate()?;
    let run = runner::run_suite(&runner::SuiteRun {
        suite,
        config: config_path.as_deref(),
        package_dir: &source.working_dir(),
        prebuilt: source.prebuilt().as_deref(),
        criterion_dir: criterion_dir.path(),
        filter: args.filter.as_deref(),
        env: Vec::new(),
        forward_interrupt: false,
    })?;
    Ok(run)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Earlier runs of the same fingerprint; unreadable files are the store's problem, not
/// the verdict's, and are skipped with a warning.
fn same_hardware_history(store: &RunStore, run: &RunRecord) -> Vec<RunRecord> {
    let Some(fingerprint) = run.fingerprint.as_deref() else {
        return Vec::new();
    };
    match store.load_all() {
        Ok(loaded) => {
            for problem in &loaded.problems {
                eprintln!("stackbench validate: warning: {problem}");
            }
            loaded
                .runs
                .into_iter()
                .filter(|r| r.fingerprint.as_deref() == Some(fingerprint))
                .filter(|r| r.run_id != run.run_id)
                .collect()
        }
        Err(_) => Vec::new(),
    }
}

/// `stackbench suite NAME`: what a suite runs, for people and for `run_benchmarks.sh`.
#[derive(Args, Debug, Clone)]
pub struct SuiteArgs {
    /// The suite: `quick`, `full`, `pre-installation`, `level-1`..`level-3`, or one of the
    /// config's `[suites.NAME]`
    pub name: String,
    /// The config file [default: $STACKBENCH_CONFIG, else the nearest stackbench.toml]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print only the comma-separated bench targets (what run_benchmarks.sh reads)
    #[arg(long)]
    pub targets: bool,
}

pub fn suite_main(args: SuiteArgs) -> ExitCode {
    let resolved = Config::discover(args.config.as_deref()).and_then(|c| c.suite(&args.name));
    match resolved {
        Ok(suite) if args.targets => {
            println!("{}", suite.targets.join(","));
            ExitCode::SUCCESS
        }
        Ok(suite) => {
            println!("suite {}: {}", suite.name, suite.description);
            println!("  axis values: {}", suite.base);
            println!("  targets:     {}", suite.targets.join(", "));
            for re in &suite.include {
                println!("  include:     {re}");
            }
            for re in &suite.exclude {
                println!("  exclude:     {re}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            super::errors::report("stackbench suite", error);
            ExitCode::from(2)
        }
    }
}
