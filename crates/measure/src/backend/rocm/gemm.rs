//! GEMM through rocBLAS (`rocblas_gemm_ex`): f64, f32, f16 and bf16 with f32 accumulation,
//! checked against the f64 reference before it is timed.

use crate::backend::gpu::checked::{GemmCheck, check_float_gemm};
use crate::backend::gpu::unit_scalars;
use crate::backend::{BackendError, BackendKind, TimedWorkload, with_accuracy};
use crate::workload::gemm::bench_id as gemm_id;
use crate::workload::random::normal_f64;
use crate::workload::{DType, GemmShape};
use half::{bf16, f16};
use rocmrc::hip::safe::HipSlice;
use rocmrc::rocblas::result as rb;
use rocmrc::rocblas::sys as rbsys;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::time::Duration;

use super::RocmBackend;
use super::device::device_error;

/// A rocBLAS handle; dropping it never panics.
pub(super) struct RocBlas(pub(super) rbsys::rocblas_handle);

impl RocBlas {
    /// The handle of `dev`'s rocBLAS; null when it did not load, which the GEMMs' `new`
    /// turned into a skip before anything launches.
    pub(super) fn handle_of(dev: &RocmBackend) -> rbsys::rocblas_handle {
        dev.blas.ready().map_or(std::ptr::null_mut(), |b| b.0)
    }
}

/// A rocBLAS call's status as a result: anything but success is a device error of
/// `context`.
pub(super) fn status_result(
    status: rbsys::rocblas_status,
    context: impl FnOnce() -> String,
) -> Result<(), BackendError> {
    if status == rbsys::rocblas_status::rocblas_status_success {
        Ok(())
    } else {
        Err(device_error(context(), status))
    }
}

impl Drop for RocBlas {
    fn drop(&mut self) {
        // SAFETY: created in `open`, destroyed once.
        let _ = unsafe { rb::destroy_handle(self.0) };
    }
}

pub(super) enum Operands {
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
    check: GemmCheck<f64>,
}

impl<'a> RocblasGemm<'a> {
    pub(super) fn new(
        dev: &'a RocmBackend,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Self, BackendError> {
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
            check: GemmCheck::new(a, b),
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
        let handle = RocBlas::handle_of(self.dev);
        let GemmShape { m, n, k } = self.shape;
        let ([a, b, c], (data, compute)) = (self.pointers(), self.types());
        let (alpha, beta) = unit_scalars(self.dtype);
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
        status_result(status, || {
            format!("rocblas_gemm_ex {} {}", self.dtype, self.shape)
        })
    }

    fn result(&self) -> Result<Vec<f64>, BackendError> {
        match &self.operands {
            Operands::F64([_, _, c]) => self.download(c, |v| v),
            Operands::F32([_, _, c]) => self.download(c, |v| v as f64),
            Operands::F16([_, _, c]) => self.download(c, |v| v.to_f64()),
            Operands::Bf16([_, _, c]) => self.download(c, |v| v.to_f64()),
        }
    }

    /// C read back and widened to f64 for the check.
    fn download<T: rocmrc::hip::safe::DeviceRepr + Clone + Default>(
        &self,
        c: &HipSlice<T>,
        widen: impl Fn(T) -> f64,
    ) -> Result<Vec<f64>, BackendError> {
        let values = self
            .dev
            .stream
            .clone_dtoh(c)
            .map_err(|e| device_error("download", e))?;
        Ok(values.into_iter().map(widen).collect())
    }
}

impl TimedWorkload for RocblasGemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        self.dev.sync()?;
        let c = self.result()?;
        let (shape, dtype) = (self.shape, self.dtype);
        self.check.check(&gemm_id("rocm", dtype, shape), |a, b| {
            check_float_gemm(shape, dtype, [a, b, &c], 0x0C0D)
        })
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.dev.time(true, iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("library".into(), "rocBLAS rocblas_gemm_ex".into());
        notes.insert("timing".into(), "HIP events".into());
        notes.insert("cache_flushed_before_each_sample".into(), true.into());
        with_accuracy(notes, self.check.accuracy())
    }
}
