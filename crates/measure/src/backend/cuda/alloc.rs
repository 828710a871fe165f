//! CUDA's device allocators for the alloc family: `cuMemAlloc`/`cuMemFree` (`alloc/cuda/…`)
//! and the stream-ordered pool, `cuMemAllocAsync`/`cuMemFreeAsync` on the device's default
//! pool (`alloc/cuda_async/…`), both through cudarc's driver bindings loaded at run time.
//! The rounds, checks and notes are [`crate::backend::gpu::alloc`]'s.
//!
//! The default pool is measured as the driver sets it up (release threshold 0: memory goes
//! back to the device at each synchronize, so the settle inside the timed window returns it);
//! the threshold read is kept in the notes. Its high-water marks (reserved, used) are reset
//! before the untimed round and read after it.

use super::CudaBackend;
use super::device::text;
use crate::backend::BackendKind;
use crate::backend::gpu::alloc::{DeviceAllocator, PoolPeaks};
use cudarc::driver::result;
use cudarc::driver::sys::{self, CUmemPool_attribute as PoolAttr};
use serde_json::Value;
use std::collections::BTreeMap;

/// The id of `cuMemAlloc`.
pub const RAW_ID: &str = "cuda";
/// The id of the stream-ordered pool.
pub const ASYNC_ID: &str = "cuda_async";

/// `cuMemAlloc_v2` / `cuMemFree_v2` in the backend's context.
pub struct RawAllocator<'b> {
    backend: &'b CudaBackend,
}

/// `cuMemAllocAsync` / `cuMemFreeAsync` on the backend's stream, from the default pool.
pub struct PoolAllocator<'b> {
    backend: &'b CudaBackend,
    pool: sys::CUmemoryPool,
}

impl<'b> RawAllocator<'b> {
    pub fn new(backend: &'b CudaBackend) -> Result<Self, String> {
        backend.ctx.bind_to_thread().map_err(text)?;
        Ok(RawAllocator { backend })
    }
}

impl<'b> PoolAllocator<'b> {
    /// The device's default pool; a device without stream-ordered allocation says so.
    pub fn new(backend: &'b CudaBackend) -> Result<Self, String> {
        backend.ctx.bind_to_thread().map_err(text)?;
        let supported = backend
            .ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
            .map_err(text)?;
        if supported == 0 {
            return Err("the device does not support stream-ordered memory pools".into());
        }
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: the context is current; `pool` receives a handle owned by the driver.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, backend.ctx.cu_device()) }
            .result()
            .map_err(text)?;
        Ok(PoolAllocator { backend, pool })
    }

    fn attribute(&self, attr: PoolAttr) -> Result<u64, String> {
        let mut value: u64 = 0;
        // SAFETY: these attributes are cuuint64_t; `value` outlives the call.
        unsafe { sys::cuMemPoolGetAttribute(self.pool, attr, (&mut value as *mut u64).cast()) }
            .result()
            .map_err(text)?;
        Ok(value)
    }

    fn reset(&self, attr: PoolAttr) -> Result<(), String> {
        let mut zero: u64 = 0;
        // SAFETY: the high-water attributes may only be set to 0, which this does.
        unsafe { sys::cuMemPoolSetAttribute(self.pool, attr, (&mut zero as *mut u64).cast()) }
            .result()
            .map_err(text)
    }
}

fn memory(backend: &CudaBackend) -> Result<(u64, u64), String> {
    let (free, total) = backend.ctx.mem_get_info().map_err(text)?;
    Ok((free as u64, total as u64))
}

fn roundtrip_byte(ptr: u64, offset: usize, value: u8) -> Result<u8, String> {
    let at = ptr + offset as u64;
    let mut back = [0u8; 1];
    // SAFETY: the caller passes a live block at least `offset + 1` bytes long.
    unsafe {
        result::memset_d8_sync(at, value, 1).map_err(text)?;
        result::memcpy_dtoh_sync(&mut back, at).map_err(text)?;
    }
    Ok(back[0])
}

impl DeviceAllocator for RawAllocator<'_> {
    fn backend(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn id(&self) -> &'static str {
        RAW_ID
    }
    fn describe(&self) -> String {
        "cuMemAlloc_v2 / cuMemFree_v2".into()
    }
    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        // SAFETY: the backend's context is current on this thread (bound in `new`).
        unsafe { result::malloc_sync(bytes) }.map_err(text)
    }
    fn free(&self, ptr: u64) -> Result<(), String> {
        // SAFETY: `ptr` came from cuMemAlloc and is freed once.
        unsafe { result::free_sync(ptr) }.map_err(text)
    }
    fn memory(&self) -> Result<(u64, u64), String> {
        memory(self.backend)
    }
    fn roundtrip_byte(&self, ptr: u64, offset: usize, value: u8) -> Result<u8, String> {
        roundtrip_byte(ptr, offset, value)
    }
}

impl DeviceAllocator for PoolAllocator<'_> {
    fn backend(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn id(&self) -> &'static str {
        ASYNC_ID
    }
    fn describe(&self) -> String {
        "cuMemAllocAsync / cuMemFreeAsync (the device's default pool)".into()
    }
    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        // SAFETY: the stream belongs to the backend's current context.
        unsafe { result::malloc_async(self.backend.stream.cu_stream(), bytes) }.map_err(text)
    }
    fn free(&self, ptr: u64) -> Result<(), String> {
        // SAFETY: `ptr` came from cuMemAllocAsync on this stream and is freed once.
        unsafe { result::free_async(ptr, self.backend.stream.cu_stream()) }.map_err(text)
    }
    fn settle(&self) -> Result<(), String> {
        self.backend.stream.synchronize().map_err(text)
    }
    fn memory(&self) -> Result<(u64, u64), String> {
        memory(self.backend)
    }
    fn roundtrip_byte(&self, ptr: u64, offset: usize, value: u8) -> Result<u8, String> {
        // The block's allocation is ordered on the stream: let it land first.
        self.settle()?;
        roundtrip_byte(ptr, offset, value)
    }
    fn reset_pool_peaks(&self) -> Result<bool, String> {
        self.reset(PoolAttr::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?;
        self.reset(PoolAttr::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?;
        Ok(true)
    }
    fn pool_peaks(&self) -> Result<Option<PoolPeaks>, String> {
        Ok(Some(PoolPeaks {
            reserved_bytes: self.attribute(PoolAttr::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
            used_bytes: self.attribute(PoolAttr::CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
        }))
    }
    fn facts(&self) -> BTreeMap<String, Value> {
        let mut facts = BTreeMap::new();
        match self.attribute(PoolAttr::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
            Ok(threshold) => facts.insert("pool_release_threshold_bytes".into(), threshold.into()),
            Err(error) => facts.insert(
                "pool_release_threshold_bytes".into(),
                format!("not read: {error}").into(),
            ),
        };
        facts
    }
}
