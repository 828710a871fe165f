//! ROCm's device allocator for the alloc family: `hipMalloc`/`hipFree` (`alloc/rocm/…`),
//! through rocmrc loaded at run time. The rounds, checks and notes are
//! [`crate::backend::gpu::alloc`]'s.

use super::RocmBackend;
use crate::backend::BackendKind;
use crate::backend::gpu::alloc::DeviceAllocator;
use rocmrc::hip::result as hip;

/// The id of `hipMalloc`.
pub const RAW_ID: &str = "rocm";

fn text(error: hip::HipError) -> String {
    format!("{error:?}")
}

/// `hipMalloc` / `hipFree` on the backend's device.
pub struct RawAllocator<'b> {
    backend: &'b RocmBackend,
}

impl<'b> RawAllocator<'b> {
    pub fn new(backend: &'b RocmBackend) -> Result<Self, String> {
        backend.ctx.bind_to_thread().map_err(text)?;
        Ok(RawAllocator { backend })
    }
}

impl DeviceAllocator for RawAllocator<'_> {
    fn backend(&self) -> BackendKind {
        BackendKind::Rocm
    }
    fn id(&self) -> &'static str {
        RAW_ID
    }
    fn describe(&self) -> String {
        "hipMalloc / hipFree".into()
    }
    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        hip::malloc_sync(bytes).map_err(text)
    }
    fn free(&self, ptr: u64) -> Result<(), String> {
        hip::free_sync(ptr).map_err(text)
    }
    fn memory(&self) -> Result<(u64, u64), String> {
        self.backend.ctx.bind_to_thread().map_err(text)?;
        let (free, total) = hip::mem_get_info().map_err(text)?;
        Ok((free as u64, total as u64))
    }
    fn roundtrip_byte(&self, ptr: u64, offset: usize, value: u8) -> Result<u8, String> {
        let at = ptr + offset as u64;
        let mut back = [0u8; 1];
        // SAFETY: the caller passes a live block at least `offset + 1` bytes long.
        unsafe {
            hip::memset_d8_sync(at, value, 1).map_err(text)?;
            hip::memcpy_dtoh_sync(&mut back, at).map_err(text)?;
        }
        Ok(back[0])
    }
}
