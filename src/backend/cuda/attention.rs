//! Attention on NVIDIA GPUs, the two ways the family compares:
//! - `standard`: S = Q·Kᵀ/√D with a strided-batched `cublasGemmEx` into a materialised
//!   B·H·S·S matrix in the input precision, a softmax kernel over its rows (masking for
//!   causal), and O = P·V with a second batched GEMM: what an unfused framework does;
//! - `flash`: one NVRTC kernel with the online softmax (see kernels.rs); the scores stay in
//!   registers and the only extra memory is each block's shared tiles.
//!
//! Peak memory is recorded both as what the workload allocated and as the drop in the
//! device's free memory that `cuMemGetInfo` saw while allocating.

use super::CudaBackend;
use super::device::{DeviceBuffer, DeviceTimer, device_error, text};
use super::kernels::{FLASH_ROWS, FLASH_THREADS, per_row};
use super::stream::{Arg, launch};
use super::tensor_ops::suffix;
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::DType;
use crate::workload::attention::{AttentionInputs, AttentionKernel, AttentionShape, check_output};
use crate::workload::tensor_ops::HostElement;
use cudarc::cublas::result as blas;
use cudarc::cublas::sys as bsys;
use cudarc::driver::{DeviceRepr, LaunchConfig, ValidAsZeroBits};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::Duration;

/// Opens an attention workload in the precision `dtype`.
pub fn open<'a>(
    dev: &'a CudaBackend,
    kernel: AttentionKernel,
    shape: AttentionShape,
    dtype: DType,
) -> Result<Box<dyn TimedWorkload + 'a>, BackendError> {
    let what = shape.function_id(kernel, dtype);
    if shape.head_dim != 64 && shape.head_dim != 128 {
        return Err(BackendError::unsupported(
            BackendKind::Cuda,
            what,
            "the kernels are built for head dimensions 64 and 128",
        ));
    }
    let scores = match kernel {
        AttentionKernel::Standard => shape.score_bytes(dtype),
        AttentionKernel::Flash => 0,
    };
    dev.fits(shape.io_bytes(dtype) + scores, &what)?;
    match dtype {
        DType::F32 => Ok(Box::new(CudaAttention::<f32>::new(dev, kernel, shape)?)),
        DType::F16 => Ok(Box::new(CudaAttention::<half::f16>::new(
            dev, kernel, shape,
        )?)),
        DType::Bf16 => Ok(Box::new(CudaAttention::<half::bf16>::new(
            dev, kernel, shape,
        )?)),
        _ => Err(BackendError::unsupported(
            BackendKind::Cuda,
            what,
            "attention runs in f32, f16 and bf16",
        )),
    }
}

pub struct CudaAttention<'a, T> {
    dev: &'a CudaBackend,
    kernel: AttentionKernel,
    shape: AttentionShape,
    inputs: AttentionInputs<T>,
    q: DeviceBuffer<T>,
    k: DeviceBuffer<T>,
    v: DeviceBuffer<T>,
    o: DeviceBuffer<T>,
    scores: Option<DeviceBuffer<T>>,
    free_drop_bytes: Option<u64>,
    timer: DeviceTimer,
    worst_error: Option<f64>,
}

impl<'a, T> CudaAttention<'a, T>
where
    T: HostElement + DeviceRepr + ValidAsZeroBits,
{
    pub fn new(
        dev: &'a CudaBackend,
        kernel: AttentionKernel,
        shape: AttentionShape,
    ) -> Result<Self, BackendError> {
        let inputs = AttentionInputs::<T>::new(shape);
        let free_before = dev.ctx.mem_get_info().ok().map(|(free, _)| free as u64);
        let q = DeviceBuffer::upload(dev, &inputs.q)?;
        let k = DeviceBuffer::upload(dev, &inputs.k)?;
        let v = DeviceBuffer::upload(dev, &inputs.v)?;
        let o = DeviceBuffer::zeroed(dev, shape.elements())?;
        let scores = match kernel {
            AttentionKernel::Standard => {
                let len = shape.batch * shape.heads * shape.seq * shape.seq;
                Some(DeviceBuffer::zeroed(dev, len)?)
            }
            AttentionKernel::Flash => None,
        };
        let free_after = dev.ctx.mem_get_info().ok().map(|(free, _)| free as u64);
        let free_drop_bytes = free_before
            .zip(free_after)
            .map(|(b, a)| b.saturating_sub(a));
        Ok(CudaAttention {
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
            timer: DeviceTimer::new(dev, true)?,
            worst_error: None,
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
        let name = format!("flash_{}_d{}", suffix(T::DTYPE), s.head_dim);
        let config = LaunchConfig {
            grid_dim: (
                (s.seq as u32).div_ceil(FLASH_ROWS),
                (s.batch * s.heads) as u32,
                1,
            ),
            block_dim: (FLASH_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        launch(
            self.dev,
            &name,
            config,
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

    /// Two batched GEMMs around a softmax kernel. Row-major per head: S = Q·Kᵀ is, in
    /// cuBLAS's column-major terms, Sᵀ = K·Qᵀ (K transposed, Q as is); O = P·V is
    /// Oᵀ = Vᵀ·Pᵀ (both as stored).
    fn standard(&self, scores: &DeviceBuffer<T>) -> Result<(), BackendError> {
        let blas_handle = self
            .dev
            .blas
            .as_ref()
            .ok_or_else(|| {
                BackendError::unsupported(
                    BackendKind::Cuda,
                    "standard attention",
                    "cuBLAS was not found",
                )
            })?
            .handle;
        let sh = self.shape;
        let (s, d) = (sh.seq as i32, sh.head_dim as i32);
        let batch = (sh.batch * sh.heads) as i32;
        let data = match T::DTYPE {
            DType::F16 => bsys::cudaDataType::CUDA_R_16F,
            DType::Bf16 => bsys::cudaDataType::CUDA_R_16BF,
            _ => bsys::cudaDataType::CUDA_R_32F,
        };
        let compute = bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F;
        let (scale, one, zero) = (sh.scale() as f32, 1.0f32, 0.0f32);
        let (n_op, t_op) = (
            bsys::cublasOperation_t::CUBLAS_OP_N,
            bsys::cublasOperation_t::CUBLAS_OP_T,
        );
        let head = (sh.seq * sh.head_dim) as i64;
        let square = (sh.seq * sh.seq) as i64;
        let algo = bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        let err = |what: &str| {
            let what = what.to_owned();
            move |e: blas::CublasError| device_error(format!("attention {what}"))(text(e))
        };
        // SAFETY: Q, K, V hold B·H·S·D elements, scores B·H·S·S, O B·H·S·D, all of `data`;
        // strides and leading dimensions follow the layouts above.
        unsafe {
            blas::gemm_strided_batched_ex(
                blas_handle,
                t_op,
                n_op,
                s,
                s,
                d,
                &scale as *const f32 as *const c_void,
                self.k.ptr as *const c_void,
                data,
                d,
                head,
                self.q.ptr as *const c_void,
                data,
                d,
                head,
                &zero as *const f32 as *const c_void,
                scores.ptr as *mut c_void,
                data,
                s,
                square,
                batch,
                compute,
                algo,
            )
            .map_err(err("Q·Kᵀ"))?;
        }
        launch(
            self.dev,
            &format!("attn_softmax_{}", suffix(T::DTYPE)),
            per_row(sh.batch * sh.heads * sh.seq),
            &[
                Arg::Ptr(scores.ptr),
                Arg::I32(s),
                Arg::I32(sh.causal as i32),
            ],
        )?;
        // SAFETY: as above.
        unsafe {
            blas::gemm_strided_batched_ex(
                blas_handle,
                n_op,
                n_op,
                d,
                s,
                s,
                &one as *const f32 as *const c_void,
                self.v.ptr as *const c_void,
                data,
                d,
                head,
                scores.ptr as *const c_void,
                data,
                s,
                square,
                &zero as *const f32 as *const c_void,
                self.o.ptr as *mut c_void,
                data,
                d,
                head,
                batch,
                compute,
                algo,
            )
            .map_err(err("P·V"))
        }
    }

    fn allocated_bytes(&self) -> u64 {
        let io = self.q.bytes() + self.k.bytes() + self.v.bytes() + self.o.bytes();
        (io + self.scores.as_ref().map_or(0, |s| s.bytes())) as u64
    }
}

impl<T> TimedWorkload for CudaAttention<'_, T>
where
    T: HostElement + DeviceRepr + ValidAsZeroBits,
{
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch_once()?;
        self.dev.synchronize()?;
        let out = self.o.download(self.dev)?;
        let worst = check_output(self.shape, &self.inputs, &out).map_err(|detail| {
            BackendError::Mismatch {
                benchmark: format!(
                    "attention/cuda/{}/{}",
                    self.shape.function_id(self.kernel, T::DTYPE),
                    self.shape.id()
                ),
                detail,
            }
        })?;
        self.worst_error = Some(worst);
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(self.dev, iters, || self.launch_once())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("io_bytes".into(), self.shape.io_bytes(T::DTYPE).into());
        notes.insert(
            "scratch_bytes".into(),
            self.scores.as_ref().map_or(0, |s| s.bytes()).into(),
        );
        notes.insert("peak_memory_bytes".into(), self.allocated_bytes().into());
        if let Some(drop) = self.free_drop_bytes {
            notes.insert("device_free_memory_drop_bytes".into(), drop.into());
        }
        notes.insert(
            "implementation".into(),
            match self.kernel {
                AttentionKernel::Standard => "cublasGemmStridedBatchedEx + softmax kernel",
                AttentionKernel::Flash => "stackbench NVRTC online-softmax kernel (CUDA cores)",
            }
            .into(),
        );
        if let Some(worst) = self.worst_error {
            notes.insert("worst_scaled_error".into(), worst.into());
        }
        self.timer.notes(self.dev, &mut notes);
        notes
    }
}
