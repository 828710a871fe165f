//! The system probe: everything stackbench records about the machine a run was made on.
//! It puts the machine's facts (`crate::system`: CPU, memory, PCI GPUs, software, peak
//! tables) together with what each backend finds here (`crate::backend::probe`), so it
//! sits one floor above the backends, and the facts one floor below them.

use crate::backend::{Availability, BackendKind};
use crate::system::{cpu, fingerprint, gpu, memory, peak, software};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SYSTEM_SCHEMA: &str = "stackbench.system.v1";

/// Everything stackbench records about the machine a run was made on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SystemProbe {
    pub schema: String,
    pub collected_unix_s: u64,
    /// Identifies the hardware: runs are only compared within one fingerprint unless the
    /// user says otherwise. Built from the CPU model, core count and GPU names.
    pub fingerprint: String,
    pub host: software::HostInfo,
    pub cpu: cpu::CpuInfo,
    pub memory_total_bytes: Option<u64>,
    /// The DIMMs from SMBIOS and the bandwidth they allow, or why they could not be read.
    #[serde(default)]
    pub memory_config: memory::MemoryReading,
    pub gpus: Vec<gpu::PciGpu>,
    /// Raw output of `nvidia-smi` / `rocm-smi` queries when those tools are on PATH.
    pub gpu_tools: BTreeMap<String, String>,
    pub software: software::SoftwareInfo,
    pub backends: BTreeMap<BackendKind, Availability>,
    /// The CPU BLAS library the `gemm/cpu/blas_*` ids run (name, version, threads), or why
    /// none loaded; absent in probes written before it was recorded, and in probes of a
    /// root other than this machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_blas: Option<crate::backend::cpu::blas::BlasProbe>,
    pub peaks: Vec<peak::Peak>,
    /// What could not be read, and why.
    pub notes: Vec<String>,
}

impl SystemProbe {
    /// Probes this machine. Includes a short (~0.1 s) FMA-throughput measurement.
    pub fn collect() -> SystemProbe {
        Self::collect_from(Path::new("/"), true)
    }

    /// Probes with `/proc` and `/sys` read under `root`; `measure` runs the FMA kernel.
    pub fn collect_from(root: &Path, measure: bool) -> SystemProbe {
        let mut notes = Vec::new();
        let cpu = cpu::CpuInfo::read(root, &mut notes);
        let memory_total_bytes = cpu::read_mem_total(root, &mut notes);
        let memory_config = memory::MemoryReading::read(root);
        let gpus = gpu::scan_pci(root, &mut notes);
        let gpu_tools = if root == Path::new("/") {
            gpu::query_tools()
        } else {
            BTreeMap::new()
        };
        let backends: BTreeMap<BackendKind, Availability> = BackendKind::ALL
            .into_iter()
            .map(|kind| (kind, crate::backend::probe(kind)))
            .collect();
        let mut peaks = vec![];
        peaks.extend(peak::cpu_peaks(&cpu, measure));
        peaks.extend(memory_config.peak(cpu.model.as_deref().unwrap_or("CPU")));
        for availability in backends.values() {
            if let Availability::Available { devices } = availability {
                peaks.extend(peak::from_gpu_devices(devices));
            }
        }
        let fingerprint = fingerprint(&cpu, &gpus);
        SystemProbe {
            schema: SYSTEM_SCHEMA.into(),
            collected_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            fingerprint,
            host: software::HostInfo::read(root, &mut notes),
            cpu,
            memory_total_bytes,
            memory_config,
            gpus,
            gpu_tools,
            software: software::SoftwareInfo::collect(),
            backends,
            // Loading a library says nothing about a machine read under another root.
            cpu_blas: (root == Path::new("/")).then(crate::backend::cpu::blas::BlasProbe::collect),
            peaks,
            notes,
        }
    }
}

/// How long a device peak measured by an earlier probe of the same machine is carried
/// into the next one ([`SystemProbe::carry_device_peaks`]): the bench targets of one run
/// start within minutes of each other; a probe from another day is not this run's.
pub const DEVICE_PEAKS_CARRIED_FOR_S: u64 = 6 * 3600;

/// A peak measured on the Vulkan device ([`SystemProbe::with_device_peaks`]).
fn is_device_peak(peak: &peak::Peak) -> bool {
    peak.backend == BackendKind::Vulkan && peak.measured.is_some()
}

impl SystemProbe {
    /// Whether this probe holds peaks measured on the Vulkan device (by
    /// [`Self::with_device_peaks`], here or carried from an earlier probe).
    pub fn has_device_peaks(&self) -> bool {
        self.peaks.iter().any(is_device_peak)
    }

    /// Carries the Vulkan device peaks `earlier` measured into this probe, when this one
    /// has none, both describe the same machine (fingerprint) with Vulkan available, and
    /// `earlier` was collected at most [`DEVICE_PEAKS_CARRIED_FOR_S`] before it. Every bench
    /// target writes the probe anew at its start, and only a target that times a `vulkan`
    /// id measures those peaks (about a second on a GPU, 4 s on lavapipe): without this,
    /// the run's last target (alloc, compile) would drop them from the probe the run
    /// records. Returns whether it carried any.
    pub fn carry_device_peaks(&mut self, earlier: &SystemProbe) -> bool {
        let vulkan = self.backends.get(&BackendKind::Vulkan);
        let recent = self
            .collected_unix_s
            .checked_sub(earlier.collected_unix_s)
            .is_some_and(|age| age <= DEVICE_PEAKS_CARRIED_FOR_S);
        if self.has_device_peaks()
            || !vulkan.is_some_and(Availability::is_available)
            || earlier.fingerprint != self.fingerprint
            || !recent
        {
            return false;
        }
        let carried: Vec<peak::Peak> = earlier
            .peaks
            .iter()
            .filter(|p| is_device_peak(p))
            .cloned()
            .collect();
        if carried.is_empty() {
            return false;
        }
        self.peaks.extend(carried);
        self.notes.push(format!(
            "the Vulkan device peaks were measured by this run's earlier probe ({} s before this one), not again",
            self.collected_unix_s - earlier.collected_unix_s
        ));
        true
    }

    /// Adds the peaks measured on the devices that report no figures of their own: Vulkan
    /// gives neither clocks nor unit counts, so its f32 FMA peak and copy bandwidth are
    /// measured, vkpeak-style (about 4 s on lavapipe): `stackbench info` runs it, and so
    /// does a bench target about to time a `vulkan` id (`sidecar::add_device_peaks`), not
    /// every bench target's probe.
    pub fn with_device_peaks(mut self) -> SystemProbe {
        let vulkan = self.backends.get(&BackendKind::Vulkan);
        if vulkan.is_some_and(Availability::is_available) {
            let (peaks, notes) = crate::backend::vulkan::peak::measured_peaks();
            self.peaks.extend(peaks);
            self.notes.extend(notes);
        }
        self
    }
}

impl SystemProbe {
    /// A readable table for terminals.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
        let mut row = |key: &str, value: String| {
            let _ = writeln!(out, "  {key:<22} {value}");
        };
        let cpu = &self.cpu;
        row("host", or_unknown(self.host.hostname.clone()));
        row(
            "os",
            format!(
                "{} (kernel {})",
                or_unknown(self.host.os.clone()),
                or_unknown(self.host.kernel.clone())
            ),
        );
        row(
            "cpu",
            format!("{} [{}]", or_unknown(cpu.model.clone()), cpu.architecture),
        );
        row(
            "topology",
            format!(
                "{} socket(s), {} core(s), {} thread(s)",
                or_unknown(cpu.sockets.map(|v| v.to_string())),
                or_unknown(cpu.physical_cores.map(|v| v.to_string())),
                or_unknown(cpu.logical_cpus.map(|v| v.to_string()))
            ),
        );
        row(
            "clock",
            format!(
                "base {}, max {}",
                or_unknown(cpu.base_mhz.map(|v| format!("{v:.0} MHz"))),
                or_unknown(cpu.max_mhz.map(|v| format!("{v:.0} MHz")))
            ),
        );
        let caches: Vec<String> = cpu
            .caches
            .iter()
            .map(|c| {
                format!(
                    "L{}{} {}",
                    c.level,
                    &c.kind[..1],
                    crate::workload::ids::format_bytes_id(c.size_bytes as usize)
                )
            })
            .collect();
        row(
            "caches",
            if caches.is_empty() {
                "unknown".into()
            } else {
                caches.join(", ")
            },
        );
        row(
            "llc (total)",
            or_unknown(
                cpu.llc_bytes()
                    .map(|b| crate::workload::ids::format_bytes_id(b as usize)),
            ),
        );
        row("isa", cpu.features.join(" "));
        row(
            "memory",
            or_unknown(
                self.memory_total_bytes
                    .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)),
            ),
        );
        row("dimms", self.memory_config.describe());
        for gpu in &self.gpus {
            row(
                "gpu (pci)",
                format!(
                    "{} at {} driver {}",
                    gpu.describe(),
                    gpu.pci_address,
                    or_unknown(gpu.driver.clone())
                ),
            );
        }
        if self.gpus.is_empty() {
            row("gpu (pci)", "none visible".into());
        }
        for (tool, output) in &self.gpu_tools {
            row(tool, output.lines().skip(1).collect::<Vec<_>>().join("; "));
        }
        for (kind, availability) in &self.backends {
            let status = match availability {
                crate::backend::Availability::Available { devices } => {
                    format!(
                        "available: {}",
                        devices
                            .iter()
                            .map(|d| d.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
                crate::backend::Availability::Unavailable { reason } => {
                    format!("unavailable: {reason}")
                }
            };
            row(&format!("backend {kind}"), status);
        }
        if let Some(blas) = &self.cpu_blas {
            row("cpu blas", blas.describe());
        }
        for peak in &self.peaks {
            // Integer rates below a tera-op (a Vulkan CPU driver's int8 peak) in GOP/s, so
            // that they do not print as "0.0 TOPS".
            let largest = peak
                .theoretical
                .into_iter()
                .chain(peak.measured)
                .fold(0.0, f64::max);
            let unit = match peak.metric {
                peak::PeakMetric::FlopsPerSecond => ("GFLOP/s", 1e9),
                peak::PeakMetric::IntOpsPerSecond if largest < 1e12 => ("GOP/s", 1e9),
                peak::PeakMetric::IntOpsPerSecond => ("TOPS", 1e12),
                peak::PeakMetric::BytesPerSecond | peak::PeakMetric::HostLinkBytesPerSecond => {
                    ("GB/s", 1e9)
                }
            };
            let fmt = |v: Option<f64>| {
                v.map(|v| format!("{:.1} {}", v / unit.1, unit.0))
                    .unwrap_or_else(|| "n/a".into())
            };
            let dtype =
                peak.dtype
                    .map(|d| d.id().to_owned())
                    .unwrap_or_else(|| match peak.metric {
                        peak::PeakMetric::HostLinkBytesPerSecond => "host link".into(),
                        _ => "memory".into(),
                    });
            row(
                &format!("peak {} {dtype}", peak.backend),
                format!(
                    "theoretical {}, measured {} ({})",
                    fmt(peak.theoretical),
                    fmt(peak.measured),
                    peak.source
                ),
            );
        }
        let sw = &self.software;
        row("stackbench", sw.stackbench_version.clone());
        row("rustc", or_unknown(sw.rustc.clone()));
        row(
            "git",
            match (&sw.git_revision, sw.git_dirty) {
                (Some(rev), Some(true)) => format!("{rev} (dirty)"),
                (Some(rev), _) => rev.clone(),
                _ => "not a git work tree".into(),
            },
        );
        row("fingerprint", self.fingerprint.clone());
        for note in &self.notes {
            row("note", note.clone());
        }
        format!("stackbench system probe ({})\n{out}", self.schema)
    }
}

#[cfg(test)]
mod device_peak_tests {
    use super::*;
    use crate::backend::Availability;
    use crate::workload::DType;

    /// A probe of a root with nothing in it, collected at `at`, Vulkan available or not.
    fn probe(at: u64, fingerprint: &str, vulkan: bool) -> SystemProbe {
        let root = tempfile::tempdir().unwrap();
        let mut p = SystemProbe::collect_from(root.path(), false);
        p.collected_unix_s = at;
        p.fingerprint = fingerprint.into();
        p.peaks.retain(|peak| peak.backend != BackendKind::Vulkan);
        let availability = if vulkan {
            Availability::Available {
                devices: Vec::new(),
            }
        } else {
            Availability::Unavailable {
                reason: "no loader".into(),
            }
        };
        p.backends.insert(BackendKind::Vulkan, availability);
        p
    }

    fn vulkan_peak(measured: Option<f64>) -> peak::Peak {
        peak::Peak {
            backend: BackendKind::Vulkan,
            device: "llvmpipe".into(),
            metric: peak::PeakMetric::FlopsPerSecond,
            dtype: Some(DType::F32),
            theoretical: None,
            measured,
            source: "measured: FMA chains".into(),
        }
    }

    #[test]
    fn a_later_targets_probe_keeps_the_device_peaks_this_run_measured_and_nothing_else() {
        let mut earlier = probe(1_000, "cpu=x;gpu=y", true);
        earlier.peaks.push(vulkan_peak(Some(6.6e10)));
        earlier.peaks.push(vulkan_peak(None));

        // The same machine a minute later: the measured peak is carried, with a note.
        let mut later = probe(1_060, "cpu=x;gpu=y", true);
        assert!(later.carry_device_peaks(&earlier));
        let carried: Vec<&peak::Peak> = later
            .peaks
            .iter()
            .filter(|p| p.backend == BackendKind::Vulkan)
            .collect();
        assert_eq!(carried.len(), 1, "{carried:?}");
        assert_eq!(carried[0].measured, Some(6.6e10));
        assert!(
            later.notes.iter().any(|n| n.contains("60 s before")),
            "{:?}",
            later.notes
        );
        // Carried once: a probe that has them takes no more.
        assert!(!later.carry_device_peaks(&earlier));

        // Another machine, another day, Vulkan gone, or an earlier probe from the future:
        // nothing is carried.
        for (mut p, why) in [
            (probe(1_060, "cpu=other;gpu=y", true), "another fingerprint"),
            (
                probe(1_000 + DEVICE_PEAKS_CARRIED_FOR_S + 1, "cpu=x;gpu=y", true),
                "too old",
            ),
            (probe(1_060, "cpu=x;gpu=y", false), "no Vulkan now"),
            (
                probe(999, "cpu=x;gpu=y", true),
                "collected before the earlier one",
            ),
        ] {
            assert!(!p.carry_device_peaks(&earlier), "{why}");
            assert!(!p.has_device_peaks(), "{why}");
        }
    }
}
