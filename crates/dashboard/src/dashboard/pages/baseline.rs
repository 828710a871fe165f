//! Page 1, hardware baseline: memory bandwidth against size (one line per kernel and per
//! transfer direction, device and host as separate series) and the best GEMM rate per
//! precision beside its peak.

use super::{family, rate_series};
use crate::dashboard::widgets::line::{LegendPosition, XAxis};
use crate::dashboard::widgets::{BarItem, Bars, LineChart};
use crate::dashboard::{Dashboard, Page, View};
use crate::units::SizeUnit;
use crate::view::model::dtype_of;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;
use std::collections::BTreeMap;

pub const PAGE: Page = Page::new("baseline", "Baseline", render, items);

fn items(data: &Dashboard) -> usize {
    let mut series: Vec<String> = data
        .measured
        .iter()
        .filter(|m| m.family == "memory_bandwidth")
        .map(|m| m.series())
        .collect();
    series.dedup();
    series.len()
}

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(60), Constraint::Fill(1)]).areas(area);
    let memory = family(view, "memory_bandwidth");
    LineChart {
        title: "Memory bandwidth (↑/↓ selects a series)".into(),
        x: XAxis::Log2(SizeUnit::Bytes),
        y_title: "GB/s".into(),
        series: rate_series(view, &memory),
        legend: LegendPosition::TopRight,
    }
    .render(top, buf);
    precision_bars(view).render(bottom, buf);
}

/// The best rate per backend and precision, each followed by its peak when known.
pub fn precision_bars(view: &View) -> Bars {
    let mut best: BTreeMap<(String, String), (f64, Option<f64>)> = BTreeMap::new();
    for m in family(view, "gemm") {
        let (Some(rate), Some(_)) = (m.rate_value(), dtype_of(&m.function)) else {
            continue;
        };
        let entry = best
            .entry((m.backend.clone(), m.function.clone()))
            .or_insert((0.0, None));
        if rate > entry.0 {
            *entry = (rate, m.peak());
        }
    }
    let mut items = Vec::new();
    for ((backend, dtype), (rate, peak)) in best {
        let style = view.theme.dtype(Some(&dtype));
        let percent = peak.map_or(String::new(), |p| format!(" ({:.0} %)", 100.0 * rate / p));
        items.push(BarItem {
            label: format!("{backend} {dtype}"),
            value: rate,
            text: format!("{rate:.1} GFLOP/s{percent}"),
            style,
        });
        if let Some(peak) = peak {
            items.push(BarItem {
                label: "  peak".into(),
                value: peak,
                text: format!("{peak:.1} GFLOP/s peak"),
                style: view.theme.peak(),
            });
        }
    }
    Bars {
        title: "GEMM per precision: best measured vs peak (GFLOP/s)".into(),
        items,
    }
}
