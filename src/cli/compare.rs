//! `analyze-trends compare`: two Criterion baselines or recorded runs judged against each
//! other, the verdict kept in the history and printed as a table, Markdown or JSON.

use super::settings::{self, FileLayer};
use crate::analysis::{CompareOptions, Outcome, Side, VerdictRule, compare};
use crate::criterion_output::CriterionTree;
use crate::harness::measure::Measure;
use crate::report::comparison::COMPARISON_FORMATS;
use crate::report::writer::{Format, ReportWriter};
use crate::results::{RunRecord, RunStore, keep_comparison_verdict, run_for_comparison};
use crate::sidecar::criterion_home;
use anyhow::{Context, bail};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 nothing regressed, 1 a regression or a failed benchmark, 2 bad input,
3 unsure: nothing regressed, but some benchmark is inconclusive (its interval reaches beyond twice
the threshold, or it has too few samples), or an [accuracy] rule covers a benchmark whose accuracy
is not recorded on both sides. A benchmark that lost more accuracy than its [accuracy] rule
allows is a regression (exit 1) whatever its speed did. Unsure is not a pass: the output lists each unsure
benchmark and why; measure again with more samples, pin a core, or count instructions."
)]
pub struct CompareArgs {
    /// A Criterion baseline (`base`, `new`, a --save-baseline name) or a run (id, `latest`,
    /// `previous`, `label:NAME`, `rev:SHA`)
    pub base: String,
    /// The head, the side under test: as BASE
    #[arg(value_name = "HEAD")]
    pub candidate: String,
    /// Criterion's output directory, where BASE and HEAD name baselines rather than
    /// runs [default: $CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else target/criterion]
    #[arg(long)]
    pub criterion_dir: Option<PathBuf>,
    #[arg(long, default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub results: PathBuf,
    /// Smallest slowdown, in percent, that fails the gate [default:
    /// $STACKBENCH_GATE_THRESHOLD_PERCENT, else `[gate] threshold_percent` in stackbench.toml,
    /// else 5]
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Only benchmarks whose full id matches this regular expression
    #[arg(long)]
    pub filter: Option<String>,
    /// What to print the verdict as (`md` for short; markdown is the PR comment)
    #[arg(long, value_parser = Format::parser(COMPARISON_FORMATS), default_value_t = Format::Table)]
    pub format: Format,
    /// Compare runs whose hardware fingerprints differ (every output then says so)
    #[arg(long)]
    pub allow_different_hardware: bool,
    /// stackbench.toml whose `[accuracy]` rules judge accuracy beside speed (default:
    /// $STACKBENCH_CONFIG, else ./stackbench.toml when present; without rules accuracy is
    /// shown, never judged)
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// Loads BASE or HEAD: a Criterion baseline when the tree has one by that name,
/// else a recorded run.
fn load_side(
    name: &str,
    tree: Option<&CriterionTree>,
    store: &RunStore,
) -> anyhow::Result<RunRecord> {
    if let Some(tree) = tree.filter(|t| t.has(name)) {
        return Ok(run_for_comparison(tree, name)?);
    }
    match store.resolve(name) {
        Ok(run) => Ok(run),
        Err(crate::results::ResultsError::UnknownRun { available, .. }) => {
            let baselines = tree.map_or_else(
                || "none (no Criterion directory)".to_string(),
                |t| t.baselines().keys().cloned().collect::<Vec<_>>().join(", "),
            );
            bail!(
                "`{name}` is neither a Criterion baseline nor a recorded run; Criterion baselines: {baselines}; runs in {}: {}",
                store.runs_dir().display(),
                if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ") + ", latest, previous, label:NAME, rev:SHA"
                }
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// BASE and HEAD as runs, naming every benchmark file that could not be used.
fn load_sides(args: &CompareArgs, store: &RunStore) -> anyhow::Result<(RunRecord, RunRecord)> {
    let dir = args.criterion_dir.clone().unwrap_or_else(criterion_home);
    // A missing default Criterion directory is fine when both names are runs; an explicit
    // one must exist.
    let tree = match CriterionTree::scan(&dir) {
        Ok(t) => Some(t),
        Err(e) if args.criterion_dir.is_some() => return Err(e.into()),
        Err(_) => None,
    };
    let base = load_side(&args.base, tree.as_ref(), store)?;
    let cand = load_side(&args.candidate, tree.as_ref(), store)?;
    for (side, run) in [("baseline", &base), ("candidate", &cand)] {
        for skip in &run.skipped {
            // The verdict lists it as failed; this names the file as soon as it is read.
            eprintln!(
                "warning: {side}: unusable {}: {}",
                skip.path.display(),
                skip.reason
            );
        }
        // Samples the reader refused (their file and reason are in the error): named as
        // soon as they are read, as `record` names them.
        for failure in &run.failed {
            eprintln!("warning: {side}: FAILED {}: {}", failure.id, failure.error);
        }
    }
    Ok((base, cand))
}

pub fn compare_command(
    args: CompareArgs,
    chosen: &super::store::ChosenStore,
) -> anyhow::Result<Outcome> {
    // The config first: a broken file is named before any run is read.
    let config = crate::config::Config::discover(args.config.as_deref())
        .context("cannot read the [accuracy] rules")?;
    // The same threshold as the gate's: `compare` is the gate's judgement of stored runs.
    let threshold = settings::threshold(args.threshold, &FileLayer::of(&config), Measure::Time)?;
    if !(threshold.value.is_finite() && threshold.value >= 0.0) {
        bail!("--threshold must be a non-negative number of percent, not {threshold}");
    }
    let filter = args
        .filter
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .context("--filter is not a valid regular expression")?;
    let accuracy_rules = config.accuracy_rules();
    let store = chosen.open(&args.results);
    let (base, cand) = load_sides(&args, &store)?;
    let (noise_floors, history_runs) = history_noise(&store, &base, &cand);
    let options = CompareOptions {
        rule: VerdictRule {
            threshold_percent: threshold.value,
            ..VerdictRule::default()
        },
        filter,
        allow_different_hardware: args.allow_different_hardware,
        noise_floors,
        history_runs,
        accuracy_rules,
    };
    let side = |name: &str, run| Side {
        name: name.to_string(),
        run,
    };
    let comparison = compare(
        &side(&args.base, &base),
        &side(&args.candidate, &cand),
        &options,
    )?;
    if let Err(e) = keep_comparison_verdict(
        &store,
        "compare",
        (&args.base, &base),
        (&args.candidate, &cand),
        &comparison.stored_verdict(),
    ) {
        eprintln!("warning: verdict not kept in the history: {e}");
    }
    let mut shown = comparison.text(args.format)?;
    if args.format == Format::Markdown {
        // The PR comment links to the comparison's page when a server is configured.
        let document = comparison.text(Format::Json)?;
        shown = crate::report::comparison::link::link_comment(shown, &document);
    }
    std::io::stdout()
        .write_all(shown.as_bytes())
        .context("cannot write to stdout")?;
    Ok(comparison.outcome())
}

/// Noise floors from earlier recorded runs on the candidate's hardware; none when the
/// results directory is absent or unreadable (the comparison then uses within-run
/// statistics only, and says nothing it cannot know).
fn history_noise(
    store: &RunStore,
    base: &RunRecord,
    cand: &RunRecord,
) -> (std::collections::HashMap<String, f64>, usize) {
    if store.is_absent() {
        return (Default::default(), 0);
    }
    match store.load_all() {
        Ok(loaded) => crate::analysis::noise::noise_floors(
            &loaded.runs,
            cand.fingerprint.as_deref(),
            &[base.run_id.as_str(), cand.run_id.as_str()],
        ),
        Err(e) => {
            eprintln!("warning: history not used: {e}");
            (Default::default(), 0)
        }
    }
}
