//! The ROCm backend: HIP runtime and rocBLAS through `rocmrc`, loaded at run time, so the
//! default build needs no ROCm and the code compiles in CI.
//!
//! Why rocmrc: `rocblas-sys` does not exist on crates.io and `hip-sys` links libamdhip64 at
//! build time against HIP 5.x headers (its build script panics without them), which would
//! break the one-binary rule. rocmrc mirrors cudarc (raw FFI → checked results → safe
//! types) with `dynamic-loading`. Like cudarc it panics when a library is missing, so every
//! library is probed with `is_rocmlib_present` first and the probe runs under
//! `catch_unwind`.
//!
//! What runs here: GEMM through `rocblas_gemm_ex` (f64, f32, f16 and bf16 with f32
//! accumulation), host↔device / device↔device copies, and stackbench's own kernels
//! (STREAM, tensor ops, attention: `backend::gpu`) compiled by hipRTC for the device's gfx
//! architecture, all timed with HIP events after a 256 MiB flush (AMD's Infinity Cache is
//! up to 256 MiB). hipRTC compilation goes through rocmrc, which knows gfx942, gfx950,
//! gfx1100-1102 and gfx1200-1201; on other devices the kernel families are recorded as
//! skipped with that reason. FP8 GEMM (hipBLASLt) is not wired up yet.

use super::gpu::alloc::DeviceAllocWorkload;
use super::gpu::library::{BuildFailure, Library};
use super::gpu::{Arg, BatchedGemm, GpuBackend, GpuDevice, GpuTimer, Grid, RawBuffer, open};
use super::{Availability, BackendError, BackendKind, DeviceInfo, TimedWorkload};
use crate::workload::alloc::AllocPattern;
use crate::workload::transfer::TransferKind;
use crate::workload::{DType, GemmShape};
use rocmrc::hip::result as hip;
use rocmrc::hip::safe::{DevicePtr, HipContext, HipEvent, HipSlice, HipStream};
use rocmrc::rocblas::result as rb;
use rocmrc::rocblas::sys as rbsys;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod alloc;
pub mod compile;
mod device;
mod gemm;
mod gemm_int8;
mod kernels;
mod libs;
mod transfer;

use device::{RocmTimer, device_error, device_info};
use gemm::RocBlas;
pub use gemm::RocblasGemm;
use kernels::RocmKernels;
use libs::describe_libraries;
pub use libs::{Presence, missing_hip_reason, presence};
pub use transfer::RocmTransfer;

/// Bytes zeroed before each sample: AMD's Infinity Cache (MALL) is up to 256 MiB.
pub const CACHE_FLUSH_BYTES: usize = 256 << 20;
/// Environment variable choosing the device ordinal (default 0).
pub const DEVICE_ENV: &str = crate::system::telemetry::amdgpu::ROCM_DEVICE_ENV;

/// Probes for AMD GPUs. Never panics.
pub fn probe() -> Availability {
    open::probe("the ROCm libraries failed while probing", probe_devices)
}

fn probe_devices() -> Result<Vec<DeviceInfo>, String> {
    let presence = presence();
    if !presence.hip {
        return Err(missing_hip_reason());
    }
    hip::init().map_err(|e| format!("hipInit failed: {e:?}"))?;
    let count = HipContext::device_count().map_err(|e| format!("hipGetDeviceCount: {e:?}"))?;
    if count <= 0 {
        return Err("the HIP runtime is installed but reports no AMD GPU".into());
    }
    let libraries = describe_libraries(presence);
    (0..count).map(|o| device_info(o, &libraries)).collect()
}

pub struct RocmBackend {
    info: DeviceInfo,
    ctx: Arc<HipContext>,
    stream: Arc<HipStream>,
    blas: Library<RocBlas>,
    flush: HipSlice<u8>,
    memory_bytes: usize,
    l2_bytes: usize,
    units: u32,
    kernels: OnceLock<Library<RocmKernels>>,
}

impl RocmBackend {
    pub fn open() -> Result<RocmBackend, String> {
        let (ordinal, info) = open::select(probe(), DEVICE_ENV, "AMD GPU")?;
        open::unpanicked("the ROCm libraries failed while opening the device", || {
            Self::open_device(ordinal, info)
        })
    }

    fn open_device(ordinal: usize, info: DeviceInfo) -> Result<RocmBackend, String> {
        let ctx = HipContext::new(ordinal).map_err(|e| format!("hip context: {e:?}"))?;
        // SAFETY: nothing allocated yet; one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(|e| format!("hip stream: {e:?}"))?;
        let found = if presence().rocblas {
            Ok(())
        } else {
            Err("rocBLAS (librocblas.so) was not found".to_owned())
        };
        // A rocBLAS that loads and then fails is a failure of the GEMMs only.
        let blas = Library::build(found, Ok(()), || {
            let handle = rb::create_handle()
                .map_err(|e| BuildFailure::new("rocblas_create_handle", format!("{e:?}")))?;
            let blas = RocBlas(handle);
            // SAFETY: live handle and stream.
            unsafe { rb::set_stream(handle, stream.hip_stream() as rbsys::hipStream_t) }
                .map_err(|e| BuildFailure::new("rocblas_set_stream", format!("{e:?}")))?;
            Ok(blas)
        });
        let flush = stream
            .alloc_zeros::<u8>(CACHE_FLUSH_BYTES)
            .map_err(|e| format!("allocating the cache flush buffer: {e:?}"))?;
        let prop = |key: &str| open::property_u64(&info, key);
        let (memory_bytes, l2_bytes, units) = (
            prop("memory_bytes") as usize,
            prop("l2_bytes") as usize,
            prop("compute_units") as u32,
        );
        Ok(RocmBackend {
            info,
            ctx,
            stream,
            blas,
            flush,
            memory_bytes,
            l2_bytes,
            units,
            kernels: OnceLock::new(),
        })
    }

    fn ptr<T>(&self, slice: &HipSlice<T>) -> u64 {
        let (ptr, _no_sync) = slice.device_ptr(&self.stream);
        ptr as u64
    }

    /// Flushes the caches, then times `iters` calls of `launch` between two HIP events.
    fn time(
        &self,
        flush: bool,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        let event = || {
            self.ctx
                .new_event(Some(0))
                .map_err(|e| device_error("hipEventCreate", e))
        };
        let (start, end): (HipEvent, HipEvent) = (event()?, event()?);
        if flush {
            // SAFETY: the flush buffer holds CACHE_FLUSH_BYTES bytes.
            unsafe {
                hip::memset_d8_async(
                    self.ptr(&self.flush),
                    0,
                    CACHE_FLUSH_BYTES,
                    self.stream.hip_stream(),
                )
            }
            .map_err(|e| device_error("flushing caches", e))?;
        }
        start
            .record(&self.stream)
            .map_err(|e| device_error("hipEventRecord", e))?;
        for _ in 0..iters {
            launch()?;
        }
        end.record(&self.stream)
            .map_err(|e| device_error("hipEventRecord", e))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| device_error("hipEventElapsedTime", e))?;
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }

    fn sync(&self) -> Result<(), BackendError> {
        self.stream
            .synchronize()
            .map_err(|e| device_error("hipStreamSynchronize", e))
    }

    fn upload<T: rocmrc::hip::safe::DeviceRepr>(
        &self,
        host: &[T],
    ) -> Result<HipSlice<T>, BackendError> {
        let slice = self
            .stream
            .clone_htod(host)
            .map_err(|e| device_error("upload", e))?;
        self.sync()?;
        Ok(slice)
    }
}

impl GpuBackend for RocmBackend {
    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    fn blas_dtypes(&self) -> Vec<DType> {
        vec![
            DType::F64,
            DType::F32,
            DType::F16,
            DType::Bf16,
            DType::Int8,
            DType::Int8q,
        ]
    }

    fn open_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let needed = shape.min_bytes(dtype) + shape.min_bytes(DType::F32);
        if self.memory_bytes > 0 && needed > self.memory_bytes as u64 / 10 * 8 {
            return Err(BackendError::unsupported(
                BackendKind::Rocm,
                format!("gemm {dtype} {shape}"),
                "does not fit in device memory",
            ));
        }
        if dtype.is_integer() {
            return Ok(Box::new(gemm_int8::RocblasInt8Gemm::new(
                self, shape, dtype,
            )?));
        }
        Ok(Box::new(RocblasGemm::new(self, shape, dtype)?))
    }

    fn open_transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(RocmTransfer::new(self, kind, bytes)?))
    }

    fn l2_bytes(&self) -> usize {
        self.l2_bytes
    }

    fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    fn allocator_ids(&self) -> Vec<&'static str> {
        vec![alloc::RAW_ID]
    }

    fn open_alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        if allocator != alloc::RAW_ID {
            return Err(BackendError::unsupported(
                BackendKind::Rocm,
                format!("alloc {allocator}"),
                "not an allocator of the ROCm backend",
            ));
        }
        let raw = alloc::RawAllocator::new(self).map_err(|message| BackendError::Device {
            backend: BackendKind::Rocm,
            context: format!("opening the {allocator} allocator"),
            message,
        })?;
        Ok(Box::new(DeviceAllocWorkload::new(raw, pattern, size)?))
    }
}

impl GpuDevice for RocmBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Rocm
    }

    fn units(&self) -> u32 {
        self.units
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError> {
        let slice = self
            .stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(|e| device_error(format!("allocating {bytes} bytes"), e))?;
        Ok(RawBuffer::new(self.ptr(&slice), bytes, Box::new(slice)))
    }

    fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError> {
        let slice = self.upload(bytes)?;
        Ok(RawBuffer::new(
            self.ptr(&slice),
            bytes.len(),
            Box::new(slice),
        ))
    }

    fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError> {
        let mut out = vec![0u8; buffer.bytes];
        // SAFETY: the buffer holds `bytes` bytes; the copy is waited for below.
        unsafe { hip::memcpy_dtoh_async(&mut out, buffer.ptr, self.stream.hip_stream()) }
            .map_err(|e| device_error("download", e))?;
        self.sync()?;
        Ok(out)
    }

    fn launch(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError> {
        use rocmrc::hip::safe::{LaunchConfig, PushKernelArg};
        let kernels = self
            .kernels
            .get_or_init(|| RocmKernels::compile(self))
            .get(BackendKind::Rocm, "hipRTC kernels")?;
        let function = kernels.loaded.get(BackendKind::Rocm, "hipRTC", name)?;
        let mut builder = self.stream.launch_builder(function);
        let config = open::vendor_launch!(builder, LaunchConfig, grid, args);
        // SAFETY: each kernel's parameters match `args` in order and type (kernels.rs).
        unsafe { builder.launch(config) }
            .map(|_| ())
            .map_err(|e| device_error(format!("launching {name}"), e))
    }

    fn batched_gemm(&self, g: &BatchedGemm) -> Result<(), BackendError> {
        use rbsys::rocblas_datatype as D;
        let blas = self.blas.get(BackendKind::Rocm, "batched gemm")?;
        let data = match g.dtype {
            DType::F16 => D::rocblas_datatype_f16_r,
            DType::Bf16 => D::rocblas_datatype_bf16_r,
            _ => D::rocblas_datatype_f32_r,
        };
        let op = |t: bool| {
            if t {
                rbsys::rocblas_operation::rocblas_operation_transpose
            } else {
                rbsys::rocblas_operation::rocblas_operation_none
            }
        };
        let zero = 0.0f32;
        // SAFETY: the caller's pointers hold `batch` matrices at the given strides and
        // leading dimensions; C is also D (in place); the scalars outlive the call.
        let status = unsafe {
            rbsys::rocblas_gemm_strided_batched_ex(
                blas.0,
                op(g.transpose_a),
                op(false),
                g.m as i32,
                g.n as i32,
                g.k as i32,
                &g.alpha as *const f32 as *const c_void,
                g.a as *const c_void,
                data,
                g.lda as i32,
                g.stride_a as i64,
                g.b as *const c_void,
                data,
                g.ldb as i32,
                g.stride_b as i64,
                &zero as *const f32 as *const c_void,
                g.c as *const c_void,
                data,
                g.ldc as i32,
                g.stride_c as i64,
                g.c as *mut c_void,
                data,
                g.ldc as i32,
                g.stride_c as i64,
                g.batch as i32,
                D::rocblas_datatype_f32_r,
                rbsys::rocblas_gemm_algo::rocblas_gemm_algo_standard,
                0,
                0,
            )
        };
        gemm::status_result(status, || "rocblas_gemm_strided_batched_ex".into())
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        self.sync()
    }

    fn timer(&self, flush_cache: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError> {
        Ok(Box::new(RocmTimer {
            dev: self,
            flush: flush_cache,
        }))
    }

    fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
        let budget = (self.memory_bytes as u64 / 10 * 9).saturating_sub(CACHE_FLUSH_BYTES as u64);
        if self.memory_bytes > 0 && bytes > budget {
            return Err(BackendError::unsupported(
                BackendKind::Rocm,
                what,
                "does not fit in device memory",
            ));
        }
        Ok(())
    }

    fn free_memory(&self) -> Option<u64> {
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_without_rocm_is_a_reason_not_a_panic() {
        match probe() {
            Availability::Unavailable { reason } => assert!(!reason.is_empty()),
            Availability::Available { devices } => assert!(!devices.is_empty()),
        }
        if !presence().hip {
            let err = RocmBackend::open().err().unwrap();
            assert!(err.contains("libamdhip64"), "{err}");
        }
    }
}
