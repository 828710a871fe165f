//! Before/after comparison of two runs (a Criterion baseline is read into an unsaved run
//! first), the core of the PR gate. The verdict comes from the raw samples; see
//! [`super::verdict`] for the rule and BENCHMARKS.md ("The regression gate") for its tuning.

use super::throughput::{PeakTable, Rate};
use super::verdict::{OverallStatus, Status, VerdictRule, percent};
use crate::criterion_output::SkippedBenchmark;
use crate::results::{BenchmarkRecord, RunRecord, parallel_map};
use crate::stats::{ShiftEstimate, TwoSample, benjamini_hochberg, median};
use serde::Serialize;

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
}

#[derive(Clone, Debug, Serialize)]
pub struct ThroughputView {
    pub kind: &'static str,
    pub baseline: Rate,
    pub candidate: Rate,
}

#[derive(Clone, Debug, Serialize)]
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

#[derive(Clone, Debug, Serialize)]
pub struct SystemicShift {
    pub median_change_percent: f64,
    pub fraction_moved_together: f64,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct HardwareCheck {
    pub baseline_fingerprint: Option<String>,
    pub candidate_fingerprint: Option<String>,
    /// True when both are known and differ (only with --allow-different-hardware).
    pub different: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A benchmark that did not produce a number on one side, with the reason where known.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unmeasured {
    pub id: String,
    /// `failed` (measured in the baseline, failed in the candidate: fails the gate),
    /// `missing` (in the baseline, absent from the candidate without a failure: a warning)
    /// or `new` (only in the candidate).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub total_failed: usize,
    pub total_missing: usize,
    pub total_improved: usize,
    pub total_degraded: usize,
    pub total_unchanged: usize,
    pub total_inconclusive: usize,
    pub total_skipped: usize,
    pub overall_status: OverallStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub systemic_shift: Option<SystemicShift>,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SkippedInComparison {
    pub side: &'static str,
    pub path: String,
    pub reason: String,
}

/// The shared in-memory model every comparison writer (table, Markdown, JSON) renders.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub schema: &'static str,
    pub baseline: String,
    pub candidate: String,
    pub threshold_percent: f64,
    pub hardware: HardwareCheck,
    /// Sorted: degraded first, then inconclusive, improved, unchanged; by change within.
    pub comparisons: Vec<BenchComparison>,
    /// Failed first, then missing, then new; each by id.
    pub unmeasured: Vec<Unmeasured>,
    /// Kept for readers of v1: the ids of `new` and of `missing` or `failed`.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub skipped: Vec<SkippedInComparison>,
    pub summary: Summary,
    pub rule: VerdictRule,
}

impl Comparison {
    /// True when the gate must fail (exit code 1).
    pub fn regression_found(&self) -> bool {
        self.summary.total_degraded > 0
            || self.summary.total_failed > 0
            || self
                .summary
                .systemic_shift
                .as_ref()
                .is_some_and(|s| s.median_change_percent > 0.0)
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
        (Some(bf), Some(cf)) if bf != cf => {
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

/// Compares `candidate` against `baseline`.
pub fn compare(
    baseline: &Side<'_>,
    candidate: &Side<'_>,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let hardware = check_hardware(baseline, candidate, options.allow_different_hardware)?;
    let keep = |id: &str| options.filter.as_ref().is_none_or(|f| f.is_match(id));
    let (pairs, added, removed) = match_benchmarks(baseline.run, candidate.run, &keep);
    let prepared: Vec<Prepared<'_>> = parallel_map(&pairs, |&(base, cand)| prepare(base, cand));
    let peaks = (peak_table(baseline.run), peak_table(candidate.run));
    let (comparisons, systemic) = judge_all(&prepared, options, &peaks);
    let skipped = collect_skipped(baseline.run, candidate.run);
    let unmeasured = unmeasured(candidate.run, &added, &removed, &keep);
    let mut summary = summarise(
        &comparisons,
        skipped.len(),
        systemic,
        &hardware,
        &unmeasured,
    );
    if !options.noise_floors.is_empty() {
        let used = comparisons
            .iter()
            .filter(|c| c.noise_floor_percent.is_some())
            .count();
        summary.notes.push(format!(
            "run-to-run noise floors from {} earlier run(s) on this hardware were applied to {used} benchmark(s)",
            options.history_runs
        ));
    }
    Ok(Comparison {
        schema: COMPARISON_SCHEMA,
        baseline: baseline.name.clone(),
        candidate: candidate.name.clone(),
        threshold_percent: options.rule.threshold_percent,
        hardware,
        comparisons,
        unmeasured,
        added,
        removed,
        skipped,
        summary,
        rule: options.rule,
    })
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
pub(crate) fn sort_rows(rows: &mut [BenchComparison]) {
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
pub(crate) fn sort_unmeasured(rows: &mut [Unmeasured]) {
    let rank = |s: &str| ["failed", "missing", "new"].iter().position(|x| *x == s);
    rows.sort_by(|a, b| rank(a.status).cmp(&rank(b.status)).then(a.id.cmp(&b.id)));
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
    PeakTable::from_probe_peaks(&run.peaks(), run.system.is_some())
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
            kind: t.kind(),
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

fn collect_skipped(baseline: &RunRecord, candidate: &RunRecord) -> Vec<SkippedInComparison> {
    let one = |side: &'static str, s: &SkippedBenchmark| SkippedInComparison {
        side,
        path: s.path.display().to_string(),
        reason: s.reason.clone(),
    };
    baseline
        .skipped
        .iter()
        .map(|s| one("baseline", s))
        .chain(candidate.skipped.iter().map(|s| one("candidate", s)))
        .collect()
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
    let row = |id: &str, status, error: Option<&str>| Unmeasured {
        id: id.to_string(),
        status,
        error: error.map(String::from),
    };
    let mut out: Vec<Unmeasured> = candidate
        .failed
        .iter()
        .filter(|f| keep(&f.id))
        .map(|f| row(&f.id, "failed", Some(&f.error)))
        .collect();
    out.extend(
        removed
            .iter()
            .filter(|id| candidate.failure(id).is_none())
            .map(|id| row(id, "missing", None)),
    );
    out.extend(
        added
            .iter()
            .filter(|id| candidate.failure(id).is_none())
            .map(|id| row(id, "new", None)),
    );
    sort_unmeasured(&mut out);
    out
}

pub(crate) fn summarise(
    rows: &[BenchComparison],
    skipped: usize,
    systemic: Option<SystemicShift>,
    hardware: &HardwareCheck,
    unmeasured: &[Unmeasured],
) -> Summary {
    let count_status = |s: &str| unmeasured.iter().filter(|u| u.status == s).count();
    let (failed, missing, new) = (
        count_status("failed"),
        count_status("missing"),
        count_status("new"),
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
            "{failed} benchmark(s) FAILED in the candidate (listed first)"
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
        overall_status,
        systemic_shift: systemic,
        notes,
    }
}
