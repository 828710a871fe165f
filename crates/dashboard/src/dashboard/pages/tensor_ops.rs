//! Page 3, tensor ops and attention: the bandwidth each elementwise and reduction op
//! reached at its largest size, and fused (flash) against standard attention: speed as
//! GFLOP/s and the memory each kernel held, from the harness's notes.

use super::{family, largest_per_function, rate_bar};
use crate::dashboard::widgets::{BarItem, Bars};
use crate::dashboard::{Dashboard, Page, View};
use crate::view::model::target_notes;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;

pub const PAGE: Page = Page::new("tensor-ops", "Tensor ops", render, |_: &Dashboard| 0);

fn render(view: &View, area: Rect, buf: &mut Buffer) {
    let [ops, attention] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Fill(1)]).areas(area);
    let tensor = family(view, "tensor_ops");
    Bars {
        title: "Tensor ops at their largest size (GB/s)".into(),
        items: largest_per_function(&tensor)
            .into_iter()
            .map(|m| rate_bar(view, format!("{} {}", m.function, m.value), m))
            .collect(),
    }
    .render(ops, buf);
    let [speed, memory] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Fill(1)]).areas(attention);
    let attn = family(view, "attention");
    let largest = largest_per_function(&attn);
    Bars {
        title: "Attention: flash vs standard (GFLOP/s)".into(),
        items: largest
            .iter()
            .map(|m| rate_bar(view, format!("{} {}", m.function, m.value), m))
            .collect(),
    }
    .render(speed, buf);
    let notes = view.data.current().map(target_notes).unwrap_or_default();
    let items = largest
        .iter()
        .filter_map(|m| {
            let bytes = notes.get(&m.id)?.get("peak_memory_bytes")?.as_f64()?;
            let mib = bytes / 1048576.0;
            Some(BarItem {
                label: m.function.clone(),
                value: mib,
                text: format!("{mib:.1} MiB"),
                style: view.theme.dtype(crate::view::model::dtype_of(&m.function)),
            })
        })
        .collect();
    Bars {
        title: "Attention peak memory (MiB)".into(),
        items,
    }
    .render(memory, buf);
}
