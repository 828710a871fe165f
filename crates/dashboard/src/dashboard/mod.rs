//! The dashboard (`stackbench dashboard`) and the text charts (`stackbench show`): one set
//! of pages, each drawn from chart widgets into a ratatui buffer. The terminal shows the
//! buffer; `show` prints it as text. Runs come only through the results API
//! ([`crate::results::RunStore`]), so the store's format can change under it.
//!
//! A new page is one file in `pages/` and one line in [`PAGES`].

pub mod app;
pub mod live;
pub mod pages;
pub mod terminal;
pub mod text;
pub mod theme;
pub mod widgets;

use crate::analysis::hardware::{HardwareReport, analyze_hardware};
use crate::analysis::prices::{NoPrices, PriceList};
use crate::analysis::recommend::{Rank, Recommendation, Request, recommend};
use crate::analysis::trends::{TrendOptions, TrendReport, analyze_history};
use crate::results::{Acknowledgement, RunRecord, RunStore};
use crate::view::model::Measured;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::path::PathBuf;
use theme::Theme;

#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("no runs in {path}: record one with ./run_benchmarks.sh or `analyze-trends record`")]
    NoRuns { path: PathBuf },
    #[error("unknown page `{name}`; pages: {known}")]
    UnknownPage { name: String, known: String },
    #[error(transparent)]
    Prices(#[from] crate::analysis::prices::PricesError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Everything the pages draw: the history, which run is shown, which it is compared with.
pub struct Dashboard {
    /// Oldest first, as the store returns them.
    pub runs: Vec<RunRecord>,
    /// Run files the store could not read, shown rather than dropped.
    pub problems: Vec<String>,
    pub run: usize,
    /// Explicit comparison run; else the run before the shown one.
    pub compare: Option<usize>,
    pub measured: Vec<Measured>,
    pub trends: TrendReport,
    /// The cross-hardware report over every run (page 9); without prices until
    /// [`Dashboard::with_prices`] gives some, so perf/$ reads "n/a".
    pub hardware: HardwareReport,
    /// The recommendation over the stored sweeps (page 10): no SLO, ranked by throughput,
    /// priced once [`Dashboard::with_prices`] gives prices; the reason when there is none.
    pub recommendation: Result<Recommendation, String>,
    /// Set while following a suite as it runs.
    pub live: Option<crate::sidecar::progress::Progress>,
}

impl Dashboard {
    /// Loads every run through the store and resolves `--run` / `--compare`.
    pub fn load(
        store: &RunStore,
        run: Option<&str>,
        compare: Option<&str>,
    ) -> Result<Dashboard, DashboardError> {
        let loaded = store.load_all()?;
        if loaded.runs.is_empty() && run.is_none() {
            return Err(DashboardError::NoRuns {
                path: store.runs_dir(),
            });
        }
        let problems = loaded.problems.iter().map(|e| e.to_string()).collect();
        let mut runs = loaded.runs;
        let mut index_of = |name: &str| -> Result<usize, DashboardError> {
            let wanted = store.resolve(name)?;
            Ok(match runs.iter().position(|r| r.run_id == wanted.run_id) {
                Some(i) => i,
                None => {
                    runs.push(wanted);
                    runs.len() - 1
                }
            })
        };
        let run = index_of(run.unwrap_or("latest"))?;
        let compare = compare.map(&mut index_of).transpose()?;
        let acknowledgements = store.acknowledgements()?;
        Ok(Dashboard::from_runs(runs, problems, run, compare)
            .with_acknowledgements(acknowledgements))
    }

    /// Judges the history again with the acknowledged steps (`analyze-trends ack`), so the
    /// trends page marks them and judges from them as `analyze-trends` does.
    pub fn with_acknowledgements(mut self, acknowledgements: Vec<Acknowledgement>) -> Dashboard {
        let options = TrendOptions {
            acknowledgements,
            ..TrendOptions::default()
        };
        self.trends = analyze_history(&self.runs, &options, self.problems.clone());
        self
    }

    pub fn from_runs(
        runs: Vec<RunRecord>,
        problems: Vec<String>,
        run: usize,
        compare: Option<usize>,
    ) -> Dashboard {
        let trends = analyze_history(&runs, &TrendOptions::default(), problems.clone());
        Dashboard::with_trends(runs, trends, problems, run, compare)
    }

    /// A dashboard over `runs` whose trends were judged already, over a longer history
    /// than `runs` (the history report draws the newest run's pages this way).
    pub fn with_trends(
        runs: Vec<RunRecord>,
        trends: TrendReport,
        problems: Vec<String>,
        run: usize,
        compare: Option<usize>,
    ) -> Dashboard {
        let hardware = analyze_hardware(&runs, &NoPrices);
        let recommendation = recommend_for_page(&runs, &NoPrices);
        let mut dashboard = Dashboard {
            runs,
            problems,
            run: 0,
            compare,
            measured: Vec::new(),
            trends,
            hardware,
            recommendation,
            live: None,
        };
        dashboard.select_run(run);
        dashboard
    }

    /// Builds the hardware page's report again with device prices (the `[prices]` table of
    /// `stackbench.toml`), so its perf/$ has figures.
    pub fn with_prices(mut self, prices: &dyn PriceList) -> Dashboard {
        self.hardware = analyze_hardware(&self.runs, prices);
        self.recommendation = recommend_for_page(&self.runs, prices);
        self
    }

    /// Shows run `index` (clamped), recomputing what the pages draw from it.
    pub fn select_run(&mut self, index: usize) {
        self.run = index.min(self.runs.len().saturating_sub(1));
        self.measured = self
            .runs
            .get(self.run)
            .map(crate::view::model::measured)
            .unwrap_or_default();
    }

    pub fn current(&self) -> Option<&RunRecord> {
        self.runs.get(self.run)
    }

    /// The run the shown one is compared with: `--compare`, else the one before it.
    pub fn comparison(&self) -> Option<&RunRecord> {
        match self.compare {
            Some(i) if i != self.run => self.runs.get(i),
            Some(_) => None,
            None => self.run.checked_sub(1).and_then(|i| self.runs.get(i)),
        }
    }
}

/// The models page's recommendation: every model, no SLO, ranked by throughput.
fn recommend_for_page(
    runs: &[RunRecord],
    prices: &dyn PriceList,
) -> Result<Recommendation, String> {
    let request = Request {
        slos: Vec::new(),
        rank: Rank::Throughput,
        models: Vec::new(),
    };
    recommend(runs, &request, prices).map_err(|e| e.to_string())
}

/// What one page is drawn with.
pub struct View<'a> {
    pub data: &'a Dashboard,
    pub theme: Theme,
    /// The selected benchmark or series on this page (↑/↓), clamped by the page.
    pub selected: usize,
}

/// One page: its name for `show --page`, its tab title, and how it draws.
pub struct Page {
    pub name: &'static str,
    pub title: &'static str,
    pub render: fn(&View, Rect, &mut Buffer),
    /// How many rows ↑/↓ move through on this page.
    pub items: fn(&Dashboard) -> usize,
}

impl Page {
    /// A page from its name, tab title, drawing and row count, each page's one line.
    pub const fn new(
        name: &'static str,
        title: &'static str,
        render: fn(&View, Rect, &mut Buffer),
        items: fn(&Dashboard) -> usize,
    ) -> Page {
        Page {
            name,
            title,
            render,
            items,
        }
    }
}

/// Pages 1–7 in key order, then the summary `run_benchmarks.sh` prints, the
/// cross-hardware page, and the models page (key 0). Add new pages here.
pub const PAGES: [Page; 10] = [
    pages::baseline::PAGE,
    pages::gemm::PAGE,
    pages::tensor_ops::PAGE,
    pages::components::PAGE,
    pages::compare::PAGE,
    pages::trends::PAGE,
    pages::outcomes::PAGE,
    pages::summary::PAGE,
    pages::hardware::PAGE,
    pages::models::PAGE,
];

/// A page by its `show --page` name.
pub fn page_by_name(name: &str) -> Result<usize, DashboardError> {
    PAGES
        .iter()
        .position(|p| p.name == name)
        .ok_or_else(|| DashboardError::UnknownPage {
            name: name.to_string(),
            known: PAGES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
        })
}
