//! The thresholds `stackbench validate` applies when the config has no rule for a
//! benchmark, and the learned ones it adds from the machine's own history.
//!
//! Sources (the public files, each named where its figure is used):
//! - NVIDIA DCGM diagnostics, `diag-skus.yaml`, H100 80GB HBM3: memory bandwidth
//!   >= 1,905,000 MiB/s (= 1,997.5 GB/s). DCGM publishes no bf16 GEMM threshold.
//! - AMD ROCm Validation Suite, `rvs/conf/MI300X/gst_single.conf`, GEMM 4864x4096x8192:
//!   bf16 581 TFLOPS (random init) / 552 (trig init); fp16 639 / 523; fp8 1215 / 981.
//!   The fp8 figures are not used: stackbench has no ROCm FP8 GEMM yet, so a rule for
//!   `gemm/rocm/fp8*` would be a check that can never run.
//!   stackbench's GEMM inputs are random, so the random-init figure is expected and
//!   anything below the trig-init figure fails; between the two is a warning. They apply
//!   only to shapes at least as large as RVS's: a smaller GEMM cannot reach them.
//!   RVS publishes no bandwidth thresholds.
//! - CPU copy and triad: the STREAM expectation for the DIMMs the probe read from SMBIOS
//!   (see `STREAM_SUSTAINED_FRACTION`); when the probe could not read them, validate says
//!   so beside the benchmark instead of judging it.
//! - Elsewhere, fractions of the probe's peak. They are floors that catch a broken
//!   installation (a fallback kernel, wrong clocks, a throttled device), not tuning
//!   targets: MI300X's achievable bf16 GEMM (MAMF) is 51 % of its peak, H100's 80 %.

use super::{Figure, Inputs, Threshold, ThresholdKind};
use crate::analysis::throughput::PeakTable;
use crate::config::{ThresholdRule, ValidateConfig};
use crate::results::BenchmarkRecord;
use crate::results::RunRecord;
use crate::system::cpu::CpuInfo;
use crate::system::memory::MemoryReading;
use crate::system::memory::channels::ChannelBasis;
use crate::workload::ids::parse_bytes_id;
use regex::Regex;

/// A vendor's acceptance figure for benchmarks matching `pattern` on devices whose name
/// contains `device`, in GB/s or GFLOP/s.
struct VendorFigure {
    device: &'static str,
    pattern: &'static str,
    /// Smallest GEMM (m·n·k) the figure applies to; 0 for bandwidth.
    min_mnk: u64,
    expected: f64,
    failure_at: f64,
    source: &'static str,
}

const MIB_PER_S_IN_GB_PER_S: f64 = 1_048_576.0 / 1e9;
const RVS_GST_MNK: u64 = 4864 * 4096 * 8192;

const VENDOR_FIGURES: &[VendorFigure] = &[
    VendorFigure {
        device: "H100 80GB HBM3",
        pattern: r"^memory_bandwidth/cuda/(copy|triad)/",
        min_mnk: 0,
        expected: 1_905_000.0 * MIB_PER_S_IN_GB_PER_S,
        failure_at: 1_905_000.0 * MIB_PER_S_IN_GB_PER_S,
        source: "NVIDIA DCGM diag-skus.yaml, H100 80GB HBM3: memory bandwidth >= 1,905,000 MiB/s",
    },
    VendorFigure {
        device: "MI300X",
        pattern: r"^gemm/rocm/bf16/",
        min_mnk: RVS_GST_MNK,
        expected: 581_000.0,
        failure_at: 552_000.0,
        source: "AMD RVS gst_single.conf, MI300X bf16: 581 TFLOPS random init, 552 trig init",
    },
    VendorFigure {
        device: "MI300X",
        pattern: r"^gemm/rocm/f16/",
        min_mnk: RVS_GST_MNK,
        expected: 639_000.0,
        failure_at: 523_000.0,
        source: "AMD RVS gst_single.conf, MI300X fp16: 639 TFLOPS random init, 523 trig init",
    },
];

/// Percent of peak expected / failing, for GPU GEMM and for GPU memory bandwidth.
const GEMM_PEAK_PERCENT: (f64, f64) = (50.0, 25.0);
/// CPU GEMM against the FMA peak. A good BLAS reaches about 40 % of the *measured* FMA
/// peak on a 2-core Zen VM (the `gemm` crate and OpenBLAS alike, ~200 of ~495 GFLOP/s f32:
/// `cargo bench --bench gemm -- gemm/cpu/f32/2048x2048x2048` against the FMA peak
/// `stackbench info` measures): expect 30 %, fail below 15 %, under half of what a BLAS gets.
const CPU_GEMM_PEAK_PERCENT: (f64, f64) = (30.0, 15.0);
const BANDWIDTH_PEAK_PERCENT: (f64, f64) = (70.0, 50.0);
/// STREAM on all cores sustains about 70-85 % of the DIMMs' theoretical bandwidth on
/// servers (J. McCalpin's STREAM results and FAQ, cs.virginia.edu/stream; vendors' published
/// STREAM Triad figures fall in the same band). Those figures use non-temporal stores;
/// stackbench's kernels store plainly (crates/measure/src/backend/cpu/stream.rs), so each written line is
/// also read first (write-allocate) and the bytes STREAM counts are only part of the
/// traffic: 3 of 4 arrays for triad, 2 of 3 for copy. The low end of the band times that
/// share is the expectation: 52.5 % of theoretical for triad, 46.7 % for copy (copy goes
/// through memcpy, which may stream large arrays and then beat it: conservative on purpose).
const STREAM_SUSTAINED_FRACTION: f64 = 0.70;
/// Failing below half the expectation: what one missing channel pair, memory run at a
/// fallback speed or every thread on one NUMA node costs. Between is a warning, since
/// desktop and VM memory controllers reach less than servers' and need not be broken.
const STREAM_FAILURE_FRACTION: f64 = 0.5;
/// STREAM's own rule: each array at least 4x the last-level cache, or the caches answer.
const STREAM_ARRAY_OVER_LLC: u64 = 4;
/// CPU GEMMs smaller than 1024³ are bound by packing and threading overhead, not FMAs.
const CPU_PEAK_MIN_MNK: u64 = 1024 * 1024 * 1024;
/// A learned threshold never assumes less noise than this fraction of the median: a
/// perfectly steady history would otherwise fail on the first 0.1 % wobble.
const LEARNED_NOISE_FLOOR: f64 = 0.01;

/// Every threshold for one measured benchmark: the config's rules where any matches,
/// else the built-in defaults; plus the learned one when the history is long enough.
pub fn thresholds_for(
    inputs: &Inputs,
    benchmark: &BenchmarkRecord,
    figure: &Figure,
) -> Vec<Threshold> {
    let id = benchmark.id.as_str();
    let backend = id.split('/').nth(1).unwrap_or("");
    let devices = device_names(inputs.run, backend);
    let matching: Vec<&ThresholdRule> = inputs
        .config
        .thresholds
        .iter()
        .filter(|r| r.regex().is_some_and(|re| re.is_match(id)))
        .filter(|r| r.applies_to(backend, &devices))
        .collect();
    let mut out: Vec<Threshold> = if matching.is_empty() {
        built_in(inputs.run, id, backend, &devices, figure)
            .into_iter()
            .collect()
    } else {
        matching
            .into_iter()
            .filter_map(|r| from_rule(r, figure))
            .collect()
    };
    out.extend(learned(id, inputs.history, figure, &inputs.config.validate));
    out
}

/// The names of the devices `backend` ran on, from the run's probe.
pub fn device_names(run: &RunRecord, backend: &str) -> Vec<String> {
    run.system
        .as_ref()
        .and_then(|s| s.get("backends"))
        .and_then(|b| b.get(backend))
        .and_then(|b| b.get("devices"))
        .and_then(|d| d.as_array())
        .map(|devices| {
            devices
                .iter()
                .filter_map(|d| d.get("name").and_then(|n| n.as_str()))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn from_rule(rule: &ThresholdRule, figure: &Figure) -> Option<Threshold> {
    let expected = match (rule.expected, rule.percent_of_peak) {
        (Some(value), _) => value,
        // The figure's own percent of peak gives the peak in the figure's unit.
        (None, Some(percent)) => {
            let peak = figure.value * 100.0 / figure.percent_of_peak.filter(|p| *p > 0.0)?;
            peak * percent / 100.0
        }
        (None, None) => return None,
    };
    let level = |fraction: f64| {
        if figure.higher_is_better {
            expected * fraction
        } else {
            expected / fraction
        }
    };
    let what = match rule.percent_of_peak {
        Some(p) => format!("{p} % of peak"),
        None => format!("{expected} {}", figure.unit),
    };
    Some(Threshold {
        kind: ThresholdKind::Config,
        expected,
        warning_at: level(rule.warning_below),
        failure_at: level(rule.failure_below),
        higher_is_better: figure.higher_is_better,
        source: rule
            .source
            .clone()
            .unwrap_or_else(|| format!("stackbench.toml: '{}' expects {what}", rule.pattern)),
    })
}

fn built_in(
    run: &RunRecord,
    id: &str,
    backend: &str,
    devices: &[String],
    figure: &Figure,
) -> Option<Threshold> {
    if !figure.higher_is_better {
        return None;
    }
    vendor(id, devices)
        .or_else(|| peak_fraction(id, backend, figure))
        .or_else(|| {
            stream_expectation(run, id)
                .ok()
                .flatten()
                .filter(|_| figure.unit == "GB/s")
        })
}

/// Why a benchmark that has a built-in default in general got none in this run, for
/// validate to print beside it (today: a CPU copy/triad without a readable DIMM setup).
pub fn why_no_default(run: &RunRecord, id: &str) -> Option<String> {
    stream_expectation(run, id).err()
}

/// The STREAM expectation for `memory_bandwidth/cpu/{copy,triad}/<size>` in GB/s;
/// `Ok(None)` for other benchmarks, `Err` with the reason when this run cannot give one.
fn stream_expectation(run: &RunRecord, id: &str) -> Result<Option<Threshold>, String> {
    let parts: Vec<&str> = id.split('/').collect();
    let ["memory_bandwidth", "cpu", kernel, size] = parts[..] else {
        return Ok(None);
    };
    let (counted, counted_what) = match kernel {
        "copy" => (2.0 / 3.0, "2 of 3 arrays"),
        "triad" => (3.0 / 4.0, "3 of 4 arrays"),
        _ => return Ok(None),
    };
    let system = run
        .system
        .as_ref()
        .ok_or("no STREAM expectation: the run has no system probe")?;
    let reading: MemoryReading = match system.get("memory_config") {
        None => MemoryReading::default(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            format!("no STREAM expectation: the probe's memory_config is unreadable: {e}")
        })?,
    };
    let (peak, config) = reading.theoretical_bytes_per_s().map_err(|why| {
        format!("no STREAM expectation: the memory configuration is unknown ({why})")
    })?;
    let llc = system
        .get("cpu")
        .and_then(|c| serde_json::from_value::<CpuInfo>(c.clone()).ok())
        .and_then(|c| c.llc_bytes());
    if let (Some(bytes), Some(llc)) = (parse_bytes_id(size), llc)
        && (bytes as u64) < STREAM_ARRAY_OVER_LLC * llc
    {
        return Err(format!(
            "no STREAM expectation: {size} arrays are under {STREAM_ARRAY_OVER_LLC}x the last-level \
             cache ({} MiB), so caches answer, not the DIMMs",
            llc >> 20
        ));
    }
    let expected = peak / 1e9 * STREAM_SUSTAINED_FRACTION * counted;
    Ok(Some(Threshold {
        kind: ThresholdKind::StreamExpectation,
        expected,
        warning_at: expected,
        failure_at: expected * STREAM_FAILURE_FRACTION,
        higher_is_better: true,
        source: format!(
            "STREAM expectation: {:.0} % sustained x {counted_what} counted (plain stores) of \
             the DIMMs' {} ({}, channels from {}), failing below half of it",
            STREAM_SUSTAINED_FRACTION * 100.0,
            config.peak_formula,
            config.source,
            match config.channels_from {
                ChannelBasis::Locators => "slot names",
                ChannelBasis::PopulatedDimms => "populated DIMMs",
            }
        ),
    }))
}

fn vendor(id: &str, devices: &[String]) -> Option<Threshold> {
    let mnk = gemm_mnk(id);
    VENDOR_FIGURES
        .iter()
        .filter(|v| devices.iter().any(|d| d.contains(v.device)))
        .filter(|v| Regex::new(v.pattern).is_ok_and(|re| re.is_match(id)))
        .find(|v| v.min_mnk == 0 || mnk.is_some_and(|m| m >= v.min_mnk))
        .map(|v| Threshold {
            kind: ThresholdKind::Vendor,
            expected: v.expected,
            warning_at: v.expected,
            failure_at: v.failure_at,
            higher_is_better: true,
            source: v.source.into(),
        })
}

fn peak_fraction(id: &str, backend: &str, figure: &Figure) -> Option<Threshold> {
    let percent = figure.percent_of_peak.filter(|p| *p > 0.0)?;
    let peak = figure.value * 100.0 / percent;
    let family = id.split('/').next().unwrap_or("");
    let function = id.split('/').nth(2).unwrap_or("");
    let (kind, (expected, failure)) = match (backend, family) {
        // The CPU default is a fraction of the FMA peak: integer GEMMs (TOPS against the
        // VNNI peak, a kernel of stackbench's own) have no such acceptance figure.
        ("cpu", "gemm")
            if gemm_mnk(id).is_some_and(|m| m >= CPU_PEAK_MIN_MNK)
                && !function.starts_with("int8") =>
        {
            (ThresholdKind::CpuPeak, CPU_GEMM_PEAK_PERCENT)
        }
        ("cuda" | "rocm", "gemm") => (ThresholdKind::PeakFraction, GEMM_PEAK_PERCENT),
        // Vulkan's GEMM is stackbench's own shader, not a vendor library: a fraction of the
        // FMA peak would judge that kernel, not the machine, so only its history judges it
        // (`learned`). Its bandwidth is judged as the other GPUs' is.
        ("cuda" | "rocm" | "vulkan", "memory_bandwidth")
            if matches!(function, "copy" | "triad") =>
        {
            (ThresholdKind::PeakFraction, BANDWIDTH_PEAK_PERCENT)
        }
        _ => return None,
    };
    let what = match (kind, backend) {
        (ThresholdKind::CpuPeak, _) => {
            "the CPU's FMA peak (the larger of measured and theoretical)"
        }
        // Vulkan reports no memory clock: the probe's bandwidth peak is the datasheet's for a
        // device it has a row for, else the one measured on the device before the run.
        (_, "vulkan") => {
            "the probe's bandwidth peak (Vulkan reports no clocks: the datasheet's, else measured on the device)"
        }
        _ => "the probe's peak (no vendor acceptance figure for this device)",
    };
    Some(Threshold {
        kind,
        expected: peak * expected / 100.0,
        warning_at: peak * expected / 100.0,
        failure_at: peak * failure / 100.0,
        higher_is_better: true,
        source: format!("{expected} % of {what}, failing below {failure} %"),
    })
}

/// `m·n·k` of a GEMM id `gemm/<backend>/<dtype>/<m>x<n>x<k>`.
fn gemm_mnk(id: &str) -> Option<u64> {
    if !id.starts_with("gemm/") {
        return None;
    }
    let dims: Vec<u64> = id
        .rsplit('/')
        .next()?
        .split('x')
        .map(|d| d.parse().ok())
        .collect::<Option<_>>()?;
    (dims.len() == 3).then(|| dims.iter().product())
}

/// The machine's own level: median − k·noise of the per-run figures in `history`.
pub fn learned(
    id: &str,
    history: &[RunRecord],
    figure: &Figure,
    settings: &ValidateConfig,
) -> Option<Threshold> {
    let plain = PeakTable::from_probe_peaks(&[], true);
    let values: Vec<f64> = history
        .iter()
        .filter_map(|run| run.benchmark(id))
        .filter_map(|b| super::figure(&plain, b))
        .filter(|f| f.unit == figure.unit)
        .map(|f| f.value)
        .collect();
    if values.len() < settings.learned_min_runs {
        return None;
    }
    let median = crate::stats::median(&values);
    let noise = (1.4826 * crate::stats::mad(&values)).max(LEARNED_NOISE_FLOOR * median);
    let sign = if figure.higher_is_better { -1.0 } else { 1.0 };
    Some(Threshold {
        kind: ThresholdKind::Learned,
        expected: median,
        warning_at: median + sign * settings.learned_warning_k * noise,
        failure_at: median + sign * settings.learned_failure_k * noise,
        higher_is_better: figure.higher_is_better,
        source: format!(
            "median of {} stored runs of this hardware − {}·noise (noise {:.3} {})",
            values.len(),
            settings.learned_failure_k,
            noise,
            figure.unit
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(value: f64, percent_of_peak: Option<f64>) -> Figure {
        Figure {
            value,
            unit: "GFLOP/s".into(),
            higher_is_better: true,
            percent_of_peak,
            suspect_peak: None,
        }
    }

    #[test]
    fn vendor_figures_apply_to_their_device_and_large_enough_shapes() {
        let mi300x = vec!["AMD Instinct MI300X".to_string()];
        let t = vendor("gemm/rocm/bf16/8192x8192x8192", &mi300x).unwrap();
        assert_eq!((t.expected, t.failure_at), (581_000.0, 552_000.0));
        assert!(vendor("gemm/rocm/bf16/2048x2048x2048", &mi300x).is_none());
        assert!(vendor("gemm/rocm/bf16/8192x8192x8192", &["MI250X".into()]).is_none());
        let h100 = vec!["NVIDIA H100 80GB HBM3".to_string()];
        let bw = vendor("memory_bandwidth/cuda/triad/1GiB", &h100).unwrap();
        assert!((bw.failure_at - 1997.537).abs() < 0.01, "{}", bw.failure_at);
        assert!(
            vendor(
                "memory_bandwidth/cuda/triad/1GiB",
                &["NVIDIA H100 PCIe".into()]
            )
            .is_none()
        );
    }

    #[test]
    fn peak_fractions_need_a_peak_and_a_large_cpu_gemm() {
        let t = peak_fraction(
            "gemm/cpu/f32/2048x2048x2048",
            "cpu",
            &rate(100.0, Some(50.0)),
        )
        .unwrap();
        assert_eq!(t.kind, ThresholdKind::CpuPeak);
        assert_eq!((t.expected, t.failure_at), (60.0, 30.0));
        let g = peak_fraction(
            "gemm/cuda/bf16/512x512x512",
            "cuda",
            &rate(10.0, Some(10.0)),
        )
        .unwrap();
        assert_eq!(g.kind, ThresholdKind::PeakFraction);
        // Vulkan: bandwidth against the probe's peak, named as such.
        let v = peak_fraction(
            "memory_bandwidth/vulkan/triad/1GiB",
            "vulkan",
            &rate(400.0, Some(80.0)),
        )
        .unwrap();
        assert_eq!(v.kind, ThresholdKind::PeakFraction);
        assert_eq!((v.expected, v.failure_at), (350.0, 250.0));
        assert!(
            v.source.contains("Vulkan reports no clocks"),
            "{}",
            v.source
        );
        for (id, backend, figure) in [
            ("gemm/cpu/f32/512x512x512", "cpu", rate(1.0, Some(5.0))),
            ("gemm/cpu/f16/2048x2048x2048", "cpu", rate(1.0, None)),
            ("gemm/cpu/int8/2048x2048x2048", "cpu", rate(1.0, Some(50.0))),
            (
                "memory_bandwidth/cpu/triad/256MiB",
                "cpu",
                rate(1.0, Some(1.0)),
            ),
            // Vulkan's own GEMM shader has no peak fraction.
            (
                "gemm/vulkan/f32/4096x4096x4096",
                "vulkan",
                rate(1000.0, Some(20.0)),
            ),
            (
                "memory_bandwidth/vulkan/h2d_pinned/512MiB",
                "vulkan",
                rate(10.0, Some(20.0)),
            ),
        ] {
            assert!(peak_fraction(id, backend, &figure).is_none(), "{id}");
        }
    }

    fn run_with_memory(memory_config: Option<serde_json::Value>) -> RunRecord {
        let mut system = serde_json::json!({"cpu": {"architecture": "x86_64", "vendor": null,
            "model": null, "identification": {}, "sockets": 1, "physical_cores": 2, "logical_cpus": 2, "base_mhz": null,
            "max_mhz": null, "features": [], "caches": [
                {"level": 3, "kind": "Unified", "size_bytes": 32 << 20, "shared_by_cpus": 2}]}});
        if let Some(m) = memory_config {
            system["memory_config"] = m;
        }
        serde_json::from_value(serde_json::json!({
            "schema": "stackbench.run.v1", "run_id": "r", "created_unix_ms": 0, "timestamp": "t",
            "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
            "system": system, "benchmarks": []
        }))
        .unwrap()
    }

    #[test]
    fn stream_expectations_follow_the_dimms_and_say_why_when_they_cannot() {
        let slots: Vec<crate::system::memory::MemoryDevice> = ["DIMM_A1", "DIMM_B1"]
            .iter()
            .map(|l| crate::system::memory::MemoryDevice {
                locator: Some((*l).into()),
                size_bytes: Some(16 << 30),
                configured_mts: Some(3200),
                data_width_bits: Some(64),
                ..Default::default()
            })
            .collect();
        let read = serde_json::to_value(MemoryReading::from_slots(&slots, "fixture")).unwrap();
        let run = run_with_memory(Some(read));
        // 2 channels x 3200 MT/s x 8 bytes = 51.2 GB/s.
        let triad = stream_expectation(&run, "memory_bandwidth/cpu/triad/256MiB")
            .unwrap()
            .unwrap();
        assert_eq!(triad.kind, ThresholdKind::StreamExpectation);
        assert!(
            (triad.expected - 51.2 * 0.70 * 0.75).abs() < 1e-9,
            "{}",
            triad.expected
        );
        assert!((triad.failure_at - triad.expected / 2.0).abs() < 1e-9);
        assert!(triad.source.contains("51.2 GB/s") && triad.source.contains("slot names"));
        let copy = stream_expectation(&run, "memory_bandwidth/cpu/copy/1GiB")
            .unwrap()
            .unwrap();
        assert!((copy.expected - 51.2 * 0.70 * 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            stream_expectation(&run, "memory_bandwidth/cpu/read/1GiB"),
            Ok(None)
        );
        assert_eq!(
            stream_expectation(&run, "memory_bandwidth/cuda/triad/1GiB"),
            Ok(None)
        );
        // 64 MiB arrays against a 32 MiB L3: the caches would answer.
        let small = stream_expectation(&run, "memory_bandwidth/cpu/triad/64MiB").unwrap_err();
        assert!(
            small.contains("4x the last-level cache (32 MiB)"),
            "{small}"
        );

        let none = serde_json::json!({"status": "unavailable",
            "reason": "/sys/firmware/dmi/entries is absent (no SMBIOS tables exposed), and dmidecode is not installed"});
        let why = why_no_default(
            &run_with_memory(Some(none)),
            "memory_bandwidth/cpu/triad/256MiB",
        )
        .unwrap();
        assert!(
            why.contains("memory configuration is unknown") && why.contains("dmidecode"),
            "{why}"
        );
        let old =
            why_no_default(&run_with_memory(None), "memory_bandwidth/cpu/triad/256MiB").unwrap();
        assert!(old.contains("predates"), "{old}");
        assert_eq!(why_no_default(&run, "gemm/cpu/f32/64x64x64"), None);
    }

    #[test]
    fn rules_scale_with_percent_of_peak_and_invert_for_times() {
        let rule = ThresholdRule {
            pattern: "x".into(),
            device: None,
            expected: None,
            percent_of_peak: Some(40.0),
            warning_below: 1.0,
            failure_below: 0.5,
            source: None,
        };
        let t = from_rule(&rule, &rate(50.0, Some(25.0))).unwrap();
        assert_eq!((t.expected, t.failure_at), (80.0, 40.0));
        assert!(from_rule(&rule, &rate(50.0, None)).is_none());
        let time = Figure {
            value: 3.0,
            unit: "ms".into(),
            higher_is_better: false,
            percent_of_peak: None,
            suspect_peak: None,
        };
        let rule = ThresholdRule {
            expected: Some(2.0),
            percent_of_peak: None,
            ..rule
        };
        let t = from_rule(&rule, &time).unwrap();
        assert_eq!((t.warning_at, t.failure_at), (2.0, 4.0));
    }
}
