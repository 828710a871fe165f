//! Attention on GPUs, the two ways the family compares:
//! - `standard`: S = Q·Kᵀ/√D with a strided-batched BLAS GEMM into a materialised B·H·S·S
//!   matrix in the input precision (f32 accumulation), a softmax kernel over its rows
//!   (masking for causal), and O = P·V with a second batched GEMM: what an unfused
//!   framework does;
//! - `flash`: one kernel with the online softmax (see kernels.rs); the scores stay in
//!   registers and the only extra memory is each block's shared tiles. On NVIDIA in f16
//!   and bf16 it is the FlashAttention-2-style kernel on tensor cores (`mma.sync`
//!   m16n8k16, f32 accumulation); in f32, and on AMD (which has no `mma.sync`), it is the
//!   SIMT kernel on CUDA cores / VALU. [`FlashKernel`] says which, and the notes record it.
//!
//! Peak memory is recorded both as what the workload allocated and as the drop in the
//! device's free memory the driver reported while it allocated.

use super::checked::{close_notes, read_back};
use super::kernels::{FLASH_ROWS, FLASH_TC_ROWS, FLASH_TC_THREADS, FLASH_THREADS, per_row};
use super::tensor_ops::suffix;
use super::{Arg, BatchedGemm, GpuDevice, GpuTimer, Grid, Pod, RawBuffer, upload, zeroed};
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy};
use crate::workload::DType;
use crate::workload::attention::{
    AttentionInputs, AttentionKernel, AttentionShape, bench_id, check_output,
};
use crate::workload::tensor_ops::HostElement;
use std::collections::BTreeMap;
use std::time::Duration;

/// Opens an attention workload in the precision `dtype`.
pub fn open<'a>(
    dev: &'a dyn GpuDevice,
    kernel: AttentionKernel,
    shape: AttentionShape,
    dtype: DType,
) -> Result<Box<dyn TimedWorkload + 'a>, BackendError> {
    let what = shape.function_id(kernel, dtype);
    if shape.head_dim != 64 && shape.head_dim != 128 {
        return Err(BackendError::unsupported(
            dev.kind(),
            what,
            "the kernels are built for head dimensions 64 and 128",
        ));
    }
    let scores = match kernel {
        AttentionKernel::Standard => shape.score_bytes(dtype),
        AttentionKernel::Flash => 0,
    };
    // A device without this path's kernels (the vulkan backend's WGSL set) skips it here,
    // before anything is allocated, naming the kernel.
    match kernel {
        AttentionKernel::Standard => dev.has_kernel(&softmax_kernel(dtype))?,
        AttentionKernel::Flash => {
            let flash = FlashKernel::choose(dev.kind(), dtype);
            dev.has_kernel(&flash.launch_shape(shape, dtype).0)?
        }
    }
    dev.fits(shape.io_bytes(dtype) + scores, &what)?;
    match dtype {
        DType::F32 => Ok(Box::new(GpuAttention::<f32>::new(dev, kernel, shape)?)),
        DType::F16 => Ok(Box::new(GpuAttention::<half::f16>::new(
            dev, kernel, shape,
        )?)),
        DType::Bf16 => Ok(Box::new(GpuAttention::<half::bf16>::new(
            dev, kernel, shape,
        )?)),
        _ => Err(BackendError::unsupported(
            dev.kind(),
            what,
            "attention runs in f32, f16 and bf16",
        )),
    }
}

/// The softmax kernel between the standard path's two GEMMs.
fn softmax_kernel(dtype: DType) -> String {
    format!("attn_softmax_{}", suffix(dtype))
}

/// The kernel behind `flash` on a device, chosen by (platform, precision); both head
/// dimensions have both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashKernel {
    /// `flash_tc_*`: warp-level `mma.sync` on NVIDIA's tensor cores, f16 and bf16 inputs.
    TensorCores,
    /// `flash_*`: f32 arithmetic on CUDA cores / AMD's VALU, every precision.
    Simt,
    /// `flash_*` in WGSL (`backend/vulkan/shaders/attention_flash.wgsl`, and
    /// its `attention_flash_half` variant for f16 and bf16 on packed words): the same grid and
    /// recurrence as `Simt`, keys staged 8 at a time, f32 arithmetic.
    Wgsl,
}

impl FlashKernel {
    pub fn choose(backend: BackendKind, dtype: DType) -> FlashKernel {
        match (backend, dtype) {
            (BackendKind::Cuda, DType::F16 | DType::Bf16) => FlashKernel::TensorCores,
            (BackendKind::Vulkan, _) => FlashKernel::Wgsl,
            _ => FlashKernel::Simt,
        }
    }

    /// The `implementation` note of a flash run.
    pub fn description(self) -> &'static str {
        match self {
            FlashKernel::TensorCores => {
                "stackbench FlashAttention-2-style kernel on tensor cores (mma.sync m16n8k16), f32 accumulation"
            }
            FlashKernel::Simt => "stackbench online-softmax kernel (CUDA cores / VALU, SIMT)",
            FlashKernel::Wgsl => {
                "stackbench online-softmax kernel in WGSL (8 lanes per query row, keys staged 8 at a time), f32 arithmetic"
            }
        }
    }

    fn launch_shape(self, shape: AttentionShape, dtype: DType) -> (String, Grid) {
        let (prefix, rows, threads) = match self {
            FlashKernel::TensorCores => ("flash_tc", FLASH_TC_ROWS, FLASH_TC_THREADS),
            FlashKernel::Simt | FlashKernel::Wgsl => ("flash", FLASH_ROWS, FLASH_THREADS),
        };
        let grid = Grid {
            blocks: (
                (shape.seq as u32).div_ceil(rows),
                (shape.batch * shape.heads) as u32,
                1,
            ),
            threads,
        };
        let name = format!("{prefix}_{}_d{}", suffix(dtype), shape.head_dim);
        (name, grid)
    }
}

pub struct GpuAttention<'a, T> {
    dev: &'a dyn GpuDevice,
    kernel: AttentionKernel,
    shape: AttentionShape,
    inputs: AttentionInputs<T>,
    q: RawBuffer,
    k: RawBuffer,
    v: RawBuffer,
    o: RawBuffer,
    scores: Option<RawBuffer>,
    free_drop_bytes: Option<u64>,
    timer: Box<dyn GpuTimer + 'a>,
    accuracy: Option<crate::workload::Accuracy>,
    /// The kernel behind `flash` here, and its name and grid: chosen once, not per launch.
    flash_kernel: FlashKernel,
    flash_launch: (String, Grid),
}

impl<'a, T: HostElement + Pod> GpuAttention<'a, T> {
    pub fn new(
        dev: &'a dyn GpuDevice,
        kernel: AttentionKernel,
        shape: AttentionShape,
    ) -> Result<Self, BackendError> {
        let inputs = AttentionInputs::<T>::new(shape);
        let free_before = dev.free_memory();
        let q = upload(dev, &inputs.q)?;
        let k = upload(dev, &inputs.k)?;
        let v = upload(dev, &inputs.v)?;
        let o = zeroed::<T>(dev, shape.elements())?;
        let scores = match kernel {
            AttentionKernel::Standard => {
                let len = shape.batch * shape.heads * shape.seq * shape.seq;
                Some(zeroed::<T>(dev, len)?)
            }
            AttentionKernel::Flash => None,
        };
        let free_after = dev.free_memory();
        let free_drop_bytes = free_before
            .zip(free_after)
            .map(|(b, a)| b.saturating_sub(a));
        let flash_kernel = FlashKernel::choose(dev.kind(), T::DTYPE);
        Ok(GpuAttention {
            flash_kernel,
            flash_launch: flash_kernel.launch_shape(shape, T::DTYPE),
            dev,
            kernel,
            shape,
            inputs,
            q,
            k,
            v,
            o,
            scores,
            free_drop_bytes,
            timer: dev.timer(true)?,
            accuracy: None,
        })
    }

    fn launch_once(&self) -> Result<(), BackendError> {
        match &self.scores {
            Some(scores) => self.standard(scores),
            None => self.flash(),
        }
    }

    fn flash(&self) -> Result<(), BackendError> {
        let s = self.shape;
        let (name, grid) = &self.flash_launch;
        self.dev.launch(
            name,
            *grid,
            &[
                Arg::Ptr(self.q.ptr),
                Arg::Ptr(self.k.ptr),
                Arg::Ptr(self.v.ptr),
                Arg::Ptr(self.o.ptr),
                Arg::I32(s.seq as i32),
                Arg::F32(s.scale() as f32),
                Arg::I32(s.causal as i32),
            ],
        )
    }

    /// Two batched GEMMs around a softmax kernel. Row-major per head, S = Q·Kᵀ is, in
    /// BLAS's column-major terms, Sᵀ = K·Qᵀ (the K buffer transposed, the Q buffer as is);
    /// O = P·V is Oᵀ = Vᵀ·Pᵀ (both buffers as stored).
    fn standard(&self, scores: &RawBuffer) -> Result<(), BackendError> {
        let sh = self.shape;
        let (s, d) = (sh.seq, sh.head_dim);
        let batch = sh.batch * sh.heads;
        self.dev.batched_gemm(&BatchedGemm {
            dtype: T::DTYPE,
            transpose_a: true,
            m: s,
            n: s,
            k: d,
            alpha: sh.scale() as f32,
            a: self.k.ptr,
            lda: d,
            stride_a: s * d,
            b: self.q.ptr,
            ldb: d,
            stride_b: s * d,
            c: scores.ptr,
            ldc: s,
            stride_c: s * s,
            batch,
        })?;
        self.dev.launch(
            &softmax_kernel(T::DTYPE),
            per_row(batch * s),
            &[
                Arg::Ptr(scores.ptr),
                Arg::I32(s as i32),
                Arg::I32(sh.causal as i32),
            ],
        )?;
        self.dev.batched_gemm(&BatchedGemm {
            dtype: T::DTYPE,
            transpose_a: false,
            m: d,
            n: s,
            k: s,
            alpha: 1.0,
            a: self.v.ptr,
            lda: d,
            stride_a: s * d,
            b: scores.ptr,
            ldb: s,
            stride_b: s * s,
            c: self.o.ptr,
            ldc: d,
            stride_c: s * d,
            batch,
        })
    }

    fn allocated_bytes(&self) -> u64 {
        let io = self.q.bytes + self.k.bytes + self.v.bytes + self.o.bytes;
        (io + self.scores.as_ref().map_or(0, |s| s.bytes)) as u64
    }
}

impl<T: HostElement + Pod> TimedWorkload for GpuAttention<'_, T> {
    fn verify(&mut self) -> Result<(), BackendError> {
        let out = read_back::<T>(self.dev, &self.o, self.shape.elements(), || {
            self.launch_once()
        })?;
        let id = bench_id(self.dev.kind().id(), self.kernel, self.shape, T::DTYPE);
        keep_accuracy(
            &mut self.accuracy,
            &id,
            check_output(self.shape, &self.inputs, &out),
        )
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.launch_once())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("io_bytes".into(), self.shape.io_bytes(T::DTYPE).into());
        notes.insert(
            "scratch_bytes".into(),
            self.scores.as_ref().map_or(0, |s| s.bytes).into(),
        );
        notes.insert("peak_memory_bytes".into(), self.allocated_bytes().into());
        if let Some(drop) = self.free_drop_bytes {
            notes.insert("device_free_memory_drop_bytes".into(), drop.into());
        }
        notes.insert(
            "implementation".into(),
            match self.kernel {
                AttentionKernel::Standard if self.dev.kind() == BackendKind::Vulkan => {
                    "stackbench strided-batched GEMMs in WGSL (16x16 tiles, no BLAS on Vulkan) + softmax kernel"
                }
                AttentionKernel::Standard => "strided-batched BLAS GEMMs + softmax kernel",
                AttentionKernel::Flash => self.flash_kernel.description(),
            }
            .into(),
        );
        close_notes(&mut notes, self.accuracy.as_ref(), self.timer.as_ref());
        notes
    }
}
