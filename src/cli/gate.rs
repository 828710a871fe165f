//! `analyze-trends gate`: the argument struct and the thin command over
//! [`crate::gate::run_gate`]. The contract CI scripts against:
//! `analyze-trends gate --base REV --head REV [--rounds N] [--max-rounds M] [--bench TARGET]...
//! [--filter REGEX] [--threshold PCT] [--format table|json|markdown] [--out DIR]
//! [--results DIR] [--base-env KEY=VALUE]... [--head-env KEY=VALUE]... [-- CRITERION_ARGS...]`

use crate::analysis::Outcome;
use crate::gate::{GateError, GateOptions, run_gate};
use crate::report::comparison::{ComparisonFormat, render};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Criterion's timing per round when the caller passes none: 1 s warm-up and 1 s of
/// measurement, so four rounds of both sides cost about what one default Criterion run
/// (3 s + 5 s) of both sides costs.
pub const DEFAULT_CRITERION_ARGS: &[&str] = &["--warm-up-time", "1", "--measurement-time", "1"];

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
    /// Full rounds (each runs both sides, in ABBA order)
    #[arg(long, default_value_t = 4)]
    pub rounds: usize,
    /// Rounds in all, counting the extra ones that re-measure inconclusive benchmarks
    #[arg(long, default_value_t = 10)]
    pub max_rounds: usize,
    /// Bench targets to run (repeatable) [default: every bench target]
    #[arg(long = "bench", value_name = "TARGET")]
    pub benches: Vec<String>,
    /// Only benchmarks whose full id matches this regular expression (Criterion's filter)
    #[arg(long)]
    pub filter: Option<String>,
    /// Smallest slowdown, in percent, that fails the gate
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// What to print on stdout (the files in --out are always written)
    #[arg(long, value_enum, default_value_t = ComparisonFormat::Table)]
    pub format: ComparisonFormat,
    /// Where comparison.json, comparison.md and summary.md go
    #[arg(long, default_value = "target/stackbench-gate/out")]
    pub out: PathBuf,
    /// Results directory both sides are recorded into
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    /// An environment variable for the base side only (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    pub base_env: Vec<(String, String)>,
    /// An environment variable for the head side only (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    pub head_env: Vec<(String, String)>,
    /// Passed to every bench executable (Criterion's own flags)
    /// Run the bench executables pinned to these CPUs (`1`, `2-3`, `0,4-7`): give the
    /// measurement cores nothing else is scheduled on (BENCHMARKS.md, "Gate quality").
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
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

pub fn gate_command(args: GateArgs) -> anyhow::Result<Outcome> {
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
        rounds: args.rounds,
        max_rounds: args.max_rounds,
        benches: args.benches,
        filter: args.filter,
        threshold_percent: args.threshold,
        out: args.out,
        results: args.results,
        base_env: args.base_env,
        head_env: args.head_env,
        criterion_args,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
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
    Ok(if outcome.failed() {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
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
