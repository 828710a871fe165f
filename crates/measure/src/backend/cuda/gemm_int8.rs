//! INT8 GEMM on NVIDIA GPUs through cuBLASLt IMMA: int8 A and B (`CUDA_R_8I`),
//! `CUBLAS_COMPUTE_32I`, and either int32 output with int32 scalars (`int8`, what torch
//! `_int_mm` calls) or int8 output with an f32 per-tensor scale as alpha (`int8q`, the
//! requantisation of `workload::int8`). Same TN layout as FP8 (`gemm::LtPlan`): A
//! row-major, B stored transposed, D row-major.
//!
//! Checked on the CPU for equality with the exact i64 reference of the same inputs.
//! Unconfirmed until `ci/gpu_tests.sh` runs on a GPU: that cuBLASLt's int8 epilogue rounds
//! alpha·acc half to even in f32 as the reference does (PTX `cvt.rni.sat.s8.f32` would);
//! a different rounding fails `int8q`'s check with the entry named, never a silent pass.

use super::CudaBackend;
use super::device::DeviceBuffer;
use super::gemm::{LtGemm, LtTypes};
use crate::backend::gpu::GpuTimer;
use crate::backend::gpu::checked::{GEMM_RANDOM_CHECKS, GemmCheck, close_notes};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::gemm::{bench_id as gemm_id, check_positions};
use crate::workload::int8::{
    ARITHMETIC, REQUANT_SCHEME, Requant, check_int8, check_int8q, quantized_inputs,
};
use crate::workload::{DType, GemmShape};
use cudarc::cublaslt::sys as ltsys;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::Duration;

const SEED_A: u64 = 0x0C0D_A18A;
const SEED_B: u64 = 0x0C0D_A18B;

/// The output: int32 sums or requantised int8.
enum Output {
    Sums(DeviceBuffer<i32>),
    Requantised(DeviceBuffer<i8>),
}

pub struct ImmaGemm<'a> {
    gemm: LtGemm<'a, i8>,
    d_dev: Output,
    requant: Requant,
    check: GemmCheck<i8>,
}

impl<'a> ImmaGemm<'a> {
    pub fn new(dev: &'a CudaBackend, shape: GemmShape, dtype: DType) -> Result<Self, BackendError> {
        let what = format!("gemm {dtype} {shape}");
        if !dtype.is_integer() {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                what,
                "not an integer precision",
            ));
        }
        if dev.compute_capability < (7, 5) {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                what,
                "INT8 tensor cores (IMMA) need compute capability 7.5 or newer",
            ));
        }
        let lt = dev.lt.get(BackendKind::Cuda, &what)?;
        let GemmShape { m, n, k } = shape;
        if m % 4 != 0 || n % 4 != 0 || k % 4 != 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                what,
                "cuBLASLt IMMA needs every dimension a multiple of 4",
            ));
        }
        let a = quantized_inputs(SEED_A, m * k);
        let b = quantized_inputs(SEED_B, k * n);
        let requant = Requant::for_inputs(k, &a, &b);
        use ltsys::cudaDataType_t as T;
        let (d_dev, scale, d) = match dtype {
            DType::Int8q => (
                Output::Requantised(DeviceBuffer::upload(dev, &vec![0i8; m * n])?),
                T::CUDA_R_32F,
                T::CUDA_R_8I,
            ),
            _ => (
                Output::Sums(DeviceBuffer::upload(dev, &vec![0i32; m * n])?),
                T::CUDA_R_32I,
                T::CUDA_R_32I,
            ),
        };
        let types = LtTypes {
            compute: ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32I,
            scale,
            x: T::CUDA_R_8I,
            y: T::CUDA_R_8I,
            d,
        };
        let gemm = LtGemm::new(dev, lt, shape, dtype, [&a, &b], types)?;
        Ok(ImmaGemm {
            gemm,
            d_dev,
            requant,
            check: GemmCheck::new(a, b),
        })
    }

    fn launch(&self) -> Result<(), BackendError> {
        // Scalars in the scale type: int32 1 and 0 for sums, the f32 scale for int8q.
        let (one, zero) = (1i32, 0i32);
        let (scale, fzero) = (self.requant.scale, 0.0f32);
        let (alpha, beta, d): (*const c_void, *const c_void, u64) = match &self.d_dev {
            Output::Sums(d) => (&one as *const i32 as _, &zero as *const i32 as _, d.ptr),
            Output::Requantised(d) => (&scale as *const f32 as _, &fzero as *const f32 as _, d.ptr),
        };
        // SAFETY: the scalars are of the plan's scale type (int32, or f32 for int8q) and
        // live until the call returns; D is the output of the plan's D type.
        unsafe { self.gemm.launch(alpha, beta, d) }
    }
}

impl TimedWorkload for ImmaGemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        let (dev, shape, n) = (self.gemm.dev, self.gemm.shape, self.gemm.shape.n);
        dev.synchronize()?;
        let positions = check_positions(shape, GEMM_RANDOM_CHECKS, SEED_A ^ SEED_B);
        let id = gemm_id("cuda", self.gemm.dtype, shape);
        match &self.d_dev {
            Output::Sums(d) => {
                let c = d.download(dev)?;
                self.check.check(&id, |a, b| {
                    check_int8(shape, a, b, |i, j| c[i * n + j], &positions)
                })
            }
            Output::Requantised(d) => {
                let c = d.download(dev)?;
                let requant = self.requant;
                self.check.check(&id, |a, b| {
                    check_int8q(shape, a, b, requant, |i, j| c[i * n + j], &positions)
                })
            }
        }
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.gemm.timer.time(iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        let library = match self.gemm.dtype {
            DType::Int8q => "cuBLASLt cublasLtMatmul IMMA (TN, int8 output, f32 alpha)",
            _ => "cuBLASLt cublasLtMatmul IMMA (TN, int32 output)",
        };
        notes.insert("library".into(), library.into());
        notes.insert("compute_type".into(), "CUBLAS_COMPUTE_32I".into());
        notes.insert("arithmetic".into(), ARITHMETIC.into());
        if self.gemm.dtype == DType::Int8q {
            notes.insert("requantisation".into(), REQUANT_SCHEME.into());
            notes.insert("requant_scale".into(), (self.requant.scale as f64).into());
        }
        close_notes(&mut notes, self.check.accuracy(), &self.gemm.timer);
        notes
    }
}
