//! Vulkan compute through ash, the loader (`libvulkan.so.1`, or `$STACKBENCH_VULKAN_LIBRARY`)
//! loaded at run time: any GPU with a Vulkan 1.2 driver (Intel, AMD without ROCm, NVIDIA
//! through its Vulkan driver) and Mesa's lavapipe, a CPU that Vulkan presents as a device.
//!
//! The backend is a [`GpuBackend`]: the shared workloads (`backend/gpu/`) launch kernels by
//! name with buffer and scalar arguments, and this module runs the ones it has as WGSL
//! compiled to SPIR-V when the crate builds (`shaders/`, `build.rs`): buffers become
//! storage-buffer bindings in argument order, scalars the push constants. A kernel it has
//! no shader for is a recorded skip naming it ("not implemented on vulkan yet") instead of
//! timing anything else; today every kernel the shared GEMM, STREAM, tensor-op and
//! attention workloads launch has one, in f32, f16 and bf16 (16-bit values two to a u32
//! word, arithmetic in f32).
//!
//! Timing: timestamp queries around the `iters` dispatches recorded into one command
//! buffer (Criterion's `iter_custom` contract, as CUDA's events), with a 256 MiB buffer
//! overwritten before the first timestamp where the workload asks for a cache flush
//! (Vulkan does not report the L2 size; 256 MiB is past every L2 and Infinity Cache).

pub mod context;
pub mod gemm;
pub mod peak;
pub mod select;
pub mod transfer;

use self::context::{Context, Memory, OwnedBuffer};
use self::select::DeviceType;
use crate::backend::gpu::{
    Arg, BatchedGemm, GpuBackend, GpuDevice, GpuTimer, Grid, RawBuffer, stream as gpu_stream,
};
use crate::backend::{Availability, BackendError, BackendKind, DeviceInfo, TimedWorkload};
use crate::workload::attention::{self, AttentionShape};
use crate::workload::tensor_ops::{self, TensorShape};
use crate::workload::transfer::TransferKind;
use crate::workload::{DType, GemmShape, Suite};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

const STREAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stream.spv"));
const GEMM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gemm.spv"));
const PEAK: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/peak.spv"));
const PEAK_F16: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/peak_f16.spv"));
const PEAK_INT8: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/peak_int8.spv"));
const TENSOR_ELEMENTWISE: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/tensor_elementwise.spv"));
const TENSOR_ROWS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tensor_rows.spv"));
const TENSOR_HALF: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tensor_half.spv"));
const ATTENTION_FLASH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/attention_flash.spv"));
const ATTENTION_FLASH_HALF: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/attention_flash_half.spv"));
const ATTENTION_STANDARD: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/attention_standard.spv"));
const ATTENTION_STANDARD_HALF: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/attention_standard_half.spv"));

/// An optional device feature a kernel's SPIR-V declares: a device without it refuses that
/// kernel with the reason, and runs the others.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Needs {
    Nothing,
    /// `shaderFloat64`: the STREAM arrays are f64.
    Float64,
    /// `shaderFloat16` and 16-bit storage: the f16 FMA peak's arithmetic.
    Float16,
    /// `shaderIntegerDotProduct`: the int8 peak's packed dot products.
    IntegerDot,
}

/// A kernel this backend has, by the name the shared workloads launch: its SPIR-V and entry
/// point, threads per workgroup, and the optional feature it needs.
struct Kernel {
    name: &'static str,
    spirv: &'static [u8],
    entry: &'static str,
    threads: u32,
    needs: Needs,
    /// Its immediates begin with an f64 scalar, zero where the launch passes none.
    scalar_first: bool,
    /// A 16-bit row op: its row length (the launch's first i32) must be even, so that no
    /// u32 word holds two rows.
    even_rows: bool,
}

/// A kernel launched by `name`, which is also its entry point: 256 threads, needing no
/// optional feature. The methods below change what differs.
const fn launched(name: &'static str, spirv: &'static [u8]) -> Kernel {
    Kernel {
        name,
        spirv,
        entry: name,
        threads: 256,
        needs: Needs::Nothing,
        scalar_first: false,
        even_rows: false,
    }
}

impl Kernel {
    const fn needs(self, needs: Needs) -> Kernel {
        Kernel { needs, ..self }
    }

    /// A 16-bit row op on packed words (`tensor_half.spv`, the 16-bit attention softmax).
    const fn even_rows(self) -> Kernel {
        Kernel {
            even_rows: true,
            ..self
        }
    }

    /// A fused-attention kernel (`backend/gpu/attention.rs` launches it with the CUDA
    /// kernel's grid): 128 threads, 16 query rows per workgroup.
    const fn flash(self) -> Kernel {
        Kernel {
            threads: crate::backend::gpu::kernels::FLASH_THREADS,
            ..self
        }
    }
}

/// A STREAM kernel: one module, one immediates layout (the f64 scalar, then the count).
const fn stream(name: &'static str, entry: &'static str) -> Kernel {
    Kernel {
        entry,
        scalar_first: true,
        ..launched(name, STREAM).needs(Needs::Float64)
    }
}

const KERNELS: &[Kernel] = &[
    stream("stream_copy", "stream_copy"),
    stream("stream_add", "stream_add"),
    stream("stream_read", "stream_read"),
    stream("stream_fill", "stream_fill"),
    // The sweep's write is a fill: the same entry point, its own id in the timings.
    stream("stream_write", "stream_fill"),
    stream("stream_scale_in_place", "stream_scale_in_place"),
    stream("stream_scale", "stream_scale"),
    stream("stream_triad", "stream_triad"),
    launched("gemm", GEMM),
    launched("add_f32", TENSOR_ELEMENTWISE),
    launched("mul_f32", TENSOR_ELEMENTWISE),
    launched("relu_f32", TENSOR_ELEMENTWISE),
    launched("gelu_f32", TENSOR_ELEMENTWISE),
    launched("sum_f32", TENSOR_ROWS),
    launched("softmax_f32", TENSOR_ROWS),
    launched("layer_norm_f32", TENSOR_ROWS),
    launched("add_f16", TENSOR_HALF),
    launched("add_bf16", TENSOR_HALF),
    launched("mul_f16", TENSOR_HALF),
    launched("mul_bf16", TENSOR_HALF),
    launched("relu_f16", TENSOR_HALF),
    launched("relu_bf16", TENSOR_HALF),
    launched("gelu_f16", TENSOR_HALF),
    launched("gelu_bf16", TENSOR_HALF),
    launched("sum_f16", TENSOR_HALF).even_rows(),
    launched("sum_bf16", TENSOR_HALF).even_rows(),
    launched("softmax_f16", TENSOR_HALF).even_rows(),
    launched("softmax_bf16", TENSOR_HALF).even_rows(),
    launched("layer_norm_f16", TENSOR_HALF).even_rows(),
    launched("layer_norm_bf16", TENSOR_HALF).even_rows(),
    launched("flash_f32_d64", ATTENTION_FLASH).flash(),
    launched("flash_f32_d128", ATTENTION_FLASH).flash(),
    launched("flash_f16_d64", ATTENTION_FLASH_HALF).flash(),
    launched("flash_f16_d128", ATTENTION_FLASH_HALF).flash(),
    launched("flash_bf16_d64", ATTENTION_FLASH_HALF).flash(),
    launched("flash_bf16_d128", ATTENTION_FLASH_HALF).flash(),
    // The standard attention path: its softmax, and the batched GEMMs around it (the BLAS
    // call of CUDA and ROCm, `GpuDevice::batched_gemm` here).
    launched("attn_softmax_f32", ATTENTION_STANDARD),
    launched("batched_gemm_f32", ATTENTION_STANDARD),
    launched("attn_softmax_f16", ATTENTION_STANDARD_HALF).even_rows(),
    launched("attn_softmax_bf16", ATTENTION_STANDARD_HALF).even_rows(),
    launched("batched_gemm_f16", ATTENTION_STANDARD_HALF),
    launched("batched_gemm_bf16", ATTENTION_STANDARD_HALF),
    launched("peak_fma_f32", PEAK),
    launched("peak_fma_f16", PEAK_F16).needs(Needs::Float16),
    launched("peak_dot_i8", PEAK_INT8).needs(Needs::IntegerDot),
];

/// Bytes overwritten before each timed sample that asks for a flush.
const FLUSH_BYTES: usize = 256 << 20;
/// The same on a CPU driver (lavapipe): past the last-level cache of a server CPU, and
/// small enough that the flush does not dominate a short run.
const CPU_FLUSH_BYTES: usize = 64 << 20;
/// Bytes per array of the STREAM sweep on a CPU driver: past its last-level cache, small
/// enough for the quick suite's check pass in seconds (lavapipe, 2 cores).
const CPU_STREAM_BYTES: usize = 64 << 20;
/// The GEMM shapes on a CPU driver: the GPU shapes (1024³ to 8192³) take minutes each there.
const CPU_GEMM_SIZES: &[usize] = &[256, 512];
const CPU_GEMM_SIZES_FULL: &[usize] = &[256, 512, 1024];

/// The probe: the device this backend would run on, or why none.
pub fn probe() -> Availability {
    match context::open() {
        Ok(ctx) => Availability::Available {
            devices: vec![device_info(&ctx)],
        },
        Err(reason) => Availability::Unavailable { reason },
    }
}

fn device_info(ctx: &Context) -> DeviceInfo {
    let c = &ctx.chosen;
    let limits = &ctx.properties.limits;
    let mut properties = BTreeMap::new();
    let mut put = |k: &str, v: serde_json::Value| {
        properties.insert(k.to_owned(), v);
    };
    put("loader", ctx.library.clone().into());
    put("api_version", select::version_text(c.api_version).into());
    put("driver_name", ctx.driver_name.clone().into());
    put("driver_info", ctx.driver_info.clone().into());
    put("driver_version", ctx.properties.driver_version.into());
    put(
        "vendor_id",
        format!("0x{:04x}", ctx.properties.vendor_id).into(),
    );
    put(
        "device_id",
        format!("0x{:04x}", ctx.properties.device_id).into(),
    );
    put("device_type", c.device_type.id().into());
    if c.device_type == DeviceType::Cpu {
        put(
            "note",
            "a CPU driver (e.g. Mesa lavapipe): its figures describe this CPU, not a GPU".into(),
        );
    }
    put("subgroup_size", ctx.subgroup_size.into());
    put("timestamp_period_ns", (c.timestamp_period as f64).into());
    put("timestamp_valid_bits", c.timestamp_bits().into());
    put(
        "max_storage_buffer_range",
        limits.max_storage_buffer_range.into(),
    );
    put("device_local_bytes", ctx.device_memory_bytes().into());
    put("shader_float64", c.float64.into());
    put("shader_float16", c.float16.into());
    put("shader_integer_dot_product", c.integer_dot.into());
    put(
        "cooperative_matrix",
        c.has_extension("VK_KHR_cooperative_matrix").into(),
    );
    // What was enabled on the device because a kernel declares it.
    let used: Vec<&str> = [
        (c.float64, "shaderFloat64 (STREAM)"),
        (c.float16, "shaderFloat16 and 16-bit storage (the f16 peak)"),
        (
            c.integer_dot,
            "VK_KHR_shader_integer_dot_product (the int8 peak)",
        ),
    ]
    .into_iter()
    .filter_map(|(on, what)| on.then_some(what))
    .collect();
    put("features_used", used.into());
    put(
        "f16_gemm_path",
        "f16 storage, f32 arithmetic (unpack2x16float); shaderFloat16 and \
         VK_KHR_cooperative_matrix not used"
            .into(),
    );
    DeviceInfo {
        backend: BackendKind::Vulkan,
        name: c.name.clone(),
        properties,
    }
}

/// The Vulkan backend: one device, one queue.
pub struct VulkanBackend {
    ctx: Rc<Context>,
    info: DeviceInfo,
    flush: RawBuffer,
}

impl VulkanBackend {
    pub fn open() -> Result<VulkanBackend, String> {
        let ctx = Rc::new(context::open()?);
        let info = device_info(&ctx);
        let flush_bytes = if ctx.chosen.device_type == DeviceType::Cpu {
            CPU_FLUSH_BYTES
        } else {
            FLUSH_BYTES
        };
        let id = ctx
            .create_buffer(flush_bytes, Memory::Device)
            .map_err(|e| e.to_string())?;
        let flush = wrap(&ctx, id, flush_bytes);
        Ok(VulkanBackend { ctx, info, flush })
    }

    pub fn is_cpu_driver(&self) -> bool {
        self.ctx.chosen.device_type == DeviceType::Cpu
    }

    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }

    /// A new buffer of `bytes` in `memory`, freed when the `RawBuffer` drops.
    pub(crate) fn buffer(&self, bytes: usize, memory: Memory) -> Result<RawBuffer, BackendError> {
        let id = self.ctx.create_buffer(bytes, memory)?;
        Ok(wrap(&self.ctx, id, bytes))
    }

    /// Runs kernel `name` (one of [`KERNELS`]) with the shared workloads' arguments.
    fn run_kernel(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError> {
        let kernel = kernel(name)?;
        let c = &self.ctx.chosen;
        let missing = match kernel.needs {
            Needs::Nothing => None,
            Needs::Float64 => (!c.float64).then_some("shaderFloat64 (the STREAM arrays are f64)"),
            Needs::Float16 => (!c.float16).then_some(
                "shaderFloat16 with 16-bit storage buffer access (the f16 peak's arithmetic)",
            ),
            Needs::IntegerDot => (!c.integer_dot).then_some(
                "shaderIntegerDotProduct (VK_KHR_shader_integer_dot_product, the int8 peak's)",
            ),
        };
        if let Some(feature) = missing {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                name,
                format!("{} has no {feature}", self.info.name),
            ));
        }
        if grid.threads != kernel.threads {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                name,
                format!(
                    "its workgroups have {} threads; the launch asked for {}",
                    kernel.threads, grid.threads
                ),
            ));
        }
        // A row op's row length is its launch's first i32.
        let row_length = || {
            args.iter().find_map(|a| match a {
                Arg::I32(v) => Some(*v),
                _ => None,
            })
        };
        if kernel.even_rows
            && let Some(cols) = row_length().filter(|c| c % 2 != 0)
        {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                name,
                format!(
                    "rows of {cols} 16-bit elements: the WGSL kernels read whole u32 words, so a row's length must be even"
                ),
            ));
        }
        let (buffers, mut immediates) = split_args(name, args)?;
        if kernel.scalar_first && !args.iter().any(|a| matches!(a, Arg::F64(_))) {
            immediates.splice(0..0, [0u8; 8]);
        }
        self.ctx.dispatch(
            kernel.entry,
            kernel.spirv,
            &buffers,
            &immediates,
            grid.blocks,
        )
    }
}

/// The kernel the shared workloads launch as `name`, or the recorded skip that says there
/// is no WGSL version of it.
fn kernel(name: &str) -> Result<&'static Kernel, BackendError> {
    KERNELS.iter().find(|k| k.name == name).ok_or_else(|| {
        BackendError::unsupported(
            BackendKind::Vulkan,
            name,
            "not implemented on vulkan yet (no WGSL version of this kernel)",
        )
    })
}

fn wrap(ctx: &Rc<Context>, id: u64, bytes: usize) -> RawBuffer {
    RawBuffer::new(
        id,
        bytes,
        Box::new(OwnedBuffer {
            context: Rc::clone(ctx),
            id,
        }),
    )
}

/// Buffer ids in order, and the scalars packed as the shaders' immediates declare them:
/// f64 on 8 bytes, a count as two u32 words (low, high; the kernels index with u32, so a
/// count past 2^32 is refused), i32 and f32 on 4.
fn split_args(kernel: &str, args: &[Arg]) -> Result<(Vec<u64>, Vec<u8>), BackendError> {
    let mut buffers = Vec::new();
    let mut bytes: Vec<u8> = Vec::new();
    for arg in args {
        match *arg {
            Arg::Ptr(id) => buffers.push(id),
            Arg::F64(v) => {
                bytes.resize(bytes.len().next_multiple_of(8), 0);
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            Arg::U64(v) => {
                if v > u32::MAX as u64 {
                    return Err(BackendError::unsupported(
                        BackendKind::Vulkan,
                        kernel,
                        format!("{v} elements: the WGSL kernels index with 32 bits"),
                    ));
                }
                bytes.extend_from_slice(&(v as u32).to_le_bytes());
                bytes.extend_from_slice(&0u32.to_le_bytes());
            }
            Arg::I32(v) => bytes.extend_from_slice(&v.to_le_bytes()),
            Arg::F32(v) => bytes.extend_from_slice(&v.to_le_bytes()),
        }
    }
    // WGSL rounds a struct's size up to its alignment (8 where it holds an f64).
    if args.iter().any(|a| matches!(a, Arg::F64(_))) {
        bytes.resize(bytes.len().next_multiple_of(8), 0);
    }
    Ok((buffers, bytes))
}

impl GpuDevice for VulkanBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Vulkan
    }

    /// Vulkan does not report compute units; grid-stride launches cap at `units · 32`
    /// workgroups of 256 threads: 262144 threads on a GPU. A CPU driver runs a workgroup's
    /// threads as SIMD lanes over one stretch of memory, so there the cap is the dispatch
    /// limit (65535 workgroups): each thread takes one or two elements and the workgroups
    /// walk memory in order, where a grid stride would jump megabytes between accesses.
    fn units(&self) -> u32 {
        if self.is_cpu_driver() { 65535 / 32 } else { 32 }
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError> {
        let buffer = self.buffer(bytes, Memory::Device)?;
        self.ctx.fill(buffer.ptr, 0)?;
        self.ctx.synchronize()?;
        Ok(buffer)
    }

    fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError> {
        let staging = self.buffer(bytes.len(), Memory::Host)?;
        self.ctx
            .with_mapped(staging.ptr, |m| m[..bytes.len()].copy_from_slice(bytes))?;
        let buffer = self.buffer(bytes.len(), Memory::Device)?;
        self.ctx
            .copy(staging.ptr, buffer.ptr, self.ctx.buffer_bytes(buffer.ptr)?)?;
        self.ctx.synchronize()?;
        Ok(buffer)
    }

    fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError> {
        let staging = self.buffer(buffer.bytes, Memory::Host)?;
        self.ctx
            .copy(buffer.ptr, staging.ptr, self.ctx.buffer_bytes(buffer.ptr)?)?;
        self.ctx.synchronize()?;
        self.ctx
            .with_mapped(staging.ptr, |m| m[..buffer.bytes].to_vec())
    }

    fn launch(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError> {
        self.run_kernel(name, grid, args)
    }

    fn has_kernel(&self, name: &str) -> Result<(), BackendError> {
        kernel(name).map(drop)
    }

    /// The strided-batched GEMM of the standard attention path, in WGSL: f32
    /// (`shaders/attention_standard.wgsl`, 16×16 tiles, any shape), and f16 and bf16 with
    /// f32 arithmetic (its `attention_standard_half` variant), whose C must start every column on
    /// a whole u32 word.
    fn batched_gemm(&self, g: &BatchedGemm) -> Result<(), BackendError> {
        let what = format!("batched gemm {}", g.dtype);
        let kernel = match g.dtype {
            DType::F32 => "batched_gemm_f32",
            DType::F16 => "batched_gemm_f16",
            DType::Bf16 => "batched_gemm_bf16",
            _ => {
                return Err(BackendError::unsupported(
                    BackendKind::Vulkan,
                    what,
                    "the WGSL batched GEMM runs in f32, f16 and bf16",
                ));
            }
        };
        if g.dtype != DType::F32 && [g.m, g.ldc, g.stride_c].iter().any(|d| d % 2 != 0) {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                what,
                format!(
                    "m {}, ldc {}, stride_c {}: the 16-bit kernel writes C in u32 words of two \
                     rows, so each must be even",
                    g.m, g.ldc, g.stride_c
                ),
            ));
        }
        let dims = [
            g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.stride_a, g.stride_b, g.stride_c,
        ];
        let mut args = vec![Arg::Ptr(g.a), Arg::Ptr(g.b), Arg::Ptr(g.c)];
        for dim in dims {
            let dim = i32::try_from(dim).map_err(|_| {
                BackendError::unsupported(
                    BackendKind::Vulkan,
                    &what,
                    format!("{dim}: the WGSL kernel indexes with 32 bits"),
                )
            })?;
            args.push(Arg::I32(dim));
        }
        args.push(Arg::F32(g.alpha));
        args.push(Arg::I32(g.transpose_a as i32));
        let grid = Grid {
            blocks: (
                g.m.div_ceil(16) as u32,
                g.n.div_ceil(16) as u32,
                g.batch as u32,
            ),
            threads: 256,
        };
        self.run_kernel(kernel, grid, &args)
    }

    fn synchronize(&self) -> Result<(), BackendError> {
        self.ctx.synchronize()
    }

    fn timer(&self, flush_cache: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError> {
        Ok(Box::new(VulkanTimer {
            backend: self,
            flush: flush_cache,
        }))
    }

    fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
        let budget = self.ctx.device_memory_bytes() / 10 * 9;
        if bytes > budget {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                what,
                format!("needs {bytes} bytes; the device-local heap leaves {budget}"),
            ));
        }
        Ok(())
    }

    fn free_memory(&self) -> Option<u64> {
        None
    }
}

/// Timestamps around `iters` recorded launches, the cache overwritten before the first.
pub struct VulkanTimer<'a> {
    backend: &'a VulkanBackend,
    flush: bool,
}

impl VulkanTimer<'_> {
    pub fn new(backend: &VulkanBackend, flush: bool) -> VulkanTimer<'_> {
        VulkanTimer { backend, flush }
    }
}

impl GpuTimer for VulkanTimer<'_> {
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        let ctx = &self.backend.ctx;
        ctx.synchronize()?;
        if self.flush {
            ctx.fill(self.backend.flush.ptr, 0x5a5a_5a5a)?;
        }
        ctx.timestamp(0)?;
        for _ in 0..iters {
            launch()?;
        }
        ctx.timestamp(1)?;
        ctx.synchronize()?;
        Ok(Duration::from_secs_f64(ctx.elapsed_ns()? / 1e9))
    }

    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
        out.insert("timing".into(), "Vulkan timestamp queries".into());
        out.insert("cache_flushed_before_each_sample".into(), self.flush.into());
        out.insert(
            "flush_bytes".into(),
            (self.backend.flush.bytes as u64).into(),
        );
        if self.backend.is_cpu_driver() {
            out.insert(
                "device_type".into(),
                "cpu (a CPU driver such as lavapipe: these figures are the CPU's)".into(),
            );
        }
    }
}

impl GpuBackend for VulkanBackend {
    fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Not a vendor BLAS: stackbench's own tiled WGSL GEMM, f32 and f16 (f16 storage, f32
    /// arithmetic), on every device.
    fn blas_dtypes(&self) -> Vec<DType> {
        vec![DType::F32, DType::F16]
    }

    fn open_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(gemm::VulkanGemm::new(self, shape, dtype)?))
    }

    fn open_transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(transfer::VulkanTransfer::new(self, kind, bytes)?))
    }

    /// Vulkan reports no cache sizes: 0 leaves the sweep at its 1 GiB floor on GPUs.
    fn l2_bytes(&self) -> usize {
        0
    }

    fn memory_bytes(&self) -> usize {
        self.ctx.device_memory_bytes() as usize
    }

    fn gpu_stream_sizes(&self, suite: Suite) -> Vec<usize> {
        let limit = self.ctx.properties.limits.max_storage_buffer_range as usize;
        let sizes = if self.is_cpu_driver() {
            vec![CPU_STREAM_BYTES]
        } else {
            gpu_stream::sizes(suite, self.l2_bytes(), self.memory_bytes())
        };
        sizes.into_iter().filter(|&s| s <= limit).collect()
    }

    /// 512 MiB as on CUDA and ROCm; 64 MiB on a CPU driver, where the copy is a memcpy.
    fn gpu_transfer_bytes(&self) -> usize {
        if self.is_cpu_driver() {
            CPU_STREAM_BYTES
        } else {
            crate::workload::transfer::TRANSFER_BYTES
        }
    }

    fn gpu_gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        if self.is_cpu_driver() {
            let sizes = if suite.is_full() {
                CPU_GEMM_SIZES_FULL
            } else {
                CPU_GEMM_SIZES
            };
            sizes.iter().map(|&s| GemmShape::square(s)).collect()
        } else {
            crate::workload::gemm::gpu_shapes(suite)
        }
    }

    /// The CPU tensor ops' shapes on a CPU driver (rows × 4096, 256 rows in the quick
    /// suite): the GPU's 16384 rows take seconds a launch there.
    fn gpu_tensor_shapes(&self, suite: Suite) -> Vec<TensorShape> {
        if self.is_cpu_driver() {
            tensor_ops::shapes(tensor_ops::CPU_ROWS, suite.is_full())
        } else {
            crate::backend::gpu::axes::tensor_shapes(suite)
        }
    }

    /// The CPU attention problems on a CPU driver (4 heads of 64, sequences of 256 and
    /// 1024): the GPU's 32 heads of 128 over 1024 to 8192 take minutes a launch there.
    fn gpu_attention_shapes(&self, suite: Suite) -> Vec<AttentionShape> {
        if self.is_cpu_driver() {
            attention::shapes(
                attention::CPU_SEQ_LENS,
                &attention::CPU_SEQ_LENS[..1],
                attention::CPU_HEADS,
                attention::HEAD_DIM,
                suite.is_full(),
            )
        } else {
            crate::backend::gpu::axes::attention_shapes(suite)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_pack_as_the_shaders_declare_them() {
        let (buffers, bytes) = split_args(
            "stream_triad",
            &[
                Arg::Ptr(1),
                Arg::Ptr(2),
                Arg::Ptr(3),
                Arg::F64(3.0),
                Arg::U64(10),
            ],
        )
        .unwrap();
        assert_eq!(buffers, [1, 2, 3]);
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[..8], &3.0f64.to_le_bytes());
        assert_eq!(&bytes[8..12], &10u32.to_le_bytes());
        let (_, count) = split_args("stream_copy", &[Arg::Ptr(1), Arg::U64(7)]).unwrap();
        assert_eq!(count, [7, 0, 0, 0, 0, 0, 0, 0]);
        let too_many = split_args("stream_copy", &[Arg::U64(1 << 33)]);
        assert!(too_many.unwrap_err().is_skip());
    }

    #[test]
    fn every_kernel_is_in_its_spirv() {
        for kernel in KERNELS {
            let words = ash::util::read_spv(&mut std::io::Cursor::new(kernel.spirv)).unwrap();
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let needle = kernel.entry.as_bytes();
            assert!(
                bytes.windows(needle.len()).any(|w| w == needle),
                "{} is not an entry point of its module",
                kernel.entry
            );
        }
    }
}
