//! Attention: forward scaled dot-product attention, the standard kernel (scores
//! materialised) against the fused online-softmax (flash-style) one, causal and not, over
//! sequence lengths. Ids `attention/<backend>/<kernel>[_causal]_<dtype>/b<B>_h<H>_s<S>_d<D>`;
//! throughput 4·B·S²·H·D FLOPs (half when causal). Shapes, FLOPs and the reference live in
//! `workload::attention`; each record notes the kernel's memory.

use super::{Case, gpu_has_family, grid3};
use crate::backend::cpu::{CpuBackend, attention::CpuAttention};
use crate::backend::gpu::{GpuBackend, attention as gpu_attention, axes};
use crate::backend::{BackendError, TimedWorkload};
use crate::workload::attention::{self as attn, AttentionKernel, AttentionShape};
use crate::workload::family;
use crate::workload::{DType, Suite};
use criterion::Throughput;

/// The attention family.
pub struct Attention;

/// What a backend does for attention: its precisions, its problems, and a timed kernel.
pub trait AttentionBackend {
    /// Precisions this backend runs attention in.
    fn attention_dtypes(&self) -> Vec<DType>;

    /// Attention problems this backend covers in `suite` (causal and not).
    fn attention_shapes(&self, suite: Suite) -> Vec<AttentionShape>;

    fn attention(
        &self,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;
}

impl AttentionBackend for CpuBackend {
    fn attention_dtypes(&self) -> Vec<DType> {
        vec![DType::F32]
    }

    fn attention_shapes(&self, suite: Suite) -> Vec<AttentionShape> {
        attn::shapes(
            attn::CPU_SEQ_LENS,
            &attn::CPU_SEQ_LENS[..1],
            attn::CPU_HEADS,
            attn::HEAD_DIM,
            suite.is_full(),
        )
    }

    fn attention(
        &self,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Ok(Box::new(CpuAttention::new(
            &self.pool, kernel, shape, dtype,
        )?))
    }
}

impl<T: GpuBackend + ?Sized> AttentionBackend for T {
    fn attention_dtypes(&self) -> Vec<DType> {
        axes::attention_dtypes()
    }

    fn attention_shapes(&self, suite: Suite) -> Vec<AttentionShape> {
        self.gpu_attention_shapes(suite)
    }

    fn attention(
        &self,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        gpu_has_family(self, &family::ATTENTION, || {
            format!("attention {} {dtype}", kernel.id())
        })?;
        gpu_attention::open(self.as_gpu_device(), kernel, shape, dtype)
    }
}

on_every_peer!(
    Attention,
    family::ATTENTION,
    AttentionBackend,
    |backend, on, suite| {
        let shapes = on.attention_shapes(suite);
        Case::measure_each(
            backend.light_sampling(suite),
            grid3(on.attention_dtypes(), shapes, AttentionKernel::ALL),
            |(dtype, shape, kernel)| {
                let id = attn::bench_id(backend.kind().id(), kernel, shape, dtype);
                (id, Throughput::Elements(shape.flops()))
            },
            move |(dtype, shape, kernel)| on.attention(kernel, shape, dtype),
        )
    }
);
