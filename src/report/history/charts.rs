//! The charts of `report.html`, drawn by plotters into SVG strings: line charts (linear or
//! log2 x axis, optionally with error bars) and horizontal bar charts (plain or stacked),
//! each with axis titles in units, ticks and a legend. plotters' SVG has no hover text, so
//! each point or bar also gets a transparent target carrying a `<title>` with its value,
//! placed with the chart's own coordinate map.

use crate::report::format::escape_html;
use crate::units::{SizeUnit, format_number, format_size};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write;

pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 340;
/// The most points of a line that get a visible marker.
const MAX_MARKED: usize = 100;

/// Series colours, then the colours for before (red) and after (green).
const PALETTE: [RGBColor; 8] = [
    RGBColor(34, 87, 168),
    RGBColor(230, 120, 0),
    RGBColor(27, 127, 59),
    RGBColor(150, 60, 170),
    RGBColor(0, 150, 160),
    RGBColor(180, 150, 0),
    RGBColor(120, 120, 120),
    RGBColor(200, 40, 90),
];
pub const RED: RGBColor = RGBColor(176, 0, 32);
pub const GREEN: RGBColor = RGBColor(27, 127, 59);
pub const GREY: RGBColor = RGBColor(175, 175, 175);

pub fn palette(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One line (with its points marked) of a line chart.
pub struct LineSeriesSpec {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub colour: RGBColor,
    /// A reference line (peak, roofline): dashed look via thinner grey stroke, no markers.
    pub reference: bool,
}

pub enum XScale {
    /// x values are sizes; the axis is logarithmic, labelled in bytes or elements.
    Log(SizeUnit),
    Linear,
}

pub struct LineSpec {
    pub title: String,
    pub x_title: String,
    pub y_title: String,
    pub x: XScale,
    pub series: Vec<LineSeriesSpec>,
    /// Formats a y value with its unit for the hover text.
    pub y_unit: String,
}

/// One bar of a horizontal bar chart.
pub struct BarSpec {
    pub label: String,
    pub value: f64,
    pub colour: RGBColor,
    /// Hover text (and the legend groups bars by `legend` when set).
    pub hover: String,
    pub legend: Option<String>,
}

pub struct BarsSpec {
    pub title: String,
    pub x_title: String,
    pub bars: Vec<BarSpec>,
}

type Draw<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// A hover target: (x px, y px, text).
type HoverTarget = (i32, i32, String);

/// Hover targets appended inside the SVG: (x px, y px, text).
fn with_titles(mut svg: String, targets: &[(i32, i32, String)]) -> String {
    let mut extra = String::from("<g class=\"hover\">");
    for (x, y, text) in targets {
        let _ = write!(
            extra,
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"5\" fill=\"transparent\"><title>{}</title></circle>",
            escape_html(text)
        );
    }
    extra.push_str("</g></svg>");
    if let Some(end) = svg.rfind("</svg>") {
        svg.replace_range(end.., &extra);
    }
    svg
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    lo.is_finite().then_some((lo, hi))
}

/// At most `2 * buckets` of `points` (x ascending): the lowest and the highest point of
/// each of `buckets` equal slices, in x order. A chart a few hundred pixels wide cannot
/// show more than that, and unlike a plain stride it keeps every step and outlier; with a
/// hover target per point, 1,000 charts of 1,000 runs would otherwise weigh 200 MB.
pub fn min_max_decimate(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    if buckets == 0 || points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(2 * buckets);
    for b in 0..buckets {
        let slice = &points[b * points.len() / buckets..(b + 1) * points.len() / buckets];
        let by_y = |a: &&(f64, f64), c: &&(f64, f64)| a.1.total_cmp(&c.1);
        let (Some(lo), Some(hi)) = (slice.iter().min_by(by_y), slice.iter().max_by(by_y)) else {
            continue;
        };
        let (first, second) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push(*first);
        if second != first {
            out.push(*second);
        }
    }
    out
}

/// A vertical bar at `x` from `lo` to `hi` (a spread around a point: the p99..p50 range).
pub struct ErrorBarSpec {
    pub x: f64,
    /// The point the bar belongs to (plotters marks it with a dot).
    pub at: f64,
    pub lo: f64,
    pub hi: f64,
    pub colour: RGBColor,
    /// Hover text of the bar.
    pub hover: String,
}

/// A line chart as an SVG string (or the reason it could not be drawn).
pub fn line_chart(spec: &LineSpec) -> Result<String, String> {
    line_chart_with_bars(spec, &[], "")
}

/// A line chart with vertical error bars, whose meaning `bars_legend` gives in the legend.
pub fn line_chart_with_bars(
    spec: &LineSpec,
    bars: &[ErrorBarSpec],
    bars_legend: &str,
) -> Result<String, String> {
    let all = || spec.series.iter().flat_map(|s| s.points.iter().copied());
    let (x_lo, x_hi) = bounds(all().map(|p| p.0)).ok_or("no points")?;
    let (_, y_hi) =
        bounds(all().map(|p| p.1).chain(bars.iter().map(|b| b.hi))).ok_or("no points")?;
    let y_hi = if y_hi > 0.0 { y_hi * 1.1 } else { 1.0 };
    let mut svg = String::new();
    let targets;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        targets = match spec.x {
            XScale::Log(unit) => {
                let (lo, hi) = (x_lo / 1.5, x_hi * 1.5);
                draw_lines(
                    &root,
                    (spec, bars, bars_legend),
                    (lo..hi).log_scale().base(2.0),
                    y_hi,
                    move |v| format_size(*v, unit),
                )?
            }
            XScale::Linear => {
                let pad = ((x_hi - x_lo) * 0.05).max(0.5);
                draw_lines(
                    &root,
                    (spec, bars, bars_legend),
                    (x_lo - pad)..(x_hi + pad),
                    y_hi,
                    |v| format!("{v:.0}"),
                )?
            }
        };
        root.present().map_err(err)?;
    }
    Ok(with_titles(svg, &targets))
}

fn draw_lines<X>(
    root: &Draw,
    (spec, bars, bars_legend): (&LineSpec, &[ErrorBarSpec], &str),
    x_range: X,
    y_hi: f64,
    x_format: impl Fn(&f64) -> String,
) -> Result<Vec<(i32, i32, String)>, String>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(root)
        .caption(&spec.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(38)
        .y_label_area_size(58)
        .build_cartesian_2d(x_range, 0f64..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(&spec.x_title)
        .y_desc(&spec.y_title)
        .x_label_formatter(&x_format)
        .y_label_formatter(&|v| format_number(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    let mut targets = Vec::new();
    for s in &spec.series {
        let colour = s.colour;
        let width = if s.reference { 1 } else { 2 };
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(width),
            ))
            .map_err(err)?
            .label(&s.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
        if s.reference {
            continue;
        }
        // Past MAX_MARKED points the markers only overlap into a thick line; the hover
        // targets below still name every point.
        if s.points.len() <= MAX_MARKED {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(err)?;
        }
        for &(x, y) in &s.points {
            let (px, py) = chart.backend_coord(&(x, y));
            let hover = format!(
                "{}: {} → {} {}",
                s.name,
                x_format(&x),
                format_number(y),
                spec.y_unit
            );
            targets.push((px, py, hover));
        }
    }
    targets.extend(draw_error_bars(&mut chart, bars, bars_legend)?);
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(targets)
}

/// The error bars of a line chart, with one legend entry saying what they span; returns
/// their hover targets (at each bar's top).
fn draw_error_bars<X>(
    chart: &mut ChartContext<
        '_,
        SVGBackend<'_>,
        Cartesian2d<X, plotters::coord::types::RangedCoordf64>,
    >,
    bars: &[ErrorBarSpec],
    legend: &str,
) -> Result<Vec<(i32, i32, String)>, String>
where
    X: Ranged<ValueType = f64>,
{
    let mut targets = Vec::new();
    for (i, b) in bars.iter().enumerate() {
        let colour = b.colour;
        let style = colour.stroke_width(1);
        let drawn = chart
            .draw_series(std::iter::once(ErrorBar::new_vertical(
                b.x, b.lo, b.at, b.hi, style, 8,
            )))
            .map_err(err)?;
        if i == 0 && !legend.is_empty() {
            drawn.label(legend).legend(move |(x, y)| {
                PathElement::new(vec![(x + 9, y - 5), (x + 9, y + 5)], style)
            });
        }
        let (px, py) = chart.backend_coord(&(b.x, b.hi));
        targets.push((px, py, b.hover.clone()));
    }
    Ok(targets)
}

/// One drawn rectangle of a horizontal bar chart: row `row` (0 at the top) from `from` to
/// `to` on the value axis.
struct HRect {
    row: usize,
    from: f64,
    to: f64,
    colour: RGBColor,
    hover: String,
    legend: Option<String>,
}

/// A horizontal bar chart as an SVG string.
pub fn bar_chart(spec: &BarsSpec) -> Result<String, String> {
    let labels: Vec<String> = spec.bars.iter().map(|b| b.label.clone()).collect();
    let rects = spec
        .bars
        .iter()
        .enumerate()
        .map(|(row, b)| HRect {
            row,
            from: 0.0,
            to: b.value.max(0.0),
            colour: b.colour,
            hover: format!("{}: {}", b.label, b.hover),
            legend: b.legend.clone(),
        })
        .collect();
    hbars(&spec.title, &spec.x_title, &labels, rects)
}

/// Stacked horizontal bars: one row per label, one segment per part, in order.
pub struct StackedBarsSpec {
    pub title: String,
    pub x_title: String,
    /// (name, colour) of each part, for the legend.
    pub parts: Vec<(String, RGBColor)>,
    /// (row label, value of each part); zero parts are not drawn.
    pub rows: Vec<(String, Vec<f64>)>,
    /// Unit of the values, for the hover text.
    pub unit: String,
}

/// Stacked horizontal bars as an SVG string; each segment hovers with its part and value.
pub fn stacked_bar_chart(spec: &StackedBarsSpec) -> Result<String, String> {
    let labels: Vec<String> = spec.rows.iter().map(|r| r.0.clone()).collect();
    let mut rects = Vec::new();
    for (row, (label, values)) in spec.rows.iter().enumerate() {
        let mut from = 0.0;
        for (value, (part, colour)) in values.iter().zip(&spec.parts) {
            if !(value.is_finite() && *value > 0.0) {
                continue;
            }
            rects.push(HRect {
                row,
                from,
                to: from + value,
                colour: *colour,
                hover: format!(
                    "{label}: {part} {} {} (total {} {})",
                    format_number(*value),
                    spec.unit,
                    format_number(values.iter().sum()),
                    spec.unit
                ),
                legend: Some(part.clone()),
            });
            from += value;
        }
    }
    hbars(&spec.title, &spec.x_title, &labels, rects)
}

/// Draws `rects` over rows labelled `labels`, with a legend of their `legend` names.
fn hbars(
    title: &str,
    x_title: &str,
    labels: &[String],
    rects: Vec<HRect>,
) -> Result<String, String> {
    if rects.is_empty() {
        return Err("no bars".into());
    }
    let n = labels.len();
    // Room on the right for the legend box, so it does not cover the longest bar.
    let headroom = if rects.iter().any(|r| r.legend.is_some()) {
        1.3
    } else {
        1.1
    };
    let max = bounds(rects.iter().map(|r| r.to)).map_or(1.0, |b| b.1.max(1e-12)) * headroom;
    let height = (HEIGHT as usize).max(70 + 22 * n) as u32;
    let label_width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(4);
    let mut svg = String::new();
    let targets;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(38)
            .y_label_area_size((label_width as u32 * 6 + 12).min(WIDTH / 2))
            .build_cartesian_2d(0f64..max, (0..n).into_segmented())
            .map_err(err)?;
        // plotters counts segments from the bottom; the first row goes at the top.
        chart
            .configure_mesh()
            .x_desc(x_title)
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) if *i < n => labels[n - 1 - i].clone(),
                _ => String::new(),
            })
            .x_label_formatter(&|v| format_number(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        let (drawn, legends) = draw_rects(&mut chart, &rects, n)?;
        targets = drawn;
        if !legends.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(with_titles(svg, &targets))
}

type BarsChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
    >,
>;

/// Draws each rectangle in its row (row 0 at the top: plotters counts from the bottom) and
/// names each legend once; returns the hover targets and the legend names.
fn draw_rects(
    chart: &mut BarsChart,
    rects: &[HRect],
    n: usize,
) -> Result<(Vec<HoverTarget>, Vec<String>), String> {
    let mut targets = Vec::new();
    let mut legends: Vec<String> = Vec::new();
    for r in rects {
        let i = n - 1 - r.row;
        let colour = r.colour;
        let mut bar = Rectangle::new(
            [
                (r.from, SegmentValue::Exact(i)),
                (r.to, SegmentValue::Exact(i + 1)),
            ],
            colour.filled(),
        );
        bar.set_margin(2, 2, 0, 0);
        let series = chart.draw_series(std::iter::once(bar)).map_err(err)?;
        if let Some(name) = &r.legend
            && !legends.contains(name)
        {
            legends.push(name.clone());
            series.label(name).legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 12, y + 4)], colour.filled())
            });
        }
        let middle = (r.from + r.to) / 2.0;
        let (px, py) = chart.backend_coord(&(middle, SegmentValue::CenterOf(i)));
        targets.push((px, py, r.hover.clone()));
    }
    Ok((targets, legends))
}

/// A chart in a `<figure>`, or the reason it is missing (never silently absent).
pub(super) fn figure(out: &mut String, caption: &str, chart: Result<String, String>) {
    match chart {
        Ok(svg) => {
            let _ = write!(
                out,
                "<figure class=\"chart\">{svg}<figcaption>{}</figcaption></figure>",
                escape_html(caption)
            );
        }
        Err(reason) => {
            let _ = write!(
                out,
                "<p class=\"nochart\">{}: not in this run ({})</p>",
                escape_html(caption),
                escape_html(&reason)
            );
        }
    }
}

/// The report's colour per precision (the dashboard's, on white).
pub(super) fn dtype_colour(dtype: &str) -> RGBColor {
    match dtype {
        "f64" => palette(0),
        "f32" => RGBColor(40, 40, 40),
        "tf32" => palette(3),
        "f16" => palette(4),
        "bf16" => palette(5),
        "fp8e4m3" => palette(2),
        _ => palette(1),
    }
}

#[cfg(test)]
mod tests {
    use super::min_max_decimate;

    #[test]
    fn decimation_keeps_steps_and_outliers_in_order() {
        let mut points: Vec<(f64, f64)> = (0..1000)
            .map(|i| (i as f64, if i < 600 { 10.0 } else { 12.0 }))
            .collect();
        points[333].1 = 50.0;
        points[777].1 = 1.0;
        let kept = min_max_decimate(&points, 100);
        assert!(kept.len() <= 200, "{}", kept.len());
        assert!(kept.windows(2).all(|w| w[0].0 < w[1].0), "x order");
        for must in [(333.0, 50.0), (777.0, 1.0), (0.0, 10.0)] {
            assert!(kept.contains(&must), "{must:?} dropped");
        }
        // The step survives: points either side of it, at both levels.
        assert!(kept.iter().any(|p| p.0 < 600.0 && p.1 == 10.0));
        assert!(kept.iter().any(|p| p.0 >= 600.0 && p.1 == 12.0));
        // Short series are drawn whole.
        assert_eq!(
            min_max_decimate(&points[..150], 100),
            points[..150].to_vec()
        );
    }
}
