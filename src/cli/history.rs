//! `analyze-trends history`: one benchmark over time, per hardware, with its change points
//! and verdict.

use super::store::{ListArgs, emit};
use crate::analysis::trends::{BenchmarkTrend, TrendOptions, trend_of};
use crate::analysis::{Evidence, Outcome, usable_median};
use crate::report::rows::{ROW_FORMATS, Rows};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};
use crate::results::{HistoryPoint, RunOrder, RunStore, format_rfc3339_ms};
use anyhow::bail;
use clap::Args;
use serde::Serialize;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// The benchmark's full id, e.g. `gemm/f32/1024`
    pub id: String,
    #[command(flatten)]
    pub list: ListArgs,
    /// Smallest step, in percent, that counts as a regression or improvement
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
}

/// One run's value in `analyze-trends history`.
#[derive(Serialize)]
struct HistoryRow<'a> {
    hardware: &'a str,
    run_id: &'a str,
    timestamp: &'a str,
    label: Option<&'a str>,
    git_revision: Option<&'a str>,
    median_ns: f64,
    change_percent: Option<f64>,
    /// A detected step starting at this run, or an acknowledgement of one.
    event: String,
}

/// One hardware group's series of a benchmark, with its trend.
pub(super) struct HistoryGroup<'a> {
    pub(super) fingerprint: &'a str,
    pub(super) points: Vec<&'a HistoryPoint>,
    pub(super) trend: BenchmarkTrend,
}

/// Splits `points` by hardware and judges each series as the history report does; the
/// run index of a point counts every run of its hardware, measured or not.
pub(super) fn history_groups<'a>(
    id: &str,
    points: &'a [HistoryPoint],
    all_runs: &'a [(String, Option<String>)],
    options: &TrendOptions,
) -> Vec<HistoryGroup<'a>> {
    let hardware = |f: &'a Option<String>| f.as_deref().unwrap_or("unknown hardware");
    let mut fingerprints: Vec<&str> = points.iter().map(|p| hardware(&p.fingerprint)).collect();
    fingerprints.sort_unstable();
    fingerprints.dedup();
    fingerprints
        .into_iter()
        .map(|fingerprint| {
            let run_ids: Vec<&str> = all_runs
                .iter()
                .filter(|(_, f)| hardware(f) == fingerprint)
                .map(|(id, _)| id.as_str())
                .collect();
            let group: Vec<&HistoryPoint> = points
                .iter()
                .filter(|p| hardware(&p.fingerprint) == fingerprint)
                .collect();
            let index_of: std::collections::HashMap<&str, usize> =
                run_ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
            let series: Vec<(usize, f64)> = group
                .iter()
                .filter_map(|p| Some((*index_of.get(p.run_id.as_str())?, p.median_ns)))
                .collect();
            HistoryGroup {
                fingerprint,
                points: group,
                trend: trend_of(id, &series, &run_ids, options),
            }
        })
        .collect()
}

fn history_rows<'a>(group: &'a HistoryGroup<'a>) -> Vec<HistoryRow<'a>> {
    let mut previous: Option<f64> = None;
    group
        .points
        .iter()
        .map(|p| {
            let mut events: Vec<String> = group
                .trend
                .change_points
                .iter()
                .filter(|cp| cp.run_id == p.run_id)
                .map(|cp| format!("step {:+.1} % (p={:.1e})", cp.change_percent, cp.p_value))
                .collect();
            if let Some(a) = group
                .trend
                .acknowledged
                .as_ref()
                .filter(|a| a.run_id == p.run_id)
            {
                events.push(format!("acknowledged by {}: {}", a.who, a.reason));
            }
            let row = HistoryRow {
                hardware: group.fingerprint,
                run_id: &p.run_id,
                timestamp: &p.timestamp,
                label: p.label.as_deref(),
                git_revision: p.git_revision.as_deref(),
                median_ns: p.median_ns,
                change_percent: previous.map(|b| 100.0 * (p.median_ns / b - 1.0)),
                event: events.join("; "),
            };
            previous = Some(p.median_ns);
            row
        })
        .collect()
}

/// `analyze-trends history`'s report: one benchmark's runs per hardware, each series'
/// verdict, and what the verdicts stood on.
pub(super) struct HistoryReport<'a> {
    pub(super) id: &'a str,
    pub(super) groups: &'a [HistoryGroup<'a>],
    pub(super) evidence: &'a Evidence,
}

impl ReportWriter for HistoryReport<'_> {
    fn command(&self) -> &'static str {
        "analyze-trends history"
    }

    fn formats(&self) -> &'static [Format] {
        ROW_FORMATS
    }

    /// JSON nests the runs under each hardware's trend; the table and CSV are the flat
    /// rows, and the table ends with each series' verdict.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        if format == Format::Json {
            let groups: Vec<_> = self
                .groups
                .iter()
                .map(|g| {
                    serde_json::json!({"hardware": g.fingerprint, "trend": g.trend, "runs": history_rows(g)})
                })
                .collect();
            let doc = serde_json::json!({"benchmark": self.id, "groups": groups, "evidence": self.evidence});
            return Ok(Some(json_text(&doc)?));
        }
        let rows: Vec<HistoryRow> = self.groups.iter().flat_map(history_rows).collect();
        let footer = self
            .groups
            .iter()
            .map(|g| format!("{}: {}\n", g.fingerprint, verdict_line(&g.trend)));
        Rows::listing(self.command(), &rows).with_footer(format, footer.collect())
    }
}

/// The usable points of `id` with the evidence they make up, or an error naming the id:
/// when the store has none (with similar ids), or none with usable samples. A point whose
/// samples were unusable is counted `failed` in the evidence, never drawn.
pub(super) fn history_points(
    store: &RunStore,
    id: &str,
) -> anyhow::Result<(Vec<HistoryPoint>, RunOrder, Evidence)> {
    let (points, all_runs) = store.history(id)?;
    let mut evidence = Evidence::new();
    let mut usable = Vec::new();
    for p in points {
        match usable_median(p.median_ns, p.samples as usize) {
            Ok(n) => {
                evidence.judged(&p.run_id, &[n]);
                usable.push(p);
            }
            Err(defect) => evidence.unusable(id, Some(&format!("run {}", p.run_id)), defect),
        }
    }
    // The store fails unusable samples on the way in, so they have no point: the runs'
    // failures are the evidence of them, counted failed and never skipped silently.
    let mut counted: Option<String> = None;
    for (run_id, failure) in store.recorded_failures(id)? {
        // One failure per run, as a run has one set of samples of a benchmark.
        if counted.as_deref() == Some(run_id.as_str()) {
            continue;
        }
        if let Some(defect) = failure.unusable_defect() {
            evidence.unusable(id, Some(&format!("run {run_id}")), defect);
            counted = Some(run_id);
        }
    }
    if usable.is_empty() {
        let fragment = id.rsplit('/').next().unwrap_or(id);
        let similar = store.database()?.similar_benchmark_ids(fragment)?;
        if evidence.failed_count() > 0 || similar.iter().any(|s| s == id) {
            let reasons: Vec<String> = evidence
                .unusable_list()
                .iter()
                .map(|u| u.to_string())
                .collect();
            bail!(
                "no usable samples of `{id}` in {}: {} run(s) measured it and none can be judged{}",
                store.store_url(),
                evidence.failed_count(),
                if reasons.is_empty() {
                    " (no run kept a median)".to_string()
                } else {
                    format!(" ({})", reasons.join("; "))
                }
            );
        }
        bail!(
            "no benchmark `{id}` in {} ({} runs){}",
            store.store_url(),
            all_runs.len(),
            if similar.is_empty() {
                String::new()
            } else {
                format!("; similar ids: {}", similar.join(", "))
            }
        );
    }
    Ok((usable, all_runs, evidence))
}

/// The usable points, then what the verdict stood on. Unusable points are failures: they
/// are named here and make the exit code 1.
pub fn history(args: HistoryArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.existing(&args.list.results)?;
    let (points, all_runs, evidence) = history_points(&store, &args.id)?;
    let options = TrendOptions {
        threshold_percent: args.threshold,
        acknowledgements: store.acknowledgements()?,
        ..TrendOptions::default()
    };
    let groups = history_groups(&args.id, &points, &all_runs, &options);
    let report = HistoryReport {
        id: &args.id,
        groups: &groups,
        evidence: &evidence,
    };
    emit(&report, args.list.format)?;
    for u in evidence.unusable_list() {
        eprintln!("FAILED {u}");
    }
    // On stderr, so the CSV and JSON on stdout stay machine-readable.
    eprintln!(
        "history: `{}`: {} on {} hardware, {} failed",
        args.id,
        evidence.describe("run"),
        groups.len(),
        evidence.failed_count()
    );
    Ok(evidence.outcome(false))
}

fn verdict_line(trend: &BenchmarkTrend) -> String {
    let mut line = trend.status.as_str().to_string();
    if let Some(cp) = trend.change_points.last() {
        line += &format!(", latest step {:+.1} % at {}", cp.change_percent, cp.run_id);
    }
    if let Some(a) = &trend.acknowledged {
        line += &format!(
            ", judged from acknowledged run {} ({}, by {} at {})",
            a.run_id,
            a.reason,
            a.who,
            format_rfc3339_ms(a.created_unix_ms)
        );
    }
    line
}
