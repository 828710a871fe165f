//! `analyze-trends store migrate` and `analyze-trends store copy FROM TO`: the two things
//! done to a store as a whole. Migrating is explicit because a shared store is upgraded
//! once, by someone who means to, never as a side effect of a runner's `record`; copying
//! moves a history between engines (a laptop's SQLite into the lab's PostgreSQL, or a
//! PostgreSQL store into a file to archive), verified by counts and checksums.

use crate::results::StoreUrl;
use crate::results::db::copy_store;
use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Upgrade the store (--store, else $STACKBENCH_STORE, else `store` in stackbench.toml,
    /// else <results>/stackbench.db) to this version's schema, in one transaction.
    Migrate(MigrateArgs),
    /// Copy every run, comparison and acknowledgement from one store to another (either
    /// engine, either direction), then verify the target by counts and per-run checksums.
    /// Running it again copies only what is missing.
    Copy(CopyArgs),
    /// Deliver the runs kept in <results>/spool/ (recorded or imported while the store was
    /// unreachable) to the store, oldest first.
    Flush(super::store_flush::FlushArgs),
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
}

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  analyze-trends store copy sqlite:benchmark_results/stackbench.db postgres://bench@db.lab/stackbench
  analyze-trends store copy postgres://bench@db.lab/stackbench sqlite:/backups/stackbench.db")]
pub struct CopyArgs {
    /// The store to copy from (`sqlite:PATH` or `postgres://...`).
    pub from: String,
    /// The store to copy into (created when empty).
    pub to: String,
}

pub fn store_command(
    cmd: StoreCommand,
    chosen: &super::store::ChosenStore,
) -> anyhow::Result<crate::analysis::Outcome> {
    match cmd {
        // Its own outcome: runs still waiting in the spool are a failure found (exit 1).
        StoreCommand::Flush(args) => return super::store_flush::flush(&args, chosen),
        StoreCommand::Migrate(args) => migrate(&args, chosen),
        StoreCommand::Copy(args) => copy(&args),
    }
    .map(|()| crate::analysis::Outcome::Clean)
}

fn migrate(args: &MigrateArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<()> {
    let store = chosen.open(&args.results);
    let url = store.store_url();
    let migrated = store
        .migrate()
        .with_context(|| format!("migrating {url}"))?;
    if migrated.from == migrated.to {
        println!(
            "{url}: already at schema version {} (nothing to do)",
            migrated.to
        );
    } else {
        println!(
            "{url}: migrated from schema version {} to {} (version {} can still write it)",
            migrated.from,
            migrated.to,
            crate::results::db::COMPATIBLE_FROM
        );
    }
    Ok(())
}

fn copy(args: &CopyArgs) -> anyhow::Result<()> {
    let from = StoreUrl::parse(&args.from).context("FROM")?;
    let to = StoreUrl::parse(&args.to).context("TO")?;
    let report = copy_store(&from, &to)?;
    println!("copied {from} to {to}:");
    println!(
        "  runs: {} copied, {} already there",
        report.runs_copied, report.runs_already_present
    );
    println!(
        "  comparisons: {} copied, {} already there",
        report.comparisons_copied, report.comparisons_already_present
    );
    println!(
        "  acknowledgements: {} copied, {} already there",
        report.acknowledgements_copied, report.acknowledgements_already_present
    );
    println!(
        "verified: {} runs with equal checksums, every comparison and acknowledgement present",
        report.runs_verified
    );
    Ok(())
}

/// For `results_default`: the results argument of `store migrate` when clap defaulted it.
pub(super) fn defaulted_results<'a>(
    cmd: &'a mut StoreCommand,
    matches: &ArgMatches,
    defaulted: impl Fn(&ArgMatches, &str) -> bool,
) -> Option<&'a mut PathBuf> {
    match cmd {
        StoreCommand::Migrate(args) => {
            let (_, sub) = matches.subcommand()?;
            (defaulted(sub, "results")
                && sub.value_source("results") == Some(ValueSource::DefaultValue))
            .then_some(&mut args.results)
        }
        StoreCommand::Flush(args) => {
            let (_, sub) = matches.subcommand()?;
            defaulted(sub, "results").then_some(&mut args.results)
        }
        StoreCommand::Copy(_) => None,
    }
}
