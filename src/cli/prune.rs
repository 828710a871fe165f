//! `analyze-trends prune`: remove old runs and comparisons, never one something refers to.

use super::store::{ListArgs, emit, existing_store};
use crate::analysis::Outcome;
use crate::report::rows::RowFormat;
use crate::results::now_unix_ms;
use clap::Args;
use serde::Serialize;

const DAY_MS: u64 = 86_400_000;

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
