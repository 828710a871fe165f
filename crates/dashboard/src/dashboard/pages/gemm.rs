//! Page 2, GEMM: GFLOP/s against size per precision with each precision's roofline
//! (min(peak FLOP/s, intensity × peak bandwidth), or the flat peak when the bandwidth peak
//! is unknown), the best % of peak per precision as gauges, and the non-square
//! (transformer) shapes listed beside.

use super::{family, rate_series};
use crate::dashboard::widgets::line::{LegendPosition, XAxis};
use crate::dashboard::widgets::{LineChart, PeakGauge, Series, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::SizeUnit;
use crate::view::model::{Measured, dtype_of, log2_size};
use crate::workload::GemmShape;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;
use std::collections::BTreeMap;

pub const PAGE: Page = Page::new("gemm", "GEMM", render, items);

fn items(data: &Dashboard) -> usize {
    data.measured.iter().filter(|m| m.family == "gemm").count()
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let gemm = family(view, "gemm");
    let [chart, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Fill(1)]).areas(area);
    // The chart's axis is GFLOP/s: integer GEMMs (TOPS, another unit) stay in the table.
    let flops: Vec<&Measured> = gemm.iter().copied().filter(|m| !is_tops(m)).collect();
    let mut series = rate_series(view, &flops);
    series.extend(rooflines(view, &flops));
    LineChart {
        title: "GEMM throughput vs size, with roofline".into(),
        x: XAxis::Log2(SizeUnit::Elements),
        y_title: "GFLOP/s".into(),
        series,
        legend: LegendPosition::TopLeft,
    }
    .render(chart, buf);
    let gauges = best_percent_per_dtype(&gemm);
    let gauge_rows = gauges.len().min(4) as u16;
    let [gauge_area, table_area] =
        Layout::vertical([Constraint::Length(gauge_rows), Constraint::Fill(1)]).areas(side);
    for (i, (label, percent)) in gauges.iter().take(gauge_rows as usize).enumerate() {
        let row = Rect::new(gauge_area.x, gauge_area.y + i as u16, gauge_area.width, 1);
        PeakGauge {
            label: label.clone(),
            percent: *percent,
            style: view.theme.dtype(label.rsplit(' ').next()),
        }
        .render(row, buf);
    }
    shapes_table(view, &gemm).render(table_area, buf);
}

fn is_tops(m: &Measured) -> bool {
    m.rate
        .as_ref()
        .is_some_and(|r| r.unit == crate::units::RateUnit::TopsPerSecond)
}

fn parse_shape(value: &str) -> Option<GemmShape> {
    let mut dims = value.split('x').map(|d| d.parse::<usize>().ok());
    let (m, n, k) = (dims.next()??, dims.next()??, dims.next()??);
    Some(GemmShape::new(m, n, k))
}

/// The bandwidth peak of a backend, from its memory benchmarks' percentages.
fn bandwidth_peak(view: &View, backend: &str) -> Option<f64> {
    family(view, "memory_bandwidth")
        .into_iter()
        .filter(|m| m.backend == backend)
        .find_map(|m| m.peak())
}

/// One roofline per backend and precision with a known peak, at the measured sizes.
fn rooflines(view: &View, gemm: &[&Measured]) -> Vec<Series> {
    let mut roofs: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in gemm {
        let (Some(peak), Some(x), Some(shape)) =
            (m.peak(), log2_size("gemm", &m.value), parse_shape(&m.value))
        else {
            continue;
        };
        let dtype = crate::workload::gemm::function_dtype(&m.function);
        let roof = match (dtype, bandwidth_peak(view, &m.backend)) {
            // GB/s × FLOP/byte = GFLOP/s
            (Some(d), Some(bw)) => peak.min(shape.arithmetic_intensity(d) * bw),
            _ => peak,
        };
        roofs
            .entry(format!("{} roof", m.series()))
            .or_default()
            .push((x, roof));
    }
    roofs
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            points.dedup_by(|a, b| a.0 == b.0);
            Series {
                name,
                points,
                style: view.theme.peak(),
                line: true,
            }
        })
        .collect()
}

/// (`backend dtype`, best % of peak) for each precision measured against a peak.
pub fn best_percent_per_dtype(gemm: &[&Measured]) -> Vec<(String, f64)> {
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for m in gemm {
        let Some(p) = m.rate.as_ref().and_then(|r| r.percent_of_peak) else {
            continue;
        };
        let e = best
            .entry(format!("{} {}", m.backend, m.function))
            .or_insert(0.0);
        *e = e.max(p);
    }
    best.into_iter().collect()
}

fn shapes_table(view: &View, gemm: &[&Measured]) -> TextTable {
    // Accuracy beside the rate when the run recorded it (runs before it did have none).
    let accuracy = crate::view::model::any_accuracy(gemm);
    let rows = gemm
        .iter()
        .map(|m| {
            // TOPS carry their unit: the column's figures are otherwise GFLOP/s.
            let rate = match m.rate_value() {
                Some(r) if is_tops(m) => format!("{r:.2}TOPS"),
                Some(r) => format!("{r:.1}"),
                None => "n/a".into(),
            };
            let percent = m
                .rate
                .as_ref()
                .and_then(|r| r.percent_of_peak)
                .map_or("n/a".into(), |p| format!("{p:.0}"));
            let mut cells = vec![m.function.clone(), m.value.clone(), rate, percent];
            if accuracy {
                cells.push(crate::view::model::accuracy_cell(m));
            }
            (cells, view.theme.dtype(dtype_of(&m.function)))
        })
        .collect();
    let mut header = vec![
        "dtype".into(),
        "shape".into(),
        "GFLOP/s".into(),
        "% pk".into(),
    ];
    let mut widths = vec![6, 15, 8];
    if accuracy {
        header.push("error vs f64".into());
        widths.push(5);
    }
    TextTable {
        title: "Shapes (M×N×K)".into(),
        header,
        widths,
        rows,
        selected: Some(view.selected.min(gemm.len().saturating_sub(1))),
        selected_style: view.theme.selected(),
    }
}
