//! `report.html`: one self-contained file (no network, no scripts): the newest run's charts
//! (`run_pages`), regressions listed first, latest-vs-baseline bars, and per-benchmark
//! history charts with change points marked, collapsed by family so 1,000 benchmarks stay
//! readable. Charts are drawn by plotters as inline SVG (`charts`).

use super::charts::{LineSeriesSpec, LineSpec, RED, XScale, line_chart, min_max_decimate, palette};
use super::run_name;
use crate::analysis::trends::{BenchmarkTrend, HardwareGroup, TrendReport, TrendStatus};
use crate::report::format::{format_ns, format_percent};
use crate::results::RunRecord;
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}\
.regressed{color:#b00020;font-weight:bold}.suspect{color:#b36b00}.improved{color:#1b7f3b}\
.card{display:inline-block;vertical-align:top;margin:6px;padding:6px;border:1px solid #ccc;border-radius:4px}\
.card h4{margin:0 0 4px 0;font-size:12px;font-family:monospace;max-width:360px;overflow-wrap:anywhere}\
.delta{display:inline-block;position:relative;width:120px;height:10px;background:#eee;vertical-align:middle}\
.delta span{position:absolute;top:0;height:10px}.delta .up{background:#b00020}.delta .down{background:#1b7f3b}\
.charts{display:flex;flex-wrap:wrap}figure.chart{margin:6px;border:1px solid #ccc;border-radius:4px;padding:4px}\
figcaption{font-size:12px;color:#555}.charts .nochart{flex-basis:100%;margin:2px 6px}details{margin:4px 0}summary{cursor:pointer;font-weight:bold}.nochart{color:#777}";

use crate::report::format::escape_html as escape;

/// Slices a history chart's runs are drawn in once there are more than twice as many
/// runs: two points per slice is still more than one per pixel of the plot.
const HISTORY_BUCKETS: usize = 120;

/// The time series of one benchmark: medians per run, change points as red lines.
fn chart(g: &HardwareGroup, b: &BenchmarkTrend) -> String {
    let max = b.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let (div, unit) = crate::units::time_unit(max);
    let points: Vec<(f64, f64)> = b
        .points
        .iter()
        .map(|&(i, v)| ((i + 1) as f64, v / div))
        .collect();
    let drawn = if points.len() > 2 * HISTORY_BUCKETS {
        format!(
            " (the lowest and highest of each of {HISTORY_BUCKETS} slices of its {} runs)",
            points.len()
        )
    } else {
        String::new()
    };
    let mut series = vec![LineSeriesSpec {
        name: "median time per iteration".into(),
        points: min_max_decimate(&points, HISTORY_BUCKETS),
        colour: palette(0),
        reference: false,
    }];
    for cp in &b.change_points {
        let x = cp.run_index as f64 + 0.5;
        series.push(LineSeriesSpec {
            name: format!(
                "step {} at {}",
                format_percent(Some(cp.change_percent)),
                run_name(g, cp.run_index)
            ),
            points: vec![(x, 0.0), (x, max / div)],
            colour: RED,
            reference: true,
        });
    }
    let spec = LineSpec {
        title: b.id.clone(),
        x_title: "run (oldest first)".into(),
        y_title: format!("time per iteration ({unit})"),
        x: XScale::Linear,
        series,
        y_unit: unit.into(),
    };
    match line_chart(&spec) {
        Ok(svg) => format!(
            "<figure class=\"chart\">{svg}<figcaption>{} history{drawn}</figcaption></figure>",
            escape(&b.id)
        ),
        Err(e) => format!("<p class=\"nochart\">no chart: {}</p>", escape(&e)),
    }
}

/// The latest run's change against the runs before it, as a bar either side of zero.
fn bar(change: Option<f64>, threshold: f64) -> String {
    let Some(c) = change.filter(|c| c.is_finite()) else {
        return String::new();
    };
    let width = (c.abs() / (4.0 * threshold).max(c.abs()) * 50.0).max(1.0);
    let (side, class) = if c >= 0.0 {
        ("left:50%", "up")
    } else {
        ("right:50%", "down")
    };
    format!(
        "<span class=\"delta\"><span class=\"{class}\" style=\"{side};width:{width:.1}%\"></span></span> {}",
        escape(&format_percent(Some(c)))
    )
}

fn group_section(out: &mut String, g: &HardwareGroup, threshold: f64) {
    let _ = write!(
        out,
        "<h2>Hardware <code>{}</code>: {} runs, <span class=\"{}\">{}</span></h2>",
        escape(&g.fingerprint),
        g.runs.len(),
        g.overall_status.as_str(),
        g.overall_status.as_str()
    );
    out.push_str("<h3>Latest run vs baseline</h3><p>Baseline: the level before the most recent step, else the median of the previous runs.</p><table><tr><th>status</th><th>benchmark</th><th>baseline</th><th>latest</th><th>change</th><th>steps</th></tr>");
    for b in &g.benchmarks {
        let _ = write!(
            out,
            "<tr><td class=\"{s}\">{s}</td><td><a href=\"#{anchor}\"><code>{id}</code></a></td><td>{baseline}</td><td>{latest}</td><td>{bar}</td><td>{steps}</td></tr>",
            s = b.status.as_str(),
            anchor = escape(&format!("{}-{}", g.fingerprint, b.id)),
            id = escape(&b.id),
            baseline = escape(&b.baseline_ns.map_or("n/a".into(), format_ns)),
            latest = escape(&format_ns(b.latest_ns)),
            bar = bar(b.latest_vs_baseline_percent, threshold),
            steps = b.change_points.len()
        );
    }
    out.push_str("</table>");
    if !g.not_measured.is_empty() {
        out.push_str("<h3>Not measured in the latest run</h3><table><tr><th>outcome</th><th>benchmark</th><th>reason</th></tr>");
        for n in &g.not_measured {
            let class = if n.outcome == "failed" {
                "regressed"
            } else {
                "new"
            };
            let _ = write!(
                out,
                "<tr><td class=\"{class}\">{}</td><td><code>{}</code></td><td>{}</td></tr>",
                n.outcome,
                escape(&n.id),
                escape(&n.reason)
            );
        }
        out.push_str("</table>");
    }
    acknowledged_table(out, g);
    history_section(out, g);
}

/// Every benchmark's history chart, in a collapsed `<details>` per family (open when the
/// family has a regression), so 1,000 benchmarks stay readable.
fn history_section(out: &mut String, g: &HardwareGroup) {
    out.push_str(
        "<h3>History</h3><p>By family, regressions first; a family with a regression is open.</p>",
    );
    let mut families: Vec<(&str, Vec<&BenchmarkTrend>)> = Vec::new();
    for b in &g.benchmarks {
        let family = b.id.split('/').next().unwrap_or_default();
        match families.iter_mut().find(|(f, _)| *f == family) {
            Some((_, list)) => list.push(b),
            None => families.push((family, vec![b])),
        }
    }
    for (family, list) in families {
        let regressed = list
            .iter()
            .filter(|b| b.status == TrendStatus::Regressed)
            .count();
        let _ = write!(
            out,
            "<details class=\"family\"{}><summary>{} — {} benchmarks, {} regressed</summary>",
            if regressed > 0 { " open" } else { "" },
            escape(family),
            list.len(),
            regressed
        );
        for b in list {
            let _ = write!(
                out,
                "<div class=\"card\" id=\"{}\"><h4 class=\"{}\">{} — {}</h4>{}</div>",
                escape(&format!("{}-{}", g.fingerprint, b.id)),
                b.status.as_str(),
                escape(&b.id),
                b.status.as_str(),
                chart(g, b)
            );
        }
        out.push_str("</details>");
    }
}

/// The report: run pages for the newest run (against the run before it on the same
/// hardware), then regressions and the history per hardware group.
pub fn render(report: &TrendReport, runs: &[RunRecord]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Benchmark trends</title><style>{STYLE}</style></head><body>"
    );
    let _ = write!(
        out,
        "<h1>Benchmark trends: <span class=\"{s}\">{s}</span></h1><p>Generated {} · threshold {} %</p>",
        escape(&report.generated),
        report.threshold_percent,
        s = report.overall_status.as_str()
    );
    for p in &report.problems {
        let _ = write!(out, "<p class=\"suspect\">run not read: {}</p>", escape(p));
    }
    if let Some(latest) = runs.iter().max_by_key(|r| r.created_unix_ms) {
        let before = runs
            .iter()
            .filter(|r| {
                r.fingerprint == latest.fingerprint && r.created_unix_ms < latest.created_unix_ms
            })
            .max_by_key(|r| r.created_unix_ms);
        super::run_pages::render(&mut out, latest, before);
    }
    let regressions: Vec<_> = report.regressions().collect();
    if !regressions.is_empty() {
        out.push_str("<h2 class=\"regressed\">Regressions</h2><ul>");
        for (g, b) in regressions {
            if let Some(cp) = b.change_points.last() {
                let _ = write!(
                    out,
                    "<li><code>{}</code> on {}: {} → {} ({}) starting with {}</li>",
                    escape(&b.id),
                    escape(&g.fingerprint),
                    escape(&format_ns(cp.before_ns)),
                    escape(&format_ns(cp.after_ns)),
                    escape(&format_percent(Some(cp.change_percent))),
                    escape(&run_name(g, cp.run_index))
                );
            }
        }
        out.push_str("</ul>");
    }
    for g in &report.groups {
        group_section(&mut out, g, report.threshold_percent);
    }
    out.push_str("</body></html>\n");
    out
}

/// Steps someone declared intentional (`analyze-trends ack`): the verdicts start from
/// their new level, and the reader should see who said so and why.
fn acknowledged_table(out: &mut String, g: &HardwareGroup) {
    let acknowledged: Vec<_> = g.acknowledged().collect();
    if acknowledged.is_empty() {
        return;
    }
    out.push_str("<h3>Acknowledged steps</h3><p>Judged from the level after the acknowledged run.</p><table><tr><th>benchmark</th><th>from run</th><th>why</th><th>who</th><th>when</th></tr>");
    for (b, a) in acknowledged {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&b.id),
            escape(&a.run_id),
            escape(&a.reason),
            escape(&a.who),
            crate::results::format_rfc3339_ms(a.created_unix_ms)
        );
    }
    out.push_str("</table>");
}
