//! Rates beside times: GB/s for byte throughput, GFLOP/s (or Gelem/s) for elements, and
//! percent of the probe's peak where the probe has one for that backend and precision.

use crate::criterion_output::Throughput;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// `GB/s`, `Gbit/s`, `GFLOP/s` or `Gelem/s` (decimal giga, as peak tables are).
    pub unit: &'static str,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_of_peak: Option<f64>,
}

/// What the rate of one benchmark is measured against.
#[derive(Clone, Debug, Default)]
pub struct PeakTable {
    /// (backend, metric, dtype, reference per second)
    entries: Vec<(String, String, Option<String>, f64)>,
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
                let reference = serde_json::from_value::<crate::system::peak::Peak>(p.clone())
                    .ok()?
                    .reference()?;
                Some((
                    text(p, "backend")?,
                    text(p, "metric")?,
                    text(p, "dtype"),
                    reference,
                ))
            })
            .filter(|e| e.3 > 0.0)
            .collect();
        PeakTable {
            entries,
            elements_are_flops: from_stackbench,
        }
    }

    /// The peak for a stackbench id `<family>/<backend>/<function>/<value>`.
    fn lookup(&self, id: &str, metric: &str) -> Option<f64> {
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
        self.entries
            .iter()
            .find(|(b, m, dtype, _)| {
                b == backend && m == metric && (dtype.is_none() || dtype.as_deref() == function)
            })
            .map(|e| e.3)
    }

    /// The rate of a benchmark that takes `ns` per iteration.
    pub fn rate(&self, id: &str, throughput: &Throughput, ns: f64) -> Option<Rate> {
        if !(ns.is_finite() && ns > 0.0) {
            return None;
        }
        let per_second = |amount: u64| amount as f64 / (ns * 1e-9);
        let (unit, value, metric) = match *throughput {
            Throughput::Elements(e) if self.elements_are_flops => {
                ("GFLOP/s", per_second(e), Some("flops_per_second"))
            }
            Throughput::Elements(e) => ("Gelem/s", per_second(e), None),
            Throughput::Bits(b) => ("Gbit/s", per_second(b), None),
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => {
                ("GB/s", per_second(b), Some("bytes_per_second"))
            }
            Throughput::ElementsAndBytes { bytes, .. } => {
                ("GB/s", per_second(bytes), Some("bytes_per_second"))
            }
        };
        let percent_of_peak = metric
            .and_then(|m| self.lookup(id, m))
            .map(|peak| 100.0 * value / peak);
        Some(Rate {
            unit,
            value: value / 1e9,
            percent_of_peak,
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
        assert_eq!(r.unit, "GFLOP/s");
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
            "Gelem/s"
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
}
