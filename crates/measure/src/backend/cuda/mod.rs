//! The CUDA backend: cuBLAS / cuBLASLt GEMMs, NVRTC-compiled bandwidth, tensor-op and
//! attention kernels, and host↔device copies, all timed with CUDA events.
//!
//! Everything CUDA is loaded at run time through cudarc's `dynamic-loading`, so one binary
//! runs on machines without a driver. cudarc panics when it loads a library that is not
//! there, so nothing here touches a library before [`libs::presence`] has found it, and
//! the probe runs under `catch_unwind` as a last guard: a driver too old for a symbol
//! becomes "unavailable" with the panic's message, not a crashed benchmark.

pub mod alloc;
pub mod compile;
pub mod device;
pub mod gemm;
pub mod gemm_int8;
pub mod kernels;
pub mod libs;
pub mod loader;
pub mod nvml;
pub mod ptxas;
pub mod transfer;

use super::gpu::alloc::DeviceAllocWorkload;
use super::gpu::library::{BuildFailure, Library};
use super::gpu::{Arg, BatchedGemm, GpuBackend, GpuDevice, GpuTimer, Grid, RawBuffer, open};
use super::{Availability, BackendError, BackendKind, DeviceInfo, TimedWorkload};
use crate::system::gpu_peaks;
use crate::workload::alloc::AllocPattern;
use crate::workload::transfer::TransferKind;
use crate::workload::{DType, GemmShape};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, result};
use device::{device_error, text};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// Environment variable choosing the device ordinal (default 0).
pub const DEVICE_ENV: &str = crate::system::nvml::CUDA_DEVICE_ENV;
/// Bytes zeroed before each sample to evict L2: 256 MiB covers every NVIDIA L2 and AMD's
/// 256 MiB Infinity Cache, as triton's do_bench and the MAMF finder do.
pub const L2_FLUSH_BYTES: usize = 256 << 20;

/// Probes for NVIDIA GPUs. Never panics: a missing driver, no device, or a panic inside
/// cudarc all become `Unavailable` with the reason.
pub fn probe() -> Availability {
    open::probe("the CUDA libraries failed while probing", probe_devices)
}

fn probe_devices() -> Result<Vec<DeviceInfo>, String> {
    let presence = libs::presence();
    if !presence.driver {
        return Err(libs::missing_driver_reason());
    }
    let count = CudaContext::device_count().map_err(|e| format!("cuInit failed: {e:?}"))?;
    if count <= 0 {
        return Err("the NVIDIA driver is installed but reports no CUDA device".into());
    }
    let libraries = libs::describe(presence);
    (0..count)
        .map(|ordinal| device_info(ordinal, &libraries))
        .collect()
}

/// Facts about one device read through driver attributes (no context needed).
struct DeviceFacts {
    name: String,
    compute_capability: (i32, i32),
    sm_count: i32,
    sm_clock_khz: i32,
    memory_clock_khz: i32,
    bus_width_bits: i32,
    l2_bytes: i32,
    memory_bytes: usize,
    pci_bus_id: String,
}

impl DeviceFacts {
    fn read(ordinal: i32) -> Result<DeviceFacts, String> {
        let dev = result::device::get(ordinal).map_err(text)?;
        // SAFETY: `dev` is a valid device handle from the driver.
        let attr = |a: Attr| unsafe { result::device::get_attribute(dev, a) }.map_err(text);
        let pci = format!(
            "{:08x}:{:02x}:{:02x}.0",
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        Ok(DeviceFacts {
            name: result::device::get_name(dev).map_err(text)?,
            compute_capability: (
                attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            sm_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?,
            memory_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?,
            bus_width_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            // SAFETY: as above.
            memory_bytes: unsafe { result::device::total_mem(dev) }.map_err(text)?,
            pci_bus_id: pci,
        })
    }

    /// DRAM bandwidth from the memory clock and bus width: two transfers per clock.
    fn peak_bandwidth(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * self.bus_width_bits as f64 / 8.0
    }
}

fn device_info(
    ordinal: i32,
    libraries: &BTreeMap<String, serde_json::Value>,
) -> Result<DeviceInfo, String> {
    let facts = DeviceFacts::read(ordinal)
        .map_err(|e| format!("reading device {ordinal}'s attributes: {e}"))?;
    let (major, minor) = facts.compute_capability;
    let mut p: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    p.insert("ordinal".into(), ordinal.into());
    p.insert(
        "compute_capability".into(),
        format!("{major}.{minor}").into(),
    );
    p.insert("sm_count".into(), facts.sm_count.into());
    p.insert(
        "sm_clock_max_mhz".into(),
        (facts.sm_clock_khz / 1000).into(),
    );
    p.insert(
        "memory_clock_mhz".into(),
        (facts.memory_clock_khz / 1000).into(),
    );
    p.insert("memory_bus_width_bits".into(), facts.bus_width_bits.into());
    p.insert("memory_bytes".into(), facts.memory_bytes.into());
    p.insert("l2_bytes".into(), facts.l2_bytes.into());
    p.insert("pci_bus_id".into(), facts.pci_bus_id.clone().into());
    if let Some(v) = libs::driver_version() {
        p.insert("driver_cuda_version".into(), v.into());
    }
    p.insert(
        "libraries".into(),
        serde_json::Value::Object(libraries.clone().into_iter().collect()),
    );
    let spec = gpu_peaks::GpuSpec {
        name: facts.name.clone(),
        vendor: gpu_peaks::Vendor::Nvidia,
        arch: format!("sm_{major}{minor}"),
        units: facts.sm_count as u32,
        clock_mhz: (facts.sm_clock_khz / 1000) as u32,
        measured_bandwidth_bytes_per_s: Some(facts.peak_bandwidth()),
        host_link: host_link(&facts.name, &facts.pci_bus_id, &mut p),
    };
    p.insert("peaks".into(), gpu_peaks::peaks_json(&spec));
    Ok(DeviceInfo {
        backend: BackendKind::Cuda,
        name: facts.name,
        properties: p,
    })
}

/// The device's host link for "% of peak" of host↔device copies; why not, in `properties`.
pub(crate) fn host_link(
    name: &str,
    pci_bus_id: &str,
    properties: &mut BTreeMap<String, serde_json::Value>,
) -> Option<(f64, String)> {
    match crate::system::pcie::host_link(name, pci_bus_id) {
        Ok(link) => Some((link.bytes_per_s, link.source)),
        Err(e) => {
            properties.insert("host_link_error".into(), e.to_string().into());
            None
        }
    }
}

/// An open CUDA device: context, one stream, library handles, compiled kernels.
pub struct CudaBackend {
    info: DeviceInfo,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) blas: Library<gemm::Blas>,
    pub(crate) lt: Library<gemm::BlasLt>,
    kernels: OnceLock<Library<kernels::Kernels>>,
    flush: device::DeviceBuffer<u8>,
    pub(crate) compute_capability: (i32, i32),
    pub(crate) sm_count: u32,
    l2_bytes: usize,
    memory_bytes: usize,
    nvml: Option<nvml::ClockReader>,
    /// What throttling is judged against (application clock, else maximum).
    pub(crate) reference_clock: Option<nvml::ReferenceClock>,
}

impl CudaBackend {
    /// Opens the device named by `STACKBENCH_CUDA_DEVICE` (default 0); the error is the
    /// reason the benchmarks are skipped.
    pub fn open() -> Result<CudaBackend, String> {
        let (ordinal, info) = open::select(probe(), DEVICE_ENV, "CUDA device")?;
        open::unpanicked("the CUDA libraries failed while opening", || {
            Self::open_device(ordinal, info)
        })
    }

    /// cuBLAS and cuBLASLt handles on the stream. A library that is not installed skips
    /// the GEMMs that need it; one whose handle cannot be created fails them (the other
    /// families still run).
    fn library_handles(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
    ) -> (Library<gemm::Blas>, Library<gemm::BlasLt>) {
        let presence = libs::presence();
        let found = |present: bool, name: &str| {
            present
                .then_some(())
                .ok_or_else(|| format!("{name} (lib{name}.so.12/.13) was not found"))
        };
        let blas = Library::build(found(presence.cublas, "cublas"), Ok(()), || {
            gemm::Blas::new(stream).map_err(|e| BuildFailure::new("cublasCreate", e.to_string()))
        });
        let lt = Library::build(found(presence.cublaslt, "cublasLt"), Ok(()), || {
            gemm::BlasLt::new(ctx, stream)
                .map_err(|e| BuildFailure::new("cublasLtCreate", e.to_string()))
        });
        (blas, lt)
    }

    fn open_device(ordinal: usize, info: DeviceInfo) -> Result<CudaBackend, String> {
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("creating a context: {e:?}"))?;
        // One stream, so cudarc's per-allocation event tracking only adds overhead to
        // tight loops (cudarc 0.19 records a read and a write event on every `CudaSlice`
        // use): turn it off before allocating anything.
        // SAFETY: nothing was allocated yet and all work goes to one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("creating a stream: {e:?}"))?;
        let (blas, lt) = Self::library_handles(&ctx, &stream);
        let prop = |key: &str| open::property_u64(&info, key);
        let (sm_count, l2_bytes, memory_bytes) = (
            prop("sm_count") as u32,
            prop("l2_bytes") as usize,
            prop("memory_bytes") as usize,
        );
        let nvml = info
            .properties
            .get("pci_bus_id")
            .and_then(|v| v.as_str())
            .and_then(|pci| nvml::ClockReader::open(pci).ok());
        let reference_clock = nvml.as_ref().and_then(|n| n.reference_clock());
        let cc = info
            .properties
            .get("compute_capability")
            .and_then(|v| v.as_str())
            .and_then(|s| s.split_once('.'))
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((0, 0));
        let flush =
            device::DeviceBuffer::zeroed_on(&stream, L2_FLUSH_BYTES).map_err(|e| e.to_string())?;
        Ok(CudaBackend {
            info,
            ctx,
            stream,
            blas,
            lt,
            kernels: OnceLock::new(),
            flush,
            compute_capability: cc,
            sm_count,
            l2_bytes,
            memory_bytes,
            nvml,
            reference_clock,
        })
    }

    /// The compiled kernels, compiled on first use (NVRTC takes a second or two).
    pub(crate) fn kernels(&self) -> Result<&kernels::Kernels, BackendError> {
        self.kernels
            .get_or_init(|| kernels::Kernels::compile(self))
            .get(BackendKind::Cuda, "NVRTC kernels")
    }

    /// Zeroes the flush buffer on the stream: evicts L2 before a sample, outside its events.
    pub(crate) fn flush_l2(&self) -> Result<(), BackendError> {
        // SAFETY: the buffer holds `bytes()` bytes and lives as long as the backend.
        unsafe {
            result::memset_d8_async(
                self.flush.ptr,
                0,
                self.flush.bytes(),
                self.stream.cu_stream(),
            )
        }
        .map_err(|e| device_error("flushing L2")(text(e)))
    }

    pub(crate) fn read_clock(&self) -> Option<nvml::ClockReading> {
        self.nvml.as_ref().and_then(|n| n.read())
    }

    pub(crate) fn synchronize(&self) -> Result<(), BackendError> {
        self.stream
            .synchronize()
            .map_err(|e| device_error("synchronizing")(text(e)))
    }

    /// Whether `bytes` more device memory leaves a margin of 10 % of the device.
    pub(crate) fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
        let budget = self.memory_bytes as u64 / 10 * 9;
        if bytes > budget.saturating_sub(L2_FLUSH_BYTES as u64) {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                what,
                format!(
                    "needs {:.1} GiB, more than this device's memory allows",
                    bytes as f64 / (1u64 << 30) as f64
                ),
            ));
        }
        Ok(())
    }

    fn require_blas(&self, what: &str) -> Result<&gemm::Blas, BackendError> {
        self.blas.get(BackendKind::Cuda, what)
    }
}

impl GpuBackend for CudaBackend {
    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    fn blas_dtypes(&self) -> Vec<DType> {
        let mut dtypes = vec![DType::F64, DType::F32, DType::Tf32, DType::F16, DType::Bf16];
        // FP8 tensor cores: Ada (8.9) and Hopper (9.0) on, through cuBLASLt.
        if self.compute_capability >= (8, 9) {
            dtypes.push(DType::Fp8E4m3);
            dtypes.push(DType::Fp8E5m2);
        }
        // INT8 always: a device without IMMA records a skip with its reason (ImmaGemm).
        dtypes.extend([DType::Int8, DType::Int8q]);
        dtypes
    }

    fn open_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.fits(shape.min_bytes(dtype) + shape.min_bytes(DType::F32), "gemm")?;
        if matches!(dtype, DType::Fp8E4m3 | DType::Fp8E5m2) {
            return Ok(Box::new(gemm::Fp8Gemm::new(self, shape, dtype)?));
        }
        if dtype.is_integer() {
            return Ok(Box::new(gemm_int8::ImmaGemm::new(self, shape, dtype)?));
        }
        let blas = self.require_blas(&format!("gemm {dtype}"))?;
        Ok(Box::new(gemm::CublasGemm::new(self, blas, shape, dtype)?))
    }

    fn open_transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(transfer::CudaTransfer::new(self, kind, bytes)?))
    }

    fn l2_bytes(&self) -> usize {
        self.l2_bytes
    }

    fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    fn allocator_ids(&self) -> Vec<&'static str> {
        vec![alloc::RAW_ID, alloc::ASYNC_ID]
    }

    fn open_alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let open = |made: Result<_, String>| {
            made.map_err(|message| BackendError::Device {
                backend: BackendKind::Cuda,
                context: format!("opening the {allocator} allocator"),
                message,
            })
        };
        let workload: Box<dyn TimedWorkload + '_> = match allocator {
            alloc::RAW_ID => Box::new(DeviceAllocWorkload::new(
                open(alloc::RawAllocator::new(self))?,
                pattern,
                size,
            )?),
            alloc::ASYNC_ID => {
                let pool = alloc::PoolAllocator::new(self).map_err(|reason| {
                    BackendError::unsupported(
                        BackendKind::Cuda,
                        format!("alloc {allocator}"),
                        reason,
                    )
                })?;
                Box::new(DeviceAllocWorkload::new(pool, pattern, size)?)
            }
            other => {
                return Err(BackendError::unsupported(
                    BackendKind::Cuda,
                    format!("alloc {other}"),
                    "not an allocator of the CUDA backend",
                ));
            }
        };
        Ok(workload)
    }
}

impl GpuDevice for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn units(&self) -> u32 {
        self.sm_count
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError> {
        let buffer = device::DeviceBuffer::<u8>::zeroed(self, bytes)?;
        Ok(RawBuffer::new(buffer.ptr, bytes, Box::new(buffer)))
    }

    fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError> {
        let buffer = device::DeviceBuffer::upload(self, bytes)?;
        Ok(RawBuffer::new(buffer.ptr, bytes.len(), Box::new(buffer)))
    }

    fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError> {
        let mut out = vec![0u8; buffer.bytes];
        // SAFETY: the buffer holds `bytes` bytes; the copy is waited for before returning.
        unsafe { result::memcpy_dtoh_async(&mut out, buffer.ptr, self.stream.cu_stream()) }
            .map_err(|e| device_error("download")(text(e)))?;
        self.synchronize()?;
        Ok(out)
    }

    fn launch(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError> {
        use cudarc::driver::{LaunchConfig, PushKernelArg};
        let function = self.kernels()?.get(name)?;
        let mut builder = self.stream.launch_builder(function);
        let config = open::vendor_launch!(builder, LaunchConfig, grid, args);
        // SAFETY: each kernel's parameters match `args` in order and type (kernels.rs);
        // pointers are device buffers the calling workload owns for its whole life.
        unsafe { builder.launch(config) }
            .map(|_| ())
            .map_err(|e| device_error(format!("launching {name}"))(text(e)))
    }

    fn batched_gemm(&self, g: &BatchedGemm) -> Result<(), BackendError> {
        use cudarc::cublas::{result as blas, sys as bsys};
        let handle = self.require_blas("batched gemm")?.handle;
        let data = match g.dtype {
            DType::F16 => bsys::cudaDataType::CUDA_R_16F,
            DType::Bf16 => bsys::cudaDataType::CUDA_R_16BF,
            _ => bsys::cudaDataType::CUDA_R_32F,
        };
        let op = |t: bool| {
            if t {
                bsys::cublasOperation_t::CUBLAS_OP_T
            } else {
                bsys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let zero = 0.0f32;
        // SAFETY: the caller's pointers hold `batch` matrices at the given strides and
        // leading dimensions, in `dtype`; the scalars outlive the call.
        unsafe {
            blas::gemm_strided_batched_ex(
                handle,
                op(g.transpose_a),
                op(false),
                g.m as i32,
                g.n as i32,
                g.k as i32,
                &g.alpha as *const f32 as *const std::ffi::c_void,
                g.a as *const std::ffi::c_void,
                data,
                g.lda as i32,
                g.stride_a as i64,
                g.b as *const std::ffi::c_void,
                data,
                g.ldb as i32,
                g.stride_b as i64,
                &zero as *const f32 as *const std::ffi::c_void,
                g.c as *mut std::ffi::c_void,
                data,
                g.ldc as i32,
                g.stride_c as i64,
                g.batch as i32,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| device_error("cublasGemmStridedBatchedEx")(text(e)))
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        CudaBackend::synchronize(self)
    }

    fn timer(&self, flush_cache: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError> {
        Ok(Box::new(device::DeviceTimer::new(self, flush_cache)?))
    }

    fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
        CudaBackend::fits(self, bytes, what)
    }

    fn free_memory(&self) -> Option<u64> {
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    }
}
