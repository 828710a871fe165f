//! Memory bandwidth on NVIDIA GPUs: the STREAM kernels (copy, scale, add, triad, read,
//! write) over f64 arrays in device memory, and copies between host and device (pageable
//! and pinned) and within the device. Both are timed with events; the kernels have L2
//! flushed before each sample, the copies (which never fit in L2) do not.

use super::CudaBackend;
use super::device::{DeviceBuffer, DeviceTimer, PinnedBuffer, device_error, raw_stream, text};
use super::kernels::{BLOCK, grid_stride};
use crate::backend::{BackendError, TimedWorkload};
use crate::workload::stream::{self, FILL, INIT_A, INIT_B, INIT_C, SCALAR, StreamKernel};
use crate::workload::transfer::{self, TransferKind};
use crate::workload::{Suite, ids::format_bytes_id};
use cudarc::driver::{LaunchConfig, PushKernelArg, result};
use std::collections::BTreeMap;
use std::time::Duration;

/// Kernel arguments of the types stackbench's kernels take.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Ptr(u64),
    U64(u64),
    I32(i32),
    F32(f32),
    F64(f64),
}

/// Launches kernel `name` from the compiled module on the backend's stream.
pub fn launch(
    dev: &CudaBackend,
    name: &str,
    config: LaunchConfig,
    args: &[Arg],
) -> Result<(), BackendError> {
    let function = dev.kernels()?.get(name)?;
    let mut builder = dev.stream.launch_builder(function);
    for arg in args {
        match arg {
            Arg::Ptr(v) | Arg::U64(v) => builder.arg(v),
            Arg::I32(v) => builder.arg(v),
            Arg::F32(v) => builder.arg(v),
            Arg::F64(v) => builder.arg(v),
        };
    }
    // SAFETY: each kernel's parameters match `args` in order and type (see kernels.rs);
    // pointers are device buffers owned by the calling workload for its whole life.
    unsafe { builder.launch(config) }
        .map(|_| ())
        .map_err(|e| device_error(format!("launching {name}"))(text(e)))
}

/// Bytes per array of the sweep: 4× L2 at least (STREAM's rule), 1 GiB in the quick suite
/// (BabelStream's 2^25 f64 is 256 MiB; 1 GiB is past every L2 and matches the id),
/// and from 1 MiB up in the full one. Sizes that do not fit three times are dropped.
pub fn sizes(suite: Suite, l2_bytes: usize, memory_bytes: usize) -> Vec<usize> {
    let big = (4 * l2_bytes).next_power_of_two().max(1 << 30);
    let candidates: Vec<usize> = if suite.is_full() {
        std::iter::successors(Some(1usize << 20), |&s| Some(s * 4))
            .take_while(|&s| s < big)
            .chain([big, 2 * big])
            .collect()
    } else {
        vec![big]
    };
    candidates
        .into_iter()
        .filter(|&s| memory_bytes == 0 || 3 * s < memory_bytes / 10 * 8)
        .collect()
}

pub struct CudaStreamKernel<'a> {
    dev: &'a CudaBackend,
    kernel: StreamKernel,
    n: usize,
    a: DeviceBuffer<f64>,
    b: DeviceBuffer<f64>,
    c: DeviceBuffer<f64>,
    partial: DeviceBuffer<f64>,
    timer: DeviceTimer,
}

impl<'a> CudaStreamKernel<'a> {
    pub fn new(dev: &'a CudaBackend, kernel: StreamKernel, n: usize) -> Result<Self, BackendError> {
        let partial_len = grid_stride(n as u64 / 2, dev.sm_count).grid_dim.0 as usize;
        let w = CudaStreamKernel {
            dev,
            kernel,
            n,
            a: DeviceBuffer::zeroed(dev, n)?,
            b: DeviceBuffer::zeroed(dev, n)?,
            c: DeviceBuffer::zeroed(dev, n)?,
            partial: DeviceBuffer::zeroed(dev, partial_len)?,
            timer: DeviceTimer::new(dev, true)?,
        };
        for (buffer, value) in [(&w.a, INIT_A), (&w.b, INIT_B), (&w.c, INIT_C)] {
            w.fill(buffer, value)?;
        }
        Ok(w)
    }

    fn fill(&self, buffer: &DeviceBuffer<f64>, value: f64) -> Result<(), BackendError> {
        let n = self.n as u64;
        launch(
            self.dev,
            "stream_fill",
            grid_stride(n, self.dev.sm_count),
            &[Arg::Ptr(buffer.ptr), Arg::F64(value), Arg::U64(n)],
        )
    }

    fn pass(&self, kernel: StreamKernel) -> Result<(), BackendError> {
        let n = self.n as u64;
        let (a, b, c) = (
            Arg::Ptr(self.a.ptr),
            Arg::Ptr(self.b.ptr),
            Arg::Ptr(self.c.ptr),
        );
        let (s, len) = (Arg::F64(SCALAR), Arg::U64(n));
        let config = grid_stride(n / 2, self.dev.sm_count);
        match kernel {
            StreamKernel::Copy => launch(self.dev, "stream_copy", config, &[a, c, len]),
            StreamKernel::Scale => launch(self.dev, "stream_scale", config, &[b, c, s, len]),
            StreamKernel::Add => launch(self.dev, "stream_add", config, &[a, b, c, len]),
            StreamKernel::Triad => launch(self.dev, "stream_triad", config, &[a, b, c, s, len]),
            StreamKernel::Read => {
                let partial = Arg::Ptr(self.partial.ptr);
                launch(self.dev, "stream_read", config, &[a, partial, len])
            }
            StreamKernel::Write => {
                launch(self.dev, "stream_write", config, &[a, Arg::F64(FILL), len])
            }
        }
    }

    /// The arrays (and the read kernel's sum) against STREAM's scalar recurrence.
    fn check(&self, kernel: Option<StreamKernel>) -> Result<(), BackendError> {
        let mismatch = |detail: String| BackendError::Mismatch {
            benchmark: format!(
                "memory_bandwidth/cuda/{}/{}",
                self.kernel.id(),
                format_bytes_id(self.n * 8)
            ),
            detail,
        };
        let round = stream::expected_after_rounds(1);
        let (ea, eb, ec) = kernel.map_or(round, |k| stream::expected_after_kernel(k, round));
        for (name, buffer, want) in [("a", &self.a, ea), ("b", &self.b, eb), ("c", &self.c, ec)] {
            stream::check_array(name, &buffer.download(self.dev)?, want).map_err(mismatch)?;
        }
        if kernel == Some(StreamKernel::Read) {
            let got: f64 = self.partial.download(self.dev)?.iter().sum();
            let want = stream::expected_sum(ea, self.n);
            if (got - want).abs() > 1e-12 * want.abs() {
                return Err(mismatch(format!("sum is {got}, expected {want}")));
            }
        }
        Ok(())
    }
}

impl TimedWorkload for CudaStreamKernel<'_> {
    /// STREAM's check, as on the CPU: a = 2a, one round of the four kernels, every element
    /// against the recurrence; then this benchmark's kernel (idempotent from there).
    fn verify(&mut self) -> Result<(), BackendError> {
        let n = self.n as u64;
        launch(
            self.dev,
            "stream_scale_in_place",
            grid_stride(n, self.dev.sm_count),
            &[Arg::Ptr(self.a.ptr), Arg::F64(2.0), Arg::U64(n)],
        )?;
        for kernel in [
            StreamKernel::Copy,
            StreamKernel::Scale,
            StreamKernel::Add,
            StreamKernel::Triad,
        ] {
            self.pass(kernel)?;
        }
        self.dev.synchronize()?;
        self.check(None)?;
        self.pass(self.kernel)?;
        self.dev.synchronize()?;
        self.check(Some(self.kernel))
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(self.dev, iters, || self.pass(self.kernel))
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("elements_per_array".into(), self.n.into());
        notes.insert("threads_per_block".into(), BLOCK.into());
        notes.insert(
            "check_after_timing".into(),
            match self.check(Some(self.kernel)) {
                Ok(()) => "passed".into(),
                Err(e) => e.to_string().into(),
            },
        );
        self.timer.notes(self.dev, &mut notes);
        notes
    }
}

/// The host side of a transfer.
enum HostBuffer {
    Pinned(PinnedBuffer),
    Pageable(Vec<u8>),
}

impl HostBuffer {
    fn bytes(&self) -> &[u8] {
        match self {
            HostBuffer::Pinned(p) => p.as_slice(),
            HostBuffer::Pageable(v) => v,
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            HostBuffer::Pinned(p) => p.as_mut_slice(),
            HostBuffer::Pageable(v) => v,
        }
    }
}

pub struct CudaTransfer<'a> {
    dev: &'a CudaBackend,
    kind: TransferKind,
    host: HostBuffer,
    device: DeviceBuffer<u8>,
    /// Second device buffer of a device-to-device copy.
    device_dst: Option<DeviceBuffer<u8>>,
    source: Vec<u8>,
    /// Taken out while timing: the copy closure borrows the rest of `self` mutably.
    timer: Option<DeviceTimer>,
}

impl<'a> CudaTransfer<'a> {
    pub fn new(
        dev: &'a CudaBackend,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Self, BackendError> {
        dev.fits(2 * bytes as u64, kind.id())?;
        let source = transfer::random_bytes(0x7A45_0001, bytes);
        let mut host = if kind.is_pinned() {
            HostBuffer::Pinned(PinnedBuffer::new(bytes)?)
        } else {
            HostBuffer::Pageable(vec![0u8; bytes])
        };
        let h2d = matches!(kind, TransferKind::H2dPinned | TransferKind::H2dPageable);
        let device = if h2d {
            host.bytes_mut().copy_from_slice(&source);
            DeviceBuffer::zeroed(dev, bytes)?
        } else {
            DeviceBuffer::upload(dev, &source)?
        };
        let device_dst = match kind {
            TransferKind::D2d => Some(DeviceBuffer::zeroed(dev, bytes)?),
            _ => None,
        };
        Ok(CudaTransfer {
            dev,
            kind,
            host,
            device,
            device_dst,
            source,
            timer: Some(DeviceTimer::new(dev, false)?),
        })
    }

    /// Enqueues one copy. Raw driver calls: cudarc's safe copies synchronise around
    /// pageable buffers, which would put host waits inside the timed window.
    fn copy(&mut self) -> Result<(), BackendError> {
        let stream = raw_stream(self.dev);
        let len = self.device.bytes();
        // SAFETY: both sides hold `len` bytes and outlive the stream's use of them (the
        // timer synchronises before `run` returns).
        let status = unsafe {
            match self.kind {
                TransferKind::H2dPinned | TransferKind::H2dPageable => {
                    result::memcpy_htod_async(self.device.ptr, self.host.bytes(), stream)
                }
                TransferKind::D2hPinned | TransferKind::D2hPageable => {
                    result::memcpy_dtoh_async(self.host.bytes_mut(), self.device.ptr, stream)
                }
                TransferKind::D2d => {
                    let dst = self.device_dst.as_ref().map_or(0, |d| d.ptr);
                    result::memcpy_dtod_async(dst, self.device.ptr, len, stream)
                }
            }
        };
        status.map_err(|e| device_error(format!("copy {}", self.kind))(text(e)))
    }

    /// The destination holds the source's bytes at every checked position.
    fn check(&self) -> Result<(), BackendError> {
        let got = match self.kind {
            TransferKind::H2dPinned | TransferKind::H2dPageable => {
                self.device.download(self.dev)?
            }
            TransferKind::D2hPinned | TransferKind::D2hPageable => self.host.bytes().to_vec(),
            TransferKind::D2d => match &self.device_dst {
                Some(d) => d.download(self.dev)?,
                None => Vec::new(),
            },
        };
        let bad = transfer::check_positions(self.source.len())
            .into_iter()
            .find(|&i| got.get(i) != self.source.get(i));
        match bad {
            None => Ok(()),
            Some(i) => Err(BackendError::Mismatch {
                benchmark: format!(
                    "memory_bandwidth/cuda/{}/{}",
                    self.kind,
                    format_bytes_id(self.source.len())
                ),
                detail: format!("byte {i} differs after the copy"),
            }),
        }
    }
}

impl TimedWorkload for CudaTransfer<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.copy()?;
        self.dev.synchronize()?;
        self.check()
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let timer = match self.timer.take() {
            Some(timer) => timer,
            None => DeviceTimer::new(self.dev, false)?,
        };
        let dev = self.dev;
        let result = timer.time(dev, iters, || self.copy());
        self.timer = Some(timer);
        result
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("bytes_per_copy".into(), self.source.len().into());
        notes.insert(
            "host_memory".into(),
            if self.kind.is_pinned() {
                "page-locked, cuMemHostAlloc flags 0 (cacheable)"
            } else {
                "pageable (Vec)"
            }
            .into(),
        );
        if let Some(timer) = &self.timer {
            timer.notes(self.dev, &mut notes);
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_pass_four_times_l2_and_fit_in_memory() {
        let quick = sizes(Suite::Quick, 50 << 20, 80 << 30);
        assert_eq!(quick, vec![1 << 30]);
        let full = sizes(Suite::Full, 50 << 20, 80 << 30);
        assert_eq!(full[0], 1 << 20);
        assert!(full.contains(&(2 << 30)));
        // A small card drops what does not fit three times.
        let small = sizes(Suite::Full, 4 << 20, 4 << 30);
        assert!(small.iter().all(|&s| 3 * s < (4usize << 30) / 10 * 8));
    }
}
