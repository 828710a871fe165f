//! `report.html`: one self-contained file (no network, no script libraries): per-benchmark
//! time-series charts as inline SVG with change points marked, latest-vs-previous bars,
//! regressions listed first.

use super::run_name;
use crate::analysis::trends::{BenchmarkTrend, HardwareGroup, TrendReport};
use crate::report::format::{format_ns, format_percent};
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}\
.regressed{color:#b00020;font-weight:bold}.suspect{color:#b36b00}.improved{color:#1b7f3b}\
.card{display:inline-block;vertical-align:top;margin:6px;padding:6px;border:1px solid #ccc;border-radius:4px}\
.card h4{margin:0 0 4px 0;font-size:12px;font-family:monospace;max-width:360px;overflow-wrap:anywhere}\
svg text{font-size:10px;fill:#555}";

use crate::report::format::escape_html as escape;

/// The time series of one benchmark: medians per run, change points as dashed red lines,
/// the segment medians as grey steps.
fn chart(g: &HardwareGroup, b: &BenchmarkTrend) -> String {
    let (w, h, pad) = (360.0, 120.0, 28.0);
    let runs = g.runs.len().max(2) as f64;
    let lo = b.points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = b
        .points
        .iter()
        .map(|p| p.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo {
        hi - lo
    } else {
        hi.abs().max(1.0) * 0.01
    };
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (runs - 1.0);
    let y = |v: f64| h - pad + (v - lo) / span * -(h - 2.0 * pad);
    let mut svg =
        format!("<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">");
    let _ = write!(
        svg,
        "<text x=\"2\" y=\"{:.0}\">{}</text><text x=\"2\" y=\"{:.0}\">{}</text>",
        pad - 4.0,
        escape(&format_ns(hi)),
        h - pad + 12.0,
        escape(&format_ns(lo))
    );
    for cp in &b.change_points {
        let cx = x(cp.run_index) - (x(1) - x(0)) / 2.0;
        let _ = write!(
            svg,
            "<line x1=\"{cx:.1}\" y1=\"{:.0}\" x2=\"{cx:.1}\" y2=\"{:.0}\" stroke=\"#d00\" stroke-dasharray=\"3,2\"><title>step {} at {}</title></line>",
            pad / 2.0,
            h - pad / 2.0,
            escape(&format_percent(Some(cp.change_percent))),
            escape(&run_name(g, cp.run_index))
        );
    }
    let line: Vec<String> = b
        .points
        .iter()
        .map(|&(i, v)| format!("{:.1},{:.1}", x(i), y(v)))
        .collect();
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2257a8\" stroke-width=\"1.5\" points=\"{}\"/>",
        line.join(" ")
    );
    for &(i, v) in &b.points {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2\" fill=\"#2257a8\"><title>{}: {}</title></circle>",
            x(i),
            y(v),
            escape(&run_name(g, i)),
            escape(&format_ns(v))
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A horizontal bar of the latest run's change against the runs before it.
fn bar(change: Option<f64>, threshold: f64) -> String {
    let Some(c) = change.filter(|c| c.is_finite()) else {
        return String::new();
    };
    let scale = 100.0 / (4.0 * threshold).max(c.abs());
    let width = (c.abs() * scale).max(1.0);
    let (x, color) = if c >= 0.0 {
        (100.0, "#b00020")
    } else {
        (100.0 - width, "#1b7f3b")
    };
    format!(
        "<svg width=\"200\" height=\"14\"><rect x=\"{x:.1}\" y=\"2\" width=\"{width:.1}\" height=\"10\" fill=\"{color}\"/><line x1=\"100\" y1=\"0\" x2=\"100\" y2=\"14\" stroke=\"#333\"/></svg> {}",
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
    out.push_str("<h3>History</h3>");
    for b in &g.benchmarks {
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
}

pub fn render(report: &TrendReport) -> String {
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
