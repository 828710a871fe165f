//! Line charts with a scatter of the measured points: bandwidth and GFLOP/s against size
//! (log2 x axis), a benchmark's history against run number. Horizontal reference lines
//! (a peak, a roofline) are series too, drawn dimmed.

use super::axis::{linear_bounds, linear_labels, log2_bounds, log2_labels};
use crate::units::SizeUnit;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::Line;
pub use ratatui::widgets::LegendPosition;
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Widget};

/// One named series of (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Drawn as a line through the points as well as the points themselves.
    pub line: bool,
}

/// How the x axis reads.
#[derive(Clone, Debug)]
pub enum XAxis {
    /// x values are log2 of a size.
    Log2(SizeUnit),
    /// x values are log2 of a count that is not a size (a batch, a matrix side): ticks
    /// labelled as elements, under this title.
    Log2Titled { unit: SizeUnit, title: String },
    /// x values are plain numbers, labelled with these titles at even spacing.
    Linear { title: String, labels: Vec<String> },
}

#[derive(Clone, Debug)]
pub struct LineChart {
    pub title: String,
    pub x: XAxis,
    /// The y axis title, with its unit (`GB/s`).
    pub y_title: String,
    pub series: Vec<Series>,
    /// Where the legend goes: the corner the data leaves empty (falling curves: top right).
    pub legend: LegendPosition,
}

impl LineChart {
    fn x_range(&self) -> Option<(f64, f64)> {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
    }

    fn y_max(&self) -> f64 {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max)
    }
}

impl Widget for &LineChart {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let block = Block::bordered().title(self.title.as_str());
        let Some((lo, hi)) = self.x_range() else {
            let inner = block.inner(area);
            block.render(area, buf);
            Line::from("no data in this run").render(inner, buf);
            return;
        };
        let ticks = if area.width >= 100 { 5 } else { 3 };
        let (x_bounds, x_labels, x_title) = match &self.x {
            XAxis::Log2(unit) => {
                let b = log2_bounds(lo, hi, ticks);
                (
                    b,
                    log2_labels(b, ticks, *unit),
                    unit.axis_title().to_string(),
                )
            }
            XAxis::Log2Titled { unit, title } => {
                let b = log2_bounds(lo, hi, ticks);
                (b, log2_labels(b, ticks, *unit), title.clone())
            }
            XAxis::Linear { title, labels } => {
                let pad = if hi > lo { 0.0 } else { 1.0 };
                ([lo - pad, hi + pad], labels.clone(), title.clone())
            }
        };
        let y_bounds = linear_bounds(self.y_max());
        let datasets: Vec<Dataset> = self
            .series
            .iter()
            .map(|s| {
                let kind = if s.line && s.points.len() > 1 {
                    GraphType::Line
                } else {
                    GraphType::Scatter
                };
                let dataset = Dataset::default();
                // An unnamed series (an error bar, a cap) stays out of the legend.
                let dataset = if s.name.is_empty() {
                    dataset
                } else {
                    dataset.name(s.name.clone())
                };
                dataset
                    .marker(Marker::Braille)
                    .graph_type(kind)
                    .style(s.style)
                    .data(&s.points)
            })
            .collect();
        Chart::new(datasets)
            .block(block)
            .x_axis(
                Axis::default()
                    .title(x_title)
                    .bounds(x_bounds)
                    .labels(x_labels),
            )
            .y_axis(
                Axis::default()
                    .title(self.y_title.as_str())
                    .bounds(y_bounds)
                    .labels(linear_labels(y_bounds, 3)),
            )
            .legend_position(Some(self.legend))
            .hidden_legend_constraints((Constraint::Percentage(60), Constraint::Percentage(70)))
            .render(area, buf);
    }
}

/// A vertical error bar at `x` from `lo` to `hi`, with caps `cap` wide either side, cut
/// to `within` (the data's x range, so a cap never widens the axis): three unnamed series,
/// so the legend keeps to the data.
pub fn error_bar(
    x: f64,
    [lo, hi]: [f64; 2],
    cap: f64,
    within: [f64; 2],
    style: Style,
) -> [Series; 3] {
    let segment = |points: Vec<(f64, f64)>| Series {
        name: String::new(),
        points,
        style,
        line: true,
    };
    let (left, right) = ((x - cap).max(within[0]), (x + cap).min(within[1]));
    [
        segment(vec![(x, lo), (x, hi)]),
        segment(vec![(left, lo), (right, lo)]),
        segment(vec![(left, hi), (right, hi)]),
    ]
}
