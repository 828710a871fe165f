//! Peak figures for GPUs, so reports can print "% of peak". Known data-center devices use
//! the vendor's dense figures (METHODOLOGY.md's table); any other device gets an FP32
//! estimate from its clocks and units, and no tensor-core figure (guessing one would be
//! worse than none). Peak memory bandwidth comes from the device's own memory clock and bus
//! width where the backend reads them, else from the table.

use super::peak::{Peak, PeakMetric};
use crate::backend::{BackendKind, DeviceInfo};
use crate::workload::DType;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Nvidia,
    Amd,
}

/// What a backend knows about a device, enough to find or estimate its peaks.
#[derive(Clone, Debug)]
pub struct GpuSpec {
    pub name: String,
    pub vendor: Vendor,
    /// `sm_90`, `gfx942`, ...
    pub arch: String,
    /// SMs (NVIDIA) or compute units (AMD).
    pub units: u32,
    /// Maximum (boost) shader clock.
    pub clock_mhz: u32,
    /// Bandwidth from memory clock × bus width, where the driver reports them.
    pub measured_bandwidth_bytes_per_s: Option<f64>,
}

/// One row of the table: dense TFLOP/s per precision and HBM TB/s.
#[derive(Clone, Copy, Debug)]
pub struct KnownGpu {
    pub label: &'static str,
    /// Lower-case substrings that must all be in the device name, and ones that must not.
    pub all_of: &'static [&'static str],
    pub none_of: &'static [&'static str],
    pub fp32: f64,
    pub tf32: Option<f64>,
    pub fp16: f64,
    pub fp8: Option<f64>,
    pub tb_per_s: f64,
}

pub const KNOWN_GPUS: &[KnownGpu] = &[
    KnownGpu {
        label: "H100 SXM",
        all_of: &["h100"],
        none_of: &["pcie", "nvl"],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        tb_per_s: 3.35,
    },
    KnownGpu {
        label: "H100 PCIe",
        all_of: &["h100", "pcie"],
        none_of: &[],
        fp32: 51.0,
        tf32: Some(378.0),
        fp16: 756.0,
        fp8: Some(1513.0),
        tb_per_s: 2.0,
    },
    KnownGpu {
        label: "H200 SXM",
        all_of: &["h200"],
        none_of: &["nvl"],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        tb_per_s: 4.8,
    },
    KnownGpu {
        label: "A100 SXM 80GB",
        all_of: &["a100", "sxm", "80gb"],
        none_of: &[],
        fp32: 19.5,
        tf32: Some(156.0),
        fp16: 312.0,
        fp8: None,
        tb_per_s: 2.0,
    },
    KnownGpu {
        label: "L40S",
        all_of: &["l40s"],
        none_of: &[],
        fp32: 91.6,
        tf32: Some(183.0),
        fp16: 362.0,
        fp8: Some(733.0),
        tb_per_s: 0.864,
    },
    KnownGpu {
        label: "RTX 4090",
        all_of: &["4090"],
        none_of: &[],
        fp32: 82.6,
        tf32: Some(82.6),
        fp16: 165.2,
        fp8: Some(330.0),
        tb_per_s: 1.008,
    },
    KnownGpu {
        label: "MI250X (2 GCDs)",
        all_of: &["mi250x"],
        none_of: &[],
        fp32: 47.9,
        tf32: None,
        fp16: 383.0,
        fp8: None,
        tb_per_s: 3.2,
    },
    KnownGpu {
        label: "MI300X",
        all_of: &["mi300x"],
        none_of: &[],
        fp32: 163.4,
        tf32: Some(653.7),
        fp16: 1307.4,
        fp8: Some(2614.9),
        tb_per_s: 5.3,
    },
    KnownGpu {
        label: "MI325X",
        all_of: &["mi325x"],
        none_of: &[],
        fp32: 163.4,
        tf32: Some(653.7),
        fp16: 1307.4,
        fp8: Some(2614.9),
        tb_per_s: 6.0,
    },
];

/// The table row for a device name, if it is a known device.
pub fn lookup(name: &str) -> Option<&'static KnownGpu> {
    let lower = name.to_lowercase();
    KNOWN_GPUS.iter().find(|g| {
        g.all_of.iter().all(|s| lower.contains(s)) && !g.none_of.iter().any(|s| lower.contains(s))
    })
}

/// FP32 lanes per SM or CU, by architecture, for the clocks × units estimate.
fn fp32_lanes(spec: &GpuSpec) -> Option<u32> {
    match spec.vendor {
        Vendor::Nvidia => match spec.arch.as_str() {
            "sm_70" | "sm_72" | "sm_75" | "sm_80" => Some(64),
            a if a.starts_with("sm_") => Some(128),
            _ => None,
        },
        Vendor::Amd => Some(64),
    }
}

/// Per-precision compute peaks (FLOP/s) and the memory peak (bytes/s), each with its source.
pub struct GpuPeaks {
    pub flops: Vec<(DType, f64, String)>,
    pub bandwidth: Option<(f64, String)>,
}

pub fn peaks(spec: &GpuSpec) -> GpuPeaks {
    let mut flops = Vec::new();
    let mut bandwidth = spec
        .measured_bandwidth_bytes_per_s
        .filter(|b| *b > 0.0)
        .map(|b| {
            (
                b,
                "memory clock × bus width × 2 (driver attributes)".to_owned(),
            )
        });
    if let Some(known) = lookup(&spec.name) {
        let source = format!("vendor dense figure for {} (METHODOLOGY.md)", known.label);
        let tera = 1e12;
        flops.push((DType::F32, known.fp32 * tera, source.clone()));
        if let Some(tf32) = known.tf32 {
            flops.push((DType::Tf32, tf32 * tera, source.clone()));
        }
        flops.push((DType::F16, known.fp16 * tera, source.clone()));
        flops.push((DType::Bf16, known.fp16 * tera, source.clone()));
        if let Some(fp8) = known.fp8 {
            flops.push((DType::Fp8E4m3, fp8 * tera, source.clone()));
        }
        if bandwidth.is_none() {
            bandwidth = Some((known.tb_per_s * tera, source));
        }
    } else if let Some(lanes) = fp32_lanes(spec) {
        let fp32 = spec.units as f64 * lanes as f64 * 2.0 * spec.clock_mhz as f64 * 1e6;
        if fp32 > 0.0 {
            flops.push((
                DType::F32,
                fp32,
                format!(
                    "estimate: {} units × {lanes} FP32 lanes × 2 × {} MHz (no tensor-core figure for an unlisted device)",
                    spec.units, spec.clock_mhz
                ),
            ));
        }
    }
    GpuPeaks { flops, bandwidth }
}

/// The peaks as JSON for a device's properties (`peaks` key).
pub fn peaks_json(spec: &GpuSpec) -> serde_json::Value {
    let p = peaks(spec);
    let flops: serde_json::Map<String, serde_json::Value> = p
        .flops
        .iter()
        .map(|(d, v, s)| (d.id().to_owned(), json!({"flops_per_s": v, "source": s})))
        .collect();
    json!({
        "flops": flops,
        "bandwidth": p.bandwidth.map(|(v, s)| json!({"bytes_per_s": v, "source": s})),
    })
}

/// Peaks of every available GPU device, in the probe's shape, from the `peaks` property
/// its backend wrote.
pub fn from_devices(devices: &[DeviceInfo]) -> Vec<Peak> {
    let mut out = Vec::new();
    for device in devices.iter().filter(|d| d.backend != BackendKind::Cpu) {
        let Some(peaks) = device.properties.get("peaks") else {
            continue;
        };
        if let Some(flops) = peaks.get("flops").and_then(|f| f.as_object()) {
            for (dtype, entry) in flops {
                let Ok(dtype) = dtype.parse::<DType>() else {
                    continue;
                };
                out.push(Peak {
                    backend: device.backend,
                    device: device.name.clone(),
                    metric: PeakMetric::FlopsPerSecond,
                    dtype: Some(dtype),
                    theoretical: entry.get("flops_per_s").and_then(|v| v.as_f64()),
                    measured: None,
                    source: entry
                        .get("source")
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_owned(),
                });
            }
        }
        if let Some(bw) = peaks.get("bandwidth").filter(|b| !b.is_null()) {
            out.push(Peak {
                backend: device.backend,
                device: device.name.clone(),
                metric: PeakMetric::BytesPerSecond,
                dtype: None,
                theoretical: bw.get("bytes_per_s").and_then(|v| v.as_f64()),
                measured: None,
                source: bw
                    .get("source")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_owned(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, arch: &str) -> GpuSpec {
        GpuSpec {
            name: name.into(),
            vendor: if name.contains("AMD") {
                Vendor::Amd
            } else {
                Vendor::Nvidia
            },
            arch: arch.into(),
            units: 132,
            clock_mhz: 1980,
            measured_bandwidth_bytes_per_s: None,
        }
    }

    #[test]
    fn driver_names_map_to_the_right_rows() {
        assert_eq!(lookup("NVIDIA H100 80GB HBM3").unwrap().label, "H100 SXM");
        assert_eq!(lookup("NVIDIA H100 PCIe").unwrap().label, "H100 PCIe");
        assert_eq!(lookup("NVIDIA H200").unwrap().label, "H200 SXM");
        assert!(lookup("NVIDIA H100 NVL").is_none());
        assert_eq!(lookup("AMD Instinct MI300X").unwrap().label, "MI300X");
        assert_eq!(
            lookup("NVIDIA A100-SXM4-80GB").unwrap().label,
            "A100 SXM 80GB"
        );
    }

    #[test]
    fn known_devices_use_the_table_and_others_an_estimate() {
        let h200 = peaks(&spec("NVIDIA H200", "sm_90"));
        let bf16 = h200
            .flops
            .iter()
            .find(|(d, _, _)| *d == DType::Bf16)
            .unwrap();
        assert_eq!(bf16.1, 989e12);
        assert_eq!(h200.bandwidth.unwrap().0, 4.8e12);
        let unknown = peaks(&spec("NVIDIA Some New GPU", "sm_90"));
        assert_eq!(unknown.flops.len(), 1);
        assert_eq!(unknown.flops[0].1, 132.0 * 128.0 * 2.0 * 1980e6);
        assert!(unknown.bandwidth.is_none());
    }

    #[test]
    fn device_properties_become_probe_peaks() {
        let s = spec("NVIDIA H100 80GB HBM3", "sm_90");
        let device = DeviceInfo {
            backend: BackendKind::Cuda,
            name: s.name.clone(),
            properties: [("peaks".to_owned(), peaks_json(&s))].into_iter().collect(),
        };
        let peaks = from_devices(&[device]);
        assert!(
            peaks
                .iter()
                .any(|p| p.dtype == Some(DType::Fp8E4m3) && p.theoretical == Some(1979e12))
        );
        assert!(peaks.iter().any(|p| p.metric == PeakMetric::BytesPerSecond));
    }
}
