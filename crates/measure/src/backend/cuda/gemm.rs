//! GEMM on NVIDIA GPUs.
//!
//! f64, f32, TF32, f16 and bf16 go through `cublasGemmEx`, with the compute type naming
//! the math: `CUBLAS_COMPUTE_32F` is plain FP32 (the `f32` id), `CUBLAS_COMPUTE_32F_FAST_TF32`
//! lets cuBLAS use TF32 tensor cores (the `tf32` id), and f16/bf16 inputs and outputs
//! accumulate in f32, as `torch.matmul` does. FP8 (e4m3 inputs, bf16 output, f32
//! accumulation) needs cuBLASLt and Ada or Hopper; its algorithm is chosen once by the
//! heuristic, outside the timed window (cuBLASLt would re-run it on every call otherwise).
//!
//! cuBLAS is column-major and the workload is row-major: C = A·B row-major is Cᵀ = Bᵀ·Aᵀ
//! column-major, so the call passes B as the first operand and swaps M and N.

use super::CudaBackend;
use super::device::{DeviceBuffer, DeviceTimer, device_error, raw_stream, text};
use crate::backend::gpu::checked::{GemmCheck, check_float_gemm, close_notes};
use crate::backend::gpu::{GpuTimer, unit_scalars};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::fp8::{
    fp8_e4m3_from_f32, fp8_e4m3_to_f32, fp8_e5m2_from_f32, fp8_e5m2_to_f32,
};
use crate::workload::gemm::bench_id as gemm_id;
use crate::workload::random::normal_f64;
use crate::workload::{DType, GemmShape};
use cudarc::cublas::result as blas;
use cudarc::cublas::sys as bsys;
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys as ltsys;
use cudarc::driver::CudaContext;
use cudarc::driver::CudaStream;
use half::{bf16, f16};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

const SEED_A: u64 = 0x0C0D_A00A;
const SEED_B: u64 = 0x0C0D_A00B;
/// cuBLASLt workspace: 32 MiB, NVIDIA's recommendation for Hopper.
const LT_WORKSPACE_BYTES: usize = 32 << 20;

/// A cuBLAS handle bound to the backend's stream. Dropping it never panics.
pub struct Blas {
    pub(crate) handle: bsys::cublasHandle_t,
}

impl Blas {
    pub fn new(stream: &Arc<CudaStream>) -> Result<Blas, BackendError> {
        let handle = blas::create_handle().map_err(|e| device_error("cublasCreate")(text(e)))?;
        let blas = Blas { handle };
        // SAFETY: the handle was just created; the stream outlives the backend's handles.
        unsafe { blas::set_stream(handle, stream.cu_stream() as bsys::cudaStream_t) }
            .map_err(|e| device_error("cublasSetStream")(text(e)))?;
        Ok(blas)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once. An error cannot be handled here.
        let _ = unsafe { blas::destroy_handle(self.handle) };
    }
}

/// A cuBLASLt handle and its workspace. Dropping it never panics.
pub struct BlasLt {
    pub(super) handle: ltsys::cublasLtHandle_t,
    pub(super) workspace: DeviceBuffer<u8>,
}

impl BlasLt {
    pub fn new(_ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Result<BlasLt, BackendError> {
        let handle = lt::create_handle().map_err(|e| device_error("cublasLtCreate")(text(e)))?;
        let workspace = match DeviceBuffer::zeroed_on(stream, LT_WORKSPACE_BYTES) {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: created just above and not shared.
                let _ = unsafe { lt::destroy_handle(handle) };
                return Err(e);
            }
        };
        Ok(BlasLt { handle, workspace })
    }
}

impl Drop for BlasLt {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// Device operands in the GEMM's storage type.
enum Operands {
    F64([DeviceBuffer<f64>; 3]),
    F32([DeviceBuffer<f32>; 3]),
    F16([DeviceBuffer<f16>; 3]),
    Bf16([DeviceBuffer<bf16>; 3]),
}

/// Rounds f64 inputs to the storage type, uploads them, and returns the rounded values
/// (what the kernel reads, so what the check compares against).
fn upload_rounded<T: cudarc::driver::DeviceRepr + Copy>(
    dev: &CudaBackend,
    values: &[f64],
    to: impl Fn(f64) -> T,
    back: impl Fn(T) -> f64,
) -> Result<(DeviceBuffer<T>, Vec<f64>), BackendError> {
    let stored: Vec<T> = values.iter().map(|&v| to(v)).collect();
    let rounded = stored.iter().map(|&v| back(v)).collect();
    Ok((DeviceBuffer::upload(dev, &stored)?, rounded))
}

pub struct CublasGemm<'a> {
    dev: &'a CudaBackend,
    blas: &'a Blas,
    shape: GemmShape,
    dtype: DType,
    operands: Operands,
    check: GemmCheck<f64>,
    timer: DeviceTimer<'a>,
}

impl<'a> CublasGemm<'a> {
    pub fn new(
        dev: &'a CudaBackend,
        blas: &'a Blas,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Self, BackendError> {
        let GemmShape { m, n, k } = shape;
        let a64 = normal_f64(SEED_A, m * k);
        let b64 = normal_f64(SEED_B, k * n);
        macro_rules! three {
            ($variant:ident, $to:expr, $back:expr, $zero:expr) => {{
                let (a, ra) = upload_rounded(dev, &a64, $to, $back)?;
                let (b, rb) = upload_rounded(dev, &b64, $to, $back)?;
                let c = DeviceBuffer::upload(dev, &vec![$zero; m * n])?;
                (Operands::$variant([a, b, c]), ra, rb)
            }};
        }
        let (operands, a, b) = match dtype {
            DType::F64 => three!(F64, |v| v, |v| v, 0.0f64),
            DType::F32 | DType::Tf32 => three!(F32, |v| v as f32, |v| v as f64, 0.0f32),
            DType::F16 => three!(F16, f16::from_f64, |v: f16| v.to_f64(), f16::ZERO),
            DType::Bf16 => three!(Bf16, bf16::from_f64, |v: bf16| v.to_f64(), bf16::ZERO),
            other => {
                return Err(BackendError::unsupported(
                    BackendKind::Cuda,
                    format!("gemm {other}"),
                    "FP8 and INT8 run through cuBLASLt (Fp8Gemm, ImmaGemm)",
                ));
            }
        };
        Ok(CublasGemm {
            dev,
            blas,
            shape,
            dtype,
            operands,
            check: GemmCheck::new(a, b),
            timer: DeviceTimer::new(dev, true)?,
        })
    }

    /// The cuBLAS data type and compute type of this benchmark's precision.
    fn types(&self) -> (bsys::cudaDataType, bsys::cublasComputeType_t) {
        use bsys::cublasComputeType_t as C;
        use bsys::cudaDataType as T;
        match self.dtype {
            DType::F64 => (T::CUDA_R_64F, C::CUBLAS_COMPUTE_64F),
            DType::Tf32 => (T::CUDA_R_32F, C::CUBLAS_COMPUTE_32F_FAST_TF32),
            DType::F16 => (T::CUDA_R_16F, C::CUBLAS_COMPUTE_32F),
            DType::Bf16 => (T::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F),
            _ => (T::CUDA_R_32F, C::CUBLAS_COMPUTE_32F),
        }
    }

    fn pointers(&self) -> (u64, u64, u64) {
        match &self.operands {
            Operands::F64([a, b, c]) => (a.ptr, b.ptr, c.ptr),
            Operands::F32([a, b, c]) => (a.ptr, b.ptr, c.ptr),
            Operands::F16([a, b, c]) => (a.ptr, b.ptr, c.ptr),
            Operands::Bf16([a, b, c]) => (a.ptr, b.ptr, c.ptr),
        }
    }

    /// Enqueues one C = A·B.
    fn launch(&self) -> Result<(), BackendError> {
        let GemmShape { m, n, k } = self.shape;
        let (a, b, c) = self.pointers();
        let (data, compute) = self.types();
        let (alpha, beta) = unit_scalars(self.dtype);
        let op = bsys::cublasOperation_t::CUBLAS_OP_N;
        // SAFETY: the buffers hold M·K, K·N and M·N elements of `data`; the scalars are
        // statics (cuBLAS reads host scalars before returning).
        unsafe {
            blas::gemm_ex(
                self.blas.handle,
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
                c as *mut c_void,
                data,
                n as i32,
                compute,
                bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| device_error(format!("cublasGemmEx {} {}", self.dtype, self.shape))(text(e)))
    }

    fn result(&self) -> Result<Vec<f64>, BackendError> {
        Ok(match &self.operands {
            Operands::F64([_, _, c]) => c.download(self.dev)?,
            Operands::F32([_, _, c]) => widen(c.download(self.dev)?, |v| v as f64),
            Operands::F16([_, _, c]) => widen(c.download(self.dev)?, |v| v.to_f64()),
            Operands::Bf16([_, _, c]) => widen(c.download(self.dev)?, |v| v.to_f64()),
        })
    }
}

pub(super) fn widen<T: Copy>(values: Vec<T>, f: impl Fn(T) -> f64) -> Vec<f64> {
    values.into_iter().map(f).collect()
}

/// Checks C (row-major M×N, as f64) against the f64 product of the stored inputs.
fn check(
    inputs: &mut GemmCheck<f64>,
    shape: GemmShape,
    dtype: DType,
    c: &[f64],
) -> Result<(), BackendError> {
    inputs.check(&gemm_id("cuda", dtype, shape), |a, b| {
        check_float_gemm(shape, dtype, [a, b, c], SEED_A ^ SEED_B)
    })
}

impl TimedWorkload for CublasGemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        self.dev.synchronize()?;
        let c = self.result()?;
        check(&mut self.check, self.shape, self.dtype, &c)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        let (_, compute) = self.types();
        notes.insert("library".into(), "cuBLAS cublasGemmEx".into());
        notes.insert("compute_type".into(), format!("{compute:?}").into());
        close_notes(&mut notes, self.check.accuracy(), &self.timer);
        notes
    }
}

/// FP8 GEMM through cuBLASLt: A row-major M×K, B stored transposed (N×K row-major, the
/// "TN" layout FP8 requires), D row-major M×N in bf16. `fp8e4m3` has both inputs in e4m3;
/// `fp8e5m2` has A in e5m2 and B in e4m3, because cuBLASLt has no e5m2×e5m2 kernel (the
/// mixed pair is what training's backward pass runs: e5m2 gradients × e4m3 weights).
pub struct Fp8Gemm<'a> {
    gemm: LtGemm<'a, u8>,
    d_dev: DeviceBuffer<bf16>,
    check: GemmCheck<f64>,
}

impl<'a> Fp8Gemm<'a> {
    pub fn new(dev: &'a CudaBackend, shape: GemmShape, dtype: DType) -> Result<Self, BackendError> {
        if dev.compute_capability < (8, 9) {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                format!("gemm {dtype}"),
                "FP8 tensor cores need compute capability 8.9 or newer",
            ));
        }
        let lt = dev.lt.get(BackendKind::Cuda, &format!("gemm {dtype}"))?;
        let GemmShape { m, n, k } = shape;
        if m % 16 != 0 || n % 16 != 0 || k % 16 != 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                format!("gemm {dtype} {shape}"),
                "cuBLASLt FP8 needs every dimension a multiple of 16",
            ));
        }
        let encode = |v: &[f64], to: fn(f32) -> u8, back: fn(u8) -> f32| -> (Vec<u8>, Vec<f64>) {
            let bytes: Vec<u8> = v.iter().map(|&x| to(x as f32)).collect();
            let values = bytes.iter().map(|&b| back(b) as f64).collect();
            (bytes, values)
        };
        let (a_type, a_to, a_back) = match dtype {
            DType::Fp8E5m2 => (
                ltsys::cudaDataType_t::CUDA_R_8F_E5M2,
                fp8_e5m2_from_f32 as fn(f32) -> u8,
                fp8_e5m2_to_f32 as fn(u8) -> f32,
            ),
            _ => (
                ltsys::cudaDataType_t::CUDA_R_8F_E4M3,
                fp8_e4m3_from_f32 as fn(f32) -> u8,
                fp8_e4m3_to_f32 as fn(u8) -> f32,
            ),
        };
        let (a_bytes, a) = encode(&normal_f64(SEED_A, m * k), a_to, a_back);
        let (b_bytes, b) = encode(
            &normal_f64(SEED_B, k * n),
            fp8_e4m3_from_f32,
            fp8_e4m3_to_f32,
        );
        let types = LtTypes {
            compute: ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            scale: ltsys::cudaDataType_t::CUDA_R_32F,
            // X is the Bᵀ buffer, Y the A buffer (see `LtPlan::new`).
            x: ltsys::cudaDataType_t::CUDA_R_8F_E4M3,
            y: a_type,
            d: ltsys::cudaDataType_t::CUDA_R_16BF,
        };
        let gemm = LtGemm::new(dev, lt, shape, dtype, [&a_bytes, &b_bytes], types)?;
        Ok(Fp8Gemm {
            gemm,
            d_dev: DeviceBuffer::upload(dev, &vec![bf16::ZERO; m * n])?,
            check: GemmCheck::new(a, b),
        })
    }

    fn launch(&self) -> Result<(), BackendError> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the scalars are f32 as the plan's scale type, and live until it returns;
        // D holds M×N bf16, the plan's D type.
        unsafe {
            self.gemm.launch(
                &alpha as *const f32 as *const c_void,
                &beta as *const f32 as *const c_void,
                self.d_dev.ptr,
            )
        }
    }
}

/// What the cuBLASLt TN GEMMs (FP8 and IMMA) hold besides their output and check: the
/// device and handle, A and Bᵀ on the device in the input type, the plan and the timer.
pub(super) struct LtGemm<'a, I> {
    pub(super) dev: &'a CudaBackend,
    lt: &'a BlasLt,
    pub(super) shape: GemmShape,
    pub(super) dtype: DType,
    a_dev: DeviceBuffer<I>,
    bt_dev: DeviceBuffer<I>,
    plan: LtPlan,
    pub(super) timer: DeviceTimer<'a>,
}

impl<'a, I: cudarc::driver::DeviceRepr + Copy + Default> LtGemm<'a, I> {
    /// Uploads A (M×K row-major) and B (K×N row-major) stored transposed, the X operand
    /// the plan's layouts expect, and plans the matmul of `types`.
    pub(super) fn new(
        dev: &'a CudaBackend,
        lt: &'a BlasLt,
        shape: GemmShape,
        dtype: DType,
        [a, b]: [&[I]; 2],
        types: LtTypes,
    ) -> Result<Self, BackendError> {
        let a_dev = DeviceBuffer::upload(dev, a)?;
        let bt_dev = DeviceBuffer::upload(dev, &transposed(b, shape.k, shape.n))?;
        Ok(LtGemm {
            dev,
            lt,
            shape,
            dtype,
            a_dev,
            bt_dev,
            plan: LtPlan::new(lt, shape, types)?,
            timer: DeviceTimer::new(dev, true)?,
        })
    }

    /// Enqueues D = A·B into `d`.
    ///
    /// # Safety
    /// As [`LtPlan::matmul`]: `alpha` and `beta` point at scalars of the plan's scale type
    /// that live until this returns, and `d` holds M×N of the plan's D type.
    pub(super) unsafe fn launch(
        &self,
        alpha: *const c_void,
        beta: *const c_void,
        d: u64,
    ) -> Result<(), BackendError> {
        // SAFETY: A and Bᵀ were uploaded for the plan's shape; the rest is the caller's.
        unsafe {
            self.plan.matmul(
                self.lt,
                self.dev,
                alpha,
                beta,
                [self.bt_dev.ptr, self.a_dev.ptr, d],
            )
        }
        .map_err(|e| device_error(format!("cublasLtMatmul {} {}", self.dtype, self.shape))(text(e)))
    }
}

/// The types of one cuBLASLt TN matmul: compute and scale types, X (the Bᵀ buffer), Y
/// (the A buffer) and D.
#[derive(Clone, Copy)]
pub(super) struct LtTypes {
    pub compute: ltsys::cublasComputeType_t,
    pub scale: ltsys::cudaDataType_t,
    pub x: ltsys::cudaDataType_t,
    pub y: ltsys::cudaDataType_t,
    pub d: ltsys::cudaDataType_t,
}

/// Descriptor, layouts and algorithm of one cuBLASLt TN matmul, destroyed once on drop.
pub(super) struct LtPlan {
    layouts: [Layout; 3],
    desc: Desc,
    algo: ltsys::cublasLtMatmulAlgo_t,
}

// Each cuBLASLt object is wrapped the moment it is created and destroyed when its wrapper
// is dropped, so an error part-way through `LtPlan::new` frees what was made before it.

/// A matmul descriptor.
struct Desc(ltsys::cublasLtMatmulDesc_t);
/// A matrix layout.
struct Layout(ltsys::cublasLtMatrixLayout_t);
/// A matmul preference (only while the algorithm is chosen).
struct Pref(ltsys::cublasLtMatmulPreference_t);

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by cuBLASLt, owned by this wrapper alone, destroyed once, here.
        let _ = unsafe { lt::destroy_matmul_desc(self.0) };
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created by cuBLASLt, owned by this wrapper alone, destroyed once, here.
        let _ = unsafe { lt::destroy_matrix_layout(self.0) };
    }
}

impl Drop for Pref {
    fn drop(&mut self) {
        // SAFETY: created by cuBLASLt, owned by this wrapper alone, destroyed once, here.
        let _ = unsafe { lt::destroy_matmul_pref(self.0) };
    }
}

impl LtPlan {
    /// The plan for Dcol(N×M) = Xᵀ·Y where X is the Bᵀ buffer seen column-major (K×N, ld
    /// K, transposed by the op) and Y the A buffer seen column-major (K×M, ld K). Dcol
    /// column-major N×M with ld N is C row-major M×N.
    pub(super) fn new(
        lt_handle: &BlasLt,
        shape: GemmShape,
        types: LtTypes,
    ) -> Result<LtPlan, BackendError> {
        let GemmShape { m, n, k } = shape;
        let err = |what: &'static str| {
            move |e: cudarc::cublaslt::result::CublasError| {
                device_error(format!("cuBLASLt {what} ({:?} {shape})", types.y))(text(e))
            }
        };
        let desc = Desc(
            lt::create_matmul_desc(types.compute, types.scale).map_err(err("matmul descriptor"))?,
        );
        let transpose: i32 = 1; // CUBLAS_OP_T
        // SAFETY: the descriptor was just created; the buffer is an i32 as the attribute needs.
        unsafe {
            lt::set_matmul_desc_attribute(
                desc.0,
                ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                &transpose as *const i32 as *const c_void,
                std::mem::size_of::<i32>(),
            )
        }
        .map_err(err("TRANSA"))?;
        let x = Layout(
            lt::create_matrix_layout(types.x, k as u64, n as u64, k as i64)
                .map_err(err("layout of B"))?,
        );
        let y = Layout(
            lt::create_matrix_layout(types.y, k as u64, m as u64, k as i64)
                .map_err(err("layout of A"))?,
        );
        let d = Layout(
            lt::create_matrix_layout(types.d, n as u64, m as u64, n as i64)
                .map_err(err("layout of D"))?,
        );
        // The preference is needed only to choose the algorithm: dropped when `new` returns.
        let pref = Pref(lt::create_matmul_pref().map_err(err("preference"))?);
        let workspace = lt_handle.workspace.bytes() as u64;
        // SAFETY: all objects were created above; the handle is live.
        let heuristic = unsafe {
            lt::set_matmul_pref_attribute(
                pref.0,
                ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &workspace as *const u64 as *const c_void,
                std::mem::size_of::<u64>(),
            )
            .map_err(err("workspace preference"))?;
            lt::get_matmul_algo_heuristic(lt_handle.handle, desc.0, x.0, y.0, d.0, d.0, pref.0)
                .map_err(err("algorithm heuristic"))?
        };
        Ok(LtPlan {
            layouts: [x, y, d],
            desc,
            algo: heuristic.algo,
        })
    }

    /// D = op(X)·Y with X, Y and D at `[x, y, d]` (device pointers of the plan's types),
    /// on `dev`'s stream with the handle's workspace.
    ///
    /// # Safety
    /// `alpha` and `beta` point at scalars of the plan's scale type that live until this
    /// returns; the buffers hold the shape the plan was made for.
    pub(super) unsafe fn matmul(
        &self,
        lt_handle: &BlasLt,
        dev: &CudaBackend,
        alpha: *const c_void,
        beta: *const c_void,
        [x, y, d]: [u64; 3],
    ) -> Result<(), cudarc::cublaslt::result::CublasError> {
        let [x_layout, y_layout, d_layout] = self.layouts.each_ref().map(|l| l.0);
        // SAFETY: the layouts match the buffers (the caller's promise); the workspace is the
        // handle's.
        unsafe {
            lt::matmul(
                lt_handle.handle,
                self.desc.0,
                alpha,
                beta,
                x as *const c_void,
                x_layout,
                y as *const c_void,
                y_layout,
                d as *const c_void,
                d_layout,
                d as *mut c_void,
                d_layout,
                &self.algo,
                lt_handle.workspace.ptr as *mut c_void,
                lt_handle.workspace.bytes(),
                raw_stream(dev) as ltsys::cudaStream_t,
            )
        }
    }
}

/// B (K×N, row-major) as Bᵀ row-major (N×K): element (j, p) = B[p, j], the X operand
/// `LtPlan::new`'s layouts expect.
pub(super) fn transposed<T: Copy + Default>(b: &[T], k: usize, n: usize) -> Vec<T> {
    let mut bt = vec![T::default(); n * k];
    for p in 0..k {
        for j in 0..n {
            bt[j * k + p] = b[p * n + j];
        }
    }
    bt
}

impl TimedWorkload for Fp8Gemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch()?;
        self.gemm.dev.synchronize()?;
        let c = widen(self.d_dev.download(self.gemm.dev)?, |v| v.to_f64());
        check(&mut self.check, self.gemm.shape, self.gemm.dtype, &c)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.gemm.timer.time(iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert(
            "library".into(),
            "cuBLASLt cublasLtMatmul (TN, bf16 output)".into(),
        );
        notes.insert("compute_type".into(), "CUBLAS_COMPUTE_32F".into());
        close_notes(&mut notes, self.check.accuracy(), &self.gemm.timer);
        notes
    }
}
