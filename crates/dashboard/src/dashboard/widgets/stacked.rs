//! Stacked horizontal bars: parts of a whole side by side (measured / skipped / failed per
//! family; memory by kind per ZeRO stage). Each segment has its own fill character as well
//! as its colour, so the parts stay apart without colour.

use super::sparkline::truncate;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

#[derive(Clone, Debug)]
pub struct Segment {
    pub name: String,
    pub style: Style,
}

#[derive(Clone, Debug)]
pub struct StackedBar {
    pub title: String,
    pub segments: Vec<Segment>,
    /// (label, one value per segment)
    pub rows: Vec<(String, Vec<f64>)>,
    /// Unit of the values, for the totals (`benchmarks`, `GiB`).
    pub unit: String,
}

const FILLS: [&str; 4] = ["█", "▓", "▒", "░"];

impl Widget for &StackedBar {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::bordered().title(self.title.as_str());
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 {
            return;
        }
        if self.rows.is_empty() {
            Line::from("no data in this run").render(inner, buf);
            return;
        }
        let legend: Vec<Span> = self
            .segments
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                [
                    Span::styled(FILLS[i % FILLS.len()], s.style),
                    Span::raw(format!(" {}  ", s.name)),
                ]
            })
            .collect();
        Line::from(legend).render(Rect::new(inner.x, inner.y, inner.width, 1), buf);
        let label_width = (inner.width / 4).min(24) as usize;
        let total_width = 12usize;
        let bar_width = (inner.width as usize).saturating_sub(label_width + total_width + 2);
        let max = self
            .rows
            .iter()
            .map(|(_, v)| v.iter().sum::<f64>())
            .fold(0.0, f64::max);
        for (i, (label, values)) in self.rows.iter().enumerate() {
            let y = inner.y + 1 + i as u16;
            if y >= inner.bottom() {
                break;
            }
            let mut spans = vec![Span::raw(format!(
                "{:<label_width$} ",
                truncate(label, label_width)
            ))];
            let mut used = 0usize;
            for (j, v) in values.iter().enumerate() {
                let width = if max > 0.0 {
                    (v / max * bar_width as f64).round() as usize
                } else {
                    0
                };
                let width = width.min(bar_width - used);
                used += width;
                let style = self.segments.get(j).map_or(Style::new(), |s| s.style);
                spans.push(Span::styled(FILLS[j % FILLS.len()].repeat(width), style));
            }
            let total: f64 = values.iter().sum();
            spans.push(Span::raw(" ".repeat(bar_width - used + 1)));
            spans.push(Span::raw(format!(
                "{} {}",
                crate::units::format_number(total),
                self.unit
            )));
            Line::from(spans).render(Rect::new(inner.x, y, inner.width, 1), buf);
        }
    }
}
