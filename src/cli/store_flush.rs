//! Where `record`, `import` and `analyze-trends store flush` deliver runs, and the spool
//! they share (see [`crate::results::spool`]): `--store` (else `STACKBENCH_STORE`) names a
//! results server (`http(s)://…`, uploads through `POST /api/runs`) or a store opened here,
//! by default the SQLite store of `--results`. Every one of the three commands delivers the
//! spool first, oldest run first, so a run recorded while the store was down reaches it
//! before the runs recorded after it.

use crate::analysis::Outcome;
use crate::results::RunStore;
use crate::results::server_client::{ServerClient, ServerUrl};
use crate::results::spool::{Delivered, DeliveryError, FlushReport, RunSink, Spool};
use anyhow::bail;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

/// The environment variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "STACKBENCH_STORE";

/// `analyze-trends store …`: administration of the store itself.
// INTEGRATION: the engine slice's `store_admin.rs` holds `migrate` and `copy`; `flush`
// joins that enum.
#[derive(Subcommand, Debug)]
pub enum StoreCommand {
    /// Deliver the runs kept in <results>/spool/ (recorded or imported while the store was
    /// unreachable) to the store, oldest first.
    Flush(FlushArgs),
}

#[derive(Args, Debug)]
pub struct FlushArgs {
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    /// The store to deliver to: http(s)://HOST:PORT (a `stackbench serve` results server;
    /// token in STACKBENCH_STORE_TOKEN) [default: $STACKBENCH_STORE, else the SQLite store
    /// of --results]
    #[arg(long)]
    pub store: Option<String>,
}

pub fn store_command(command: StoreCommand) -> anyhow::Result<Outcome> {
    match command {
        StoreCommand::Flush(args) => flush(args),
    }
}

/// Where runs go.
pub enum Destination {
    Server(ServerClient),
    Local(RunStore),
}

impl Destination {
    /// `--store`, else `STACKBENCH_STORE`, else the SQLite store in `results`.
    // INTEGRATION: the engine slice's `StoreUrl` (flag > env > stackbench.toml > default)
    // replaces the reading here; its `Server` variant is the `ServerUrl` this takes.
    pub fn choose(results: &Path, store: Option<&str>) -> anyhow::Result<Destination> {
        let from_env = std::env::var(STORE_ENV).ok();
        let setting = store
            .or(from_env.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match setting {
            None => Ok(Destination::Local(RunStore::new(results))),
            Some(url) if ServerUrl::is_server_url(url) => Ok(Destination::Server(
                ServerClient::from_env(ServerUrl::parse(url)?)?,
            )),
            Some(other) => bail!(
                "store `{other}`: this build stores runs in the SQLite store of --results or \
                 on a results server (http://HOST:PORT)"
            ),
        }
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
fn flush(args: FlushArgs) -> anyhow::Result<Outcome> {
    let mut destination = Destination::choose(&args.results, args.store.as_deref())?;
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
