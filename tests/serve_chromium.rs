//! `stackbench serve`'s pages in a real headless Chromium (tests/browser_support): the
//! history page draws exactly the measured points and leaves the unmeasured run as a gap,
//! hovering a point shows its value and links to its run, the comparison page shows the
//! rows of the comparison.json uploaded, and a hostile benchmark name is text that runs
//! nothing, under the server's Content-Security-Policy. Skipped with a message when
//! Chromium is missing (unless STACKBENCH_REQUIRE_TOOLS=1).

#[path = "browser_support/mod.rs"]
mod browser_support;
#[path = "serve_support/mod.rs"]
mod serve_support;

use browser_support::Browser;
use serde_json::Value;
use serve_support::*;

const HOSTILE: &str =
    "\"><img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>";
const RUNS: usize = 5;
/// The run (index) that did not measure the charted benchmark.
const UNMEASURED: usize = 2;

/// A served store of RUNS runs of the fixture on one machine, a minute apart, each with a
/// hostile benchmark beside the real ones (the newest under a hostile label); run
/// UNMEASURED lacks the charted benchmark.
/// Returns the server, the charted benchmark id and the run ids, oldest first.
fn served_history(scratch: &std::path::Path) -> (Server, String, Vec<String>) {
    let base = recorded_run(scratch);
    let bench_id = base["benchmarks"][0]["id"].as_str().unwrap().to_string();
    let server = Server::writable(&scratch.join("served"));
    let created = base["created_unix_ms"].as_u64().unwrap();
    let mut ids = Vec::new();
    for i in 0..RUNS {
        let id = format!("20261125T1000{i:02}000Z-p1-000{i}");
        let mut run = variant(&base, &id, None);
        run["created_unix_ms"] = (created + 60_000 * i as u64).into();
        // The newest run's label is hostile too: the runs page shows labels as text.
        run["label"] = if i == RUNS - 1 {
            HOSTILE.into()
        } else {
            format!("nightly-{i}").into()
        };
        let benchmarks = run["benchmarks"].as_array_mut().unwrap();
        let mut hostile = benchmarks[0].clone();
        hostile["id"] = HOSTILE.into();
        benchmarks.push(hostile);
        if i == UNMEASURED {
            benchmarks.retain(|b| b["id"] != bench_id.as_str());
        }
        let answer = server.post_json("/api/runs", &bytes(&run));
        assert_eq!(answer.status, 201, "{}", answer.text());
        ids.push(id);
    }
    (server, bench_id, ids)
}

/// `path` on the server, loaded and drawn, with `alert` trapped and no page error.
fn open(browser: &mut Browser, server: &Server, path: &str) {
    browser.add_init_script("window.alert = function () { window.__pwned = 'alert'; };");
    browser.navigate(&format!("http://127.0.0.1:{}{path}", server.port));
    browser.wait_for("window.stackbench && window.stackbench.ready");
    assert_eq!(
        browser.eval("window.stackbench.error || null"),
        Value::Null,
        "{path}"
    );
}

fn js(value: &str) -> String {
    serde_json::to_string(value).unwrap()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn the_history_page_draws_each_measured_point_and_hovering_one_shows_its_value() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let (server, bench_id, ids) = served_history(scratch.path());
    // The page's own links encode the id whole (`/history/gemm%2Ff32%2F1024`).
    open(
        &mut browser,
        &server,
        &format!("/history/{}", encode(&bench_id)),
    );
    let chart = js(&format!("history:{bench_id}"));
    browser.wait_for(&format!("window.stackbench.charts[{chart}]"));
    let series = browser.eval(&format!(
        "window.stackbench.charts[{chart}].getOption().series.map(s => ({{
           measured: s.data.filter(d => d && d.value && d.value[1] !== null && d.value[1] !== undefined).length,
           gaps: s.data.filter(d => d && d.value && d.value[1] === null).length}}))"
    ));
    assert_eq!(
        series,
        serde_json::json!([{"measured": RUNS - 1, "gaps": 1}]),
        "one hardware, every run but one measured, the other a gap"
    );

    let point = browser.eval(&format!(
        "(() => {{
           const inst = window.stackbench.charts[{chart}];
           const fig = document.querySelector(`figure[data-chart=\"${{CSS.escape({chart})}}\"]`);
           fig.scrollIntoView({{block: 'center'}});
           const d = inst.getOption().series[0].data.filter(d => d.value[1] !== null)[2];
           const [px, py] = inst.convertToPixel({{seriesIndex: 0}}, d.value);
           const box = fig.querySelector('.plot').getBoundingClientRect();
           return {{x: box.left + px, y: box.top + py, text: d.text, run: d.run}};
         }})()"
    ));
    let (x, y) = (point["x"].as_f64().unwrap(), point["y"].as_f64().unwrap());
    browser.hover(x - 40.0, y - 40.0);
    browser.hover(x, y);
    browser.wait_for(
        "[...document.querySelectorAll('.sb-tooltip')].some(t => t.offsetParent !== null && t.textContent.length > 0)",
    );
    let tip = browser.eval(
        "(() => { const t = [...document.querySelectorAll('.sb-tooltip')].find(t => t.offsetParent !== null);
                  const a = t.querySelector('a');
                  return {text: t.textContent, href: a ? a.getAttribute('href') : null}; })()",
    );
    let text = point["text"].as_str().unwrap();
    assert!(!text.is_empty(), "{point}");
    assert!(
        tip["text"].as_str().unwrap().contains(text),
        "hover shows {tip}, expected {text}"
    );
    // The third measured point is the fourth run (the third did not measure it).
    assert_eq!(point["run"], ids[3].as_str());
    assert_eq!(tip["href"], format!("/runs/{}", ids[3]));
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
}

#[test]
fn the_comparison_page_shows_the_rows_of_the_uploaded_comparison_json() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::writable(&scratch.path().join("served"));
    let fixture = root().join("tests/fixtures/criterion-0.8");
    let out = run(
        ANALYZE,
        &[
            "compare",
            "base",
            "new",
            "--criterion-dir",
            fixture.to_str().unwrap(),
            "--results",
            scratch.path().join("none").to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let document: Value = serde_json::from_slice(&out.stdout).expect("comparison.json");
    let posted = server.post_json("/api/comparisons", &out.stdout);
    assert_eq!(posted.status, 201, "{}", posted.text());
    let url = posted.json()["url"].as_str().unwrap().to_string();
    open(&mut browser, &server, &url);
    let shown = browser.eval(
        "[...document.querySelectorAll('table.comparison-rows tbody tr')].map(tr =>
           [...tr.querySelectorAll('td')].slice(0, 2).map(td => td.textContent))",
    );
    let expected: Vec<Value> = document["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::json!([r["status"], r["id"]]))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(
        shown,
        Value::Array(expected),
        "the page's rows against comparison.json"
    );
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
}

#[test]
fn a_hostile_benchmark_name_is_shown_as_text_and_runs_nothing() {
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let (server, _, ids) = served_history(scratch.path());
    // The label on the runs page, the benchmark on its history page; the run page holds
    // it in its charts' data.
    for (path, shown) in [
        ("/".to_string(), true),
        (format!("/history/{}", encode(HOSTILE)), true),
        (format!("/runs/{}", ids[RUNS - 1]), false),
    ] {
        open(&mut browser, &server, &path);
        let text = browser.eval("document.body.textContent");
        assert!(
            !shown || text.as_str().unwrap().contains(HOSTILE),
            "{path}: the name is not shown as text"
        );
        assert_eq!(browser.eval("window.__pwned === undefined"), true, "{path}");
        assert_eq!(
            browser.eval("document.querySelectorAll('img, script:not([type]):not([src])').length"),
            0,
            "{path}: markup from the name"
        );
        assert!(!browser.dialog_opened(), "{path}");
        assert!(
            browser.page_errors().is_empty(),
            "{path}: {:?}",
            browser.page_errors()
        );
    }
}
