//! Memory bandwidth: the STREAM kernels (copy, scale, add, triad) plus a read (sum) and a
//! write (fill) over f64 arrays, per backend and array size, ids
//! `memory_bandwidth/<backend>/<kernel>/<bytes per array>` with bytes counted as STREAM
//! does; and on backends with their own memory the copies between host and device,
//! `memory_bandwidth/<backend>/{h2d,d2h}_{pinned,pageable}|d2d/<bytes>`. Sizes follow each
//! device's caches (`backend::cpu::stream_sizes_for`, `backend::gpu::stream::sizes`).

use super::{Case, grid};
use crate::backend::cpu::{CpuBackend, stream::CpuStream, stream_sizes_for};
use crate::backend::gpu::{GpuBackend, stream as gpu_stream};
use crate::backend::{Backend, BackendError, TimedWorkload};
use crate::workload::family;
use crate::workload::ids::format_bytes_id;
use crate::workload::transfer::TransferKind;
use crate::workload::{BenchId, StreamKernel, Suite, stream};
use criterion::Throughput;

/// The memory bandwidth family.
pub struct MemoryBandwidth;

/// What a backend does for memory bandwidth: its sweep, its kernels, and its copies.
pub trait BandwidthBackend {
    /// Bytes per array the bandwidth sweep covers in `suite` (device caches decide it).
    fn stream_sizes(&self, suite: Suite) -> Vec<usize>;

    /// A bandwidth kernel over f64 arrays of `bytes_per_array` bytes each.
    fn stream(
        &self,
        kernel: StreamKernel,
        bytes_per_array: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;

    /// Host↔device and device↔device copies this backend times, with their buffer size:
    /// none where the device's memory is the host's.
    fn transfers(&self, suite: Suite) -> Vec<(TransferKind, usize)> {
        let _ = suite;
        Vec::new()
    }

    fn transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;
}

/// The id of the quick suite's in-cache CPU triad on this machine
/// (`memory_bandwidth/cpu/triad/128KiB` where the cores' L2 totals 1 MiB). Its size follows
/// the L2, so a test or script that needs one short, real CPU benchmark asks for it here
/// instead of naming the size one machine happened to have.
pub fn cpu_in_cache_triad_id() -> Result<String, String> {
    let cpu = CpuBackend::open()?;
    let bytes = cpu
        .stream_sizes(Suite::Quick)
        .first()
        .copied()
        .ok_or("the CPU backend has no quick bandwidth sizes")?;
    Ok(stream::bench_id(cpu.kind().id(), StreamKernel::Triad, bytes).to_string())
}

impl BandwidthBackend for CpuBackend {
    fn stream_sizes(&self, suite: Suite) -> Vec<usize> {
        stream_sizes_for(suite, self.llc_bytes, self.l2_total_bytes)
    }

    fn stream(
        &self,
        kernel: StreamKernel,
        bytes_per_array: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let elements = bytes_per_array / std::mem::size_of::<f64>();
        Ok(Box::new(CpuStream::new(&self.pool, kernel, elements)?))
    }

    fn transfer(
        &self,
        kind: TransferKind,
        _bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Err(BackendError::unsupported(
            self.kind(),
            format!("transfer {kind}"),
            "a device with its own memory is needed",
        ))
    }
}

impl<T: GpuBackend + ?Sized> BandwidthBackend for T {
    fn stream_sizes(&self, suite: Suite) -> Vec<usize> {
        self.gpu_stream_sizes(suite)
    }

    fn stream(
        &self,
        kernel: StreamKernel,
        bytes_per_array: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        // The arrays are f64: eight bytes an element.
        let dev = self.as_gpu_device();
        Ok(Box::new(gpu_stream::GpuStreamKernel::new(
            dev,
            kernel,
            bytes_per_array / 8,
        )?))
    }

    fn transfers(&self, _suite: Suite) -> Vec<(TransferKind, usize)> {
        let bytes = self.gpu_transfer_bytes();
        TransferKind::ALL.into_iter().map(|k| (k, bytes)).collect()
    }

    fn transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_transfer(kind, bytes)
    }
}

on_every_peer!(
    MemoryBandwidth,
    family::MEMORY_BANDWIDTH,
    BandwidthBackend,
    |backend, on, suite| {
        let sampling = backend.sampling(suite);
        let backend_id = backend.kind().id();
        let mut cases = Case::measure_each(
            sampling,
            grid(on.stream_sizes(suite), StreamKernel::ALL),
            |(bytes, kernel)| {
                let id = stream::bench_id(backend_id, kernel, bytes);
                (id, Throughput::Bytes(kernel.bytes(bytes / 8, 8)))
            },
            move |(bytes, kernel)| on.stream(kernel, bytes),
        );
        cases.extend(Case::measure_each(
            sampling,
            on.transfers(suite),
            |(kind, bytes)| {
                let id = BenchId::new(
                    family::MEMORY_BANDWIDTH.name,
                    backend_id,
                    kind.id(),
                    format_bytes_id(bytes),
                );
                (id, Throughput::Bytes(kind.bytes(bytes)))
            },
            move |(kind, bytes)| on.transfer(kind, bytes),
        ));
        cases
    }
);
