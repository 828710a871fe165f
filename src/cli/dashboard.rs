//! `stackbench dashboard` and `stackbench show`: argument structs and what they run.
//!
//! Both read the results directory and the prices the way every other command does: a flag,
//! else the config (`--config`, `$STACKBENCH_CONFIG`, `./stackbench.toml`), else the
//! default. The run they compare with follows `compare`'s rule: runs from different
//! hardware are not compared unless `--allow-different-hardware`, and then the output says
//! so. A shown run with benchmarks that have no usable samples lists them as failed (the
//! store turns them into failures) and `show` exits 1.

use crate::analysis::compare::{CompareError, Side, check_hardware, comparable_hardware};
use crate::config::{Config, ConfigError, Prices};
use crate::dashboard::app::App;
use crate::dashboard::terminal::Follow;
use crate::dashboard::theme::Theme;
use crate::dashboard::{Dashboard, DashboardError, PAGES, page_by_name, text};
use crate::results::RunRecord;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Why `show` or `dashboard` could not draw.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Dashboard(#[from] DashboardError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Hardware(#[from] CompareError),
    #[error("{0:#}")]
    Store(anyhow::Error),
}

/// Where the runs and prices come from, shared by `show` and `dashboard`.
#[derive(Debug, Args)]
pub struct ViewSources {
    #[arg(long, help = crate::cli::settings::RESULTS_HELP)]
    pub results: Option<PathBuf>,
    /// The config file (results_dir, [prices]) [default: $STACKBENCH_CONFIG, else
    /// ./stackbench.toml when present]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The store to read: `sqlite:PATH` or `postgres://user@host/db` [default:
    /// $STACKBENCH_STORE, else the config's `store`, else <results>/stackbench.db]
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// A stackbench.toml whose [prices] table gives the hardware page's perf/$ [default:
    /// the config's; a missing file means no prices: n/a]
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Compare runs whose hardware fingerprints differ (the output then says so)
    #[arg(long)]
    pub allow_different_hardware: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stackbench dashboard                      # the latest run, compared with the one before on the same hardware\n  stackbench dashboard --head nightly-3 --base nightly-2\n  stackbench dashboard --follow             # the suite ./run_benchmarks.sh is running\n\nKeys: ←/→ or 1–9, 0 pages · ↑/↓ select · r run · c comparison · ? help · q quit"
)]
pub struct DashboardArgs {
    #[command(flatten)]
    pub sides: ViewSides,
    /// Follow a suite as it runs, from its progress file.
    #[arg(long)]
    pub follow: bool,
    /// The progress file to follow (what run_benchmarks.sh sets as STACKBENCH_PROGRESS).
    #[arg(long, default_value = "target/criterion/stackbench/progress.jsonl")]
    pub progress: PathBuf,
    /// Where Criterion writes (for the live run's system probe).
    #[arg(long, default_value = "target/criterion")]
    pub criterion_dir: PathBuf,
    #[command(flatten)]
    pub sources: ViewSources,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  stackbench show                           # the summary page\n  stackbench show --page all --width 120\n  stackbench show --page gemm --head previous\n  stackbench show --page hardware --results fleet --prices stackbench.toml\n\nExit codes: 0 drawn, 1 the shown run holds benchmarks with no usable samples (named), 2 bad input."
)]
pub struct ShowArgs {
    /// A page name, or `all`.
    #[arg(long, default_value = "summary")]
    pub page: String,
    /// Width in columns.
    #[arg(long, default_value_t = 100)]
    pub width: u16,
    #[command(flatten)]
    pub sides: ViewSides,
    #[command(flatten)]
    pub sources: ViewSources,
}

/// The two runs a view shows: the head and the base it is compared with.
#[derive(Debug, Args)]
pub struct ViewSides {
    /// The run to show, the head: `latest`, `previous`, `label:NAME`, `rev:SHA`, a run id or a
    /// run file [default: latest]
    #[arg(long, value_name = "RUN")]
    pub head: Option<String>,
    /// The run to compare it with, the base (default: the latest earlier run on the same
    /// hardware)
    #[arg(long, value_name = "RUN")]
    pub base: Option<String>,
    /// --head's spelling before one vocabulary
    #[arg(long = "run", hide = true, conflicts_with = "head")]
    pub old_run: Option<String>,
    /// --base's spelling before one vocabulary
    #[arg(long = "compare", hide = true, conflicts_with = "base")]
    pub old_compare: Option<String>,
}

impl ViewSides {
    /// The head and the base, under either spelling (the old one with a note).
    fn resolve(&self, command: &str) -> (Option<String>, Option<String>) {
        use crate::cli::spelling::renamed;
        (
            renamed(
                command,
                ("--head", self.head.as_ref()),
                ("--run", self.old_run.as_ref()),
            ),
            renamed(
                command,
                ("--base", self.base.as_ref()),
                ("--compare", self.old_compare.as_ref()),
            ),
        )
    }
}

/// The runs through the store, the prices, and what the output must say about them.
fn load(
    sources: &ViewSources,
    run: Option<&str>,
    compare: Option<&str>,
    following: bool,
) -> Result<(Dashboard, Vec<String>), ViewError> {
    // The config is read only when a flag leaves something to it (or names it).
    let config = if sources.config.is_some()
        || sources.results.is_none()
        || sources.prices.is_none()
        || sources.store.is_none()
    {
        Config::discover(sources.config.as_deref())?
    } else {
        Config::default()
    };
    let results = crate::cli::settings::results_dir_of(sources.results.clone(), &config);
    let store = crate::cli::store::store_for(&results, sources.store.as_deref(), &config)
        .map_err(ViewError::Store)?;
    let mut data = match Dashboard::load(&store, run, compare) {
        Ok(data) => data,
        // Following a first run: nothing is recorded yet, and that is fine.
        Err(DashboardError::NoRuns { .. }) if following => {
            Dashboard::from_runs(Vec::new(), Vec::new(), 0, None)
        }
        Err(e) => return Err(e.into()),
    };
    let prices = match &sources.prices {
        Some(path) => Prices::load(path)?,
        None => config.prices.clone(),
    };
    if let Some(prices) = prices {
        data = data.with_prices(&prices);
    }
    let notes = same_hardware(
        &mut data,
        compare.is_some(),
        sources.allow_different_hardware,
    )?;
    Ok((data, notes))
}

/// Applies `compare`'s hardware rule to the run the pages compare with. Without
/// `--compare` (and without the flag) the comparison is the latest earlier run on the
/// same hardware, not merely the one before; an explicit `--compare` on other hardware is
/// refused as `compare` refuses it. Returns what the output must say.
fn same_hardware(
    data: &mut Dashboard,
    explicit: bool,
    allow: bool,
) -> Result<Vec<String>, CompareError> {
    let mut notes = Vec::new();
    let Some(current) = data.current() else {
        return Ok(notes);
    };
    if !explicit && !allow {
        let before = data.runs[..data.run]
            .iter()
            .rposition(|r| comparable_hardware(r, current));
        if let Some(previous) = data.run.checked_sub(1).map(|i| &data.runs[i])
            && !comparable_hardware(previous, current)
        {
            notes.push(format!(
                "the run before {} ({}) ran on other hardware: compared with {} (pass --allow-different-hardware to compare with it)",
                current.run_id,
                previous.run_id,
                before.map_or("no run".to_string(), |i| data.runs[i].run_id.clone())
            ));
        }
        // `Some(run)` is "no comparison" (see `Dashboard::comparison`).
        data.compare = Some(before.unwrap_or(data.run));
    }
    let (Some(before), Some(current)) = (data.comparison(), data.current()) else {
        return Ok(notes);
    };
    let side = |run: &RunRecord| run.run_id.clone();
    let check = check_hardware(
        &Side {
            name: side(before),
            run: before,
        },
        &Side {
            name: side(current),
            run: current,
        },
        allow,
    )?;
    notes.extend(check.warning);
    Ok(notes)
}

/// What the shown run lacks: each benchmark with no usable samples, named with its reason,
/// or the whole run when it measured nothing. A view of no evidence is not a clean view.
fn unusable(data: &Dashboard) -> Vec<String> {
    let Some(run) = data.current() else {
        return Vec::new();
    };
    let mut lines: Vec<String> = run
        .failed
        .iter()
        .filter(|f| f.is_unusable_samples())
        .map(|f| format!("run {}: {} failed: {}", run.run_id, f.id, f.error))
        .collect();
    if run.benchmarks.is_empty() {
        lines.push(format!(
            "run {} measured nothing: no benchmark has usable samples ({} failed)",
            run.run_id,
            run.failed.len()
        ));
    }
    lines
}

/// Runs the dashboard until the user quits.
pub fn run_dashboard(args: &DashboardArgs) -> Result<(), ViewError> {
    let (head, base) = args.sides.resolve("stackbench dashboard");
    let (data, notes) = load(&args.sources, head.as_deref(), base.as_deref(), args.follow)?;
    // The terminal is taken over next: what must be said is said first, and again after.
    for line in notes.iter().chain(&unusable(&data)) {
        eprintln!("stackbench dashboard: note: {line}");
    }
    let follow = args.follow.then(|| Follow {
        progress: args.progress.clone(),
        criterion_dir: args.criterion_dir.clone(),
    });
    let mut app = App::new(data, Theme::from_env());
    if let Some(f) = &follow {
        crate::dashboard::terminal::refresh_live(&mut app, f).map_err(DashboardError::from)?;
    }
    crate::dashboard::terminal::run(app, follow).map_err(DashboardError::from)?;
    for line in &notes {
        eprintln!("stackbench dashboard: note: {line}");
    }
    Ok(())
}

/// What `show` drew, and the benchmarks of the shown run with no usable samples.
pub struct Shown {
    pub text: String,
    pub unusable: Vec<String>,
}

/// The text of `show`: one page or all of them.
pub fn show(args: &ShowArgs) -> Result<Shown, ViewError> {
    let (head, base) = args.sides.resolve("stackbench show");
    let (data, notes) = load(&args.sources, head.as_deref(), base.as_deref(), false)?;
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
    for note in &notes {
        out.push_str(&format!("note: {note}\n"));
    }
    let unusable = unusable(&data);
    for line in &unusable {
        out.push_str(&format!("FAILED {line}\n"));
    }
    for index in pages {
        out.push_str(&text::render_page(&data, index, width, theme));
        out.push('\n');
    }
    Ok(Shown {
        text: out,
        unusable,
    })
}

/// `stackbench show`: prints the pages; exit 1 when the shown run holds benchmarks with no
/// usable samples (named on stderr too), 2 on bad input.
pub fn show_main(args: &ShowArgs) -> ExitCode {
    match show(args) {
        Ok(shown) => {
            print!("{}", shown.text);
            for line in &shown.unusable {
                eprintln!("stackbench show: FAILED {line}");
            }
            if shown.unusable.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => exit_for_error("stackbench show", &error),
    }
}

/// `stackbench dashboard`: exit 2 on bad input, 1 when the terminal failed.
pub fn dashboard_main(args: &DashboardArgs) -> ExitCode {
    match run_dashboard(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => exit_for_error("stackbench dashboard", &error),
    }
}

/// Prints the error once; exit 2 for bad input (no runs, unknown run or page, a bad config
/// or prices file, runs on different hardware), 1 when the terminal failed.
fn exit_for_error(command: &str, error: &ViewError) -> ExitCode {
    super::errors::report(command, error);
    match error {
        ViewError::Dashboard(DashboardError::Terminal(_)) => ExitCode::FAILURE,
        _ => ExitCode::from(2),
    }
}
