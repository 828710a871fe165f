//! `analyze-trends bisect`: the argument struct and the thin command over
//! [`crate::gate::bisect::run_bisect`]. It prints a line per step on stderr as the search goes,
//! then the report (a table, or bisect.json's content with `--format json`) on stdout.

use super::gate::{CpuList, DEFAULT_CRITERION_ARGS, ProfileArgs};
use super::settings::{self, FileLayer};
use crate::analysis::Outcome;
use crate::gate::bisect::{
    BisectError, BisectOptions, BisectReport, BisectResult, run_bisect, text,
};
use crate::harness::measure::Measure;
use crate::report::writer::{Format, ReportWriter, WriteError, write_text};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// The formats `analyze-trends bisect` prints its report in.
pub const BISECT_FORMATS: &[Format] = &[Format::Table, Format::Json];

impl ReportWriter for BisectReport {
    fn command(&self) -> &'static str {
        "analyze-trends bisect"
    }

    fn formats(&self) -> &'static [Format] {
        BISECT_FORMATS
    }

    /// JSON is bisect.json's content.
    fn write(&self, format: Format, out: &mut dyn Write) -> Result<(), WriteError> {
        let text = match format {
            Format::Table => text::render(self),
            Format::Json => serde_json::to_string_pretty(self)? + "\n",
            other => return Err(self.not_offered(other)),
        };
        write_text(out, &text)
    }
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  analyze-trends bisect --good v1.2.0 --bad main
  analyze-trends bisect --good v1.2.0 --bad HEAD --bench gemm --filter '^gemm/f32/' -- --sample-size 20
  analyze-trends bisect --good origin/main~20 --bad origin/main --measure instructions --format json
  analyze-trends bisect --good v1.2.0 --bad main --profile perf   # each step profiles what regressed

--bad is judged against --good first; the benchmarks it degrades are the ones followed. Each step
is the gate's judgement of one commit of the first-parent line against --good, re-measured up to
--max-rounds. A commit that does not build, or where the followed benchmarks cannot be measured or
stay unsure, is skipped and named (as `git bisect skip`), never guessed.

Exit codes: 0 --bad does not regress (nothing to bisect), 1 the culprit is named, 2 bad input
(no such revision, --good not an ancestor of --bad, a filter matching nothing, --good or --bad not
building), 3 unresolved (--bad unsure, or only unjudgeable commits left: all are named),
130 interrupted.")]
pub struct BisectArgs {
    /// A revision where the benchmarks are as they should be
    #[arg(long)]
    pub good: String,
    /// A later revision (a first-parent descendant of --good) where they regressed
    #[arg(long)]
    pub bad: String,
    /// Bench targets to run (repeatable) [default: every bench target]
    #[arg(long = "bench", value_name = "TARGET")]
    pub benches: Vec<String>,
    /// Only benchmarks whose full id matches this regular expression
    #[arg(long)]
    pub filter: Option<String>,
    /// What a benchmark's number is: wall time over rounds, or instructions under Callgrind
    /// [default: $STACKBENCH_MEASURE, else `[gate] measure` in stackbench.toml, else time]
    #[arg(long, value_name = "time|instructions", value_parser = parse_measure)]
    pub measure: Option<Measure>,
    /// Smallest slowdown, in percent, that counts as a regression [default:
    /// $STACKBENCH_GATE_THRESHOLD_PERCENT, else `[gate] threshold_percent` in stackbench.toml,
    /// else 5, or 1 with --measure instructions]
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Full rounds per step (each runs both sides, in ABBA order) [default:
    /// $STACKBENCH_GATE_ROUNDS, else `[gate] rounds` in stackbench.toml, else 4]
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Rounds in all per step, counting those that re-measure what is still unsure
    #[arg(long, default_value_t = 10)]
    pub max_rounds: usize,
    /// Run the bench executables pinned to these CPUs (`1`, `2-3`, `0,4-7`), as the gate's
    /// --cpus: a core nothing else is scheduled on turns unsure steps into decided ones
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    /// What to print on stdout (bisect.json in --out is always written)
    #[arg(long, value_parser = Format::parser(BISECT_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// Where bisect.json, each step's gate files (steps/) and their runs (results/) go
    #[arg(long, default_value = "target/stackbench-bisect")]
    pub out: PathBuf,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Passed to every bench executable (Criterion's own flags)
    #[arg(last = true, value_name = "CRITERION_ARGS")]
    pub criterion_args: Vec<String>,
}

fn parse_cpus(text: &str) -> Result<CpuList, String> {
    crate::gate::cpus::parse_cpu_list(text).map(CpuList)
}

fn parse_measure(text: &str) -> Result<Measure, String> {
    text.parse::<Measure>().map_err(|e| e.to_string())
}

pub fn bisect_command(args: BisectArgs) -> anyhow::Result<Outcome> {
    // The gate's settings mean the same here (each step is the gate's judgement), so they
    // come from the same flag, variable and `[gate]` key.
    let file = FileLayer::new(|| {
        crate::config::Config::discover(None)
            .context("cannot take bisect's settings from the config")
    });
    let measure = settings::measure(args.measure, &file)?.value;
    let threshold = settings::threshold(args.threshold, &file, measure)?.value;
    let rounds = settings::rounds(args.rounds, &file)?.value;
    let criterion_args = if args.criterion_args.is_empty() {
        DEFAULT_CRITERION_ARGS
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        args.criterion_args
    };
    let options = BisectOptions {
        good: args.good,
        bad: args.bad,
        benches: args.benches,
        filter: args.filter,
        measure,
        threshold_percent: threshold,
        rounds,
        max_rounds: args.max_rounds,
        criterion_args,
        cpus: args.cpus.map(|c| c.0).unwrap_or_default(),
        out: args.out,
        profile: args.profile.settings(),
    };
    let mut on_step = |step: &crate::gate::bisect::step::Step, commits: usize| {
        eprintln!("analyze-trends bisect: {}", text::step_line(step, commits));
    };
    let report = match run_bisect(&options, &mut on_step) {
        Ok(report) => report,
        Err(BisectError::Interrupted) => {
            eprintln!("analyze-trends bisect: {}", BisectError::Interrupted);
            std::process::exit(130);
        }
        Err(e) => return Err(e.into()),
    };
    let mut stdout = std::io::stdout();
    report
        .write(args.format, &mut stdout)
        .and_then(|()| Ok(stdout.flush()?))
        .context("cannot write to stdout")?;
    eprintln!("wrote {}", options.out.join("bisect.json").display());
    Ok(match report.result {
        BisectResult::Culprit { .. } => Outcome::RegressionFound,
        BisectResult::NoRegression => Outcome::Clean,
        BisectResult::Unresolved { .. } => Outcome::Unsure,
    })
}
