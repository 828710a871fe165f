//! INT8 GEMM on AMD GPUs through `rocblas_gemm_ex`: int8 A and B, int32 C and D, int32
//! compute and scalars (what torch `_int_mm` runs on ROCm), row-major as Cᵀ = Bᵀ·Aᵀ like
//! the float GEMMs. Checked on the CPU for equality with the exact i64 reference.
//!
//! `int8q` (int8 output with a float scale) has no rocBLAS form: rocBLAS's int8 GEMMs write
//! int32 only. It needs hipBLASLt, which stackbench does not load yet, so it is a skip that
//! says so. Unconfirmed until `ci/gpu_tests.sh` runs on an AMD GPU: rocBLAS before 4.2 on
//! MI100 and older wanted `rocblas_gemm_flags_pack_int8x4` inputs; current rocBLAS takes
//! the plain layout with flags 0, which is what this passes.

use super::RocmBackend;
use super::device::device_error;
use super::gemm::{RocBlas, status_result};
use crate::backend::gpu::checked::{GEMM_RANDOM_CHECKS, GemmCheck};
use crate::backend::{BackendError, BackendKind, TimedWorkload, with_accuracy};
use crate::workload::gemm::{bench_id as gemm_id, check_positions};
use crate::workload::int8::{ARITHMETIC, check_int8, quantized_inputs};
use crate::workload::{DType, GemmShape};
use rocmrc::hip::safe::HipSlice;
use rocmrc::rocblas::sys as rbsys;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::Duration;

const SEED_A: u64 = 0x0C0D_A18A;
const SEED_B: u64 = 0x0C0D_A18B;

pub struct RocblasInt8Gemm<'a> {
    dev: &'a RocmBackend,
    shape: GemmShape,
    a_dev: HipSlice<i8>,
    b_dev: HipSlice<i8>,
    c_dev: HipSlice<i32>,
    check: GemmCheck<i8>,
}

impl<'a> RocblasInt8Gemm<'a> {
    pub(super) fn new(
        dev: &'a RocmBackend,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Self, BackendError> {
        let what = format!("gemm {dtype} {shape}");
        if dtype != DType::Int8 {
            return Err(BackendError::unsupported(
                BackendKind::Rocm,
                what,
                "rocBLAS int8 GEMMs write int32 only; requantised int8 output needs hipBLASLt, \
                 which stackbench does not load yet",
            ));
        }
        dev.blas.get(BackendKind::Rocm, &what)?;
        let GemmShape { m, n, k } = shape;
        let a = quantized_inputs(SEED_A, m * k);
        let b = quantized_inputs(SEED_B, k * n);
        Ok(RocblasInt8Gemm {
            dev,
            shape,
            a_dev: dev.upload(&a)?,
            b_dev: dev.upload(&b)?,
            c_dev: dev.upload(&vec![0i32; m * n])?,
            check: GemmCheck::new(a, b),
        })
    }

    fn launch(&self) -> Result<(), BackendError> {
        use rbsys::rocblas_datatype as D;
        let handle = RocBlas::handle_of(self.dev);
        let GemmShape { m, n, k } = self.shape;
        let (a, b, c) = (
            self.dev.ptr(&self.a_dev),
            self.dev.ptr(&self.b_dev),
            self.dev.ptr(&self.c_dev),
        );
        let (one, zero) = (1i32, 0i32);
        let op = rbsys::rocblas_operation::rocblas_operation_none;
        // SAFETY: A and B hold M·K and K·N int8, C holds M·N int32 (also D, in place); the
        // int32 scalars live until the call returns.
        let status = unsafe {
            rbsys::rocblas_gemm_ex(
                handle,
                op,
                op,
                n as i32,
                m as i32,
                k as i32,
                &one as *const i32 as *const c_void,
                b as *const c_void,
                D::rocblas_datatype_i8_r,
                n as i32,
                a as *const c_void,
                D::rocblas_datatype_i8_r,
                k as i32,
                &zero as *const i32 as *const c_void,
                c as *const c_void,
                D::rocblas_datatype_i32_r,
                n as i32,
                c as *mut c_void,
                D::rocblas_datatype_i32_r,
                n as i32,
                D::rocblas_datatype_i32_r,
                rbsys::rocblas_gemm_algo::rocblas_gemm_algo_standard,
                0,
                0,
            )
        };
        status_result(status, || format!("rocblas_gemm_ex int8 {}", self.shape))
    }
}

impl TimedWorkload for RocblasInt8Gemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        self.dev.sync()?;
        let c = self
            .dev
            .stream
            .clone_dtoh(&self.c_dev)
            .map_err(|e| device_error("download", e))?;
        let (shape, n) = (self.shape, self.shape.n);
        let positions = check_positions(shape, GEMM_RANDOM_CHECKS, SEED_A ^ SEED_B);
        self.check
            .check(&gemm_id("rocm", DType::Int8, shape), |a, b| {
                check_int8(shape, a, b, |i, j| c[i * n + j], &positions)
            })
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.dev.time(true, iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let notes = BTreeMap::from([
            (
                "library".into(),
                "rocBLAS rocblas_gemm_ex (int8 in, int32 out, int32 compute)".into(),
            ),
            ("timing".into(), "HIP events".into()),
            ("cache_flushed_before_each_sample".into(), true.into()),
            ("arithmetic".into(), ARITHMETIC.into()),
        ]);
        with_accuracy(notes, self.check.accuracy())
    }
}
