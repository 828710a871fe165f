//! Tensor ops: elementwise add, mul, relu, gelu, a row sum, softmax and layer norm per
//! backend, precision and shape, ids `tensor_ops/<backend>/<op>_<dtype>/<rows>x<cols>`;
//! throughput the minimum bytes moved (inputs read once, outputs written once), i.e. GB/s.
//! Ops, shapes and the f64 reference live in `workload::tensor_ops`.

use super::{Case, gpu_has_family, grid3};
use crate::backend::cpu::{CpuBackend, tensor_ops::CpuTensorOp};
use crate::backend::gpu::{GpuBackend, axes, tensor_ops as gpu_tensor_ops};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::family;
use crate::workload::tensor_ops::{self as ops, TensorOp, TensorShape, in_quick_suite};
use crate::workload::{DType, Suite};
use criterion::Throughput;

/// The tensor ops family.
pub struct TensorOps;

/// What a backend does for tensor ops: its precisions, its shapes, and a timed op.
pub trait TensorOpsBackend {
    /// Precisions this backend runs tensor ops in.
    fn tensor_dtypes(&self) -> Vec<DType>;

    /// Tensor shapes this backend covers in `suite`.
    fn tensor_shapes(&self, suite: Suite) -> Vec<TensorShape>;

    fn tensor_op(
        &self,
        op: TensorOp,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;
}

impl TensorOpsBackend for CpuBackend {
    fn tensor_dtypes(&self) -> Vec<DType> {
        ops::DTYPES.to_vec()
    }

    fn tensor_shapes(&self, suite: Suite) -> Vec<TensorShape> {
        ops::shapes(ops::CPU_ROWS, suite.is_full())
    }

    fn tensor_op(
        &self,
        op: TensorOp,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let pool = &self.pool;
        match dtype {
            DType::F32 => Ok(Box::new(CpuTensorOp::<f32>::new(pool, op, shape)?)),
            DType::F16 => Ok(Box::new(CpuTensorOp::<half::f16>::new(pool, op, shape)?)),
            DType::Bf16 => Ok(Box::new(CpuTensorOp::<half::bf16>::new(pool, op, shape)?)),
            _ => Err(BackendError::unsupported(
                BackendKind::Cpu,
                op.function_id(dtype),
                "tensor ops run in f32, f16 and bf16",
            )),
        }
    }
}

impl<T: GpuBackend + ?Sized> TensorOpsBackend for T {
    fn tensor_dtypes(&self) -> Vec<DType> {
        axes::tensor_dtypes()
    }

    fn tensor_shapes(&self, suite: Suite) -> Vec<TensorShape> {
        self.gpu_tensor_shapes(suite)
    }

    fn tensor_op(
        &self,
        op: TensorOp,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        gpu_has_family(self, &family::TENSOR_OPS, || {
            format!("tensor op {} {dtype}", op.id())
        })?;
        gpu_tensor_ops::open(self.as_gpu_device(), op, dtype, shape)
    }
}

on_every_peer!(
    TensorOps,
    family::TENSOR_OPS,
    TensorOpsBackend,
    |backend, on, suite| {
        let dtypes = on.tensor_dtypes().into_iter();
        let dtypes = dtypes.filter(|&dtype| suite == Suite::Full || in_quick_suite(dtype));
        Case::measure_each(
            backend.light_sampling(suite),
            grid3(dtypes, on.tensor_shapes(suite), TensorOp::ALL),
            |(dtype, shape, op)| {
                let id = ops::bench_id(backend.kind().id(), op, dtype, shape);
                (id, Throughput::Bytes(op.bytes(shape, dtype)))
            },
            move |(dtype, shape, op)| on.tensor_op(op, dtype, shape),
        )
    }
);
