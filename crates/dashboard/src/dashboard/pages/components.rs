//! Page 4, components: PyTorch matmul TFLOP/s against size per dtype, the SDPA backends at
//! one shape (refused backends shown with torch's reason), vLLM output tokens/s against
//! batch with a bar from the p99 to the p50 call latency, and DeepSpeed memory per ZeRO
//! stage stacked by phase. With room (120×40), the component benchmarks no chart draws
//! (time per call) and the latency percentiles (ONNX Runtime per optimisation level,
//! serving) follow below. ↑/↓ pick a line (a dtype, a prompt shape) to hold over the others.

use super::family;
use crate::dashboard::widgets::line::{LegendPosition, XAxis, error_bar};
use crate::dashboard::widgets::{BarItem, Bars, LineChart, Segment, Series, StackedBar, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::{SizeUnit, format_ns, format_number};
use crate::view::component_model::{
    ComponentCharts, SdpaChart, SdpaOutcome, ZERO_SEGMENTS, ZeroMemory, flop_unit,
};
use crate::view::model::{Measured, target_notes};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::{Map, Value};

pub const PAGE: Page = Page::new("components", "Components", render, items);

/// Below this height the four charts take the page; from it, a third row lists every
/// component benchmark and the latency percentiles.
const ROOM_FOR_TABLES: u16 = 30;

/// ↑/↓ move through the page's lines: the matmul dtypes, then the vLLM prompt shapes.
fn items(data: &Dashboard) -> usize {
    data.current()
        .map(|run| ComponentCharts::from_run(run, &data.measured))
        .map_or(0, |c| c.matmul.len() + c.serving.len())
}

/// The legend name and style of line `index` of `total`: the selected line keeps its
/// colour and is marked `▸` (so it shows without colour too); the others dim.
fn highlight(
    view: &View,
    (index, total): (usize, usize),
    name: &str,
    style: Style,
) -> (String, Style) {
    if total < 2 {
        return (name.to_string(), style);
    }
    if view.selected.min(total - 1) == index {
        (format!("▸{name}"), style)
    } else {
        (name.to_string(), view.theme.dimmed())
    }
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let charts = view
        .data
        .current()
        .map(|run| ComponentCharts::from_run(run, &view.data.measured))
        .unwrap_or_default();
    let rows = if area.height >= ROOM_FOR_TABLES {
        Layout::vertical([
            Constraint::Percentage(36),
            Constraint::Percentage(36),
            Constraint::Fill(1),
        ])
        .split(area)
    } else {
        Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)]).split(area)
    };
    let halves = |row: Rect| {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)]).split(row)
    };
    let (top, middle) = (halves(rows[0]), halves(rows[1]));
    matmul_chart(view, &charts).render(top[0], buf);
    sdpa_panel(view, charts.sdpa.as_ref(), top[1], buf);
    serving_chart(view, &charts).render(middle[0], buf);
    zero_stacked(view, &charts.zero).render(middle[1], buf);
    if let Some(bottom) = rows.get(2) {
        benchmark_tables(view, halves(*bottom).as_ref(), buf);
    }
}

/// FLOP/s against the matrix side, one line per dtype in its precision colour.
fn matmul_chart(view: &View, charts: &ComponentCharts) -> LineChart {
    let total = charts.matmul.len() + charts.serving.len();
    let (factor, unit) = charts.matmul_unit();
    let series = charts
        .matmul
        .iter()
        .enumerate()
        .map(|(i, (dtype, points))| {
            let (name, style) = highlight(view, (i, total), dtype, view.theme.dtype(Some(dtype)));
            Series {
                name,
                points: points.iter().map(|&(x, y)| (x, y * factor)).collect(),
                style,
                line: true,
            }
        })
        .collect();
    LineChart {
        title: "PyTorch matmul vs size".into(),
        x: XAxis::Log2Titled {
            unit: SizeUnit::Elements,
            title: "side n (log2)".into(),
        },
        y_title: unit.into(),
        series,
        legend: LegendPosition::BottomRight,
    }
}

/// One bar per SDPA backend at the chosen shape, and under the bars each refusal or
/// failure with its reason (grouped when backends share one), so a refused backend reads
/// as refused, not as slow.
fn sdpa_panel(view: &View, sdpa: Option<&SdpaChart>, area: Rect, buf: &mut Buffer) {
    let Some(sdpa) = sdpa else {
        return Bars {
            title: "SDPA backends".into(),
            items: Vec::new(),
        }
        .render(area, buf);
    };
    let (factor, unit) = flop_unit(sdpa.max_tflops());
    let items: Vec<BarItem> = sdpa
        .backends
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (value, text, style) = match &b.outcome {
                SdpaOutcome::Measured { tflops, .. } => (
                    tflops * factor,
                    format!("{} {unit}", format_number(tflops * factor)),
                    view.theme.series(i),
                ),
                SdpaOutcome::Refused { .. } => (0.0, "refused".into(), view.theme.warning()),
                SdpaOutcome::Failed { .. } => (0.0, "FAILED".into(), view.theme.failure()),
            };
            BarItem {
                label: b.name.clone(),
                value,
                text,
                style,
            }
        })
        .collect();
    let bars_height = (items.len() as u16 + 2).min(area.height);
    let [bars_area, reasons_area] =
        Layout::vertical([Constraint::Length(bars_height), Constraint::Fill(1)]).areas(area);
    Bars {
        title: format!("SDPA {unit} {}", sdpa.shape),
        items,
    }
    .render(bars_area, buf);
    let lines: Vec<Line> = sdpa
        .not_run()
        .into_iter()
        .map(|(reason, names)| {
            Line::styled(
                format!("{}: {reason}", names.join(", ")),
                view.theme.warning(),
            )
        })
        .collect();
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .render(reasons_area, buf);
}

/// Output tokens/s against batch (log2), one line per prompt shape, each point with a
/// bar from the tokens/s of a p99-latency call up to that of a p50-latency call.
fn serving_chart(view: &View, charts: &ComponentCharts) -> LineChart {
    let (serving, first) = (&charts.serving, charts.matmul.len());
    let total = first + serving.len();
    let xs = serving.values().flatten().map(|p| (p.batch as f64).log2());
    let x_range = xs.fold([f64::INFINITY, f64::NEG_INFINITY], |[lo, hi], x| {
        [lo.min(x), hi.max(x)]
    });
    let mut series = Vec::new();
    for (i, (shape, points)) in serving.iter().enumerate() {
        let (name, style) = highlight(view, (first + i, total), shape, view.theme.series(i));
        series.push(Series {
            name,
            points: points
                .iter()
                .map(|p| ((p.batch as f64).log2(), p.tokens_per_s))
                .collect(),
            style,
            line: true,
        });
        for p in points {
            if let (Some(hi), Some(lo)) = (p.at_p50, p.at_p99) {
                let x = (p.batch as f64).log2();
                series.extend(error_bar(x, [lo, hi], 0.15, x_range, style));
            }
        }
    }
    LineChart {
        title: "vLLM tokens/s vs batch, bar p99..p50".into(),
        x: XAxis::Log2Titled {
            unit: SizeUnit::Elements,
            title: "batch (log2)".into(),
        },
        y_title: "tokens/s".into(),
        series,
        legend: LegendPosition::TopLeft,
    }
}

/// Memory per ZeRO stage in MiB, stacked by phase; only the segments some row uses are
/// listed, so a run of old records shows just its peaks.
fn zero_stacked(view: &View, zero: &[ZeroMemory]) -> StackedBar {
    let used: Vec<usize> = (0..ZERO_SEGMENTS.len())
        .filter(|&k| zero.iter().any(|z| z.memory.segments()[k] > 0.0))
        .collect();
    let styles = [
        view.theme.series(0),
        view.theme.series(1),
        view.theme.series(2),
        view.theme.peak(),
    ];
    StackedBar {
        title: "DeepSpeed memory by ZeRO stage (MiB)".into(),
        segments: used
            .iter()
            .map(|&k| Segment {
                name: ZERO_SEGMENTS[k].into(),
                style: styles[k],
            })
            .collect(),
        rows: zero
            .iter()
            .map(|z| {
                let parts = z.memory.segments();
                let mib = used.iter().map(|&k| parts[k] / 1_048_576.0).collect();
                (z.label.clone(), mib)
            })
            .collect(),
        unit: "MiB".into(),
    }
}

/// Whether a benchmark is drawn by one of the four charts above.
fn charted(m: &Measured) -> bool {
    matches!(
        (m.backend.as_str(), m.function.as_str()),
        ("pytorch", "matmul") | ("vllm", "offline") | ("deepspeed", "zero_step")
    ) || (m.backend == "attention" && m.function.starts_with("sdpa_"))
}

/// The component benchmarks the charts do not draw, as time per call (one unit, so the
/// bars compare), and every benchmark's latency percentiles beside them.
fn benchmark_tables(view: &View, areas: &[Rect], buf: &mut Buffer) {
    let components = family(view, "components");
    let notes = view.data.current().map(target_notes).unwrap_or_default();
    let others = components
        .iter()
        .filter(|m| !charted(m))
        .map(|m| BarItem {
            label: format!("{} {} {}", m.backend, m.function, m.value),
            value: m.median_ns,
            text: format_ns(m.median_ns),
            style: view.theme.series(1),
        })
        .collect();
    Bars {
        title: "Other components: time per call".into(),
        items: others,
    }
    .render(areas[0], buf);
    let empty = Map::new();
    let rows: Vec<(Vec<String>, _)> = components
        .iter()
        .flat_map(|m| percentiles(m, notes.get(&m.id).unwrap_or(&empty)))
        .map(|cells| (cells, ratatui::style::Style::new()))
        .collect();
    TextTable {
        title: "Latency percentiles".into(),
        header: vec!["benchmark".into(), "p50".into(), "p99".into()],
        widths: vec![30, 9],
        rows,
        selected: None,
        selected_style: view.theme.selected(),
    }
    .render(areas[1], buf);
}

/// One row per `<prefix>_p50_ns` note of a benchmark: name, p50, p99.
fn percentiles(m: &Measured, notes: &Map<String, Value>) -> Vec<Vec<String>> {
    notes
        .iter()
        .filter_map(|(key, value)| {
            let prefix = key.strip_suffix("_p50_ns")?;
            let p50 = value.as_f64()?;
            let p99 = notes
                .get(&format!("{prefix}_p99_ns"))
                .and_then(Value::as_f64)
                .map_or("n/a".into(), format_ns);
            Some(vec![
                format!("{}/{}/{} {prefix}", m.backend, m.function, m.value),
                format_ns(p50),
                p99,
            ])
        })
        .collect()
}
