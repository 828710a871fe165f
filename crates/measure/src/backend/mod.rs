//! Devices that run workloads: `cpu` (always there), `cuda` (cudarc, loaded at run time),
//! `rocm` (HIP + rocBLAS, loaded at run time) and `vulkan` (ash, the loader dlopen'ed at
//! run time; any GPU with a Vulkan 1.2 driver, or Mesa's lavapipe on a CPU).
//!
//! Why the seam is shaped this way:
//! - [`probe`] returns a value, [`Availability::Unavailable`] with its reason, never a panic:
//!   one binary runs on CPU-only, NVIDIA and AMD machines, and "no CUDA here" is a result
//!   the report shows, not a crash.
//! - A backend hands out [`TimedWorkload`]s: the inputs are allocated and checked once, then
//!   `run(iters)` returns the time *the device* measured for `iters` back-to-back calls.
//!   That is exactly Criterion's `iter_custom` contract, so a GPU backend times with events
//!   while the CPU backend times with the host clock, and the bench targets cannot tell.
//! - Which workloads a backend runs, and how, is each family's module's business
//!   (`family/`): the kernels live here, the capability traits there, so a new family does
//!   not widen this trait and a missing combination is a recorded skip with its reason.

pub mod cpu;
pub mod cuda;
pub mod gpu;
pub mod rocm;
pub mod vulkan;

// What a device is, named below the backends so that the system's peak tables can name it
// too; re-exported here, where every backend and family reads it.
pub use crate::system::device::{Availability, BackendKind, DeviceInfo};

use crate::workload::Suite;
use std::collections::BTreeMap;
use std::time::Duration;

/// Errors from a backend, each naming what it concerns.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// This backend cannot run this workload here: a recorded skip, not a failure.
    #[error("{what} is not supported on {backend}: {reason}")]
    Unsupported {
        backend: BackendKind,
        what: String,
        reason: String,
    },
    /// The result disagreed with the reference: the benchmark must not be timed.
    #[error("{benchmark}: wrong result: {detail}")]
    Mismatch { benchmark: String, detail: String },
    /// The device or its library reported an error.
    #[error("{backend} error during {context}: {message}")]
    Device {
        backend: BackendKind,
        context: String,
        message: String,
    },
}

impl BackendError {
    pub fn unsupported(
        backend: BackendKind,
        what: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        BackendError::Unsupported {
            backend,
            what: what.into(),
            reason: reason.into(),
        }
    }

    /// A wrong result of the benchmark `id`.
    pub fn mismatch(id: &crate::workload::BenchId, detail: impl Into<String>) -> Self {
        BackendError::Mismatch {
            benchmark: id.full(),
            detail: detail.into(),
        }
    }

    pub fn is_skip(&self) -> bool {
        matches!(self, BackendError::Unsupported { .. })
    }
}

/// Keeps a passed check's accuracy in `slot` for the record's notes; a mismatch fails
/// benchmark `id` with the check's detail. Every backend's workloads check their output
/// once before timing and end here.
pub(crate) fn keep_accuracy(
    slot: &mut Option<crate::workload::Accuracy>,
    id: &crate::workload::BenchId,
    checked: Result<crate::workload::Accuracy, String>,
) -> Result<(), BackendError> {
    *slot = Some(checked.map_err(|detail| BackendError::mismatch(id, detail))?);
    Ok(())
}

/// A record's `notes` with the check's accuracy added, once the check ran.
pub(crate) fn with_accuracy(
    mut notes: BTreeMap<String, serde_json::Value>,
    accuracy: Option<&crate::workload::Accuracy>,
) -> BTreeMap<String, serde_json::Value> {
    if let Some(accuracy) = accuracy {
        accuracy.insert_note(&mut notes);
    }
    notes
}

/// Why `device` records no `format` GEMM ([`crate::workload::gemm::SUB_BYTE_FORMATS`]):
/// the hardware reason where the device lacks FP4/FP6 tensor cores, and where it has them
/// (Blackwell sm_100+, MI355X gfx950) that stackbench has no block-scaled kernel for them
/// yet, so the row is never silently missing and never a made-up figure.
pub fn sub_byte_gemm_skip(device: &DeviceInfo, format: &str) -> String {
    let text = |key: &str| device.properties.get(key).and_then(|v| v.as_str());
    match device.backend {
        BackendKind::Cpu => format!(
            "no CPU has {format} matrix units (they are Blackwell sm_100+ and MI355X gfx950 \
             tensor-core formats)"
        ),
        BackendKind::Cuda => {
            let cc = text("compute_capability").unwrap_or("unknown");
            let major = cc.split('.').next().and_then(|m| m.parse::<u32>().ok());
            if major.is_some_and(|m| m >= 10) {
                format!(
                    "this device (compute capability {cc}) has {format} tensor cores, but \
                     stackbench has no block-scaled cuBLASLt {format} GEMM yet"
                )
            } else {
                format!(
                    "{format} tensor cores need Blackwell (compute capability 10.0 or newer); \
                     this device is {cc}"
                )
            }
        }
        BackendKind::Rocm => {
            let arch = text("gfx_arch").unwrap_or("unknown");
            if arch.starts_with("gfx950") {
                format!(
                    "this device ({arch}) has {format} matrix cores, but stackbench has no \
                     hipBLASLt {format} GEMM yet"
                )
            } else {
                format!("{format} matrix cores need MI355X (gfx950); this device is {arch}")
            }
        }
        BackendKind::Vulkan => format!(
            "Vulkan has no {format} matrix type (VK_KHR_cooperative_matrix offers 8- and \
             16-bit ones at most); a block-scaled {format} GEMM needs the vendor's library"
        ),
    }
}

/// A workload with its inputs in place, ready to be checked and timed.
pub trait TimedWorkload {
    /// Runs the workload once and compares its output with the reference. A timed number
    /// for a wrong result is worse than none, so the harness calls this before timing.
    fn verify(&mut self) -> Result<(), BackendError>;

    /// Runs the workload `iters` times back to back and returns the elapsed time measured
    /// on the device (host clock for the CPU, events for GPUs). No synchronisation inside
    /// the timed window beyond what the workload itself needs.
    fn run(&mut self, iters: u64) -> Result<Duration, BackendError>;

    /// Facts about this benchmark worth keeping beside its numbers (peak memory, clocks
    /// at start and end, the library call used). Read after timing.
    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::new()
    }
}

/// How Criterion should sample a backend's benchmarks (GPUs and CPUs want different ones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingProfile {
    pub sample_size: usize,
    pub warm_up: Duration,
    pub measurement: Duration,
}

impl SamplingProfile {
    /// `sample_size` samples after `warm_up_ms` of warm-up, in `measurement_ms`: the
    /// backends' profiles are tables of these three numbers per suite.
    pub const fn new(sample_size: usize, warm_up_ms: u64, measurement_ms: u64) -> Self {
        SamplingProfile {
            sample_size,
            warm_up: Duration::from_millis(warm_up_ms),
            measurement: Duration::from_millis(measurement_ms),
        }
    }

    /// Criterion's GPU defaults: many short samples. A kernel of a few microseconds to a
    /// few milliseconds gets hundreds of iterations per sample, so 50 samples (quick) or
    /// 100 (full, Criterion's default) cost seconds, and the 25 ms warm-up matches
    /// triton's do_bench before the clock has settled.
    pub fn gpu(suite: Suite) -> SamplingProfile {
        match suite {
            Suite::Quick => SamplingProfile::new(50, 300, 2_000),
            Suite::Full => SamplingProfile::new(100, 1_000, 5_000),
        }
    }

    /// A quarter of the warm-up and measurement time (at least 10 samples): for families
    /// with many small benchmarks (tensor ops, attention) whose quick suite must stay short.
    pub fn lighter(self) -> SamplingProfile {
        SamplingProfile {
            sample_size: self.sample_size.max(10),
            warm_up: self.warm_up / 4,
            measurement: self.measurement / 4,
        }
    }
}

/// A device that can run workloads: what every device has. What it runs is each family's
/// business (`family/`), reached through [`Backend::peer`].
pub trait Backend {
    fn kind(&self) -> BackendKind;

    /// The device workloads run on.
    fn device(&self) -> &DeviceInfo;

    /// Criterion sampling suited to this device and suite.
    fn sampling(&self, suite: Suite) -> SamplingProfile;

    /// Sampling for families of many small benchmarks (tensor ops, attention).
    fn light_sampling(&self, suite: Suite) -> SamplingProfile {
        match suite {
            Suite::Quick => self.sampling(suite).lighter(),
            Suite::Full => self.sampling(suite),
        }
    }

    /// The backend itself, for a family's module to open its workloads on (`family/`).
    fn peer(&self) -> Peer<'_>;
}

/// A backend as the peer a family opens its workloads on: the CPU, or any GPU through the
/// one [`gpu::GpuBackend`] seam CUDA and ROCm share. A family's module says how each opens
/// the family's workload, so the [`Backend`] trait carries no method per family. A backend
/// that is a `GpuBackend` (a later Vulkan one can be) runs every shared family as it is; one
/// that is neither adds a variant here and its arm in `family::on_every_peer!`, and the
/// compiler then lists each family trait it must implement.
pub enum Peer<'b> {
    Cpu(&'b cpu::CpuBackend),
    Gpu(&'b dyn gpu::GpuBackend),
}

/// Probes one backend without side effects beyond loading its libraries. Never panics.
pub fn probe(kind: BackendKind) -> Availability {
    match kind {
        BackendKind::Cpu => cpu::probe(),
        BackendKind::Cuda => cuda::probe(),
        BackendKind::Rocm => rocm::probe(),
        BackendKind::Vulkan => vulkan::probe(),
    }
}

/// Backends that could be opened, and the kinds that could not with the reason.
pub type OpenedBackends = (Vec<Box<dyn Backend>>, Vec<(BackendKind, String)>);

/// The kinds [`open_available`] could not open, split by whether this machine has the
/// device: without one it is a skip; with one (the probe found it and opening failed) it
/// is a failure of every benchmark of that backend.
pub fn classify_unopened(
    unopened: Vec<(BackendKind, String)>,
    device_present: impl Fn(BackendKind) -> bool,
) -> Vec<(BackendKind, Result<String, BackendError>)> {
    unopened
        .into_iter()
        .map(|(kind, reason)| {
            let outcome = if device_present(kind) {
                Err(BackendError::Device {
                    backend: kind,
                    context: "opening the device the probe found".into(),
                    message: reason,
                })
            } else {
                Ok(reason)
            };
            (kind, outcome)
        })
        .collect()
}

/// Opens every backend that is available here; the others come back with their reasons so
/// the bench targets can record them as skipped (or failed: [`classify_unopened`]).
pub fn open_available() -> OpenedBackends {
    let mut opened: Vec<Box<dyn Backend>> = Vec::new();
    let mut unavailable = Vec::new();
    for kind in BackendKind::ALL {
        let result: Result<Box<dyn Backend>, String> = match kind {
            BackendKind::Cpu => cpu::CpuBackend::open().map(|b| Box::new(b) as Box<dyn Backend>),
            BackendKind::Cuda => cuda::CudaBackend::open().map(|b| Box::new(b) as Box<dyn Backend>),
            BackendKind::Rocm => rocm::RocmBackend::open().map(|b| Box::new(b) as Box<dyn Backend>),
            BackendKind::Vulkan => {
                vulkan::VulkanBackend::open().map(|b| Box::new(b) as Box<dyn Backend>)
            }
        };
        match result {
            Ok(backend) => opened.push(backend),
            Err(reason) => unavailable.push((kind, reason)),
        }
    }
    (opened, unavailable)
}

#[cfg(test)]
mod sub_byte_tests {
    use super::*;

    fn device(backend: BackendKind, key: &str, value: &str) -> DeviceInfo {
        DeviceInfo {
            backend,
            name: "x".into(),
            properties: [(key.to_owned(), serde_json::Value::from(value))]
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn sub_byte_skips_name_the_hardware_that_has_them() {
        let h100 = sub_byte_gemm_skip(
            &device(BackendKind::Cuda, "compute_capability", "9.0"),
            "fp4e2m1",
        );
        assert!(h100.contains("Blackwell") && h100.contains("9.0"), "{h100}");
        let b200 = sub_byte_gemm_skip(
            &device(BackendKind::Cuda, "compute_capability", "10.0"),
            "fp4e2m1",
        );
        assert!(
            b200.contains("has fp4e2m1 tensor cores") && b200.contains("no block-scaled"),
            "{b200}"
        );
        let mi300 = sub_byte_gemm_skip(&device(BackendKind::Rocm, "gfx_arch", "gfx942"), "fp6e3m2");
        assert!(
            mi300.contains("gfx950") && mi300.contains("gfx942"),
            "{mi300}"
        );
        let mi355 = sub_byte_gemm_skip(&device(BackendKind::Rocm, "gfx_arch", "gfx950"), "fp6e3m2");
        assert!(mi355.contains("no hipBLASLt"), "{mi355}");
        let cpu = sub_byte_gemm_skip(&device(BackendKind::Cpu, "threads", "2"), "fp4e2m1");
        assert!(cpu.contains("no CPU"), "{cpu}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_sampling_suits_criterion_and_lighter_keeps_ten_samples() {
        for suite in [Suite::Quick, Suite::Full] {
            let gpu = SamplingProfile::gpu(suite);
            assert!(gpu.sample_size >= 10 && gpu.measurement > gpu.warm_up);
            let light = gpu.lighter();
            assert_eq!(light.measurement, gpu.measurement / 4);
            assert!(light.sample_size >= 10);
        }
        let tiny = SamplingProfile {
            sample_size: 3,
            warm_up: Duration::from_millis(4),
            measurement: Duration::from_millis(8),
        };
        assert_eq!(tiny.lighter().sample_size, 10);
    }

    #[test]
    fn every_backend_opens_or_says_why() {
        let (opened, unavailable) = open_available();
        assert!(opened.iter().any(|b| b.kind() == BackendKind::Cpu));
        assert_eq!(opened.len() + unavailable.len(), BackendKind::ALL.len());
        assert!(unavailable.iter().all(|(_, reason)| !reason.is_empty()));
    }

    #[test]
    fn a_device_that_probes_but_does_not_open_is_a_failure_and_no_device_a_skip() {
        let unopened = vec![
            (
                BackendKind::Cuda,
                "creating a context: CUDA_ERROR_OUT_OF_MEMORY".to_owned(),
            ),
            (BackendKind::Rocm, "ROCm is not installed".to_owned()),
        ];
        let classified = classify_unopened(unopened, |kind| kind == BackendKind::Cuda);
        let err = classified[0].1.as_ref().unwrap_err();
        assert!(
            !err.is_skip() && err.to_string().contains("OUT_OF_MEMORY"),
            "{err}"
        );
        assert_eq!(classified[1].1.as_ref().unwrap(), "ROCm is not installed");
    }
}
