//! `analyze-trends ack`: acknowledge an intentional step, so history verdicts start from
//! its new level.

use super::history::{history_groups, history_points};
use crate::analysis::Outcome;
use crate::analysis::trends::TrendOptions;
use crate::results::{Acknowledgement, HistoryPoint, now_unix_ms};
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;

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
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
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

pub fn ack(args: AckArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    if args.reason.trim().is_empty() {
        bail!("--reason must say why the step is intentional");
    }
    let store = chosen.existing(&args.results)?;
    let (points, all_runs, _) = history_points(&store, &args.id)?;
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
