//! The comparisons list and one comparison's page: the verdict, the same rows as the PR
//! comment's table (status, benchmark, baseline, candidate, change, 95 % CI, q,
//! throughput), the benchmarks that were not measured, and a chart of each changed
//! benchmark's change with its interval.
//!
//! A stored comparison keeps its full JSON (`comparison.json` as `compare`/`gate` wrote
//! it); the page reads that JSON, so a comparison stored by an older or newer stackbench
//! still shows whatever rows it has. The live [`Comparison`] goes through the same path.

use super::chart::{Axis, Chart, GREEN, Point, RED, Scale, Series, Style, TickFormat, palette};
use crate::analysis::Comparison;
use crate::report::format::{format_ns, format_percent};
use crate::results::{ComparisonRecord, ResultsError, RunStore};
use serde::Serialize;
use serde_json::Value;

/// One row of the comparisons list.
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonSummary {
    pub id: i64,
    pub created: String,
    pub kind: String,
    pub baseline: String,
    pub candidate: String,
    pub baseline_run_id: Option<String>,
    pub candidate_run_id: Option<String>,
    pub hardware: Option<String>,
    pub verdict: String,
    pub degraded: u64,
    pub improved: u64,
    pub unchanged: u64,
    pub inconclusive: u64,
}

impl ComparisonSummary {
    pub fn of(c: &ComparisonRecord) -> ComparisonSummary {
        ComparisonSummary {
            id: c.id,
            created: crate::results::format_rfc3339_ms(c.created_unix_ms),
            kind: c.kind.clone(),
            baseline: c.baseline.clone(),
            candidate: c.candidate.clone(),
            baseline_run_id: c.baseline_run_id.clone(),
            candidate_run_id: c.candidate_run_id.clone(),
            hardware: c.fingerprint.clone(),
            verdict: c.verdict.clone(),
            degraded: c.degraded,
            improved: c.improved,
            unchanged: c.unchanged,
            inconclusive: c.inconclusive,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ComparisonsPage {
    /// Newest first.
    pub comparisons: Vec<ComparisonSummary>,
}

impl ComparisonsPage {
    pub fn from_store(store: &RunStore) -> Result<ComparisonsPage, ResultsError> {
        Ok(Self::from_records(&store.comparisons()?))
    }

    pub fn from_records(records: &[ComparisonRecord]) -> ComparisonsPage {
        let mut comparisons: Vec<ComparisonSummary> =
            records.iter().map(ComparisonSummary::of).collect();
        comparisons.sort_by_key(|c| std::cmp::Reverse(c.id));
        ComparisonsPage { comparisons }
    }
}

/// One row of the table, formatted as the PR comment formats it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonRow {
    pub status: String,
    pub id: String,
    pub baseline: String,
    pub candidate: String,
    pub change: String,
    pub ci: String,
    pub q: String,
    pub throughput: String,
    /// The raw numbers, for charts and API readers.
    pub baseline_ns: Option<f64>,
    pub candidate_ns: Option<f64>,
    pub change_percent: Option<f64>,
    pub samples: Option<[u64; 2]>,
}

/// A benchmark that produced no number on one side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnmeasuredRow {
    pub id: String,
    pub status: String,
    pub error: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ComparisonPage {
    /// The store's id; 0 for a comparison that is not stored.
    pub id: i64,
    pub kind: String,
    pub baseline: String,
    pub candidate: String,
    pub baseline_run_id: Option<String>,
    pub candidate_run_id: Option<String>,
    pub verdict: String,
    pub threshold_percent: Option<f64>,
    pub rows: Vec<ComparisonRow>,
    pub unmeasured: Vec<UnmeasuredRow>,
    /// Each benchmark's accuracy verdict (status, id, message), from the verdict's
    /// `accuracy` list; empty for a comparison without accuracy.
    pub accuracy: Vec<[String; 3]>,
    pub chart: Chart,
}

impl ComparisonPage {
    /// The page of a stored comparison.
    pub fn from_record(record: &ComparisonRecord) -> ComparisonPage {
        let detail: Value = serde_json::from_str(&record.detail_json).unwrap_or(Value::Null);
        let mut page = Self::from_json(&detail);
        page.id = record.id;
        page.kind = record.kind.clone();
        page.baseline = record.baseline.clone();
        page.candidate = record.candidate.clone();
        page.baseline_run_id = record.baseline_run_id.clone();
        page.candidate_run_id = record.candidate_run_id.clone();
        page.verdict = record.verdict.clone();
        page.threshold_percent = Some(record.threshold_percent);
        page
    }

    /// The page of a comparison just made (`compare`, `gate`).
    pub fn from_comparison(c: &Comparison) -> ComparisonPage {
        let value = serde_json::to_value(c).unwrap_or(Value::Null);
        Self::from_json(&value)
    }

    /// The page from `comparison.json` as the comparison writer produced it.
    pub fn from_json(detail: &Value) -> ComparisonPage {
        let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
        let rows: Vec<ComparisonRow> = detail["comparisons"]
            .as_array()
            .map(|rows| rows.iter().map(row).collect())
            .unwrap_or_default();
        let unmeasured = detail["unmeasured"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|u| UnmeasuredRow {
                        id: text(u, "id"),
                        status: text(u, "status"),
                        error: text(u, "error"),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let accuracy = detail["accuracy"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|v| [text(v, "status"), text(v, "id"), text(v, "message")])
                    .collect()
            })
            .unwrap_or_default();
        ComparisonPage {
            accuracy,
            id: 0,
            kind: String::new(),
            baseline: text(detail, "baseline"),
            candidate: text(detail, "candidate"),
            baseline_run_id: None,
            candidate_run_id: None,
            verdict: text(&detail["summary"], "overall_status"),
            threshold_percent: detail["threshold_percent"].as_f64(),
            chart: change_chart(&rows),
            rows,
            unmeasured,
        }
    }
}

/// A row as the PR comment's `cells` formats it (src/report/comparison/mod.rs).
fn row(v: &Value) -> ComparisonRow {
    let num = |key: &str| v[key].as_f64();
    let mut change = format_percent(num("change_percent"));
    if let Some(rel) = num("relative_change_percent") {
        change.push_str(&format!(" (rel {})", format_percent(Some(rel))));
    }
    let ci = match (v["ci95_percent"][0].as_f64(), v["ci95_percent"][1].as_f64()) {
        (Some(lo), Some(hi)) => format!("[{lo:+.1}, {hi:+.1}]"),
        _ => "n/a".into(),
    };
    let throughput = match (
        v["throughput"]["baseline"]["value"].as_f64(),
        v["throughput"]["candidate"]["value"].as_f64(),
    ) {
        (Some(b), Some(c)) => format!(
            "{b:.2} → {c:.2} {}",
            v["throughput"]["candidate"]["unit"]
                .as_str()
                .unwrap_or_default()
        ),
        _ => String::new(),
    };
    let samples = match (v["samples"][0].as_u64(), v["samples"][1].as_u64()) {
        (Some(a), Some(b)) => Some([a, b]),
        _ => None,
    };
    ComparisonRow {
        status: v["status"].as_str().unwrap_or_default().to_string(),
        id: v["id"].as_str().unwrap_or_default().to_string(),
        baseline: num("baseline_ns").map_or("n/a".into(), format_ns),
        candidate: num("candidate_ns").map_or("n/a".into(), format_ns),
        change,
        ci,
        q: num("q_value").map_or("n/a".into(), |q| format!("{q:.2e}")),
        throughput,
        baseline_ns: num("baseline_ns"),
        candidate_ns: num("candidate_ns"),
        change_percent: num("change_percent"),
        samples,
    }
}

/// The change of every benchmark that has one, as horizontal bars: slower red, faster
/// green, the rest in the palette's grey-blue.
fn change_chart(rows: &[ComparisonRow]) -> Chart {
    let with_change: Vec<&ComparisonRow> =
        rows.iter().filter(|r| r.change_percent.is_some()).collect();
    let categories: Vec<String> = with_change.iter().map(|r| r.id.clone()).collect();
    let mut by_status: Vec<(String, Vec<Point>)> = Vec::new();
    for (i, r) in with_change.iter().enumerate() {
        let Some(change) = r.change_percent else {
            continue;
        };
        let text = format!(
            "{}: {} → {} ({}), {}",
            r.status, r.baseline, r.candidate, r.change, r.ci
        );
        let point = Point::measured(i as f64, change, text);
        match by_status.iter_mut().find(|(s, _)| *s == r.status) {
            Some((_, points)) => points.push(point),
            None => by_status.push((r.status.clone(), vec![point])),
        }
    }
    let series = by_status
        .into_iter()
        .enumerate()
        .map(|(i, (status, points))| {
            let colour = match status.as_str() {
                "degraded" => RED,
                "improved" => GREEN,
                _ => palette(i + 3),
            };
            let mut s = Series::new(status, Style::Bar, points).coloured(colour);
            // One stack: each category has one bar, whatever its status.
            s.stack = Some("change".into());
            s
        })
        .collect();
    let mut y = Axis::new("benchmark", Scale::Category, TickFormat::Number);
    y.categories = categories;
    Chart {
        id: "comparison:change".into(),
        title: "Change per benchmark (candidate against baseline)".into(),
        x: Axis::new(
            "change (% of baseline time)",
            Scale::Linear,
            TickFormat::Number,
        ),
        y,
        series,
        marks: Vec::new(),
        note: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_formatted_as_the_pr_comment_formats_them() {
        let detail = serde_json::json!({
            "baseline": "main", "candidate": "pr",
            "threshold_percent": 5.0,
            "summary": {"overall_status": "critical"},
            "comparisons": [
                {"id": "gemm/cpu/f32/64", "baseline_ns": 1000.0, "candidate_ns": 1200.0,
                 "change_percent": 20.0, "ci95_percent": [15.0, 25.0], "q_value": 0.001,
                 "status": "degraded", "samples": [10, 10]},
                {"id": "<b>x</b>", "baseline_ns": 1000.0, "candidate_ns": 1000.0,
                 "change_percent": null, "status": "unchanged", "samples": [10, 10]}
            ],
            "unmeasured": [{"id": "attention/cpu", "status": "failed", "error": "boom"}]
        });
        let page = ComparisonPage::from_json(&detail);
        assert_eq!(page.rows.len(), 2);
        let r = &page.rows[0];
        assert_eq!(
            (
                r.status.as_str(),
                r.change.as_str(),
                r.ci.as_str(),
                r.q.as_str()
            ),
            (
                "degraded",
                format_percent(Some(20.0)).as_str(),
                "[+15.0, +25.0]",
                "1.00e-3"
            )
        );
        assert_eq!(
            page.rows[1].id, "<b>x</b>",
            "kept as text, escaped by the page"
        );
        assert_eq!(page.chart.y.categories, ["gemm/cpu/f32/64"]);
        assert_eq!(page.unmeasured[0].error, "boom");
        assert_eq!(page.verdict, "critical");
    }
}
