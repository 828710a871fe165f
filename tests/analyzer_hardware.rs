//! `analyze-trends hardware` through the real binary, on runs from three machines
//! (tests/fixtures/hardware: two real runs of this VM and two copies with their probes
//! edited to other machines; see make_runs.py there). Checks the figures against an
//! independent computation from the run files, the rankings, "not measured" (never
//! ranked), and "n/a" (never 0) for a missing price or power reading, in every format; and a
//! Vulkan GPU beside a CUDA one, each device saying which API its figures came through.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hardware")
        .join(path)
}

fn hardware(format: &str, prices: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["hardware", "--results"])
        .arg(fixture(""))
        .arg("--prices")
        .arg(fixture(prices))
        .args(["--format", format])
        .output()
        .expect("run analyze-trends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_report() -> Value {
    let (code, stdout, stderr) = hardware("json", "stackbench.toml");
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

const EPYC: &str = "cpu=AMD EPYC x2;gpu=none [cpu]";
const XEON: &str = "cpu=Intel Xeon Platinum 8480+ x112;gpu=none [cpu]";
const GRACE: &str = "cpu=NVIDIA Grace x72;gpu=none [cpu]";

fn cell<'a>(report: &'a Value, workload: &str, device: &str) -> &'a Value {
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == workload)
        .unwrap_or_else(|| panic!("no row {workload}"));
    row["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["device"] == device)
        .unwrap_or_else(|| panic!("no cell for {device} in {row}"))
}

fn recommendation<'a>(report: &'a Value, family: &str) -> &'a Value {
    report["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["family"] == family)
        .unwrap_or_else(|| panic!("no family {family}"))
}

/// GFLOP/s of gemm/cpu/f32/512x512x512 in a recorded run, from its raw samples.
fn recorded_gflops(run: &str) -> f64 {
    let text = std::fs::read_to_string(fixture("recorded").join(run)).unwrap();
    let run: Value = serde_json::from_str(&text).unwrap();
    let bench = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "gemm/cpu/f32/512x512x512")
        .unwrap();
    let times = bench["samples"]["times"].as_array().unwrap();
    let iters = bench["samples"]["iters"].as_array().unwrap();
    let mut per_iter: Vec<f64> = times
        .iter()
        .zip(iters)
        .map(|(t, i)| t.as_f64().unwrap() / i.as_f64().unwrap())
        .collect();
    per_iter.sort_by(f64::total_cmp);
    let n = per_iter.len();
    let median_ns = if n % 2 == 1 {
        per_iter[n / 2]
    } else {
        (per_iter[n / 2 - 1] + per_iter[n / 2]) / 2.0
    };
    2.0 * 512f64.powi(3) / median_ns
}

#[test]
fn figures_match_an_independent_computation_from_the_runs() {
    let report = json_report();
    assert_eq!(report["devices"].as_array().unwrap().len(), 3);
    let first = recorded_gflops("20261123T141129445Z-p2991-8b9d.json");
    let second = recorded_gflops("20261123T142124857Z-p3242-4f36.json");
    let epyc = cell(&report, "gemm/f32/512x512x512", EPYC);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(
        close(epyc["figure"].as_f64().unwrap(), (first + second) / 2.0),
        "{epyc}"
    );
    let spread = 100.0 * (first - second).abs() / ((first + second) / 2.0);
    assert!(close(epyc["spread_percent"].as_f64().unwrap(), spread));
    assert!(epyc["percent_of_peak"].as_f64().unwrap() > 0.0);
    // The price table says USD 0.10 per hour for the EPYC.
    assert!(close(
        epyc["perf_per_dollar"].as_f64().unwrap(),
        (first + second) / 2.0 / 0.10
    ));
    let xeon = cell(&report, "gemm/f32/512x512x512", XEON);
    assert!(
        close(xeon["figure"].as_f64().unwrap(), 2.0 * first),
        "{xeon}"
    );
    assert!(close(
        xeon["perf_per_watt"].as_f64().unwrap(),
        2.0 * first / 350.0
    ));
    assert!(xeon["spread_percent"].is_null(), "one run has no spread");
}

#[test]
fn missing_prices_and_power_are_null_never_zero() {
    let report = json_report();
    let grace = cell(&report, "gemm/f32/512x512x512", GRACE);
    assert!(grace["perf_per_dollar"].is_null(), "{grace}");
    let epyc = cell(&report, "gemm/f32/512x512x512", EPYC);
    assert!(epyc["perf_per_watt"].is_null(), "{epyc}");
    for format in ["table", "markdown", "html"] {
        let (code, text, stderr) = hardware(format, "stackbench.toml");
        assert_eq!(code, 0, "{stderr}");
        let line = text
            .lines()
            .find(|l| l.contains("gemm/f32/512x512x512") && l.contains("NVIDIA Grace"))
            .unwrap_or_else(|| panic!("{format}: no Grace row in\n{text}"));
        assert!(line.contains("n/a"), "{format}: {line}");
    }
}

#[test]
fn a_device_not_measured_on_a_family_is_listed_and_never_ranked() {
    let report = json_report();
    let bf16 = recommendation(&report, "GEMM bf16");
    assert_eq!(bf16["not_measured"], serde_json::json!([GRACE]));
    for pick in ["fastest", "best_per_dollar", "best_per_watt"] {
        assert_ne!(bf16[pick]["device"], GRACE, "{pick}: {bf16}");
    }
    // Only the Xeon has both bf16 figures and a power reading.
    assert_eq!(bf16["best_per_watt"]["device"], XEON);
    let f32 = recommendation(&report, "GEMM f32");
    assert_eq!(f32["compared_on"], 3);
    assert_eq!(f32["fastest"]["device"], XEON);
    // The Grace has no price: never best per dollar; the EPYC's 40x lower price wins.
    assert_eq!(f32["best_per_dollar"]["device"], EPYC);
}

#[test]
fn without_prices_every_perf_per_dollar_is_not_available() {
    let (code, stdout, stderr) = hardware("json", "no-such-file.toml");
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let f32 = recommendation(&report, "GEMM f32");
    assert_eq!(f32["best_per_dollar"]["status"], "not_available");
    assert_eq!(report["price_basis"], "no prices given");
}

#[test]
fn a_bad_prices_table_is_bad_input_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("stackbench.toml");
    std::fs::write(&bad, "[prices]\nbasis = \"week\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["hardware", "--results"])
        .arg(fixture(""))
        .arg("--prices")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stackbench.toml") && stderr.contains("week"),
        "{stderr}"
    );
}

/// A results directory holding one recorded run, edited by `edit` (the runs' own JSON).
fn results_with(edit: impl FnOnce(&mut Value)) -> tempfile::TempDir {
    let text =
        std::fs::read_to_string(fixture("recorded/20261123T141129445Z-p2991-8b9d.json")).unwrap();
    let mut run: Value = serde_json::from_str(&text).unwrap();
    edit(&mut run);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    std::fs::write(
        dir.path().join("runs/20261123T141129445Z-p2991-8b9d.json"),
        serde_json::to_string(&run).unwrap(),
    )
    .unwrap();
    dir
}

fn hardware_in(results: &std::path::Path, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["hardware", "--results"])
        .arg(results)
        .args(["--prices", "no-such-file.toml", "--format", format])
        .output()
        .expect("run analyze-trends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// vLLM declares its work as output tokens: 512 tokens per call at 2 ms a call is 256 000
/// tokens/s, shown as tokens/s (not as 2.56e-4 "GFLOP/s").
#[test]
fn tokens_per_second_are_shown_as_tokens_per_second() {
    let results = results_with(|run| {
        let mut bench = run["benchmarks"][0].clone();
        bench["id"] = "components/vllm/offline/b4_in128_out128".into();
        bench["group"] = "components/vllm".into();
        bench["function"] = "offline".into();
        bench["value"] = "b4_in128_out128".into();
        bench["throughput"] = serde_json::json!({"Elements": 512});
        bench["estimates"] = Value::Null;
        bench["samples"] = serde_json::json!({
            "sampling_mode": "Flat", "iters": [1.0, 1.0, 1.0], "times": [2e6, 2e6, 2e6]
        });
        run["benchmarks"].as_array_mut().unwrap().push(bench);
    });
    let report: Value = serde_json::from_str(&hardware_in(results.path(), "json")).unwrap();
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "components/vllm/offline/b4_in128_out128")
        .unwrap();
    assert_eq!(row["unit"], "tokens/s", "{row}");
    let figure = row["cells"][0]["figure"].as_f64().unwrap();
    assert!((figure - 256_000.0).abs() < 1e-6, "{row}");
    let family = recommendation(&report, "inference tokens/s");
    assert_eq!(family["unit"], "tokens/s");
    let gemm = recommendation(&report, "GEMM f32");
    assert_eq!(gemm["unit"], "GFLOP/s");
    for format in ["table", "markdown", "html"] {
        let text = hardware_in(results.path(), format);
        let line = text
            .lines()
            .find(|l| l.contains("components/vllm/offline"))
            .unwrap_or_else(|| panic!("{format}: no vLLM row in\n{text}"));
        assert!(line.contains("256000 tokens/s"), "{format}: {line}");
        assert!(!line.contains("GFLOP"), "{format}: {line}");
    }
}

/// A probe peak below what the machine measured is a wrong peak: no "1384 % of peak", but
/// "peak suspect" with the peak's source, in every format.
#[test]
fn a_figure_above_its_peak_marks_the_peak_suspect_and_names_its_source() {
    let results = results_with(|run| {
        for peak in run["system"]["peaks"].as_array_mut().unwrap() {
            if peak["dtype"] == "f32" {
                peak["theoretical"] = 1e9.into();
                peak["measured"] = Value::Null;
                peak["source"] = "a deliberately wrong clock".into();
            }
        }
    });
    let report: Value = serde_json::from_str(&hardware_in(results.path(), "json")).unwrap();
    let cell = &report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "gemm/f32/512x512x512")
        .unwrap()["cells"][0];
    assert!(cell["percent_of_peak"].is_null(), "{cell}");
    assert_eq!(cell["suspect_peak"]["source"], "a deliberately wrong clock");
    assert_eq!(cell["suspect_peak"]["unit"], "GFLOP/s");
    for format in ["table", "markdown", "html"] {
        let text = hardware_in(results.path(), format);
        let line = text
            .lines()
            .find(|l| l.contains("gemm/f32/512x512x512"))
            .unwrap_or_else(|| panic!("{format}: no row in\n{text}"));
        assert!(
            line.contains("peak suspect") && line.contains("a deliberately wrong clock"),
            "{format}: {line}"
        );
        assert!(
            !line.contains(" % "),
            "{format}: a percentage over 100 shown: {line}"
        );
    }
}

/// The recorded run moved to another machine and API: its `gemm/cpu/f32/512x512x512` as
/// `gemm/<backend>/…` with its times scaled, the probe's `backends.<backend>` holding one
/// device with `properties`, and one f32 FMA peak for that backend. Test data for the
/// report's grouping and labels, not a measurement of either machine.
fn moved_run(
    run_id: &str,
    fingerprint: &str,
    backend: &str,
    device: Value,
    peak: Value,
    scale: f64,
) -> Value {
    let text =
        std::fs::read_to_string(fixture("recorded/20261123T141129445Z-p2991-8b9d.json")).unwrap();
    let mut run: Value = serde_json::from_str(&text).unwrap();
    run["run_id"] = run_id.into();
    run["fingerprint"] = fingerprint.into();
    run["system"]["fingerprint"] = fingerprint.into();
    run["system"]["backends"][backend] =
        serde_json::json!({"status": "available", "devices": [device]});
    run["system"]["peaks"] = serde_json::json!([peak]);
    let mut bench = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == "gemm/cpu/f32/512x512x512")
        .unwrap()
        .clone();
    bench["id"] = format!("gemm/{backend}/f32/512x512x512").into();
    bench["group"] = format!("gemm/{backend}").into();
    bench["estimates"] = Value::Null;
    for t in bench["samples"]["times"].as_array_mut().unwrap() {
        *t = (t.as_f64().unwrap() * scale).into();
    }
    run["benchmarks"] = serde_json::json!([bench]);
    run
}

/// An Intel GPU measured through Vulkan beside an H100 through CUDA, and lavapipe (a CPU
/// behind a Vulkan driver): one row for the workload, a cell per device, each device's %
/// of its own backend's peak (the Vulkan one measured, as `stackbench info` records it),
/// and the device list saying which API, version and driver each figure came through, in
/// every format.
#[test]
fn a_vulkan_gpu_stands_beside_a_cuda_one_and_each_says_which_api_it_came_through() {
    let arc = "cpu=Intel Core Ultra 7 x16;gpu=Intel Arc A770";
    let h100 = "cpu=Intel Xeon Platinum 8480+ x112;gpu=NVIDIA H100 80GB HBM3";
    let lavapipe = "cpu=AMD EPYC x2;gpu=none";
    let runs = [
        moved_run(
            "20261123T160000000Z-arc",
            arc,
            "vulkan",
            serde_json::json!({"backend": "vulkan", "name": "Intel(R) Arc(tm) A770 Graphics (DG2)",
                "properties": {"api_version": "1.3.289", "driver_name": "Intel open-source Mesa driver",
                    "driver_info": "Mesa 24.2.8", "device_type": "discrete_gpu"}}),
            serde_json::json!({"backend": "vulkan", "device": "Intel(R) Arc(tm) A770 Graphics (DG2)",
                "metric": "flops_per_second", "dtype": "f32", "theoretical": null, "measured": 1.6e13,
                "source": "measured: FMA chains (stackbench info)"}),
            0.01,
        ),
        moved_run(
            "20261123T160100000Z-h100",
            h100,
            "cuda",
            serde_json::json!({"backend": "cuda", "name": "NVIDIA H100 80GB HBM3",
                "properties": {"compute_capability": "9.0"}}),
            serde_json::json!({"backend": "cuda", "device": "NVIDIA H100 80GB HBM3",
                "metric": "flops_per_second", "dtype": "f32", "theoretical": 6.7e13, "measured": null,
                "source": "datasheet"}),
            0.002,
        ),
        moved_run(
            "20261123T160200000Z-lvp",
            lavapipe,
            "vulkan",
            serde_json::json!({"backend": "vulkan", "name": "llvmpipe (LLVM 15.0.6, 256 bits)",
                "properties": {"api_version": "1.3.230", "driver_name": "llvmpipe",
                    "driver_info": "Mesa 22.3.6 (LLVM 15.0.6)", "device_type": "cpu"}}),
            serde_json::json!({"backend": "vulkan", "device": "llvmpipe (LLVM 15.0.6, 256 bits)",
                "metric": "flops_per_second", "dtype": "f32", "theoretical": null, "measured": 6.67e10,
                "source": "measured: FMA chains (stackbench info)"}),
            20.0,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    for run in &runs {
        let name = format!("{}.json", run["run_id"].as_str().unwrap());
        std::fs::write(dir.path().join("runs").join(name), run.to_string()).unwrap();
    }
    let report: Value = serde_json::from_str(&hardware_in(dir.path(), "json")).unwrap();
    let device = |key: &str| {
        report["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["key"] == key)
            .unwrap_or_else(|| panic!("no device {key}: {report:#}"))
            .clone()
    };
    let (arc_key, h100_key, lvp_key) = (
        format!("{arc} [vulkan]"),
        format!("{h100} [cuda]"),
        format!("{lavapipe} [vulkan]"),
    );
    let arc_device = device(&arc_key);
    assert_eq!(arc_device["kind"], "Intel(R) Arc(tm) A770 Graphics (DG2)");
    assert_eq!(
        arc_device["api"],
        "Vulkan 1.3.289, driver Intel open-source Mesa driver (Mesa 24.2.8)"
    );
    assert_eq!(device(&h100_key)["api"], "CUDA, compute capability 9.0");
    let lvp_api = device(&lvp_key)["api"].as_str().unwrap().to_string();
    assert!(
        lvp_api.starts_with("Vulkan 1.3.230, driver llvmpipe (Mesa 22.3.6 (LLVM 15.0.6))")
            && lvp_api.ends_with("a CPU behind the driver, not a GPU"),
        "{lvp_api}"
    );
    // One workload, one cell per device, each against its own backend's peak.
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload"] == "gemm/f32/512x512x512")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(row["cells"].as_array().unwrap().len(), 3, "{row:#}");
    for (key, peak_gflops) in [
        (&arc_key, 16_000.0),
        (&h100_key, 67_000.0),
        (&lvp_key, 66.7),
    ] {
        let c = cell(&report, "gemm/f32/512x512x512", key);
        let figure = c["figure"].as_f64().unwrap();
        let percent = c["percent_of_peak"]
            .as_f64()
            .unwrap_or_else(|| panic!("{c}"));
        assert!(
            (percent - 100.0 * figure / peak_gflops).abs() < 1e-6 * percent.max(1.0),
            "{key}: {figure} GFLOP/s is not {percent} % of {peak_gflops}"
        );
    }
    for format in ["table", "markdown", "html"] {
        let text = hardware_in(dir.path(), format);
        assert!(
            text.contains("Devices and the API each was measured through"),
            "{format}: {text}"
        );
        for (name, api) in [
            (
                "Intel(R) Arc(tm) A770 Graphics (DG2)",
                "Vulkan 1.3.289, driver Intel open-source Mesa driver (Mesa 24.2.8)",
            ),
            ("NVIDIA H100 80GB HBM3", "CUDA, compute capability 9.0"),
        ] {
            let line = text
                .lines()
                .find(|l| l.contains(name) && l.contains(api))
                .unwrap_or_else(|| panic!("{format}: no device line for {name}: {text}"));
            assert!(!line.contains("gemm/"), "{format}: {line}");
        }
    }
}
