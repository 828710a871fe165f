//! `analyze-trends gate`: the argument struct and the thin command over
//! [`crate::gate::run_gate`]. The contract CI scripts against:
//! `analyze-trends gate --base REV --head REV [--rounds N] [--max-rounds M] [--bench TARGET]...
//! [--filter REGEX] [--threshold PCT] [--format table|json|markdown] [--out DIR]
//! [--results DIR] [--base-env KEY=VALUE]... [--head-env KEY=VALUE]... [-- CRITERION_ARGS...]`

use crate::analysis::Outcome;
use crate::config::precedence::{Resolved, Setting, resolve};
use crate::gate::{GateError, GateOptions, run_gate};
use crate::report::comparison::{ComparisonFormat, render};
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Criterion's timing per round when the caller passes none: 1 s warm-up and 1 s of
/// measurement, so four rounds of both sides cost about what one default Criterion run
/// (3 s + 5 s) of both sides costs.
pub const DEFAULT_CRITERION_ARGS: &[&str] = &["--warm-up-time", "1", "--measurement-time", "1"];

/// Full rounds when no flag, variable or file sets them.
pub const DEFAULT_ROUNDS: usize = 4;
/// The threshold, in percent, when no flag, variable or file sets it (`compare`'s default).
pub const DEFAULT_THRESHOLD_PERCENT: f64 = 5.0;

const ROUNDS: Setting = Setting {
    flag: "--rounds",
    env: "STACKBENCH_GATE_ROUNDS",
    file_key: "[gate] rounds",
};
/// The gate's results directory. Its default differs from the other commands'
/// (`benchmark_results`): the gate mostly runs in someone else's crate, and must not
/// leave a directory in its working tree.
const RESULTS: Setting = Setting {
    flag: "--results",
    env: "STACKBENCH_RESULTS_DIR",
    file_key: "results_dir",
};
/// Where the gate records both sides when no flag, variable or file names a directory.
pub const DEFAULT_RESULTS_DIR: &str = "target/stackbench-gate/results";

const THRESHOLD: Setting = Setting {
    flag: "--threshold",
    env: "STACKBENCH_GATE_THRESHOLD_PERCENT",
    file_key: "[gate] threshold_percent",
};

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  analyze-trends gate --base origin/main --head HEAD
  analyze-trends gate --base main --head HEAD --bench gemm --threshold 3 -- --sample-size 20
  analyze-trends gate --base origin/main --head HEAD --cpus 3      # measure on a core kept free
  analyze-trends gate --base-env STACKBENCH_PYTHON=/venvs/old/bin/python \\
                      --head-env STACKBENCH_PYTHON=/venvs/new/bin/python --bench components

Exit codes: 0 nothing regressed, 1 a regression or a failed benchmark, 2 bad input, 130 interrupted.")]
pub struct GateArgs {
    /// The base revision [default: the current checkout]
    #[arg(long)]
    pub base: Option<String>,
    /// The head revision [default: the current checkout]
    #[arg(long)]
    pub head: Option<String>,
    /// Full rounds (each runs both sides, in ABBA order) [default: $STACKBENCH_GATE_ROUNDS,
    /// else `[gate] rounds` in stackbench.toml, else 4]
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Rounds in all, counting the extra ones that re-measure inconclusive benchmarks
    #[arg(long, default_value_t = 10)]
    pub max_rounds: usize,
    /// Bench targets to run (repeatable) [default: every bench target]
    #[arg(long = "bench", value_name = "TARGET")]
    pub benches: Vec<String>,
    /// Only benchmarks whose full id matches this regular expression (Criterion's filter)
    #[arg(long)]
    pub filter: Option<String>,
    /// Smallest slowdown, in percent, that fails the gate [default:
    /// $STACKBENCH_GATE_THRESHOLD_PERCENT, else `[gate] threshold_percent` in
    /// stackbench.toml, else 5]
    #[arg(long)]
    pub threshold: Option<f64>,
    /// What to print on stdout (the files in --out are always written)
    #[arg(long, value_enum, default_value_t = ComparisonFormat::Table)]
    pub format: ComparisonFormat,
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
    /// Run the bench executables pinned to these CPUs (`1`, `2-3`, `0,4-7`): give the
    /// measurement cores nothing else is scheduled on (BENCHMARKS.md, "Gate quality").
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// Passed to every bench executable (Criterion's own flags)
    #[arg(last = true, value_name = "CRITERION_ARGS")]
    pub criterion_args: Vec<String>,
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
}

/// The gate's rounds, threshold and results directory, each by one precedence: flag >
/// environment > file > default ([`crate::config::precedence`]). The config file is read
/// only when a flag and the environment leave a setting open.
fn gate_settings(args: &GateArgs) -> anyhow::Result<GateSettings> {
    let config = std::cell::OnceCell::new();
    let file = || -> anyhow::Result<&crate::config::Config> {
        if config.get().is_none() {
            let loaded = crate::config::Config::discover(None)
                .context("cannot take the gate's settings from the config")?;
            let _ = config.set(loaded);
        }
        Ok(config.get().expect("set just above"))
    };
    let path = |c: &crate::config::Config| {
        c.source
            .clone()
            .unwrap_or_else(|| crate::config::CONFIG_FILE.into())
    };
    let rounds = resolve(
        ROUNDS,
        args.rounds,
        || {
            let c = file()?;
            Ok::<_, anyhow::Error>(c.gate().rounds.map(|r| (r as usize, path(c))))
        },
        DEFAULT_ROUNDS,
    )?;
    let threshold = resolve(
        THRESHOLD,
        args.threshold,
        || {
            let c = file()?;
            Ok::<_, anyhow::Error>(c.gate().threshold_percent.map(|t| (t, path(c))))
        },
        DEFAULT_THRESHOLD_PERCENT,
    )?;
    let results = resolve(
        RESULTS,
        args.results.clone(),
        || {
            let c = file()?;
            Ok::<_, anyhow::Error>(c.results_dir.clone().map(|r| (r, path(c))))
        },
        PathBuf::from(DEFAULT_RESULTS_DIR),
    )?;
    Ok(GateSettings {
        rounds,
        threshold,
        results,
    })
}

/// Checks the resolved settings, naming where a wrong one came from (a flag, a variable or
/// the file's key), before anything is built.
fn check_settings(rounds: &Resolved<usize>, threshold: &Resolved<f64>) -> anyhow::Result<()> {
    if rounds.value < 2 {
        bail!(
            "rounds must be at least 2 (the verdict needs round-to-round differences), not {rounds}"
        );
    }
    if !(threshold.value.is_finite() && threshold.value >= 0.0) {
        bail!("the threshold must be a non-negative number of percent, not {threshold}");
    }
    Ok(())
}

pub fn gate_command(args: GateArgs) -> anyhow::Result<Outcome> {
    let GateSettings {
        rounds,
        threshold,
        results,
    } = gate_settings(&args)?;
    check_settings(&rounds, &threshold)?;
    if args.max_rounds < rounds.value {
        bail!(
            "--max-rounds ({}) must be at least the rounds, {rounds}",
            args.max_rounds
        );
    }
    let criterion_args = if args.criterion_args.is_empty() {
        DEFAULT_CRITERION_ARGS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        args.criterion_args
    };
    let options = GateOptions {
        base: args.base,
        head: args.head,
        rounds: rounds.value,
        max_rounds: args.max_rounds,
        benches: args.benches,
        filter: args.filter,
        threshold_percent: threshold.value,
        out: args.out,
        results: results.value,
        base_env: args.base_env,
        head_env: args.head_env,
        criterion_args,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
        measure: crate::harness::measure::Measure::Time,
    };
    let outcome = match run_gate(&options) {
        Ok(outcome) => outcome,
        Err(GateError::Interrupted) => {
            eprintln!("analyze-trends gate: {}", GateError::Interrupted);
            std::process::exit(130);
        }
        Err(e) => return Err(e.into()),
    };
    keep_gate_verdict(&options, &outcome.comparison);
    // JSON carries the gate's rounds too; the other formats are the comparison itself.
    let text = match args.format {
        ComparisonFormat::Json => serde_json::to_string_pretty(&outcome.comparison)? + "\n",
        format => render(&outcome.comparison.comparison, format),
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .context("cannot write to stdout")?;
    for path in outcome.written.files.iter().chain(&outcome.written.runs) {
        eprintln!("wrote {}", path.display());
    }
    let verdict = &outcome.comparison.comparison;
    Ok(verdict.evidence.outcome(outcome.failed()))
}

/// Keeps the gate's verdict in the history beside `compare`'s, naming the two runs it just
/// recorded, so `analyze-trends comparisons` lists it.
fn keep_gate_verdict(options: &GateOptions, comparison: &crate::gate::GateComparison) {
    let store = crate::results::RunStore::new(&options.results);
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

/// The value of `--cpus` (a newtype, so clap takes it as one value).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

fn parse_cpus(text: &str) -> Result<CpuList, String> {
    crate::gate::cpus::parse_cpu_list(text).map(CpuList)
}
