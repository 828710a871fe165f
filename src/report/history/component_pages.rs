//! The components charts of `report.html`'s run page, the dashboard's page 4 drawn by
//! plotters: PyTorch matmul against size per dtype, the SDPA backends at one shape (a
//! refused backend is a labelled empty bar with torch's reason on hover and in the
//! caption), vLLM tokens/s against batch with p99..p50 bars, and DeepSpeed memory per ZeRO
//! stage stacked by phase. The numbers come from [`ComponentCharts`], as the dashboard's do.

use super::charts::{
    BarSpec, BarsSpec, ErrorBarSpec, GREY, LineSeriesSpec, LineSpec, StackedBarsSpec, XScale,
    bar_chart, dtype_colour, figure, line_chart, line_chart_with_bars, palette, stacked_bar_chart,
};
use crate::report::format::format_ns;
use crate::units::{SizeUnit, format_number};
use crate::view::component_model::{
    ComponentCharts, SdpaChart, SdpaOutcome, ZERO_SEGMENTS, flop_unit,
};
use plotters::style::RGBColor;

/// A refused backend's bar and legend colour (the dashboard's warning, on white).
const REFUSED: RGBColor = RGBColor(200, 140, 0);
const FAILED: RGBColor = RGBColor(176, 0, 32);

/// The four components figures, each drawn or said to be missing.
pub fn render(out: &mut String, charts: &ComponentCharts) {
    figure(out, "PyTorch matmul vs size", line_chart(&matmul(charts)));
    let (sdpa_spec, sdpa_caption) = sdpa(charts.sdpa.as_ref());
    figure(out, &sdpa_caption, bar_chart(&sdpa_spec));
    let (serving_spec, bars) = serving(charts);
    figure(
        out,
        "vLLM output tokens/s against batch; each bar spans the tokens/s of a call at the \
         p99 latency (bottom) to one at the p50 latency (top)",
        line_chart_with_bars(&serving_spec, &bars, "p99..p50 call latency"),
    );
    figure(
        out,
        "DeepSpeed memory by ZeRO stage: at rest (parameters and optimizer state), added by \
         backward (gradients), added at the step's peak (activations, temporaries)",
        stacked_bar_chart(&zero(charts)),
    );
}

fn matmul(charts: &ComponentCharts) -> LineSpec {
    let (factor, unit) = charts.matmul_unit();
    let series = charts
        .matmul
        .iter()
        .map(|(dtype, points)| LineSeriesSpec {
            name: dtype.clone(),
            points: points
                .iter()
                .map(|&(x, y)| (x.exp2(), y * factor))
                .collect(),
            colour: dtype_colour(dtype),
            reference: false,
        })
        .collect();
    LineSpec {
        title: "PyTorch matmul throughput vs size, per dtype".into(),
        x_title: "matrix side n (n×n×n, log scale)".into(),
        y_title: format!("throughput ({unit})"),
        x: XScale::Log(SizeUnit::Elements),
        series,
        y_unit: unit.into(),
    }
}

/// The SDPA bars and the figure's caption, which names each refusal and its reason.
fn sdpa(sdpa: Option<&SdpaChart>) -> (BarsSpec, String) {
    let Some(sdpa) = sdpa else {
        let empty = BarsSpec {
            title: String::new(),
            x_title: String::new(),
            bars: Vec::new(),
        };
        return (empty, "SDPA backends".into());
    };
    let (factor, unit) = flop_unit(sdpa.max_tflops());
    let bars = sdpa
        .backends
        .iter()
        .map(|b| {
            let (label, value, colour, hover, legend) = match &b.outcome {
                SdpaOutcome::Measured { tflops, median_ns } => (
                    b.name.clone(),
                    tflops * factor,
                    palette(0),
                    format!(
                        "{} {unit} ({})",
                        format_number(tflops * factor),
                        format_ns(*median_ns)
                    ),
                    "measured",
                ),
                SdpaOutcome::Refused { reason } => {
                    let hover = format!("refused: {reason}");
                    (
                        format!("{} (refused)", b.name),
                        0.0,
                        REFUSED,
                        hover,
                        "refused",
                    )
                }
                SdpaOutcome::Failed { error } => {
                    let hover = format!("failed: {error}");
                    (format!("{} (FAILED)", b.name), 0.0, FAILED, hover, "failed")
                }
            };
            BarSpec {
                label,
                value,
                colour,
                hover,
                legend: Some(legend.into()),
            }
        })
        .collect();
    let mut caption = format!("SDPA backends at {}", sdpa.shape);
    for (reason, names) in sdpa.not_run() {
        caption.push_str(&format!("; {}: {reason}", names.join(", ")));
    }
    let spec = BarsSpec {
        title: format!("SDPA backends, {}", sdpa.shape),
        x_title: unit.into(),
        bars,
    };
    (spec, caption)
}

fn serving(charts: &ComponentCharts) -> (LineSpec, Vec<ErrorBarSpec>) {
    let mut series = Vec::new();
    let mut bars = Vec::new();
    for (i, (shape, points)) in charts.serving.iter().enumerate() {
        let colour = palette(i);
        for p in points {
            if let (Some(hi), Some(lo)) = (p.at_p50, p.at_p99) {
                bars.push(ErrorBarSpec {
                    x: p.batch as f64,
                    at: p.tokens_per_s,
                    lo,
                    hi,
                    colour,
                    hover: format!(
                        "{shape} batch {}: {} tokens/s; p99 call {} .. p50 call {} tokens/s",
                        p.batch,
                        format_number(p.tokens_per_s),
                        format_number(lo),
                        format_number(hi)
                    ),
                });
            }
        }
        series.push(LineSeriesSpec {
            name: shape.clone(),
            points: points
                .iter()
                .map(|p| (p.batch as f64, p.tokens_per_s))
                .collect(),
            colour,
            reference: false,
        });
    }
    let spec = LineSpec {
        title: "vLLM output tokens/s vs batch".into(),
        x_title: "batch (requests, log scale)".into(),
        y_title: "output tokens/s".into(),
        x: XScale::Log(SizeUnit::Elements),
        series,
        y_unit: "tokens/s".into(),
    };
    (spec, bars)
}

fn zero(charts: &ComponentCharts) -> StackedBarsSpec {
    let colours = [palette(0), palette(1), palette(2), GREY];
    StackedBarsSpec {
        title: "DeepSpeed device memory by ZeRO stage".into(),
        x_title: "device memory (MiB)".into(),
        parts: ZERO_SEGMENTS
            .iter()
            .zip(colours)
            .map(|(name, colour)| (name.to_string(), colour))
            .collect(),
        rows: charts
            .zero
            .iter()
            .map(|z| {
                let mib = z.memory.segments().map(|b| b / 1_048_576.0).to_vec();
                (z.label.clone(), mib)
            })
            .collect(),
        unit: "MiB".into(),
    }
}
