//! Host↔device and device↔device copies through HIP, from pinned (`hipHostMalloc`) and
//! pageable host memory, checked byte for byte before they are timed.

use crate::backend::gpu::checked::check_copy;
use crate::backend::{BackendError, TimedWorkload};
use crate::workload::transfer::{self, TransferKind};
use rocmrc::hip::result as hip;
use rocmrc::hip::safe::HipSlice;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::Duration;

use super::RocmBackend;
use super::device::device_error;

/// Page-locked host memory from `hipHostMalloc` (flags 0); freed without panicking.
pub(super) struct PinnedHost {
    ptr: *mut u8,
    len: usize,
}

impl PinnedHost {
    fn new(len: usize) -> Result<Self, BackendError> {
        let ptr = hip::malloc_host(len.max(1), 0).map_err(|e| device_error("hipHostMalloc", e))?
            as *mut u8;
        // SAFETY: `len` bytes were allocated; zeroing makes them initialised.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(PinnedHost { ptr, len })
    }

    fn slice(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes (zeroed in `new`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedHost {
    fn drop(&mut self) {
        let _ = hip::free_host(self.ptr as *mut c_void);
    }
}

pub struct RocmTransfer<'a> {
    dev: &'a RocmBackend,
    kind: TransferKind,
    pinned: Option<PinnedHost>,
    pageable: Vec<u8>,
    device: HipSlice<u8>,
    device_dst: Option<HipSlice<u8>>,
    source: Vec<u8>,
}

impl<'a> RocmTransfer<'a> {
    pub(super) fn new(
        dev: &'a RocmBackend,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Self, BackendError> {
        let source = transfer::random_bytes(0x7A45_0001, bytes);
        let h2d = matches!(kind, TransferKind::H2dPinned | TransferKind::H2dPageable);
        let mut pinned = if kind.is_pinned() {
            Some(PinnedHost::new(bytes)?)
        } else {
            None
        };
        let mut pageable = if kind.is_pinned() {
            Vec::new()
        } else {
            vec![0u8; bytes]
        };
        if h2d {
            match &mut pinned {
                Some(p) => p.slice_mut().copy_from_slice(&source),
                None => pageable.copy_from_slice(&source),
            }
        }
        let device = if h2d {
            dev.stream
                .alloc_zeros::<u8>(bytes)
                .map_err(|e| device_error("hipMalloc", e))?
        } else {
            dev.upload(&source)?
        };
        let device_dst = match kind {
            TransferKind::D2d => Some(
                dev.stream
                    .alloc_zeros::<u8>(bytes)
                    .map_err(|e| device_error("hipMalloc", e))?,
            ),
            _ => None,
        };
        Ok(RocmTransfer {
            dev,
            kind,
            pinned,
            pageable,
            device,
            device_dst,
            source,
        })
    }

    fn copy(&mut self) -> Result<(), BackendError> {
        let stream = self.dev.stream.hip_stream();
        let dptr = self.dev.ptr(&self.device);
        let host: &mut [u8] = match &mut self.pinned {
            Some(p) => p.slice_mut(),
            None => &mut self.pageable,
        };
        // SAFETY: both sides hold the same number of bytes and live until the timer syncs.
        let result = unsafe {
            match self.kind {
                TransferKind::H2dPinned | TransferKind::H2dPageable => {
                    hip::memcpy_htod_async(dptr, host, stream)
                }
                TransferKind::D2hPinned | TransferKind::D2hPageable => {
                    hip::memcpy_dtoh_async(host, dptr, stream)
                }
                TransferKind::D2d => {
                    let dst = self.device_dst.as_ref().map_or(0, |d| self.dev.ptr(d));
                    hip::memcpy_dtod_async(dst, dptr, self.source.len(), stream)
                }
            }
        };
        result.map_err(|e| device_error(format!("copy {}", self.kind), e))
    }

    fn check(&self) -> Result<(), BackendError> {
        let s = &self.dev.stream;
        let got = match self.kind {
            TransferKind::H2dPinned | TransferKind::H2dPageable => s
                .clone_dtoh(&self.device)
                .map_err(|e| device_error("download", e))?,
            TransferKind::D2d => match &self.device_dst {
                Some(d) => s.clone_dtoh(d).map_err(|e| device_error("download", e))?,
                None => Vec::new(),
            },
            _ => match &self.pinned {
                Some(p) => p.slice().to_vec(),
                None => self.pageable.clone(),
            },
        };
        check_copy("rocm", self.kind, &self.source, &got)
    }
}

impl TimedWorkload for RocmTransfer<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.copy()?;
        self.dev.sync()?;
        self.check()
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let dev = self.dev;
        dev.time(false, iters, &mut || self.copy())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            ("bytes_per_copy".to_owned(), self.source.len().into()),
            ("timing".to_owned(), "HIP events".into()),
        ])
    }
}
