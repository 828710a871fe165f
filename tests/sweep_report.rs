//! `stackbench sweep-report` and the served sweep page, through the real binary, on a store
//! holding the sweeps of two machines (and an older, much faster sweep of one of them that
//! must not count): the Markdown and JSON carry every model row, a "no data" cell and the
//! store's own numbers; the HTML draws its charts in a real headless Chromium without a
//! script error; the PDF Chromium prints has pages that are not blank (read back with
//! poppler's `pdftoppm`); a store without a sweep is exit 2 with nothing written; and
//! `/sweeps` and `/api/sweeps` serve the same model under the server's headers.
//!
//! Without Chromium (or pdftoppm) the browser and PDF tests are skipped with a message,
//! unless `STACKBENCH_REQUIRE_TOOLS=1`.

#[path = "browser_support/mod.rs"]
mod browser_support;
#[path = "schema_support/mod.rs"]
mod schema_support;
#[path = "serve_support/mod.rs"]
mod serve_support;
#[path = "sweep_support/mod.rs"]
mod sweep_support;

use browser_support::Browser;
use serde_json::Value;
use stackbench::results::RunStore;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use sweep_support::{skip_cell, sweep_run};

const GPT2_B1: &str = "models/torch/ci-gpt2-fp32-decode/b1_s128";
const GPT2_B4: &str = "models/torch/ci-gpt2-fp32-decode/b4_s128";
const GPT2_B1_S512: &str = "models/torch/ci-gpt2-fp32-decode/b1_s512";
const GPT2_ORT: &str = "models/onnxruntime/ci-gpt2-fp32-decode/b1_s128";
const GPT2_FP16: &str = "models/torch/ci-gpt2-fp16-decode/b1_s128";
const VIT: &str = "models/torch/ci-vit-fp32-forward/b1";
const SKIP_REASON: &str = "out of memory (predicted 9.0 GiB of 2.0 GiB)";

/// A results directory with the newest sweeps of machines A (both models, a skipped
/// cell) and B (ci-gpt2 only), and an older sweep of A that must not count.
fn results(dir: &Path) -> PathBuf {
    let results = dir.join("results");
    let store = RunStore::new(&results);
    let older = sweep_run(
        "fp-a",
        "GPU-A",
        1_000,
        &[(GPT2_B1, &[("tokens_per_s", 9e9)])],
    );
    let mut a = sweep_run(
        "fp-a",
        "GPU-A",
        2_000,
        &[
            (
                GPT2_B1,
                &[
                    ("tokens_per_s", 2000.0),
                    ("ttft_p99_ns", 50e6),
                    ("memory_peak_bytes", 1_073_741_824.0),
                ],
            ),
            (
                GPT2_B4,
                &[("tokens_per_s", 6400.0), ("memory_peak_bytes", 2e9)],
            ),
            (
                GPT2_B1_S512,
                &[("tokens_per_s", 1500.0), ("memory_peak_bytes", 3e9)],
            ),
            (GPT2_ORT, &[("tokens_per_s", 1200.0)]),
            (VIT, &[("samples_per_s", 300.0), ("latency_p99_ns", 4e6)]),
        ],
    );
    skip_cell(&mut a, GPT2_FP16, SKIP_REASON);
    let b = sweep_run(
        "fp-b",
        "GPU-B",
        1_500,
        &[(
            GPT2_B1,
            &[("tokens_per_s", 900.0), ("memory_peak_bytes", 5e8)],
        )],
    );
    for run in [older, a, b] {
        store.save(&run).expect("saving a sweep run");
    }
    results
}

fn sweep_report(dir: &Path, results: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .arg("sweep-report")
        .arg("--results")
        .arg(results)
        .arg("--out")
        .arg(out)
        .args(extra)
        .current_dir(dir)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_STORE")
        .output()
        .expect("running stackbench")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The report of the two machines, in `formats`, under `dir/report`.
fn written(dir: &Path, formats: &str) -> PathBuf {
    let results = results(dir);
    let out = dir.join("report");
    let done = sweep_report(dir, &results, &out, &["--format", formats]);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}{}",
        text(&done.stdout),
        text(&done.stderr)
    );
    out
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn required() -> bool {
    std::env::var("STACKBENCH_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

#[test]
fn markdown_and_json_hold_every_model_row_a_no_data_cell_and_the_stores_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = written(dir.path(), "md,json,html");
    assert_eq!(
        names_in(&out),
        ["sweep-report.html", "sweep-report.json", "sweep-report.md"]
    );
    assert_eq!(
        names_in(dir.path()),
        ["report", "results"],
        "no staging directory is left beside the report"
    );

    let md = std::fs::read_to_string(out.join("sweep-report.md")).unwrap();
    for expected in [
        "| model | phase | GPU-A (fp-a) | GPU-B (fp-b) | best |",
        "| ci-gpt2 | decode | torch fp32 b4 s128: 6400.0000 tokens/s | torch fp32 b1 s128: 900.0000 tokens/s | torch fp32 b4 s128 on GPU-A: 6400.0000 tokens/s |",
        "| ci-vit | forward | torch fp32 b1: 300.0000 samples/s | no data |",
        // The hardware comparison as a table: the fastest cell per machine, or no data.
        "| ci-vit forward | 300.0 samples/s (torch fp32 b1) | no data |",
        // Throughput by batch: the torch line at seq 128 measured b1 and b4 only.
        "| torch on GPU-A, seq 128 | 2000.0 | 6400.0 |",
        "| onnxruntime on GPU-A, seq 128 | 1200.0 | not measured |",
        // Peak memory by sequence length, exactly as stored.
        "| torch on GPU-A, batch 1 | 1.00 GiB | 2.79 GiB |",
        // The compatibility map with the skip's reason.
        &format!("| skipped | {GPT2_FP16} | {SKIP_REASON} |"),
    ] {
        assert!(md.contains(expected), "`{expected}` missing:\n{md}");
    }
    assert!(!md.contains("9000000000"), "the older sweep of A counted");

    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep-report.json")).unwrap())
            .unwrap();
    schema_support::assert_valid("sweep-report.schema.json", &doc);
    schema_support::assert_valid("recommend.schema.json", &doc["recommendation"]);
    let rows: Vec<(&str, &str)> = doc["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["model"].as_str().unwrap(), r["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [("ci-gpt2", "decode"), ("ci-vit", "forward")]);
    assert_eq!(doc["matrix"][1]["cells"][1]["status"], "no_data");
    assert_eq!(doc["matrix"][1]["cells"][1]["text"], "no data");
    // Every drawn value is a stored one: the batch chart of ci-gpt2 holds exactly these.
    let batch = doc["batch_charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "sweep-batch-ci-gpt2-fp32-decode")
        .expect("the ci-gpt2 batch chart");
    let mut values: Vec<f64> = batch["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap())
        .filter_map(|p| p["y"].as_f64())
        .collect();
    values.sort_by(f64::total_cmp);
    assert_eq!(values, [900.0, 1200.0, 1500.0, 2000.0, 6400.0]);
    let map = &doc["hardware"][0]["compatibility"];
    assert!(
        map.as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == GPT2_FP16 && c["outcome"] == "skipped"),
        "{map:#}"
    );
    let mut broken = doc.clone();
    broken.as_object_mut().unwrap().remove("matrix");
    assert!(!schema_support::violations("sweep-report.schema.json", &broken).is_empty());

    // A second report replaces the first whole: no file of the old one, nothing aside.
    let again = sweep_report(
        dir.path(),
        &dir.path().join("results"),
        &out,
        &["--format", "md"],
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(names_in(&out), ["sweep-report.md"]);
    assert_eq!(names_in(dir.path()), ["report", "results"]);
}

#[test]
fn a_machine_without_a_price_or_a_cell_meeting_the_slo_says_why_in_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    let results = results(dir.path());
    let config = dir.path().join("stackbench.toml");
    std::fs::write(
        &config,
        "[prices]\nbasis = \"hour\"\n[prices.devices]\n\"GPU-A\" = 4.0\n",
    )
    .unwrap();
    let out = dir.path().join("priced");
    let done = sweep_report(
        dir.path(),
        &results,
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--rank",
            "per-dollar",
            "--format",
            "md",
        ],
    );
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let md = std::fs::read_to_string(out.join("sweep-report.md")).unwrap();
    assert!(
        md.contains("| ci-gpt2 | decode | torch fp32 b4 s128: 1600.0000 tokens/s per (USD per device-hour) | no price (1 cell(s) meet the SLOs) |"),
        "{md}"
    );

    let strict = dir.path().join("strict");
    let done = sweep_report(
        dir.path(),
        &results,
        &strict,
        &[
            "--slo",
            "ttft_p99<=10ms",
            "--model",
            "ci-gpt2",
            "--format",
            "md",
        ],
    );
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let md = std::fs::read_to_string(strict.join("sweep-report.md")).unwrap();
    assert!(
        md.contains("no measured cell meets ttft_p99<=10ms; best ttft_p99 was 50.0 ms"),
        "{md}"
    );
    assert!(
        !md.contains("| ci-vit |"),
        "the model filter let ci-vit through"
    );
}

#[test]
fn a_store_without_a_sweep_is_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = dir.path().join("report");
    let done = sweep_report(dir.path(), &empty, &out, &[]);
    let stderr = text(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no measured model sweep cell"), "{stderr}");
    assert!(!out.exists());
    assert_eq!(names_in(dir.path()), ["empty"], "no staging directory left");

    // A bad SLO and an unknown model are bad input too; an earlier report stays whole.
    let results = results(dir.path());
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("sweep-report.md"), "earlier").unwrap();
    for (args, expected) in [
        (vec!["--slo", "ttft<=1ms"], "valid forms"),
        (vec!["--model", "nope"], "\"nope\""),
    ] {
        let done = sweep_report(dir.path(), &results, &out, &args);
        let stderr = text(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(
            std::fs::read_to_string(out.join("sweep-report.md")).unwrap(),
            "earlier"
        );
    }
    // Chromium missing while pdf is asked for: named, and nothing is written.
    let done = Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(["sweep-report", "--format", "md,pdf", "--results"])
        .arg(&results)
        .arg("--out")
        .arg(&out)
        .env("STACKBENCH_CHROMIUM", dir.path().join("no-such-chromium"))
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_STORE")
        .output()
        .unwrap();
    let stderr = text(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no-such-chromium") && stderr.contains("headless Chromium"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("sweep-report.md")).unwrap(),
        "earlier"
    );
}

/// Loads `url`, waits until the page is built and its charts drawn, and returns the ids of
/// the drawn charts; no script error, no page error.
fn drawn_charts(browser: &mut Browser, url: &str) -> Vec<String> {
    browser.navigate(url);
    browser.wait_for("window.stackbench && window.stackbench.ready");
    assert_eq!(browser.eval("window.stackbench.error || null"), Value::Null);
    let expected = browser.eval("document.querySelectorAll('figure.chart:not(.nochart)').length");
    assert!(expected.as_u64().unwrap_or(0) > 0, "no chart on {url}");
    browser.wait_for(&format!(
        "Object.keys(window.stackbench.charts).length >= {expected}"
    ));
    // Drawn means laid out: each chart's canvas has a size.
    let sized = browser.eval(
        "Object.values(window.stackbench.charts).every(c => c.getWidth() > 100 && c.getHeight() > 100)",
    );
    assert_eq!(sized, Value::Bool(true), "a chart without a size on {url}");
    assert!(
        browser.page_errors().is_empty(),
        "{url}: {:?}",
        browser.page_errors()
    );
    let ids = browser.eval("Object.keys(window.stackbench.charts)");
    ids.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn assert_every_kind_of_figure(ids: &[String], browser: &mut Browser) {
    for kind in ["sweep-hardware-", "sweep-batch-", "sweep-memory-"] {
        assert!(
            ids.iter().any(|id| id.starts_with(kind)),
            "no {kind} chart drawn: {ids:?}"
        );
    }
    let matrix = browser.eval(
        "Array.from(document.querySelectorAll('table.matrix tbody tr')).map(r => r.textContent)",
    );
    let rows = matrix.as_array().expect("the matrix rows");
    assert_eq!(rows.len(), 2, "{matrix}");
    assert!(rows[1].as_str().unwrap().contains("no data"), "{matrix}");
}

#[test]
fn the_html_report_draws_its_charts_from_a_file_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let out = written(dir.path(), "html");
    let html = std::fs::read_to_string(out.join("sweep-report.html")).unwrap();
    for fetch in ["<script src=", "<link "] {
        assert!(!html.contains(fetch), "the report fetches `{fetch}`");
    }
    assert_eq!(browser_support::page_data(&html)["page"], "sweep");
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let url = format!("file://{}", out.join("sweep-report.html").display());
    let ids = drawn_charts(&mut browser, &url);
    assert_every_kind_of_figure(&ids, &mut browser);
    // The layout for paper: every series in the legend, the maps open, nothing thrown.
    browser.eval("window.stackbench.printLayout(); true");
    let open = browser
        .eval("Array.from(document.querySelectorAll('details.compatibility')).every(d => d.open)");
    assert_eq!(open, Value::Bool(true));
    let legend = browser.eval(
        "(c => [c.getOption().legend[0].type, c.getOption().grid[0].top])(window.stackbench.charts['sweep-batch-ci-gpt2-fp32-decode'])",
    );
    assert_eq!(
        legend[0], "plain",
        "four series wrap into a plain legend: {legend}"
    );
    assert!(legend[1].as_f64().unwrap_or(0.0) > 40.0, "{legend}");
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
}

/// The pages of `pdf` as greyscale images at 50 dpi (`pdftoppm -gray -r 50`), each as
/// (width, height, pixels), or `None` when pdftoppm is not installed.
fn pdf_pages(pdf: &Path) -> Option<Vec<(usize, usize, Vec<u8>)>> {
    let scratch = tempfile::tempdir().unwrap();
    let prefix = scratch.path().join("page");
    let ran = Command::new("pdftoppm")
        .args(["-gray", "-r", "50"])
        .arg(pdf)
        .arg(&prefix)
        .output();
    let ran = match ran {
        Ok(out) => out,
        Err(e) => {
            assert!(
                !required(),
                "pdftoppm is required (STACKBENCH_REQUIRE_TOOLS=1): {e}"
            );
            eprintln!(
                "SKIPPED: pdftoppm is not installed ({e}; ci/test.sh installs poppler-utils)"
            );
            return None;
        }
    };
    assert!(ran.status.success(), "pdftoppm: {}", text(&ran.stderr));
    let mut pages = Vec::new();
    for name in names_in(scratch.path()) {
        let bytes = std::fs::read(scratch.path().join(&name)).unwrap();
        pages.push(parse_pgm(&bytes).unwrap_or_else(|| panic!("{name} is not a binary PGM")));
    }
    Some(pages)
}

/// A binary PGM (`P5 width height maxval` then one byte per pixel for maxval < 256).
fn parse_pgm(bytes: &[u8]) -> Option<(usize, usize, Vec<u8>)> {
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while bytes.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        if bytes[at] == b'#' {
            while *bytes.get(at)? != b'\n' {
                at += 1;
            }
            continue;
        }
        let start = at;
        while !bytes.get(at)?.is_ascii_whitespace() {
            at += 1;
        }
        fields.push(std::str::from_utf8(&bytes[start..at]).ok()?.to_string());
    }
    // One whitespace byte separates the header from the pixels.
    at += 1;
    if fields[0] != "P5" || fields[3].parse::<u32>().ok()? > 255 {
        return None;
    }
    let (w, h): (usize, usize) = (fields[1].parse().ok()?, fields[2].parse().ok()?);
    let pixels = bytes.get(at..at + w * h)?.to_vec();
    Some((w, h, pixels))
}

#[test]
fn the_pdf_is_printed_by_chromium_and_its_first_page_is_not_blank() {
    let dir = tempfile::tempdir().unwrap();
    if Browser::start().is_none() {
        return;
    }
    let out = written(dir.path(), "pdf");
    assert_eq!(
        names_in(&out),
        ["sweep-report.pdf"],
        "only what was asked for"
    );
    let pdf = out.join("sweep-report.pdf");
    // To look at the PDF a run printed: STACKBENCH_KEEP_SWEEP_PDF=/tmp/x.pdf.
    if let Ok(keep) = std::env::var("STACKBENCH_KEEP_SWEEP_PDF") {
        std::fs::copy(&pdf, keep).unwrap();
    }
    assert!(std::fs::read(&pdf).unwrap().starts_with(b"%PDF"));
    let Some(pages) = pdf_pages(&pdf) else {
        return;
    };
    assert!(!pages.is_empty(), "pdftoppm rendered no page");
    let (w, h, pixels) = &pages[0];
    assert_eq!(pixels.len(), w * h);
    let inked = pixels.iter().filter(|&&p| p < 200).count();
    let mut levels: Vec<u8> = pixels.clone();
    levels.sort_unstable();
    levels.dedup();
    // Text and tables alone ink a percent or so; the grey levels of charts and
    // anti-aliased text are many. A blank (or error-only) page has neither.
    assert!(
        inked * 200 > w * h,
        "page 1 is nearly blank: {inked} of {} pixels inked",
        w * h
    );
    assert!(levels.len() > 16, "page 1 has {} grey levels", levels.len());
    let all_inked: usize = pages
        .iter()
        .map(|(_, _, p)| p.iter().filter(|&&v| v < 200).count())
        .sum();
    assert!(all_inked > inked, "the pages after the first are blank");
}

#[test]
fn the_served_sweep_page_and_its_endpoint_show_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let results = results(dir.path());
    let server = serve_support::Server::start(&results, &[]);

    let api = server.get("/api/sweeps");
    assert_eq!(api.status, 200, "{}", api.text());
    let doc = api.json();
    assert_eq!(doc["page"], "sweep");
    schema_support::assert_valid("sweep-report.schema.json", &doc);
    assert_eq!(doc["matrix_columns"][1], "GPU-B (fp-b)");

    let page = server.get("/sweeps");
    assert_eq!(page.status, 200, "{}", page.text());
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let data = browser_support::page_data(&page.text());
    assert_eq!(data["links"]["sweeps"], "/sweeps");
    let mut model = data.clone();
    model.as_object_mut().unwrap().remove("links");
    assert_eq!(model, doc, "the page embeds what the endpoint answers");

    // The query takes recommend's flags; a bad one is a 400 naming it.
    let per_model = server.get("/api/sweeps?model=ci-vit&slo=latency_p99%3C%3D10ms");
    assert_eq!(per_model.status, 200, "{}", per_model.text());
    let per_model = per_model.json();
    assert_eq!(per_model["matrix"].as_array().unwrap().len(), 1);
    assert_eq!(
        per_model["recommendation"]["slos"][0]["text"],
        "latency_p99<=10ms"
    );
    for (path, status, expected) in [
        ("/api/sweeps?lable=x", 400, "lable"),
        ("/api/sweeps?slo=ttft%3C%3D1ms", 400, "valid forms"),
        ("/api/sweeps?rank=cheapest", 400, "per-dollar"),
        (
            "/api/sweeps?model=nope",
            404,
            "nope\\\" is not in the store",
        ),
    ] {
        let answer = server.get(path);
        assert_eq!(answer.status, status, "{path}: {}", answer.text());
        assert!(
            answer.text().contains(expected),
            "{path}: {}",
            answer.text()
        );
    }
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir_all(&empty_dir).unwrap();
    let empty = serve_support::Server::start(&empty_dir, &[]);
    let none = empty.get("/api/sweeps");
    assert_eq!(none.status, 404, "{}", none.text());
    assert!(none.text().contains("no measured model sweep cell"));

    let Some(mut browser) = Browser::start() else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/sweeps", server.port);
    let ids = drawn_charts(&mut browser, &url);
    assert_every_kind_of_figure(&ids, &mut browser);
    let nav =
        browser.eval("Array.from(document.querySelectorAll('nav a')).map(a => a.textContent)");
    assert!(
        nav.as_array().unwrap().iter().any(|a| a == "Sweeps"),
        "{nav}"
    );
}

#[test]
fn report_html_has_the_sweep_section_when_the_store_holds_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let results = results(dir.path());
    let done = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .arg("report")
        .arg(&results)
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_STORE")
        .output()
        .unwrap();
    assert!(
        matches!(done.status.code(), Some(0 | 1)),
        "{}",
        text(&done.stderr)
    );
    let html_path = results.join("reports/report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    let data = browser_support::page_data(&html);
    let sweeps = &data["sweeps"];
    assert_eq!(sweeps["schema"], "stackbench.sweep-report.v1", "{sweeps:#}");
    assert_eq!(sweeps["matrix"].as_array().unwrap().len(), 2);
    assert_eq!(
        sweeps["hardware"][0]["run_id"], "run-fp-a-2000",
        "the newest sweep of A, not the older one"
    );
    let Some(mut browser) = Browser::start() else {
        return;
    };
    let url = format!("file://{}", html_path.display());
    browser.navigate(&url);
    browser.wait_for("window.stackbench && window.stackbench.ready");
    assert_eq!(browser.eval("window.stackbench.error || null"), Value::Null);
    browser.wait_for("document.querySelector('#sweeps table.matrix')");
    let ids = browser.eval("Object.keys(window.stackbench.charts)");
    let ids: Vec<String> = ids
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_every_kind_of_figure(&ids, &mut browser);
    assert!(
        browser.page_errors().is_empty(),
        "{:?}",
        browser.page_errors()
    );
}
