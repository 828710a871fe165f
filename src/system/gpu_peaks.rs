//! Peak figures for GPUs, so reports can print "% of peak". Known data-center devices use
//! the vendor's dense figures (METHODOLOGY.md's table); any other device gets an FP32
//! estimate from its clocks and units, and no tensor-core figure (guessing one would be
//! worse than none). Peak memory bandwidth comes from the device's own memory clock and bus
//! width where the backend reads them, checked against the table for known devices: the
//! driver's memory clock is not always the effective data rate (MI300X reports a clock that
//! gives 2.66 TB/s for a 5.3 TB/s part), so a disagreement over
//! [`BANDWIDTH_DISAGREEMENT`] uses the table, and both figures are recorded.

//!
//! This module depends on nothing above `workload`: backends call it to describe their
//! devices, and `system::peak` reads what they wrote.

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
    /// The host link (PCIe or NVLink-C2C) per direction, and how it was found
    /// (`system::pcie`).
    pub host_link: Option<(f64, String)>,
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

/// Relative disagreement between the clock-derived bandwidth and the table above which the
/// table wins.
pub const BANDWIDTH_DISAGREEMENT: f64 = 0.10;

/// The bandwidth peak and where it came from: the clock-derived figure where the device is
/// not in the table or agrees with it within [`BANDWIDTH_DISAGREEMENT`]; the table where
/// they disagree more. The source names both figures whenever both exist.
pub fn choose_bandwidth(clocks: Option<f64>, known: Option<&KnownGpu>) -> Option<(f64, String)> {
    const CLOCKS: &str = "memory clock × bus width × 2 (driver attributes)";
    let tb = |b: f64| b / 1e12;
    match (clocks, known) {
        (None, None) => None,
        (Some(c), None) => Some((c, CLOCKS.to_owned())),
        (None, Some(k)) => Some((
            k.tb_per_s * 1e12,
            format!("vendor figure for {} (METHODOLOGY.md)", k.label),
        )),
        (Some(c), Some(k)) => {
            let table = k.tb_per_s * 1e12;
            let off = (c - table).abs() / table;
            if off > BANDWIDTH_DISAGREEMENT {
                Some((
                    table,
                    format!(
                        "vendor figure for {} (METHODOLOGY.md), {:.2} TB/s; {CLOCKS} gives                          {:.2} TB/s, {:.0} % off, so the table is used",
                        k.label,
                        tb(table),
                        tb(c),
                        off * 100.0
                    ),
                ))
            } else {
                Some((
                    c,
                    format!(
                        "{CLOCKS}, {:.2} TB/s; within {:.0} % of the vendor figure for {}                          ({:.2} TB/s)",
                        tb(c),
                        off * 100.0,
                        k.label,
                        tb(table)
                    ),
                ))
            }
        }
    }
}

/// Per-precision compute peaks (FLOP/s) and the memory peak (bytes/s), each with its source.
pub struct GpuPeaks {
    pub flops: Vec<(DType, f64, String)>,
    pub bandwidth: Option<(f64, String)>,
}

pub fn peaks(spec: &GpuSpec) -> GpuPeaks {
    let mut flops = Vec::new();
    let clocks = spec.measured_bandwidth_bytes_per_s.filter(|b| *b > 0.0);
    let bandwidth = choose_bandwidth(clocks, lookup(&spec.name));
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
    let table = lookup(&spec.name).map(|k| k.tb_per_s * 1e12);
    json!({
        "flops": flops,
        "bandwidth": p.bandwidth.map(|(v, s)| json!({
            "bytes_per_s": v,
            "source": s,
            "clock_bytes_per_s": spec.measured_bandwidth_bytes_per_s,
            "table_bytes_per_s": table,
        })),
        "host_link": spec.host_link.as_ref().map(|(v, s)| json!({"bytes_per_s": v, "source": s})),
    })
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
            host_link: None,
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
    fn a_clock_figure_far_from_the_table_gives_way_and_both_are_recorded() {
        // MI300X: 2 × 1300 MHz × 8192 bits / 8 = 2.66 TB/s against the table's 5.3.
        let mut mi300x = spec("AMD Instinct MI300X", "gfx942");
        mi300x.measured_bandwidth_bytes_per_s = Some(2.0 * 1300e6 * 8192.0 / 8.0);
        let (bytes, source) = peaks(&mi300x).bandwidth.unwrap();
        assert_eq!(bytes, 5.3e12);
        assert!(
            source.contains("2.66 TB/s") && source.contains("5.30 TB/s"),
            "{source}"
        );
        let json = peaks_json(&mi300x);
        assert_eq!(json["bandwidth"]["table_bytes_per_s"], 5.3e12);
        assert_eq!(json["bandwidth"]["clock_bytes_per_s"], 2.6624e12);
        // H100 SXM: 2 × 2619 MHz × 5120 bits / 8 = 3.35 TB/s, within 10 %: the clocks stand.
        let mut h100 = spec("NVIDIA H100 80GB HBM3", "sm_90");
        h100.measured_bandwidth_bytes_per_s = Some(2.0 * 2619e6 * 5120.0 / 8.0);
        let (bytes, source) = peaks(&h100).bandwidth.unwrap();
        assert_eq!(bytes, 2.0 * 2619e6 * 5120.0 / 8.0);
        assert!(source.contains("within 0 %"), "{source}");
        // Just past 10 % off goes to the table; an unknown device keeps its clocks.
        let known = lookup("NVIDIA H200").unwrap();
        assert_eq!(
            choose_bandwidth(Some(4.8e12 * 0.89), Some(known))
                .unwrap()
                .0,
            4.8e12
        );
        assert_eq!(
            choose_bandwidth(Some(4.8e12 * 0.91), Some(known))
                .unwrap()
                .0,
            4.8e12 * 0.91
        );
        assert_eq!(choose_bandwidth(Some(1e12), None).unwrap().0, 1e12);
        assert!(choose_bandwidth(None, None).is_none());
    }
}
