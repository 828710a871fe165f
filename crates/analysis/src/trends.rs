//! Trends over the run history: runs grouped by hardware fingerprint and ordered by time;
//! per benchmark, change points over the series of run medians (so one noisy run is not a
//! regression and a sustained step is), a robust slope over the latest runs, the run-to-run
//! noise floor, and a status.
//!
//! Status per benchmark, with threshold `T` %:
//! - `regressed` / `improved`: the latest change point lies within the last
//!   [`TrendOptions::recent_runs`] runs and moved the median by more than `T` %;
//! - `suspect`: no such change point, but the latest run is more than
//!   `max(T, 3 × noise floor)` % slower than the median of the runs before it (one run
//!   cannot confirm a step; the next runs will);
//! - `new`: fewer than 2 runs; `stable` otherwise.
//!
//! An acknowledged step (`analyze-trends ack`: a driver upgrade, a deliberate trade-off)
//! moves a benchmark's baseline: from the acknowledged run on, only the new level is
//! judged, so the step itself stops being a regression while a later one still is.

use super::noise::first_difference_sd;
use super::verdict::OverallStatus;
use crate::files::parallel_map;
use crate::results::{Acknowledgement, RunRecord};
use crate::stats::{detect_change_points, median, theil_sen_slope};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug)]
pub struct TrendOptions {
    pub threshold_percent: f64,
    /// Runs the slope is fitted over and within which a change point counts as recent.
    pub recent_runs: usize,
    pub min_segment: usize,
    pub penalty: f64,
    pub alpha: f64,
    /// Acknowledged steps from the store; see the module documentation.
    pub acknowledgements: Vec<Acknowledgement>,
}

impl Default for TrendOptions {
    fn default() -> Self {
        TrendOptions {
            threshold_percent: 5.0,
            recent_runs: 10,
            min_segment: 3,
            penalty: 3.0,
            alpha: 0.001,
            acknowledgements: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrendStatus {
    Regressed,
    Suspect,
    Improved,
    Stable,
    New,
}

impl TrendStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            TrendStatus::Regressed => "regressed",
            TrendStatus::Suspect => "suspect",
            TrendStatus::Improved => "improved",
            TrendStatus::Stable => "stable",
            TrendStatus::New => "new",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub timestamp: String,
    pub label: Option<String>,
    pub git_revision: Option<String>,
    pub benchmarks: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct StepChange {
    /// Index into the group's runs of the first run after the step.
    pub run_index: usize,
    pub run_id: String,
    pub before_ns: f64,
    pub after_ns: f64,
    pub change_percent: f64,
    pub p_value: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchmarkTrend {
    pub id: String,
    /// (run index in the group, median per-iteration ns of that run)
    pub points: Vec<(usize, f64)>,
    pub change_points: Vec<StepChange>,
    pub slope_percent_per_run: Option<f64>,
    pub latest_ns: f64,
    /// Median of the up to `recent_runs` runs before the latest.
    pub reference_ns: Option<f64>,
    pub latest_change_percent: Option<f64>,
    /// Run-to-run spread (MAD of log medians, in %) over the recent runs.
    pub noise_floor_percent: Option<f64>,
    /// What the latest run is measured against in the reports' bars: the level before the
    /// most recent step when there is one, else `reference_ns`.
    pub baseline_ns: Option<f64>,
    pub latest_vs_baseline_percent: Option<f64>,
    pub status: TrendStatus,
    /// The acknowledged step the verdict starts from, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<Acknowledgement>,
}

impl BenchmarkTrend {
    /// The change a reader should see first: the step behind a `regressed` or `improved`
    /// status, else the latest run against the runs before it.
    pub fn headline_change(&self) -> Option<f64> {
        match self.status {
            TrendStatus::Regressed | TrendStatus::Improved => {
                self.change_points.last().map(|c| c.change_percent)
            }
            _ => self.latest_change_percent,
        }
    }
}

/// A benchmark the latest run of a group did not measure, and why: a precision or backend
/// this machine lacks (skipped) or a benchmark that broke (failed). The report shows them
/// so nothing is silently missing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotMeasured {
    pub id: String,
    /// `skipped` or `failed`.
    pub outcome: &'static str,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct HardwareGroup {
    pub fingerprint: String,
    pub runs: Vec<RunSummary>,
    /// From the latest run's bench-target records; failed first, then skipped, by id.
    pub not_measured: Vec<NotMeasured>,
    /// Sorted: regressed first, then suspect, improved, stable, new.
    pub benchmarks: Vec<BenchmarkTrend>,
    pub overall_status: OverallStatus,
}

impl HardwareGroup {
    /// The benchmarks judged from an acknowledged step, each with its acknowledgement:
    /// every view lists them, so a reader sees who declared which step intentional.
    pub fn acknowledged(&self) -> impl Iterator<Item = (&BenchmarkTrend, &Acknowledgement)> {
        self.benchmarks
            .iter()
            .filter_map(|b| b.acknowledged.as_ref().map(|a| (b, a)))
    }
}

/// The shared in-memory model of the history report.
#[derive(Clone, Debug, Serialize)]
pub struct TrendReport {
    pub schema: &'static str,
    pub generated: String,
    pub threshold_percent: f64,
    pub groups: Vec<HardwareGroup>,
    pub overall_status: OverallStatus,
    /// Run files that could not be read, each with its reason.
    pub problems: Vec<String>,
}

impl TrendReport {
    pub fn regressions(&self) -> impl Iterator<Item = (&HardwareGroup, &BenchmarkTrend)> {
        self.groups.iter().flat_map(|g| {
            g.benchmarks
                .iter()
                .filter(|b| b.status == TrendStatus::Regressed)
                .map(move |b| (g, b))
        })
    }
}

/// What the trends need of one run, without its samples.
#[derive(Clone, Debug)]
pub struct RunHeader {
    pub summary: RunSummary,
    pub created_unix_ms: u64,
    pub fingerprint: Option<String>,
}

impl RunHeader {
    pub fn of(run: &RunRecord) -> RunHeader {
        RunHeader {
            summary: RunSummary {
                run_id: run.run_id.clone(),
                timestamp: run.timestamp.clone(),
                label: run.label.clone(),
                git_revision: run.git_revision.clone(),
                benchmarks: run.benchmarks.len(),
            },
            created_unix_ms: run.created_unix_ms,
            fingerprint: run.fingerprint.clone(),
        }
    }

    pub fn stored(run: &crate::results::StoredRun) -> RunHeader {
        RunHeader {
            summary: RunSummary {
                run_id: run.run_id.clone(),
                timestamp: run.timestamp.clone(),
                label: run.label.clone(),
                git_revision: run.git_revision.clone(),
                benchmarks: run.benchmarks as usize,
            },
            created_unix_ms: run.created_unix_ms,
            fingerprint: run.fingerprint.clone(),
        }
    }
}

/// The history the trends are computed from: the runs, oldest first, and each
/// benchmark's medians as (index into `runs`, median ns), in run order. The store answers
/// this from its indexed median column, so a report over a thousand runs of a thousand
/// benchmarks never decodes a sample.
#[derive(Clone, Debug, Default)]
pub struct MedianHistory {
    pub runs: Vec<RunHeader>,
    pub series: Vec<(String, Vec<(usize, f64)>)>,
}

impl MedianHistory {
    /// From whole runs (any order). A benchmark without a finite median has no point.
    pub fn of_runs(runs: &[RunRecord]) -> MedianHistory {
        let mut ordered: Vec<&RunRecord> = runs.iter().collect();
        ordered.sort_by(|a, b| (a.created_unix_ms, &a.run_id).cmp(&(b.created_unix_ms, &b.run_id)));
        let mut series: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
        for (index, run) in ordered.iter().enumerate() {
            for b in &run.benchmarks {
                if let Some(m) = b.samples.median_ns() {
                    series.entry(b.id.as_str()).or_default().push((index, m));
                }
            }
        }
        MedianHistory {
            runs: ordered.iter().map(|r| RunHeader::of(r)).collect(),
            series: series
                .into_iter()
                .map(|(id, points)| (id.to_string(), points))
                .collect(),
        }
    }
}

/// Builds the trend report over `runs` (any order).
pub fn analyze_history(
    runs: &[RunRecord],
    options: &TrendOptions,
    problems: Vec<String>,
) -> TrendReport {
    let by_id: std::collections::HashMap<&str, &RunRecord> =
        runs.iter().map(|r| (r.run_id.as_str(), r)).collect();
    analyze_medians(
        &MedianHistory::of_runs(runs),
        &|run_id| {
            by_id
                .get(run_id)
                .map(|r| not_measured(r))
                .unwrap_or_default()
        },
        options,
        problems,
    )
}

/// One benchmark's medians in a hardware group: (run index in the group, median ns).
type Series<'a> = (&'a str, Vec<(usize, f64)>);

/// Builds the trend report over a median history. `not_measured_of` gives the skips and
/// failures of a run by id; it is asked only for the latest run of each hardware group.
pub fn analyze_medians(
    history: &MedianHistory,
    not_measured_of: &dyn Fn(&str) -> Vec<NotMeasured>,
    options: &TrendOptions,
    problems: Vec<String>,
) -> TrendReport {
    // Runs are already in time order, so each group's runs are too.
    let mut by_hardware: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, run) in history.runs.iter().enumerate() {
        let key = run.fingerprint.as_deref().unwrap_or("unknown hardware");
        by_hardware.entry(key).or_default().push(index);
    }
    // Where each run sits: (its group, its index within the group).
    let mut place = vec![(0, 0); history.runs.len()];
    for (group, members) in by_hardware.values().enumerate() {
        for (within, &run) in members.iter().enumerate() {
            place[run] = (group, within);
        }
    }
    let mut group_series: Vec<Vec<Series>> = vec![Vec::new(); by_hardware.len()];
    for (id, points) in &history.series {
        for &(run, median_ns) in points {
            let (group, within) = place[run];
            let series = &mut group_series[group];
            match series.last_mut() {
                Some((last, points)) if *last == id.as_str() => points.push((within, median_ns)),
                _ => series.push((id.as_str(), vec![(within, median_ns)])),
            }
        }
    }
    let groups: Vec<HardwareGroup> = by_hardware
        .into_iter()
        .zip(group_series)
        .map(|((fingerprint, members), series)| {
            let runs: Vec<&RunHeader> = members.iter().map(|&i| &history.runs[i]).collect();
            analyze_group(
                fingerprint.to_string(),
                &runs,
                &series,
                not_measured_of,
                options,
            )
        })
        .collect();
    let overall_status = groups
        .iter()
        .map(|g| g.overall_status)
        .max()
        .unwrap_or(OverallStatus::Healthy);
    TrendReport {
        schema: "stackbench.report.v1",
        generated: crate::results::format_rfc3339_ms(crate::results::now_unix_ms()),
        threshold_percent: options.threshold_percent,
        groups,
        overall_status,
        problems,
    }
}

fn analyze_group(
    fingerprint: String,
    runs: &[&RunHeader],
    series: &[Series],
    not_measured_of: &dyn Fn(&str) -> Vec<NotMeasured>,
    options: &TrendOptions,
) -> HardwareGroup {
    let run_ids: Vec<&str> = runs.iter().map(|r| r.summary.run_id.as_str()).collect();
    let mut benchmarks = parallel_map(series, |(id, points)| {
        trend_of(id, points, &run_ids, options)
    });
    benchmarks.sort_by(|a, b| {
        a.status
            .cmp(&b.status)
            .then(
                b.headline_change()
                    .unwrap_or(0.0)
                    .total_cmp(&a.headline_change().unwrap_or(0.0)),
            )
            .then(a.id.cmp(&b.id))
    });
    let overall_status = if benchmarks
        .iter()
        .any(|b| b.status == TrendStatus::Regressed)
    {
        OverallStatus::Critical
    } else if benchmarks.iter().any(|b| b.status == TrendStatus::Suspect) {
        OverallStatus::Warning
    } else {
        OverallStatus::Healthy
    };
    let not_measured = run_ids
        .last()
        .map(|id| not_measured_of(id))
        .unwrap_or_default();
    HardwareGroup {
        fingerprint,
        not_measured,
        runs: runs.iter().map(|r| r.summary.clone()).collect(),
        benchmarks,
        overall_status,
    }
}

fn percent_between(from: f64, to: f64) -> f64 {
    100.0 * (to / from - 1.0)
}

/// Change points of one benchmark's log-median series (`window` are its points), as steps
/// between runs of the group.
fn steps(
    logs: &[f64],
    window: &[(usize, f64)],
    run_ids: &[&str],
    options: &TrendOptions,
) -> Vec<StepChange> {
    detect_change_points(logs, options.min_segment, options.penalty, options.alpha)
        .into_iter()
        .map(|cp| {
            let run_index = window[cp.index].0;
            StepChange {
                run_index,
                run_id: run_ids[run_index].to_string(),
                before_ns: cp.before.exp(),
                after_ns: cp.after.exp(),
                change_percent: 100.0 * (cp.after - cp.before).exp_m1(),
                p_value: cp.p_value,
            }
        })
        .collect()
}

/// The status rule of the module documentation.
fn status_of(
    points: usize,
    steps: &[StepChange],
    latest_change_percent: Option<f64>,
    noise_floor_percent: Option<f64>,
    last_run_index: usize,
    options: &TrendOptions,
) -> TrendStatus {
    let t = options.threshold_percent;
    // The latest recent step above the threshold: a later step below it (the
    // median-step test can confirm one of well under 1 % on a quiet series) must not hide
    // a 25 % regression a few runs before it.
    let recent_step = steps.iter().rev().find(|cp| {
        last_run_index - cp.run_index < options.recent_runs && cp.change_percent.abs() > t
    });
    match (recent_step, latest_change_percent) {
        _ if points < 2 => TrendStatus::New,
        (Some(cp), _) if cp.change_percent > 0.0 => TrendStatus::Regressed,
        (Some(_), _) => TrendStatus::Improved,
        (None, Some(c)) if c > t.max(3.0 * noise_floor_percent.unwrap_or(0.0)) => {
            TrendStatus::Suspect
        }
        _ => TrendStatus::Stable,
    }
}

/// The acknowledgement that moves `id`'s baseline in this group, if any: the one at the
/// latest run of the group (acknowledgements of runs on other hardware do not apply).
fn acknowledged_step<'a>(
    id: &str,
    run_ids: &[&str],
    acknowledgements: &'a [Acknowledgement],
) -> Option<(usize, &'a Acknowledgement)> {
    acknowledgements
        .iter()
        .filter(|a| a.bench_id == id)
        .filter_map(|a| {
            run_ids
                .iter()
                .position(|r| *r == a.run_id)
                .map(|index| (index, a))
        })
        .max_by_key(|(index, _)| *index)
}

/// The trend of one benchmark: `points` are (run index in the group, median ns), oldest
/// first; `run_ids` names every run of the group (the latest is the group's last).
pub fn trend_of(
    id: &str,
    points: &[(usize, f64)],
    run_ids: &[&str],
    options: &TrendOptions,
) -> BenchmarkTrend {
    let ack = acknowledged_step(id, run_ids, &options.acknowledgements);
    // After an acknowledged step only the new level is judged (the points stay for the
    // charts); an acknowledgement after the last point changes nothing.
    let judged = match ack {
        Some((index, _)) if points.last().is_some_and(|p| p.0 >= index) => {
            &points[points.partition_point(|p| p.0 < index)..]
        }
        _ => points,
    };
    let window = &judged[judged
        .len()
        .saturating_sub(crate::stats::MAX_CHANGEPOINT_SERIES)..];
    let logs: Vec<f64> = window.iter().map(|p| p.1.ln()).collect();
    let change_points = steps(&logs, window, run_ids, options);
    let latest_ns = judged[judged.len() - 1].1;
    let n = judged.len();
    let previous: Vec<f64> = judged[n.saturating_sub(options.recent_runs + 1)..n - 1]
        .iter()
        .map(|p| p.1)
        .collect();
    let reference_ns = (!previous.is_empty()).then(|| median(&previous));
    let recent_logs: Vec<f64> = logs[logs.len().saturating_sub(options.recent_runs)..].to_vec();
    // From first differences: a step among the previous runs must not raise the floor.
    let noise_floor_percent = (previous.len() >= 4)
        .then(|| 100.0 * first_difference_sd(&previous.iter().map(|v| v.ln()).collect::<Vec<_>>()));
    let slope_percent_per_run =
        (recent_logs.len() >= 3).then(|| 100.0 * theil_sen_slope(&recent_logs).exp_m1());
    let latest_change_percent = reference_ns.map(|r| percent_between(r, latest_ns));
    let status = status_of(
        points.len(),
        &change_points,
        latest_change_percent,
        noise_floor_percent,
        run_ids.len() - 1,
        options,
    );
    let baseline_ns = change_points.last().map(|cp| cp.before_ns).or(reference_ns);
    BenchmarkTrend {
        id: id.to_string(),
        baseline_ns,
        latest_vs_baseline_percent: baseline_ns.map(|b| percent_between(b, latest_ns)),
        points: points.to_vec(),
        change_points,
        slope_percent_per_run,
        latest_ns,
        reference_ns,
        latest_change_percent,
        noise_floor_percent,
        status,
        acknowledged: ack.map(|(_, a)| a.clone()),
    }
}

/// The skipped and failed benchmarks recorded by the bench targets of `run`. Target
/// records that do not parse (another tool's, or a future version's) are passed over:
/// they carry no measurement, so nothing judged depends on them.
pub fn not_measured(run: &RunRecord) -> Vec<NotMeasured> {
    use crate::sidecar::{BenchmarkOutcome, TargetReport};
    let mut rows: Vec<NotMeasured> = run
        .targets
        .iter()
        .filter_map(|value| serde_json::from_value::<TargetReport>(value.clone()).ok())
        .flat_map(|target| target.benchmarks.into_iter())
        .filter_map(|(id, entry)| match entry.outcome {
            BenchmarkOutcome::Skipped { reason } => Some(NotMeasured {
                id,
                outcome: "skipped",
                reason,
            }),
            BenchmarkOutcome::Failed { error } => Some(NotMeasured {
                id,
                outcome: "failed",
                reason: error,
            }),
            BenchmarkOutcome::Measured { .. } => None,
        })
        .collect();
    rows.sort_by(|a, b| a.outcome.cmp(b.outcome).then_with(|| a.id.cmp(&b.id)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 runs of one benchmark, +20 % from run 15 on and, when `second` is set, another
    /// +20 % from run 28; a little alternating noise so the series is not constant.
    fn series(second: bool) -> Vec<(usize, f64)> {
        (0..40)
            .map(|i| {
                let mut level = if i >= 15 { 120.0 } else { 100.0 };
                if second && i >= 28 {
                    level *= 1.2;
                }
                (i, level * if i % 2 == 0 { 1.002 } else { 0.998 })
            })
            .collect()
    }

    fn ids() -> Vec<String> {
        (0..40).map(|i| format!("run-{i:02}")).collect()
    }

    fn ack_at(run: usize) -> Acknowledgement {
        Acknowledgement {
            bench_id: "b".into(),
            run_id: format!("run-{run:02}"),
            reason: "driver upgrade".into(),
            who: "tester".into(),
            created_unix_ms: 0,
        }
    }

    fn judge(points: &[(usize, f64)], acks: Vec<Acknowledgement>) -> BenchmarkTrend {
        let ids = ids();
        let run_ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let options = TrendOptions {
            recent_runs: 30,
            acknowledgements: acks,
            ..TrendOptions::default()
        };
        trend_of("b", points, &run_ids, &options)
    }

    #[test]
    fn an_acknowledged_step_is_the_new_baseline_and_a_later_step_still_counts() {
        let plain = judge(&series(false), Vec::new());
        assert_eq!(plain.status, TrendStatus::Regressed);
        assert_eq!(plain.change_points.last().unwrap().run_index, 15);

        let acked = judge(&series(false), vec![ack_at(15)]);
        assert_eq!(acked.status, TrendStatus::Stable, "{acked:?}");
        assert_eq!(acked.acknowledged.as_ref().unwrap().run_id, "run-15");
        assert_eq!(acked.points.len(), 40, "the chart keeps every point");
        assert!((acked.baseline_ns.unwrap() / 120.0 - 1.0).abs() < 0.01);

        let again = judge(&series(true), vec![ack_at(15)]);
        assert_eq!(again.status, TrendStatus::Regressed);
        assert_eq!(again.change_points.last().unwrap().run_index, 28);
    }

    #[test]
    fn acknowledgements_of_other_benchmarks_or_runs_change_nothing() {
        let mut other = ack_at(15);
        other.bench_id = "c".into();
        let mut elsewhere = ack_at(15);
        elsewhere.run_id = "run-on-other-hardware".into();
        let t = judge(&series(false), vec![other, elsewhere]);
        assert_eq!(t.status, TrendStatus::Regressed);
        assert!(t.acknowledged.is_none());
    }

    /// A sub-threshold step confirmed after a real regression does not hide it.
    #[test]
    fn a_small_later_step_does_not_hide_a_recent_regression() {
        let points: Vec<(usize, f64)> = series(false)
            .into_iter()
            .map(|(i, v)| (i, if i >= 30 { v * 1.03 } else { v }))
            .collect();
        let t = judge(&points, Vec::new());
        let last = t.change_points.last().expect("steps found");
        assert!(last.change_percent.abs() < 5.0, "{t:?}");
        assert!(t.change_points.iter().any(|cp| cp.run_index == 15), "{t:?}");
        assert_eq!(t.status, TrendStatus::Regressed, "{t:?}");
    }

    use crate::simulate::{HistoryScenario, Scenario, simulate_history};

    /// Issue 8: with 30, 40 or 60 runs before it, a sustained 10 % step is `regressed`
    /// three runs after it lands, at the default options; a single wild run three runs
    /// from the end and the unchanged benchmarks are not.
    #[test]
    fn a_step_is_regressed_three_runs_after_it_lands() {
        for before in [30, 40, 60] {
            let h = HistoryScenario {
                runs: before + 3,
                benchmarks: 12,
                stepped: 4,
                step_at: before,
                step_percent: 10.0,
                run: Scenario {
                    samples: 20,
                    ..Scenario::clean(before as u64)
                },
            };
            let report = analyze_history(&simulate_history(&h), &TrendOptions::default(), vec![]);
            let group = &report.groups[0];
            for b in &group.benchmarks {
                let stepped = b.id.as_str() < "hist/b0004";
                assert_eq!(
                    b.status == TrendStatus::Regressed,
                    stepped,
                    "{before} runs before: {} is {:?}",
                    b.id,
                    b.status
                );
            }
        }
    }
}
