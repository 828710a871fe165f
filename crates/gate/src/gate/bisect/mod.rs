//! `analyze-trends bisect`: the first commit on the first-parent line from `--good` to
//! `--bad` where the benchmarks regress, found by binary search ([`search`]) in which each
//! probe is the gate's own judgement of that commit against `--good` ([`step`]), re-measured
//! by the gate until it is sure or its `--max-rounds` are spent. `--bad` is judged first:
//! the benchmarks it degrades are the ones the search follows (and the only ones measured
//! afterwards), and if it degrades none there is nothing to search. A commit that does not
//! build, or where the followed benchmarks cannot be measured or stay unsure, is skipped and
//! named, never guessed; when only such commits are left the result names them all.
//!
//! Every step writes its gate files under `<out>/steps/` and both sides' runs into
//! `<out>/results`, so a bisect never adds to the user's own history.

pub mod history;
pub mod search;
pub mod step;
pub mod text;

use crate::files::atomic::write_atomic;
use crate::gate::{GateError, JudgeOptions};
use history::{Commit, History};
use search::{Found, Mark, Search};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use step::{Effect, Follow, Step, StepVerdict};

/// The `schema` of bisect.json (schemas/bisect.schema.json).
pub const SCHEMA: &str = "stackbench.bisect.v1";

/// Everything `analyze-trends bisect` was asked to do.
#[derive(Clone, Debug)]
pub struct BisectOptions {
    pub good: String,
    pub bad: String,
    /// Every step's gate measures and judges as this says. With `--profile`, each step's
    /// gate profiles its regressed and unsure benchmarks on both sides
    /// (`steps/<step>/profiles/`), so the culprit's step holds its profiles.
    pub judge: JudgeOptions,
    /// bisect.json, the steps' gate files (`steps/`) and their runs (`results/`).
    pub out: PathBuf,
}

/// Why a bisect could not search. All are bad input or a broken environment (exit 2), but
/// `Interrupted`.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error("{flag} `{rev}` is no revision of this repository: {detail}")]
    UnknownRev {
        flag: &'static str,
        rev: String,
        detail: String,
    },
    #[error("--good and --bad are the same commit ({commit}): the range holds no commit to judge")]
    EmptyRange { commit: String },
    #[error(
        "--good {} ({}) is not an ancestor of --bad {} ({}): bisect searches the history from good to bad",
        good.short(), good.subject, bad.short(), bad.subject
    )]
    NotAncestor { good: Commit, bad: Commit },
    #[error("--bad {} ({}) does not build, so it cannot be judged. cargo's last lines:\n{tail}", bad.short(), bad.subject)]
    BadDoesNotBuild { bad: Commit, tail: String },
    #[error("--good {} ({}) does not build, so nothing can be judged against it. cargo's last lines:\n{tail}", good.short(), good.subject)]
    GoodDoesNotBuild { good: Commit, tail: String },
    #[error(transparent)]
    Write(#[from] crate::files::atomic::AtomicWriteError),
    #[error("cannot write bisect.json: {0}")]
    Report(#[from] crate::report::writer::WriteError),
    #[error("interrupted: the step's worktrees were removed; bisect.json was not written")]
    Interrupted,
    /// A step's gate failed, or bisect met what the gate names the same way: a directory
    /// outside git, git failing, an option out of range.
    #[error(transparent)]
    Gate(GateError),
}

impl From<GateError> for BisectError {
    fn from(error: GateError) -> Self {
        match error {
            GateError::Interrupted => BisectError::Interrupted,
            other => BisectError::Gate(other),
        }
    }
}

/// One commit the culprit may be, with why it could not be ruled out.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    #[serde(flatten)]
    pub commit: Commit,
    pub position: usize,
    pub why: String,
}

/// Where the search ended.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BisectResult {
    /// The first commit where the followed benchmarks regress.
    Culprit {
        #[serde(flatten)]
        commit: Commit,
        position: usize,
        effects: Vec<Effect>,
        /// One line per degraded benchmark a PR comment can quote: "`<commit>` made
        /// `<benchmark>` N % slower: `<function>` +M instructions per call (+P %)" (the
        /// function part where counting mode named one).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        headlines: Vec<String>,
    },
    /// `--bad` degrades nothing against `--good`: there is nothing to search.
    NoRegression,
    /// The search could not name one commit: `--bad` itself was unsure or unmeasurable,
    /// or the commits left between good and bad could not be judged.
    Unresolved {
        reason: String,
        candidates: Vec<Candidate>,
    },
}

/// What a bisect did and found (bisect.json, `--format json`).
#[derive(Clone, Debug, Serialize)]
pub struct BisectReport {
    pub schema: &'static str,
    pub good: Commit,
    pub bad: Commit,
    /// Commits after `--good` up to `--bad` on the first-parent line.
    pub commits: usize,
    /// What every step measured and how it judged.
    #[serde(flatten)]
    pub judge: JudgeOptions,
    /// The benchmarks `--bad` degraded, which every later step measures and judges.
    pub followed: Vec<String>,
    /// In the order they ran; the first is `--bad`.
    pub steps: Vec<Step>,
    pub result: BisectResult,
    pub total_seconds: f64,
}

/// Runs the bisect from the repository around the current directory. `on_step` sees each
/// step as it finishes, with the number of commits in the range, (the CLI prints a line), and bisect.json is written into `--out`.
pub fn run_bisect(
    options: &BisectOptions,
    on_step: &mut dyn FnMut(&Step, usize),
) -> Result<BisectReport, BisectError> {
    options.judge.check().map_err(GateError::BadOption)?;
    let started = Instant::now();
    let history = History::discover(Path::new("."))?;
    let good = history.commit(&history.resolve("--good", &options.good)?)?;
    let bad = history.commit(&history.resolve("--bad", &options.bad)?)?;
    let line = history.range(&good, &bad)?;
    let n = line.len();
    let mut steps = Vec::new();
    let (first, comparison) = step::probe(options, &good, &bad, n, &Follow::Everything)?;
    on_step(&first, n);
    let followed = comparison
        .as_ref()
        .map(step::degraded_ids)
        .unwrap_or_default();
    let verdict = (first.verdict, first.reason.clone());
    steps.push(first);
    let result = match verdict {
        (StepVerdict::Regressed, _) => {
            let follow = Follow::Ids(&followed);
            search_line(options, &good, &line, &follow, &mut steps, on_step)?
        }
        (StepVerdict::Clean, _) => BisectResult::NoRegression,
        (_, reason) => BisectResult::Unresolved {
            reason: format!(
                "--bad could not be judged against --good: {}",
                reason.unwrap_or_default()
            ),
            candidates: Vec::new(),
        },
    };
    let report = BisectReport {
        schema: SCHEMA,
        good,
        bad,
        commits: n,
        judge: options.judge.clone(),
        followed,
        steps,
        result,
        total_seconds: started.elapsed().as_secs_f64(),
    };
    write_report(options, &report)?;
    Ok(report)
}

/// The search proper, `--bad` (the last position) already known to regress.
fn search_line(
    options: &BisectOptions,
    good: &Commit,
    line: &[Commit],
    follow: &Follow<'_>,
    steps: &mut Vec<Step>,
    on_step: &mut dyn FnMut(&Step, usize),
) -> Result<BisectResult, BisectError> {
    let mut search = Search::new(line.len());
    while let Some(position) = search.next() {
        let (step, _) = step::probe(options, good, &line[position - 1], position, follow)?;
        on_step(&step, line.len());
        search.mark(
            position,
            match step.verdict {
                StepVerdict::Regressed => Mark::Bad,
                StepVerdict::Clean => Mark::Good,
                StepVerdict::Unsure | StepVerdict::Skipped => Mark::Untestable,
            },
        );
        steps.push(step);
    }
    let step_at = |p: usize| steps.iter().find(|s| s.position == p);
    Ok(match search.found() {
        Found::Culprit(position) => {
            let commit = line[position - 1].clone();
            let effects = step_at(position)
                .map(|s| s.effects.clone())
                .unwrap_or_default();
            BisectResult::Culprit {
                headlines: headlines(&commit, &effects),
                commit,
                position,
                effects,
            }
        }
        Found::OneOf(positions) => {
            let candidates: Vec<Candidate> = positions
                .iter()
                .map(|&p| Candidate {
                    commit: line[p - 1].clone(),
                    position: p,
                    why: step_at(p)
                        .map(|s| match s.verdict {
                            StepVerdict::Regressed => "regressed (the first known bad)".into(),
                            v => format!("{}: {}", v.as_str(), s.reason.as_deref().unwrap_or("")),
                        })
                        .unwrap_or_else(|| "not probed".into()),
                })
                .collect();
            BisectResult::Unresolved {
                reason: format!(
                    "the first regressing commit is one of {}: the commits between the last good and the first bad one could not be judged",
                    candidates.len()
                ),
                candidates,
            }
        }
    })
}

/// The culprit's one-line summaries: one per benchmark it degrades, with the function that
/// changed most where counting mode named one.
fn headlines(commit: &Commit, effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter(|e| e.status == crate::analysis::Status::Degraded.as_str())
        .filter_map(|e| {
            let change = e.change_percent?;
            Some(crate::gate::functions::headline(
                commit.short(),
                &e.id,
                change,
                e.functions.first(),
            ))
        })
        .collect()
}

fn write_report(options: &BisectOptions, report: &BisectReport) -> Result<(), BisectError> {
    use crate::report::writer::{Format, ReportWriter};
    // bisect.json is the report's JSON format, written by its one writer.
    let bytes = report.to_bytes(Format::Json)?;
    Ok(write_atomic(&options.out.join("bisect.json"), &bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::functions::FunctionChange;

    #[test]
    fn the_culprits_headline_names_the_function_where_counting_named_one() {
        let commit = Commit {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            subject: "adds a checksum".into(),
        };
        let effect = |id: &str, status: &str, functions: Vec<FunctionChange>| Effect {
            id: id.into(),
            status: status.into(),
            change_percent: Some(5.2),
            ci95_percent: None,
            functions,
        };
        let checksum = FunctionChange {
            function: "base64::checksum".into(),
            own: true,
            ..FunctionChange::between(0, 38)
        };
        let lines = headlines(
            &commit,
            &[
                effect("encode/50", "degraded", vec![checksum]),
                effect("encode/3", "degraded", Vec::new()),
                effect("decode/50", "unchanged", Vec::new()),
            ],
        );
        assert_eq!(
            lines,
            [
                "`0123456` made `encode/50` 5.2 % slower: `base64::checksum` +38 instructions per call",
                "`0123456` made `encode/3` 5.2 % slower",
            ]
        );
    }
}
