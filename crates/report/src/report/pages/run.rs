//! One run's page: what the machine achieved, drawn as the dashboard draws it (bandwidth
//! against size, GEMM per precision against its peak, GEMM against size with the
//! roofline, tensor ops, attention, components and their four charts), how it moved
//! against the run before it on the same hardware, what was not measured and why, its
//! telemetry and notes. The numbers come from the dashboard's model (`crate::view`), so
//! the page and the terminal agree.
//!
//! On a size axis a series' line breaks at every size the chart shows that the series did
//! not measure, and at every size the run recorded as skipped or failed for it: the line
//! never suggests a value in between.

use super::chart::{
    Axis, Chart, GREEN, GREY, Point, RED, Scale, Series, Style, TickFormat, break_at_missing,
    dtype_colour, palette,
};
use super::runs::run_suites;
use crate::analysis::trends::{NotMeasured, not_measured};
use crate::report::format::{format_ns, format_percent};
use crate::results::RunRecord;
use crate::units::format_number;
use crate::view::component_model::{
    ComponentCharts, SdpaChart, SdpaOutcome, ZERO_SEGMENTS, flop_unit,
};
use crate::view::model::{Measured, changes, log2_size, measured, run_name};
use crate::workload::family::{
    ATTENTION, COMPONENTS, Family, GEMM, IdParts, MEMORY_BANDWIDTH, TENSOR_OPS,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// The run's identity, as the runs list shows it.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub run_id: String,
    pub timestamp: String,
    pub label: Option<String>,
    pub git_revision: Option<String>,
    pub git_dirty: Option<bool>,
    pub hardware: Option<String>,
    pub suites: Vec<String>,
    pub benchmarks: usize,
}

impl RunInfo {
    pub fn name(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.run_id.clone())
    }
}

/// A table of text cells.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunPage {
    pub run: RunInfo,
    /// The run compared against (the previous one on the same hardware), if any.
    pub before: Option<String>,
    /// Every chart, in page order; an empty one is shown as "not in this run".
    pub charts: Vec<Chart>,
    pub not_measured: Vec<NotMeasured>,
    /// One line when no benchmark of the run carries accuracy, else a table of each
    /// benchmark's error against its float64 reference beside its rate.
    pub accuracy_line: Option<String>,
    pub accuracy: Table,
    /// One line when the run read no telemetry at all, else a table.
    pub telemetry_line: Option<String>,
    pub telemetry: Table,
    /// Notes on single benchmarks (a peak the figure exceeded, ...): (id, note).
    pub notes: Vec<(String, String)>,
}

impl RunPage {
    /// The page of `run`, compared with `before` when given.
    pub fn of(run: &RunRecord, before: Option<&RunRecord>) -> RunPage {
        let all = measured(run);
        let missing = not_measured(run);
        let mut charts = if has_stackbench_family(&all) || all.is_empty() {
            family_charts(run, &all, &missing)
        } else {
            vec![own_benchmarks(&all)]
        };
        if let Some(before) = before {
            charts.push(change_bars(before, run, 20));
        }
        let (telemetry_line, telemetry) = telemetry(run);
        let (accuracy_line, accuracy) = match crate::view::model::accuracy_table(run) {
            Err(line) => (Some(line), Table::default()),
            Ok(rows) => (
                None,
                Table {
                    headers: crate::view::model::ACCURACY_HEADERS
                        .map(String::from)
                        .to_vec(),
                    rows,
                },
            ),
        };
        RunPage {
            run: RunInfo {
                run_id: run.run_id.clone(),
                timestamp: run.timestamp.clone(),
                label: run.label.clone(),
                git_revision: run.git_revision.clone(),
                git_dirty: run.git_dirty,
                hardware: run.fingerprint.clone(),
                suites: run_suites(run),
                benchmarks: run.benchmarks.len(),
            },
            before: before.map(|b| b.run_id.clone()),
            charts,
            not_measured: missing,
            accuracy_line,
            accuracy,
            telemetry_line,
            telemetry,
            notes: crate::view::model::benchmark_notes(run)
                .into_iter()
                .map(|(id, note)| (id.to_string(), note.to_string()))
                .collect(),
        }
    }

    /// The page of the newest of `runs`, against the newest run before it on the same
    /// hardware.
    pub fn latest_of(runs: &[RunRecord]) -> Option<RunPage> {
        let latest = runs.iter().max_by_key(|r| r.created_unix_ms)?;
        let before = runs
            .iter()
            .filter(|r| {
                r.fingerprint == latest.fingerprint && r.created_unix_ms < latest.created_unix_ms
            })
            .max_by_key(|r| r.created_unix_ms);
        Some(RunPage::of(latest, before))
    }
}

fn chart(id: &str, title: &str, x: Axis, y: Axis, series: Vec<Series>) -> Chart {
    Chart {
        id: id.into(),
        title: title.into(),
        x,
        y,
        series,
        marks: Vec::new(),
        note: String::new(),
    }
}

/// A horizontal bar chart: one category per label (first at the top), one series per
/// legend entry; every series shares one stack so a category shows one bar.
fn bars(
    id: &str,
    title: &str,
    value_title: &str,
    rows: Vec<(String, f64, &str, String, String)>,
) -> Chart {
    let categories: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    let mut series: Vec<Series> = Vec::new();
    for (i, (_, value, colour, hover, legend)) in rows.into_iter().enumerate() {
        let point = Point::measured(i as f64, value, hover);
        match series.iter_mut().find(|s| s.name == legend) {
            Some(s) => s.points.push(point),
            None => {
                let mut s = Series::new(legend, Style::Bar, vec![point]).coloured(colour);
                s.stack = Some("one".into());
                series.push(s);
            }
        }
    }
    let mut y = Axis::new("", Scale::Category, TickFormat::Number);
    y.categories = categories;
    chart(
        id,
        title,
        Axis::new(value_title, Scale::Linear, TickFormat::Number),
        y,
        series,
    )
}

/// Rate against size, one series per backend/function, with gaps where a series did not
/// measure a size (another series did, or the run recorded it skipped or failed).
fn rate_lines(
    id: &str,
    measured: &[&Measured],
    missing: &[NotMeasured],
    title: &str,
    bytes: bool,
    y_title: &str,
) -> Chart {
    let unit = y_title
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .trim_matches(['(', ')']);
    let mut by_series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    for m in measured {
        if let (Some(x), Some(y)) = (log2_size(&m.family, &m.value), m.rate_value()) {
            let text = format!(
                "{} {unit} ({}) at {}",
                format_number(y),
                format_ns(m.median_ns),
                m.value
            );
            by_series
                .entry(m.series())
                .or_default()
                .push(Point::measured(x.exp2(), y, text));
        }
    }
    for n in missing {
        let parts = IdParts::split(&n.id);
        let series = format!("{}/{}", parts.backend, parts.function);
        if let (Some(points), Some(x)) = (
            by_series.get_mut(&series),
            log2_size(parts.family, parts.value),
        ) {
            points.push(Point::gap(x.exp2(), format!("{}: {}", n.outcome, n.reason)));
        }
    }
    let mut series: Vec<Series> = by_series
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            points.dedup_by(|a, b| a.x == b.x);
            Series::new(name, Style::Line, points).coloured(palette(i))
        })
        .collect();
    break_at_missing(&mut series, "not measured");
    let (x_title, ticks) = if bytes {
        ("size per array (bytes, log scale)", TickFormat::Bytes)
    } else {
        ("size (elements, log scale)", TickFormat::Elements)
    };
    chart(
        id,
        title,
        Axis::new(x_title, Scale::Log2, ticks),
        Axis::new(y_title, Scale::Linear, TickFormat::Number),
        series,
    )
}

/// Each peak as a flat reference line across the measured sizes of its series.
fn peak_lines(gemm: &[&Measured], chart: &mut Chart) {
    let mut peaks: BTreeMap<String, (f64, Vec<f64>)> = BTreeMap::new();
    for m in gemm {
        if let (Some(peak), Some(x)) = (m.peak(), log2_size(GEMM.name, &m.value)) {
            peaks
                .entry(format!("{} peak", m.series()))
                .or_insert((peak, Vec::new()))
                .1
                .push(x.exp2());
        }
    }
    for (name, (peak, xs)) in peaks {
        let (lo, hi) = xs
            .iter()
            .fold((f64::INFINITY, 0f64), |(l, h), x| (l.min(*x), h.max(*x)));
        let text = format!("peak {} GFLOP/s", format_number(peak));
        chart.series.push(
            Series::new(
                name,
                Style::Reference,
                vec![
                    Point::measured(lo, peak, text.clone()),
                    Point::measured(hi, peak, text),
                ],
            )
            .coloured(GREY),
        );
    }
}

fn rate_bars(id: &str, measured: &[&Measured], title: &str, value_title: &str) -> Chart {
    let rows = measured
        .iter()
        .map(|m| {
            let dtype = crate::view::model::dtype_of(&m.function).unwrap_or("other");
            let (value, hover) = match &m.rate {
                Some(r) => (
                    r.value,
                    format!("{:.2} {} ({})", r.value, r.unit, format_ns(m.median_ns)),
                ),
                None => (m.median_ns / 1e6, format_ns(m.median_ns)),
            };
            (
                format!("{} {} {}", m.backend, m.function, m.value),
                value,
                dtype_colour(dtype),
                hover,
                dtype.to_string(),
            )
        })
        .collect();
    bars(id, title, value_title, rows)
}

/// Best GEMM rate per backend and precision, beside its peak.
fn precision_bars(gemm: &[&Measured]) -> Chart {
    let mut best: BTreeMap<String, (f64, Option<f64>)> = BTreeMap::new();
    for m in gemm {
        if let Some(rate) = m.rate_value() {
            let e = best
                .entry(format!("{} {}", m.backend, m.function))
                .or_insert((0.0, None));
            if rate > e.0 {
                *e = (rate, m.peak());
            }
        }
    }
    let mut rows = Vec::new();
    for (label, (rate, peak)) in best {
        let dtype = label.rsplit(' ').next().unwrap_or_default().to_string();
        let percent = peak.map_or(String::new(), |p| {
            format!(" ({:.0} % of peak)", 100.0 * rate / p)
        });
        rows.push((
            label.clone(),
            rate,
            dtype_colour(&dtype),
            format!("{rate:.1} GFLOP/s{percent}"),
            "measured".to_string(),
        ));
        if let Some(p) = peak {
            rows.push((
                format!("{label} peak"),
                p,
                GREY,
                format!("{p:.1} GFLOP/s"),
                "peak".to_string(),
            ));
        }
    }
    bars(
        "run:gemm-precision",
        "GEMM: best measured per precision vs peak",
        "GFLOP/s",
        rows,
    )
}

/// Change per benchmark against the previous run: the `limit` most slowed (red) first,
/// then the `limit` most sped up (green), each beyond 1 %.
fn change_bars(before: &RunRecord, after: &RunRecord, limit: usize) -> Chart {
    let mut rows = changes(before, after);
    rows.sort_by(|a, b| b.3.total_cmp(&a.3));
    let slower = rows.iter().filter(|r| r.3 > 1.0).take(limit);
    let faster = rows.iter().rev().filter(|r| r.3 < -1.0).take(limit);
    let rows = slower
        .chain(faster)
        .map(|(id, old, new, change)| {
            let slower = *change > 0.0;
            (
                id.clone(),
                change.abs(),
                if slower { RED } else { GREEN },
                format!(
                    "{} → {} ({})",
                    format_ns(*old),
                    format_ns(*new),
                    format_percent(Some(*change))
                ),
                if slower {
                    "slower (after)"
                } else {
                    "faster (after)"
                }
                .to_string(),
            )
        })
        .collect();
    let title = format!(
        "Before {} → after {}: the most slowed, then the most sped up (beyond 1 %)",
        run_name(before),
        run_name(after)
    );
    bars(
        "run:before-after",
        &title,
        "|change| (% of before time)",
        rows,
    )
}

/// Time per call of each component benchmark, coloured by component.
fn component_bars(components: &[&Measured]) -> Chart {
    let mut backends: Vec<&str> = components.iter().map(|m| m.backend.as_str()).collect();
    backends.dedup();
    let rows = components
        .iter()
        .map(|m| {
            let index = backends.iter().position(|b| *b == m.backend).unwrap_or(0);
            (
                format!("{} {} {}", m.backend, m.function, m.value),
                m.median_ns / 1e6,
                palette(index),
                format_ns(m.median_ns),
                m.backend.clone(),
            )
        })
        .collect();
    bars(
        "run:components",
        "Components: time per call",
        "time per call (ms)",
        rows,
    )
}

/// Whether any benchmark of the run is one of stackbench's families. A run of another
/// crate's benches (the gate records those) has none: its page shows its own benchmarks,
/// not a list of stackbench charts it could never have.
fn has_stackbench_family(all: &[Measured]) -> bool {
    all.iter().any(|m| {
        crate::workload::family::FAMILIES
            .iter()
            .any(|f| f.name == m.family)
    })
}

/// A foreign crate's benchmarks: time per iteration of each, by full id.
fn own_benchmarks(all: &[Measured]) -> Chart {
    let rows = all
        .iter()
        .map(|m| {
            (
                m.id.clone(),
                m.median_ns,
                palette(0),
                format_ns(m.median_ns),
                "median".to_string(),
            )
        })
        .collect();
    let mut chart = bars(
        "run:own",
        "Benchmarks: median time per iteration",
        "median time per iteration",
        rows,
    );
    chart.x.ticks = TickFormat::Duration;
    chart
}

/// stackbench's family charts and the components charts.
fn family_charts(run: &RunRecord, all: &[Measured], missing: &[NotMeasured]) -> Vec<Chart> {
    let family = |f: Family| {
        all.iter()
            .filter(|m| m.family == f.name)
            .collect::<Vec<_>>()
    };
    // Integer GEMMs are TOPS, not GFLOP/s: their own chart, never on the FLOP axes.
    let (int8, gemm): (Vec<&Measured>, Vec<&Measured>) = family(GEMM).into_iter().partition(|m| {
        m.rate
            .as_ref()
            .is_some_and(|r| r.unit == crate::units::RateUnit::TopsPerSecond)
    });
    let mut gemm_lines = rate_lines(
        "run:gemm-size",
        &gemm,
        missing,
        "GEMM throughput vs size (peaks dashed grey)",
        false,
        "throughput (GFLOP/s)",
    );
    peak_lines(&gemm, &mut gemm_lines);
    let mut charts = vec![
        rate_lines(
            "run:memory",
            &family(MEMORY_BANDWIDTH),
            missing,
            "Memory bandwidth vs size",
            true,
            "bandwidth (GB/s)",
        ),
        precision_bars(&gemm),
        gemm_lines,
        rate_bars(
            "run:tensor-ops",
            &family(TENSOR_OPS),
            "Tensor ops: bandwidth",
            "GB/s",
        ),
        rate_bars(
            "run:attention",
            &family(ATTENTION),
            "Attention kernels",
            "GFLOP/s",
        ),
        component_bars(&family(COMPONENTS)),
    ];
    if !int8.is_empty() {
        charts.push(rate_lines(
            "run:gemm-int8",
            &int8,
            missing,
            "INT8 GEMM throughput vs size",
            false,
            "throughput (TOPS)",
        ));
    }
    let components = ComponentCharts::from_run(run, all);
    charts.push(matmul(&components));
    charts.push(sdpa(components.sdpa.as_ref()));
    charts.push(serving(&components));
    charts.push(zero(&components));
    charts
}

fn matmul(charts: &ComponentCharts) -> Chart {
    let (factor, unit) = charts.matmul_unit();
    let mut series: Vec<Series> = charts
        .matmul
        .iter()
        .map(|(dtype, points)| {
            let points = points
                .iter()
                .map(|&(x, y)| {
                    let n = x.exp2();
                    Point::measured(
                        n,
                        y * factor,
                        format!("n={n:.0}: {} {unit}", format_number(y * factor)),
                    )
                })
                .collect();
            Series::new(dtype.clone(), Style::Line, points).coloured(dtype_colour(dtype))
        })
        .collect();
    break_at_missing(&mut series, "not measured");
    chart(
        "run:pytorch-matmul",
        "PyTorch matmul throughput vs size, per dtype",
        Axis::new(
            "matrix side n (n×n×n, log scale)",
            Scale::Log2,
            TickFormat::Elements,
        ),
        Axis::new(
            format!("throughput ({unit})"),
            Scale::Linear,
            TickFormat::Number,
        ),
        series,
    )
}

/// The SDPA bars; a refused or failed backend is a labelled empty bar whose hover (and
/// the chart's note) gives torch's reason.
fn sdpa(sdpa: Option<&SdpaChart>) -> Chart {
    let Some(sdpa) = sdpa else {
        return bars("run:sdpa", "SDPA backends", "TFLOP/s", Vec::new());
    };
    let (factor, unit) = flop_unit(sdpa.max_tflops());
    let rows = sdpa
        .backends
        .iter()
        .map(|b| match &b.outcome {
            SdpaOutcome::Measured { tflops, median_ns } => (
                b.name.clone(),
                tflops * factor,
                palette(0),
                format!(
                    "{} {unit} ({})",
                    format_number(tflops * factor),
                    format_ns(*median_ns)
                ),
                "measured".to_string(),
            ),
            SdpaOutcome::Refused { reason } => (
                format!("{} (refused)", b.name),
                0.0,
                "#c88c00",
                format!("refused: {reason}"),
                "refused".to_string(),
            ),
            SdpaOutcome::Failed { error } => (
                format!("{} (FAILED)", b.name),
                0.0,
                RED,
                format!("failed: {error}"),
                "failed".to_string(),
            ),
        })
        .collect();
    let mut c = bars(
        "run:sdpa",
        &format!("SDPA backends, {}", sdpa.shape),
        unit,
        rows,
    );
    let mut note = format!("SDPA backends at {}", sdpa.shape);
    for (reason, names) in sdpa.not_run() {
        note.push_str(&format!("; {}: {reason}", names.join(", ")));
    }
    c.note = note;
    c
}

fn serving(charts: &ComponentCharts) -> Chart {
    let mut series = Vec::new();
    for (i, (shape, points)) in charts.serving.iter().enumerate() {
        let points = points
            .iter()
            .map(|p| {
                let mut text = format!(
                    "{shape} batch {}: {} tokens/s",
                    p.batch,
                    format_number(p.tokens_per_s)
                );
                let range = match (p.at_p99, p.at_p50) {
                    (Some(lo), Some(hi)) => {
                        text.push_str(&format!(
                            "; p99 call {} .. p50 call {} tokens/s",
                            format_number(lo),
                            format_number(hi)
                        ));
                        Some([lo, hi])
                    }
                    _ => None,
                };
                Point {
                    range,
                    ..Point::measured(p.batch as f64, p.tokens_per_s, text)
                }
            })
            .collect();
        series.push(Series::new(shape.clone(), Style::Line, points).coloured(palette(i)));
    }
    break_at_missing(&mut series, "not measured");
    let mut c = chart(
        "run:vllm",
        "vLLM output tokens/s vs batch",
        Axis::new(
            "batch (requests, log scale)",
            Scale::Log2,
            TickFormat::Elements,
        ),
        Axis::new("output tokens/s", Scale::Linear, TickFormat::Number),
        series,
    );
    c.note = "Each bar spans the tokens/s of a call at the p99 latency (bottom) to one at the p50 \
              latency (top): p99..p50 call latency."
        .into();
    c
}

fn zero(charts: &ComponentCharts) -> Chart {
    let colours = [palette(0), palette(1), palette(2), GREY];
    let categories: Vec<String> = charts.zero.iter().map(|z| z.label.clone()).collect();
    let series = ZERO_SEGMENTS
        .iter()
        .zip(colours)
        .enumerate()
        .map(|(part, (name, colour))| {
            let points = charts
                .zero
                .iter()
                .enumerate()
                .filter_map(|(row, z)| {
                    let mib = z.memory.segments()[part] / 1_048_576.0;
                    let total = z.memory.segments().iter().sum::<f64>() / 1_048_576.0;
                    (mib.is_finite() && mib > 0.0).then(|| {
                        Point::measured(
                            row as f64,
                            mib,
                            format!(
                                "{}: {name} {} MiB (total {} MiB)",
                                z.label,
                                format_number(mib),
                                format_number(total)
                            ),
                        )
                    })
                })
                .collect();
            let mut s = Series::new(*name, Style::Bar, points).coloured(colour);
            s.stack = Some("memory".into());
            s
        })
        .collect();
    let mut y = Axis::new("", Scale::Category, TickFormat::Number);
    y.categories = categories;
    chart(
        "run:deepspeed",
        "DeepSpeed device memory by ZeRO stage",
        Axis::new("device memory (MiB)", Scale::Linear, TickFormat::Number),
        y,
        series,
    )
}

/// Each benchmark's power, temperature, clock and utilisation, with "not read" and the
/// reason for each quantity that was not; one line when the run read none at all.
fn telemetry(run: &RunRecord) -> (Option<String>, Table) {
    use crate::view::telemetry::{QUANTITIES, run_telemetry};
    let telemetry = run_telemetry(run);
    if let Some(line) = telemetry.one_line() {
        return (Some(line), Table::default());
    }
    let mut headers = vec!["benchmark".to_string(), "source".to_string()];
    headers.extend(QUANTITIES.iter().map(|q| q.to_string()));
    let rows = telemetry
        .rows()
        .iter()
        .map(|row| {
            let source = if row.source.is_empty() {
                "none"
            } else {
                &row.source
            };
            let mut cells = vec![row.id.clone(), source.to_string()];
            cells.extend(row.readings.iter().map(|r| r.cell()));
            cells
        })
        .collect();
    (None, Table { headers, rows })
}
