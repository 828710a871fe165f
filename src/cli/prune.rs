//! `analyze-trends prune`: remove old runs and comparisons, never one something refers to.

use super::store::{ListArgs, emit};
use crate::analysis::Outcome;
use crate::report::rows::{ROW_FORMATS, Rows};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};
use crate::results::{PruneOutcome, now_unix_ms};
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

pub fn prune(args: PruneArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.existing(&args.list.results)?;
    let cutoff = now_unix_ms().saturating_sub(args.keep_days.saturating_mul(DAY_MS));
    let outcome = store.prune(cutoff, args.keep_latest, args.dry_run)?;
    let report = PruneReport {
        outcome: &outcome,
        dry_run: args.dry_run,
        keep_days: args.keep_days,
    };
    emit(&report, args.list.format)?;
    Ok(Outcome::Clean)
}

/// What `prune` did (or, dry, would do): the store's own outcome, with the flags that
/// explain it.
pub(super) struct PruneReport<'a> {
    pub(super) outcome: &'a PruneOutcome,
    pub(super) dry_run: bool,
    pub(super) keep_days: u64,
}

impl PruneReport<'_> {
    fn verb(&self) -> &'static str {
        if self.dry_run {
            "would remove"
        } else {
            "removed"
        }
    }
}

impl ReportWriter for PruneReport<'_> {
    fn command(&self) -> &'static str {
        "analyze-trends prune"
    }

    fn formats(&self) -> &'static [Format] {
        ROW_FORMATS
    }

    /// JSON is the store's outcome whole; the table and CSV list each run removed or kept,
    /// and the table ends with the counts.
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        let outcome = self.outcome;
        if format == Format::Json {
            return Ok(Some(json_text(outcome)?));
        }
        let rows: Vec<PruneRow> = outcome
            .removed_runs
            .iter()
            .map(|id| PruneRow {
                run_id: id,
                action: self.verb(),
            })
            .chain(outcome.protected_runs.iter().map(|id| PruneRow {
                run_id: id,
                action: "kept: referred to by a comparison or acknowledgement",
            }))
            .collect();
        let footer = format!(
            "{} {} runs and {} comparisons older than {} days; {} runs remain\n",
            self.verb(),
            outcome.removed_runs.len(),
            outcome.removed_comparisons,
            self.keep_days,
            outcome.kept_runs
        );
        Rows::listing(self.command(), &rows).with_footer(format, footer)
    }
}
