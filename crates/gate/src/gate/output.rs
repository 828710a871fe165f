//! From the collected rounds to the verdict and the files: the comparison model shared with
//! `compare` (so every writer works), extended with the gate's per-round figures; the two
//! sides recorded as runs; `comparison.json`, `comparison.md` (the PR comment, with a hidden
//! marker for sticky comments) and `summary.md` written atomically into `--out`.

use super::calibrate::{self, Calibration};
use super::load;
use super::rounds::{Collected, SideRun};
use super::verdict::{
    Held, RoundFigure, RoundShift, RoundsEstimate, between_round_prior, estimate_moderated,
    project, round_figures, statuses_at_looks,
};
use super::{GateError, GateOptions};
use crate::analysis::verdict::percent;
use crate::analysis::{
    BenchComparison, Comparison, Estimator, HardwareCheck, Judgement, Status, Unmeasured,
    UnmeasuredStatus, VerdictRule,
};
use crate::files::atomic::write_atomic;
use crate::report::comparison::{RoundsView, render_gate_markdown};
#[cfg(test)]
use crate::report::format::format_ns;
use crate::results::NoEvidence;
use crate::results::{FailedBenchmark, RunRecord, RunStore};
use crate::stats::SampleDefect;
use crate::stats::VariancePrior;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first line of `comparison.md`: a bot finds its own comment by it and edits it.
pub const STICKY_MARKER: &str = "<!-- stackbench-gate -->";

/// How the gate ran.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct GateInfo {
    pub base: String,
    pub head: String,
    pub base_commit: Option<String>,
    pub head_commit: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub base_env: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub head_env: BTreeMap<String, String>,
    pub full_rounds: usize,
    pub rounds_run: usize,
    /// Benchmarks measured again after the full rounds because they were inconclusive.
    pub remeasured: Vec<String>,
    pub criterion_args: Vec<String>,
    /// The CPUs the bench executables were pinned to (`--cpus`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// The run ids both sides were recorded as (base, head).
    pub runs: Vec<String>,
    /// `time` (rounds) or `instructions` (counted; see `GateComparison::counting`).
    pub measure: crate::harness::measure::Measure,
}

/// Every round of one benchmark.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct GateRounds {
    pub id: String,
    pub rounds: Vec<RoundFigure>,
}

/// `stackbench.comparison.v1`, extended with `gate` and per-round figures.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct GateComparison {
    #[serde(flatten)]
    pub comparison: Comparison,
    pub gate: GateInfo,
    pub rounds: Vec<GateRounds>,
    /// Counting mode only: the counts, the rule and the ids timed instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counting: Option<super::counting::CountingReport>,
    /// The timer floor and noise measured before the first round.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// `--profile`: the regressed and unsure benchmarks' profiles on each side, or why
    /// each is missing (`crates/gate/src/gate/profile.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<crate::harness::profile::ProfileRecord>,
    /// `--profile perf`: per profiled benchmark, the functions whose share of the samples
    /// changed most between the two profiles (`crates/gate/src/gate/sampled.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sampled_functions: Vec<super::sampled::SampledFunctions>,
}

/// `comparison.json` as either command writes it: the gate's, with how it ran and every
/// round, or `analyze-trends compare`'s, the comparison alone. Its schema
/// (`schemas/comparison.schema.json`) is generated from this type.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(transform = gate_sections_go_together)]
pub enum ComparisonDocument {
    Gate(Box<GateComparison>),
    Compare(Box<Comparison>),
}

/// The gate's sections come together: a `gate` without its `rounds` (or the reverse), or
/// a `counting` section outside a gate, is a broken file, not a plain comparison.
fn gate_sections_go_together(schema: &mut schemars::Schema) {
    schema.insert(
        "dependentRequired".into(),
        serde_json::json!({"gate": ["rounds"], "rounds": ["gate"], "counting": ["gate"]}),
    );
}

/// The files one gate wrote.
#[derive(Clone, Debug)]
pub struct WrittenFiles {
    pub files: Vec<PathBuf>,
    pub runs: Vec<PathBuf>,
}

/// Fails early, before any build or round, when `--out` cannot take a file.
pub fn check_writable(out: &Path) -> Result<(), GateError> {
    let fail = |detail: String| GateError::OutNotWritable {
        path: out.to_path_buf(),
        detail,
    };
    std::fs::create_dir_all(out).map_err(|e| fail(e.to_string()))?;
    tempfile::NamedTempFile::new_in(out)
        .map(drop)
        .map_err(|e| fail(e.to_string()))
}

/// One benchmark's rounds before the estimate: its id, figures and per-round shifts.
type Measured = (String, Vec<RoundFigure>, Vec<RoundShift>);

/// One benchmark's rounds as the round rule judges them: its figures, the estimate, and
/// the per-round shifts the estimate came from.
type Judged = (String, Vec<RoundFigure>, RoundsEstimate, Vec<RoundShift>);

/// Every benchmark the round rule judged, with its status and q at its look.
struct Verdicts {
    judged: Vec<Judged>,
    statuses: Vec<(Status, f64)>,
    /// The changes their look's level held back (`verdict::statuses_at_looks`).
    held: Vec<Held>,
    /// The changes held because they followed other processes' load ([`hold_load`]).
    load_held: Vec<crate::analysis::LoadHeld>,
    prior: Option<VariancePrior>,
}

/// Per benchmark measured on both sides: its rounds and the rounds-level estimate (a
/// benchmark below the calibrated floor has none: the round rule never judges it), with
/// each one's status and q at its look, and the changes its look's level held back.
fn judged_with_statuses(collected: &Collected, rule: &VerdictRule) -> Verdicts {
    let (judged, prior) = estimates_and_prior(collected, rule);
    let with_pairs: Vec<(RoundsEstimate, &[RoundShift])> =
        judged.iter().map(|j| (j.2, j.3.as_slice())).collect();
    let (mut statuses, held) =
        statuses_at_looks(&with_pairs, rule, prior.as_ref(), collected.looks);
    let load_held = hold_load(collected, &judged, &mut statuses);
    Verdicts {
        judged,
        statuses,
        held,
        load_held,
        prior,
    }
}

/// The per-round loads of other processes on each side, for `comparison.json`.
fn round_loads(collected: &Collected) -> Vec<crate::analysis::RoundLoad> {
    collected.load[0]
        .keys()
        .filter_map(|round| round_load(collected, *round))
        .collect()
}

/// Round `round`'s loads on both sides, and the side that had more by [`load::imbalance`];
/// `None` unless both sides' loads were read.
fn round_load(collected: &Collected, round: usize) -> Option<crate::analysis::RoundLoad> {
    let (b, h) = (
        collected.load[0].get(&round)?,
        collected.load[1].get(&round)?,
    );
    let toward = if load::imbalance(h, b).is_some() {
        Some("head")
    } else if load::imbalance(b, h).is_some() {
        Some("base")
    } else {
        None
    };
    Some(crate::analysis::RoundLoad {
        round,
        base_foreign_cpus: b.foreign_cpus(),
        head_foreign_cpus: h.foreign_cpus(),
        cpus: b.cpus.max(h.cpus),
        unbalanced_toward: toward.map(str::to_string),
    })
}

/// A `degraded` (or `improved`) benchmark whose slower-looking side ran beside more of
/// other processes' work in *every* round it was judged on ([`load::imbalance`]) has a
/// change that the load explains as well as the code: it becomes `inconclusive`, so the
/// gate measures it again when `--max-rounds` allows and calls it unsure, with the loads,
/// when it does not. One balanced round is enough to keep the verdict: ABBA puts the
/// sides' runs at different times in the next round, and a load that followed one side
/// through every round is what this is for (docs/explanation/verdicts.md, "Other
/// processes").
fn hold_load(
    collected: &Collected,
    judged: &[Judged],
    statuses: &mut [(Status, f64)],
) -> Vec<crate::analysis::LoadHeld> {
    let mut held = Vec::new();
    for ((id, figures, ..), (status, _)) in judged.iter().zip(statuses.iter_mut()) {
        let slow = match status {
            Status::Degraded => 1,
            Status::Improved => 0,
            _ => continue,
        };
        let sides = [&collected.load[slow], &collected.load[1 - slow]];
        let excess: Option<Vec<f64>> = figures
            .iter()
            .map(|f| load::imbalance(sides[0].get(&f.round)?, sides[1].get(&f.round)?))
            .collect();
        let Some(excess) = excess.filter(|e| !e.is_empty()) else {
            continue;
        };
        let rounds: Vec<usize> = figures.iter().map(|f| f.round).collect();
        let smallest = excess.iter().copied().fold(f64::INFINITY, f64::min);
        let (loaded, other) = if slow == 1 {
            ("head", "base")
        } else {
            ("base", "head")
        };
        let listed: Vec<String> = rounds.iter().map(usize::to_string).collect();
        held.push(crate::analysis::LoadHeld {
            id: id.clone(),
            would_be: status.as_str().to_string(),
            reason: format!(
                "{} by the rounds alone, but in every round it was judged on ({}) other processes kept at least {smallest:.2} more CPU(s) busy during the {loaded}'s runs than during the {other}'s: the load explains the change as well as the code",
                status.as_str(),
                listed.join(", ")
            ),
            rounds,
            excess_cpus: smallest,
        });
        *status = Status::Inconclusive;
    }
    held
}

/// The estimates of [`judged_with_statuses`], with the between-round variance prior they
/// were moderated by.
fn estimates_and_prior(
    collected: &Collected,
    rule: &VerdictRule,
) -> (Vec<Judged>, Option<VariancePrior>) {
    let below_floor = collected.below_floor_ids();
    // The prior needs every benchmark's pairs before any one is estimated.
    let measured: Vec<Measured> = collected
        .per_round
        .iter()
        .filter(|(id, _)| {
            !collected.failures[1].contains_key(*id)
                && !collected.unusable.iter().any(|u| u.contains_key(*id))
                && !below_floor.contains_key(*id)
        })
        .map(|(id, sides)| {
            let (figures, pairs) = round_figures(sides, rule.confidence).into_iter().unzip();
            (id.clone(), figures, pairs)
        })
        .collect();
    let prior = between_round_prior(measured.iter().map(|m| m.2.as_slice()));
    let judged = measured
        .into_iter()
        .filter_map(|(id, figures, pairs)| {
            let e = estimate_moderated(&pairs, rule.confidence, prior.as_ref())?;
            Some((id, figures, e, pairs))
        })
        .collect();
    (judged, prior)
}

/// Ids still inconclusive after the rounds so far and not stopped: the ones to measure
/// again.
pub fn inconclusive_ids(collected: &Collected, rule: &VerdictRule) -> Vec<String> {
    let v = judged_with_statuses(collected, rule);
    inconclusive(&v.judged, &v.statuses)
        .filter(|j| !collected.stopped.contains_key(&j.0))
        .map(|j| j.0.clone())
        .collect()
}

fn inconclusive<'a>(
    judged: &'a [Judged],
    statuses: &'a [(Status, f64)],
) -> impl Iterator<Item = &'a Judged> {
    judged
        .iter()
        .zip(statuses)
        .filter(|(_, (status, _))| *status == Status::Inconclusive)
        .map(|(j, _)| j)
}

/// After round `round`: stops every inconclusive benchmark whose rounds project more than
/// `max_rounds` for a decision (verdict step 6), and after round 2 checks the calibration's
/// noise against the rounds' spread. Returns the lines to tell the user now.
pub fn after_round(
    collected: &mut Collected,
    rule: &VerdictRule,
    round: usize,
    max_rounds: usize,
) -> Vec<String> {
    let Verdicts {
        judged, statuses, ..
    } = judged_with_statuses(collected, rule);
    let mut lines = Vec::new();
    let newly: Vec<crate::analysis::StoppedEarly> = inconclusive(&judged, &statuses)
        .filter(|j| !collected.stopped.contains_key(&j.0))
        .filter_map(|(id, _, e, pairs)| {
            let p = project(pairs, rule).filter(|p| p.exceeds(max_rounds))?;
            Some(crate::analysis::StoppedEarly {
                id: id.clone(),
                rounds: e.rounds,
                round_sd_percent: p.sd_percent,
                rounds_needed: p.rounds_needed,
                max_rounds,
                reason: p.reason(rule.threshold_percent, max_rounds),
            })
        })
        .collect();
    for stop in newly {
        lines.push(format!(
            "analyze-trends gate: `{}` is unsure after round {round}, not measured again: {}",
            stop.id, stop.reason
        ));
        collected.stopped.insert(stop.id.clone(), stop);
    }
    if let Some(l) = round_load(collected, round).filter(|l| l.unbalanced_toward.is_some()) {
        lines.push(format!(
            "analyze-trends gate: warning: round {round}: other processes kept {:.2} CPU(s) busy during the base's runs and {:.2} during the head's (of {} counted): a change that follows this load in every round is held as unsure",
            l.base_foreign_cpus, l.head_foreign_cpus, l.cpus
        ));
    }
    if round == 2
        && let Some(calibration) = &collected.calibration
    {
        let sds: Vec<f64> = judged
            .iter()
            .filter_map(|j| {
                let changes: Vec<f64> = j.1.iter().map(|f| f.change_percent).collect();
                crate::analysis::rounds_spread::sample_sd(&changes)
            })
            .collect();
        collected.calibration_check = calibration.check_against_rounds(&sds, round);
        if let Some(warning) = collected
            .calibration_check
            .as_ref()
            .and_then(|c| c.warning.as_ref())
        {
            lines.push(format!("analyze-trends gate: warning: {warning}"));
        }
    }
    lines
}

/// The verdict over everything collected: the rows come from the gate's round rule, and
/// the rest of the verdict (summary, failures, evidence) from [`Judgement`], as `compare`'s
/// does. Nothing measured at all is [`NoEvidence`], naming the filter and the targets.
pub fn judge(
    sides: &[&SideRun; 2],
    collected: &Collected,
    options: &GateOptions,
    rule: &VerdictRule,
    targets: &[String],
) -> Result<GateComparison, NoEvidence> {
    judge_with(sides, collected, options, rule, targets, None)
}

/// [`judge`], with counting mode's counted benchmarks (and its failed, missing and new ids)
/// beside the timed ones.
pub fn judge_with(
    sides: &[&SideRun; 2],
    collected: &Collected,
    options: &GateOptions,
    rule: &VerdictRule,
    targets: &[String],
    counted: Option<&super::counting::Counted>,
) -> Result<GateComparison, NoEvidence> {
    let Verdicts {
        judged,
        statuses,
        held,
        load_held,
        prior,
    } = judged_with_statuses(collected, rule);
    let mut rows: Vec<BenchComparison> = judged
        .iter()
        .zip(statuses)
        .map(|((id, figures, e, _), (status, q))| row(id, figures, e, status, q, collected))
        .collect();
    let mut unmeasured = unmeasured(collected);
    if let Some(counted) = counted {
        rows.extend(counted.rows());
        unmeasured.extend(counted.unmeasured.iter().cloned());
    }
    rows.extend(collected.below_floor_rows());
    let fingerprint = |i: usize| crate::results::probe_fingerprint(collected.system[i].as_ref());
    let [base_records, head_records] = &collected.records;
    let accuracy = crate::analysis::accuracy::judge_accuracy(
        rows.iter().filter_map(|r| {
            let (b, h) = (base_records.get(&r.id)?, head_records.get(&r.id)?);
            Some((r.id.as_str(), b.accuracy.as_ref(), h.accuracy.as_ref()))
        }),
        &options.accuracy_rules,
    );
    let compared: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let judgement = Judgement {
        accuracy,
        accuracy_unmatched: options.accuracy_rules.unmatched(&compared),
        baseline: format!("base {}", sides[0].rev),
        candidate: format!("head {}", sides[1].rev),
        rule: *rule,
        hardware: HardwareCheck {
            baseline_fingerprint: fingerprint(0),
            candidate_fingerprint: fingerprint(1),
            different: false,
            warning: None,
        },
        rows,
        unmeasured,
        skipped: Vec::new(),
        systemic: None,
        unusable: unusable(collected),
    };
    let mut comparison = judgement.into_comparison(|| {
        let filter = options
            .judge
            .filter
            .as_deref()
            .map_or(String::new(), |f| format!("--filter `{f}` over "));
        format!("{filter}bench targets {}", targets.join(", "))
    })?;
    if let Some(c) = &collected.calibration {
        let note = calibrate::below_floor_note(&comparison.comparisons, c);
        comparison.summary.notes.extend(note);
    }
    comparison.rounds_spread =
        rounds_spread(collected, prior.as_ref(), &judged, &held, load_held, rule);
    comparison.summary.notes.extend(collected.load_unknown.as_ref().map(|why| {
        format!(
            "other processes' load during the rounds could not be read ({why}): a change that followed such load cannot be told from the code's"
        )
    }));
    let warning = collected.calibration_check.as_ref();
    comparison
        .summary
        .notes
        .extend(warning.and_then(|c| c.warning.clone()));
    comparison.accepted_unsure = options.accept_unsure.clone();
    // The timed rows' estimator (named whenever a row was timed); the counted rows carry
    // their counts, which every writer shows as their base and head.
    if counted.is_none() || !judged.is_empty() {
        comparison.estimator = Some(Estimator::MeanRoundShift);
    }
    if let Some(counted) = counted {
        comparison.instruction_counts = counted.instruction_counts();
    }
    Ok(GateComparison {
        comparison,
        gate: gate_info(sides, collected, options),
        rounds: judged
            .into_iter()
            .map(|(id, rounds, ..)| GateRounds { id, rounds })
            .collect(),
        counting: counted.map(|c| c.report.clone()),
        calibration: collected.calibration.clone(),
        profiles: Vec::new(),
        sampled_functions: Vec::new(),
    })
}

/// What the rounds' spread did to the verdict, when it did anything.
fn rounds_spread(
    collected: &Collected,
    prior: Option<&VariancePrior>,
    judged: &[Judged],
    held: &[Held],
    load_held: Vec<crate::analysis::LoadHeld>,
    rule: &VerdictRule,
) -> Option<crate::analysis::RoundsSpread> {
    let sequential =
        collected
            .looks
            .filter(|l| l.count() > 1)
            .map(|looks| crate::analysis::SequentialLooks {
                planned_rounds: looks.planned_rounds,
                max_rounds: looks.max_rounds,
                first_look_confidence: looks.confidence(rule, looks.planned_rounds),
                later_look_confidence: looks.confidence(rule, looks.max_rounds),
                held: held
                    .iter()
                    .map(|h| crate::analysis::HeldChange {
                        id: judged[h.index].0.clone(),
                        rounds: judged[h.index].2.rounds,
                        confidence: h.confidence,
                        would_be: h.would_be.as_str().to_string(),
                    })
                    .collect(),
            });
    let spread = crate::analysis::RoundsSpread {
        sequential,
        stopped: collected.stopped.values().cloned().collect(),
        calibration_check: collected.calibration_check.clone(),
        pooled: prior.map(|p| crate::analysis::PooledSpread {
            round_sd_percent: percent(p.variance.sqrt()),
            prior_df: Some(p.df).filter(|d| d.is_finite()),
            benchmarks: p.fitted_from,
        }),
        loads: round_loads(collected),
        load_held,
    };
    (spread != Default::default()).then_some(spread)
}

/// Benchmarks whose samples the reader refused in some round, on either side.
fn unusable(collected: &Collected) -> Vec<(String, &'static str, SampleDefect)> {
    let mut out = Vec::new();
    for (side, map) in ["baseline", "candidate"]
        .into_iter()
        .zip(&collected.unusable)
    {
        for (id, reason) in map {
            if out.iter().any(|(seen, ..): &(String, _, _)| seen == id) {
                continue;
            }
            let defect = SampleDefect::Unreadable {
                path: format!("{side} side"),
                reason: reason.clone(),
            };
            out.push((id.clone(), side, defect));
        }
    }
    out
}

/// How the gate ran: sides, rounds, what was measured again.
fn gate_info(sides: &[&SideRun; 2], collected: &Collected, options: &GateOptions) -> GateInfo {
    let rounds_run = collected
        .per_round
        .values()
        .flat_map(|s| s[0].keys().chain(s[1].keys()))
        .max()
        .copied()
        .unwrap_or(0);
    let remeasured = collected
        .per_round
        .iter()
        .filter(|(_, s)| s[1].keys().any(|r| *r > options.judge.rounds))
        .map(|(id, _)| id.clone())
        .collect();
    let env = |e: &[(String, String)]| e.iter().cloned().collect::<BTreeMap<_, _>>();
    GateInfo {
        base: sides[0].rev.clone(),
        head: sides[1].rev.clone(),
        base_commit: sides[0].commit.clone(),
        head_commit: sides[1].commit.clone(),
        base_env: env(&sides[0].env),
        head_env: env(&sides[1].env),
        full_rounds: options.judge.rounds,
        rounds_run,
        remeasured,
        criterion_args: options.judge.criterion_args.clone(),
        cpus: options.judge.cpus.clone(),
        runs: Vec::new(),
        measure: options.judge.measure,
    }
}

fn row(
    id: &str,
    figures: &[RoundFigure],
    e: &RoundsEstimate,
    status: Status,
    q: f64,
    collected: &Collected,
) -> BenchComparison {
    // The times come from the same estimator as the change (see `Estimator`).
    let base_medians: Vec<f64> = figures.iter().map(|f| f.base_ns).collect();
    let (baseline_ns, candidate_ns) = Estimator::MeanRoundShift.times(&base_medians, e.effect);
    // The samples the rounds judged (every round of each side), the verdict's evidence.
    let count = |i: usize| {
        collected
            .per_round
            .get(id)
            .map_or(0, |s| s[i].values().map(Vec::len).sum())
    };
    BenchComparison {
        id: id.to_string(),
        baseline_ns,
        candidate_ns,
        change_percent: Some(percent(e.effect)),
        ci95_percent: Some([percent(e.ci[0]), percent(e.ci[1])]),
        p_value: Some(e.p),
        q_value: Some(q).filter(|q| q.is_finite()),
        relative_change_percent: None,
        status,
        samples: [count(0), count(1)],
        noise_floor_percent: None,
        note: Some(match collected.stopped.get(id) {
            Some(stop) => format!("{} round(s), stopped early: {}", e.rounds, stop.reason),
            None => format!("{} round(s)", e.rounds),
        }),
        throughput: None,
    }
}

/// Failed (measured in the base, failed in the head, or no usable samples), missing and
/// new benchmarks.
fn unmeasured(collected: &Collected) -> Vec<Unmeasured> {
    let measured = |i: usize, id: &str| {
        collected
            .per_round
            .get(id)
            .is_some_and(|s| !s[i].is_empty())
    };
    let mut out = Vec::new();
    for (id, error) in &collected.failures[1] {
        out.push(entry(id, UnmeasuredStatus::Failed, Some(error.clone())));
    }
    for (side, map) in ["base", "head"].into_iter().zip(&collected.unusable) {
        for (id, reason) in map {
            if !out.iter().any(|u| u.id == *id) {
                let error = format!("no usable samples on the {side} side: {reason}");
                out.push(entry(id, UnmeasuredStatus::Failed, Some(error)));
            }
        }
    }
    for id in collected.per_round.keys() {
        if out.iter().any(|u| u.id == *id) {
            continue;
        }
        match (measured(0, id), measured(1, id)) {
            (true, false) => {
                let target = collected.target_of.get(id);
                match target.and_then(|t| collected.target_errors[1].get(t)) {
                    Some(error) => {
                        out.push(entry(id, UnmeasuredStatus::Failed, Some(error.clone())))
                    }
                    None => out.push(entry(id, UnmeasuredStatus::Missing, None)),
                }
            }
            (false, true) => out.push(entry(id, UnmeasuredStatus::New, None)),
            _ => {}
        }
    }
    out
}

fn entry(id: &str, status: UnmeasuredStatus, error: Option<String>) -> Unmeasured {
    Unmeasured {
        id: id.to_string(),
        status,
        error,
    }
}

/// Records both sides and writes the three files; each write is atomic.
pub fn write_all(
    comparison: &mut GateComparison,
    collected: &Collected,
    sides: &[&SideRun; 2],
    options: &GateOptions,
) -> Result<WrittenFiles, GateError> {
    let runs: Vec<RunRecord> = (0..2).map(|i| side_run(sides[i], i, collected)).collect();
    comparison.gate.runs = runs.iter().map(|r| r.run_id.clone()).collect();
    let json = serde_json::to_string_pretty(comparison).unwrap_or_default() + "\n";
    // The comment links to the comparison's page when a server is configured.
    let markdown = crate::report::comparison::link::link_comment(
        markdown(comparison) + &super::profile::markdown(&comparison.profiles, &options.out),
        &json,
    );
    let files = [
        ("comparison.json", json),
        ("comparison.md", format!("{STICKY_MARKER}\n{markdown}")),
        ("summary.md", markdown),
    ];
    let mut written = WrittenFiles {
        files: Vec::new(),
        runs: Vec::new(),
    };
    for (name, text) in files {
        let path = options.out.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| GateError::OutNotWritable {
            path: options.out.clone(),
            detail: e.to_string(),
        })?;
        written.files.push(path);
    }
    let store = match &options.store {
        Some(url) => RunStore::with_store(&options.results, url.clone()),
        None => RunStore::new(&options.results),
    };
    for run in &runs {
        written.runs.push(store.save(run)?);
    }
    Ok(written)
}

/// The comparison as Markdown, with the gate's rounds below it; the writing is
/// `report::comparison`'s.
fn markdown(c: &GateComparison) -> String {
    let g = &c.gate;
    let view = RoundsView {
        full_rounds: g.full_rounds,
        rounds_run: g.rounds_run,
        remeasured: &g.remeasured,
        env: [("base", &g.base_env), ("head", &g.head_env)],
        noise_percent: c.calibration.as_ref().map(|k| k.noise_percent),
        benchmarks: c
            .rounds
            .iter()
            .map(|b| (b.id.as_str(), b.rounds.as_slice()))
            .collect(),
    };
    let mut text = render_gate_markdown(&c.comparison, &view);
    if let Some(counting) = &c.counting {
        text.push_str(&super::counting::render(counting, true));
    }
    text.push_str(&super::sampled::render(&c.sampled_functions, true));
    if let Some(calibration) = &c.calibration {
        let threshold = c.comparison.threshold_percent;
        text += &calibrate::markdown(calibration, threshold, &c.comparison.comparisons);
    }
    text
}

/// One side as a run record: its samples pooled over every round it measured.
fn side_run(side: &SideRun, index: usize, collected: &Collected) -> RunRecord {
    let now = crate::results::now_unix_ms();
    let system = collected.system[index].clone();
    let short = side
        .commit
        .as_deref()
        .map(|c| &c[..c.len().min(12)])
        .unwrap_or("unknown");
    let mut failed: Vec<FailedBenchmark> = collected.failures[index]
        .iter()
        .map(|(id, error)| FailedBenchmark {
            id: id.clone(),
            error: error.clone(),
        })
        .collect();
    failed.extend(
        collected.target_errors[index]
            .iter()
            .map(|(target, error)| FailedBenchmark {
                id: format!("{target} (bench target)"),
                error: error.clone(),
            }),
    );
    RunRecord {
        label: Some(format!("gate {} {} ({short})", side.name, side.rev)),
        git_revision: side.commit.clone(),
        notes: vec![format!(
            "measured by analyze-trends gate as the {} side",
            side.name
        )],
        benchmarks: collected.records[index].values().cloned().collect(),
        failed,
        environment: side.env.iter().cloned().collect(),
        ..RunRecord::new(now, &side.criterion_root, "gate rounds", system)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(super) fn side(name: &'static str, rev: &str, env: &[(&str, &str)]) -> SideRun {
        SideRun {
            name,
            rev: rev.into(),
            commit: Some("0123456789abcdef".into()),
            crate_dir: PathBuf::from("."),
            executables: Default::default(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            criterion_root: PathBuf::from("criterion"),
            logs: PathBuf::from("logs"),
        }
    }

    /// Ten samples around `level` ns with a fixed ±1 % pattern per round.
    fn samples(level: f64, round: usize) -> Vec<f64> {
        (0..10)
            .map(|i| level * (1.0 + 0.01 * (((i * 7 + round * 3) % 10) as f64 - 4.5) / 4.5))
            .collect()
    }

    /// A fixed gate: `sum` 3x slower in every round, `xor` unchanged, `crash` failed in the
    /// head, `gone` missing from it, `fresh` new.
    pub(super) fn collected() -> Collected {
        let mut c = Collected::default();
        for round in 1..=4 {
            let drift = 1.0 + 0.01 * (round as f64 - 2.5);
            for (id, base, head) in [("sum", 1000.0, 3000.0), ("xor", 500.0, 500.0)] {
                let sides = c.per_round.entry(id.into()).or_default();
                sides[0].insert(round, samples(base * drift, round));
                sides[1].insert(round, samples(head * drift, round + 1));
            }
            let gone = c.per_round.entry("gone".into()).or_default();
            gone[0].insert(round, samples(80.0, round));
            let fresh = c.per_round.entry("fresh".into()).or_default();
            fresh[1].insert(round, samples(90.0, round));
        }
        for id in ["sum", "xor", "gone", "fresh", "crash"] {
            c.target_of.insert(id.into(), "work".into());
        }
        c.failures[1].insert("crash".into(), "result mismatch at [3]".into());
        c
    }

    pub(super) fn options(filter: Option<&str>) -> GateOptions {
        GateOptions {
            base: Some("main".into()),
            head: Some("pr".into()),
            judge: crate::gate::JudgeOptions {
                rounds: 4,
                max_rounds: 10,
                benches: Vec::new(),
                filter: filter.map(String::from),
                threshold_percent: 5.0,
                criterion_args: Vec::new(),
                cpus: Vec::new(),
                measure: crate::harness::measure::Measure::Time,
                profile: None,
            },
            out: PathBuf::from("out"),
            results: PathBuf::from("results"),
            store: None,
            base_env: Vec::new(),
            head_env: vec![("STACKBENCH_PYTHON".into(), "/venvs/new/bin/python".into())],
            accept_unsure: None,
            accuracy_rules: Default::default(),
        }
    }

    /// The calibration both below-floor tests run under: a 0.25 ns floor.
    fn quarter_ns_floor() -> Calibration {
        Calibration {
            timer_resolution_ns: 20.0,
            floor_ns: 0.25,
            floor_multiple: calibrate::FLOOR_MULTIPLE,
            noise_percent: 0.5,
            blocks: 100,
            seconds: 1.0,
        }
    }

    /// Each compared benchmark's id and status, in the comparison's order.
    fn statuses(gate: &GateComparison) -> Vec<(&str, Status)> {
        gate.comparison
            .comparisons
            .iter()
            .map(|r| (r.id.as_str(), r.status))
            .collect()
    }

    fn side_load(foreign_cpus: f64) -> load::SideLoad {
        load::SideLoad {
            wall_s: 10.0,
            foreign_cpu_s: 10.0 * foreign_cpus,
            cpus: 2,
        }
    }

    /// [`collected`] with `loads[r - 1]` = (base, head) other processes' CPUs in round r.
    fn with_loads(loads: [(f64, f64); 4]) -> Collected {
        let mut c = collected();
        for (r, (base, head)) in loads.into_iter().enumerate() {
            c.load[0].insert(r + 1, side_load(base));
            c.load[1].insert(r + 1, side_load(head));
        }
        c
    }

    #[test]
    fn a_slowdown_that_followed_other_processes_load_in_every_round_is_held_as_unsure() {
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        let rule = VerdictRule::default();
        let judge_loads = |loads| {
            judge(
                &[&base, &head],
                &with_loads(loads),
                &options(None),
                &rule,
                &["work".into()],
            )
            .unwrap()
        };
        // The head ran beside more than a CPU of other work in all four rounds: `sum`'s 3x is
        // held, with the rounds and the load in its reason; `xor` was unchanged and stays so.
        let gate = judge_loads([(0.1, 1.3), (0.0, 1.1), (0.2, 1.4), (0.1, 1.2)]);
        fn status(g: &GateComparison, id: &str) -> Option<Status> {
            statuses(g).into_iter().find(|s| s.0 == id).map(|s| s.1)
        }
        assert_eq!(status(&gate, "sum"), Some(Status::Inconclusive));
        assert_eq!(status(&gate, "xor"), Some(Status::Unchanged));
        let spread = gate.comparison.rounds_spread.as_ref().unwrap();
        let held = spread.load_held("sum").expect("sum held for the load");
        assert_eq!(
            (held.would_be.as_str(), held.rounds.as_slice()),
            ("degraded", &[1, 2, 3, 4][..])
        );
        assert!((held.excess_cpus - 1.1).abs() < 1e-9, "{held:?}");
        assert!(
            held.reason
                .contains("at least 1.10 more CPU(s) busy during the head's runs"),
            "{}",
            held.reason
        );
        assert_eq!(spread.loads.len(), 4);
        assert!(
            spread
                .loads
                .iter()
                .all(|l| l.unbalanced_toward.as_deref() == Some("head"))
        );
        let md = markdown(&gate);
        assert!(
            md.contains("the load explains the change as well as the code"),
            "{md}"
        );

        // One balanced round keeps the verdict: a load that did not follow the head there.
        let gate = judge_loads([(0.1, 1.3), (0.9, 1.0), (0.2, 1.4), (0.1, 1.2)]);
        assert_eq!(status(&gate, "sum"), Some(Status::Degraded));
        assert!(
            gate.comparison
                .rounds_spread
                .as_ref()
                .unwrap()
                .load_held
                .is_empty()
        );
        // Load on the base's side does not hold a slowdown of the head.
        let gate = judge_loads([(1.3, 0.1), (1.1, 0.0), (1.4, 0.2), (1.2, 0.1)]);
        assert_eq!(status(&gate, "sum"), Some(Status::Degraded));
        // Where the load could not be read, the verdict stands and the summary says so.
        let mut c = collected();
        c.load_unknown = Some("/proc/stat: No such file or directory".into());
        let gate = judge(&[&base, &head], &c, &options(None), &rule, &["work".into()]).unwrap();
        assert_eq!(status(&gate, "sum"), Some(Status::Degraded));
        assert!(
            gate.comparison
                .summary
                .notes
                .iter()
                .any(|n| n.contains("could not be read (/proc/stat"))
        );
    }

    #[test]
    fn a_gate_that_measured_nothing_names_the_filter_and_gives_no_verdict() {
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        let options = options(Some("^no/such$"));
        let targets = ["work".to_string()];
        let rule = VerdictRule::default();
        let err = judge(
            &[&base, &head],
            &Collected::default(),
            &options,
            &rule,
            &targets,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(err.contains("^no/such$") && err.contains("work"), "{err}");
    }

    #[test]
    fn unusable_samples_in_a_round_fail_the_gate_by_name() {
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        let mut c = collected();
        c.unusable[1].insert("xor".into(), "round 2: all 10 sample times are 0".into());
        let rule = VerdictRule::default();
        let gate = judge(&[&base, &head], &c, &options(None), &rule, &["work".into()]).unwrap();
        let xor = gate.comparison.unmeasured.iter().find(|u| u.id == "xor");
        assert_eq!(xor.map(|u| u.status), Some(UnmeasuredStatus::Failed));
        let error = xor.and_then(|u| u.error.as_deref()).unwrap_or_default();
        assert!(error.contains("sample times are 0"), "{error}");
        assert!(gate.comparison.comparisons.iter().all(|r| r.id != "xor"));
        assert_eq!(gate.comparison.evidence.unusable_list()[0].id, "xor");
        assert!(gate.comparison.regression_found());
    }

    #[test]
    fn a_benchmark_below_the_floor_is_listed_never_judged_and_never_measured_again() {
        let mut c = collected();
        // `tiny`, about 1 ns, with rounds that disagree by ±20 %: inconclusive by the round
        // rule, so without a calibration the gate would measure it again.
        for round in 1..=4 {
            let swing = if round % 2 == 0 { 1.2 } else { 0.8 };
            let sides = c.per_round.entry("tiny".into()).or_default();
            sides[0].insert(round, samples(1.0, round));
            sides[1].insert(round, samples(swing, round));
        }
        c.target_of.insert("tiny".into(), "work".into());
        let rule = VerdictRule::default();
        assert_eq!(inconclusive_ids(&c, &rule), ["tiny"]);
        c.calibration = Some(quarter_ns_floor());
        assert!(inconclusive_ids(&c, &rule).is_empty());
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        let gate = judge(&[&base, &head], &c, &options(None), &rule, &["work".into()]).unwrap();
        let statuses = statuses(&gate);
        assert_eq!(
            statuses,
            [
                ("sum", Status::Degraded),
                ("xor", Status::Unchanged),
                ("tiny", Status::BelowFloor)
            ]
        );
        let tiny = &gate.comparison.comparisons[2];
        assert_eq!((tiny.change_percent, tiny.q_value), (None, None));
        assert!(
            tiny.note
                .as_deref()
                .unwrap_or_default()
                .contains("2.500 ns")
        );
        assert!(gate.rounds.iter().all(|r| r.id != "tiny"));
        let notes = &gate.comparison.summary.notes;
        assert!(
            notes
                .iter()
                .any(|n| n.contains("1 benchmark(s) below floor")),
            "{notes:?}"
        );
        let md = markdown(&gate);
        assert!(
            md.contains("#### Calibration") && md.contains("- `tiny`: base"),
            "{md}"
        );
    }

    /// `noisy` with the per-round changes (+0.9, +50.4, +5.8 … %) added to rounds
    /// 1..=`rounds` of the `collected()` gate, where `sum` (3x) and `xor` (same) agree.
    fn with_noisy(rounds: usize) -> Collected {
        const CHANGES: [f64; 10] = [0.9, 50.4, 5.8, 27.1, 75.1, -17.1, -18.3, -17.6, 2.6, 65.4];
        let mut c = collected();
        for (round, change) in (1..=rounds).zip(CHANGES) {
            let sides = c.per_round.entry("noisy".into()).or_default();
            sides[0].insert(round, samples(2000.0, round));
            sides[1].insert(round, samples(2000.0 * (1.0 + change / 100.0), round));
        }
        c.target_of.insert("noisy".into(), "work".into());
        c
    }

    #[test]
    fn rounds_that_cannot_decide_stop_the_benchmark_with_the_projection_and_the_rest_is_decided() {
        let rule = VerdictRule::default();
        let mut c = with_noisy(2);
        c.calibration = Some(Calibration {
            noise_percent: 2.42,
            ..quarter_ns_floor()
        });
        // Round 1: no spread yet, nothing stopped.
        let mut first = with_noisy(1);
        assert!(after_round(&mut first, &rule, 1, 10).is_empty());
        assert!(first.stopped.is_empty());
        // Round 2: +0.9 and +50.4 % already project more than 10 rounds.
        let said = after_round(&mut c, &rule, 2, 10);
        assert_eq!(c.stopped.keys().collect::<Vec<_>>(), ["noisy"], "{said:?}");
        let stop = &c.stopped["noisy"];
        assert!(
            stop.rounds_needed.unwrap() > 10 && stop.rounds == 2,
            "{stop:?}"
        );
        assert!(
            said[0].contains("`noisy` is unsure after round 2")
                && said[0].contains("would be needed for 5 %"),
            "{said:?}"
        );
        // Stopped: not measured again, in the full rounds or after them.
        assert!(!inconclusive_ids(&c, &rule).contains(&"noisy".to_string()));
        let full = vec![("work".to_string(), None)];
        let plan = super::super::without_stopped(&c, &full);
        let filter = plan[0].1.as_deref().unwrap_or_default();
        assert!(
            filter.contains("sum") && filter.contains("xor") && !filter.contains("noisy"),
            "{plan:?}"
        );
        // The calibration's 2.42 % against the rounds' spread: the median of sum, xor (whose
        // rounds agree exactly here) and noisy is 0 %, so the calibration overstated it.
        let check = c.calibration_check.clone().unwrap();
        assert_eq!((check.after_round, check.benchmarks), (2, 3));
        assert!(said.iter().any(|l| l.contains("overstated")), "{said:?}");
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        // The two benchmarks with consistent rounds carry on and are decided as before.
        for round in 3..=4 {
            let drift = 1.0 + 0.01 * (round as f64 - 2.5);
            for (id, b, h) in [("sum", 1000.0, 3000.0), ("xor", 500.0, 500.0)] {
                let sides = c.per_round.get_mut(id).unwrap();
                sides[0].insert(round, samples(b * drift, round));
                sides[1].insert(round, samples(h * drift, round + 1));
            }
            after_round(&mut c, &rule, round, 10);
        }
        let gate = judge(&[&base, &head], &c, &options(None), &rule, &["work".into()]).unwrap();
        assert_eq!(
            statuses(&gate),
            [
                ("sum", Status::Degraded),
                ("noisy", Status::Inconclusive),
                ("xor", Status::Unchanged)
            ]
        );
        let spread = gate.comparison.rounds_spread.as_ref().unwrap();
        assert_eq!(spread.stopped.len(), 1);
        assert!(spread.calibration_check.is_some());
        assert!(
            gate.comparison
                .summary
                .notes
                .iter()
                .any(|n| n.contains("overstated")),
            "{:?}",
            gate.comparison.summary.notes
        );
        let md = markdown(&gate);
        assert!(
            md.contains("stopped after round 2, not measured again: rounds disagree by sd 35.0 %"),
            "{md}"
        );
        let json = serde_json::to_value(&gate).unwrap();
        assert_eq!(json["rounds_spread"]["stopped"][0]["id"], "noisy");
        // The typed comparison reads it back, and one without it still reads.
        let back: crate::analysis::Comparison = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.rounds_spread.as_ref(), Some(spread));
        let mut older = json;
        older.as_object_mut().unwrap().remove("rounds_spread");
        let old: crate::analysis::Comparison = serde_json::from_value(older).unwrap();
        assert!(old.rounds_spread.is_none());
    }

    #[test]
    fn a_gate_whose_every_benchmark_is_below_the_floor_is_unsure_not_a_pass() {
        let mut c = Collected::default();
        for round in 1..=4 {
            let sides = c.per_round.entry("tiny".into()).or_default();
            sides[0].insert(round, samples(1.0, round));
            sides[1].insert(round, samples(1.0, round));
        }
        c.target_of.insert("tiny".into(), "work".into());
        c.calibration = Some(quarter_ns_floor());
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        let rule = VerdictRule::default();
        let gate = judge(&[&base, &head], &c, &options(None), &rule, &["work".into()]).unwrap();
        assert_eq!(gate.comparison.comparisons[0].status, Status::BelowFloor);
        assert_eq!(gate.comparison.outcome(), crate::results::Outcome::Unsure);
    }

    #[test]
    fn comparison_md_matches_its_snapshot() {
        let options = options(None);
        let base = side("base", "main", &[]);
        let head = side(
            "head",
            "pr",
            &[("STACKBENCH_PYTHON", "/venvs/new/bin/python")],
        );
        let c = collected();
        let gate = judge(
            &[&base, &head],
            &c,
            &options,
            &VerdictRule::default(),
            &["work".to_string()],
        )
        .unwrap();
        let statuses = statuses(&gate);
        assert_eq!(
            statuses,
            [("sum", Status::Degraded), ("xor", Status::Unchanged)]
        );
        let unmeasured: Vec<(&str, &str)> = gate
            .comparison
            .unmeasured
            .iter()
            .map(|u| (u.id.as_str(), u.status.as_str()))
            .collect();
        assert_eq!(
            unmeasured,
            [("crash", "failed"), ("gone", "missing"), ("fresh", "new")]
        );
        assert!(gate.comparison.regression_found());
        let text = format!("{STICKY_MARKER}\n{}", markdown(&gate));
        // The workspace root's fixtures, two floors above this crate's folder (crates/gate).
        let snapshot = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/snapshots/gate-comparison.md");
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::write(&snapshot, &text).unwrap();
        }
        let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
        assert_eq!(
            text,
            expected,
            "{} differs; review and run with UPDATE_SNAPSHOTS=1",
            snapshot.display()
        );
    }
}

/// One estimator per row (issue 28): a counting-mode gate rendered in every format its
/// comparison is written in, each row's change checked against its own base and head columns.
#[cfg(test)]
mod one_estimator_per_row {
    use super::super::counting::{Counted, CountedRow, CountingReport, NotCountable, SideCount};
    use super::tests::{collected, options, side};
    use super::*;
    use crate::harness::measure::verdict::{
        AaCount, CountingRule, JitterCalibration, JitterTolerance,
    };
    use crate::harness::measure::{CallgrindCounts, CostModel, CountedBenchmark, Measure};
    use crate::report::writer::{Format, ReportWriter};

    /// One side's count: `ir` instructions and `misses` first-level data misses that also
    /// miss the last level, which the cost model weighs 35 times an instruction.
    fn side_count(ir: u64, misses: u64) -> SideCount {
        let counts = CallgrindCounts {
            ir,
            d1mr: misses,
            dlmr: misses,
            ..CallgrindCounts::default()
        };
        SideCount::from(&CountedBenchmark::new("x", counts, CostModel::GUNGRAUN))
    }

    fn aa(id: &str, first_ir: u64, again_ir: u64) -> AaCount {
        AaCount {
            id: id.into(),
            first_ir,
            again_ir,
            tolerance_instructions: JitterTolerance::from_aa(first_ir, again_ir).instructions,
            countable: true,
        }
    }

    fn counted_row(id: &str, base: SideCount, head: SideCount, aa_jitter: u64) -> CountedRow {
        let tolerance = JitterTolerance {
            instructions: aa_jitter,
        };
        let verdict = CountingRule::default()
            .judge(id, base.ir, head.ir, tolerance)
            .expect("a non-zero base");
        CountedRow {
            id: id.into(),
            target: "codec".into(),
            base,
            head,
            change_percent: verdict.change() * 100.0,
            verdict,
            jitter_tolerance_instructions: aa_jitter,
            functions: Vec::new(),
            functions_unavailable: None,
        }
    }

    /// As issue 28 saw it: `encode/slice/50` executes 726 → 764 instructions (+5.23 %) and
    /// misses the cache more, so the cost model's time estimate moves by +36 %; a decode id
    /// counted the same, with some A/A jitter; `sum` and `xor` were timed in rounds.
    fn gate() -> GateComparison {
        let report = CountingReport {
            measure: Measure::Instructions,
            threshold_percent: 1.0,
            calibration: JitterCalibration {
                benchmarks: vec![
                    aa("encode/slice/50", 726, 726),
                    aa("decode/slice/3", 1_000, 1_002),
                ],
                ..JitterCalibration::new("the base counted again perturbed")
            },
            cost_model: CostModel::GUNGRAUN,
            criterion: ["0.4.0".into(), "0.4.0".into()],
            benchmarks: vec![
                counted_row(
                    "encode/slice/50",
                    side_count(726, 2),
                    side_count(764, 10),
                    0,
                ),
                counted_row(
                    "decode/slice/3",
                    side_count(1_000, 1),
                    side_count(1_003, 1),
                    6,
                ),
            ],
            not_countable: vec![NotCountable {
                id: "sum".into(),
                target: "work".into(),
                reason: "its routine hands work to other threads".into(),
            }],
        };
        let counted = Counted {
            report,
            unmeasured: Vec::new(),
        };
        let mut options = options(None);
        options.judge.measure = Measure::Instructions;
        let (base, head) = (side("base", "main", &[]), side("head", "pr", &[]));
        judge_with(
            &[&base, &head],
            &collected(),
            &options,
            &VerdictRule::default(),
            &["work".into(), "codec".into()],
            Some(&counted),
        )
        .expect("a verdict")
    }

    fn written(gate: &GateComparison, format: Format) -> String {
        let mut out = Vec::new();
        gate.write(format, &mut out).expect("an offered format");
        String::from_utf8(out).expect("UTF-8")
    }

    /// `1.00 µs` → 1000 (ns); `764` or `764 instructions` → 764.
    fn number(cell: &str) -> f64 {
        let cell = cell.trim().trim_end_matches(" instructions");
        let (value, scale) = match cell.split_once(' ') {
            Some((v, "ns")) => (v, 1.0),
            Some((v, "µs")) => (v, 1e3),
            Some((v, "ms")) => (v, 1e6),
            Some((v, "s")) => (v, 1e9),
            _ => (cell, 1.0),
        };
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("`{cell}` is not a number"))
            * scale
    }

    /// `+5.23 %` → 5.23.
    fn percent_cell(cell: &str) -> f64 {
        cell.trim()
            .trim_end_matches(" %")
            .parse()
            .unwrap_or_else(|_| panic!("`{cell}` is not a change"))
    }

    /// The change a row shows agrees with its own base and head: exactly for counts (to the
    /// change's two decimals), within the rounding of three significant digits for times.
    fn agrees(what: &str, base: &str, head: &str, change: &str) {
        let (b, h, c) = (number(base), number(head), percent_cell(change));
        let implied = (h / b - 1.0) * 100.0;
        let exact = !base.contains('s');
        let slack = if exact { 0.006 } else { h / b };
        assert!(
            (implied - c).abs() <= slack,
            "{what}: {base} → {head} is {implied:+.2} %, but the row says {change}"
        );
    }

    const COUNTED: [&str; 2] = ["encode/slice/50", "decode/slice/3"];
    const TIMED: [&str; 2] = ["sum", "xor"];

    #[test]
    fn the_cost_model_estimate_is_not_what_the_counted_change_is_of() {
        let gate = gate();
        let encode = gate
            .comparison
            .comparisons
            .iter()
            .find(|r| r.id == "encode/slice/50")
            .expect("the encode row");
        let estimate = (encode.candidate_ns / encode.baseline_ns - 1.0) * 100.0;
        let change = encode.change_percent.unwrap_or_default();
        assert!(estimate > change + 10.0, "{estimate} vs {change}");
    }

    #[test]
    fn every_row_of_the_terminal_table_agrees_with_its_own_columns() {
        let text = written(&gate(), Format::Table);
        let mut header = "";
        let mut seen = Vec::new();
        for line in text.lines() {
            let cells: Vec<&str> = line
                .trim()
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            match cells.as_slice() {
                ["status", ..] | ["benchmark", ..] => header = line,
                // The comparison's table: status, id, base, head, change.
                [_, id, base, head, change, ..]
                    if COUNTED.contains(id) && header.starts_with("status") =>
                {
                    assert!(header.contains("base (instructions)"), "{header}");
                    agrees(id, base, head, change);
                    seen.push(format!("table {id}"));
                }
                [_, id, base, head, change, ..] if TIMED.contains(id) => {
                    assert!(header.contains("geomean of round medians"), "{header}");
                    agrees(id, base, head, change);
                    seen.push(format!("table {id}"));
                }
                // The counting section: id, Ir base, Ir head, change.
                [id, base, head, change, ..] if COUNTED.contains(id) => {
                    assert!(header.contains("Ir base"), "{header}");
                    agrees(id, base, head, change);
                    seen.push(format!("counting {id}"));
                }
                _ => {}
            }
        }
        assert_eq!(seen.len(), 6, "{seen:?}\n{text}");
    }

    #[test]
    fn every_row_of_the_markdown_comment_agrees_with_its_own_columns() {
        let gate = gate();
        let mut seen = Vec::new();
        for (what, text) in [
            ("--format markdown", written(&gate, Format::Markdown)),
            ("comparison.md", markdown(&gate)),
        ] {
            let mut header = "";
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if lines
                    .get(i + 1)
                    .is_some_and(|next| next.starts_with("|---"))
                {
                    header = line;
                    continue;
                }
                // The comparison's tables and the counting section's; not the per-round one.
                let judged = header.starts_with("| Status") || header.starts_with("| benchmark");
                if !line.starts_with("| ") || !judged {
                    continue;
                }
                let cells: Vec<String> = line
                    .trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().trim_matches('`').to_string())
                    .collect();
                let in_main_table = header.starts_with("| Status");
                let [id, base, head, change] = if in_main_table {
                    [&cells[1], &cells[2], &cells[3], &cells[4]]
                } else {
                    [&cells[0], &cells[1], &cells[2], &cells[3]]
                };
                if COUNTED.contains(&id.as_str()) {
                    let named = if in_main_table {
                        "head (instructions)"
                    } else {
                        "Ir head"
                    };
                    assert!(header.contains(named), "{what}: {header}");
                } else if TIMED.contains(&id.as_str()) {
                    assert!(header.contains("geomean of round medians"), "{header}");
                } else {
                    continue;
                }
                agrees(id, base, head, change);
                seen.push(format!("{what} {id}"));
            }
            assert!(
                text.contains("Counted rows (`--measure instructions`)"),
                "{text}"
            );
        }
        assert_eq!(seen.len(), 12, "{seen:?}");
    }

    #[test]
    fn every_row_of_the_json_and_the_html_page_agrees_with_its_own_figures() {
        let gate = gate();
        let json: serde_json::Value =
            serde_json::from_str(&written(&gate, Format::Json)).expect("JSON");
        let rows = json["comparisons"].as_array().expect("rows");
        assert_eq!(rows.len(), 4);
        for row in rows {
            let id = row["id"].as_str().unwrap_or_default();
            let change = format!(
                "{:+.2} %",
                row["change_percent"].as_f64().unwrap_or(f64::NAN)
            );
            let counts = json["instruction_counts"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["id"] == id));
            let (base, head) = match counts {
                Some(c) => (c["baseline"].to_string(), c["candidate"].to_string()),
                None => (
                    format_ns(row["baseline_ns"].as_f64().unwrap_or(f64::NAN)),
                    format_ns(row["candidate_ns"].as_f64().unwrap_or(f64::NAN)),
                ),
            };
            assert_eq!(counts.is_some(), COUNTED.contains(&id), "{id}");
            agrees(&format!("json {id}"), &base, &head, &change);
        }
        assert_eq!(json["instruction_counts"][1]["jitter_tolerance"], 6);
        let page = crate::report::pages::ComparisonPage::from_comparison(&gate.comparison);
        for row in &page.rows {
            agrees(
                &format!("html {}", row.id),
                &row.baseline,
                &row.candidate,
                &row.change,
            );
            let counted = COUNTED.contains(&row.id.as_str());
            assert_eq!(row.baseline.ends_with(" instructions"), counted, "{row:?}");
            assert_eq!(row.baseline_ns.is_none(), counted, "{row:?}");
        }
        // The formats a comparison is not written in are refused, never another written.
        for refused in [Format::Csv, Format::Html, Format::Pdf] {
            assert!(gate.write(refused, &mut Vec::new()).is_err(), "{refused}");
        }
    }

    #[test]
    fn only_benchmarks_with_a_measured_jitter_show_one() {
        let gate = gate();
        let md = markdown(&gate);
        let decode = md
            .lines()
            .find(|l| l.starts_with("| ⚪ unchanged | `decode/slice/3`"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(decode.contains("| ±6 |"), "{decode}");
        let encode = md
            .lines()
            .find(|l| l.starts_with("| 🔴 degraded | `encode/slice/50`"))
            .unwrap_or_else(|| panic!("{md}"));
        assert!(encode.contains("| +5.23 % |  |"), "{encode}");
        assert!(
            md.contains("- `decode/slice/3`: 1000 then 1002 instructions: tolerance 6"),
            "{md}"
        );
        assert!(!md.contains("- `encode/slice/50`: 726 then"), "{md}");
    }
}
