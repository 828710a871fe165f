//! The one chart description every page carries, drawn by `crates/report/assets/web/stackbench.js` with
//! ECharts: the Rust side decides what is plotted (points, units, hover text, gaps,
//! markers); the script decides only how it looks. Keeping the decisions here lets the
//! page models be tested without a browser, and keeps the served pages and `report.html`
//! drawing the same thing.
//!
//! A point that was not measured is a point with `y: None`: the script breaks the line
//! there (`connectNulls: false`) instead of joining its neighbours, so a line never
//! claims a value between two sizes or runs that nobody measured.

use serde::Serialize;

/// How the x axis is scaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    Linear,
    /// Logarithmic (base 2): ticks fall on powers of two, labelled with [`TickFormat`].
    Log2,
    /// One slot per name of [`Axis::categories`] (bar charts).
    Category,
}

/// How tick labels print a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TickFormat {
    /// A plain number (`1.5k`).
    Number,
    /// Bytes in binary units (`256 KiB`).
    Bytes,
    /// A count in binary multiples (`4Ki`).
    Elements,
    /// A whole number (run positions).
    Integer,
    /// Nanoseconds, printed in the unit that fits (`1.2 ms`).
    Duration,
}

#[derive(Clone, Debug, Serialize)]
pub struct Axis {
    pub title: String,
    pub scale: Scale,
    pub ticks: TickFormat,
    /// The names of a [`Scale::Category`] axis, in order (first at the top of a bar chart).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

impl Axis {
    pub fn new(title: impl Into<String>, scale: Scale, ticks: TickFormat) -> Axis {
        Axis {
            title: title.into(),
            scale,
            ticks,
            categories: Vec::new(),
        }
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// Points joined where consecutive ones were both measured.
    Line,
    /// A peak or roofline: dashed, no markers, not hoverable as a measurement.
    Reference,
    /// Horizontal bars over a category axis (stacked when `stack` is set).
    Bar,
}

/// One point: `x` (a category index on a category axis), the measured `y` or `None` where
/// nothing was measured, the exact value as the hover shows it, and the run it came from.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub x: f64,
    pub y: Option<f64>,
    /// The hover text: the exact value with its unit (and whatever else the reader needs).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The run id the value came from: the hover links to its page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// A spread around `y` (low, high), drawn as an error bar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
}

impl Point {
    pub fn measured(x: f64, y: f64, text: impl Into<String>) -> Point {
        Point {
            x,
            y: Some(y),
            text: text.into(),
            run: None,
            range: None,
        }
    }

    /// A slot where nothing was measured: the line breaks here.
    pub fn gap(x: f64, text: impl Into<String>) -> Point {
        Point {
            x,
            y: None,
            text: text.into(),
            run: None,
            range: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub name: String,
    pub style: Style,
    /// A CSS colour; the script's palette when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub colour: Option<String>,
    /// Bars with the same stack name are stacked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    pub points: Vec<Point>,
}

impl Series {
    pub fn new(name: impl Into<String>, style: Style, points: Vec<Point>) -> Series {
        Series {
            name: name.into(),
            style,
            colour: None,
            stack: None,
            points,
        }
    }

    pub fn coloured(mut self, colour: &str) -> Series {
        self.colour = Some(colour.into());
        self
    }

    /// How many points carry a measured value.
    pub fn measured_points(&self) -> usize {
        self.points.iter().filter(|p| p.y.is_some()).count()
    }
}

/// What a vertical marker stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// A change point the history found.
    Step,
    /// A step someone declared intentional (`analyze-trends ack`).
    Acknowledged,
}

/// A vertical line at `x` with its label.
#[derive(Clone, Debug, Serialize)]
pub struct Mark {
    pub x: f64,
    pub kind: MarkKind,
    pub label: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// Unique within its page: the element id and what tests look charts up by.
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
    /// Said under the chart (what was thinned, what was refused).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Chart {
    /// Whether anything is drawn at all; an empty chart is said to be missing instead.
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.measured_points() == 0)
    }
}

/// Series colours (the report's palette, as CSS).
pub const PALETTE: [&str; 8] = [
    "#2257a8", "#e67800", "#1b7f3b", "#963caa", "#0096a0", "#b49600", "#787878", "#c8285a",
];
pub const RED: &str = "#b00020";
pub const GREEN: &str = "#1b7f3b";
pub const GREY: &str = "#afafaf";

pub fn palette(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The report's colour per precision (the dashboard's, on white).
pub fn dtype_colour(dtype: &str) -> &'static str {
    match dtype {
        "f64" => palette(0),
        "f32" => "#282828",
        "tf32" => palette(3),
        "f16" => palette(4),
        "bf16" => palette(5),
        "fp8e4m3" => palette(2),
        _ => palette(1),
    }
}

/// Gives every series a point (a gap, `y: None`) at each x that another series of the chart
/// measured and it did not, so its line breaks where its own measurements are missing
/// instead of bridging them. Points stay in x order.
pub fn break_at_missing(series: &mut [Series], gap_text: &str) {
    let mut xs: Vec<f64> = series
        .iter()
        .filter(|s| s.style == Style::Line)
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for s in series.iter_mut().filter(|s| s.style == Style::Line) {
        let (Some(first), Some(last)) =
            (s.points.first().map(|p| p.x), s.points.last().map(|p| p.x))
        else {
            continue;
        };
        // Only inside the series' own span: before its first or after its last point
        // there is no line to break.
        for &x in xs.iter().filter(|&&x| x > first && x < last) {
            if !s.points.iter().any(|p| p.x == x) {
                s.points.push(Point::gap(x, gap_text));
            }
        }
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
}

/// About `2 * buckets` of `points` (x ascending): the lowest and the highest point of
/// each of `buckets` equal slices, in x order. A chart a few hundred pixels wide cannot
/// show more than that, and unlike a plain stride it keeps every step and outlier; the
/// snapshot report would otherwise carry 1,000 × 1,000 points. A slice with a gap keeps one
/// (at most `3 * buckets` points), so a thinned line still breaks where nothing was measured.
pub fn min_max_decimate(points: &[Point], buckets: usize) -> Vec<Point> {
    if buckets == 0 || points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(2 * buckets);
    for b in 0..buckets {
        let slice = &points[b * points.len() / buckets..(b + 1) * points.len() / buckets];
        let by_y =
            |a: &&Point, c: &&Point| a.y.unwrap_or(f64::NAN).total_cmp(&c.y.unwrap_or(f64::NAN));
        let measured = || slice.iter().filter(|p| p.y.is_some());
        let (Some(lo), Some(hi)) = (measured().min_by(by_y), measured().max_by(by_y)) else {
            continue;
        };
        // A slice with an unmeasured run keeps one gap, so the thinned line still breaks.
        let gap = slice.iter().find(|p| p.y.is_none());
        let mut kept: Vec<&Point> = [Some(lo), Some(hi), gap].into_iter().flatten().collect();
        kept.sort_by(|a, b| a.x.total_cmp(&b.x));
        kept.dedup_by(|a, b| a.x == b.x);
        out.extend(kept.into_iter().cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, xs: &[f64]) -> Series {
        Series::new(
            name,
            Style::Line,
            xs.iter().map(|&x| Point::measured(x, 1.0, "")).collect(),
        )
    }

    #[test]
    fn a_series_breaks_where_another_measured_and_it_did_not() {
        let mut series = vec![
            line("a", &[1.0, 2.0, 4.0, 8.0]),
            line("b", &[1.0, 8.0]),
            line("c", &[2.0, 4.0]),
        ];
        break_at_missing(&mut series, "not measured");
        let b: Vec<(f64, bool)> = series[1]
            .points
            .iter()
            .map(|p| (p.x, p.y.is_some()))
            .collect();
        assert_eq!(b, [(1.0, true), (2.0, false), (4.0, false), (8.0, true)]);
        // Outside its own span nothing is added.
        assert_eq!(series[2].points.len(), 2);
        assert_eq!(series[1].measured_points(), 2);
    }

    #[test]
    fn decimation_keeps_steps_and_outliers_in_order() {
        let mut points: Vec<Point> = (0..1000)
            .map(|i| Point::measured(i as f64, if i < 600 { 10.0 } else { 12.0 }, ""))
            .collect();
        points[333].y = Some(50.0);
        points[777].y = Some(1.0);
        let kept = min_max_decimate(&points, 100);
        assert!(kept.len() <= 200, "{}", kept.len());
        assert!(kept.windows(2).all(|w| w[0].x < w[1].x), "x order");
        for (x, y) in [(333.0, 50.0), (777.0, 1.0), (0.0, 10.0)] {
            assert!(
                kept.iter().any(|p| p.x == x && p.y == Some(y)),
                "({x}, {y}) dropped"
            );
        }
        assert!(kept.iter().any(|p| p.x < 600.0 && p.y == Some(10.0)));
        assert!(kept.iter().any(|p| p.x >= 600.0 && p.y == Some(12.0)));
        assert_eq!(min_max_decimate(&points[..150], 100).len(), 150);
        // An unmeasured run survives thinning as a gap.
        points[500] = Point::gap(500.0, "");
        let kept = min_max_decimate(&points, 100);
        assert!(kept.iter().any(|p| p.x == 500.0 && p.y.is_none()));
    }
}
