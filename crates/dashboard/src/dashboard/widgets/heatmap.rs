//! Benchmarks × runs, each cell the run's change against the run before it: the whole
//! history's movement on one screen. Cells carry a glyph as well as a colour (▼ slower
//! beyond the threshold, ▲ faster, · within: the before/after page's marks) so the map reads without colour too.

use super::sparkline::truncate;
use crate::dashboard::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

#[derive(Clone, Debug)]
pub struct Heatmap {
    pub title: String,
    pub rows: Vec<(String, Vec<Option<f64>>)>,
    pub threshold_percent: f64,
    pub theme: Theme,
}

impl Heatmap {
    fn cell(&self, change: Option<f64>) -> Span<'static> {
        let t = self.threshold_percent;
        match change {
            None => Span::raw(" "),
            Some(c) if c > 4.0 * t => Span::styled("▼", self.theme.failure()),
            Some(c) if c > t => Span::styled("▼", self.theme.before()),
            Some(c) if c < -t => Span::styled("▲", self.theme.after()),
            Some(_) => Span::raw("·"),
        }
    }
}

impl Widget for &Heatmap {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::bordered().title(self.title.as_str());
        let inner = block.inner(area);
        block.render(area, buf);
        let label_width = (inner.width / 2).min(40) as usize;
        let cells = (inner.width as usize).saturating_sub(label_width + 1);
        for (i, (label, changes)) in self.rows.iter().take(inner.height as usize).enumerate() {
            // The most recent runs when they do not all fit.
            let shown = &changes[changes.len().saturating_sub(cells)..];
            let mut spans = vec![Span::raw(format!(
                "{:<label_width$} ",
                truncate(label, label_width)
            ))];
            spans.extend(shown.iter().map(|c| self.cell(*c)));
            Line::from(spans).render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}
