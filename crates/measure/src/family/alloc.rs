//! Allocation: the cost of allocation and free through each backend's allocators, on
//! patterns that fragment. Ids `alloc/<allocator>/<pattern>/<size>`: `cpu` (the process's
//! malloc), `cuda` (`cuMemAlloc`), `cuda_async` (the stream-ordered pool), `rocm`
//! (`hipMalloc`). One iteration is one round of the pattern; the throughput is its
//! allocator calls. Patterns and sizes live in `workload::alloc`; torch's allocators run
//! through the Python worker (`components::alloc`), which the bench target adds after this.

use super::{Case, grid3};
use crate::backend::cpu::{CpuBackend, alloc::HostAllocWorkload};
use crate::backend::gpu::GpuBackend;
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::alloc::{self as patterns, AllocPattern};
use crate::workload::family;
use criterion::Throughput;

/// The allocation family (the native allocators; torch's are the bench target's addition).
pub struct Alloc;

/// What a backend does for the alloc family: its allocators and a timed pattern.
pub trait AllocBackend {
    /// The allocators the alloc family times on this backend, by id (`alloc/<id>/…`): the
    /// host's malloc; `cudaMalloc` and CUDA's stream-ordered pool; `hipMalloc`.
    fn allocators(&self) -> Vec<&'static str>;

    /// A pattern of allocations and frees through one of [`AllocBackend::allocators`].
    fn alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;
}

impl AllocBackend for CpuBackend {
    fn allocators(&self) -> Vec<&'static str> {
        vec![BackendKind::Cpu.id()]
    }

    fn alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        if allocator != BackendKind::Cpu.id() {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                format!("alloc {allocator}"),
                "the CPU backend times only the host's malloc",
            ));
        }
        Ok(Box::new(HostAllocWorkload::new(pattern, size)?))
    }
}

impl<T: GpuBackend + ?Sized> AllocBackend for T {
    fn allocators(&self) -> Vec<&'static str> {
        self.allocator_ids()
    }

    fn alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_alloc(allocator, pattern, size)
    }
}

on_every_peer!(Alloc, family::ALLOC, AllocBackend, |backend, on, suite| {
    let sizes = patterns::sizes(suite).iter().copied();
    Case::measure_each(
        backend.light_sampling(suite),
        grid3(on.allocators(), sizes, AllocPattern::ALL),
        |(allocator, size, pattern)| {
            let calls = Throughput::Elements(pattern.program(size).calls());
            (patterns::bench_id(allocator, pattern, size), calls)
        },
        move |(allocator, size, pattern)| on.alloc(allocator, pattern, size),
    )
});
