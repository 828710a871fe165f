//! The pages of the web dashboard (`stackbench serve`) and of the static `report.html`: one
//! serde model per page (runs, one run, one benchmark's history, comparisons, one
//! comparison, the hardware matrix, and the snapshot that holds them all), built from the
//! store and the report models, and [`render_page`], which wraps a model into a complete
//! HTML page.
//!
//! A page is data plus one script: the model goes into the page as JSON inside
//! `<script type="application/json" id="page-data">`, and `crates/report/assets/web/stackbench.js` builds
//! the DOM from it with `textContent`/`createElement` only and draws every chart with the
//! vendored ECharts. Nothing from a run file is ever parsed as HTML, so a hostile benchmark
//! name shows as text. The JSON endpoints of `serve` return these same models.
//!
//! The served pages link the scripts under `/assets/` ([`PageContext::served`], which keeps
//! `script-src 'self'` possible); `report.html` inlines them ([`PageContext::snapshot`]) so
//! it opens from a file with no network.

pub mod assets;
pub mod chart;
mod comparison;
mod hardware;
mod history;
mod run;
mod runs;
mod snapshot;
mod sweep;

pub use comparison::{ComparisonPage, ComparisonRow, ComparisonsPage};
pub use hardware::HardwarePage;
pub use history::{HardwareHistory, HistoryPage};
pub use run::RunPage;
pub use runs::{RunRow, RunsFilter, RunsPage, run_suites};
pub use snapshot::SnapshotPage;
pub use sweep::{SWEEP_REPORT_SCHEMA, SweepPage, bytes_text, rate_text};

use crate::report::format::escape_html;
use serde::Serialize;

/// Every page the dashboard and the report know, tagged by `page` in its JSON.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "page", rename_all = "snake_case")]
pub enum PageModel {
    Runs(RunsPage),
    Run(Box<RunPage>),
    History(HistoryPage),
    Comparisons(ComparisonsPage),
    Comparison(ComparisonPage),
    Hardware(HardwarePage),
    /// The newest model sweep per machine and the recommendation matrix.
    Sweep(Box<SweepPage>),
    /// `report.html`: the pages above in one document.
    Snapshot(Box<SnapshotPage>),
}

impl PageModel {
    /// The page's `<title>`.
    pub fn title(&self) -> String {
        match self {
            PageModel::Runs(_) => "Runs".into(),
            PageModel::Run(r) => format!("Run {}", r.run.name()),
            PageModel::History(h) => format!("History of {}", h.bench_id),
            PageModel::Comparisons(_) => "Comparisons".into(),
            PageModel::Comparison(c) => format!("Comparison {} → {}", c.baseline, c.candidate),
            PageModel::Hardware(_) => "Cross-hardware matrix".into(),
            PageModel::Sweep(_) => "Model sweeps".into(),
            PageModel::Snapshot(_) => "Benchmark report".into(),
        }
    }
}

/// Where the links of a page point: each is a prefix the script appends the URL-encoded
/// id to.
#[derive(Clone, Debug, Serialize)]
pub struct Links {
    pub runs: String,
    pub run: String,
    pub history: String,
    pub comparisons: String,
    pub comparison: String,
    pub hardware: String,
    pub sweeps: String,
}

/// How a page gets its scripts and where its links go.
#[derive(Clone, Debug)]
pub struct PageContext {
    /// `Some(prefix)`: `<script src>`/`<link>` under it (the server's `/assets/`);
    /// `None`: everything inlined.
    pub assets_prefix: Option<String>,
    pub links: Links,
}

impl PageContext {
    /// A page of `stackbench serve`: scripts from `/assets/`, links to the other pages.
    pub fn served() -> PageContext {
        PageContext {
            assets_prefix: Some("/assets/".into()),
            links: Links {
                runs: "/".into(),
                run: "/runs/".into(),
                history: "/history/".into(),
                comparisons: "/comparisons".into(),
                comparison: "/comparisons/".into(),
                hardware: "/hardware".into(),
                sweeps: "/sweeps".into(),
            },
        }
    }

    /// `report.html`: one file, scripts inlined, links to the sections of the same file.
    pub fn snapshot() -> PageContext {
        PageContext {
            assets_prefix: None,
            links: Links {
                runs: "#runs".into(),
                run: "#run-".into(),
                history: "#history-".into(),
                comparisons: "#comparisons".into(),
                comparison: "#comparison-".into(),
                hardware: "#hardware".into(),
                sweeps: "#sweeps".into(),
            },
        }
    }
}

/// What the page script reads: the model and where links go.
#[derive(Serialize)]
struct PageData<'a> {
    links: &'a Links,
    #[serde(flatten)]
    model: &'a PageModel,
}

/// JSON that is safe inside a `<script>` element: `<`, `>` and `&` as `\u003c` etc., so no
/// string in it can close the element or open a comment, and the parsed value is
/// unchanged. (U+2028/2029 are escaped too, for readers that eval JSON as script.)
pub fn json_for_script(value: &impl Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|e| {
        serde_json::json!({"page": "error", "error": e.to_string()}).to_string()
    });
    let mut out = String::with_capacity(text.len() + 64);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A complete HTML page for `model`: the stylesheet, the page data as JSON, the chart
/// library and `stackbench.js`, linked or inlined as `context` says.
pub fn render_page(model: &PageModel, context: &PageContext) -> String {
    let title = escape_html(&model.title());
    let data = json_for_script(&PageData {
        links: &context.links,
        model,
    });
    let mut out = String::with_capacity(data.len() + assets::INLINE_SIZE + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str(&format!("<title>{title} · stackbench</title>"));
    match &context.assets_prefix {
        Some(prefix) => {
            let prefix = escape_html(prefix);
            out.push_str(&format!(
                "<link rel=\"stylesheet\" href=\"{prefix}{}\">",
                assets::CSS_PATH
            ));
        }
        None => {
            out.push_str("<style>");
            out.push_str(assets::STACKBENCH_CSS);
            out.push_str("</style>");
        }
    }
    out.push_str("</head><body>");
    out.push_str(&format!(
        "<noscript><p>This page draws its tables and charts with JavaScript; the same data is \
         in the page source (<code>page-data</code>) and at the JSON endpoints.</p></noscript>\
         <main id=\"app\" data-title=\"{title}\"></main>"
    ));
    out.push_str("<script type=\"application/json\" id=\"page-data\">");
    out.push_str(&data);
    out.push_str("</script>");
    match &context.assets_prefix {
        Some(prefix) => {
            let prefix = escape_html(prefix);
            for path in [assets::ECHARTS_PATH, assets::JS_PATH] {
                out.push_str(&format!("<script src=\"{prefix}{path}\"></script>"));
            }
        }
        None => {
            for source in [assets::ECHARTS_JS, assets::STACKBENCH_JS] {
                out.push_str("<script>");
                out.push_str(source);
                out.push_str("</script>");
            }
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_its_element_and_parses_back_unchanged() {
        let hostile = "</script><script>alert(1)</script><!-- & \u{2028}";
        let text = json_for_script(&serde_json::json!({ "name": hostile }));
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], hostile);
    }

    #[test]
    fn a_page_links_or_inlines_its_scripts() {
        let page = PageModel::Runs(RunsPage::default());
        let served = render_page(&page, &PageContext::served());
        assert!(served.contains("<script src=\"/assets/stackbench.js\"></script>"));
        assert!(served.contains("<script src=\"/assets/vendor/echarts/echarts.min.js\">"));
        assert!(!served.contains(assets::STACKBENCH_JS));
        let snapshot = render_page(&page, &PageContext::snapshot());
        assert!(snapshot.contains(assets::STACKBENCH_JS));
        for fetch in ["<script src=", "<link "] {
            assert!(
                !snapshot.contains(fetch),
                "the snapshot fetches nothing: {fetch}"
            );
        }
        // Exactly one application/json element, which the script reads.
        assert_eq!(
            snapshot
                .matches("<script type=\"application/json\" id=\"page-data\">")
                .count(),
            1
        );
    }
}
