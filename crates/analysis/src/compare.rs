//! Before/after comparison of two runs (a Criterion baseline is read into an unsaved run
//! first), the core of the PR gate. The verdict comes from the raw samples; see
//! [`super::verdict`] for the rule and BENCHMARKS.md ("The regression gate") for its tuning.

use super::accuracy::{AccuracyStatus, AccuracyVerdict, judge_accuracy};
use super::throughput::{PeakTable, Rate};
use super::verdict::{OverallStatus, Status, VerdictRule, percent};
use crate::files::parallel_map;
use crate::results::{BenchmarkRecord, RunRecord};
use crate::results::{Evidence, NoEvidence};
use crate::stats::SampleDefect;
use crate::stats::{ShiftEstimate, TwoSample, benjamini_hochberg, median};
use serde::{Deserialize, Serialize};

pub const COMPARISON_SCHEMA: &str = "stackbench.comparison.v1";

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(
        "refusing to compare runs from different hardware: `{baseline}` ran on {baseline_fingerprint}, `{candidate}` on {candidate_fingerprint} (pass --allow-different-hardware to compare anyway)"
    )]
    DifferentHardware {
        baseline: String,
        candidate: String,
        baseline_fingerprint: String,
        candidate_fingerprint: String,
    },
    /// The filter or the inputs left nothing to compare (bad input, exit 2).
    #[error(transparent)]
    NoEvidence(#[from] NoEvidence),
}

/// One side of a comparison: a run (recorded, or a Criterion baseline read just now).
pub struct Side<'a> {
    /// How the user named it (`base`, `latest`, a run id).
    pub name: String,
    pub run: &'a RunRecord,
}

#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    pub rule: VerdictRule,
    pub filter: Option<regex::Regex>,
    pub allow_different_hardware: bool,
    /// Run-to-run noise floors (sd of log run medians) by benchmark id, from the history
    /// (see [`super::noise`]); empty when there is no history.
    pub noise_floors: std::collections::HashMap<String, f64>,
    /// How many earlier runs the floors came from (for the summary).
    pub history_runs: usize,
    /// The `[accuracy]` rules of `stackbench.toml` (none: accuracy shown, never judged).
    pub accuracy_rules: crate::config::AccuracyRules,
}

/// One row judged on instruction counts (the gate's counting mode): the counts its change is
/// of, and what its own A/A counts allowed. Such a row's `baseline_ns` and `candidate_ns` are
/// the cost model's time estimates, which are not what its change is of: every writer shows
/// these counts as the row's base and head instead, under a header that says so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InstructionCounts {
    pub id: String,
    /// Instructions of one iteration on the baseline side.
    pub baseline: u64,
    /// Instructions of one iteration on the candidate side.
    pub candidate: u64,
    /// The tolerance the row's own A/A counts gave, in instructions (0: identical).
    #[serde(default)]
    pub jitter_tolerance: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThroughputView {
    pub kind: String,
    pub baseline: Rate,
    pub candidate: Rate,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchComparison {
    pub id: String,
    pub baseline_ns: f64,
    pub candidate_ns: f64,
    pub change_percent: Option<f64>,
    pub ci95_percent: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    /// Benjamini-Hochberg adjusted p-value across this comparison.
    pub q_value: Option<f64>,
    /// When the whole candidate moved together: the change beyond that common shift,
    /// which is what `status` judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_change_percent: Option<f64>,
    pub status: Status,
    pub samples: [usize; 2],
    /// This benchmark's run-to-run noise from the history, in percent, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_floor_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<ThroughputView>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SystemicShift {
    pub median_change_percent: f64,
    pub fraction_moved_together: f64,
    pub message: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HardwareCheck {
    pub baseline_fingerprint: Option<String>,
    pub candidate_fingerprint: Option<String>,
    /// True when both are known and differ (only with --allow-different-hardware).
    pub different: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Why a benchmark has no row. The order is the order every writer lists them in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum UnmeasuredStatus {
    /// Failed in the candidate, or without usable samples on either side: fails the gate.
    Failed,
    /// In the baseline, absent from the candidate without a failure: a warning.
    Missing,
    /// Only in the candidate.
    New,
}

impl UnmeasuredStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UnmeasuredStatus::Failed => "failed",
            UnmeasuredStatus::Missing => "missing",
            UnmeasuredStatus::New => "new",
        }
    }
}

/// A benchmark that did not produce a number on one side, with the reason where known.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unmeasured {
    pub id: String,
    pub status: UnmeasuredStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

// The counts and notes default to zero and empty: a comparison stored before a count
// existed still reads back (the report's comparison page reads stored verdicts).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    #[serde(default)]
    pub total_failed: usize,
    #[serde(default)]
    pub total_missing: usize,
    #[serde(default)]
    pub total_improved: usize,
    #[serde(default)]
    pub total_degraded: usize,
    #[serde(default)]
    pub total_unchanged: usize,
    #[serde(default)]
    pub total_inconclusive: usize,
    #[serde(default)]
    pub total_skipped: usize,
    /// Benchmarks an `[accuracy]` rule judged to have lost accuracy (they fail the verdict).
    #[serde(default)]
    pub total_accuracy_lost: usize,
    /// Benchmarks an `[accuracy]` rule covers whose accuracy could not be compared (they
    /// make the verdict unsure).
    #[serde(default)]
    pub total_accuracy_unjudged: usize,
    pub overall_status: OverallStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub systemic_shift: Option<SystemicShift>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedInComparison {
    pub side: String,
    pub path: String,
    pub reason: String,
}

/// The shared in-memory model every comparison writer (table, Markdown, JSON) renders, and
/// what readers of `comparison.json` and of stored verdicts deserialise. The lists added
/// after v1 began default to empty, so an older stored verdict still reads.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Comparison {
    #[schemars(extend("const" = COMPARISON_SCHEMA))]
    pub schema: String,
    pub baseline: String,
    pub candidate: String,
    #[schemars(range(min = 0))]
    pub threshold_percent: f64,
    pub hardware: HardwareCheck,
    /// Sorted: degraded first, then inconclusive, improved, unchanged; by change within.
    pub comparisons: Vec<BenchComparison>,
    /// Failed first, then missing, then new; each by id.
    #[serde(default)]
    pub unmeasured: Vec<Unmeasured>,
    /// Kept for readers of v1: the ids of `new` and of `missing` or `failed`.
    #[serde(default)]
    pub added: Vec<String>,
    #[serde(default)]
    pub removed: Vec<String>,
    #[serde(default)]
    pub skipped: Vec<SkippedInComparison>,
    /// Each benchmark's error against its float64 reference, baseline beside candidate,
    /// and what the `[accuracy]` rules made of it (see [`super::accuracy`]).
    #[serde(default)]
    pub accuracy: Vec<AccuracyVerdict>,
    pub summary: Summary,
    /// What the verdict stands on: the benchmarks judged with their usable samples
    /// (baseline, candidate), and the ones that failed for want of any.
    pub evidence: Evidence,
    #[serde(default)]
    pub rule: VerdictRule,
    /// A maintainer's acceptance of an unsure verdict for this head commit (the gate's
    /// `--accept-unsure`): recorded with the verdict, and it turns exit 3 into exit 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_unsure: Option<crate::results::AcceptedUnsure>,
    /// The estimator behind every timed row's times, change and interval when it is not
    /// `compare`'s own (the gate's); the writers name it in their column headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimator: Option<super::Estimator>,
    /// The rows judged on instruction counts (`gate --measure instructions`), by id: their
    /// change is of these counts, not of their times ([`InstructionCounts`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_counts: Vec<InstructionCounts>,
    /// The gate's time mode: benchmarks stopped early because their rounds could not decide
    /// them, and the calibration checked against the rounds' spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_spread: Option<super::RoundsSpread>,
}

impl Comparison {
    /// True when the gate must fail (exit code 1): the summary's `critical`, decided once
    /// in [`summarise`].
    pub fn regression_found(&self) -> bool {
        self.summary.overall_status == OverallStatus::Critical
    }

    /// The instruction counts of row `id`, when it was judged on them.
    pub fn instruction_counts_of(&self, id: &str) -> Option<&InstructionCounts> {
        self.instruction_counts.iter().find(|c| c.id == id)
    }

    /// The benchmarks the verdict could not decide (`inconclusive`), in row order.
    pub fn unsure(&self) -> impl Iterator<Item = &BenchComparison> {
        self.comparisons
            .iter()
            .filter(|r| r.status == Status::Inconclusive)
    }

    /// The command's outcome, by the one rule beside [`crate::results::Outcome`]: a
    /// regression or failure is exit 1, an unsure verdict nobody accepted exit 3.
    /// Rows below the timer floor are listed, not judged: a verdict where every row is below
    /// the floor decided nothing and is unsure too, never a pass.
    pub fn outcome(&self) -> crate::results::Outcome {
        let only_below_floor = !self.comparisons.is_empty()
            && self
                .comparisons
                .iter()
                .all(|r| r.status == Status::BelowFloor);
        let unsure = (self.unsure().next().is_some()
            || only_below_floor
            || self.summary.total_accuracy_unjudged > 0)
            && self.accepted_unsure.is_none();
        self.evidence
            .verdict_outcome(self.regression_found(), unsure)
    }

    /// What the history database keeps of this verdict.
    pub fn stored_verdict(&self) -> crate::results::StoredVerdict {
        let s = &self.summary;
        crate::results::StoredVerdict {
            threshold_percent: self.threshold_percent,
            regression: self.regression_found(),
            unsure: self.unsure().count() as u64,
            accepted_unsure: self.accepted_unsure.is_some(),
            degraded: s.total_degraded as u64,
            improved: s.total_improved as u64,
            unchanged: s.total_unchanged as u64,
            inconclusive: s.total_inconclusive as u64,
            // The model holds only strings, finite numbers and enums: it always serialises.
            detail_json: serde_json::to_string(self).unwrap_or_default(),
        }
    }
}

/// The parts of a verdict both `compare` and the gate produce, each in its own way; the
/// rest ([`Summary`], `added`/`removed`, the evidence, the order of rows) is derived here
/// once, so the two verdicts cannot drift apart.
pub struct Judgement {
    pub baseline: String,
    pub candidate: String,
    pub rule: VerdictRule,
    pub hardware: HardwareCheck,
    pub rows: Vec<BenchComparison>,
    pub unmeasured: Vec<Unmeasured>,
    pub skipped: Vec<SkippedInComparison>,
    pub systemic: Option<SystemicShift>,
    /// Benchmarks with no usable samples (already listed in `unmeasured` as failed).
    pub unusable: Vec<(String, &'static str, SampleDefect)>,
    /// The accuracy half of the verdict ([`super::accuracy::judge_accuracy`]).
    pub accuracy: Vec<AccuracyVerdict>,
    /// The `[accuracy]` patterns that matched none of the compared benchmarks.
    pub accuracy_unmatched: Vec<String>,
}

impl Judgement {
    /// The comparison, or [`NoEvidence`] naming `scope` when nothing was judged and nothing
    /// failed: a verdict on no evidence is never a pass.
    pub fn into_comparison(self, scope: impl FnOnce() -> String) -> Result<Comparison, NoEvidence> {
        let Judgement {
            baseline,
            candidate,
            rule,
            hardware,
            mut rows,
            mut unmeasured,
            skipped,
            systemic,
            unusable,
            accuracy,
            accuracy_unmatched,
        } = self;
        sort_rows(&mut rows);
        sort_unmeasured(&mut unmeasured);
        let mut evidence = Evidence::new();
        for row in &rows {
            evidence.judged(&row.id, &row.samples);
        }
        for (id, side, defect) in unusable {
            evidence.unusable(&id, Some(side), defect);
        }
        let count = |s: UnmeasuredStatus| unmeasured.iter().filter(|u| u.status == s).count();
        // Failures the harness reported (not sample defects, counted above).
        evidence.failed(count(UnmeasuredStatus::Failed).saturating_sub(evidence.failed_count()));
        evidence.skipped(
            count(UnmeasuredStatus::Missing) + count(UnmeasuredStatus::New) + skipped.len(),
        );
        evidence.require_some(scope)?;
        let ids = |wanted: &[UnmeasuredStatus]| {
            unmeasured
                .iter()
                .filter(|u| wanted.contains(&u.status))
                .map(|u| u.id.clone())
                .collect::<Vec<_>>()
        };
        let mut summary = summarise(&rows, skipped.len(), systemic, &hardware, &unmeasured);
        summarise_accuracy(&mut summary, &accuracy, &accuracy_unmatched);
        Ok(Comparison {
            schema: COMPARISON_SCHEMA.to_string(),
            baseline,
            candidate,
            threshold_percent: rule.threshold_percent,
            hardware,
            added: ids(&[UnmeasuredStatus::New]),
            removed: ids(&[UnmeasuredStatus::Failed, UnmeasuredStatus::Missing]),
            comparisons: rows,
            unmeasured,
            skipped,
            accuracy,
            summary,
            evidence,
            rule,
            accepted_unsure: None,
            estimator: None,
            instruction_counts: Vec::new(),
            rounds_spread: None,
        })
    }
}

/// Samples of one benchmark as log per-iteration times, with the median time.
struct Prepared<'a> {
    id: &'a str,
    base: &'a BenchmarkRecord,
    cand: &'a BenchmarkRecord,
    /// Log per-iteration times, sorted once for every statistic.
    logs: TwoSample,
    samples: [usize; 2],
    base_ns: f64,
    cand_ns: f64,
}

/// Sorted log per-iteration times and the median time. One sort serves both: the log is
/// monotone, so the sorted logs need no second sort.
fn logs(b: &BenchmarkRecord) -> (Vec<f64>, f64) {
    // Only a positive, finite time has a logarithm: a NaN among the logs broke the sorted
    // samples the rank statistics rely on and panicked (issue 16). The readers turn such
    // samples into failures first; this keeps a run built any other way from panicking.
    let mut per_iter: Vec<f64> = b
        .samples
        .per_iteration_ns()
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    per_iter.sort_by(f64::total_cmp);
    let m = crate::stats::median_of_sorted(&per_iter);
    (per_iter.into_iter().map(f64::ln).collect(), m)
}

/// Statistics of one benchmark before the cross-benchmark steps (FDR, systemic shift).
#[derive(Clone, Copy)]
struct Tested {
    shift: Option<ShiftEstimate>,
    p: f64,
}

fn test(p: &Prepared<'_>, rule: &VerdictRule, offset: f64) -> Tested {
    if p.samples[0] < rule.min_samples || p.samples[1] < rule.min_samples {
        return Tested {
            shift: None,
            p: f64::NAN,
        };
    }
    let moved;
    let logs = if offset == 0.0 {
        &p.logs
    } else {
        moved = p.logs.with_offset(offset);
        &moved
    };
    Tested {
        shift: logs.hodges_lehmann(rule.confidence),
        p: logs.mann_whitney_p(),
    }
}

/// Whether `compare` judges these two runs without `--allow-different-hardware`: their
/// fingerprints agree, or one of them has none (then the output says hardware is unknown).
pub fn comparable_hardware(a: &RunRecord, b: &RunRecord) -> bool {
    match (&a.fingerprint, &b.fingerprint) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// The "not comparable" rule: two runs whose hardware fingerprints differ are refused
/// unless `allow` (then the check says so); `show` and the dashboard apply it too.
pub fn check_hardware(
    baseline: &Side<'_>,
    candidate: &Side<'_>,
    allow: bool,
) -> Result<HardwareCheck, CompareError> {
    let (b, c) = (&baseline.run.fingerprint, &candidate.run.fingerprint);
    let mut check = HardwareCheck {
        baseline_fingerprint: b.clone(),
        candidate_fingerprint: c.clone(),
        different: false,
        warning: None,
    };
    match (b, c) {
        (Some(bf), Some(cf)) if !comparable_hardware(baseline.run, candidate.run) => {
            if !allow {
                return Err(CompareError::DifferentHardware {
                    baseline: baseline.name.clone(),
                    candidate: candidate.name.clone(),
                    baseline_fingerprint: bf.clone(),
                    candidate_fingerprint: cf.clone(),
                });
            }
            check.different = true;
            check.warning = Some(format!(
                "DIFFERENT HARDWARE: baseline ran on {bf}, candidate on {cf}; changes mix code and machine"
            ));
        }
        (Some(_), Some(_)) => {}
        _ => {
            check.warning = Some(
                "hardware not recorded for one or both sides (no system probe): cannot confirm they ran on the same machine".into(),
            );
        }
    }
    Ok(check)
}

/// Compares `candidate` against `baseline`. A benchmark without usable samples on either
/// side is `failed`, named with the reason; a filter or inputs that leave nothing to
/// compare is [`CompareError::NoEvidence`].
pub fn compare(
    baseline: &Side<'_>,
    candidate: &Side<'_>,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let hardware = check_hardware(baseline, candidate, options.allow_different_hardware)?;
    let keep = |id: &str| options.filter.as_ref().is_none_or(|f| f.is_match(id));
    let (pairs, added, removed) = match_benchmarks(baseline.run, candidate.run, &keep);
    let (pairs, mut unusable) = split_unusable(&pairs);
    let prepared: Vec<Prepared<'_>> = parallel_map(&pairs, |&(base, cand)| prepare(base, cand));
    let peaks = (peak_table(baseline.run), peak_table(candidate.run));
    let (comparisons, systemic) = judge_all(&prepared, options, &peaks);
    let (skipped, rejected) = collect_skipped(baseline.run, candidate.run, &keep, options);
    unusable.extend(rejected);
    let mut unmeasured = unmeasured(candidate.run, &added, &removed, &keep);
    // A benchmark the reader rejected has no record, so it also looks missing or new: it
    // is listed once, as failed.
    unmeasured.retain(|u| {
        u.status == UnmeasuredStatus::Failed || !unusable.iter().any(|(id, ..)| *id == u.id)
    });
    unmeasured.extend(unusable.iter().map(|(id, side, defect)| Unmeasured {
        id: id.clone(),
        status: UnmeasuredStatus::Failed,
        error: Some(format!("no usable samples in the {side}: {defect}")),
    }));
    let floors_used = comparisons
        .iter()
        .filter(|c| c.noise_floor_percent.is_some())
        .count();
    let accuracy = judge_accuracy(
        pairs
            .iter()
            .map(|(b, c)| (b.id.as_str(), b.accuracy.as_ref(), c.accuracy.as_ref())),
        &options.accuracy_rules,
    );
    let compared: Vec<&str> = pairs.iter().map(|(b, _)| b.id.as_str()).collect();
    let judgement = Judgement {
        accuracy,
        accuracy_unmatched: options.accuracy_rules.unmatched(&compared),
        baseline: baseline.name.clone(),
        candidate: candidate.name.clone(),
        rule: options.rule,
        hardware,
        rows: comparisons,
        unmeasured,
        skipped,
        systemic,
        unusable,
    };
    let mut comparison = judgement.into_comparison(|| scope(baseline, candidate, options))?;
    if !options.noise_floors.is_empty() {
        comparison.summary.notes.push(format!(
            "run-to-run noise floors from {} earlier run(s) on this hardware were applied to {floors_used} benchmark(s)",
            options.history_runs
        ));
    }
    Ok(comparison)
}

/// What was asked for, for the error when it left nothing to compare.
fn scope(baseline: &Side<'_>, candidate: &Side<'_>, options: &CompareOptions) -> String {
    let counts = format!(
        "`{}` ({} benchmarks) and `{}` ({} benchmarks)",
        baseline.name,
        baseline.run.benchmarks.len(),
        candidate.name,
        candidate.run.benchmarks.len()
    );
    match &options.filter {
        Some(f) => format!("--filter `{}` over {counts}", f.as_str()),
        None => counts,
    }
}

/// A benchmark id, which side, and why its samples are unusable.
type UnusableSamples = (String, &'static str, SampleDefect);

/// Splits the pairs whose samples both sides can be judged on from those where one side
/// has no usable samples (the one rule, [`crate::stats::usable_timed`]).
fn split_unusable<'a>(
    pairs: &[(&'a BenchmarkRecord, &'a BenchmarkRecord)],
) -> (
    Vec<(&'a BenchmarkRecord, &'a BenchmarkRecord)>,
    Vec<UnusableSamples>,
) {
    let mut usable = Vec::new();
    let mut unusable = Vec::new();
    for &(base, cand) in pairs {
        let defect = [("baseline", base), ("candidate", cand)]
            .into_iter()
            .find_map(|(side, b)| b.samples.usable().err().map(|d| (side, d)));
        match defect {
            Some((side, d)) => unusable.push((base.id.clone(), side, d)),
            None => usable.push((base, cand)),
        }
    }
    (usable, unusable)
}

fn prepare<'a>(base: &'a BenchmarkRecord, cand: &'a BenchmarkRecord) -> Prepared<'a> {
    let (log_base, base_ns) = logs(base);
    let (log_cand, cand_ns) = logs(cand);
    Prepared {
        id: &base.id,
        base,
        cand,
        samples: [log_base.len(), log_cand.len()],
        logs: TwoSample::from_sorted(log_base, log_cand),
        base_ns,
        cand_ns,
    }
}

/// The cross-benchmark steps: test each benchmark, look for a systemic shift (and re-test
/// relative to it), adjust p-values for the false-discovery rate, and build the rows,
/// sorted degraded first.
fn judge_all(
    prepared: &[Prepared<'_>],
    options: &CompareOptions,
    peaks: &(PeakTable, PeakTable),
) -> (Vec<BenchComparison>, Option<SystemicShift>) {
    let rule = &options.rule;
    let tested = parallel_map(prepared, |p| test(p, rule, 0.0));
    let systemic = systemic_shift(&tested, rule);
    let relative = systemic
        .as_ref()
        .map(|(offset, _)| parallel_map(prepared, |p| test(p, rule, *offset)));
    let judged_by = relative.as_ref().unwrap_or(&tested);
    let q = benjamini_hochberg(&judged_by.iter().map(|t| t.p).collect::<Vec<_>>());
    let mut comparisons: Vec<BenchComparison> = (0..prepared.len())
        .map(|i| {
            let floor = options.noise_floors.get(prepared[i].id).copied();
            build_row(
                &prepared[i],
                &tested[i],
                relative.as_ref().map(|r| &r[i]),
                q[i],
                rule,
                peaks,
                floor,
            )
        })
        .collect();
    sort_rows(&mut comparisons);
    (comparisons, systemic.map(|s| s.1))
}

/// The order every writer shows: degraded first, then inconclusive, improved, unchanged;
/// the largest slowdown first within a status.
fn sort_rows(rows: &mut [BenchComparison]) {
    rows.sort_by(|a, b| {
        a.status
            .cmp(&b.status)
            .then(
                b.change_percent
                    .unwrap_or(0.0)
                    .total_cmp(&a.change_percent.unwrap_or(0.0)),
            )
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// Failed first, then missing, then new; by id within each.
fn sort_unmeasured(rows: &mut [Unmeasured]) {
    rows.sort_by(|a, b| a.status.cmp(&b.status).then(a.id.cmp(&b.id)));
}

type Matched<'a> = (
    Vec<(&'a BenchmarkRecord, &'a BenchmarkRecord)>,
    Vec<String>,
    Vec<String>,
);

/// Pairs benchmarks by full id (both lists are sorted by id).
fn match_benchmarks<'a>(
    baseline: &'a RunRecord,
    candidate: &'a RunRecord,
    keep: &dyn Fn(&str) -> bool,
) -> Matched<'a> {
    let (mut pairs, mut added, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    let base: Vec<&BenchmarkRecord> = baseline.benchmarks.iter().filter(|b| keep(&b.id)).collect();
    let cand: Vec<&BenchmarkRecord> = candidate
        .benchmarks
        .iter()
        .filter(|b| keep(&b.id))
        .collect();
    let (mut i, mut j) = (0, 0);
    while i < base.len() || j < cand.len() {
        match (base.get(i), cand.get(j)) {
            (Some(b), Some(c)) if b.id == c.id => {
                pairs.push((*b, *c));
                i += 1;
                j += 1;
            }
            (Some(b), Some(c)) if b.id < c.id => {
                removed.push(b.id.clone());
                i += 1;
            }
            (Some(_), Some(c)) | (None, Some(c)) => {
                added.push(c.id.clone());
                j += 1;
            }
            (Some(b), None) => {
                removed.push(b.id.clone());
                i += 1;
            }
            (None, None) => break,
        }
    }
    (pairs, added, removed)
}

fn peak_table(run: &RunRecord) -> PeakTable {
    PeakTable::from_probe_peaks(&run.peaks(), run.probed_by_harness())
}

/// A common shift of the whole candidate: judged benchmarks number at least 10, their
/// median change is beyond the threshold, and at least 75 % moved that way significantly
/// (raw p < 0.05). Returns the median log shift and its description.
fn systemic_shift(tested: &[Tested], rule: &VerdictRule) -> Option<(f64, SystemicShift)> {
    let shifts: Vec<(f64, f64)> = tested
        .iter()
        .filter_map(|t| t.shift.map(|s| (s.shift, t.p)))
        .collect();
    if shifts.len() < 10 {
        return None;
    }
    let m = median(&shifts.iter().map(|s| s.0).collect::<Vec<_>>());
    let change = percent(m);
    if change.abs() <= rule.threshold_percent {
        return None;
    }
    let together = shifts
        .iter()
        .filter(|(s, p)| s.signum() == m.signum() && *p < 0.05)
        .count() as f64
        / shifts.len() as f64;
    if together < 0.75 {
        return None;
    }
    let direction = if change > 0.0 { "slower" } else { "faster" };
    Some((
        m,
        SystemicShift {
            median_change_percent: change,
            fraction_moved_together: together,
            message: format!(
                "the whole candidate is {:.1} % {direction} ({:.0} % of benchmarks moved together): a loaded or different machine, or a change that touches everything; statuses below judge each benchmark relative to that common shift",
                change.abs(),
                100.0 * together
            ),
        },
    ))
}

fn build_row(
    p: &Prepared<'_>,
    absolute: &Tested,
    relative: Option<&Tested>,
    q: f64,
    rule: &VerdictRule,
    peaks: &(PeakTable, PeakTable),
    noise_floor: Option<f64>,
) -> BenchComparison {
    let samples = p.samples;
    let judged = relative.unwrap_or(absolute);
    let (status, note) = match judged.shift {
        Some(s) => {
            let status = rule.status(percent(s.shift), [percent(s.ci_low), percent(s.ci_high)], q);
            within_run_to_run_noise(status, &s, noise_floor, rule.confidence)
        }
        None => (
            Status::Inconclusive,
            Some(format!(
                "too few samples to judge ({} and {}; at least {} each)",
                samples[0], samples[1], rule.min_samples
            )),
        ),
    };
    let change_percent = absolute
        .shift
        .map(|s| percent(s.shift))
        .or_else(|| Some(100.0 * (p.cand_ns / p.base_ns - 1.0)));
    let throughput = p.cand.throughput.or(p.base.throughput).and_then(|t| {
        Some(ThroughputView {
            kind: t.kind().to_string(),
            baseline: peaks
                .0
                .rate(p.id, &p.base.throughput.unwrap_or(t), p.base_ns)?,
            candidate: peaks.1.rate(p.id, &t, p.cand_ns)?,
        })
    });
    BenchComparison {
        id: p.id.to_string(),
        baseline_ns: p.base_ns,
        candidate_ns: p.cand_ns,
        change_percent,
        ci95_percent: absolute
            .shift
            .map(|s| [percent(s.ci_low), percent(s.ci_high)]),
        p_value: Some(absolute.p).filter(|v| v.is_finite()),
        q_value: Some(q).filter(|v| v.is_finite()),
        relative_change_percent: relative.and_then(|r| r.shift).map(|s| percent(s.shift)),
        status,
        samples,
        noise_floor_percent: noise_floor.map(percent),
        note,
        throughput,
    }
}

/// History guard: a verdict of degraded or improved stands only if the change also exceeds
/// the benchmark's run-to-run noise. The Moses interval (within-run) is widened by the
/// floor: half-width √(h² + (z·√2·σ)²), since both runs carry independent drift of sd σ;
/// if the widened interval reaches zero, the change is `inconclusive`.
fn within_run_to_run_noise(
    status: Status,
    shift: &ShiftEstimate,
    floor: Option<f64>,
    confidence: f64,
) -> (Status, Option<String>) {
    let Some(sigma) = floor.filter(|_| matches!(status, Status::Degraded | Status::Improved))
    else {
        return (status, None);
    };
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    let half = if status == Status::Degraded {
        shift.shift - shift.ci_low
    } else {
        shift.ci_high - shift.shift
    };
    let widened = (half * half + 2.0 * (z * sigma).powi(2)).sqrt();
    if shift.shift.abs() > widened {
        return (status, None);
    }
    (
        Status::Inconclusive,
        Some(format!(
            "{:+.2} % is within this benchmark's run-to-run noise (sd {:.2} % across earlier runs)",
            percent(shift.shift),
            percent(sigma)
        )),
    )
}

/// What the Criterion reader could not use, on both sides. Entries whose benchmark id is
/// known and in the filter are a benchmark without usable samples: `failed` (second list).
/// The others (no id, so the filter cannot place them) stay `skipped`, listed.
fn collect_skipped(
    baseline: &RunRecord,
    candidate: &RunRecord,
    keep: &dyn Fn(&str) -> bool,
    options: &CompareOptions,
) -> (Vec<SkippedInComparison>, Vec<UnusableSamples>) {
    let mut skipped = Vec::new();
    let mut rejected = Vec::new();
    let sides = [("baseline", baseline), ("candidate", candidate)];
    for (side, run) in sides {
        for s in &run.skipped {
            let path = s.path.display().to_string();
            let id =
                s.id.clone()
                    .or_else(|| options.filter.is_none().then(|| path.clone()));
            match id {
                Some(id) if keep(&id) => rejected.push((
                    id,
                    side,
                    SampleDefect::Unreadable {
                        path,
                        reason: s.reason.clone(),
                    },
                )),
                Some(_) => {}
                None => skipped.push(SkippedInComparison {
                    side: side.to_string(),
                    path,
                    reason: s.reason.clone(),
                }),
            }
        }
        // The run already failed these by the sample rule (the reader, record or import
        // refused their samples): the same evidence as a refusal here, with its side.
        for f in run.failed.iter().filter(|f| keep(&f.id)) {
            let seen = rejected
                .iter()
                .any(|(id, ..): &UnusableSamples| *id == f.id);
            if let Some(defect) = f.unusable_defect().filter(|_| !seen) {
                rejected.push((f.id.clone(), side, defect));
            }
        }
    }
    (skipped, rejected)
}

/// The benchmarks without a pair: `removed` ones the candidate's harness reported failing
/// are `failed`, the other removed ones `missing`, and `added` ones `new`. A failure of a
/// benchmark the baseline never had is listed as failed too: it is still a broken benchmark.
fn unmeasured(
    candidate: &RunRecord,
    added: &[String],
    removed: &[String],
    keep: &dyn Fn(&str) -> bool,
) -> Vec<Unmeasured> {
    let row = |id: &str, status: UnmeasuredStatus, error: Option<&str>| Unmeasured {
        id: id.to_string(),
        status,
        error: error.map(String::from),
    };
    let mut out: Vec<Unmeasured> = candidate
        .failed
        .iter()
        // Unusable samples are listed once, with their side, from the evidence.
        .filter(|f| keep(&f.id) && !f.is_unusable_samples())
        .map(|f| row(&f.id, UnmeasuredStatus::Failed, Some(&f.error)))
        .collect();
    out.extend(
        removed
            .iter()
            .filter(|id| candidate.failure(id).is_none())
            .map(|id| row(id, UnmeasuredStatus::Missing, None)),
    );
    out.extend(
        added
            .iter()
            .filter(|id| candidate.failure(id).is_none())
            .map(|id| row(id, UnmeasuredStatus::New, None)),
    );
    out
}

/// Adds the accuracy half to the summary: a benchmark that lost accuracy fails the verdict
/// like a slowdown; one a rule covers but that could not be judged makes it a warning (and
/// the outcome unsure); the evidence line says what the accuracy verdict stands on, and a
/// rule that matched no compared benchmark is named (it judged nothing, so it passed nothing).
fn summarise_accuracy(summary: &mut Summary, accuracy: &[AccuracyVerdict], unmatched: &[String]) {
    let count = |s: AccuracyStatus| accuracy.iter().filter(|v| v.status == s).count();
    summary.total_accuracy_lost = count(AccuracyStatus::Lost);
    summary.total_accuracy_unjudged = count(AccuracyStatus::Unjudged);
    summary
        .notes
        .extend(super::accuracy::evidence_note(accuracy));
    summary
        .notes
        .extend(super::accuracy::unmatched_note(unmatched));
    summary.notes.extend(
        accuracy
            .iter()
            .filter(|v| matches!(v.status, AccuracyStatus::Lost | AccuracyStatus::Unjudged))
            .map(|v| v.message.clone()),
    );
    if summary.total_accuracy_lost > 0 {
        summary.overall_status = OverallStatus::Critical;
    } else if summary.total_accuracy_unjudged > 0 {
        summary.overall_status = summary.overall_status.max(OverallStatus::Warning);
    }
}

fn summarise(
    rows: &[BenchComparison],
    skipped: usize,
    systemic: Option<SystemicShift>,
    hardware: &HardwareCheck,
    unmeasured: &[Unmeasured],
) -> Summary {
    let count_status = |s| unmeasured.iter().filter(|u| u.status == s).count();
    let (failed, missing, new) = (
        count_status(UnmeasuredStatus::Failed),
        count_status(UnmeasuredStatus::Missing),
        count_status(UnmeasuredStatus::New),
    );
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    let (degraded, inconclusive) = (count(Status::Degraded), count(Status::Inconclusive));
    let mut notes = Vec::new();
    if let Some(w) = &hardware.warning {
        notes.push(w.clone());
    }
    if skipped > 0 {
        notes.push(format!(
            "{skipped} benchmark(s) skipped as unreadable (listed under `skipped`)"
        ));
    }
    if failed > 0 {
        notes.push(format!(
            "{failed} benchmark(s) FAILED: failed in the candidate or without usable samples (listed first)"
        ));
    }
    if missing + new > 0 {
        notes.push(format!(
            "{missing} missing from the candidate, {new} new in it (listed)"
        ));
    }
    let systemic_slower = systemic
        .as_ref()
        .is_some_and(|s| s.median_change_percent > 0.0);
    let overall_status = if degraded > 0 || failed > 0 || systemic_slower {
        OverallStatus::Critical
    } else if inconclusive > 0
        || skipped > 0
        || missing > 0
        || systemic.is_some()
        || hardware.different
    {
        OverallStatus::Warning
    } else {
        OverallStatus::Healthy
    };
    Summary {
        total_failed: failed,
        total_missing: missing,
        total_improved: count(Status::Improved),
        total_degraded: degraded,
        total_unchanged: count(Status::Unchanged),
        total_inconclusive: inconclusive,
        total_skipped: skipped,
        total_accuracy_lost: 0,
        total_accuracy_unjudged: 0,
        overall_status,
        systemic_shift: systemic,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::criterion_output::SampleFile;

    fn bench(id: &str, times: Vec<f64>) -> BenchmarkRecord {
        let samples = SampleFile {
            sampling_mode: None,
            iters: vec![1.0; times.len()],
            times,
        };
        BenchmarkRecord::new(id, id, samples)
    }

    fn run(benchmarks: Vec<BenchmarkRecord>) -> RunRecord {
        RunRecord {
            benchmarks,
            ..RunRecord::new(0, std::path::Path::new("c"), "new", None)
        }
    }

    fn side<'a>(name: &str, run: &'a RunRecord) -> Side<'a> {
        Side {
            name: name.into(),
            run,
        }
    }

    /// A run file (imported, not read from Criterion) may hold any numbers: each kind of
    /// unusable sample set is a named failure, never a panic and never a pass.
    #[test]
    fn unusable_samples_in_a_run_are_failed_by_name() {
        let steady: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
        // Runs hold their benchmarks sorted by id.
        let base = run(["empty", "nan", "neg", "ok"]
            .iter()
            .map(|id| bench(id, steady.clone()))
            .collect());
        let mut bad_negative = steady.clone();
        bad_negative[3] = -5.0;
        let mut bad_nan = steady.clone();
        bad_nan[0] = f64::NAN;
        let cand = run(vec![
            bench("empty", Vec::new()),
            bench("nan", bad_nan),
            bench("neg", bad_negative),
            bench("ok", steady.clone()),
        ]);
        let c = compare(
            &side("base", &base),
            &side("cand", &cand),
            &CompareOptions::default(),
        )
        .unwrap();
        let failed: Vec<(&str, &str)> = c
            .unmeasured
            .iter()
            .map(|u| (u.id.as_str(), u.error.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(failed.len(), 3, "{failed:?}");
        assert!(
            failed
                .iter()
                .any(|(id, e)| *id == "neg" && e.contains("negative"))
        );
        assert!(
            failed
                .iter()
                .any(|(id, e)| *id == "nan" && e.contains("not a finite"))
        );
        assert!(
            failed
                .iter()
                .any(|(id, e)| *id == "empty" && e.contains("no samples"))
        );
        assert!(c.regression_found());
        assert_eq!(c.evidence.judged_count(), 1);
        assert_eq!(c.evidence.failed_count(), 3);
    }

    #[test]
    fn nothing_in_the_filter_is_no_evidence_naming_it() {
        let steady: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i)).collect();
        let base = run(vec![bench("a", steady.clone())]);
        let options = CompareOptions {
            filter: Some(regex::Regex::new("^zzz$").unwrap()),
            ..CompareOptions::default()
        };
        let err = compare(&side("base", &base), &side("cand", &base), &options)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains("^zzz$") && err.contains("`base`"), "{err}");
    }
}
