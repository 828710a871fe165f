//! `analyze-trends report` (and `analyze-trends` alone): the history report over a
//! results directory, written as HTML, Markdown and JSON and summarised on the terminal.

use crate::analysis::Outcome;
use crate::analysis::trends::{
    MedianHistory, RunHeader, TrendOptions, analyze_medians, not_measured,
};
use crate::report::history::HistoryReport;
use crate::report::pages::SnapshotPage;
use crate::report::writer::{Format, ReportWriter};
use crate::results::RunRecord;
use anyhow::{Context, bail};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[arg(default_value = crate::cli::settings::DEFAULT_RESULTS_DIR, hide_default_value = true,
          help = crate::cli::settings::RESULTS_HELP)]
    pub dir: PathBuf,
    /// Exit 1 when any benchmark's history shows a recent regression
    #[arg(long)]
    pub fail_on_regression: bool,
    /// The change in percent a recent step (or the latest run against the series) must
    /// exceed to be reported as regressed, improved or suspect
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
}

pub fn report(args: ReportArgs, chosen: &super::store::ChosenStore) -> anyhow::Result<Outcome> {
    let store = chosen.open(&args.dir);
    if store.is_absent() {
        bail!(
            "results directory {} does not exist (record a run first)",
            args.dir.display()
        );
    }
    // Medians for the history, whole runs only where the report shows them: a store of a
    // thousand runs is never decoded sample by sample.
    let stored = store.report_history()?;
    if stored.runs.is_empty() && stored.problems.is_empty() {
        bail!(
            "no runs in {} (record one with `analyze-trends record`)",
            store.runs_dir().display()
        );
    }
    let problems: Vec<String> = stored.problems.iter().map(|e| e.to_string()).collect();
    for p in &problems {
        eprintln!("warning: {p}");
    }
    let options = TrendOptions {
        threshold_percent: args.threshold,
        acknowledgements: store.acknowledgements()?,
        ..TrendOptions::default()
    };
    let history = MedianHistory {
        runs: stored.runs.iter().map(RunHeader::stored).collect(),
        series: stored.series,
    };
    let whole: std::collections::HashMap<&str, &RunRecord> = stored
        .whole_runs
        .iter()
        .map(|r| (r.run_id.as_str(), r))
        .collect();
    let not_measured_of = |run_id: &str| {
        whole
            .get(run_id)
            .map(|r| not_measured(r))
            .unwrap_or_default()
    };
    let report = analyze_medians(&history, &not_measured_of, &options, problems);
    // report.html is a snapshot of the dashboard's pages: the runs list, stored comparisons
    // and hardware matrix besides the history.
    let snapshot = SnapshotPage::of(&report, &stored.whole_runs)
        .with_store(&store, &stored.runs, &stored.whole_runs)?
        .with_sweeps(&store, &stored.runs, &history.series)?;
    let history = HistoryReport::new(&report, &stored.whole_runs, snapshot);
    let written = history.write_files(&store.reports_dir())?;
    history
        .write(Format::Table, &mut std::io::stdout().lock())
        .context("cannot write to stdout")?;
    for path in written {
        println!("wrote {}", path.display());
    }
    let regressed = report.regressions().next().is_some();
    Ok(if args.fail_on_regression && regressed {
        Outcome::RegressionFound
    } else {
        Outcome::Clean
    })
}
