//! The sweep page (`/sweeps`, the sweep section of `report.html`, `stackbench sweep-report`):
//! the newest model sweep of each machine, the same selection `stackbench recommend` makes,
//! drawn as the hardware comparison (the fastest measured cell of each model per machine),
//! throughput against batch size and peak memory against sequence length, with the
//! recommendation matrix for the asked SLOs and ranking and each sweep's compatibility map.
//!
//! Every value is a measured cell of a stored run: a machine that did not measure a model
//! has no bar (and "no data" in the matrix), a batch or sequence length a series did not
//! measure is a gap in its line, and nothing is interpolated or carried across hardware.

use super::chart::{Axis, Chart, Point, Scale, Series, Style, TickFormat, break_at_missing};
use crate::analysis::compatibility::{CellStatus, CompatibilityMap};
use crate::analysis::prices::PriceList;
use crate::analysis::recommend::{
    Candidate, RecommendError, Recommendation, Request, Verdict, candidates, newest_sweeps,
    recommend,
};
use crate::report::recommend::score_text;
use crate::results::RunRecord;
use serde::Serialize;
use std::collections::BTreeMap;

/// The `schema` field of the page's JSON (schemas/sweep-report.schema.json).
pub const SWEEP_REPORT_SCHEMA: &str = "stackbench.sweep-report.v1";

/// The note a cell's peak memory is in (`scripts/components/models.py`).
pub const MEMORY_PEAK_NOTE: &str = "memory_peak_bytes";

/// What a gap in a line says when hovered.
const NOT_MEASURED: &str = "not measured";

/// One outcome of a sweep's compatibility map.
#[derive(Clone, Debug, Serialize)]
pub struct CompatibilityRow {
    pub id: String,
    /// `measured`, `failed`, `skipped` or `missing`.
    pub outcome: &'static str,
    /// The figures of a measured cell, the error of a failed one, the reason of a skip.
    pub detail: String,
}

/// One machine's newest sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepHardware {
    pub fingerprint: String,
    pub device: String,
    pub run_id: String,
    pub timestamp: String,
    pub measured: usize,
    pub failed: usize,
    pub skipped: usize,
    pub compatibility: Vec<CompatibilityRow>,
}

/// A matrix cell as the page shows it: the verdict's status and its text (never blank).
#[derive(Clone, Debug, Serialize)]
pub struct MatrixCell {
    /// The [`Verdict`]'s tag: `best`, `no_cell_meets_slo`, `not_ranked`, `no_data`.
    pub status: String,
    pub text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct MatrixRow {
    pub model: String,
    pub phase: String,
    /// In the order of [`SweepPage::matrix_columns`].
    pub cells: Vec<MatrixCell>,
    pub pick: MatrixCell,
}

#[derive(Clone, Debug, Serialize)]
pub struct SweepPage {
    pub schema: String,
    /// The machines, each with its newest sweep (a sweep that measured nothing is listed,
    /// with its map, but has no column in the matrix).
    pub hardware: Vec<SweepHardware>,
    /// The fastest measured cell of each model and phase per machine, one chart per rate
    /// unit (tokens/s and samples/s are not one axis).
    pub hardware_charts: Vec<Chart>,
    /// Throughput against batch size per model, precision and phase: one series per
    /// backend, machine and sequence length.
    pub batch_charts: Vec<Chart>,
    /// Peak memory against sequence length per model, precision and phase: one series per
    /// backend, machine and batch size.
    pub memory_charts: Vec<Chart>,
    /// `device (fingerprint)` per column of the matrix.
    pub matrix_columns: Vec<String>,
    pub matrix: Vec<MatrixRow>,
    /// Under the matrix: each row's basis where serve rows exist, and the rows left out
    /// ([`Recommendation::basis_lines`]).
    pub basis: Vec<String>,
    /// The recommendation the matrix shows, whole, as `stackbench recommend --format json`.
    pub recommendation: Recommendation,
}

impl SweepPage {
    /// The page over every stored run (as `RunStore::load_all` returns them): the newest
    /// sweep per machine, and the recommendation for `request`. Errors as `recommend` does:
    /// no measured cell, or a model the store does not hold.
    pub fn of(
        runs: &[RunRecord],
        request: &Request,
        prices: &dyn PriceList,
    ) -> Result<SweepPage, RecommendError> {
        let recommendation = recommend(runs, request, prices)?;
        let sweeps = newest_sweeps(runs);
        let wanted = |c: &Candidate| request.models.is_empty() || request.models.contains(&c.model);
        let cells: Vec<Candidate> = sweeps
            .iter()
            .flat_map(|run| candidates(run, prices))
            .filter(wanted)
            .collect();
        let hardware = sweeps.iter().map(|run| sweep_hardware(run)).collect();
        let matrix = recommendation
            .rows
            .iter()
            .map(|row| MatrixRow {
                model: row.model.clone(),
                phase: row.phase.clone(),
                cells: row
                    .cells
                    .iter()
                    .map(|v| matrix_cell(&recommendation, v, false))
                    .collect(),
                pick: matrix_cell(&recommendation, &row.pick, true),
            })
            .collect();
        Ok(SweepPage {
            schema: SWEEP_REPORT_SCHEMA.into(),
            hardware,
            hardware_charts: hardware_charts(&recommendation, &cells),
            batch_charts: batch_charts(&cells),
            memory_charts: memory_charts(&cells),
            matrix_columns: recommendation
                .hardware
                .iter()
                .map(|h| format!("{} ({})", h.device, h.fingerprint))
                .collect(),
            matrix,
            basis: recommendation.basis_lines(),
            recommendation,
        })
    }

    /// Every chart of the page, in the order the page shows them.
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.hardware_charts
            .iter()
            .chain(&self.batch_charts)
            .chain(&self.memory_charts)
    }
}

fn matrix_cell(rec: &Recommendation, verdict: &Verdict, with_device: bool) -> MatrixCell {
    let status = match verdict {
        Verdict::Best { .. } => "best",
        Verdict::NoCellMeetsSlo { .. } => "no_cell_meets_slo",
        Verdict::NotRanked { .. } => "not_ranked",
        Verdict::NoData => "no_data",
    };
    let mut text = score_text(rec, verdict);
    if !with_device && let Verdict::Best { cell, .. } = verdict {
        // The column names the machine already.
        text = text.replacen(&format!(" on {}", cell.device), "", 1);
    }
    MatrixCell {
        status: status.into(),
        text,
    }
}

fn sweep_hardware(run: &RunRecord) -> SweepHardware {
    let device = crate::analysis::recommend::sweep_device(run);
    let map = CompatibilityMap::from_run(run, "models", &[], &device);
    let (measured, failed, skipped, _) = map.counts();
    SweepHardware {
        fingerprint: run.fingerprint.clone().unwrap_or_else(|| "unknown".into()),
        device,
        run_id: run.run_id.clone(),
        timestamp: run.timestamp.clone(),
        measured,
        failed,
        skipped,
        compatibility: map
            .cells
            .into_iter()
            .map(|c| CompatibilityRow {
                id: c.id,
                outcome: c.status.name(),
                detail: match c.status {
                    CellStatus::Measured(d) | CellStatus::Failed(d) | CellStatus::Skipped(d) => d,
                    CellStatus::Missing => {
                        "the run holds nothing about it (interrupted before it)".into()
                    }
                },
            })
            .collect(),
    }
}

/// `2000.0 tokens/s`: a rate as every view of the page prints it.
pub fn rate_text(rate: f64, unit: &str) -> String {
    format!("{rate:.1} {unit}")
}

/// A chart id from its parts: only characters that are safe in an element id and a URL
/// fragment.
fn chart_id(parts: &[&str]) -> String {
    parts
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One bar chart per rate unit: categories are the matrix's rows of that unit, one series
/// per machine, each bar the fastest measured cell of that model and phase there.
fn hardware_charts(rec: &Recommendation, cells: &[Candidate]) -> Vec<Chart> {
    let mut units: Vec<&str> = cells.iter().map(|c| c.rate_unit.as_str()).collect();
    units.sort_unstable();
    units.dedup();
    units
        .into_iter()
        .map(|unit| {
            let rows: Vec<(&str, &str)> = rec
                .rows
                .iter()
                .filter(|r| {
                    cells
                        .iter()
                        .any(|c| c.model == r.model && c.phase == r.phase && c.rate_unit == unit)
                })
                .map(|r| (r.model.as_str(), r.phase.as_str()))
                .collect();
            let series = rec
                .hardware
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let points = rows
                        .iter()
                        .enumerate()
                        .filter_map(|(slot, (model, phase))| {
                            let best = cells
                                .iter()
                                .filter(|c| {
                                    c.hardware == h.fingerprint
                                        && c.model == *model
                                        && c.phase == *phase
                                })
                                .max_by(|a, b| a.rate.total_cmp(&b.rate))?;
                            Some(Point::measured(
                                slot as f64,
                                best.rate,
                                format!("{} ({})", rate_text(best.rate, unit), best.axes()),
                            ))
                        })
                        .collect();
                    Series::new(
                        format!("{} ({})", h.device, h.fingerprint),
                        Style::Bar,
                        points,
                    )
                    .coloured(super::chart::palette(i))
                })
                .collect();
            let x = Axis::new(
                format!("{unit}, fastest measured cell"),
                Scale::Linear,
                TickFormat::Number,
            );
            let mut y = Axis::new("model", Scale::Category, TickFormat::Number);
            y.categories = rows.iter().map(|(m, p)| format!("{m} {p}")).collect();
            Chart {
                id: chart_id(&["sweep-hardware", unit]),
                title: format!("Hardware comparison: the fastest measured cell per model ({unit})"),
                x,
                y,
                series,
                marks: Vec::new(),
                note: "A machine without a bar measured nothing of that model (no data).".into(),
            }
        })
        .collect()
}

/// The cells grouped by (model, precision, phase), in that order.
fn by_workload(cells: &[Candidate]) -> BTreeMap<(&str, &str, &str), Vec<&Candidate>> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Candidate>> = BTreeMap::new();
    for c in cells {
        groups
            .entry((&c.model, &c.precision, &c.phase))
            .or_default()
            .push(c);
    }
    groups
}

/// Series of `cells` keyed by `key`, each point (x, y) where `y` reports a value; points in
/// x order, a gap wherever another series of the chart measured and this one did not.
fn line_series(
    cells: &[&Candidate],
    key: impl Fn(&Candidate) -> String,
    xy: impl Fn(&Candidate) -> Option<(f64, f64, String)>,
) -> Vec<Series> {
    let mut grouped: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for c in cells {
        if let Some((x, y, text)) = xy(c) {
            grouped.entry(key(c)).or_default().push(Point {
                run: Some(c.run_id.clone()),
                ..Point::measured(x, y, text)
            });
        }
    }
    let mut series: Vec<Series> = grouped
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Series::new(name, Style::Line, points).coloured(super::chart::palette(i))
        })
        .collect();
    break_at_missing(&mut series, NOT_MEASURED);
    series
}

fn seq_text(seq: Option<u64>) -> String {
    seq.map_or("fixed input".into(), |s| format!("seq {s}"))
}

fn batch_charts(cells: &[Candidate]) -> Vec<Chart> {
    by_workload(cells)
        .into_iter()
        .map(|((model, precision, phase), group)| {
            let unit = group[0].rate_unit.clone();
            let series = line_series(
                &group,
                |c| format!("{} on {}, {}", c.backend, c.device, seq_text(c.seq)),
                |c| {
                    let text = format!("{} at batch {}", rate_text(c.rate, &c.rate_unit), c.batch);
                    Some((c.batch as f64, c.rate, text))
                },
            );
            Chart {
                id: chart_id(&["sweep-batch", model, precision, phase]),
                title: format!("{model} {precision} {phase}: throughput by batch size"),
                x: Axis::new("batch size", Scale::Log2, TickFormat::Number),
                y: Axis::new(unit, Scale::Linear, TickFormat::Number),
                series,
                marks: Vec::new(),
                note: String::new(),
            }
        })
        .collect()
}

/// Peak memory against sequence length, for the workloads that have a sequence axis.
fn memory_charts(cells: &[Candidate]) -> Vec<Chart> {
    by_workload(cells)
        .into_iter()
        .filter(|(_, group)| group.iter().any(|c| c.seq.is_some()))
        .map(|((model, precision, phase), group)| {
            let series = line_series(
                &group,
                |c| format!("{} on {}, batch {}", c.backend, c.device, c.batch),
                |c| {
                    let seq = c.seq?;
                    let peak = *c.figures.get(MEMORY_PEAK_NOTE)?;
                    Some((
                        seq as f64,
                        peak,
                        format!("{} at seq {seq}", bytes_text(peak)),
                    ))
                },
            );
            Chart {
                id: chart_id(&["sweep-memory", model, precision, phase]),
                title: format!("{model} {precision} {phase}: peak memory by sequence length"),
                x: Axis::new("sequence length", Scale::Log2, TickFormat::Number),
                y: Axis::new("peak memory", Scale::Linear, TickFormat::Bytes),
                series,
                marks: Vec::new(),
                note: format!("no measured cell reported {MEMORY_PEAK_NOTE}"),
            }
        })
        .map(|mut chart| {
            // The note explains an empty chart; under a drawn one it would be wrong.
            if !chart.is_empty() {
                chart.note.clear();
            }
            chart
        })
        .collect()
}

/// `1.50 GiB`: a byte count in binary units.
pub fn bytes_text(bytes: f64) -> String {
    const UNITS: [(&str, f64); 4] = [
        ("TiB", 1_099_511_627_776.0),
        ("GiB", 1_073_741_824.0),
        ("MiB", 1_048_576.0),
        ("KiB", 1024.0),
    ];
    UNITS
        .iter()
        .find(|(_, size)| bytes.abs() >= *size)
        .map_or(format!("{bytes:.0} B"), |(unit, size)| {
            format!("{:.2} {unit}", bytes / size)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::recommend::{HardwareColumn, ModelRow, RECOMMEND_SCHEMA, Rank};

    fn cell(hardware: &str, backend: &str, batch: u64, seq: Option<u64>, rate: f64) -> Candidate {
        let mut figures = BTreeMap::new();
        figures.insert("tokens_per_s".to_string(), rate);
        if let Some(s) = seq {
            figures.insert(MEMORY_PEAK_NOTE.to_string(), (batch * s * 1024) as f64);
        }
        Candidate {
            benchmark_id: format!("models/{backend}/m-fp32-decode/b{batch}"),
            run_id: format!("run-{hardware}"),
            model: "m".into(),
            phase: "decode".into(),
            hardware: hardware.into(),
            device: format!("dev-{hardware}"),
            backend: backend.into(),
            precision: "fp32".into(),
            batch,
            seq,
            rate_unit: "tokens/s".into(),
            rate,
            figures,
            price: None,
            energy_j_per_unit: None,
            power_w: None,
            offered_rps: None,
        }
    }

    fn recommendation(hardware: &[&str], cells: Vec<Verdict>) -> Recommendation {
        Recommendation {
            schema: RECOMMEND_SCHEMA.into(),
            slos: Vec::new(),
            rank: Rank::Throughput,
            price_basis: "no prices given".into(),
            hardware: hardware
                .iter()
                .map(|h| HardwareColumn {
                    fingerprint: h.to_string(),
                    device: format!("dev-{h}"),
                    run_id: format!("run-{h}"),
                    price: None,
                })
                .collect(),
            rows: vec![ModelRow {
                model: "m".into(),
                phase: "decode".into(),
                cells,
                pick: Verdict::NoData,
                basis: crate::analysis::recommend::ISOLATED_BASIS.into(),
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn a_machine_that_measured_nothing_of_a_model_has_no_bar_and_the_fastest_cell_is_the_bar() {
        let cells = vec![
            cell("a", "torch", 1, Some(128), 100.0),
            cell("a", "torch", 8, Some(128), 700.0),
            cell("a", "onnxruntime", 8, Some(128), 300.0),
        ];
        let rec = recommendation(&["a", "b"], vec![Verdict::NoData, Verdict::NoData]);
        let charts = hardware_charts(&rec, &cells);
        assert_eq!(charts.len(), 1, "one rate unit, one chart");
        let chart = &charts[0];
        assert_eq!(chart.y.categories, ["m decode"]);
        assert_eq!(chart.series.len(), 2);
        assert_eq!(chart.series[0].points.len(), 1);
        assert_eq!(chart.series[0].points[0].y, Some(700.0));
        assert!(
            chart.series[0].points[0]
                .text
                .contains("torch fp32 b8 s128")
        );
        assert!(
            chart.series[1].points.is_empty(),
            "machine b measured nothing: no bar, nothing made up"
        );
    }

    #[test]
    fn lines_are_per_backend_machine_and_fixed_axis_and_break_where_nothing_was_measured() {
        let cells = vec![
            cell("a", "torch", 1, Some(128), 100.0),
            cell("a", "torch", 2, Some(128), 190.0),
            cell("a", "torch", 4, Some(128), 350.0),
            cell("a", "onnxruntime", 1, Some(128), 80.0),
            cell("a", "onnxruntime", 4, Some(128), 200.0),
            cell("a", "torch", 1, Some(512), 90.0),
        ];
        let charts = batch_charts(&cells);
        assert_eq!(charts.len(), 1);
        let names: Vec<&str> = charts[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "onnxruntime on dev-a, seq 128",
                "torch on dev-a, seq 128",
                "torch on dev-a, seq 512"
            ]
        );
        let ort: Vec<(f64, Option<f64>)> = charts[0].series[0]
            .points
            .iter()
            .map(|p| (p.x, p.y))
            .collect();
        assert_eq!(ort, [(1.0, Some(80.0)), (2.0, None), (4.0, Some(200.0))]);

        let memory = memory_charts(&cells);
        assert_eq!(memory.len(), 1);
        let torch_b1 = memory[0]
            .series
            .iter()
            .find(|s| s.name == "torch on dev-a, batch 1")
            .expect("a series per backend, machine and batch");
        let xy: Vec<(f64, Option<f64>)> = torch_b1.points.iter().map(|p| (p.x, p.y)).collect();
        assert_eq!(
            xy,
            [(128.0, Some(131072.0)), (512.0, Some(524288.0))],
            "peak memory exactly as measured"
        );
        assert!(memory[0].note.is_empty());
    }

    #[test]
    fn a_fixed_input_model_has_no_memory_by_sequence_chart_and_an_unreported_peak_says_so() {
        let mut vision = cell("a", "torch", 1, None, 50.0);
        vision.model = "v".into();
        let mut no_peak = cell("a", "torch", 1, Some(64), 10.0);
        no_peak.figures.remove(MEMORY_PEAK_NOTE);
        let memory = memory_charts(&[vision, no_peak]);
        assert_eq!(memory.len(), 1, "only the model with a sequence axis");
        assert!(memory[0].is_empty());
        assert!(
            memory[0].note.contains(MEMORY_PEAK_NOTE),
            "{}",
            memory[0].note
        );
    }

    #[test]
    fn matrix_cells_are_never_blank() {
        let best = Verdict::Best {
            cell: Box::new(cell("a", "torch", 8, Some(128), 700.0)),
            score: 700.0,
        };
        let rec = recommendation(&["a", "b"], vec![best.clone(), Verdict::NoData]);
        let column = matrix_cell(&rec, &best, false);
        assert_eq!(column.status, "best");
        assert!(!column.text.contains("dev-a"), "{}", column.text);
        assert!(matrix_cell(&rec, &best, true).text.contains("on dev-a"));
        let none = matrix_cell(&rec, &Verdict::NoData, false);
        assert_eq!(
            (none.status.as_str(), none.text.as_str()),
            ("no_data", "no data")
        );
        assert_eq!(
            chart_id(&["sweep-batch", "a b/<c>", "fp32"]),
            "sweep-batch-a_b__c_-fp32"
        );
    }
}
