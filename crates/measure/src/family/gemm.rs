//! GEMM, C = A·B per backend, precision and shape: ids `gemm/<backend>/<dtype>/<M>x<N>x<K>`
//! for the backend's own kernels and, on the CPU, `gemm/cpu/blas_<dtype>/...` for f32 and
//! f64 through a BLAS library loaded at run time (`backend/cpu/blas.rs`),
//! throughput 2·M·N·K elements (FLOP/s, and integer operations per second for `int8` and
//! `int8q`), the FP6/FP4 rows skipped with the device's reason. The shapes, FLOP count and
//! reference live in `workload::gemm`; the kernels in `backend/cpu` (the `gemm` crate, the
//! int8 kernels) and each GPU vendor's BLAS.

use super::{Case, grid3};
use crate::backend::cpu::{CpuBackend, blas::Blas, gemm::CpuGemm, gemm_int8::CpuInt8Gemm};
use crate::backend::gpu::GpuBackend;
use crate::backend::{BackendError, TimedWorkload, sub_byte_gemm_skip};
use crate::workload::family;
use crate::workload::gemm::{self as axes, GemmShape, in_quick_suite};
use crate::workload::{DType, Suite};
use criterion::Throughput;

/// The GEMM family.
pub struct Gemm;

/// What a backend does for GEMM: its precisions, its shapes, and a timed GEMM.
pub trait GemmBackend {
    /// Precisions this backend runs GEMM in (others are recorded as skipped).
    fn gemm_dtypes(&self) -> Vec<DType>;

    /// GEMM shapes this backend covers in `suite`.
    fn gemm_shapes(&self, suite: Suite) -> Vec<GemmShape>;

    /// Whether the quick suite times `dtype` at `shape` (the full suite times every one).
    fn in_quick_suite(&self, dtype: DType, shape: GemmShape) -> bool {
        in_quick_suite(dtype, shape)
    }

    fn gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;

    /// Precisions this backend also runs through a BLAS library beside its own kernels
    /// (ids `gemm/<backend>/blas_<dtype>/...`). A GPU's GEMM is its vendor's BLAS already.
    fn blas_gemm_dtypes(&self) -> Vec<DType> {
        Vec::new()
    }

    /// The GEMM of that library; a skip with the reason where none is installed.
    fn blas_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        Err(BackendError::unsupported(
            crate::backend::BackendKind::Cpu,
            format!("BLAS gemm {dtype} {shape}"),
            "this backend has no separate BLAS path",
        ))
    }
}

impl GemmBackend for CpuBackend {
    fn gemm_dtypes(&self) -> Vec<DType> {
        vec![
            DType::F32,
            DType::F64,
            DType::F16,
            DType::Bf16,
            DType::Int8,
            DType::Int8q,
        ]
    }

    fn gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        axes::cpu_shapes(suite)
    }

    fn in_quick_suite(&self, dtype: DType, shape: GemmShape) -> bool {
        axes::in_cpu_quick_suite(dtype, shape)
    }

    fn gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        if dtype.is_integer() {
            return Ok(Box::new(CpuInt8Gemm::new(&self.pool, shape, dtype)?));
        }
        Ok(Box::new(CpuGemm::new(shape, dtype, self.pool.threads())?))
    }

    fn blas_gemm_dtypes(&self) -> Vec<DType> {
        vec![DType::F32, DType::F64]
    }

    /// Loaded once per process; the library's thread count is set to the pool's (one in
    /// counting mode, where the pool is inline and the library must run on the caller).
    fn blas_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let blas = Blas::shared().map_err(|reason| {
            BackendError::unsupported(
                crate::backend::BackendKind::Cpu,
                format!("BLAS gemm {dtype}"),
                reason.clone(),
            )
        })?;
        Ok(Box::new(CpuGemm::with_blas(
            shape,
            dtype,
            self.pool.threads(),
            blas,
        )?))
    }
}

impl<T: GpuBackend + ?Sized> GemmBackend for T {
    fn gemm_dtypes(&self) -> Vec<DType> {
        self.blas_dtypes()
    }

    fn gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        self.gpu_gemm_shapes(suite)
    }

    fn gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_gemm(shape, dtype)
    }
}

on_every_peer!(Gemm, family::GEMM, GemmBackend, |backend, on, suite| {
    let kind = backend.kind().id();
    let shapes = on.gemm_shapes(suite);
    // The backend's own kernels, then the same GEMMs through a BLAS library where the
    // backend has a separate one (`blas_<dtype>` ids).
    let own = grid3([false], on.gemm_dtypes(), shapes.iter().copied());
    let blas = grid3([true], on.blas_gemm_dtypes(), shapes.iter().copied());
    let points = own.into_iter().chain(blas);
    let points =
        points.filter(|&(_, dtype, shape)| suite == Suite::Full || on.in_quick_suite(dtype, shape));
    let mut cases = Case::measure_each(
        backend.sampling(suite),
        points,
        |(blas, dtype, shape)| {
            let id = if blas {
                axes::blas_bench_id(kind, dtype, shape)
            } else {
                axes::bench_id(kind, dtype, shape)
            };
            (id, Throughput::Elements(shape.flops()))
        },
        move |(blas, dtype, shape)| {
            if blas {
                on.blas_gemm(shape, dtype)
            } else {
                on.gemm(shape, dtype)
            }
        },
    );
    // FP6/FP4 rows: skipped with the device's reason (no backend runs them yet).
    for format in axes::SUB_BYTE_FORMATS {
        let reason = sub_byte_gemm_skip(backend.device(), format);
        for &shape in &shapes {
            if suite == Suite::Quick && shape.m != shape.n {
                continue;
            }
            let id = axes::sub_byte_bench_id(kind, format, shape);
            cases.push(Case::skip(id, reason.clone()));
        }
    }
    cases
});
