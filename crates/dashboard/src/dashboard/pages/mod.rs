//! The dashboard's pages, one file each. Helpers here turn measured benchmarks into the
//! series and bars the widgets draw, so every page groups and colours them the same way.

pub mod baseline;
pub mod compare;
pub mod components;
pub mod gemm;
pub mod hardware;
pub mod models;
pub mod outcomes;
pub mod summary;
pub mod tensor_ops;
pub mod trends;

use super::View;
use super::widgets::{BarItem, Series};
use crate::units::format_ns;
use crate::view::model::{Measured, dtype_of, log2_size};
use std::collections::BTreeMap;

/// The measured benchmarks of one family in the shown run.
pub fn family<'a>(view: &'a View, family: &str) -> Vec<&'a Measured> {
    view.data
        .measured
        .iter()
        .filter(|m| m.family == family)
        .collect()
}

/// One series per `backend/function`, x = log2 size, y = rate (GB/s or GFLOP/s); the
/// selected series (↑/↓) keeps its colour and the others dim.
pub fn rate_series(view: &View, measured: &[&Measured]) -> Vec<Series> {
    let mut by_series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in measured {
        if let (Some(x), Some(y)) = (log2_size(&m.family, &m.value), m.rate_value()) {
            by_series.entry(m.series()).or_default().push((x, y));
        }
    }
    let count = by_series.len();
    by_series
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let function = name.rsplit('/').next().unwrap_or_default();
            let mut style = match dtype_of(function) {
                Some(d) => view.theme.dtype(Some(d)),
                None => view.theme.series(i),
            };
            if count > 1 && view.selected % count.max(1) != i && view.selected < count {
                style = view.theme.dimmed();
            }
            Series {
                name,
                points,
                style,
                line: true,
            }
        })
        .collect()
}

/// A bar of a benchmark's rate, or its time when it declared no throughput.
/// The bar's text carries the accuracy set beside the rate where the run recorded one, so
/// a fast kernel that lost bits shows both on the same line.
pub fn rate_bar(view: &View, label: String, m: &Measured) -> BarItem {
    let style = view.theme.dtype(dtype_of(&m.function));
    let accuracy = match &m.accuracy {
        Some(_) => format!(" · {}", crate::view::model::accuracy_cell(m)),
        None => String::new(),
    };
    match &m.rate {
        Some(rate) => BarItem {
            label,
            value: rate.value,
            text: format!(
                "{:.1} {}{}{accuracy}",
                rate.value,
                rate.unit,
                rate.peak_note()
            ),
            style,
        },
        None => BarItem {
            label,
            value: m.median_ns,
            text: format!("{}{accuracy}", format_ns(m.median_ns)),
            style,
        },
    }
}

/// The largest size measured of each function: bar charts show one bar per function there.
pub fn largest_per_function<'a>(measured: &[&'a Measured]) -> Vec<&'a Measured> {
    let mut best: BTreeMap<String, &Measured> = BTreeMap::new();
    for m in measured {
        let size = log2_size(&m.family, &m.value).unwrap_or(0.0);
        let entry = best.entry(m.series()).or_insert(m);
        if size > log2_size(&entry.family, &entry.value).unwrap_or(0.0) {
            *entry = m;
        }
    }
    best.into_values().collect()
}
