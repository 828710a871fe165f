//! `analyze-trends record`: one Criterion baseline kept as a run in the store.

use super::store_flush::{Destination, deliver_spool_first, spool_run};
use crate::analysis::Outcome;
use crate::criterion_output::{CriterionError, CriterionTree};
use crate::files::atomic::write_atomic;
use crate::results::server_client::Stored;
use crate::results::spool::{DeliveryError, classify_upload, run_file_bytes, store_unreachable};
use crate::results::{RunRecord, RunStore, counted_run, run_from_tree};
use crate::sidecar::criterion_home;
use anyhow::{Context, bail};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Criterion's output directory [default: $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else target/criterion]
    #[arg(long)]
    pub criterion_dir: Option<PathBuf>,
    /// Criterion's baseline to record: its `new` (the last run) or a name saved with
    /// `--save-baseline`
    #[arg(long, default_value = "new")]
    pub baseline: String,
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
    /// A label for the run (a branch, `nightly`), listed by `runs` and kept with the run
    #[arg(long)]
    pub label: Option<String>,
}

pub fn record(args: RecordArgs, store: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let dir = args.criterion_dir.unwrap_or_else(criterion_home);
    let mut run = match CriterionTree::scan(&dir) {
        Ok(tree) => run_from_tree(&tree, &args.baseline, args.label)?,
        // Counting mode writes no Criterion baseline, only counts in the target reports.
        Err(error @ CriterionError::Empty { .. }) => counted_run(&dir, args.label).ok_or(error)?,
        Err(error) => return Err(error.into()),
    };
    // A figure above its peak means the peak is wrong: the record says so, naming the
    // peak's source, so no later view reads the percentage as a fact.
    for (id, note) in crate::analysis::throughput::flag_suspect_peaks(&mut run) {
        eprintln!("note: {id}: {note}");
    }
    for skip in &run.skipped {
        eprintln!("warning: skipped {}: {}", skip.path.display(), skip.reason);
    }
    for note in &run.notes {
        eprintln!("note: {note}");
    }
    for failure in &run.failed {
        eprintln!("FAILED {}: {}", failure.id, failure.error);
    }
    // Checked before the store is opened: a baseline that measured nothing leaves no trace.
    let evidence = crate::results::Evidence::of_run(&run);
    let (counted, not_countable) = run.counted_summary();
    if evidence.is_empty() && counted == 0 {
        if not_countable > 0 {
            bail!(
                "the counting-mode run in {} counted nothing: its {not_countable} benchmarks \
                 are all not countable ({}); no run recorded",
                dir.display(),
                evidence.describe_measured()
            );
        }
        bail!(
            "baseline `{}` in {} measured nothing ({}): no run recorded",
            args.baseline,
            dir.display(),
            evidence.describe_measured()
        );
    }
    let mut destination = Destination::choose(&args.results, store)?;
    let stored = match store_run(&args.results, &mut destination, &run)? {
        Kept::Stored(where_) => where_,
        Kept::Spooled => return Ok(Outcome::RegressionFound),
    };
    println!(
        "recorded {} benchmarks ({} skipped, {} failed) as run {} in {}; evidence: {}",
        run.benchmarks.len(),
        run.skipped.len(),
        run.failed.len(),
        run.run_id,
        stored,
        evidence.describe_measured()
    );
    if counted + not_countable > 0 {
        println!(
            "counting mode: {counted} benchmarks counted (instructions, single-threaded \
             variant), {not_countable} not countable"
        );
    }
    // Samples no statistic can use are a failure this command found (exit 1), named above.
    Ok(if !evidence.unusable_list().is_empty() {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}

/// Where a recorded run ended up.
enum Kept {
    /// Stored; the text says where (the run file, or the server and its page).
    Stored(String),
    /// Kept in the spool, and said so.
    Spooled,
}

/// Stores `run` at the destination, after the spool (a run recorded while the store was
/// down goes in before this one). When the store cannot be reached, the run goes to the
/// spool.
fn store_run(
    results: &Path,
    destination: &mut Destination,
    run: &RunRecord,
) -> anyhow::Result<Kept> {
    let waiting = deliver_spool_first(results, destination)?;
    let bytes = run_file_bytes(run).context("cannot serialise the run")?;
    match destination {
        Destination::Local(store) => {
            if let Some(why @ DeliveryError::Unreachable(_)) = &waiting {
                spool_run(results, &run.run_id, &bytes, why)?;
                return Ok(Kept::Spooled);
            }
            match store.save(run) {
                Ok(path) => Ok(Kept::Stored(path.display().to_string())),
                Err(e) if store_unreachable(&e) => {
                    spool_run(
                        results,
                        &run.run_id,
                        &bytes,
                        &DeliveryError::Unreachable(e.to_string()),
                    )?;
                    Ok(Kept::Spooled)
                }
                Err(e) => Err(e.into()),
            }
        }
        Destination::Server(client) => {
            // The run file stays in the results directory whatever the store: the local
            // copy a user can import anywhere later.
            let local = RunStore::new(results)
                .runs_dir()
                .join(format!("{}.json", run.run_id));
            write_atomic(&local, &bytes)?;
            let failure = match waiting {
                Some(why @ DeliveryError::Unreachable(_)) => why,
                Some(why) => bail!(
                    "the spooled runs could not be delivered ({why}); run {} is in {}",
                    run.run_id,
                    local.display()
                ),
                None => match client.upload_run(&run.run_id, &bytes) {
                    Ok(uploaded) => {
                        let how = match uploaded.stored {
                            Stored::New => "new",
                            Stored::AlreadyPresent => "already present",
                        };
                        let page = uploaded.page.unwrap_or_else(|| client.url().to_string());
                        return Ok(Kept::Stored(format!(
                            "{page} ({how}; local copy {})",
                            local.display()
                        )));
                    }
                    Err(e) => classify_upload(e),
                },
            };
            if let DeliveryError::Unreachable(_) = failure {
                spool_run(results, &run.run_id, &bytes, &failure)?;
                return Ok(Kept::Spooled);
            }
            bail!(
                "{failure}; run {} is kept in {} (upload it with `analyze-trends import FILE --store {}`)",
                run.run_id,
                local.display(),
                client.url()
            )
        }
    }
}
