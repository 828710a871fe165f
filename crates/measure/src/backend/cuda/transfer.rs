//! Copies between host and device (pageable and pinned) and within the device, timed with
//! events. No L2 flush: a 512 MiB copy never fits in L2. (The STREAM kernels are shared
//! with ROCm: `backend::gpu::stream`.)

use super::CudaBackend;
use super::device::{DeviceBuffer, DeviceTimer, PinnedBuffer, device_error, raw_stream, text};
use crate::backend::gpu::GpuTimer;
use crate::backend::gpu::checked::check_copy;
use crate::backend::{BackendError, TimedWorkload};
use crate::workload::transfer::{self, TransferKind};
use cudarc::driver::result;
use std::collections::BTreeMap;
use std::time::Duration;

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
    timer: Option<DeviceTimer<'a>>,
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
        check_copy("cuda", self.kind, &self.source, &got)
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

        let result = timer.time(iters, &mut || self.copy());
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
            timer.notes(&mut notes);
        }
        notes
    }
}
