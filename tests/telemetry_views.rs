//! Telemetry and suspect peaks through the real binaries, the way a user meets them: a
//! Criterion tree with stackbench's sidecar files is recorded with `analyze-trends
//! record`, then read back by `analyze-trends report` (Markdown and HTML) and `stackbench
//! show`. Every quantity that was read is shown; every one that was not says "not read"
//! and why; a run with no telemetry at all says so in one line; a figure above the probe's
//! peak is flagged on the record with the peak's source, never shown as a percentage.

mod schema_support;

// report.html's page data (the JSON the page script draws from).
mod browser_support;

#[path = "fs_support/mod.rs"]
mod fs_support;
use fs_support::copy_tree;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ANALYZER: &str = env!("CARGO_BIN_EXE_analyze-trends");
const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");
const F32: &str = "gemm/cpu/f32/64x64x64";
const TRIAD: &str = "gemm/cpu/triad/1MiB";
const IDS: [&str; 5] = [
    "gemm/cpu/axpy/1024",
    F32,
    TRIAD,
    "gemm/cpu/crc/4KiB",
    "gemm/cpu/copy/1MB",
];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8")
}

fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The five CPU benchmarks of the Criterion 0.8 fixture with its system probe, and, when
/// `telemetry` gives any, a target report that lists each as measured with its note.
fn tree_with(dir: &Path, telemetry: &dyn Fn(&str) -> Option<Value>) -> PathBuf {
    let tree = dir.join("criterion");
    copy_tree(&fixture().join("gemm_cpu"), &tree.join("gemm_cpu"));
    copy_tree(&fixture().join("stackbench"), &tree.join("stackbench"));
    let mut benchmarks = serde_json::Map::new();
    for id in IDS {
        let parts: Vec<&str> = id.split('/').collect();
        let mut entry = json!({
            "group": parts[..2].join("/"), "function": parts[2], "value": parts[3],
            "outcome": "measured",
        });
        if let Some(t) = telemetry(id) {
            entry["notes"] = json!({ "telemetry": t });
        }
        benchmarks.insert(id.into(), entry);
    }
    let report = json!({
        "schema": "stackbench.target.v1",
        "target": "gemm",
        "suite": "quick",
        "started_unix_s": 0,
        "benchmarks": benchmarks,
    });
    std::fs::create_dir_all(tree.join("stackbench/targets")).unwrap();
    std::fs::write(
        tree.join("stackbench/targets/gemm.json"),
        serde_json::to_vec_pretty(&report).unwrap(),
    )
    .unwrap();
    tree
}

/// Records `tree` into `<dir>/results` and writes the report; (record's stderr, report.md,
/// report.html, `show --page summary` at 160 columns).
fn record_and_view(dir: &Path, tree: &Path) -> (String, String, String, String) {
    let results = dir.join("results");
    let r = results.to_str().unwrap();
    let recorded = run(
        ANALYZER,
        &[
            "record",
            "--criterion-dir",
            tree.to_str().unwrap(),
            "--results",
            r,
        ],
        dir,
    );
    stdout_of(&recorded);
    stdout_of(&run(ANALYZER, &["report", r], dir));
    let read = |name: &str| std::fs::read_to_string(results.join("reports").join(name)).unwrap();
    let show = stdout_of(&run(
        STACKBENCH,
        &[
            "show",
            "--page",
            "summary",
            "--width",
            "160",
            "--results",
            r,
        ],
        dir,
    ));
    (
        String::from_utf8_lossy(&recorded.stderr).into_owned(),
        read("report.md"),
        read("report.html"),
        show,
    )
}

#[test]
fn nvml_figures_are_shown_and_an_unread_quantity_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), &|id| {
        Some(if id == F32 {
            json!({
                "source": "nvml",
                "power_watts": {"min": 230.0, "mean": 245.0, "max": 260.0, "samples": 3},
                "temperature_c": {"min": 61.0, "mean": 62.0, "max": 63.0, "samples": 3},
                "clock_mhz": {"min": 1980.0, "mean": 1980.0, "max": 1980.0, "samples": 3},
                "utilization_percent": {"min": 97.0, "mean": 98.0, "max": 99.0, "samples": 3},
            })
        } else {
            json!({"source": "rapl", "unavailable": ["RAPL counters not readable: permission denied"]})
        })
    });
    let (_, markdown, html, show) = record_and_view(dir.path(), &tree);
    if std::env::var_os("TELEMETRY_VIEWS_PRINT").is_some() {
        println!("{markdown}\n{show}");
    }
    for figure in [
        "245 W (230–260)",
        "62.0 °C (61.0–63.0)",
        "1980 MHz",
        "98.0 % (97.0–99.0)",
    ] {
        assert!(
            markdown.contains(figure),
            "{figure} in report.md:\n{markdown}"
        );
        assert!(html.contains(figure), "{figure} in report.html");
        assert!(show.contains(figure), "{figure} in show:\n{show}");
    }
    let row = markdown
        .lines()
        .find(|l| l.starts_with(&format!("| `{F32}` | nvml |")))
        .unwrap_or_else(|| panic!("no telemetry row for {F32}:\n{markdown}"));
    // Energy per iteration follows from the power and the median time the record holds.
    assert!(row.ends_with("| 55.9 µJ |"), "245 W x 228 ns: {row}");
    let reason = "not read: RAPL counters not readable: permission denied";
    let triad = markdown
        .lines()
        .find(|l| l.starts_with(&format!("| `{TRIAD}` | rapl |")))
        .unwrap_or_else(|| panic!("no telemetry row for {TRIAD}:\n{markdown}"));
    assert!(triad.contains(reason), "{triad}");
    assert!(html.contains(reason), "report.html");
    assert!(show.contains(reason), "{show}");
    // report.json carries the same rows, each quantity read or not read with its reason.
    let report = report_json(dir.path());
    let telemetry = &report["latest_run_telemetry"];
    assert!(telemetry["summary"].is_null(), "{telemetry:#}");
    let rows = telemetry["benchmarks"].as_array().unwrap();
    let f32_row = rows.iter().find(|r| r["id"] == F32).expect("the f32 row");
    assert_eq!(f32_row["power"]["read"], "245 W (230–260)", "{f32_row:#}");
    let triad_row = rows
        .iter()
        .find(|r| r["id"] == TRIAD)
        .expect("the triad row");
    assert_eq!(
        triad_row["temperature"]["not_read"], "RAPL counters not readable: permission denied",
        "{triad_row:#}"
    );
    schema_support::assert_valid("history-report.schema.json", &report);
    let mut broken = report.clone();
    broken["latest_run_telemetry"]["benchmarks"][0]["power"] =
        json!({"read": "1 W", "not_read": "x"});
    assert!(
        !schema_support::violations("history-report.schema.json", &broken).is_empty(),
        "a quantity both read and not read fails the schema"
    );
    // The record that carries the telemetry matches the run schema, which describes it.
    let record = only_run(dir.path());
    schema_support::assert_valid("run.schema.json", &record);
    let mut broken = record.clone();
    broken["benchmarks"][1]["telemetry"]["power_watts"] = json!("245 W");
    assert!(
        !schema_support::violations("run.schema.json", &broken).is_empty(),
        "a power that is not a range fails the schema"
    );
}

/// The `report.json` that `record_and_view` wrote.
fn report_json(dir: &Path) -> Value {
    let path = dir.join("results/reports/report.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The one run `record_and_view` recorded, as JSON.
fn only_run(dir: &Path) -> Value {
    let runs = dir.join("results/runs");
    let file = std::fs::read_dir(&runs).unwrap().flatten().next().unwrap();
    serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap()
}

#[test]
fn a_cpu_run_that_read_nothing_says_why_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let reason = "no RAPL energy counters under /sys/class/powercap";
    let tree = tree_with(dir.path(), &|_| {
        Some(json!({"source": "rapl", "unavailable": [reason]}))
    });
    let (_, markdown, html, show) = record_and_view(dir.path(), &tree);
    let line = format!("telemetry: nothing read for any of the 5 benchmarks (not read: {reason})");
    assert!(markdown.contains(&line), "{markdown}");
    assert!(html.contains(&line), "report.html");
    assert!(show.contains(&line), "{show}");
    assert!(
        !markdown.contains("| Benchmark | Source |"),
        "one line, not a column of \"not read\":\n{markdown}"
    );
    let report = report_json(dir.path());
    assert_eq!(
        report["latest_run_telemetry"]["summary"], line,
        "{report:#}"
    );
}

#[test]
fn a_run_recorded_without_telemetry_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), &|_| None);
    let (_, markdown, html, show) = record_and_view(dir.path(), &tree);
    let line = "telemetry: not recorded in this run";
    assert!(markdown.contains(line), "{markdown}");
    assert!(html.contains(line), "report.html");
    assert!(show.contains(line), "{show}");
}

#[test]
fn a_figure_above_the_probes_peak_flags_the_record_with_the_peaks_source() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree_with(dir.path(), &|_| None);
    // A peak of 10 MFLOP/s: the fixture's 64³ f32 GEMM measured far more.
    let probe_path = tree.join("stackbench/system.json");
    let mut probe: Value = serde_json::from_slice(&std::fs::read(&probe_path).unwrap()).unwrap();
    let source = "a clock read as 1 MHz (test fixture)";
    probe["peaks"] = json!([{
        "backend": "cpu", "device": "AMD EPYC", "metric": "flops_per_second", "dtype": "f32",
        "theoretical": 1e7, "measured": null, "source": source,
    }]);
    std::fs::write(&probe_path, serde_json::to_vec(&probe).unwrap()).unwrap();
    let (stderr, markdown, html, _) = record_and_view(dir.path(), &tree);
    let peak = format!("peak suspect: above its 0.01 GFLOP/s peak; peak source: {source}");
    assert!(
        stderr.contains(&format!("note: {F32}: measured ")),
        "{stderr}"
    );
    assert!(stderr.contains(&peak), "{stderr}");

    let record = only_run(dir.path());
    let bench = record["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == F32)
        .unwrap();
    let notes: Vec<&str> = bench["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("measured ") && n.contains(&peak)),
        "{notes:?}"
    );
    assert!(
        markdown.contains(&format!("- `{F32}`: measured ")),
        "{markdown}"
    );
    assert!(markdown.contains(&peak), "{markdown}");
    assert!(html.contains(&peak), "report.html carries the note");
    // (The hardware matrix below has a "% of peak" column; the run page is checked.)
    let data = browser_support::page_data(&html);
    assert!(
        !data["latest_run"].to_string().contains("% of peak"),
        "no percentage of a suspect peak on the run page"
    );
}
