//! The comparisons list and one comparison's page: the verdict, the same rows as the PR
//! comment's table (status, benchmark, baseline, candidate, change, 95 % CI, q,
//! throughput), the benchmarks that were not measured, and a chart of each changed
//! benchmark's change with its interval.
//!
//! A stored comparison keeps its full JSON (`comparison.json` as `compare`/`gate` wrote
//! it); the page reads it back as the typed [`Comparison`] (whose later lists default to
//! empty, so an older verdict still reads), the same value a live `compare` renders.

use super::chart::{Axis, Chart, GREEN, Point, RED, Scale, Series, Style, TickFormat, palette};
use crate::analysis::accuracy::AccuracyStatus;
use crate::analysis::{BenchComparison, Comparison, InstructionCounts};
use crate::report::format::{format_ns, format_percent};
use crate::results::{ComparisonRecord, ResultsError, RunStore};
use serde::Serialize;

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
    /// The raw numbers, for charts and API readers. A counted row has no times here (its
    /// change is of instructions; the cost model's estimates are not its base and head).
    pub baseline_ns: Option<f64>,
    pub candidate_ns: Option<f64>,
    /// A counted row's instructions (`gate --measure instructions`), which its change is of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<[u64; 2]>,
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
    /// The page of a stored comparison. A detail this version cannot read (hand-edited,
    /// or from a stackbench whose rows had another shape) gives the record's own fields
    /// and no rows, as an unreadable detail always did.
    pub fn from_record(record: &ComparisonRecord) -> ComparisonPage {
        let mut page = match serde_json::from_str::<Comparison>(&record.detail_json) {
            Ok(detail) => Self::from_comparison(&detail),
            Err(_) => Self::empty(),
        };
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

    fn empty() -> ComparisonPage {
        ComparisonPage {
            id: 0,
            kind: String::new(),
            baseline: String::new(),
            candidate: String::new(),
            baseline_run_id: None,
            candidate_run_id: None,
            verdict: String::new(),
            threshold_percent: None,
            rows: Vec::new(),
            unmeasured: Vec::new(),
            accuracy: Vec::new(),
            chart: change_chart(&[]),
        }
    }

    /// The page of a comparison, just made (`compare`, `gate`) or read back from
    /// `comparison.json`.
    pub fn from_comparison(c: &Comparison) -> ComparisonPage {
        let rows: Vec<ComparisonRow> = c
            .comparisons
            .iter()
            .map(|r| row(r, c.instruction_counts_of(&r.id)))
            .collect();
        let unmeasured = c
            .unmeasured
            .iter()
            .map(|u| UnmeasuredRow {
                id: u.id.clone(),
                status: u.status.as_str().to_string(),
                error: u.error.clone().unwrap_or_default(),
            })
            .collect();
        let accuracy = c
            .accuracy
            .iter()
            .map(|v| [accuracy_status(v.status), v.id.clone(), v.message.clone()])
            .collect();
        ComparisonPage {
            accuracy,
            baseline: c.baseline.clone(),
            candidate: c.candidate.clone(),
            verdict: c.summary.overall_status.as_str().to_string(),
            threshold_percent: Some(c.threshold_percent),
            chart: change_chart(&rows),
            rows,
            unmeasured,
            ..Self::empty()
        }
    }
}

/// The status as `comparison.json` writes it (`not_gated`), which the page has always shown.
fn accuracy_status(status: AccuracyStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// A row as the PR comment's `cells` formats it (crates/report/src/report/comparison/mod.rs). The page has
/// one table for every row, so a counted row's cells carry their unit: base and head in
/// instructions, the A/A jitter in the interval's column.
fn row(r: &BenchComparison, counts: Option<&InstructionCounts>) -> ComparisonRow {
    let change_percent = finite(r.change_percent);
    let mut change = format_percent(change_percent);
    if let Some(rel) = finite(r.relative_change_percent) {
        change.push_str(&format!(" (rel {})", format_percent(Some(rel))));
    }
    let ci = match r.ci95_percent {
        Some([lo, hi]) if lo.is_finite() && hi.is_finite() => format!("[{lo:+.1}, {hi:+.1}]"),
        _ => "n/a".into(),
    };
    let throughput = match &r.throughput {
        Some(t) if t.baseline.value.is_finite() && t.candidate.value.is_finite() => format!(
            "{:.2} → {:.2} {}",
            t.baseline.value, t.candidate.value, t.candidate.unit
        ),
        _ => String::new(),
    };
    let timed = ComparisonRow {
        status: r.status.as_str().to_string(),
        id: r.id.clone(),
        baseline: format_ns(r.baseline_ns),
        candidate: format_ns(r.candidate_ns),
        change,
        ci,
        q: finite(r.q_value).map_or("n/a".into(), |q| format!("{q:.2e}")),
        throughput,
        baseline_ns: finite(Some(r.baseline_ns)),
        candidate_ns: finite(Some(r.candidate_ns)),
        instructions: None,
        change_percent,
        samples: Some(r.samples.map(|n| n as u64)),
    };
    match counts {
        None => timed,
        Some(counts) => ComparisonRow {
            baseline: format!("{} instructions", counts.baseline),
            candidate: format!("{} instructions", counts.candidate),
            ci: match counts.jitter_tolerance {
                0 => "n/a".into(),
                t => format!("A/A jitter ±{t} instructions"),
            },
            baseline_ns: None,
            candidate_ns: None,
            instructions: Some([counts.baseline, counts.candidate]),
            ..timed
        },
    }
}

/// A number JSON can carry: `comparison.json` writes a non-finite one as null, so a live
/// comparison and its stored copy give the same page.
fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
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
            "schema": "stackbench.comparison.v1",
            "baseline": "main", "candidate": "pr",
            "hardware": {"baseline_fingerprint": null, "candidate_fingerprint": null, "different": false},
            "evidence": {"judged": 2, "failed": 0, "skipped": 0, "min_samples": [10, 10],
                         "benchmarks": [], "unusable": []},
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
        let detail: Comparison = serde_json::from_value(detail).expect("a comparison");
        let page = ComparisonPage::from_comparison(&detail);
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
