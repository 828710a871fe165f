//! Peak figures that reports divide by to print "% of peak". Each peak says where it came
//! from: `theoretical` (FLOP/cycle from the ISA × cores × clock, or a vendor table) and,
//! where stackbench can run one, `measured` (a short FMA-throughput kernel).

use super::cpu::CpuInfo;
use super::device::{BackendKind, DeviceInfo};
use crate::workload::DType;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// What a peak bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakMetric {
    /// Floating-point operations per second (dense).
    FlopsPerSecond,
    /// Integer operations per second (dense INT8: a multiply and an add per term).
    IntOpsPerSecond,
    /// Memory bytes per second.
    BytesPerSecond,
    /// Bytes per second in one direction over the host link (PCIe, NVLink-C2C): what
    /// host↔device copies are judged against.
    HostLinkBytesPerSecond,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub backend: BackendKind,
    /// Descriptive fields default when absent, so a probe written by another version
    /// still gives its figures.
    #[serde(default)]
    pub device: String,
    pub metric: PeakMetric,
    /// The precision for compute peaks; `None` for bandwidth.
    pub dtype: Option<DType>,
    pub theoretical: Option<f64>,
    pub measured: Option<f64>,
    /// How the theoretical figure was derived, for the reader.
    #[serde(default)]
    pub source: String,
}

impl Peak {
    /// The figure "% of peak" divides by: the larger of the two. A measured figure above
    /// the theoretical one means the clock the probe read was too low (VMs report the
    /// nominal clock, not the boost clock), and a peak that was exceeded is not a peak.
    pub fn reference(&self) -> Option<f64> {
        match (self.theoretical, self.measured) {
            (Some(t), Some(m)) => Some(t.max(m)),
            (t, m) => t.or(m),
        }
    }
}

/// Dense f64 FLOP per cycle per core, from the widest FMA the ISA offers and the number of
/// FMA pipes that microarchitecture family is known to have.
pub fn f64_flops_per_cycle(cpu: &CpuInfo) -> (f64, &'static str) {
    let amd_family = cpu
        .identification
        .get("cpu family")
        .and_then(|f| f.parse::<u32>().ok())
        .filter(|_| cpu.vendor.as_deref() == Some("AuthenticAMD"));
    if cpu.has("avx512f") {
        // Zen 4 (family 0x19) runs 512-bit FMAs as two 256-bit halves: 2 × 4 lanes × 2.
        if amd_family.is_some_and(|f| f < 0x1a) {
            return (16.0, "AVX-512 on Zen 4: 2 FMA pipes x 256 bit");
        }
        return (32.0, "AVX-512: 2 FMA pipes x 512 bit");
    }
    if cpu.has("avx2") && cpu.has("fma") {
        return (16.0, "AVX2: 2 FMA pipes x 256 bit");
    }
    if cpu.has("avx") {
        return (8.0, "AVX: 256-bit add + multiply");
    }
    if cpu.has("sve") {
        return (16.0, "SVE: 4 x 128-bit or 2 x 256-bit FMA pipes");
    }
    if cpu.has("neon") {
        return (8.0, "NEON: 2 FMA pipes x 128 bit");
    }
    (4.0, "SSE2: 128-bit add + multiply")
}

/// Dense INT8 operations per cycle per core, where the CPU has VNNI: `vpdpbusd` does four
/// int8 multiply-adds per 32-bit lane where an FMA does one f32, so 4 × 2 × the f32 FLOP
/// rate of the same vector pipes (the f64 figure × 8). `None` without VNNI: then int8
/// runs through slower multi-instruction sequences and no figure would be honest.
pub fn int8_ops_per_cycle(cpu: &CpuInfo) -> Option<(f64, String)> {
    let (per_cycle, how) = f64_flops_per_cycle(cpu);
    let vnni = if cpu.has("avx512_vnni") && cpu.has("avx512f") {
        "AVX-512 VNNI"
    } else if cpu.has("avx_vnni") {
        // VEX VNNI is 256 bits wide: the 256-bit figure even where AVX-512 exists.
        return Some((
            16.0 * 8.0,
            "AVX-VNNI: vpdpbusd ymm, 2 pipes x 32 int8 MACs".into(),
        ));
    } else {
        return None;
    };
    Some((
        per_cycle * 8.0,
        format!("{vnni}: vpdpbusd, 4 int8 MACs per 32-bit lane ({how})"),
    ))
}

/// The theoretical INT8 peak of all cores (no measured kernel: the int8 GEMM itself is the
/// measurement, and a figure above this flags it as suspect).
fn cpu_int8_peak(cpu: &CpuInfo, device: &str) -> Option<Peak> {
    let (per_cycle, how) = int8_ops_per_cycle(cpu)?;
    let clock_mhz = cpu.max_mhz.or(cpu.base_mhz);
    let cores = cpu.compute_cores();
    let (theoretical, source) = match (clock_mhz, cores) {
        (Some(mhz), Some(cores)) => (
            Some(per_cycle * mhz * 1e6 * cores as f64),
            format!("{how}: {per_cycle} int ops/cycle x {cores} cores x {mhz:.0} MHz"),
        ),
        _ => (
            None,
            format!("{how}; clock or core count unknown, no figure"),
        ),
    };
    Some(Peak {
        backend: BackendKind::Cpu,
        device: device.to_owned(),
        metric: PeakMetric::IntOpsPerSecond,
        dtype: Some(DType::Int8),
        theoretical,
        measured: None,
        source,
    })
}

/// Theoretical and measured CPU peaks for f64 and f32, and the theoretical INT8 peak
/// where the CPU has VNNI.
pub fn cpu_peaks(cpu: &CpuInfo, measure: bool) -> Vec<Peak> {
    let device = cpu.model.clone().unwrap_or_else(|| "CPU".into());
    let mut peaks = cpu_float_peaks(cpu, measure);
    peaks.extend(cpu_int8_peak(cpu, &device));
    peaks
}

fn cpu_float_peaks(cpu: &CpuInfo, measure: bool) -> Vec<Peak> {
    let (per_cycle, how) = f64_flops_per_cycle(cpu);
    let clock_mhz = cpu.max_mhz.or(cpu.base_mhz);
    let cores = cpu.compute_cores();
    let device = cpu.model.clone().unwrap_or_else(|| "CPU".into());
    let measured_f64 = measure.then(|| measure_fma_flops::<f64>(Duration::from_millis(60)));
    let measured_f32 = measure.then(|| measure_fma_flops::<f32>(Duration::from_millis(60)));
    [
        (DType::F64, 1.0, measured_f64),
        (DType::F32, 2.0, measured_f32),
    ]
    .into_iter()
    .map(|(dtype, lanes, measured)| {
        let theoretical = match (clock_mhz, cores) {
            (Some(mhz), Some(cores)) => Some(per_cycle * lanes * mhz * 1e6 * cores as f64),
            _ => None,
        };
        let mut source = match (clock_mhz, cores) {
            (Some(mhz), Some(cores)) => {
                format!(
                    "{how}: {} FLOP/cycle x {cores} cores x {mhz:.0} MHz",
                    per_cycle * lanes
                )
            }
            _ => format!("{how}; clock or core count unknown, no theoretical figure"),
        };
        if let (Some(t), Some(m), Some(cores)) = (theoretical, measured.flatten(), cores)
            && m > t
        {
            let implied_mhz = m / (per_cycle * lanes * cores as f64) / 1e6;
            source.push_str(&format!(
                "; measured exceeds it: the clock read is below the running clock \
                 (about {implied_mhz:.0} MHz implied)"
            ));
        }
        Peak {
            backend: BackendKind::Cpu,
            device: device.clone(),
            metric: PeakMetric::FlopsPerSecond,
            dtype: Some(dtype),
            theoretical,
            measured: measured.flatten(),
            source,
        }
    })
    .collect()
}

/// Lanes of independent accumulators: enough to cover FMA latency (4-5 cycles) times
/// two pipes at the widest vector width, so the kernel is throughput-bound.
const ACCUMULATORS: usize = 192;

/// A floating-point type the FMA kernel runs in.
pub trait FmaElement: Copy + Send + 'static {
    const ZERO: Self;
    fn from_f64(v: f64) -> Self;
    fn fma(self, a: Self, b: Self) -> Self;
    fn to_f64(self) -> f64;
}

impl FmaElement for f64 {
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl FmaElement for f32 {
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

/// `rounds` passes of acc = acc·a + b over the accumulators.
#[inline(always)]
fn fma_rounds<T: FmaElement>(acc: &mut [T; ACCUMULATORS], a: T, b: T, rounds: u64) {
    for _ in 0..rounds {
        for x in acc.iter_mut() {
            *x = x.fma(a, b);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn fma_rounds_avx512<T: FmaElement>(acc: &mut [T; ACCUMULATORS], a: T, b: T, rounds: u64) {
    fma_rounds(acc, a, b, rounds)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn fma_rounds_avx2<T: FmaElement>(acc: &mut [T; ACCUMULATORS], a: T, b: T, rounds: u64) {
    fma_rounds(acc, a, b, rounds)
}

/// Runs the widest FMA kernel this CPU supports.
fn fma_rounds_dispatch<T: FmaElement>(acc: &mut [T; ACCUMULATORS], a: T, b: T, rounds: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features the function is compiled for were detected at run time.
            return unsafe { fma_rounds_avx512(acc, a, b, rounds) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: as above.
            return unsafe { fma_rounds_avx2(acc, a, b, rounds) };
        }
    }
    fma_rounds(acc, a, b, rounds)
}

/// Measured FMA throughput of all cores, in FLOP/s: one thread per logical CPU, each
/// running independent FMA chains for about `duration`. `None` if no thread could run.
pub fn measure_fma_flops<T: FmaElement>(duration: Duration) -> Option<f64> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // A multiplier just below one and an addend keep values finite and non-trivial.
    let (a, b) = (T::from_f64(0.999_999), T::from_f64(1e-3));
    let results: Vec<Option<f64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut acc = [T::from_f64(1.0 + t as f64 * 1e-3); ACCUMULATORS];
                    fma_rounds_dispatch(&mut acc, a, b, 1_000); // warm-up: clocks and caches
                    let mut rounds = 10_000u64;
                    let mut best = 0.0f64;
                    let start = Instant::now();
                    // At least one timed round, however long the warm-up took on a
                    // loaded machine; then rounds until the budget is spent.
                    while best == 0.0 || start.elapsed() < duration {
                        let t0 = Instant::now();
                        fma_rounds_dispatch(&mut acc, a, b, rounds);
                        let secs = t0.elapsed().as_secs_f64();
                        best = best.max(2.0 * ACCUMULATORS as f64 * rounds as f64 / secs);
                        if secs < 0.005 {
                            rounds *= 2;
                        }
                    }
                    // The accumulators must be observed or the work is dead code.
                    let sink: f64 = acc.iter().map(|x| x.to_f64()).sum();
                    (sink.is_finite() && best > 0.0).then_some(best)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let per_thread: Vec<f64> = results.into_iter().flatten().collect();
    (!per_thread.is_empty()).then(|| per_thread.iter().sum())
}

/// Peaks of every available GPU device, in the probe's shape, from the `peaks` property
/// its backend wrote (`system::gpu_peaks::peaks_json`).
pub fn from_gpu_devices(devices: &[DeviceInfo]) -> Vec<Peak> {
    let mut out = Vec::new();
    for device in devices.iter().filter(|d| d.backend != BackendKind::Cpu) {
        let Some(peaks) = device.properties.get("peaks") else {
            continue;
        };
        let peak = |metric, dtype, entry: &serde_json::Value, key: &str| Peak {
            backend: device.backend,
            device: device.name.clone(),
            metric,
            dtype,
            theoretical: entry.get(key).and_then(|v| v.as_f64()),
            measured: None,
            source: entry
                .get("source")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned(),
        };
        // Rates per precision; a precision this build has no DType for is passed over.
        for (group, metric, key) in [
            ("flops", PeakMetric::FlopsPerSecond, "flops_per_s"),
            ("int_ops", PeakMetric::IntOpsPerSecond, "ops_per_s"),
        ] {
            let Some(entries) = peaks.get(group).and_then(|f| f.as_object()) else {
                continue;
            };
            for (dtype, entry) in entries {
                if let Ok(dtype) = dtype.parse::<DType>() {
                    out.push(peak(metric, Some(dtype), entry, key));
                }
            }
        }
        for (key, metric) in [
            ("bandwidth", PeakMetric::BytesPerSecond),
            ("host_link", PeakMetric::HostLinkBytesPerSecond),
        ] {
            if let Some(entry) = peaks.get(key).filter(|b| !b.is_null()) {
                out.push(peak(metric, None, entry, "bytes_per_s"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_with(features: &[&str], vendor: &str, family: &str) -> CpuInfo {
        let mut cpu = CpuInfo {
            vendor: Some(vendor.into()),
            features: features.iter().map(|s| s.to_string()).collect(),
            physical_cores: Some(2),
            max_mhz: Some(3000.0),
            ..CpuInfo::default()
        };
        cpu.identification
            .insert("cpu family".into(), family.into());
        cpu
    }

    #[test]
    fn flops_per_cycle_by_isa() {
        assert_eq!(
            f64_flops_per_cycle(&cpu_with(&["avx512f", "avx2", "fma"], "AuthenticAMD", "25")).0,
            16.0
        );
        assert_eq!(
            f64_flops_per_cycle(&cpu_with(&["avx512f", "avx2", "fma"], "GenuineIntel", "6")).0,
            32.0
        );
        assert_eq!(
            f64_flops_per_cycle(&cpu_with(&["avx2", "fma"], "GenuineIntel", "6")).0,
            16.0
        );
        assert_eq!(f64_flops_per_cycle(&cpu_with(&["neon"], "ARM", "")).0, 8.0);
    }

    #[test]
    fn theoretical_peak_is_cycles_times_cores_times_clock() {
        let peaks = cpu_peaks(&cpu_with(&["avx2", "fma"], "GenuineIntel", "6"), false);
        let f32_peak = peaks.iter().find(|p| p.dtype == Some(DType::F32)).unwrap();
        assert_eq!(f32_peak.theoretical, Some(32.0 * 2.0 * 3000e6));
        assert!(f32_peak.measured.is_none());
    }

    #[test]
    fn int8_peak_is_vnni_width_times_cores_times_clock_and_absent_without_vnni() {
        let zen5 = cpu_with(
            &["avx512f", "avx512_vnni", "avx_vnni"],
            "AuthenticAMD",
            "26",
        );
        let int8 = |cpu: &CpuInfo| {
            cpu_peaks(cpu, false)
                .into_iter()
                .find(|p| p.metric == PeakMetric::IntOpsPerSecond)
        };
        let p = int8(&zen5).unwrap();
        assert_eq!(p.dtype, Some(DType::Int8));
        // 2 pipes × 64 MACs × 2 ops = 256 per cycle, × 2 cores × 3 GHz.
        assert_eq!(p.theoretical, Some(256.0 * 2.0 * 3000e6));
        assert!(p.source.contains("VNNI"), "{}", p.source);
        let zen4 = cpu_with(&["avx512f", "avx512_vnni"], "AuthenticAMD", "25");
        assert_eq!(int8(&zen4).unwrap().theoretical, Some(128.0 * 2.0 * 3000e6));
        let alder = cpu_with(&["avx2", "fma", "avx_vnni"], "GenuineIntel", "6");
        assert_eq!(
            int8(&alder).unwrap().theoretical,
            Some(128.0 * 2.0 * 3000e6)
        );
        assert!(int8(&cpu_with(&["avx2", "fma"], "GenuineIntel", "6")).is_none());
    }

    #[test]
    fn reference_is_the_larger_figure() {
        let mut peak = cpu_peaks(&cpu_with(&["avx2", "fma"], "GenuineIntel", "6"), false).remove(0);
        let theoretical = peak.theoretical.unwrap();
        assert_eq!(peak.reference(), Some(theoretical));
        peak.measured = Some(theoretical * 1.4);
        assert_eq!(peak.reference(), Some(theoretical * 1.4));
        peak.theoretical = None;
        assert_eq!(peak.reference(), Some(theoretical * 1.4));
    }

    #[test]
    fn measured_fma_kernel_runs_and_is_plausible() {
        let flops = measure_fma_flops::<f64>(Duration::from_millis(20)).unwrap();
        // Real work, finite and below any machine's peak; speed itself is not a test's
        // business (debug builds on a loaded machine are slow).
        assert!(flops > 1e5 && flops < 1e15, "{flops}");
    }

    #[test]
    fn device_properties_become_probe_peaks() {
        let s = super::super::gpu_peaks::GpuSpec {
            name: "NVIDIA H100 80GB HBM3".into(),
            vendor: super::super::gpu_peaks::Vendor::Nvidia,
            arch: "sm_90".into(),
            units: 132,
            clock_mhz: 1980,
            measured_bandwidth_bytes_per_s: None,
            host_link: Some((31.5e9, "PCIe Gen4 x16".into())),
        };
        let device = DeviceInfo {
            backend: BackendKind::Cuda,
            name: s.name.clone(),
            properties: [("peaks".to_owned(), super::super::gpu_peaks::peaks_json(&s))]
                .into_iter()
                .collect(),
        };
        let peaks = from_gpu_devices(&[device]);
        assert!(
            peaks
                .iter()
                .any(|p| p.dtype == Some(DType::Fp8E4m3) && p.theoretical == Some(1979e12))
        );
        assert!(peaks.iter().any(|p| p.metric == PeakMetric::IntOpsPerSecond
            && p.dtype == Some(DType::Int8)
            && p.theoretical == Some(1979e12)
            && p.source.contains("datasheet")));
        assert!(peaks.iter().any(|p| p.metric == PeakMetric::BytesPerSecond));
        assert!(peaks.iter().any(
            |p| p.metric == PeakMetric::HostLinkBytesPerSecond && p.theoretical == Some(31.5e9)
        ));
    }
}
