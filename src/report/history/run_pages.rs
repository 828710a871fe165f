//! The run pages of `report.html`: what the latest run achieved, drawn as the dashboard
//! draws it (bandwidth against size, GEMM per precision against its peak, GEMM against
//! size with the roofline, attention, components with their four charts in
//! `component_pages`) and how it moved against the run before it. Numbers come from the
//! dashboard's model, so the report and the terminal agree.

use super::charts::{
    BarSpec, BarsSpec, GREEN, GREY, LineSeriesSpec, LineSpec, RED, XScale, bar_chart, dtype_colour,
    figure, line_chart, palette,
};
use crate::report::format::{escape_html as escape, format_ns, format_percent};
use crate::results::RunRecord;
use crate::units::SizeUnit;
use crate::view::component_model::ComponentCharts;
use crate::view::model::{Measured, changes, log2_size, measured, run_name};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Rate against size, one series per backend/function.
fn rate_lines(measured: &[&Measured], title: &str, unit: SizeUnit, y_title: &str) -> LineSpec {
    let mut by_series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in measured {
        if let (Some(x), Some(y)) = (log2_size(&m.family, &m.value), m.rate_value()) {
            by_series.entry(m.series()).or_default().push((x.exp2(), y));
        }
    }
    let series = by_series
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            LineSeriesSpec {
                name,
                points,
                colour: palette(i),
                reference: false,
            }
        })
        .collect();
    LineSpec {
        title: title.into(),
        x_title: match unit {
            SizeUnit::Bytes => "size per array (bytes, log scale)".into(),
            SizeUnit::Elements => "size (elements, log scale)".into(),
        },
        y_title: y_title.into(),
        x: XScale::Log(unit),
        series,
        y_unit: y_title
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .trim_matches(['(', ')'])
            .into(),
    }
}

/// Each peak as a flat reference line across the measured sizes of its series.
fn peak_lines(gemm: &[&Measured], spec: &mut LineSpec) {
    let mut peaks: BTreeMap<String, (f64, Vec<f64>)> = BTreeMap::new();
    for m in gemm {
        if let (Some(peak), Some(x)) = (m.peak(), log2_size("gemm", &m.value)) {
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
        spec.series.push(LineSeriesSpec {
            name,
            points: vec![(lo, peak), (hi, peak)],
            colour: GREY,
            reference: true,
        });
    }
}

fn rate_bars(measured: &[&Measured], title: &str, x_title: &str) -> BarsSpec {
    let bars = measured
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
            BarSpec {
                label: format!("{} {} {}", m.backend, m.function, m.value),
                value,
                colour: dtype_colour(dtype),
                hover,
                legend: Some(dtype.into()),
            }
        })
        .collect();
    BarsSpec {
        title: title.into(),
        x_title: x_title.into(),
        bars,
    }
}

/// Best GEMM rate per backend and precision, beside its peak.
fn precision_bars(gemm: &[&Measured]) -> BarsSpec {
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
    let mut bars = Vec::new();
    for (label, (rate, peak)) in best {
        let dtype = label.rsplit(' ').next().unwrap_or_default().to_string();
        let percent = peak.map_or(String::new(), |p| {
            format!(" ({:.0} % of peak)", 100.0 * rate / p)
        });
        bars.push(BarSpec {
            label: label.clone(),
            value: rate,
            colour: dtype_colour(&dtype),
            hover: format!("{rate:.1} GFLOP/s{percent}"),
            legend: Some("measured".into()),
        });
        if let Some(p) = peak {
            bars.push(BarSpec {
                label: format!("{label} peak"),
                value: p,
                colour: GREY,
                hover: format!("{p:.1} GFLOP/s"),
                legend: Some("peak".into()),
            });
        }
    }
    BarsSpec {
        title: "GEMM: best measured per precision vs peak".into(),
        x_title: "GFLOP/s".into(),
        bars,
    }
}

/// Change per benchmark against the previous run: the `limit` most slowed (red) first,
/// then the `limit` most sped up (green), each beyond 1 %.
fn change_bars(before: &RunRecord, after: &RunRecord, limit: usize) -> BarsSpec {
    let mut rows = changes(before, after);
    rows.sort_by(|a, b| b.3.total_cmp(&a.3));
    let slower = rows.iter().filter(|r| r.3 > 1.0).take(limit);
    let faster = rows.iter().rev().filter(|r| r.3 < -1.0).take(limit);
    let bars = slower
        .chain(faster)
        .map(|(id, old, new, change)| BarSpec {
            value: change.abs(),
            colour: if *change > 0.0 { RED } else { GREEN },
            hover: format!(
                "{} → {} ({})",
                format_ns(*old),
                format_ns(*new),
                format_percent(Some(*change))
            ),
            legend: Some(
                if *change > 0.0 {
                    "slower (after)"
                } else {
                    "faster (after)"
                }
                .into(),
            ),
            label: id.clone(),
        })
        .collect();
    BarsSpec {
        title: format!(
            "Before {} → after {}: the most slowed, then the most sped up (beyond 1 %)",
            run_name(before),
            run_name(after)
        ),
        x_title: "|change| (% of before time)".into(),
        bars,
    }
}

/// Time per call of each component benchmark, coloured by component.
fn component_bars(components: &[&Measured]) -> BarsSpec {
    let mut spec = rate_bars(
        components,
        "Components: time per call",
        "time per call (ms)",
    );
    let mut backends: Vec<&str> = components.iter().map(|m| m.backend.as_str()).collect();
    backends.dedup();
    for (bar, m) in spec.bars.iter_mut().zip(components) {
        let index = backends.iter().position(|b| *b == m.backend).unwrap_or(0);
        bar.colour = palette(index);
        bar.value = m.median_ns / 1e6;
        bar.hover = format_ns(m.median_ns);
        bar.legend = Some(m.backend.clone());
    }
    spec
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
fn own_benchmarks(all: &[Measured]) -> BarsSpec {
    let bars = all
        .iter()
        .map(|m| BarSpec {
            label: m.id.clone(),
            value: m.median_ns,
            colour: palette(0),
            hover: format_ns(m.median_ns),
            legend: None,
        })
        .collect();
    BarsSpec {
        title: "Benchmarks: median time per iteration".into(),
        x_title: "time per iteration (ns)".into(),
        bars,
    }
}

/// The run pages for `run`, compared with `before` when there is one.
pub fn render(out: &mut String, run: &RunRecord, before: Option<&RunRecord>) {
    let all = measured(run);
    let _ = write!(
        out,
        "<h2>Run {}: what this machine achieved</h2><div class=\"charts\">",
        escape(&run_name(run))
    );
    if has_stackbench_family(&all) || all.is_empty() {
        family_figures(out, run, &all);
    } else {
        figure(
            out,
            "This run's benchmarks (another crate's: no stackbench families)",
            bar_chart(&own_benchmarks(&all)),
        );
    }
    if let Some(before) = before {
        figure(
            out,
            "Before/after",
            bar_chart(&change_bars(before, run, 20)),
        );
    }
    out.push_str("</div>");
    telemetry_table(out, run);
    benchmark_notes(out, run);
}

/// stackbench's family charts and the components pages, each drawn or said to be missing.
fn family_figures(out: &mut String, run: &RunRecord, all: &[Measured]) {
    let family = |f: &str| all.iter().filter(|m| m.family == f).collect::<Vec<_>>();
    let memory = family("memory_bandwidth");
    figure(
        out,
        "Memory bandwidth against size",
        line_chart(&rate_lines(
            &memory,
            "Memory bandwidth vs size",
            SizeUnit::Bytes,
            "bandwidth (GB/s)",
        )),
    );
    let gemm = family("gemm");
    figure(
        out,
        "GEMM per precision against peak",
        bar_chart(&precision_bars(&gemm)),
    );
    let mut gemm_lines = rate_lines(
        &gemm,
        "GEMM throughput vs size (peaks dashed grey)",
        SizeUnit::Elements,
        "throughput (GFLOP/s)",
    );
    peak_lines(&gemm, &mut gemm_lines);
    figure(out, "GEMM against size with peak", line_chart(&gemm_lines));
    figure(
        out,
        "Tensor ops",
        bar_chart(&rate_bars(
            &family("tensor_ops"),
            "Tensor ops: bandwidth",
            "GB/s",
        )),
    );
    figure(
        out,
        "Attention: flash vs standard",
        bar_chart(&rate_bars(
            &family("attention"),
            "Attention kernels",
            "GFLOP/s",
        )),
    );
    figure(
        out,
        "Components",
        bar_chart(&component_bars(&family("components"))),
    );
    super::component_pages::render(out, &ComponentCharts::from_run(run, all));
}

/// Each benchmark's power, temperature, clock and utilisation, with "not read" and the
/// reason for each quantity that was not; one line when the run read none at all.
fn telemetry_table(out: &mut String, run: &RunRecord) {
    use crate::view::telemetry::{QUANTITIES, run_telemetry};
    out.push_str("<h3>Telemetry</h3>");
    let telemetry = run_telemetry(run);
    if let Some(line) = telemetry.one_line() {
        let _ = write!(out, "<p>{}</p>", escape(&line));
        return;
    }
    out.push_str("<table><tr><th>benchmark</th><th>source</th>");
    for q in QUANTITIES {
        let _ = write!(out, "<th>{}</th>", escape(q));
    }
    out.push_str("</tr>");
    for row in telemetry.rows() {
        let source = if row.source.is_empty() {
            "none"
        } else {
            &row.source
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td>",
            escape(&row.id),
            escape(source)
        );
        for reading in &row.readings {
            let _ = write!(out, "<td>{}</td>", escape(&reading.cell()));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// What the record says about single benchmarks: a peak the figure exceeded is named
/// here with the peak's source, where a chart would otherwise show a percentage.
fn benchmark_notes(out: &mut String, run: &RunRecord) {
    let notes = crate::view::model::benchmark_notes(run);
    if notes.is_empty() {
        return;
    }
    out.push_str("<h3>Notes on benchmarks</h3><ul>");
    for (id, note) in notes {
        let _ = write!(
            out,
            "<li><code>{}</code>: {}</li>",
            escape(id),
            escape(note)
        );
    }
    out.push_str("</ul>");
}
