//! Where `record`, `import` and `analyze-trends store flush` deliver runs, and the spool
//! they share (see [`crate::results::spool`]): the chosen store (`--store`, see
//! `cli/store.rs`) is a results server (`http(s)://…`, uploads through `POST /api/runs`) or a
//! store opened here (SQLite or PostgreSQL). Every one of the three commands delivers the
//! spool first, oldest run first, so a run recorded while the store was down reaches it
//! before the runs recorded after it.

use crate::analysis::Outcome;
use crate::results::server_client::ServerClient;
use crate::results::spool::{Delivered, DeliveryError, FlushReport, RunSink, Spool};
use crate::results::{RunStore, StoreUrl};
use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};

/// `analyze-trends store flush` (a variant of `store_admin::StoreCommand`); the store is
/// the global `--store`.
#[derive(Args, Debug)]
pub struct FlushArgs {
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
}

/// Where runs go.
pub enum Destination {
    Server(ServerClient),
    Local(RunStore),
}

impl Destination {
    /// The store this process chose (`--store` > `STACKBENCH_STORE` > `store` in
    /// stackbench.toml > the SQLite store of `results`): a results server is uploaded to,
    /// any other store opened here.
    pub fn choose(
        results: &Path,
        chosen: &super::store::ChosenStore,
    ) -> anyhow::Result<Destination> {
        let store = chosen.open(results);
        Ok(match store.store_url() {
            StoreUrl::Server(url) => Destination::Server(ServerClient::from_env(url.clone())?),
            _ => Destination::Local(store),
        })
    }

    pub fn sink(&mut self) -> &mut dyn RunSink {
        match self {
            Destination::Server(client) => client,
            Destination::Local(store) => store,
        }
    }
}

/// Delivers the spool of `results` first; prints what it did. `Some(why)` when spooled runs
/// are still waiting (the store is unreachable, or refused for a reason not the runs'), so
/// the caller keeps new runs behind them.
pub fn deliver_spool_first(
    results: &Path,
    destination: &mut Destination,
) -> anyhow::Result<Option<DeliveryError>> {
    let spool = Spool::of_results(results);
    if spool.pending()?.is_empty() {
        return Ok(None);
    }
    let sink = destination.sink();
    let report = spool.flush(sink)?;
    print_flush(&spool, &sink.describe(), &report);
    Ok(report.stopped)
}

fn print_flush(spool: &Spool, destination: &str, report: &FlushReport) {
    let already = report
        .delivered
        .iter()
        .filter(|(_, how)| *how == Delivered::AlreadyPresent)
        .count();
    if !report.delivered.is_empty() {
        println!(
            "spool: delivered {} spooled runs to {destination} ({already} were already there)",
            report.delivered.len()
        );
    }
    for (path, reason) in &report.rejected {
        eprintln!(
            "error: spooled run file moved to {}: {reason}",
            path.display()
        );
    }
    if let Some(why) = &report.stopped {
        eprintln!(
            "spool: {} runs still waiting in {}: {why}",
            report.remaining,
            spool.dir().display()
        );
    }
}

/// Keeps run `run_id`'s file in the spool of `results` and says so; the caller exits
/// non-zero ([`Outcome::RegressionFound`]: a failure was found, the run is not lost).
pub fn spool_run(
    results: &Path,
    run_id: &str,
    bytes: &[u8],
    reason: &DeliveryError,
) -> anyhow::Result<PathBuf> {
    let path = Spool::of_results(results).keep(run_id, bytes)?;
    eprintln!(
        "SPOOLED: run {run_id} was not stored ({reason}); it is kept in {} and the next \
         `analyze-trends record`, `import` or `store flush` delivers it",
        path.display()
    );
    Ok(path)
}

/// `analyze-trends store flush`: 0 when the spool is empty afterwards, 1 when runs are still
/// waiting or were rejected (named above), 2 when the destination is wrong.
pub fn flush(args: &FlushArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let mut destination = Destination::choose(&args.results, chosen)?;
    let spool = Spool::of_results(&args.results);
    if spool.pending()?.is_empty() {
        println!(
            "spool {} is empty: nothing to deliver",
            spool.dir().display()
        );
        return Ok(Outcome::Clean);
    }
    let sink = destination.sink();
    let report = spool.flush(sink)?;
    print_flush(&spool, &sink.describe(), &report);
    if let Some(DeliveryError::Failed(why)) = &report.stopped {
        bail!("the spool could not be delivered: {why}");
    }
    Ok(if report.stopped.is_some() || !report.rejected.is_empty() {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}
