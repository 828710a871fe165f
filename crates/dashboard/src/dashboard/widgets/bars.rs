//! Horizontal bars with the value written beside each: measured TFLOPS per precision next
//! to the peak, GB/s per tensor op, attention kernels, component benchmarks.

use ratatui::buffer::Buffer;
use ratatui::layout::{Direction, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup, Block, Widget};

#[derive(Clone, Debug)]
pub struct BarItem {
    pub label: String,
    pub value: f64,
    /// What is written at the bar's end (`12.3 GFLOP/s (41 %)`).
    pub text: String,
    pub style: Style,
}

#[derive(Clone, Debug)]
pub struct Bars {
    pub title: String,
    pub items: Vec<BarItem>,
}

/// Bar lengths are integers: values are scaled so the largest is this many steps.
const RESOLUTION: f64 = 10_000.0;

impl Widget for &Bars {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::bordered().title(self.title.as_str());
        if self.items.is_empty() {
            let inner = block.inner(area);
            block.render(area, buf);
            Line::from("no data in this run").render(inner, buf);
            return;
        }
        let max = self
            .items
            .iter()
            .map(|i| i.value)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let scale = if max > 0.0 { RESOLUTION / max } else { 0.0 };
        let bars: Vec<Bar> = self
            .items
            .iter()
            .map(|i| {
                // The value goes in the label, not on the bar: drawn over a short bar it
                // would hide the bar itself.
                Bar::default()
                    .value((i.value.max(0.0) * scale).round() as u64)
                    .label(Line::from(format!("{} {}", i.label, i.text)))
                    .text_value(String::new())
                    .style(i.style)
            })
            .collect();
        BarChart::default()
            .block(block)
            .direction(Direction::Horizontal)
            .bar_width(1)
            .bar_gap(0)
            .max(RESOLUTION as u64)
            .data(BarGroup::default().bars(&bars))
            .render(area, buf);
    }
}
