//! `analyze-trends import | runs | history | comparisons | prune | ack`: the questions a
//! user asks of the history database, each printable as a table, JSON or CSV.

use super::analyze_trends::Outcome;
use crate::analysis::Comparison;
use crate::analysis::trends::{BenchmarkTrend, TrendOptions, trend_of};
use crate::report::rows::{RowFormat, write_rows};
use crate::results::{
    Acknowledgement, ComparisonRecord, HistoryPoint, RunOrder, RunRecord, RunStore,
    format_rfc3339_ms, now_unix_ms,
};
use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;

const DAY_MS: u64 = 86_400_000;

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Run files, directories of them, or results directories (their `runs/`)
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    #[arg(long, value_enum, default_value_t = RowFormat::Table)]
    pub format: RowFormat,
}

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

#[derive(Args, Debug)]
pub struct PruneArgs {
    /// Remove runs and comparisons older than this many days
    #[arg(long)]
    pub keep_days: u64,
    /// Always keep this many newest runs of each hardware fingerprint
    #[arg(long, default_value_t = 10)]
    pub keep_latest: usize,
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub list: ListArgs,
}

#[derive(Args, Debug)]
pub struct AckArgs {
    /// The benchmark whose step is intentional
    pub id: String,
    /// Why (a driver upgrade, a deliberate trade-off): kept with who and when
    #[arg(long)]
    pub reason: String,
    /// The first run at the new level [default: the start of the latest detected step,
    /// else the latest run that measured the benchmark]
    #[arg(long)]
    pub run: Option<String>,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
}

/// The store of an existing results directory: a query never creates one.
fn existing_store(results: &std::path::Path) -> anyhow::Result<RunStore> {
    if !results.is_dir() {
        bail!(
            "results directory {} does not exist (record a run with `analyze-trends record` or import some with `analyze-trends import`)",
            results.display()
        );
    }
    Ok(RunStore::new(results))
}

fn emit<T: Serialize>(rows: &[T], format: RowFormat) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    write_rows(rows, format, &mut stdout.lock()).context("cannot write to stdout")
}

pub fn import(args: ImportArgs) -> anyhow::Result<Outcome> {
    let store = RunStore::new(&args.results);
    let report = store.import(&args.paths)?;
    if report.imported.is_empty() && report.already_present.is_empty() && report.problems.is_empty()
    {
        let named: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        bail!("no run files in {}: nothing to import", named.join(", "));
    }
    let mut by_hardware: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, fingerprint) in &report.imported {
        *by_hardware
            .entry(fingerprint.as_deref().unwrap_or("unknown hardware"))
            .or_default() += 1;
    }
    println!(
        "imported {} runs into {} ({} already there); evidence: {}",
        report.imported.len(),
        store.db_path().display(),
        report.already_present.len(),
        report.evidence
    );
    for (fingerprint, count) in by_hardware {
        println!("  {count} on {fingerprint}");
    }
    for (file, failure) in &report.failed {
        eprintln!(
            "FAILED {}: {}: {}",
            file.display(),
            failure.id,
            failure.error
        );
    }
    for problem in &report.problems {
        eprintln!("error: {}: {}", problem.file.display(), problem.error);
    }
    if !report.problems.is_empty() {
        bail!(
            "{} of the files could not be imported (named above); the others were",
            report.problems.len()
        );
    }
    // Samples no statistic can use are a failure this command found (exit 1), named above.
    Ok(if report.evidence.unusable > 0 {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}

pub fn runs(args: ListArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.results)?;
    let (runs, problems) = store.list_runs()?;
    for p in &problems {
        eprintln!("warning: {p}");
    }
    emit(&runs, args.format)?;
    Ok(Outcome::Clean)
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
struct HistoryGroup<'a> {
    fingerprint: &'a str,
    points: Vec<&'a HistoryPoint>,
    trend: BenchmarkTrend,
}

/// Splits `points` by hardware and judges each series as the history report does; the
/// run index of a point counts every run of its hardware, measured or not.
fn history_groups<'a>(
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

/// The points of `id`, or an error naming similar ids when the store has none.
fn history_points(store: &RunStore, id: &str) -> anyhow::Result<(Vec<HistoryPoint>, RunOrder)> {
    let (points, all_runs) = store.history(id)?;
    if points.is_empty() {
        let fragment = id.rsplit('/').next().unwrap_or(id);
        let similar = store.database()?.similar_benchmark_ids(fragment)?;
        bail!(
            "no benchmark `{id}` in {} ({} runs){}",
            store.db_path().display(),
            all_runs.len(),
            if similar.is_empty() {
                String::new()
            } else {
                format!("; similar ids: {}", similar.join(", "))
            }
        );
    }
    Ok((points, all_runs))
}

pub fn history(args: HistoryArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.list.results)?;
    let (points, all_runs) = history_points(&store, &args.id)?;
    let options = TrendOptions {
        threshold_percent: args.threshold,
        acknowledgements: store.acknowledgements()?,
        ..TrendOptions::default()
    };
    let groups = history_groups(&args.id, &points, &all_runs, &options);
    let rows: Vec<HistoryRow> = groups.iter().flat_map(history_rows).collect();
    if args.list.format == RowFormat::Json {
        let json: Vec<_> = groups
            .iter()
            .zip(groups.iter().map(history_rows))
            .map(|(g, rows)| {
                serde_json::json!({"hardware": g.fingerprint, "trend": g.trend, "runs": rows})
            })
            .collect();
        let doc = serde_json::json!({"benchmark": args.id, "groups": json});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        emit(&rows, args.list.format)?;
    }
    if args.list.format == RowFormat::Table {
        for g in &groups {
            println!("{}: {}", g.fingerprint, verdict_line(&g.trend));
        }
    }
    Ok(Outcome::Clean)
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

/// One row of `analyze-trends comparisons`.
#[derive(Serialize)]
struct ComparisonRow<'a> {
    id: i64,
    time: String,
    kind: &'a str,
    baseline: &'a str,
    candidate: &'a str,
    verdict: &'a str,
    degraded: u64,
    improved: u64,
    unchanged: u64,
    inconclusive: u64,
    threshold_percent: f64,
    hardware: Option<&'a str>,
}

pub fn comparisons(args: ListArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.results)?;
    let stored = store.comparisons()?;
    let rows: Vec<ComparisonRow> = stored
        .iter()
        .map(|c| ComparisonRow {
            id: c.id,
            time: format_rfc3339_ms(c.created_unix_ms),
            kind: &c.kind,
            baseline: c.baseline_run_id.as_deref().unwrap_or(&c.baseline),
            candidate: c.candidate_run_id.as_deref().unwrap_or(&c.candidate),
            verdict: &c.verdict,
            degraded: c.degraded,
            improved: c.improved,
            unchanged: c.unchanged,
            inconclusive: c.inconclusive,
            threshold_percent: c.threshold_percent,
            hardware: c.fingerprint.as_deref(),
        })
        .collect();
    emit(&rows, args.format)?;
    Ok(Outcome::Clean)
}

/// A verdict as the store keeps it. `kind` is `compare` or `gate`; `base` and `cand` are
/// the runs judged, with the names the user gave them. Run ids are kept only for runs the
/// store holds (a Criterion baseline compared in place is not one).
pub fn comparison_record(
    store: &RunStore,
    kind: &str,
    (base_name, base): (&str, &RunRecord),
    (cand_name, cand): (&str, &RunRecord),
    comparison: &Comparison,
) -> anyhow::Result<ComparisonRecord> {
    let db = store.database()?;
    let stored = |run: &RunRecord| -> anyhow::Result<Option<String>> {
        Ok(db.has_run(&run.run_id)?.then(|| run.run_id.clone()))
    };
    let s = &comparison.summary;
    Ok(ComparisonRecord {
        id: 0,
        created_unix_ms: now_unix_ms(),
        kind: kind.to_string(),
        baseline: base_name.to_string(),
        candidate: cand_name.to_string(),
        baseline_run_id: stored(base)?,
        candidate_run_id: stored(cand)?,
        fingerprint: cand.fingerprint.clone(),
        threshold_percent: comparison.threshold_percent,
        verdict: if comparison.regression_found() {
            "regression"
        } else {
            "clean"
        }
        .into(),
        degraded: s.total_degraded as u64,
        improved: s.total_improved as u64,
        unchanged: s.total_unchanged as u64,
        inconclusive: s.total_inconclusive as u64,
        detail_json: serde_json::to_string(comparison)?,
    })
}

/// Keeps a `compare` or `gate` verdict (`kind`) in an existing results directory. A verdict
/// must not fail because it could not be kept, so a failure here is a warning; and
/// `compare` on bare Criterion baselines outside a stackbench checkout creates no results
/// directory.
pub fn keep_comparison_verdict(
    store: &RunStore,
    kind: &str,
    base: (&str, &RunRecord),
    cand: (&str, &RunRecord),
    comparison: &Comparison,
) {
    if !store.dir.is_dir() {
        return;
    }
    let kept = comparison_record(store, kind, base, cand, comparison)
        .and_then(|record| Ok(store.record_comparison(&record)?));
    if let Err(e) = kept {
        eprintln!("warning: verdict not kept in the history: {e:#}");
    }
}

/// One run `prune` removed or kept because something refers to it.
#[derive(Serialize)]
struct PruneRow<'a> {
    run_id: &'a str,
    action: &'static str,
}

pub fn prune(args: PruneArgs) -> anyhow::Result<Outcome> {
    let store = existing_store(&args.list.results)?;
    let cutoff = now_unix_ms().saturating_sub(args.keep_days.saturating_mul(DAY_MS));
    let outcome = store.prune(cutoff, args.keep_latest, args.dry_run)?;
    match args.list.format {
        RowFormat::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        format => {
            let verb = if args.dry_run {
                "would remove"
            } else {
                "removed"
            };
            let rows: Vec<PruneRow> = outcome
                .removed_runs
                .iter()
                .map(|id| PruneRow {
                    run_id: id,
                    action: if args.dry_run {
                        "would remove"
                    } else {
                        "removed"
                    },
                })
                .chain(outcome.protected_runs.iter().map(|id| PruneRow {
                    run_id: id,
                    action: "kept: referred to by a comparison or acknowledgement",
                }))
                .collect();
            emit(&rows, format)?;
            if format == RowFormat::Table {
                println!(
                    "{verb} {} runs and {} comparisons older than {} days; {} runs remain",
                    outcome.removed_runs.len(),
                    outcome.removed_comparisons,
                    args.keep_days,
                    outcome.kept_runs
                );
            }
        }
    }
    Ok(Outcome::Clean)
}

/// Who acknowledges: the git user when configured, else `$USER`.
fn who() -> String {
    let git = |key: &str| {
        std::process::Command::new("git")
            .args(["config", key])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    match (git("user.name"), git("user.email")) {
        (Some(name), Some(email)) => format!("{name} <{email}>"),
        (Some(name), None) => name,
        _ => std::env::var("USER").unwrap_or_else(|_| "unknown".into()),
    }
}

pub fn ack(args: AckArgs) -> anyhow::Result<Outcome> {
    if args.reason.trim().is_empty() {
        bail!("--reason must say why the step is intentional");
    }
    let store = existing_store(&args.results)?;
    let (points, all_runs) = history_points(&store, &args.id)?;
    let run_id = match &args.run {
        Some(name) => {
            let run = store.resolve(name)?;
            if !points.iter().any(|p| p.run_id == run.run_id) {
                bail!(
                    "run {} did not measure `{}`; runs that did: {}",
                    run.run_id,
                    args.id,
                    points
                        .iter()
                        .map(|p| p.run_id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            run.run_id
        }
        None => default_ack_run(&args.id, &points, &all_runs),
    };
    let a = Acknowledgement {
        bench_id: args.id.clone(),
        run_id,
        reason: args.reason.trim().to_string(),
        who: who(),
        created_unix_ms: now_unix_ms(),
    };
    store.acknowledge(&a)?;
    println!(
        "acknowledged `{}` from run {} ({}), by {}: history verdicts now start from that run",
        a.bench_id, a.run_id, a.reason, a.who
    );
    Ok(Outcome::Clean)
}

/// The start of the latest detected step on the latest run's hardware, else the latest
/// run that measured the benchmark.
fn default_ack_run(
    id: &str,
    points: &[HistoryPoint],
    all_runs: &[(String, Option<String>)],
) -> String {
    let latest = &points[points.len() - 1];
    let groups = history_groups(id, points, all_runs, &TrendOptions::default());
    groups
        .iter()
        .find(|g| g.points.last().is_some_and(|p| p.run_id == latest.run_id))
        .and_then(|g| g.trend.change_points.last())
        .map_or_else(|| latest.run_id.clone(), |cp| cp.run_id.clone())
}
