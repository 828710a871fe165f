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

use super::gpu::library::{BuildFailure, Library};
use super::gpu::{self, Arg, BatchedGemm, GpuDevice, GpuTimer, Grid, RawBuffer};
use super::{
    Availability, Backend, BackendError, BackendKind, DeviceInfo, SamplingProfile, TimedWorkload,
};
use crate::backend::cuda::loader::symbol_origin;
use crate::system::gpu_peaks;
use crate::workload::StreamKernel;
use crate::workload::attention::{AttentionKernel, AttentionShape};
use crate::workload::gemm::{bench_id as gemm_id, check_positions, check_product};
use crate::workload::random::normal_f64;
use crate::workload::tensor_ops::{TensorOp, TensorShape};
use crate::workload::transfer::{self, TRANSFER_BYTES, TransferKind};
use crate::workload::{DType, GemmShape, Suite, ids::format_bytes_id};
use half::{bf16, f16};
use rocmrc::hip::result as hip;
use rocmrc::hip::safe::{DevicePtr, HipContext, HipEvent, HipSlice, HipStream};
use rocmrc::hip::safe::{HipFunction, HipModule};
use rocmrc::hip::sys::hipDeviceAttribute_t as Attr;
use rocmrc::rocblas::result as rb;
use rocmrc::rocblas::sys as rbsys;
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Bytes zeroed before each sample: AMD's Infinity Cache (MALL) is up to 256 MiB.
pub const CACHE_FLUSH_BYTES: usize = 256 << 20;
/// Environment variable choosing the device ordinal (default 0).
pub const DEVICE_ENV: &str = "STACKBENCH_ROCM_DEVICE";

/// Probes for AMD GPUs. Never panics.
pub fn probe() -> Availability {
    match std::panic::catch_unwind(probe_devices) {
        Ok(Ok(devices)) => Availability::Available { devices },
        Ok(Err(reason)) => Availability::Unavailable { reason },
        Err(_) => Availability::Unavailable {
            reason: "the ROCm libraries failed while probing (a missing symbol or library)".into(),
        },
    }
}

/// Which ROCm libraries rocmrc can load here.
#[derive(Clone, Copy, Debug)]
pub struct Presence {
    pub hip: bool,
    pub rocblas: bool,
}

pub fn presence() -> Presence {
    // SAFETY: each only tries dlopen on rocmrc's candidate names.
    unsafe {
        Presence {
            hip: rocmrc::hip::sys::is_rocmlib_present(),
            rocblas: rocmrc::rocblas::sys::is_rocmlib_present(),
        }
    }
}

/// The reason given when the HIP runtime is missing.
pub fn missing_hip_reason() -> String {
    format!(
        "libamdhip64.so (the HIP runtime) was not found under {} or on the loader path: \
         ROCm is not installed (set ROCM_PATH if it is elsewhere)",
        std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into())
    )
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

/// Versions and files of the loaded ROCm libraries.
fn describe_libraries(presence: Presence) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    let mut version = 0i32;
    // SAFETY: HIP is present; each call writes one int.
    let (runtime, driver) = unsafe {
        let r = rocmrc::hip::sys::hipRuntimeGetVersion(&mut version);
        let runtime = (r == rocmrc::hip::sys::hipError_t::hipSuccess).then_some(version);
        let d = rocmrc::hip::sys::hipDriverGetVersion(&mut version);
        let driver = (d == rocmrc::hip::sys::hipError_t::hipSuccess).then_some(version);
        (runtime, driver)
    };
    // SAFETY: HIP is present; the symbol is used only as an address.
    let hip_path = unsafe {
        rocmrc::hip::sys::rocmlib()
            .get::<*const c_void>(b"hipInit\0")
            .ok()
            .and_then(|s| symbol_origin(*s))
    };
    out.insert(
        "hip".into(),
        serde_json::json!({
            "runtime_version": runtime,
            "driver_version": driver,
            "path": hip_path.map(|p| p.display().to_string()),
        }),
    );
    if presence.rocblas {
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: rocBLAS is present; the buffer is NUL-terminated by the call or zeroed.
        let text = unsafe {
            rbsys::rocblas_get_version_string(buf.as_mut_ptr(), buf.len());
            std::ffi::CStr::from_ptr(buf.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: as above.
        let path = unsafe {
            rbsys::rocmlib()
                .get::<*const c_void>(b"rocblas_create_handle\0")
                .ok()
                .and_then(|s| symbol_origin(*s))
        };
        out.insert(
            "rocblas".into(),
            serde_json::json!({"version": text, "path": path.map(|p| p.display().to_string())}),
        );
    }
    out
}

fn device_info(
    ordinal: i32,
    libraries: &BTreeMap<String, serde_json::Value>,
) -> Result<DeviceInfo, String> {
    let text = |e: rocmrc::hip::result::HipError| format!("device {ordinal}: {e:?}");
    let dev = hip::device::get(ordinal).map_err(text)?;
    let attr = |a: Attr| hip::device::get_attribute(dev, a).map_err(text);
    let name = hip::device::get_name(dev).map_err(text)?;
    let ctx = HipContext::new(ordinal as usize).map_err(text)?;
    let arch = ctx.gfx_arch().unwrap_or_else(|_| "unknown".into());
    let units = attr(Attr::hipDeviceAttributeMultiprocessorCount)?;
    let clock_khz = attr(Attr::hipDeviceAttributeClockRate)?;
    let memory_khz = attr(Attr::hipDeviceAttributeMemoryClockRate)?;
    let bus_bits = attr(Attr::hipDeviceAttributeMemoryBusWidth)?;
    let bandwidth = 2.0 * memory_khz as f64 * 1e3 * bus_bits as f64 / 8.0;
    let pci = format!(
        "{:04x}:{:02x}:{:02x}.0",
        attr(Attr::hipDeviceAttributePciDomainId)?,
        attr(Attr::hipDeviceAttributePciBusId)?,
        attr(Attr::hipDeviceAttributePciDeviceId)?
    );
    let mut p = BTreeMap::new();
    p.insert("ordinal".into(), ordinal.into());
    p.insert("gfx_arch".into(), arch.clone().into());
    p.insert("pci_bus_id".into(), pci.clone().into());
    p.insert("compute_units".into(), units.into());
    p.insert("sm_clock_max_mhz".into(), (clock_khz / 1000).into());
    p.insert("memory_clock_mhz".into(), (memory_khz / 1000).into());
    p.insert("memory_bus_width_bits".into(), bus_bits.into());
    p.insert(
        "l2_bytes".into(),
        attr(Attr::hipDeviceAttributeL2CacheSize)?.into(),
    );
    p.insert(
        "memory_bytes".into(),
        hip::device::total_mem(dev).map_err(text)?.into(),
    );
    p.insert(
        "libraries".into(),
        serde_json::Value::Object(libraries.clone().into_iter().collect()),
    );
    let spec = gpu_peaks::GpuSpec {
        name: name.clone(),
        vendor: gpu_peaks::Vendor::Amd,
        arch,
        units: units as u32,
        clock_mhz: (clock_khz / 1000) as u32,
        measured_bandwidth_bytes_per_s: Some(bandwidth),
        host_link: crate::backend::cuda::host_link(&name, &pci, &mut p),
    };
    p.insert("peaks".into(), gpu_peaks::peaks_json(&spec));
    Ok(DeviceInfo {
        backend: BackendKind::Rocm,
        name,
        properties: p,
    })
}

fn device_error(context: impl Into<String>, e: impl std::fmt::Debug) -> BackendError {
    BackendError::Device {
        backend: BackendKind::Rocm,
        context: context.into(),
        message: format!("{e:?}"),
    }
}

/// A rocBLAS handle; dropping it never panics.
struct RocBlas(rbsys::rocblas_handle);

impl Drop for RocBlas {
    fn drop(&mut self) {
        // SAFETY: created in `open`, destroyed once.
        let _ = unsafe { rb::destroy_handle(self.0) };
    }
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

/// stackbench's kernels compiled by hipRTC for this device, by name.
struct RocmKernels {
    _module: Arc<HipModule>,
    functions: HashMap<String, HipFunction>,
}

impl RocmKernels {
    /// Missing hipRTC or an architecture rocmrc cannot target is a skip; a failure to read
    /// the arch, compile or load is a failure with hipRTC's log.
    fn compile(dev: &RocmBackend) -> Library<RocmKernels> {
        use rocmrc::hiprtc::GfxVersion;
        // SAFETY: only tries dlopen on rocmrc's candidate names.
        let present = if unsafe { rocmrc::hiprtc::sys::is_rocmlib_present() } {
            Ok(())
        } else {
            Err("hipRTC (libhiprtc.so) was not found".to_owned())
        };
        if let Err(reason) = present {
            return Library::Missing(reason);
        }
        let arch = match dev.ctx.gfx_arch() {
            Ok(arch) => arch,
            Err(e) => return Library::Broken(format!("reading the gfx arch: {e:?}")),
        };
        let gfx: Result<GfxVersion, String> = arch.parse().map_err(|e: String| {
            format!("{e}: rocmrc's hipRTC path knows gfx942, gfx950, gfx110x and gfx120x")
        });
        let supported = gfx.as_ref().map(|_| ()).map_err(String::clone);
        Library::build(Ok(()), supported, || match gfx {
            Ok(gfx) => Self::build(dev, &arch, gfx),
            Err(reason) => Err(BuildFailure::new("hipRTC target", reason)),
        })
    }

    fn build(
        dev: &RocmBackend,
        arch: &str,
        gfx: rocmrc::hiprtc::GfxVersion,
    ) -> Result<RocmKernels, BuildFailure> {
        use rocmrc::hiprtc::{CompileError, CompileOptions, compile_hsaco_with_opts};
        let options = CompileOptions {
            opt_level: Some(3),
            options: vec!["-std=c++17".into()],
            ..Default::default()
        };
        let hsaco = compile_hsaco_with_opts(
            gpu::kernels::source(gpu::kernels::Platform::Hip),
            gfx,
            options,
        )
        .map_err(|e| {
            let message = match &e {
                CompileError::CompileError { hiprtc, log, .. } => {
                    format!("{hiprtc:?}\n{}", log.to_string_lossy())
                }
                other => format!("{other:?}"),
            };
            BuildFailure::new(format!("hipRTC compiling the kernels for {arch}"), message)
        })?;
        let module = dev.ctx.load_module(hsaco).map_err(|e| {
            BuildFailure::new(format!("loading the {arch} module"), format!("{e:?}"))
        })?;
        let mut functions = HashMap::new();
        for name in gpu::kernels::kernel_names() {
            let f = module.load_function(&name).map_err(|e| {
                BuildFailure::new(
                    format!("kernel {name} missing from the module"),
                    format!("{e:?}"),
                )
            })?;
            functions.insert(name, f);
        }
        Ok(RocmKernels {
            _module: module,
            functions,
        })
    }
}

impl RocmBackend {
    pub fn open() -> Result<RocmBackend, String> {
        let devices = match probe() {
            Availability::Available { devices } => devices,
            Availability::Unavailable { reason } => return Err(reason),
        };
        let ordinal = match std::env::var(DEVICE_ENV) {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{DEVICE_ENV}={v} is not a device number"))?,
            Err(_) => 0,
        };
        let info = devices
            .into_iter()
            .nth(ordinal)
            .ok_or_else(|| format!("{DEVICE_ENV}={ordinal}: no such AMD GPU"))?;
        std::panic::catch_unwind(|| Self::open_device(ordinal, info))
            .map_err(|_| "the ROCm libraries failed while opening the device".to_owned())?
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
        let prop = |key: &str| {
            info.properties
                .get(key)
                .and_then(|v| v.as_u64())
                .unwrap_or(0)
        };
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

impl Backend for RocmBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Rocm
    }

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn sampling(&self, suite: Suite) -> SamplingProfile {
        SamplingProfile::gpu(suite)
    }

    fn gemm_dtypes(&self) -> Vec<DType> {
        vec![DType::F64, DType::F32, DType::F16, DType::Bf16]
    }

    fn gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        crate::workload::gemm::gpu_shapes(suite)
    }

    fn gemm(
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
        Ok(Box::new(RocblasGemm::new(self, shape, dtype)?))
    }

    fn stream_sizes(&self, suite: Suite) -> Vec<usize> {
        gpu::stream::sizes(suite, self.l2_bytes, self.memory_bytes)
    }

    fn stream(
        &self,
        kernel: StreamKernel,
        bytes_per_array: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(gpu::stream::GpuStreamKernel::new(
            self,
            kernel,
            bytes_per_array / 8,
        )?))
    }

    fn tensor_dtypes(&self) -> Vec<DType> {
        gpu::axes::tensor_dtypes()
    }

    fn tensor_shapes(&self, suite: Suite) -> Vec<TensorShape> {
        gpu::axes::tensor_shapes(suite)
    }

    fn tensor_op(
        &self,
        op: TensorOp,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        gpu::tensor_ops::open(self, op, dtype, shape)
    }

    fn attention_dtypes(&self) -> Vec<DType> {
        gpu::axes::attention_dtypes()
    }

    fn attention_shapes(&self, suite: Suite) -> Vec<AttentionShape> {
        gpu::axes::attention_shapes(suite)
    }

    fn attention(
        &self,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        gpu::attention::open(self, kernel, shape, dtype)
    }

    fn transfers(&self, _suite: Suite) -> Vec<(TransferKind, usize)> {
        TransferKind::ALL
            .into_iter()
            .map(|k| (k, TRANSFER_BYTES))
            .collect()
    }

    fn transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(RocmTransfer::new(self, kind, bytes)?))
    }
}

/// HIP-event timing for the shared workloads.
struct RocmTimer<'a> {
    dev: &'a RocmBackend,
    flush: bool,
}

impl GpuTimer for RocmTimer<'_> {
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        self.dev.time(self.flush, iters, launch)
    }

    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
        out.insert("timing".into(), "HIP events".into());
        out.insert("cache_flushed_before_each_sample".into(), self.flush.into());
        out.insert(
            "sm_clock".into(),
            "not read on ROCm (no SMI binding yet)".into(),
        );
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
        // A name the source does not define is stackbench's bug: a failure.
        let function = kernels.functions.get(name).ok_or_else(|| {
            device_error(
                format!("launching {name}"),
                "no such kernel in stackbench's source",
            )
        })?;
        let mut builder = self.stream.launch_builder(function);
        for arg in args {
            match arg {
                Arg::Ptr(v) | Arg::U64(v) => builder.arg(v),
                Arg::I32(v) => builder.arg(v),
                Arg::F32(v) => builder.arg(v),
                Arg::F64(v) => builder.arg(v),
            };
        }
        let config = LaunchConfig {
            grid_dim: grid.blocks,
            block_dim: (grid.threads, 1, 1),
            shared_mem_bytes: 0,
        };
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
        if status == rbsys::rocblas_status::rocblas_status_success {
            Ok(())
        } else {
            Err(device_error("rocblas_gemm_strided_batched_ex", status))
        }
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

enum Operands {
    F64([HipSlice<f64>; 3]),
    F32([HipSlice<f32>; 3]),
    F16([HipSlice<f16>; 3]),
    Bf16([HipSlice<bf16>; 3]),
}

/// C = A·B row-major through rocBLAS (column-major): Cᵀ = Bᵀ·Aᵀ, B passed first.
pub struct RocblasGemm<'a> {
    dev: &'a RocmBackend,
    shape: GemmShape,
    dtype: DType,
    operands: Operands,
    a: Vec<f64>,
    b: Vec<f64>,
    worst_error: Option<f64>,
}

impl<'a> RocblasGemm<'a> {
    fn new(dev: &'a RocmBackend, shape: GemmShape, dtype: DType) -> Result<Self, BackendError> {
        dev.blas.get(BackendKind::Rocm, &format!("gemm {dtype}"))?;
        let GemmShape { m, n, k } = shape;
        let a64 = normal_f64(0x0C0D_A00A, m * k);
        let b64 = normal_f64(0x0C0D_A00B, k * n);
        macro_rules! three {
            ($variant:ident, $to:expr, $back:expr, $zero:expr) => {{
                let a: Vec<_> = a64.iter().map(|&v| $to(v)).collect();
                let b: Vec<_> = b64.iter().map(|&v| $to(v)).collect();
                let ra = a.iter().map(|&v| $back(v)).collect();
                let rb = b.iter().map(|&v| $back(v)).collect();
                let c = vec![$zero; m * n];
                let ops = [dev.upload(&a)?, dev.upload(&b)?, dev.upload(&c)?];
                (Operands::$variant(ops), ra, rb)
            }};
        }
        let (operands, a, b) = match dtype {
            DType::F64 => three!(F64, |v: f64| v, |v: f64| v, 0.0f64),
            DType::F32 => three!(F32, |v: f64| v as f32, |v: f32| v as f64, 0.0f32),
            DType::F16 => three!(F16, f16::from_f64, |v: f16| v.to_f64(), f16::ZERO),
            DType::Bf16 => three!(Bf16, bf16::from_f64, |v: bf16| v.to_f64(), bf16::ZERO),
            _ => {
                return Err(BackendError::unsupported(
                    BackendKind::Rocm,
                    format!("gemm {dtype}"),
                    "the ROCm backend runs f64, f32, f16 and bf16 GEMMs",
                ));
            }
        };
        Ok(RocblasGemm {
            dev,
            shape,
            dtype,
            operands,
            a,
            b,
            worst_error: None,
        })
    }

    fn pointers(&self) -> [u64; 3] {
        let d = self.dev;
        match &self.operands {
            Operands::F64(s) => s.each_ref().map(|x| d.ptr(x)),
            Operands::F32(s) => s.each_ref().map(|x| d.ptr(x)),
            Operands::F16(s) => s.each_ref().map(|x| d.ptr(x)),
            Operands::Bf16(s) => s.each_ref().map(|x| d.ptr(x)),
        }
    }

    /// Storage and compute types: f16 and bf16 accumulate in f32.
    fn types(&self) -> (rbsys::rocblas_datatype, rbsys::rocblas_datatype) {
        use rbsys::rocblas_datatype as D;
        match self.dtype {
            DType::F64 => (D::rocblas_datatype_f64_r, D::rocblas_datatype_f64_r),
            DType::F16 => (D::rocblas_datatype_f16_r, D::rocblas_datatype_f32_r),
            DType::Bf16 => (D::rocblas_datatype_bf16_r, D::rocblas_datatype_f32_r),
            _ => (D::rocblas_datatype_f32_r, D::rocblas_datatype_f32_r),
        }
    }

    fn launch(&self) -> Result<(), BackendError> {
        let handle = self.dev.blas.ready().map_or(std::ptr::null_mut(), |b| b.0);
        let GemmShape { m, n, k } = self.shape;
        let ([a, b, c], (data, compute)) = (self.pointers(), self.types());
        let (one64, zero64, one32, zero32) = (1.0f64, 0.0f64, 1.0f32, 0.0f32);
        let (alpha, beta): (*const c_void, *const c_void) = if self.dtype == DType::F64 {
            (&one64 as *const f64 as _, &zero64 as *const f64 as _)
        } else {
            (&one32 as *const f32 as _, &zero32 as *const f32 as _)
        };
        let op = rbsys::rocblas_operation::rocblas_operation_none;
        // SAFETY: buffers hold M·K, K·N and M·N elements of `data`; C is also D (in place).
        let status = unsafe {
            rbsys::rocblas_gemm_ex(
                handle,
                op,
                op,
                n as i32,
                m as i32,
                k as i32,
                alpha,
                b as *const c_void,
                data,
                n as i32,
                a as *const c_void,
                data,
                k as i32,
                beta,
                c as *const c_void,
                data,
                n as i32,
                c as *mut c_void,
                data,
                n as i32,
                compute,
                rbsys::rocblas_gemm_algo::rocblas_gemm_algo_standard,
                0,
                0,
            )
        };
        if status == rbsys::rocblas_status::rocblas_status_success {
            Ok(())
        } else {
            Err(device_error(
                format!("rocblas_gemm_ex {} {}", self.dtype, self.shape),
                status,
            ))
        }
    }

    fn result(&self) -> Result<Vec<f64>, BackendError> {
        let s = &self.dev.stream;
        let e = |e| device_error("download", e);
        Ok(match &self.operands {
            Operands::F64([_, _, c]) => s.clone_dtoh(c).map_err(e)?,
            Operands::F32([_, _, c]) => s
                .clone_dtoh(c)
                .map_err(e)?
                .into_iter()
                .map(|v| v as f64)
                .collect(),
            Operands::F16([_, _, c]) => s
                .clone_dtoh(c)
                .map_err(e)?
                .into_iter()
                .map(|v| v.to_f64())
                .collect(),
            Operands::Bf16([_, _, c]) => s
                .clone_dtoh(c)
                .map_err(e)?
                .into_iter()
                .map(|v| v.to_f64())
                .collect(),
        })
    }
}

impl TimedWorkload for RocblasGemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        self.dev.sync()?;
        let c = self.result()?;
        let positions = check_positions(self.shape, 512, 0x0C0D);
        let n = self.shape.n;
        let worst = check_product(
            self.shape,
            self.dtype,
            &self.a,
            &self.b,
            |i, j| c[i * n + j],
            &positions,
        )
        .map_err(|detail| {
            BackendError::mismatch(&gemm_id("rocm", self.dtype, self.shape), detail)
        })?;
        self.worst_error = Some(worst);
        self.a = Vec::new();
        self.b = Vec::new();
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.dev.time(true, iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("library".into(), "rocBLAS rocblas_gemm_ex".into());
        notes.insert("timing".into(), "HIP events".into());
        notes.insert("cache_flushed_before_each_sample".into(), true.into());
        if let Some(w) = self.worst_error {
            notes.insert("worst_scaled_error".into(), w.into());
        }
        notes
    }
}

/// Page-locked host memory from `hipHostMalloc` (flags 0); freed without panicking.
struct PinnedHost {
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
    fn new(dev: &'a RocmBackend, kind: TransferKind, bytes: usize) -> Result<Self, BackendError> {
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
        match transfer::check_positions(self.source.len())
            .into_iter()
            .find(|&i| got.get(i) != self.source.get(i))
        {
            None => Ok(()),
            Some(i) => Err(BackendError::Mismatch {
                benchmark: format!(
                    "memory_bandwidth/rocm/{}/{}",
                    self.kind,
                    format_bytes_id(self.source.len())
                ),
                detail: format!("byte {i} differs after the copy"),
            }),
        }
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
