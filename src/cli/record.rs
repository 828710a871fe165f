//! `analyze-trends record`: one Criterion baseline kept as a run in the store.

use crate::analysis::Outcome;
use crate::criterion_output::{CriterionError, CriterionTree};
use crate::results::{counted_run, run_from_tree};
use crate::sidecar::criterion_home;
use anyhow::bail;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Criterion's output directory [default: $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else target/criterion]
    #[arg(long)]
    pub criterion_dir: Option<PathBuf>,
    #[arg(long, default_value = "new")]
    pub baseline: String,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    #[arg(long)]
    pub label: Option<String>,
}

pub fn record(args: RecordArgs) -> anyhow::Result<Outcome> {
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
    let path = crate::cli::store::open_store(&args.results).save(&run)?;
    println!(
        "recorded {} benchmarks ({} skipped, {} failed) as run {} in {}; evidence: {}",
        run.benchmarks.len(),
        run.skipped.len(),
        run.failed.len(),
        run.run_id,
        path.display(),
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
