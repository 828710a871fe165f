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
/// implements, with its cases written once for any peer `on` of that trait:
///
/// ```ignore
/// on_every_peer!(Alloc, family::ALLOC, AllocBackend, |backend, on, suite| { ... });
/// ```
///
/// The body is not a closure: it becomes a function generic over the peer's type
/// (`on: &B` with `B: AllocBackend + ?Sized`, beside `backend: &dyn Backend` and `suite`),
/// which the one match on [`Backend::peer`] calls. A new kind of peer is one arm here
/// rather than one in each family, and no family restates that function's signature.
macro_rules! on_every_peer {
    ($family:ident, $descriptor:expr, $capability:path,
     |$backend:ident, $on:ident, $suite:ident| $body:expr) => {
        impl $crate::family::BenchFamily for $family {
            fn family(&self) -> &'static $crate::workload::family::Family {
                &$descriptor
            }

            fn cases<'b>(
                &self,
                backend: &'b dyn $crate::backend::Backend,
                suite: $crate::workload::Suite,
            ) -> Vec<$crate::family::Case<'b>> {
                fn cases_on<'b, B: $capability + ?Sized>(
                    $backend: &'b dyn $crate::backend::Backend,
                    $on: &'b B,
                    $suite: $crate::workload::Suite,
                ) -> Vec<$crate::family::Case<'b>> {
                    $body
                }
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
use crate::backend::gpu::GpuBackend;
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

    /// One measured case per point of a family's axes, in the points' order and all with
    /// `sampling`: the loop every family's `cases_on` would otherwise write around
    /// [`Case::measure`], so a family states only its points, what names and counts a point
    /// (`describe`: its id and throughput) and how a point opens.
    pub fn measure_each<P: Copy + 'b>(
        sampling: SamplingProfile,
        points: impl IntoIterator<Item = P>,
        describe: impl Fn(P) -> (BenchId, Throughput),
        open: impl Fn(P) -> Result<Box<dyn TimedWorkload + 'b>, BackendError> + Copy + 'b,
    ) -> Vec<Case<'b>> {
        points
            .into_iter()
            .map(|point| {
                let (id, throughput) = describe(point);
                Case::measure(id, throughput, sampling, move || open(point))
            })
            .collect()
    }
}

/// Every pair of two axes, `outer` major: the order a family's nested loops would give.
pub fn grid<A: Copy, B: Copy>(
    outer: impl IntoIterator<Item = A>,
    inner: impl IntoIterator<Item = B>,
) -> Vec<(A, B)> {
    let inner: Vec<B> = inner.into_iter().collect();
    let pairs = |a| inner.iter().map(move |&b| (a, b));
    outer.into_iter().flat_map(pairs).collect()
}

/// Every triple of three axes, the first the outermost (see [`grid`]).
pub fn grid3<A: Copy, B: Copy, C: Copy>(
    first: impl IntoIterator<Item = A>,
    second: impl IntoIterator<Item = B>,
    third: impl IntoIterator<Item = C>,
) -> Vec<(A, B, C)> {
    let triple = |((a, b), c)| (a, b, c);
    grid(grid(first, second), third)
        .into_iter()
        .map(triple)
        .collect()
}

/// Fails, with the backend's reason, where a GPU backend has no kernels for `family` (a
/// shader set or library it could not load), so the opener reports why the case is skipped
/// instead of each family asking [`GpuBackend::missing_family`] itself; `what` names the
/// case in that error.
fn gpu_has_family<T: GpuBackend + ?Sized>(
    gpu: &T,
    family: &Family,
    what: impl FnOnce() -> String,
) -> Result<(), BackendError> {
    match gpu.missing_family(family.name) {
        Some(reason) => Err(BackendError::unsupported(gpu.kind(), what(), reason)),
        None => Ok(()),
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
