//! Page 4, components: each Python component benchmark's throughput (tokens/s where the
//! worker reported it, else its declared rate, else its time), latency percentiles per
//! benchmark (ONNX Runtime optimisation levels, vLLM-style serving: p50 and p99), and
//! DeepSpeed's peak memory by ZeRO stage.

use super::family;
use crate::dashboard::model::{Measured, target_notes};
use crate::dashboard::widgets::{BarItem, Bars, TextTable};
use crate::dashboard::{Dashboard, Page, View};
use crate::report::format::format_ns;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;
use serde_json::{Map, Value};

pub const PAGE: Page = Page {
    name: "components",
    title: "Components",
    render,
    items,
};

fn items(data: &Dashboard) -> usize {
    data.measured
        .iter()
        .filter(|m| m.family == "components")
        .count()
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let components = family(view, "components");
    let notes = view.data.current().map(target_notes).unwrap_or_default();
    let empty = Map::new();
    let notes_of = |m: &Measured| notes.get(&m.id).unwrap_or(&empty).clone();
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Fill(1)]).areas(area);
    throughput_bars(view, &components, &notes_of).render(left, buf);
    let [latency, memory] =
        Layout::vertical([Constraint::Percentage(60), Constraint::Fill(1)]).areas(right);
    let rows: Vec<(Vec<String>, _)> = components
        .iter()
        .flat_map(|m| percentiles(m, &notes_of(m)))
        .map(|cells| (cells, ratatui::style::Style::new()))
        .collect();
    TextTable {
        title: "Latency percentiles".into(),
        header: vec!["benchmark".into(), "p50".into(), "p99".into()],
        widths: vec![22, 9],
        rows,
        selected: None,
        selected_style: view.theme.selected(),
    }
    .render(latency, buf);
    let memory_bars = components
        .iter()
        .filter_map(|m| {
            let n = notes_of(m);
            let stage = n.get("zero_stage")?.as_u64()?;
            let mib = n.get("peak_memory_bytes")?.as_f64()? / 1048576.0;
            Some(BarItem {
                label: format!("ZeRO {stage}"),
                value: mib,
                text: format!("{mib:.0} MiB"),
                style: view.theme.series(stage as usize),
            })
        })
        .collect();
    Bars {
        title: "DeepSpeed peak memory by ZeRO stage (MiB)".into(),
        items: memory_bars,
    }
    .render(memory, buf);
}

/// Tokens/s where the worker reported it, else the time per call.
fn throughput_bars(
    view: &View,
    components: &[&Measured],
    notes_of: &dyn Fn(&Measured) -> Map<String, Value>,
) -> Bars {
    let bars = components
        .iter()
        .map(|m| {
            let label = format!("{} {} {}", m.backend, m.function, m.value);
            match notes_of(m).get("tokens_per_s").and_then(Value::as_f64) {
                Some(t) => BarItem {
                    label,
                    value: t,
                    text: format!("{t:.0} tokens/s"),
                    style: view.theme.series(0),
                },
                // Components declare tokens (or calls) as elements: a time reads truer
                // than a GFLOP/s figure when the worker reported no tokens/s.
                None => BarItem {
                    label,
                    value: m.median_ns,
                    text: format_ns(m.median_ns),
                    style: view.theme.series(1),
                },
            }
        })
        .collect();
    Bars {
        title: "Components: tokens/s, else time per call".into(),
        items: bars,
    }
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
                format!("{} {} {prefix}", m.backend, m.function),
                format_ns(p50),
                p99,
            ])
        })
        .collect()
}
