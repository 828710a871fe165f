//! The reports from the fixture runs: `report.md` carries the text charts, and `report.html`
//! is checked in a real browser: the report is written from the fixture runs by the
//! real `analyze-trends report`, then loaded in headless Chromium with a checking script
//! appended to a copy (the report itself stays script-free). The script lays out every
//! chart and reports, per chart, its drawn size, its tick labels, axis titles and legend;
//! `--dump-dom` brings the result back.
//!
//! Without Chromium the test is skipped with a message, unless `STACKBENCH_REQUIRE_TOOLS=1`.

mod dashboard_support;

use std::process::Command;

const CHECK: &str = r#"<script>
document.querySelectorAll('details').forEach(d => { d.open = true; });
const out = [...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const texts = svg ? [...svg.querySelectorAll('text')].map(t => t.textContent.trim()).filter(Boolean) : [];
  const titles = svg ? svg.querySelectorAll('title').length : 0;
  return {caption: f.querySelector('figcaption').textContent, width: box.width, height: box.height,
          texts: texts.length, titles, text: texts.join('|')};
});
const pre = document.createElement('pre');
pre.id = 'chart-check';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

fn chromium() -> Option<&'static str> {
    dashboard_support::tool_present("chromium", "--version").then_some("chromium")
}

/// The fixture runs and the reports `analyze-trends report` writes from them.
fn write_report() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let status = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .arg("report")
        .arg(dir.path())
        .output()
        .unwrap();
    // Exit 1 means "a regression was found" (the fixture has one); anything else failed.
    assert!(
        matches!(status.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    dir
}

#[test]
fn the_markdown_report_embeds_the_text_charts() {
    let dir = write_report();
    let md = std::fs::read_to_string(dir.path().join("reports/report.md")).unwrap();
    for expected in [
        "```text\n── 8 Summary ──",
        "── 5 Before/after ──",
        "GEMM cpu f32",
        "3 improved ▲ · 1 degraded ▼",
    ] {
        assert!(
            md.contains(expected),
            "`{expected}` missing from report.md:\n{md}"
        );
    }
}

#[test]
fn every_chart_renders_with_axes_and_a_legend_in_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = write_report();
    let html = std::fs::read_to_string(dir.path().join("reports/report.html")).unwrap();
    assert!(
        !html.contains("<script"),
        "the report must stay script-free"
    );
    // (SVG's xmlns is a name, not a fetch.)
    for fetch in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(
            !html.contains(fetch),
            "the report fetches `{fetch}`: it must be self-contained"
        );
    }
    let checked = dir.path().join("checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECK}</body>")),
    )
    .unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", checked.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"chart-check\">")
        .expect("the check script ran")
        + 22;
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let charts: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    // Eleven run charts (bandwidth, precision, GEMM, tensor ops, attention, components,
    // PyTorch matmul, SDPA, vLLM, DeepSpeed, before/after) and one history chart per
    // benchmark.
    assert!(charts.len() >= 11 + 30, "{} charts", charts.len());
    for c in &charts {
        let caption = c["caption"].as_str().unwrap();
        let text = c["text"].as_str().unwrap();
        assert!(
            c["width"].as_f64().unwrap() > 300.0 && c["height"].as_f64().unwrap() > 150.0,
            "{caption} not laid out: {c}"
        );
        assert!(
            c["texts"].as_u64().unwrap() >= 6,
            "{caption}: too few labels: {text}"
        );
        assert!(
            c["titles"].as_u64().unwrap() >= 1,
            "{caption}: no hover titles"
        );
        assert!(
            [
                "GB/s", "GFLOP/s", "TFLOP/s", "tokens/s", "(MiB)", "(ms)", "(µs)", "(ns)", "(s)",
                "%"
            ]
            .iter()
            .any(|u| text.contains(u)),
            "{caption}: no unit on an axis: {text}"
        );
    }
    let all: String = charts
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_string())
        .collect();
    for expected in [
        "size per array (bytes, log scale)",
        "cpu/triad",
        "measured",
        "peak",
        "median time per iteration",
        "slower (after)",
        // The components charts: axes in units, legends, refusals and error bars.
        "PyTorch matmul throughput vs size, per dtype",
        "matrix side n (n×n×n, log scale)",
        "throughput (GFLOP/s)",
        "bf16",
        "cudnn (refused)",
        "output tokens/s",
        "batch (requests, log scale)",
        "p99..p50 call latency",
        "in128 out128",
        "device memory (MiB)",
        "params+optim",
        "activations",
        "ZeRO 3",
    ] {
        assert!(
            all.contains(expected),
            "`{expected}` missing from the charts"
        );
    }
}
