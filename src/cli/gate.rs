//! `analyze-trends gate`: the argument struct and the thin command over
//! [`crate::gate::run_gate`]. The contract CI scripts against:
//! `analyze-trends gate --base REV --head REV [--rounds N] [--max-rounds M] [--bench TARGET]...
//! [--filter REGEX] [--threshold PCT] [--format table|json|markdown|md] [--out DIR]
//! [--results DIR] [--measure time|instructions] [--base-env KEY=VALUE]... [--head-env KEY=VALUE]...
//! [--accept-unsure SHA [--accept-unsure-label LABEL]] [-- CRITERION_ARGS...]`

use super::judge::JudgeArgs;
use super::settings::{self, FileLayer};
use crate::analysis::Outcome;
use crate::config::precedence::Resolved;
use crate::gate::{GateError, GateOptions, run_gate};
use crate::harness::measure::Measure;
use crate::report::comparison::COMPARISON_FORMATS;
use crate::report::writer::{Format, ReportWriter};
use crate::results::AcceptedUnsure;
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

pub use super::settings::{DEFAULT_ROUNDS, DEFAULT_THRESHOLD_PERCENT};

/// Where the gate records both sides when no flag, variable or file names a directory. Its
/// default differs from the other commands' (`benchmark_results`): the gate mostly runs in
/// someone else's crate, and must not leave a directory in its working tree.
pub const DEFAULT_RESULTS_DIR: &str = "target/stackbench-gate/results";

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  analyze-trends gate --base origin/main --head HEAD
  analyze-trends gate --base main --head HEAD --bench gemm --threshold 3 -- --sample-size 20
  analyze-trends gate --base origin/main --head HEAD --cpus 3      # measure on a core kept free
  analyze-trends gate --base origin/main --head HEAD --measure instructions   # count, under Valgrind
  analyze-trends gate --base origin/main --head HEAD --profile perf   # profile what regressed
  analyze-trends gate --base-env STACKBENCH_PYTHON=/venvs/old/bin/python \\
                      --head-env STACKBENCH_PYTHON=/venvs/new/bin/python --bench components

Before the first round the gate calibrates (about 1 s, on --cpus when given): the timer's
resolution, the floor (an empty routine's time per iteration through Criterion's `iter` loop)
and the machine's noise; it warns at once when the noise is above the threshold. A benchmark
whose time on either side is at most 10 x the floor (and whose sides differ by no more than
that) is `below floor`: listed with the floor, never measured again, neither a regression nor
a pass, and not a failure; a gate where every benchmark is below floor decided nothing
and is unsure (exit 3).

Exit codes: 0 nothing regressed (or unsure, accepted with --accept-unsure), 1 a regression or a
failed benchmark, 2 bad input, 3 unsure: nothing regressed, but some benchmark stayed inconclusive
after --max-rounds (its rounds disagree by more than the threshold allows). Unsure is not a pass:
the comment lists each unsure benchmark with its per-round changes; pin a core with --cpus, allow
more --max-rounds, or count instructions instead of timing. 130 interrupted.")]
pub struct GateArgs {
    /// The base revision [default: the current checkout]
    #[arg(long)]
    pub base: Option<String>,
    /// The head revision [default: the current checkout]
    #[arg(long)]
    pub head: Option<String>,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// What to print on stdout (the files in --out are always written)
    #[arg(long, value_parser = Format::parser(COMPARISON_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// Where comparison.json, comparison.md and summary.md go
    #[arg(long, default_value = "target/stackbench-gate/out")]
    pub out: PathBuf,
    /// Results directory both sides are recorded into [default: $STACKBENCH_RESULTS_DIR,
    /// else `results_dir` in stackbench.toml, else target/stackbench-gate/results, so a
    /// crate without a config gets nothing written outside target/]
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// An environment variable for the base side only (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    pub base_env: Vec<(String, String)>,
    /// An environment variable for the head side only (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    pub head_env: Vec<(String, String)>,
    /// Lock the GPU clocks while each side's benches run (STACKBENCH_LOCK_CLOCKS=1 on both
    /// sides); where the driver refuses (not root), each run says so and records why
    #[arg(long)]
    pub lock_clocks: bool,
    /// Accept an unsure verdict (exit 3 becomes 0) for this head commit only (7 to 40 hex
    /// digits; it must be the head's SHA or the gate refuses, exit 2). Recorded with the
    /// verdict as `accepted_unsure`. A regression still fails.
    #[arg(long, value_name = "SHA")]
    pub accept_unsure: Option<String>,
    /// The label that carried the acceptance (`stackbench-accept-unsure:<sha7>`), recorded
    /// with it
    #[arg(long, value_name = "LABEL", requires = "accept_unsure")]
    pub accept_unsure_label: Option<String>,
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains('\0') => {
            Ok((key.to_string(), value.to_string()))
        }
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// The gate's settings that come from more than one place.
struct GateSettings {
    rounds: Resolved<usize>,
    threshold: Resolved<f64>,
    results: Resolved<PathBuf>,
    measure: Resolved<Measure>,
}

/// The gate's rounds, threshold, results directory and measure, each by one precedence: flag >
/// environment > file > default ([`super::settings`]). The config file is read only when a
/// flag and the environment leave a setting open.
fn gate_settings(args: &GateArgs) -> anyhow::Result<GateSettings> {
    let file = FileLayer::new(|| {
        crate::config::Config::discover(None)
            .context("cannot take the gate's settings from the config")
    });
    let rounds = settings::rounds(args.judge.rounds, &file)?;
    let measure = settings::measure(args.judge.measure, &file)?;
    let threshold = settings::threshold(args.judge.threshold, &file, measure.value)?;
    let results = settings::results_dir(args.results.clone(), &file, DEFAULT_RESULTS_DIR)?;
    Ok(GateSettings {
        rounds,
        threshold,
        results,
        measure,
    })
}

/// Checks the resolved settings, naming where a wrong one came from (a flag, a variable or
/// the file's key), before anything is built.
fn check_settings(
    rounds: &Resolved<usize>,
    threshold: &Resolved<f64>,
    measure: &Resolved<Measure>,
) -> anyhow::Result<()> {
    if rounds.value < 2 {
        bail!(
            "rounds must be at least 2 (the verdict needs round-to-round differences), not {rounds}"
        );
    }
    if !(threshold.value.is_finite() && threshold.value >= 0.0) {
        bail!("the threshold must be a non-negative number of percent, not {threshold}");
    }
    if measure.value == Measure::Instructions
        && let Err(e) = crate::harness::measure::verdict::CountingRule::new(threshold.value / 100.0)
    {
        bail!(
            "the threshold {threshold} percent does not fit counting mode: {e}; the measure is {measure}"
        );
    }
    Ok(())
}

pub fn gate_command(args: GateArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let GateSettings {
        rounds,
        threshold,
        results,
        measure,
    } = gate_settings(&args)?;
    check_settings(&rounds, &threshold, &measure)?;
    if args.judge.max_rounds < rounds.value {
        bail!(
            "--max-rounds ({}) must be at least the rounds, {rounds}",
            args.judge.max_rounds
        );
    }
    let accept_unsure = args
        .accept_unsure
        .as_deref()
        .map(|sha| AcceptedUnsure::new(sha, args.accept_unsure_label.as_deref()))
        .transpose()?;
    if args.lock_clocks {
        // Said here, once, before the first build: each bench run's own line goes to its log.
        let _ = crate::system::clocks::check_lock_once();
    }
    let options = GateOptions {
        base: args.base,
        head: args.head,
        judge: args
            .judge
            .options(measure.value, threshold.value, rounds.value),
        out: args.out,
        results: results.value,
        store: chosen.url(),
        base_env: with_lock(args.base_env, args.lock_clocks),
        head_env: with_lock(args.head_env, args.lock_clocks),
        accept_unsure,
        accuracy_rules: crate::config::Config::discover(None)
            .context("cannot take the [accuracy] rules from the config")?
            .accuracy_rules(),
    };
    let outcome = match run_gate(&options) {
        Ok(outcome) => outcome,
        Err(GateError::Interrupted) => {
            super::errors::report("analyze-trends gate", GateError::Interrupted);
            std::process::exit(130);
        }
        Err(e) => return Err(e.into()),
    };
    keep_gate_verdict(&options, &outcome.comparison);
    let mut stdout = std::io::stdout();
    outcome
        .comparison
        .write(args.format, &mut stdout)
        .and_then(|()| Ok(stdout.flush()?))
        .context("cannot write to stdout")?;
    for path in outcome.written.files.iter().chain(&outcome.written.runs) {
        eprintln!("wrote {}", path.display());
    }
    Ok(outcome.comparison.comparison.outcome())
}

/// `--lock-clocks` is one variable on both sides, so the two are measured alike.
fn with_lock(mut env: Vec<(String, String)>, lock: bool) -> Vec<(String, String)> {
    if lock {
        env.push((crate::system::clocks::LOCK_CLOCKS_ENV.into(), "1".into()));
    }
    env
}

/// Keeps the gate's verdict in the history beside `compare`'s, naming the two runs it just
/// recorded, so `analyze-trends comparisons` lists it.
fn keep_gate_verdict(options: &GateOptions, comparison: &crate::gate::GateComparison) {
    let store = crate::cli::store::ChosenStore(options.store.clone()).open(&options.results);
    let [base_id, head_id] = comparison.gate.runs.as_slice() else {
        return;
    };
    match (store.resolve(base_id), store.resolve(head_id)) {
        (Ok(base), Ok(head)) => {
            let name =
                |rev: &Option<String>, side: &str| rev.clone().unwrap_or_else(|| side.into());
            if let Err(e) = crate::results::keep_comparison_verdict(
                &store,
                "gate",
                (&name(&options.base, "base"), &base),
                (&name(&options.head, "head"), &head),
                &comparison.comparison.stored_verdict(),
            ) {
                eprintln!("warning: verdict not kept in the history: {e}");
            }
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("warning: gate verdict not kept in the history: {e}");
        }
    }
}
