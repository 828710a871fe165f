//! The reports from the fixture runs: `report.md` carries the text charts, and `report.html`
//! (a self-contained snapshot of the dashboard's pages, drawn by `crates/report/assets/web/stackbench.js`
//! with the vendored ECharts) is checked in a real headless Chromium driven over the
//! DevTools protocol (`tests/browser_support`): every chart is drawn and laid out, a
//! history chart holds exactly the measured points, hovering a point shows its value and
//! run, a size a series did not measure is not bridged by its line (checked on the drawn
//! pixels), and a hostile benchmark name shows as text and runs nothing.
//!
//! Without Chromium the browser tests are skipped with a message, unless
//! `STACKBENCH_REQUIRE_TOOLS=1`.

mod browser_support;
mod dashboard_support;

use browser_support::Browser;
use serde_json::Value;
use stackbench::results::{RunRecord, RunStore};
use std::path::Path;
use std::process::Command;

/// The benchmark whose history the tests look at, and the run (index) that did not
/// measure it: its line must break there.
const HISTORY_ID: &str = "gemm/cpu/f32/256x256x256";
const HISTORY_GAP_RUN: usize = 5;
/// The size the newest run's `read` series did not measure (the other kernels did).
const UNMEASURED: &str = "memory_bandwidth/cpu/read/1MiB";
const HOSTILE: [&str; 2] = [
    "<script>window.__pwned=1;alert(1)</script>",
    "\"><img src=x onerror=\"window.__pwned=2\">",
];

/// The fixture runs with the holes and hostile names the tests look for.
fn fixture_runs() -> Vec<RunRecord> {
    let mut runs = dashboard_support::fixture_runs();
    runs[HISTORY_GAP_RUN]
        .benchmarks
        .retain(|b| b.id != HISTORY_ID);
    let last = runs.len() - 1;
    let newest = &mut runs[last];
    newest.benchmarks.retain(|b| b.id != UNMEASURED);
    for (i, name) in HOSTILE.iter().enumerate() {
        let mut b = newest.benchmarks[0].clone();
        b.id = format!("hostile/{name}/{i}");
        b.group = "hostile".into();
        b.throughput = None;
        newest.benchmarks.push(b);
    }
    runs
}

/// The fixture runs and the reports `analyze-trends report` writes from them.
fn write_report() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store = RunStore::new(dir.path());
    for run in fixture_runs() {
        store.save(&run).unwrap();
    }
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

fn report_url(dir: &Path) -> String {
    format!("file://{}", dir.join("reports/report.html").display())
}

/// The report loaded, built, and every `<details>` opened (which draws its charts).
fn open_report(browser: &mut Browser, dir: &Path) {
    browser.add_init_script("window.alert = function () { window.__pwned = 'alert'; };");
    browser.navigate(&report_url(dir));
    browser.wait_for("window.stackbench && window.stackbench.ready");
    assert_eq!(browser.eval("window.stackbench.error || null"), Value::Null);
    browser.eval("document.querySelectorAll('details').forEach(d => { d.open = true; }); true");
    let expected = browser.eval("document.querySelectorAll('figure.chart:not(.nochart)').length");
    browser.wait_for(&format!(
        "Object.keys(window.stackbench.charts).length >= {expected}"
    ));
}

#[test]
fn the_markdown_report_embeds_the_text_charts() {
    let dir = write_report();
    let md = std::fs::read_to_string(dir.path().join("reports/report.md")).unwrap();
    for expected in [
        "```text\n── 8 Summary ──",
        "── 5 Before/after ──",
        "GEMM cpu f32",
    ] {
        assert!(
            md.contains(expected),
            "`{expected}` missing from report.md:\n{md}"
        );
    }
}

#[test]
fn the_html_report_is_one_self_contained_file_without_hand_built_svg() {
    let dir = write_report();
    let html = std::fs::read_to_string(dir.path().join("reports/report.html")).unwrap();
    for fetch in ["<script src=", "<link ", "url(http", "@import"] {
        assert!(
            !html.contains(fetch),
            "the report fetches `{fetch}`: it must be self-contained"
        );
    }
    assert!(
        html.contains("<script type=\"application/json\" id=\"page-data\">"),
        "the page data"
    );
    assert!(html.contains("Apache"), "ECharts is inlined");
    assert!(!html.contains("<svg"), "no hand-built SVG charts remain");
    // A hostile name is in the data only as escaped JSON, never as markup.
    for name in HOSTILE {
        assert!(!html.contains(name), "{name} appears unescaped");
    }
}

#[test]
fn every_chart_is_drawn_laid_out_and_titled_without_clipping() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let dir = write_report();
    open_report(&mut browser, dir.path());
    let charts = browser.eval(
        "[...document.querySelectorAll('figure.chart:not(.nochart)')].map(f => {
           const plot = f.querySelector('.plot').getBoundingClientRect();
           const title = f.querySelector('.chart-title');
           const inst = window.stackbench.charts[f.dataset.chart];
           const opt = inst ? inst.getOption() : null;
           return {id: f.dataset.chart, width: plot.width, height: plot.height,
                   drawn: !!(inst && f.querySelector('canvas')),
                   clipped: title.scrollWidth > title.clientWidth + 1,
                   series: opt ? opt.series.length : 0,
                   xname: opt ? opt.xAxis[0].name : '', yname: opt ? opt.yAxis[0].name : ''};
         })",
    );
    let charts = charts.as_array().unwrap();
    // The newest run's charts (memory, GEMM twice, tensor ops, attention, before/after...)
    // and one history chart per benchmark.
    assert!(charts.len() >= 6 + 30, "{} charts", charts.len());
    for c in charts {
        assert!(c["drawn"] == true, "not drawn: {c}");
        assert!(
            c["width"].as_f64().unwrap() > 300.0 && c["height"].as_f64().unwrap() > 150.0,
            "not laid out: {c}"
        );
        assert!(c["clipped"] == false, "title clipped: {c}");
        assert!(c["series"].as_u64().unwrap() >= 1, "no series: {c}");
    }
    // Log size axes tick at whole powers of two, labelled in units (no 512, 614, 717).
    let ticks = browser.eval(
        "Object.entries(window.stackbench.models).filter(([id, m]) => m.x.scale === 'log2')
           .map(([id, m]) => ({id, ticks: window.stackbench.charts[id].getModel()
             .getComponent('xAxis', 0).axis.getViewLabels()
             .map(l => ({value: l.tick ? l.tick.value : l.tickValue, label: l.formattedLabel}))}))",
    );
    let ticks = ticks.as_array().unwrap();
    assert!(ticks.len() >= 2, "the size charts: {ticks:?}");
    for chart in ticks {
        let labels = chart["ticks"].as_array().unwrap();
        assert!(labels.len() >= 2, "{chart}");
        for t in labels {
            let v = t["value"].as_f64().unwrap();
            assert!(v > 0.0 && v.log2().fract() == 0.0, "tick {t} of {chart}");
        }
    }
    let memory_ticks: Vec<&str> = ticks.iter().find(|c| c["id"] == "run:memory").unwrap()["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    assert!(
        memory_ticks
            .iter()
            .all(|l| l.ends_with(" KiB") || l.ends_with(" MiB") || l.ends_with(" GiB")),
        "sizes in binary units: {memory_ticks:?}"
    );
    let memory = charts.iter().find(|c| c["id"] == "run:memory").unwrap();
    assert_eq!(memory["xname"], "size per array (bytes, log scale)");
    assert_eq!(memory["yname"], "bandwidth (GB/s)");
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
}

/// Measured (non-null) points of each series of a chart, as ECharts holds them.
fn drawn_points(browser: &mut Browser, chart: &str) -> Vec<u64> {
    let counts = browser.eval(&format!(
        "window.stackbench.charts[{id}].getOption().series
           .map(s => s.data.filter(d => d && d.value && d.value[1] !== null && d.value[1] !== undefined).length)",
        id = serde_json::to_string(chart).unwrap()
    ));
    counts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn a_history_chart_holds_exactly_the_measured_points_and_hovering_one_shows_it() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let dir = write_report();
    open_report(&mut browser, dir.path());
    let chart = format!("history:{HISTORY_ID}");
    let measured = fixture_runs()
        .iter()
        .filter(|r| r.benchmarks.iter().any(|b| b.id == HISTORY_ID))
        .count() as u64;
    assert_eq!(measured, dashboard_support::RUNS as u64 - 1);
    assert_eq!(drawn_points(&mut browser, &chart), [measured]);
    // The run that did not measure it is a gap, not a bridged point.
    let gap = browser.eval(&format!(
        "window.stackbench.charts[{}].getOption().series[0].data.filter(d => d.value[1] === null).length",
        serde_json::to_string(&chart).unwrap()
    ));
    assert_eq!(gap, 1);

    // Hover the fourth point where the browser draws it.
    let point = browser.eval(&format!(
        "(() => {{
           const id = {id};
           const fig = document.querySelector(`figure[data-chart=\"${{CSS.escape(id)}}\"]`);
           fig.scrollIntoView({{block: 'center'}});
           const inst = window.stackbench.charts[id];
           const d = inst.getOption().series[0].data[3];
           const [px, py] = inst.convertToPixel({{seriesIndex: 0}}, d.value);
           const box = fig.querySelector('.plot').getBoundingClientRect();
           return {{x: box.left + px, y: box.top + py, text: d.text, run: d.run}};
         }})()",
        id = serde_json::to_string(&chart).unwrap()
    ));
    let (x, y) = (point["x"].as_f64().unwrap(), point["y"].as_f64().unwrap());
    browser.hover(x - 30.0, y - 30.0);
    browser.hover(x, y);
    browser.wait_for(
        "[...document.querySelectorAll('.sb-tooltip')].some(t => t.offsetParent !== null && t.textContent.length > 0)",
    );
    let tip = browser.eval(
        "(() => { const t = [...document.querySelectorAll('.sb-tooltip')]
                    .find(t => t.offsetParent !== null && t.textContent.length > 0);
                  const a = t.querySelector('a');
                  return {text: t.textContent, href: a ? a.getAttribute('href') : null}; })()",
    );
    let text = point["text"].as_str().unwrap();
    assert!(text.contains(" in nightly-4"), "{point}");
    assert!(
        tip["text"].as_str().unwrap().contains(text),
        "hover shows {tip}, expected {text}"
    );
    let run = point["run"].as_str().unwrap();
    assert_eq!(tip["href"], format!("#run-{run}"));
}

/// Whether the canvas of `chart` has a pixel near `colour` within 2 px of each of the
/// points a fraction `at` of the way from data point `from` to data point `to` of series
/// `series` (straight in screen space, where a line between them would be drawn).
fn line_drawn_between(
    browser: &mut Browser,
    chart: &str,
    series: usize,
    from: [f64; 2],
    to: [f64; 2],
    colour: [u8; 3],
) -> Vec<bool> {
    let found = browser.eval(&format!(
        "(() => {{
           const inst = window.stackbench.charts[{id}];
           const fig = document.querySelector(`figure[data-chart=\"${{CSS.escape({id})}}\"]`);
           const canvas = fig.querySelector('canvas');
           const ctx = canvas.getContext('2d');
           const scale = canvas.width / canvas.getBoundingClientRect().width;
           const a = inst.convertToPixel({{seriesIndex: {series}}}, {from:?});
           const b = inst.convertToPixel({{seriesIndex: {series}}}, {to:?});
           const want = {colour:?};
           return [0.3, 0.4, 0.5, 0.6, 0.7].map(t => {{
             const x = (a[0] + (b[0] - a[0]) * t) * scale, y = (a[1] + (b[1] - a[1]) * t) * scale;
             const px = ctx.getImageData(Math.round(x) - 2, Math.round(y) - 2, 5, 5).data;
             for (let i = 0; i < px.length; i += 4) {{
               const d = Math.abs(px[i] - want[0]) + Math.abs(px[i + 1] - want[1]) + Math.abs(px[i + 2] - want[2]);
               if (d < 60 && px[i + 3] > 200) return true;
             }}
             return false;
           }});
         }})()",
        id = serde_json::to_string(chart).unwrap()
    ));
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_bool().unwrap())
        .collect()
}

#[test]
fn a_size_a_series_did_not_measure_is_not_bridged_by_its_line() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let dir = write_report();
    open_report(&mut browser, dir.path());
    browser.eval(
        "document.querySelector('figure[data-chart=\"run:memory\"]').scrollIntoView({block: 'center'}); true",
    );
    let series = browser.eval(
        "window.stackbench.charts['run:memory'].getOption().series.map(s => ({name: s.name,
           colour: s.itemStyle.color,
           points: s.data.map(d => d.value)}))",
    );
    let series = series.as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cpu/copy", "cpu/read", "cpu/triad"]);
    let rgb = |s: &Value| {
        let hex = s["colour"].as_str().unwrap().trim_start_matches('#');
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
        [byte(0), byte(2), byte(4)]
    };
    let point = |s: &Value, i: usize| {
        let p = &s["points"][i];
        [p[0].as_f64().unwrap(), p[1].as_f64().unwrap_or(f64::NAN)]
    };
    // `read` holds 16 KiB, a gap at 1 MiB, then 256 MiB.
    let read = &series[1];
    assert_eq!(read["points"][1][1], Value::Null, "{read}");
    assert_eq!(
        read["points"].as_array().unwrap().len(),
        3,
        "16 KiB, the gap, 256 MiB"
    );
    let (first, last) = (point(read, 0), point(read, 2));
    let bridged = line_drawn_between(&mut browser, "run:memory", 1, first, last, rgb(read));
    assert!(
        bridged.iter().all(|b| !b),
        "the read line is drawn across the unmeasured 1 MiB: {bridged:?}"
    );
    // The check sees a line where there is one: copy measured 16 KiB and 1 MiB.
    let copy = &series[0];
    let joined = line_drawn_between(
        &mut browser,
        "run:memory",
        0,
        point(copy, 0),
        point(copy, 1),
        rgb(copy),
    );
    assert!(
        joined.iter().filter(|b| **b).count() >= 3,
        "the copy line between two measured sizes is not found: {joined:?}"
    );
}

#[test]
fn a_hostile_benchmark_name_shows_as_text_and_runs_nothing() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let dir = write_report();
    open_report(&mut browser, dir.path());
    let text = browser.eval("document.body.textContent");
    let text = text.as_str().unwrap();
    for name in HOSTILE {
        assert!(text.contains(name), "{name} is not shown as text");
    }
    assert_eq!(browser.eval("window.__pwned === undefined"), true);
    assert_eq!(
        browser.eval("document.querySelectorAll('img, script:not([type])').length"),
        2,
        "only the two inlined scripts; no element made from a name"
    );
    assert!(!browser.dialog_opened());
}

/// A tiny HTTP server for one page as `stackbench serve` sends it: the page at `/`, the
/// assets under `/assets/`, every answer with the dashboard's Content-Security-Policy.
fn serve_one_page(html: String) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&request);
            let path = line.split(' ').nth(1).unwrap_or("/").to_string();
            if path == "/quit" {
                return;
            }
            let (status, body, kind) = match path.strip_prefix("/assets/") {
                None if path == "/" => ("200 OK", html.clone(), "text/html; charset=utf-8"),
                // Browsers ask for it unprompted; not a page error.
                None if path == "/favicon.ico" => ("204 No Content", String::new(), "text/plain"),
                Some(p) => match stackbench::report::pages::assets::asset(p) {
                    Some(a) => ("200 OK", a.content.to_string(), a.content_type),
                    None => ("404 Not Found", String::new(), "text/plain"),
                },
                None => ("404 Not Found", String::new(), "text/plain"),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Content-Security-Policy: default-src 'self'; script-src 'self'\r\n\
                 X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, handle)
}

#[test]
fn a_served_history_page_draws_under_the_dashboards_content_security_policy() {
    use stackbench::report::pages::{HistoryPage, PageContext, PageModel, render_page};
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let runs = fixture_runs();
    let order: stackbench::results::RunOrder = runs
        .iter()
        .map(|r| (r.run_id.clone(), r.fingerprint.clone()))
        .collect();
    let points: Vec<stackbench::results::HistoryPoint> = runs
        .iter()
        .filter(|r| r.benchmarks.iter().any(|b| b.id == HISTORY_ID))
        .map(|r| stackbench::results::HistoryPoint {
            run_id: r.run_id.clone(),
            timestamp: r.timestamp.clone(),
            created_unix_ms: r.created_unix_ms,
            label: r.label.clone(),
            git_revision: r.git_revision.clone(),
            fingerprint: r.fingerprint.clone(),
            median_ns: 1000.0 + r.created_unix_ms as f64 % 7.0,
            min_ns: None,
            samples: 10,
        })
        .collect();
    let page = HistoryPage::from_points(HISTORY_ID, &points, &order, &Default::default()).unwrap();
    let html = render_page(&PageModel::History(page), &PageContext::served());
    let (url, server) = serve_one_page(html);
    browser.navigate(&url);
    browser.wait_for("window.stackbench && window.stackbench.ready");
    assert_eq!(browser.eval("window.stackbench.error || null"), Value::Null);
    let chart = format!("history:{HISTORY_ID}");
    assert_eq!(drawn_points(&mut browser, &chart), [points.len() as u64]);
    let link = browser.eval("document.querySelector('nav a').getAttribute('href')");
    assert_eq!(link, "/");
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
    let _ = std::net::TcpStream::connect(url.trim_start_matches("http://").trim_end_matches('/'))
        .and_then(|mut s| std::io::Write::write_all(&mut s, b"GET /quit HTTP/1.1\r\n\r\n"));
    let _ = server.join();
}
