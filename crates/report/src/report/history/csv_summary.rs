//! `summary.csv`: one row per benchmark per hardware group, for spreadsheets.

use crate::analysis::trends::TrendReport;
use crate::report::rows::csv_text;
use crate::report::writer::WriteError;

#[derive(serde::Serialize)]
struct Row<'a> {
    fingerprint: &'a str,
    id: &'a str,
    status: &'static str,
    runs: usize,
    latest_ns: f64,
    reference_ns: Option<f64>,
    latest_change_percent: Option<f64>,
    baseline_ns: Option<f64>,
    latest_vs_baseline_percent: Option<f64>,
    slope_percent_per_run: Option<f64>,
    noise_floor_percent: Option<f64>,
    change_points: usize,
    last_change_run: Option<&'a str>,
    last_change_percent: Option<f64>,
}

pub fn render(report: &TrendReport) -> Result<String, WriteError> {
    let rows: Vec<Row> = report
        .groups
        .iter()
        .flat_map(|g| g.benchmarks.iter().map(move |b| (g, b)))
        .map(|(g, b)| {
            let last = b.change_points.last();
            Row {
                fingerprint: &g.fingerprint,
                id: &b.id,
                status: b.status.as_str(),
                runs: b.points.len(),
                latest_ns: b.latest_ns,
                reference_ns: b.reference_ns,
                latest_change_percent: b.latest_change_percent,
                baseline_ns: b.baseline_ns,
                latest_vs_baseline_percent: b.latest_vs_baseline_percent,
                slope_percent_per_run: b.slope_percent_per_run,
                noise_floor_percent: b.noise_floor_percent,
                change_points: b.change_points.len(),
                last_change_run: last.map(|c| c.run_id.as_str()),
                last_change_percent: last.map(|c| c.change_percent),
            }
        })
        .collect();
    csv_text(&rows)
}
