//! `analyze-trends`: argument structs and the commands behind them. The binary only maps
//! the outcome to an exit code: 0 clean, 1 regression found, 2 bad input or usage.

use crate::analysis::simulate::{
    HistoryScenario, Scenario, measure_quality, simulate_history, write_pair_tree,
};
use crate::analysis::trends::{
    MedianHistory, RunHeader, TrendOptions, analyze_medians, not_measured,
};
use crate::analysis::{CompareOptions, Side, VerdictRule, compare};
use crate::criterion_output::CriterionTree;
use crate::harness::sidecar::criterion_home;
use crate::report::comparison::{ComparisonFormat, render};
use crate::report::history::{render_terminal, write_reports_with_runs};
use crate::results::{
    ExportFormat, RunRecord, RunStore, export_runs, run_for_comparison, run_from_tree,
};
use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;

const AFTER_HELP: &str = "Examples:
  analyze-trends record --label nightly            # keep target/criterion's `new` baseline
  analyze-trends compare base new                  # Criterion baselines: exit 1 on a regression
  analyze-trends compare previous latest --format markdown
  analyze-trends compare main pr --filter '^gemm/' --threshold 3 --format json
  analyze-trends                                   # history report into benchmark_results/reports/
  analyze-trends export --format csv > runs.csv
  analyze-trends import ci-artifacts/             # runs from other machines, idempotent
  analyze-trends runs                              # the stored runs, newest first
  analyze-trends history gemm/f32/1024 --format csv
  analyze-trends ack gemm/f32/1024 --reason 'driver 560 upgrade'
  analyze-trends prune --keep-days 90 --keep-latest 20

Exit codes: 0 nothing regressed, 1 a regression was found, 2 bad input or usage.";

#[derive(Parser, Debug)]
#[command(
    name = "analyze-trends",
    version,
    about = "Record Criterion runs, gate pull requests on real statistics, and report trends",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a subcommand: `report` over this results directory.
    #[command(flatten)]
    pub report: ReportArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Record one Criterion baseline as a run (<results>/stackbench.db and <results>/runs/).
    Record(RecordArgs),
    /// Compare two Criterion baselines or recorded runs: the PR gate.
    Compare(CompareArgs),
    /// Write the history report (the default command).
    Report(ReportArgs),
    /// Print one row per benchmark per run.
    Export(ExportArgs),
    /// Cross-hardware report: every machine's figures, perf per $ and per W, recommendations.
    Hardware(super::hardware::HardwareArgs),

    /// Import run files (other machines, CI artifacts) into the history database.
    Import(super::store::ImportArgs),
    /// List the stored runs, newest first.
    Runs(super::store::ListArgs),
    /// One benchmark over time, with its change points and verdict.
    History(super::store::HistoryArgs),
    /// Past `compare` and gate verdicts, newest first.
    Comparisons(super::store::ListArgs),
    /// Remove old runs and comparisons (never one a kept comparison or an acknowledgement needs).
    Prune(super::store::PruneArgs),
    /// Acknowledge an intentional step: history verdicts then start from its new level.
    Ack(super::store::AckArgs),
    /// Gate a pull request: base and head built from git, measured in alternating rounds.
    Gate(super::gate::GateArgs),
    /// Simulators for the gate's quality and speed measurements.
    #[command(hide = true, subcommand)]
    Simulate(SimulateCommand),
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Criterion's output directory [default: $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else target/criterion]
    #[arg(long)]
    pub criterion_dir: Option<PathBuf>,
    #[arg(long, default_value = "new")]
    pub baseline: String,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    #[arg(long)]
    pub label: Option<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A Criterion baseline (`base`, `new`, a --save-baseline name) or a run (id, `latest`, `previous`)
    pub base: String,
    /// As BASE
    pub candidate: String,
    #[arg(long)]
    pub criterion_dir: Option<PathBuf>,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    /// Smallest slowdown, in percent, that fails the gate
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// Only benchmarks whose full id matches this regular expression
    #[arg(long)]
    pub filter: Option<String>,
    #[arg(long, value_enum, default_value_t = ComparisonFormat::Table)]
    pub format: ComparisonFormat,
    /// Compare runs whose hardware fingerprints differ (every output then says so)
    #[arg(long)]
    pub allow_different_hardware: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results directory
    #[arg(default_value = "benchmark_results")]
    pub dir: PathBuf,
    /// Exit 1 when any benchmark's history shows a recent regression
    #[arg(long)]
    pub fail_on_regression: bool,
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum SimulateCommand {
    /// Write a Criterion tree with baselines `base` and `new` and known injected changes.
    Tree {
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
    /// Judge simulated pairs in memory and print false-alarm and detection rates as JSON.
    Quality {
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Number of seeds (from --seed on) to run
        #[arg(long, default_value_t = 1)]
        repeats: u64,
        /// Override the rule's FDR level (for tuning)
        #[arg(long)]
        fdr_q: Option<f64>,
        /// Override the rule's CI floor fraction (for tuning)
        #[arg(long)]
        ci_floor: Option<f64>,
    },
    /// Write a simulated history of runs with one step change into <results>/runs/.
    History {
        #[arg(long)]
        results: PathBuf,
        #[arg(long, default_value_t = 50)]
        runs: usize,
        #[arg(long, default_value_t = 100)]
        benchmarks: usize,
        #[arg(long, default_value_t = 10)]
        stepped: usize,
        #[arg(long, default_value_t = 30)]
        step_at: usize,
        #[arg(long, default_value_t = 10.0)]
        step_percent: f64,
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
}

#[derive(Args, Debug)]
pub struct ScenarioArgs {
    /// `clean` (100 samples, 3 % noise) or `noisy` (20 samples, 10 % noise, 10 % outliers)
    #[arg(long, default_value = "clean")]
    pub preset: String,
    /// Benchmarks per population (null and slow)
    #[arg(long)]
    pub per_population: Option<usize>,
    #[arg(long)]
    pub samples: Option<usize>,
    #[arg(long)]
    pub noise: Option<f64>,
    #[arg(long)]
    pub outliers: Option<f64>,
    #[arg(long)]
    pub drift: Option<f64>,
    /// A change common to every candidate (fraction, e.g. 0.2)
    #[arg(long, default_value_t = 0.0)]
    pub common_shift: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ScenarioArgs {
    fn scenario(&self) -> anyhow::Result<Scenario> {
        let mut s = match self.preset.as_str() {
            "clean" => Scenario::clean(self.seed),
            "noisy" => Scenario::noisy(self.seed),
            other => bail!("unknown preset `{other}` (clean, noisy)"),
        };
        s.per_population = self.per_population.unwrap_or(s.per_population);
        s.samples = self.samples.unwrap_or(s.samples);
        s.noise = self.noise.unwrap_or(s.noise);
        s.outliers = self.outliers.unwrap_or(s.outliers);
        s.drift = self.drift.unwrap_or(s.drift);
        s.common_shift = self.common_shift;
        if s.samples == 0 {
            bail!("--samples must be at least 1");
        }
        Ok(s)
    }
}

/// What a successful command found.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    RegressionFound,
}

pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Some(Command::Record(args)) => record(args),
        Some(Command::Compare(args)) => compare_command(args),
        Some(Command::Report(args)) => report(args),
        Some(Command::Export(args)) => export(args),
        Some(Command::Hardware(args)) => super::hardware::hardware(args).map(|()| Outcome::Clean),

        Some(Command::Import(args)) => super::store::import(args),
        Some(Command::Runs(args)) => super::store::runs(args),
        Some(Command::History(args)) => super::store::history(args),
        Some(Command::Comparisons(args)) => super::store::comparisons(args),
        Some(Command::Prune(args)) => super::store::prune(args),
        Some(Command::Ack(args)) => super::store::ack(args),
        Some(Command::Gate(args)) => super::gate::gate_command(args),
        Some(Command::Simulate(cmd)) => simulate(cmd),
        None => report(cli.report),
    }
}

fn record(args: RecordArgs) -> anyhow::Result<Outcome> {
    let dir = args.criterion_dir.unwrap_or_else(criterion_home);
    let tree = CriterionTree::scan(&dir)?;
    let run = run_from_tree(&tree, &args.baseline, args.label)?;
    for skip in &run.skipped {
        eprintln!("warning: skipped {}: {}", skip.path.display(), skip.reason);
    }
    for note in &run.notes {
        eprintln!("note: {note}");
    }
    for failure in &run.failed {
        eprintln!("FAILED {}: {}", failure.id, failure.error);
    }
    // Checked before the store is opened: a baseline that measured nothing leaves no trace.
    let evidence = crate::results::RunEvidence::of(&run);
    if evidence.is_empty() {
        bail!(
            "baseline `{}` in {} measured nothing ({evidence}): no run recorded",
            args.baseline,
            dir.display()
        );
    }
    let path = RunStore::new(&args.results).save(&run)?;
    println!(
        "recorded {} benchmarks ({} skipped, {} failed) as run {} in {}; evidence: {evidence}",
        run.benchmarks.len(),
        run.skipped.len(),
        run.failed.len(),
        run.run_id,
        path.display()
    );
    // Samples no statistic can use are a failure this command found (exit 1), named above.
    Ok(if evidence.unusable > 0 {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}

/// Loads BASE or CANDIDATE: a Criterion baseline when the tree has one by that name,
/// else a recorded run.
fn load_side(
    name: &str,
    tree: Option<&CriterionTree>,
    store: &RunStore,
) -> anyhow::Result<RunRecord> {
    if let Some(tree) = tree.filter(|t| t.has(name)) {
        return Ok(run_for_comparison(tree, name)?);
    }
    match store.resolve(name) {
        Ok(run) => Ok(run),
        Err(crate::results::ResultsError::UnknownRun { available, .. }) => {
            let baselines = tree.map_or_else(
                || "none (no Criterion directory)".to_string(),
                |t| t.baselines().keys().cloned().collect::<Vec<_>>().join(", "),
            );
            bail!(
                "`{name}` is neither a Criterion baseline nor a recorded run; Criterion baselines: {baselines}; runs in {}: {}",
                store.runs_dir().display(),
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ") + ", latest, previous"
                }
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// BASE and CANDIDATE as runs, warning about every benchmark that could not be read.
fn load_sides(args: &CompareArgs, store: &RunStore) -> anyhow::Result<(RunRecord, RunRecord)> {
    let dir = args.criterion_dir.clone().unwrap_or_else(criterion_home);
    // A missing default Criterion directory is fine when both names are runs; an explicit
    // one must exist.
    let tree = match CriterionTree::scan(&dir) {
        Ok(t) => Some(t),
        Err(e) if args.criterion_dir.is_some() => return Err(e.into()),
        Err(_) => None,
    };
    let base = load_side(&args.base, tree.as_ref(), store)?;
    let cand = load_side(&args.candidate, tree.as_ref(), store)?;
    for (side, run) in [("baseline", &base), ("candidate", &cand)] {
        for skip in &run.skipped {
            eprintln!(
                "warning: {side}: skipped {}: {}",
                skip.path.display(),
                skip.reason
            );
        }
    }
    Ok((base, cand))
}

fn compare_command(args: CompareArgs) -> anyhow::Result<Outcome> {
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        bail!(
            "--threshold must be a non-negative number of percent, not {}",
            args.threshold
        );
    }
    let filter = args
        .filter
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .context("--filter is not a valid regular expression")?;
    let store = RunStore::new(&args.results);
    let (base, cand) = load_sides(&args, &store)?;
    let (noise_floors, history_runs) = history_noise(&store, &base, &cand);
    let options = CompareOptions {
        rule: VerdictRule {
            threshold_percent: args.threshold,
            ..VerdictRule::default()
        },
        filter,
        allow_different_hardware: args.allow_different_hardware,
        noise_floors,
        history_runs,
    };
    let side = |name: &str, run| Side {
        name: name.to_string(),
        run,
    };
    let comparison = compare(
        &side(&args.base, &base),
        &side(&args.candidate, &cand),
        &options,
    )?;
    super::store::keep_comparison_verdict(
        &store,
        "compare",
        (&args.base, &base),
        (&args.candidate, &cand),
        &comparison,
    );
    let text = render(&comparison, args.format);
    std::io::stdout()
        .write_all(text.as_bytes())
        .context("cannot write to stdout")?;
    Ok(if comparison.regression_found() {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}

/// Noise floors from earlier recorded runs on the candidate's hardware; none when the
/// results directory is absent or unreadable (the comparison then uses within-run
/// statistics only, and says nothing it cannot know).
fn history_noise(
    store: &RunStore,
    base: &RunRecord,
    cand: &RunRecord,
) -> (std::collections::HashMap<String, f64>, usize) {
    if !store.dir.is_dir() {
        return (Default::default(), 0);
    }
    match store.load_all() {
        Ok(loaded) => crate::analysis::noise::noise_floors(
            &loaded.runs,
            cand.fingerprint.as_deref(),
            &[base.run_id.as_str(), cand.run_id.as_str()],
        ),
        Err(e) => {
            eprintln!("warning: history not used: {e}");
            (Default::default(), 0)
        }
    }
}

fn report(args: ReportArgs) -> anyhow::Result<Outcome> {
    if !args.dir.is_dir() {
        bail!(
            "results directory {} does not exist (record a run first)",
            args.dir.display()
        );
    }
    let store = RunStore::new(&args.dir);
    // Medians for the history, whole runs only where the report shows them: a store of a
    // thousand runs is never decoded sample by sample.
    let stored = store.report_history()?;
    if stored.runs.is_empty() && stored.problems.is_empty() {
        bail!(
            "no runs in {} (record one with `analyze-trends record`)",
            store.runs_dir().display()
        );
    }
    let problems: Vec<String> = stored.problems.iter().map(|e| e.to_string()).collect();
    for p in &problems {
        eprintln!("warning: {p}");
    }
    let options = TrendOptions {
        threshold_percent: args.threshold,
        acknowledgements: store.acknowledgements()?,
        ..TrendOptions::default()
    };
    let history = MedianHistory {
        runs: stored.runs.iter().map(RunHeader::stored).collect(),
        series: stored.series,
    };
    let whole: std::collections::HashMap<&str, &RunRecord> = stored
        .whole_runs
        .iter()
        .map(|r| (r.run_id.as_str(), r))
        .collect();
    let not_measured_of = |run_id: &str| {
        whole
            .get(run_id)
            .map(|r| not_measured(r))
            .unwrap_or_default()
    };
    let report = analyze_medians(&history, &not_measured_of, &options, problems);
    let written = write_reports_with_runs(&report, &stored.whole_runs, &store.reports_dir())?;
    print!("{}", render_terminal(&report));
    for path in written {
        println!("wrote {}", path.display());
    }
    let regressed = report.regressions().next().is_some();
    Ok(if args.fail_on_regression && regressed {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}

fn export(args: ExportArgs) -> anyhow::Result<Outcome> {
    let store = RunStore::new(&args.results);
    if !store.dir.is_dir() {
        bail!(
            "no runs in {} (record one with `analyze-trends record`)",
            store.runs_dir().display()
        );
    }
    let loaded = store.load_all()?;
    for p in &loaded.problems {
        eprintln!("warning: {p}");
    }
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    export_runs(&loaded.runs, args.format, &mut lock).context("cannot write the export")?;
    Ok(Outcome::Clean)
}

fn simulate(cmd: SimulateCommand) -> anyhow::Result<Outcome> {
    match cmd {
        SimulateCommand::Tree { out, scenario } => {
            let truths = write_pair_tree(&out, &scenario.scenario()?)?;
            println!(
                "wrote {} benchmarks × 2 baselines under {}",
                truths.len(),
                out.display()
            );
        }
        SimulateCommand::Quality {
            scenario,
            repeats,
            fdr_q,
            ci_floor,
        } => simulate_quality(&scenario, repeats, fdr_q, ci_floor)?,
        SimulateCommand::History {
            results,
            runs,
            benchmarks,
            stepped,
            step_at,
            step_percent,
            scenario,
        } => {
            let h = HistoryScenario {
                runs,
                benchmarks,
                stepped,
                step_at,
                step_percent,
                run: scenario.scenario()?,
            };
            let store = RunStore::new(&results);
            for run in simulate_history(&h) {
                store.save(&run)?;
            }
            println!(
                "wrote {runs} runs of {benchmarks} benchmarks into {}",
                store.runs_dir().display()
            );
        }
    }
    Ok(Outcome::Clean)
}

/// Prints the quality of the gate (and of the reference rules) over `repeats` seeds.
fn simulate_quality(
    scenario: &ScenarioArgs,
    repeats: u64,
    fdr_q: Option<f64>,
    ci_floor: Option<f64>,
) -> anyhow::Result<()> {
    let base = scenario.scenario()?;
    let default = VerdictRule::default();
    let rule = VerdictRule {
        fdr_q: fdr_q.unwrap_or(default.fdr_q),
        ci_floor_fraction: ci_floor.unwrap_or(default.ci_floor_fraction),
        ..default
    };
    let results: Vec<_> = (0..repeats.max(1))
        .map(|i| {
            let s = Scenario {
                seed: base.seed + i,
                ..base.clone()
            };
            measure_quality(&s, rule)
        })
        .collect();
    let json = serde_json::json!({"scenario": base, "rule": rule, "results": results});
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
