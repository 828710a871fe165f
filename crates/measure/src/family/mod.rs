//! The native benchmark families, each in one place: a family's module owns its ids, its
//! axes per backend, its throughput and sampling, the combinations it skips with their
//! reasons, and how each backend opens its workload (the kernels stay in `backend/`). The
//! bench targets in `crates/benches` hand a family to [`crate::run`] and do nothing of
//! their own, so a new family is its module here, one line in [`FAMILIES`], its descriptor
//! in the model's table (`workload::family`, which the views read) and its bench target.
//!
//! Why a family says how each backend opens it, instead of the [`Backend`] trait carrying
//! one method per family: every backend is a peer of the same capability traits (one per
//! family: [`gemm::GemmBackend`], [`memory_bandwidth::BandwidthBackend`], ...), implemented
//! here for the CPU and once for every `GpuBackend`, so CUDA, ROCm and a later Vulkan
//! backend get each shared family without touching it, and the `Backend` trait keeps only
//! what every device has ([`Backend::peer`] hands a family the backend itself).
//!
//! The Python-worker targets (components, models, compile) are not families of this kind:
//! their ids come from what a worker or compiler reports at run time, not from axes known
//! before the run, so they keep their own loops in `components/`.

/// The [`BenchFamily`] of a family whose module states a capability trait every peer
/// implements and a generic `cases_on(backend, on, suite)`: the one match on
/// [`Backend::peer`] every such family needs, written once, so a new kind of peer is one arm
/// here rather than one in each family.
macro_rules! on_every_peer {
    ($family:ident, $descriptor:expr) => {
        impl $crate::family::BenchFamily for $family {
            fn family(&self) -> &'static $crate::workload::family::Family {
                &$descriptor
            }

            fn cases<'b>(
                &self,
                backend: &'b dyn $crate::backend::Backend,
                suite: $crate::workload::Suite,
            ) -> Vec<$crate::family::Case<'b>> {
                match backend.peer() {
                    $crate::backend::Peer::Cpu(cpu) => cases_on(backend, cpu, suite),
                    $crate::backend::Peer::Gpu(gpu) => cases_on(backend, gpu, suite),
                }
            }
        }
    };
}

pub mod alloc;
pub mod attention;
pub mod gemm;
pub mod memory_bandwidth;
pub mod tensor_ops;

pub use crate::backend::Peer;
use crate::backend::{Backend, BackendError, SamplingProfile, TimedWorkload};
use crate::workload::family::Family;
use crate::workload::{BenchId, Suite};
use criterion::Throughput;

/// One benchmark family a bench target runs on every backend it opens.
pub trait BenchFamily: Sync {
    /// The model's descriptor: its name is every id's first part and the bench target.
    fn family(&self) -> &'static Family;

    /// Every benchmark of the family on `backend` in `suite`, in the order they run:
    /// measured ones with their throughput, sampling and opener, and the combinations this
    /// backend cannot run as skips with their reason.
    ///
    /// The brief sketched a separate `open(backend, case)`; a case carries its opener
    /// instead, so the axes it was made from stay typed in the closure and no id is parsed
    /// back into a shape. The opener runs only when the filter keeps the id.
    fn cases<'b>(&self, backend: &'b dyn Backend, suite: Suite) -> Vec<Case<'b>>;
}

/// Prepares a case's workload with its inputs in place (called only for selected ids).
pub type Opener<'b> = Box<dyn FnOnce() -> Result<Box<dyn TimedWorkload + 'b>, BackendError> + 'b>;

/// One benchmark of a family on one backend.
pub struct Case<'b> {
    pub id: BenchId,
    pub plan: Plan<'b>,
}

/// Whether a case is timed or recorded as skipped.
pub enum Plan<'b> {
    Measure {
        throughput: Throughput,
        sampling: SamplingProfile,
        open: Opener<'b>,
    },
    Skip {
        reason: String,
    },
}

impl<'b> Case<'b> {
    pub fn measure(
        id: BenchId,
        throughput: Throughput,
        sampling: SamplingProfile,
        open: impl FnOnce() -> Result<Box<dyn TimedWorkload + 'b>, BackendError> + 'b,
    ) -> Case<'b> {
        Case {
            id,
            plan: Plan::Measure {
                throughput,
                sampling,
                open: Box::new(open),
            },
        }
    }

    pub fn skip(id: BenchId, reason: impl Into<String>) -> Case<'b> {
        Case {
            id,
            plan: Plan::Skip {
                reason: reason.into(),
            },
        }
    }
}

/// Every native family, in the order `run_benchmarks.sh` runs their targets: one line each.
pub const FAMILIES: &[&dyn BenchFamily] = &[
    &gemm::Gemm,
    &memory_bandwidth::MemoryBandwidth,
    &tensor_ops::TensorOps,
    &attention::Attention,
    &alloc::Alloc,
];

/// The registered family named `name` (an id's first part), if it is a native one.
pub fn by_name(name: &str) -> Option<&'static dyn BenchFamily> {
    FAMILIES.iter().copied().find(|f| f.family().name == name)
}

#[cfg(test)]
mod tests;
