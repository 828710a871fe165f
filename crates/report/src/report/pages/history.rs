//! One benchmark's history across every hardware: one series per hardware fingerprint over
//! the store's run order, the trend verdict of each (status, baseline, latest), its steps
//! and acknowledged shifts as markers, and a link from each point to its run.
//!
//! x is the run's position in the store's time order (all hardware together), so runs of
//! different machines recorded at the same time line up. A run of the same hardware that
//! did not measure the benchmark is a gap in its line, never bridged.

use super::chart::{
    Axis, Chart, Mark, MarkKind, Point, Scale, Series, Style, TickFormat, min_max_decimate, palette,
};
use crate::analysis::trends::{BenchmarkTrend, HardwareGroup, TrendOptions, TrendReport, trend_of};
use crate::report::format::{format_ns, format_percent};
use crate::results::{Acknowledgement, HistoryPoint, ResultsError, RunOrder, RunStore};
use serde::Serialize;
use std::collections::HashMap;

/// A step the history found, placed on the chart's x axis.
#[derive(Clone, Debug, Serialize)]
pub struct StepView {
    pub run_id: String,
    pub x: f64,
    pub before_ns: f64,
    pub after_ns: f64,
    pub change_percent: f64,
}

/// The benchmark on one hardware: its verdict and what it stands on.
#[derive(Clone, Debug, Serialize)]
pub struct HardwareHistory {
    pub hardware: String,
    pub status: &'static str,
    /// Measured points (every run of this hardware that measured the benchmark).
    pub measured: usize,
    pub latest_ns: f64,
    pub baseline_ns: Option<f64>,
    pub latest_vs_baseline_percent: Option<f64>,
    pub noise_floor_percent: Option<f64>,
    pub steps: Vec<StepView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<Acknowledgement>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HistoryPage {
    pub bench_id: String,
    pub threshold_percent: f64,
    pub hardware: Vec<HardwareHistory>,
    pub chart: Chart,
}

/// One hardware's runs in order (run id, display name) and the benchmark's trend over them.
struct Part<'a> {
    hardware: String,
    runs: Vec<(String, String)>,
    trend: std::borrow::Cow<'a, BenchmarkTrend>,
}

impl HistoryPage {
    /// The history of `bench_id` in the store, judged with `options` per hardware; `None`
    /// when no run measured it.
    pub fn from_store(
        store: &RunStore,
        bench_id: &str,
        options: &TrendOptions,
    ) -> Result<Option<HistoryPage>, ResultsError> {
        let (points, order) = store.history(bench_id)?;
        Ok(Self::from_points(bench_id, &points, &order, options))
    }

    /// As [`HistoryPage::from_store`], from the store's answers already read.
    pub fn from_points(
        bench_id: &str,
        points: &[HistoryPoint],
        order: &RunOrder,
        options: &TrendOptions,
    ) -> Option<HistoryPage> {
        let value: HashMap<&str, &HistoryPoint> =
            points.iter().map(|p| (p.run_id.as_str(), p)).collect();
        let mut hardware: Vec<String> = Vec::new();
        for p in points {
            let fp = p.fingerprint.clone().unwrap_or_else(|| "unknown".into());
            if !hardware.contains(&fp) {
                hardware.push(fp);
            }
        }
        let parts: Vec<Part> = hardware
            .into_iter()
            .filter_map(|fp| {
                let runs: Vec<&str> = order
                    .iter()
                    .filter(|(_, f)| f.as_deref().unwrap_or("unknown") == fp)
                    .map(|(id, _)| id.as_str())
                    .collect();
                let measured: Vec<(usize, f64)> = runs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, id)| value.get(id).map(|p| (i, p.median_ns)))
                    .collect();
                if measured.is_empty() {
                    return None;
                }
                let trend = trend_of(bench_id, &measured, &runs, options);
                let names = runs
                    .iter()
                    .map(|id| {
                        let name = value
                            .get(id)
                            .and_then(|p| p.label.clone())
                            .unwrap_or_else(|| id.to_string());
                        (id.to_string(), name)
                    })
                    .collect();
                Some(Part {
                    hardware: fp,
                    runs: names,
                    trend: std::borrow::Cow::Owned(trend),
                })
            })
            .collect();
        let position: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (id.as_str(), i))
            .collect();
        assemble(
            bench_id,
            options.threshold_percent,
            &parts,
            |id| position.get(id).copied(),
            usize::MAX,
        )
    }

    /// Every benchmark's history page from the report's groups (for `report.html`), each
    /// chart thinned to at most `2 * buckets` points per hardware.
    pub fn from_report(report: &TrendReport, buckets: usize) -> Vec<HistoryPage> {
        // The report has no global order: runs of all groups by time, then id.
        let mut all: Vec<(&str, &str)> = report
            .groups
            .iter()
            .flat_map(|g| {
                g.runs
                    .iter()
                    .map(|r| (r.timestamp.as_str(), r.run_id.as_str()))
            })
            .collect();
        all.sort();
        all.dedup();
        let position: HashMap<&str, usize> = all
            .iter()
            .enumerate()
            .map(|(i, (_, id))| (*id, i))
            .collect();
        let mut ids: Vec<&str> = Vec::new();
        for g in &report.groups {
            for b in &g.benchmarks {
                if !ids.contains(&b.id.as_str()) {
                    ids.push(&b.id);
                }
            }
        }
        ids.iter()
            .filter_map(|id| {
                let parts: Vec<Part> = report
                    .groups
                    .iter()
                    .filter_map(|g| {
                        let trend = g.benchmarks.iter().find(|b| b.id == *id)?;
                        Some(Part {
                            hardware: g.fingerprint.clone(),
                            runs: group_runs(g),
                            trend: std::borrow::Cow::Borrowed(trend),
                        })
                    })
                    .collect();
                assemble(
                    id,
                    report.threshold_percent,
                    &parts,
                    |run| position.get(run).copied(),
                    buckets,
                )
            })
            .collect()
    }
}

fn group_runs(g: &HardwareGroup) -> Vec<(String, String)> {
    g.runs
        .iter()
        .map(|r| {
            (
                r.run_id.clone(),
                r.label.clone().unwrap_or_else(|| r.run_id.clone()),
            )
        })
        .collect()
}

/// The page from each hardware's trend; `position` places a run id on the shared x axis.
fn assemble(
    bench_id: &str,
    threshold_percent: f64,
    parts: &[Part],
    position: impl Fn(&str) -> Option<usize>,
    buckets: usize,
) -> Option<HistoryPage> {
    if parts.is_empty() {
        return None;
    }
    let x_of = |run: &str| position(run).map_or(0.0, |p| (p + 1) as f64);
    let mut series = Vec::new();
    let mut marks = Vec::new();
    let mut hardware = Vec::new();
    let mut thinned = false;
    for (i, part) in parts.iter().enumerate() {
        let points = line_points(part, &x_of);
        let kept = if buckets == usize::MAX {
            points
        } else {
            let kept = min_max_decimate(&points, buckets);
            thinned |= kept.len() < points.len();
            kept
        };
        series.push(Series::new(part.hardware.clone(), Style::Line, kept).coloured(palette(i)));
        let (summary, part_marks) = judged(part, &x_of);
        marks.extend(part_marks);
        hardware.push(summary);
    }
    let note = if thinned {
        format!(
            "Long histories are thinned to the lowest and highest value of each of {buckets} \
             slices; the served history page has every point."
        )
    } else {
        String::new()
    };
    let chart = Chart {
        id: format!("history:{bench_id}"),
        title: bench_id.to_string(),
        x: Axis::new(
            "run (oldest first, all hardware)",
            Scale::Linear,
            TickFormat::Integer,
        ),
        y: Axis::new(
            "median time per iteration",
            Scale::Linear,
            TickFormat::Duration,
        ),
        series,
        marks,
        note,
    };
    Some(HistoryPage {
        bench_id: bench_id.to_string(),
        threshold_percent,
        hardware,
        chart,
    })
}

/// One hardware's verdict for the page, and its steps and acknowledged shift as markers
/// (half a run before the run that starts the new level).
fn judged(part: &Part, x_of: &impl Fn(&str) -> f64) -> (HardwareHistory, Vec<Mark>) {
    let trend = &part.trend;
    let steps: Vec<StepView> = trend
        .change_points
        .iter()
        .map(|cp| StepView {
            run_id: cp.run_id.clone(),
            x: x_of(&cp.run_id),
            before_ns: cp.before_ns,
            after_ns: cp.after_ns,
            change_percent: cp.change_percent,
        })
        .collect();
    let mut marks: Vec<Mark> = steps
        .iter()
        .map(|s| Mark {
            x: s.x - 0.5,
            kind: MarkKind::Step,
            label: format!(
                "step {} ({} → {})",
                format_percent(Some(s.change_percent)),
                format_ns(s.before_ns),
                format_ns(s.after_ns)
            ),
        })
        .collect();
    if let Some(a) = &trend.acknowledged {
        marks.push(Mark {
            x: x_of(&a.run_id) - 0.5,
            kind: MarkKind::Acknowledged,
            label: format!("acknowledged: {} ({})", a.reason, a.who),
        });
    }
    let summary = HardwareHistory {
        hardware: part.hardware.clone(),
        status: trend.status.as_str(),
        measured: trend.points.len(),
        latest_ns: trend.latest_ns,
        baseline_ns: trend.baseline_ns,
        latest_vs_baseline_percent: trend.latest_vs_baseline_percent,
        noise_floor_percent: trend.noise_floor_percent,
        steps,
        acknowledged: trend.acknowledged.clone(),
    };
    (summary, marks)
}

/// The measured points of one hardware's line in nanoseconds, with a gap at each run of the
/// same hardware between its first and last point that did not measure the benchmark.
fn line_points(part: &Part, x_of: &impl Fn(&str) -> f64) -> Vec<Point> {
    let trend = &part.trend;
    let mut out = Vec::new();
    let (Some(first), Some(last)) = (trend.points.first(), trend.points.last()) else {
        return out;
    };
    let measured: HashMap<usize, f64> = trend.points.iter().copied().collect();
    for (index, (run_id, name)) in part.runs.iter().enumerate() {
        if index < first.0 || index > last.0 {
            continue;
        }
        let x = x_of(run_id);
        let point = match measured.get(&index) {
            Some(&ns) => Point {
                run: Some(run_id.clone()),
                ..Point::measured(x, ns, format!("{} in {name}", format_ns(ns)))
            },
            None => Point {
                run: Some(run_id.clone()),
                ..Point::gap(x, format!("not measured in {name}"))
            },
        };
        out.push(point);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run: &str, fp: &str, ns: f64) -> HistoryPoint {
        HistoryPoint {
            run_id: run.into(),
            timestamp: String::new(),
            created_unix_ms: 0,
            label: None,
            git_revision: None,
            fingerprint: Some(fp.into()),
            median_ns: ns,
            min_ns: None,
            samples: 10,
        }
    }

    #[test]
    fn one_series_per_hardware_with_a_gap_where_a_run_did_not_measure() {
        let order: RunOrder = ["r1", "r2", "r3", "r4", "r5"]
            .iter()
            .enumerate()
            .map(|(i, id)| {
                (
                    id.to_string(),
                    Some(if i == 1 { "b" } else { "a" }.to_string()),
                )
            })
            .collect();
        // a: r1, r3 (gap), r4 absent, r5; b: r2 alone.
        let points = [
            point("r1", "a", 100.0),
            point("r2", "b", 50.0),
            point("r3", "a", 101.0),
            point("r5", "a", 99.0),
        ];
        let page =
            HistoryPage::from_points("gemm/cpu/f32/64", &points, &order, &TrendOptions::default())
                .unwrap();
        assert_eq!(page.chart.series.len(), 2);
        let a = &page.chart.series[0];
        assert_eq!(a.measured_points(), 3);
        let shape: Vec<(f64, bool)> = a.points.iter().map(|p| (p.x, p.y.is_some())).collect();
        assert_eq!(shape, [(1.0, true), (3.0, true), (4.0, false), (5.0, true)]);
        assert_eq!(a.points[3].run.as_deref(), Some("r5"));
        assert_eq!(page.chart.series[1].points[0].x, 2.0);
        assert_eq!(page.hardware[0].measured, 3);
        assert!(HistoryPage::from_points("other", &[], &order, &TrendOptions::default()).is_none());
    }
}
