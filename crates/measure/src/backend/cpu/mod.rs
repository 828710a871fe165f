//! The CPU backend: always available, all cores. GEMM through the `gemm` crate, bandwidth
//! kernels on a pinned static thread pool. Timing is the host clock, which is the device
//! clock here. The kernels live here; which of them each family runs, on which axes, is
//! said by that family's module (`family/`), as it is for the GPU backends.

pub mod alloc;
pub mod attention;
pub mod blas;
pub mod gemm;
pub mod gemm_int8;
pub mod malloc_info;
pub mod pool;
pub mod stream;
pub mod tensor_ops;

use super::{Availability, Backend, BackendKind, DeviceInfo, Peer, SamplingProfile};
use crate::system::cpu::CpuInfo;
use crate::workload::Suite;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Last-level cache assumed when sysfs does not say (a common server L3 size).
const DEFAULT_LLC_BYTES: u64 = 32 << 20;
/// The smallest array of the full sweep: three of them fit in any L1 per thread.
const SWEEP_START_BYTES: usize = 8 << 10;
/// BabelStream's default array: 2^25 f64. The sweep reaches at least this.
const BABELSTREAM_BYTES: usize = 256 << 20;

pub fn probe() -> Availability {
    let mut notes = Vec::new();
    let cpu = CpuInfo::read(Path::new("/"), &mut notes);
    Availability::Available {
        devices: vec![device_info(&cpu)],
    }
}

fn device_info(cpu: &CpuInfo) -> DeviceInfo {
    let mut properties = BTreeMap::new();
    properties.insert("threads".to_owned(), threads().into());
    if let Some(llc) = cpu.llc_bytes() {
        properties.insert("llc_bytes".to_owned(), llc.into());
    }
    properties.insert("features".to_owned(), cpu.features.clone().into());
    DeviceInfo {
        backend: BackendKind::Cpu,
        name: cpu.model.clone().unwrap_or_else(|| "unknown CPU".into()),
        properties,
    }
}

/// Host-clock time of `iters` back-to-back calls of `call`: on the CPU the host clock is
/// the device clock. Callers `black_box` their output afterwards so the work stays live
/// ([`time_kept`] does both).
pub(crate) fn time_calls(iters: u64, mut call: impl FnMut()) -> Duration {
    let start = std::time::Instant::now();
    for _ in 0..iters {
        call();
    }
    start.elapsed()
}

/// [`time_calls`] of `compute` on `work`, then the output it writes (`kept`) passed
/// through `black_box`, so the compiler must keep the work that wrote it.
pub(crate) fn time_kept<W, T: ?Sized>(
    work: &mut W,
    iters: u64,
    mut compute: impl FnMut(&mut W),
    kept: impl FnOnce(&W) -> &T,
) -> Duration {
    let elapsed = time_calls(iters, || compute(work));
    std::hint::black_box(kept(work));
    elapsed
}

/// Worker threads: every CPU this process may run on.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The fields the families' modules (`family/`) read to size their axes and run their
/// kernels are crate-visible: how the CPU runs a family is said there, not here.
pub struct CpuBackend {
    device: DeviceInfo,
    pub(crate) llc_bytes: u64,
    pub(crate) l2_total_bytes: Option<u64>,
    pub(crate) pool: pool::StaticPool,
}

impl CpuBackend {
    /// The backend whose every workload runs on the calling thread: the pool has no worker
    /// ([`pool::StaticPool::inline`]) and GEMM gets one thread, so no rayon. Counting mode
    /// opens this one (the harness decides): Callgrind counts only the thread that entered
    /// the timed routine, so work on any other thread would be missing from the count.
    pub fn open_single_threaded() -> CpuBackend {
        let mut backend = Self::open_with(pool::StaticPool::inline());
        backend
            .device
            .properties
            .insert("threads".to_owned(), 1.into());
        backend
    }

    pub fn open() -> Result<CpuBackend, String> {
        let pool = pool::StaticPool::new(threads())
            .map_err(|e| format!("cannot start the CPU worker threads: {e}"))?;
        Ok(Self::open_with(pool))
    }

    fn open_with(pool: pool::StaticPool) -> CpuBackend {
        let mut notes = Vec::new();
        let cpu = CpuInfo::read(Path::new("/"), &mut notes);
        let l2_total_bytes = cpu
            .caches
            .iter()
            .find(|c| c.level == 2 && c.kind != "Instruction")
            .map(|l2| {
                let instances = match (l2.shared_by_cpus, cpu.logical_cpus) {
                    (Some(shared), Some(cpus)) if shared > 0 => cpus.div_ceil(shared),
                    _ => 1,
                };
                l2.size_bytes * instances as u64
            });
        CpuBackend {
            device: device_info(&cpu),
            llc_bytes: cpu.llc_bytes().unwrap_or(DEFAULT_LLC_BYTES),
            l2_total_bytes,
            pool,
        }
    }
}

/// Bandwidth sweep sizes (bytes per array) for a machine with these caches.
pub fn stream_sizes_for(suite: Suite, llc_bytes: u64, l2_total_bytes: Option<u64>) -> Vec<usize> {
    // At least 4x the LLC per array (STREAM's rule), a power of two, and at least
    // BabelStream's size so CPU and GPU figures share a point.
    let big = ((4 * llc_bytes) as usize)
        .next_power_of_two()
        .max(BABELSTREAM_BYTES);
    if suite.is_full() {
        return std::iter::successors(Some(SWEEP_START_BYTES), |&s| Some(s * 4))
            .take_while(|&s| s < big)
            .chain([big, 2 * big])
            .collect();
    }
    // In cache: three arrays in half the L2 of all cores together.
    let l2 = l2_total_bytes.unwrap_or(1 << 20) as usize;
    let in_cache = (l2 / 6).max(SWEEP_START_BYTES);
    let in_cache = 1usize << in_cache.ilog2();
    vec![in_cache, big]
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// The quick suite is the first result a new user waits for (issue 30: at most 120 s
    /// on a 2-core machine, about 60 CPU ids): 10 samples in 1 s after 0.3 s of warm-up,
    /// stretched for a call too long to fit ten (`harness`). The full suite is where the
    /// long, precise runs belong.
    fn sampling(&self, suite: Suite) -> SamplingProfile {
        match suite {
            Suite::Quick => SamplingProfile::new(10, 300, 1_000),
            Suite::Full => SamplingProfile::new(30, 1_000, 5_000),
        }
    }

    fn peer(&self) -> Peer<'_> {
        Peer::Cpu(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_reach_four_times_the_llc() {
        let quick = stream_sizes_for(Suite::Quick, 32 << 20, Some(2 << 20));
        assert_eq!(quick, vec![256 << 10, 256 << 20]);
        let big_llc = stream_sizes_for(Suite::Quick, 96 << 20, None);
        assert!(*big_llc.last().unwrap() as u64 >= 4 * (96 << 20));
        let full = stream_sizes_for(Suite::Full, 32 << 20, Some(2 << 20));
        assert_eq!(full[0], SWEEP_START_BYTES);
        assert!(full.windows(2).all(|w| w[0] < w[1]));
        assert!(*full.last().unwrap() >= 4 * (32 << 20));
    }

    #[test]
    fn probe_is_available() {
        assert!(probe().is_available());
    }
}
