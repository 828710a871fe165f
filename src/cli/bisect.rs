//! `analyze-trends bisect`: the argument struct and the thin command over
//! [`crate::gate::bisect::run_bisect`]. It prints a line per step on stderr as the search goes,
//! then the report (a table, or bisect.json's content with `--format json`) on stdout.

use super::judge::JudgeArgs;
use super::settings::{self, FileLayer};
use crate::analysis::Outcome;
use crate::gate::bisect::{BisectError, BisectOptions, BisectResult, run_bisect, text};
use crate::gate::writer::BISECT_FORMATS;
use crate::report::writer::{Format, ReportWriter};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "The two sides are named as in every other command, --base and --head; git bisect's
--good and --bad are the same flags and stay.

Examples:
  analyze-trends bisect --good v1.2.0 --bad main
  analyze-trends bisect --base v1.2.0 --head main
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
130 interrupted."
)]
pub struct BisectArgs {
    /// A revision where the benchmarks are as they should be (the base; `--good`, git
    /// bisect's word, is the same flag)
    #[arg(long = "base", visible_alias = "good", value_name = "REV")]
    pub good: String,
    /// A later revision (a first-parent descendant of the base) where they regressed (the
    /// head; `--bad` is the same flag)
    #[arg(long = "head", visible_alias = "bad", value_name = "REV")]
    pub bad: String,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// What to print on stdout (bisect.json in --out is always written)
    #[arg(long, value_parser = Format::parser(BISECT_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// Where bisect.json, each step's gate files (steps/) and their runs (results/) go
    #[arg(long, default_value = "target/stackbench-bisect")]
    pub out: PathBuf,
}

pub fn bisect_command(args: BisectArgs) -> anyhow::Result<Outcome> {
    // The gate's settings mean the same here (each step is the gate's judgement), so they
    // come from the same flag, variable and `[gate]` key.
    let file = FileLayer::new(|| {
        crate::config::Config::discover(None)
            .context("cannot take bisect's settings from the config")
    });
    let measure = settings::measure(args.judge.measure, &file)?.value;
    let threshold = settings::threshold(args.judge.threshold, &file, measure)?.value;
    let rounds = settings::rounds(args.judge.rounds, &file)?.value;
    let options = BisectOptions {
        good: args.good,
        bad: args.bad,
        judge: args.judge.options(measure, threshold, rounds),
        out: args.out,
    };
    let mut on_step = |step: &crate::gate::bisect::step::Step, commits: usize| {
        eprintln!("analyze-trends bisect: {}", text::step_line(step, commits));
    };
    let report = match run_bisect(&options, &mut on_step) {
        Ok(report) => report,
        Err(BisectError::Interrupted) => {
            super::errors::report("analyze-trends bisect", BisectError::Interrupted);
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
