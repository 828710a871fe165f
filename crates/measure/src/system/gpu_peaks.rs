//! Peak figures for GPUs, so reports can print "% of peak". Known devices use the vendor's
//! dense (no sparsity) figures, each row citing the public datasheet it comes from, and
//! one device as the runtime sees it (one MI250X GCD, not the two-die package); any other
//! device gets an FP32
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
    /// The public document the figures are from: the vendor's datasheet, by name and URL.
    pub source: &'static str,
    /// Lower-case substrings that must all be in the device name, and ones that must not.
    pub all_of: &'static [&'static str],
    pub none_of: &'static [&'static str],
    pub fp32: f64,
    pub tf32: Option<f64>,
    pub fp16: f64,
    pub fp8: Option<f64>,
    /// Dense INT8 tensor-core TOPS (the datasheet's sparsity figure halved), where the
    /// datasheet gives one.
    pub int8: Option<f64>,
    pub tb_per_s: f64,
}

pub const KNOWN_GPUS: &[KnownGpu] = &[
    KnownGpu {
        label: "H100 SXM",
        source: "NVIDIA H100 Tensor Core GPU datasheet (SXM column; sparsity figures halved), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
        all_of: &["h100"],
        none_of: &["pcie", "nvl"],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        int8: Some(1979.0),
        tb_per_s: 3.35,
    },
    KnownGpu {
        label: "H100 PCIe",
        source: "NVIDIA H100 Tensor Core GPU datasheet (PCIe column; sparsity figures halved), https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
        all_of: &["h100", "pcie"],
        none_of: &[],
        fp32: 51.0,
        tf32: Some(378.0),
        fp16: 756.0,
        fp8: Some(1513.0),
        int8: Some(1513.0),
        tb_per_s: 2.0,
    },
    KnownGpu {
        label: "H200 SXM",
        source: "NVIDIA H200 Tensor Core GPU datasheet (SXM column; sparsity figures halved), https://www.nvidia.com/en-us/data-center/h200/",
        all_of: &["h200"],
        none_of: &["nvl", "gh200"],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        int8: Some(1979.0),
        tb_per_s: 4.8,
    },
    KnownGpu {
        label: "GH200 144GB HBM3e",
        source: "NVIDIA GH200 Grace Hopper Superchip datasheet (HBM3e; sparsity figures halved), https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip",
        all_of: &["gh200", "144g"],
        none_of: &[],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        int8: Some(1979.0),
        tb_per_s: 4.9,
    },
    KnownGpu {
        // `NVIDIA GH200 480GB`: 96 GB of HBM3 (the 480 GB is the Grace CPU's LPDDR5X).
        label: "GH200 96GB HBM3",
        source: "NVIDIA GH200 Grace Hopper Superchip datasheet (HBM3; sparsity figures halved), https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip",
        all_of: &["gh200"],
        none_of: &["144g"],
        fp32: 67.0,
        tf32: Some(494.5),
        fp16: 989.0,
        fp8: Some(1979.0),
        int8: Some(1979.0),
        tb_per_s: 4.0,
    },
    KnownGpu {
        label: "A100 SXM 80GB",
        source: "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column), https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
        all_of: &["a100", "sxm", "80gb"],
        none_of: &[],
        fp32: 19.5,
        tf32: Some(156.0),
        fp16: 312.0,
        fp8: None,
        int8: Some(624.0),
        tb_per_s: 2.039,
    },
    KnownGpu {
        label: "L40S",
        source: "NVIDIA L40S datasheet (sparsity figures halved), https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413",
        all_of: &["l40s"],
        none_of: &[],
        fp32: 91.6,
        tf32: Some(183.0),
        fp16: 362.0,
        fp8: Some(733.0),
        int8: Some(733.0),
        tb_per_s: 0.864,
    },
    KnownGpu {
        label: "RTX 4090",
        source: "NVIDIA Ada GPU Architecture whitepaper, appendix A (GeForce RTX 4090; FP16 with FP32 accumulate), https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
        all_of: &["4090"],
        // The 4090 D (fewer SMs) and the laptop part (another chip) are other devices.
        none_of: &["4090 d", "laptop"],
        fp32: 82.6,
        tf32: Some(82.6),
        fp16: 165.2,
        fp8: Some(330.0),
        int8: Some(660.6),
        tb_per_s: 1.008,
    },
    KnownGpu {
        // The runtime sees each of the package's two GCDs as one device, with half the
        // package's units and memory: the datasheet's package figures halved. FP32 is the
        // matrix-core figure (95.7 per package), which rocBLAS's FP32 GEMM can use.
        label: "MI250X (one GCD)",
        source: "AMD Instinct MI250X data sheet (package figures, halved per GCD), https://www.amd.com/content/dam/amd/en/documents/instinct-business-docs/product-briefs/instinct-mi250x-data-sheet.pdf",
        all_of: &["mi250x"],
        none_of: &[],
        fp32: 47.85,
        tf32: None,
        fp16: 191.5,
        fp8: None,
        int8: Some(191.5),
        tb_per_s: 1.6384,
    },
    KnownGpu {
        label: "MI300X",
        source: "AMD Instinct MI300X data sheet, https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf",
        all_of: &["mi300x"],
        none_of: &[],
        fp32: 163.4,
        tf32: Some(653.7),
        fp16: 1307.4,
        fp8: Some(2614.9),
        int8: Some(2614.9),
        tb_per_s: 5.3,
    },
    KnownGpu {
        label: "MI325X",
        source: "AMD Instinct MI325X data sheet, https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/instinct-mi325x-datasheet.pdf",
        all_of: &["mi325x"],
        none_of: &[],
        fp32: 163.4,
        tf32: Some(653.7),
        fp16: 1307.4,
        fp8: Some(2614.9),
        int8: Some(2614.9),
        tb_per_s: 6.0,
    },
];

/// Every table row whose patterns match a device name.
pub fn matching_rows(name: &str) -> Vec<&'static KnownGpu> {
    let lower = name.to_lowercase();
    KNOWN_GPUS
        .iter()
        .filter(|g| {
            g.all_of.iter().all(|s| lower.contains(s))
                && !g.none_of.iter().any(|s| lower.contains(s))
        })
        .collect()
}

/// The table row for a device name, if it is a known device. A name two rows match is
/// treated as unknown: the clocks-and-units estimate is better than the wrong row's figure.
pub fn lookup(name: &str) -> Option<&'static KnownGpu> {
    match matching_rows(name).as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// How a peak from the table names where it came from.
fn table_source(k: &KnownGpu) -> String {
    format!("vendor dense figure for {} ({})", k.label, k.source)
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
        (None, Some(k)) => Some((k.tb_per_s * 1e12, table_source(k))),
        (Some(c), Some(k)) => {
            let table = k.tb_per_s * 1e12;
            let off = (c - table).abs() / table;
            if off > BANDWIDTH_DISAGREEMENT {
                Some((
                    table,
                    format!(
                        "{}, {:.2} TB/s; {CLOCKS} gives {:.2} TB/s, {:.0} % off, so the table \
                         is used",
                        table_source(k),
                        tb(table),
                        tb(c),
                        off * 100.0
                    ),
                ))
            } else {
                Some((
                    c,
                    format!(
                        "{CLOCKS}, {:.2} TB/s; within {:.0} % of the {} ({:.2} TB/s)",
                        tb(c),
                        off * 100.0,
                        table_source(k),
                        tb(table)
                    ),
                ))
            }
        }
    }
}

/// Per-precision compute peaks (FLOP/s), integer peaks (integer ops/s) and the memory
/// peak (bytes/s), each with its source.
pub struct GpuPeaks {
    pub flops: Vec<(DType, f64, String)>,
    pub int_ops: Vec<(DType, f64, String)>,
    pub bandwidth: Option<(f64, String)>,
}

pub fn peaks(spec: &GpuSpec) -> GpuPeaks {
    let mut flops = Vec::new();
    let mut int_ops = Vec::new();
    let clocks = spec.measured_bandwidth_bytes_per_s.filter(|b| *b > 0.0);
    let bandwidth = choose_bandwidth(clocks, lookup(&spec.name));
    if let Some(known) = lookup(&spec.name) {
        let source = table_source(known);
        let tera = 1e12;
        flops.push((DType::F32, known.fp32 * tera, source.clone()));
        if let Some(tf32) = known.tf32 {
            flops.push((DType::Tf32, tf32 * tera, source.clone()));
        }
        flops.push((DType::F16, known.fp16 * tera, source.clone()));
        flops.push((DType::Bf16, known.fp16 * tera, source.clone()));
        if let Some(fp8) = known.fp8 {
            // E4M3 and E5M2 run on the same FP8 tensor cores at the same rate.
            flops.push((DType::Fp8E4m3, fp8 * tera, source.clone()));
            flops.push((DType::Fp8E5m2, fp8 * tera, source.clone()));
        }
        if let Some(int8) = known.int8 {
            int_ops.push((DType::Int8, int8 * tera, source.clone()));
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
    GpuPeaks {
        flops,
        int_ops,
        bandwidth,
    }
}

/// The peaks as JSON for a device's properties (`peaks` key).
pub fn peaks_json(spec: &GpuSpec) -> serde_json::Value {
    let p = peaks(spec);
    let flops: serde_json::Map<String, serde_json::Value> = p
        .flops
        .iter()
        .map(|(d, v, s)| (d.id().to_owned(), json!({"flops_per_s": v, "source": s})))
        .collect();
    let int_ops: serde_json::Map<String, serde_json::Value> = p
        .int_ops
        .iter()
        .map(|(d, v, s)| (d.id().to_owned(), json!({"ops_per_s": v, "source": s})))
        .collect();
    let table = lookup(&spec.name).map(|k| k.tb_per_s * 1e12);
    json!({
        "flops": flops,
        "int_ops": int_ops,
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

    /// Device names as the drivers report them (`nvidia-smi`, `rocm-smi`, CUDA and HIP),
    /// with the row each must map to.
    const DRIVER_NAMES: &[(&str, &str)] = &[
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA GH200 480GB", "GH200 96GB HBM3"),
        ("NVIDIA GH200 144G HBM3e", "GH200 144GB HBM3e"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("AMD Instinct MI250X", "MI250X (one GCD)"),
        ("AMD Instinct MI250X/MI250", "MI250X (one GCD)"),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Instinct MI325X", "MI325X"),
    ];

    #[test]
    fn each_known_device_name_maps_to_exactly_one_row() {
        for (name, label) in DRIVER_NAMES {
            let rows: Vec<&str> = matching_rows(name).iter().map(|g| g.label).collect();
            assert_eq!(rows, [*label], "{name}");
        }
        // Every row is reached by some name, and every row cites a public document.
        for row in KNOWN_GPUS {
            assert!(
                DRIVER_NAMES.iter().any(|(_, label)| *label == row.label),
                "{} has no driver name in this test",
                row.label
            );
            assert!(row.source.contains("https://"), "{}", row.label);
        }
        for name in [
            "NVIDIA H100 NVL",
            "NVIDIA H200 NVL",
            "NVIDIA GeForce RTX 4090 D",
            "AMD Instinct MI300A",
        ] {
            assert!(lookup(name).is_none(), "{name}");
        }
    }

    #[test]
    fn one_mi250x_device_is_one_gcd() {
        let gcd = lookup("AMD Instinct MI250X").unwrap();
        // Half the package's 383 TFLOP/s FP16 and 3.2768 TB/s.
        assert_eq!(gcd.fp16, 383.0 / 2.0);
        assert_eq!(gcd.tb_per_s, 3.2768 / 2.0);
    }

    #[test]
    fn peak_sources_cite_the_datasheet_not_a_missing_file() {
        let h200 = peaks(&spec("NVIDIA H200", "sm_90"));
        for (_, _, source) in &h200.flops {
            assert!(
                source.contains("H200 Tensor Core GPU datasheet"),
                "{source}"
            );
            assert!(!source.contains("METHODOLOGY"), "{source}");
        }
        let (_, source) = h200.bandwidth.unwrap();
        assert!(source.contains("https://"), "{source}");
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
