//! Rates beside times, each in the unit its benchmark's throughput kind gives it
//! ([`RateUnit`]): GFLOP/s for FLOP counts, TOPS for integer operations (int8 GEMM), GB/s
//! for bytes, tokens/s for model tokens,
//! calls/s for work without a declared unit, Gelem/s for elements of no known kind. A unit
//! is decided here, once, and travels with the number; views only print it.
//!
//! Percent of the probe's peak is given where the probe has one for that backend and
//! precision. A figure above its peak is not "1384 % of peak": the peak is wrong, so the
//! rate carries a [`SuspectPeak`] naming the peak's source instead of a percentage.

use crate::criterion_output::Throughput;
pub use crate::units::{RateUnit, SuspectPeak};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rate {
    pub unit: RateUnit,
    /// The figure in `unit` (GB/s, GFLOP/s and Gelem/s in decimal giga, as peak tables are).
    pub value: f64,
    /// Percent of a peak the figure did not exceed; `None` without a peak or when the
    /// figure exceeded it (then `suspect_peak` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_of_peak: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspect_peak: Option<SuspectPeak>,
}

impl Rate {
    /// ` (55 % of peak)`, ` (peak suspect: ... (source))`, or nothing without a peak.
    pub fn peak_note(&self) -> String {
        match (&self.suspect_peak, self.percent_of_peak) {
            (Some(s), _) => format!(" ({})", s.describe()),
            (None, Some(p)) => format!(" ({p:.0} % of peak)"),
            (None, None) => String::new(),
        }
    }

    /// For a figure above its peak, the note a run record carries: the figure, the peak
    /// and where the peak came from (`measured 1384 GFLOP/s; peak suspect: above its 100
    /// GFLOP/s peak; peak source: ...`). `None` for a figure within its peak.
    pub fn suspect_note(&self) -> Option<String> {
        let suspect = self.suspect_peak.as_ref()?;
        Some(format!(
            "measured {} {}; {}",
            crate::units::format_figure(Some(self.value)),
            self.unit,
            suspect.describe()
        ))
    }
}

/// Notes on each benchmark of `run` whose figure exceeds the probe's peak for it, by the
/// rule every view applies ([`PeakTable::rate`] over the median time per iteration), so
/// the record itself says the percentage is not a fact. Returns (id, note) per note added;
/// a note already there (the run was flagged before) is not added twice.
pub fn flag_suspect_peaks(run: &mut crate::results::RunRecord) -> Vec<(String, String)> {
    let peaks = PeakTable::from_probe_peaks(&run.peaks(), run.system.is_some());
    let mut flagged = Vec::new();
    for bench in &mut run.benchmarks {
        let per_iter: Vec<f64> = bench
            .samples
            .per_iteration_ns()
            .into_iter()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        if per_iter.is_empty() {
            continue;
        }
        let ns = crate::stats::median(&per_iter);
        let Some(note) = bench
            .throughput
            .as_ref()
            .and_then(|t| peaks.rate(&bench.id, t, ns))
            .and_then(|rate| rate.suspect_note())
        else {
            continue;
        };
        if !bench.notes.contains(&note) {
            bench.notes.push(note.clone());
            flagged.push((bench.id.clone(), note));
        }
    }
    flagged
}

/// What counts elements mean for a component benchmark (`components/<component>/...`),
/// from what each worker declares in `scripts/components/`: FLOP for the PyTorch and
/// attention kernels, tokens for model inference and training steps. A component not
/// listed counts elements of no known kind, never FLOP.
const COMPONENT_ELEMENTS: &[(&str, RateUnit)] = &[
    ("pytorch", RateUnit::GflopPerSecond),
    ("attention", RateUnit::GflopPerSecond),
    ("vllm", RateUnit::TokensPerSecond),
    ("tiny_gpt", RateUnit::TokensPerSecond),
    ("deepspeed", RateUnit::TokensPerSecond),
    ("onnxruntime", RateUnit::TokensPerSecond),
    ("openvino", RateUnit::TokensPerSecond),
    ("migraphx", RateUnit::TokensPerSecond),
];

// The families whose ids decide a rate's unit, as the descriptor table names them (a
// slice pattern takes a constant, not a field of one).
const COMPONENTS: &str = crate::workload::family::COMPONENTS.name;
const COMPILE: &str = crate::workload::family::COMPILE.name;
const GEMM: &str = crate::workload::family::GEMM.name;

/// The collectives component's scaling rows count tokens (batch × sequence); its
/// collective operations count bytes.
const COLLECTIVE_TOKEN_ROWS: &[&str] = &["dp_strong", "dp_weak", "tp_mlp", "zero_step"];

/// The unit of a benchmark's rate, from its throughput kind and, for `Elements`, what its
/// family counts. `from_stackbench`: the run was recorded by stackbench, whose native
/// families count FLOP as elements (a plain Criterion run's elements have no known kind).
pub fn rate_unit(id: &str, throughput: &Throughput, from_stackbench: bool) -> RateUnit {
    match *throughput {
        Throughput::Bytes(_) | Throughput::BytesDecimal(_) => RateUnit::GbPerSecond,
        Throughput::ElementsAndBytes { .. } => RateUnit::GbPerSecond,
        Throughput::Bits(_) => RateUnit::GbitPerSecond,
        Throughput::Elements(_) if !from_stackbench => RateUnit::GelemPerSecond,
        Throughput::Elements(n) => {
            let parts: Vec<&str> = id.split('/').collect();
            match parts.as_slice() {
                [COMPONENTS, "collectives", row, ..] if COLLECTIVE_TOKEN_ROWS.contains(row) => {
                    RateUnit::TokensPerSecond
                }
                [COMPONENTS, component, ..] => COMPONENT_ELEMENTS
                    .iter()
                    .find(|(c, _)| c == component)
                    .map(|(_, unit)| *unit)
                    // The component runner records a benchmark with no declared work as
                    // one element per call.
                    .unwrap_or(if n == 1 {
                        RateUnit::CallsPerSecond
                    } else {
                        RateUnit::GelemPerSecond
                    }),
                // One element per compile (`workload::compile`): compiles per second.
                [COMPILE, ..] => RateUnit::CallsPerSecond,
                // Integer GEMMs count integer operations, with their own peak.
                [GEMM, _, function, ..]
                    if crate::workload::gemm::function_dtype(function)
                        .is_some_and(|d| d.is_integer()) =>
                {
                    RateUnit::TopsPerSecond
                }
                _ => RateUnit::GflopPerSecond,
            }
        }
    }
}

/// The count per iteration a throughput declares, in the unit [`rate_unit`] gives it.
fn amount(throughput: &Throughput) -> u64 {
    match *throughput {
        Throughput::Elements(n) | Throughput::Bits(n) => n,
        Throughput::Bytes(b) | Throughput::BytesDecimal(b) => b,
        Throughput::ElementsAndBytes { bytes, .. } => bytes,
    }
}

/// One peak of a probe: (backend, metric, dtype, reference per second, source).
#[derive(Clone, Debug)]
struct PeakEntry {
    backend: String,
    metric: String,
    dtype: Option<String>,
    per_second: f64,
    source: String,
}

/// What the rate of one benchmark is measured against.
#[derive(Clone, Debug, Default)]
pub struct PeakTable {
    entries: Vec<PeakEntry>,
    /// In stackbench runs `Elements` counts floating-point operations (ARCHITECTURE rule).
    pub elements_are_flops: bool,
}

impl PeakTable {
    /// From a probe's `peaks` list (raw JSON, so newer probe fields are harmless).
    pub fn from_probe_peaks(peaks: &[serde_json::Value], from_stackbench: bool) -> Self {
        let text =
            |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
        let entries = peaks
            .iter()
            .filter_map(|p| {
                // The probe's own rule (the larger of theoretical and measured: a peak
                // the machine exceeded is not a peak), so reports and `stackbench info` agree.
                let peak = serde_json::from_value::<crate::system::peak::Peak>(p.clone()).ok()?;
                Some(PeakEntry {
                    backend: text(p, "backend")?,
                    metric: text(p, "metric")?,
                    dtype: text(p, "dtype"),
                    per_second: peak.reference()?,
                    source: peak.source,
                })
            })
            .filter(|e| e.per_second > 0.0)
            .collect();
        PeakTable {
            entries,
            elements_are_flops: from_stackbench,
        }
    }

    /// The peak for a stackbench id `<family>/<backend>/<function>/<value>`.
    fn lookup(&self, id: &str, metric: &str) -> Option<&PeakEntry> {
        let parts: Vec<&str> = id.split('/').collect();
        let backend = parts.get(1)?;
        let function = parts.get(2).copied();
        // Host↔device copies cross the host link, not HBM: judge them against the link,
        // and against nothing where the probe found no link.
        let metric = match function {
            Some(f)
                if metric == "bytes_per_second"
                    && (f.starts_with("h2d") || f.starts_with("d2h")) =>
            {
                "host_link_bytes_per_second"
            }
            _ => metric,
        };
        // The requantising int8 GEMM runs on the same integer units as the plain one, and a
        // BLAS's GEMM (`blas_f32`) on the same units as the own kernels' (`f32`).
        let function = match function {
            Some("int8q") => Some("int8"),
            Some(f) if parts.first() == Some(&GEMM) => {
                Some(crate::workload::gemm::function_dtype(f).map_or(f, |d| d.id()))
            }
            f => f,
        };
        self.entries.iter().find(|e| {
            e.backend == *backend
                && e.metric == metric
                && (e.dtype.is_none() || e.dtype.as_deref() == function)
        })
    }

    /// The rate of a benchmark that takes `ns` per iteration.
    pub fn rate(&self, id: &str, throughput: &Throughput, ns: f64) -> Option<Rate> {
        if !(ns.is_finite() && ns > 0.0) {
            return None;
        }
        let unit = rate_unit(id, throughput, self.elements_are_flops);
        let per_second = amount(throughput) as f64 / (ns * 1e-9);
        let metric = match unit {
            RateUnit::GflopPerSecond => Some("flops_per_second"),
            RateUnit::TopsPerSecond => Some("int_ops_per_second"),
            RateUnit::GbPerSecond => Some("bytes_per_second"),
            _ => None,
        };
        let peak = metric.and_then(|m| self.lookup(id, m));
        let percent = peak.map(|p| 100.0 * per_second / p.per_second);
        // Over 100 % the peak is wrong, not the measurement: say so instead of printing it
        // (beyond rounding: a figure exactly at its peak is at 100 %).
        let suspect_peak = peak
            .zip(percent)
            .filter(|(_, percent)| *percent > 100.0 + 1e-9)
            .map(|(p, _)| SuspectPeak {
                peak: unit.from_per_second(p.per_second),
                unit,
                source: p.source.clone(),
            });
        Some(Rate {
            unit,
            value: unit.from_per_second(per_second),
            percent_of_peak: percent.filter(|_| suspect_peak.is_none()),
            suspect_peak,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_peaks() {
        let peaks = serde_json::json!([
            {"backend": "cpu", "device": "x", "metric": "flops_per_second", "dtype": "f32", "theoretical": 2e11, "measured": null},
            {"backend": "cpu", "device": "x", "metric": "bytes_per_second", "dtype": null, "theoretical": null, "measured": 5e10},
            {"backend": "cpu", "device": "x", "metric": "flops_per_second", "dtype": "f64", "theoretical": 1e11, "measured": 2e11, "source": "boost clock", "future_field": 1}
        ]);
        let table = PeakTable::from_probe_peaks(peaks.as_array().unwrap(), true);
        let r = table
            .rate(
                "gemm/cpu/f32/10",
                &Throughput::Elements(1_000_000),
                10_000.0,
            )
            .unwrap();
        assert_eq!(r.unit, RateUnit::GflopPerSecond);
        // Measured above theoretical (a boost clock the probe could not read): the
        // larger figure is the peak, so no benchmark shows more than 100 % of it.
        let f64_rate = table
            .rate(
                "gemm/cpu/f64/10",
                &Throughput::Elements(1_000_000),
                10_000.0,
            )
            .unwrap();
        assert!((f64_rate.percent_of_peak.unwrap() - 50.0).abs() < 1e-9);
        assert!((r.value - 100.0).abs() < 1e-9);
        assert!((r.percent_of_peak.unwrap() - 50.0).abs() < 1e-9);
        let r = table
            .rate(
                "memory_bandwidth/cpu/triad/1MiB",
                &Throughput::Bytes(250),
                10.0,
            )
            .unwrap();
        assert!((r.value - 25.0).abs() < 1e-9 && (r.percent_of_peak.unwrap() - 50.0).abs() < 1e-9);
        assert!(
            table
                .rate("gemm/cpu/f16/10", &Throughput::Elements(1), 1.0)
                .unwrap()
                .percent_of_peak
                .is_none()
        );
        let plain = PeakTable::default();
        assert_eq!(
            plain.rate("a", &Throughput::Elements(1), 1.0).unwrap().unit,
            RateUnit::GelemPerSecond
        );
        assert!(plain.rate("a", &Throughput::Bits(8), 0.0).is_none());
    }

    #[test]
    fn host_copies_are_judged_against_the_link_and_device_copies_against_memory() {
        let peaks = serde_json::json!([
            {"backend": "cuda", "metric": "bytes_per_second", "dtype": null, "theoretical": 3.35e12, "measured": null},
            {"backend": "cuda", "metric": "host_link_bytes_per_second", "dtype": null, "theoretical": 31.5e9, "measured": null},
            {"backend": "rocm", "metric": "bytes_per_second", "dtype": null, "theoretical": 5.3e12, "measured": null}
        ]);
        let table = PeakTable::from_probe_peaks(peaks.as_array().unwrap(), true);
        // 25.2 GB/s over Gen4 x16 is 80 % of the link (it would read 0.75 % of HBM).
        let bytes = Throughput::Bytes(25_200);
        let h2d = table.rate("memory_bandwidth/cuda/h2d_pinned/512MiB", &bytes, 1000.0);
        assert!((h2d.unwrap().percent_of_peak.unwrap() - 80.0).abs() < 1e-9);
        let d2h = table.rate("memory_bandwidth/cuda/d2h_pageable/512MiB", &bytes, 1000.0);
        assert!((d2h.unwrap().percent_of_peak.unwrap() - 80.0).abs() < 1e-9);
        let d2d = table.rate(
            "memory_bandwidth/cuda/d2d/512MiB",
            &Throughput::Bytes(3_350_000),
            1000.0,
        );
        assert!((d2d.unwrap().percent_of_peak.unwrap() - 100.0).abs() < 1e-9);
        // No link figure for ROCm here: no percentage rather than a wrong one.
        let rocm = table.rate("memory_bandwidth/rocm/h2d_pinned/512MiB", &bytes, 1000.0);
        assert!(rocm.unwrap().percent_of_peak.is_none());
    }

    #[test]
    fn each_throughput_kind_keeps_its_own_unit() {
        use RateUnit::{CallsPerSecond, GbPerSecond, GelemPerSecond, GflopPerSecond};
        let table = PeakTable::from_probe_peaks(&[], true);
        let tokens = Throughput::Elements(512);
        // 512 tokens in 2 ms: 256 000 tokens/s, printed as tokens, never as 2.56e-4 GFLOP/s.
        let vllm = table
            .rate("components/vllm/offline/b4_in128_out128", &tokens, 2e6)
            .unwrap();
        assert_eq!(vllm.unit, RateUnit::TokensPerSecond);
        assert!((vllm.value - 256_000.0).abs() < 1e-6, "{vllm:?}");
        for id in [
            "components/tiny_gpt/decode/b1_s64",
            "components/deepspeed/zero_step/stage1_ranks1_d256_t512",
            "components/onnxruntime/transformer_block/cpu_all_b1_s128",
            "components/collectives/dp_strong/gloo_2r_b8_s64",
        ] {
            assert_eq!(
                rate_unit(id, &tokens, true),
                RateUnit::TokensPerSecond,
                "{id}"
            );
        }
        let flops = Throughput::Elements(2 * 512 * 512 * 512);
        let one = Throughput::Elements(1);
        let cases = [
            ("components/pytorch/matmul/f32_512", &flops, GflopPerSecond),
            ("gemm/cuda/bf16/4096x4096x4096", &flops, GflopPerSecond),
            // A compile is one call, never FLOP.
            ("compile/nvrtc/gpu_kernels/sm_90", &one, CallsPerSecond),
            // No declared work: one element per call.
            ("components/newthing/run/x", &one, CallsPerSecond),
            ("components/newthing/run/x", &tokens, GelemPerSecond),
            (
                "components/collectives/all_reduce/nccl_8r_1048576",
                &Throughput::Bytes(1),
                GbPerSecond,
            ),
        ];
        for (id, throughput, unit) in cases {
            assert_eq!(rate_unit(id, throughput, true), unit, "{id}");
        }
    }

    #[test]
    fn a_blas_gemm_is_judged_against_its_precisions_peak_on_the_same_device() {
        let peaks = serde_json::json!([
            {"backend": "cpu", "metric": "flops_per_second", "dtype": "f32", "theoretical": 2e11, "measured": null},
            {"backend": "cpu", "metric": "flops_per_second", "dtype": "f64", "theoretical": 1e11, "measured": null}
        ]);
        let table = PeakTable::from_probe_peaks(peaks.as_array().unwrap(), true);
        let flops = Throughput::Elements(2 * 1024 * 1024 * 1024);
        // 2·1024³ FLOP in 20 ms: 107.4 GFLOP/s, 53.7 % of f32's peak and 107 % of f64's.
        let own = table
            .rate("gemm/cpu/f32/1024x1024x1024", &flops, 2e7)
            .unwrap();
        let blas = table
            .rate("gemm/cpu/blas_f32/1024x1024x1024", &flops, 2e7)
            .unwrap();
        assert_eq!(blas.unit, RateUnit::GflopPerSecond);
        assert_eq!(blas.percent_of_peak, own.percent_of_peak);
        assert!(
            (blas.percent_of_peak.unwrap() - 53.687_091_2).abs() < 1e-6,
            "{blas:?}"
        );
        let f64_rate = table
            .rate("gemm/cpu/blas_f64/1024x1024x1024", &flops, 4e7)
            .unwrap();
        assert!(
            (f64_rate.percent_of_peak.unwrap() - 53.687_091_2).abs() < 1e-6,
            "{f64_rate:?}"
        );
        // The prefix means nothing outside GEMM: no peak is found for it.
        let other = table
            .rate("tensor_ops/cpu/blas_f32/256x4096", &flops, 2e7)
            .unwrap();
        assert!(other.percent_of_peak.is_none(), "{other:?}");
    }

    #[test]
    fn integer_gemms_are_tops_against_the_int8_peak_never_flops() {
        let peaks = serde_json::json!([
            {"backend": "cpu", "metric": "flops_per_second", "dtype": "f32", "theoretical": 1e12, "measured": null},
            {"backend": "cpu", "metric": "int_ops_per_second", "dtype": "int8", "theoretical": 4e12, "measured": null, "source": "VNNI"}
        ]);
        let table = PeakTable::from_probe_peaks(peaks.as_array().unwrap(), true);
        // 2·1024³ integer operations in 1 ms: 2.15 TOPS, 53.7 % of 4 TOPS.
        let ops = Throughput::Elements(2 * 1024 * 1024 * 1024);
        for id in [
            "gemm/cpu/int8/1024x1024x1024",
            "gemm/cpu/int8q/1024x1024x1024",
        ] {
            let r = table.rate(id, &ops, 1e6).unwrap();
            assert_eq!(r.unit, RateUnit::TopsPerSecond, "{id}");
            assert!((r.value - 2.147_483_648).abs() < 1e-9, "{r:?}");
            assert!(
                (r.percent_of_peak.unwrap() - 53.687_091_2).abs() < 1e-6,
                "{r:?}"
            );
        }
        // Float ids keep FLOP and their own peak.
        let f = table
            .rate("gemm/cpu/f32/1024x1024x1024", &ops, 1e6)
            .unwrap();
        assert_eq!(f.unit, RateUnit::GflopPerSecond);
        assert!(
            f.percent_of_peak.is_none() && f.suspect_peak.is_some(),
            "{f:?}"
        );
        // No int8 peak on a backend: no percentage, never the FLOP peak.
        let none = PeakTable::from_probe_peaks(&peaks.as_array().unwrap()[..1], true);
        let r = none
            .rate("gemm/cpu/int8/1024x1024x1024", &ops, 1e6)
            .unwrap();
        assert!(r.percent_of_peak.is_none() && r.suspect_peak.is_none());
    }

    #[test]
    fn a_figure_above_its_peak_flags_the_peak_and_names_its_source() {
        let peaks = serde_json::json!([
            {"backend": "cpu", "metric": "flops_per_second", "dtype": "f32", "theoretical": 1.67e11, "measured": null, "source": "AVX2: 16 FLOP/cycle x 2 cores x 2600 MHz"}
        ]);
        let table = PeakTable::from_probe_peaks(peaks.as_array().unwrap(), true);
        // 2 · 64³ FLOP in 226 ns: about 2320 GFLOP/s against a 167 GFLOP/s peak.
        let r = table
            .rate(
                "gemm/cpu/f32/64x64x64",
                &Throughput::Elements(2 * 64 * 64 * 64),
                226.0,
            )
            .unwrap();
        assert!(r.percent_of_peak.is_none(), "{r:?}");
        let suspect = r.suspect_peak.as_ref().unwrap();
        assert!((suspect.peak - 167.0).abs() < 1e-9);
        let note = r.peak_note();
        assert!(!note.contains('%'), "{note}");
        assert!(
            note.contains("peak suspect") && note.contains("AVX2"),
            "{note}"
        );
        // At the peak exactly, the percentage stands.
        let at = table
            .rate("gemm/cpu/f32/1", &Throughput::Elements(167), 1.0)
            .unwrap();
        assert!(at.suspect_peak.is_none());
        assert_eq!(at.peak_note(), " (100 % of peak)");
    }
}
