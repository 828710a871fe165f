//! `stackbench dashboard` and `stackbench show`: argument structs and what they run.

use crate::analysis::prices::Prices;
use crate::dashboard::app::App;
use crate::dashboard::terminal::Follow;
use crate::dashboard::theme::Theme;
use crate::dashboard::{Dashboard, DashboardError, PAGES, page_by_name, text};
use crate::results::RunStore;
use clap::Args;
use std::path::Path;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stackbench dashboard                      # the latest run, compared with the one before\n  stackbench dashboard --run nightly-3 --compare nightly-2\n  stackbench dashboard --follow             # the suite ./run_benchmarks.sh is running\n\nKeys: ←/→ or 1–9 pages · ↑/↓ select · r run · c comparison · ? help · q quit"
)]
pub struct DashboardArgs {
    /// The results directory (runs are read through its store).
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    /// The run to show: `latest`, `previous`, a run id or a run file.
    #[arg(long)]
    pub run: Option<String>,
    /// The run to compare with (default: the run before the shown one).
    #[arg(long)]
    pub compare: Option<String>,
    /// Follow a suite as it runs, from its progress file.
    #[arg(long)]
    pub follow: bool,
    /// The progress file to follow (what run_benchmarks.sh sets as STACKBENCH_PROGRESS).
    #[arg(long, default_value = "target/criterion/stackbench/progress.jsonl")]
    pub progress: PathBuf,
    /// Where Criterion writes (for the live run's system probe).
    #[arg(long, default_value = "target/criterion")]
    pub criterion_dir: PathBuf,
    /// TOML file with a [prices] table for the hardware page's perf/$ (missing: n/a)
    #[arg(long, default_value = "stackbench.toml")]
    pub prices: PathBuf,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stackbench show                           # the summary page\n  stackbench show --page all --width 120\n  stackbench show --page gemm --run previous\n  stackbench show --page hardware --results fleet --prices stackbench.toml"
)]
pub struct ShowArgs {
    /// A page name, or `all`.
    #[arg(long, default_value = "summary")]
    pub page: String,
    /// Width in columns.
    #[arg(long, default_value_t = 100)]
    pub width: u16,
    #[arg(long)]
    pub run: Option<String>,
    #[arg(long)]
    pub compare: Option<String>,
    #[arg(long, default_value = "benchmark_results")]
    pub results: PathBuf,
    /// TOML file with a [prices] table for the hardware page's perf/$ (missing: n/a)
    #[arg(long, default_value = "stackbench.toml")]
    pub prices: PathBuf,
}

/// The runs through the store, and the device prices when `prices` has a [prices] table.
fn load(
    store: &RunStore,
    run: Option<&str>,
    compare: Option<&str>,
    prices: &Path,
) -> Result<Dashboard, DashboardError> {
    let data = Dashboard::load(store, run, compare)?;
    Ok(match Prices::load(prices)? {
        Some(p) => data.with_prices(&p),
        None => data,
    })
}

/// Runs the dashboard until the user quits.
pub fn run_dashboard(args: &DashboardArgs) -> Result<(), DashboardError> {
    let store = RunStore::new(&args.results);
    let data = match load(
        &store,
        args.run.as_deref(),
        args.compare.as_deref(),
        &args.prices,
    ) {
        Ok(data) => data,
        // Following a first run: nothing is recorded yet, and that is fine.
        Err(DashboardError::NoRuns { .. }) if args.follow => {
            Dashboard::from_runs(Vec::new(), Vec::new(), 0, None)
        }
        Err(e) => return Err(e),
    };
    let follow = args.follow.then(|| Follow {
        progress: args.progress.clone(),
        criterion_dir: args.criterion_dir.clone(),
    });
    let mut app = App::new(data, Theme::from_env());
    if let Some(f) = &follow {
        crate::dashboard::terminal::refresh_live(&mut app, f)?;
    }
    crate::dashboard::terminal::run(app, follow)?;
    Ok(())
}

/// The text of `show`: one page or all of them.
pub fn show(args: &ShowArgs) -> Result<String, DashboardError> {
    let store = RunStore::new(&args.results);
    let data = load(
        &store,
        args.run.as_deref(),
        args.compare.as_deref(),
        &args.prices,
    )?;
    let pages: Vec<usize> = if args.page == "all" {
        (0..PAGES.len()).collect()
    } else {
        vec![page_by_name(&args.page)?]
    };
    let width = args.width.clamp(40, 400);
    let theme = Theme::plain();
    let mut out = String::new();
    for p in &data.problems {
        out.push_str(&format!("run not read: {p}\n"));
    }
    for index in pages {
        out.push_str(&text::render_page(&data, index, width, theme));
        out.push('\n');
    }
    Ok(out)
}
