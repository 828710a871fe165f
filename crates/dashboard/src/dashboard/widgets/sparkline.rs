//! One sparkline per benchmark: its history at a glance, one row each, the latest value
//! and the change beside it. The selected row is highlighted.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Sparkline, Widget};

#[derive(Clone, Debug)]
pub struct SparkRow {
    pub label: String,
    pub values: Vec<f64>,
    /// Written after the line (`12.3 µs +4.1 %`).
    pub note: String,
    pub style: Style,
}

#[derive(Clone, Debug)]
pub struct SparkRows {
    pub title: String,
    pub rows: Vec<SparkRow>,
    pub selected: Option<usize>,
    pub selected_style: Style,
}

impl Widget for &SparkRows {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::bordered().title(self.title.as_str());
        let inner = block.inner(area);
        block.render(area, buf);
        let visible = inner.height as usize;
        // Keep the selected row in view.
        let first = self
            .selected
            .map_or(0, |s| s.saturating_sub(visible.saturating_sub(1)));
        let label_width = (inner.width / 3).min(40);
        let note_width = 18.min(inner.width / 4);
        for (row_index, row) in self.rows.iter().enumerate().skip(first).take(visible) {
            let y = inner.y + (row_index - first) as u16;
            let line = Rect::new(inner.x, y, inner.width, 1);
            let [label, spark, note] = Layout::horizontal([
                Constraint::Length(label_width),
                Constraint::Fill(1),
                Constraint::Length(note_width),
            ])
            .spacing(1)
            .areas(line);
            let style = if Some(row_index) == self.selected {
                self.selected_style
            } else {
                row.style
            };
            Line::styled(truncate(&row.label, label_width as usize), style).render(label, buf);
            // Scaled from the row's minimum so a 2 % step is visible; ×1000 keeps resolution.
            let lo = row.values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = row.values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let span = if hi > lo { hi - lo } else { 1.0 };
            let data: Vec<u64> = row
                .values
                .iter()
                .map(|v| (1.0 + 7.0 * (v - lo) / span).round() as u64)
                .collect();
            Sparkline::default()
                .data(&data)
                .max(8)
                .style(row.style)
                .render(spark, buf);
            Line::styled(row.note.clone(), row.style).render(note, buf);
        }
    }
}

/// Cuts text to `width` characters, keeping the end (ids differ at the end).
pub fn truncate(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        return text.to_string();
    }
    let keep = width.saturating_sub(1);
    let tail: String = text.chars().skip(count - keep).collect();
    format!("…{tail}")
}
