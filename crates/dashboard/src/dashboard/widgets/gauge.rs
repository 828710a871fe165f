//! A gauge of utilisation: a measured rate as a percentage of the peak it is held against.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{LineGauge, Widget};

#[derive(Clone, Debug)]
pub struct PeakGauge {
    pub label: String,
    /// Percent of peak (may exceed 100 when the peak table is wrong; the bar then stays full
    /// and the label says the real figure).
    pub percent: f64,
    pub style: Style,
}

impl Widget for &PeakGauge {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ratio = (self.percent / 100.0).clamp(0.0, 1.0);
        LineGauge::default()
            .label(format!("{} {:>5.1} % of peak ", self.label, self.percent))
            .ratio(ratio)
            .filled_symbol("█")
            .unfilled_symbol("░")
            .filled_style(self.style)
            .render(area, buf);
    }
}
