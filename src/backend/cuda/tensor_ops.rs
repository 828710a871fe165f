//! Tensor ops on NVIDIA GPUs: the NVRTC kernels of `kernels.rs` (grid-stride elementwise
//! kernels, one block per row for sum, softmax and layer norm), checked against the same
//! f64 reference as the CPU, timed with events after an L2 flush.

use super::CudaBackend;
use super::device::{DeviceBuffer, DeviceTimer};
use super::kernels::{grid_stride, per_row};
use super::stream::{Arg, launch};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::DType;
use crate::workload::tensor_ops::{
    HostElement, LAYER_NORM_EPS, TensorInputs, TensorOp, TensorShape, check_output,
};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use std::collections::BTreeMap;
use std::time::Duration;

/// Opens a tensor-op workload in the precision `dtype`.
pub fn open<'a>(
    dev: &'a CudaBackend,
    op: TensorOp,
    dtype: DType,
    shape: TensorShape,
) -> Result<Box<dyn TimedWorkload + 'a>, BackendError> {
    dev.fits(
        4 * (shape.elements() * dtype.size_bytes()) as u64,
        "tensor op",
    )?;
    match dtype {
        DType::F32 => Ok(Box::new(CudaTensorOp::<f32>::new(dev, op, shape)?)),
        DType::F16 => Ok(Box::new(CudaTensorOp::<half::f16>::new(dev, op, shape)?)),
        DType::Bf16 => Ok(Box::new(CudaTensorOp::<half::bf16>::new(dev, op, shape)?)),
        _ => Err(BackendError::unsupported(
            BackendKind::Cuda,
            op.function_id(dtype),
            "tensor ops run in f32, f16 and bf16",
        )),
    }
}

/// The kernel-name suffix of a storage precision.
pub fn suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        _ => "f32",
    }
}

pub struct CudaTensorOp<'a, T> {
    dev: &'a CudaBackend,
    op: TensorOp,
    shape: TensorShape,
    inputs: TensorInputs<T>,
    x: DeviceBuffer<T>,
    y: Option<DeviceBuffer<T>>,
    gamma: Option<DeviceBuffer<T>>,
    beta: Option<DeviceBuffer<T>>,
    out: DeviceBuffer<T>,
    timer: DeviceTimer,
    worst_error: Option<f64>,
}

impl<'a, T> CudaTensorOp<'a, T>
where
    T: HostElement + DeviceRepr + ValidAsZeroBits,
{
    pub fn new(
        dev: &'a CudaBackend,
        op: TensorOp,
        shape: TensorShape,
    ) -> Result<Self, BackendError> {
        let inputs = TensorInputs::<T>::new(op, shape);
        let optional = |v: &Vec<T>| -> Result<Option<DeviceBuffer<T>>, BackendError> {
            if v.is_empty() {
                Ok(None)
            } else {
                DeviceBuffer::upload(dev, v).map(Some)
            }
        };
        Ok(CudaTensorOp {
            dev,
            op,
            shape,
            x: DeviceBuffer::upload(dev, &inputs.x)?,
            y: optional(&inputs.y)?,
            gamma: optional(&inputs.gamma)?,
            beta: optional(&inputs.beta)?,
            out: DeviceBuffer::zeroed(dev, op.output_len(shape))?,
            inputs,
            timer: DeviceTimer::new(dev, true)?,
            worst_error: None,
        })
    }

    fn launch_once(&self) -> Result<(), BackendError> {
        let name = format!("{}_{}", self.op.id(), suffix(T::DTYPE));
        let n = self.shape.elements() as u64;
        let cols = Arg::I32(self.shape.cols as i32);
        let (x, z) = (Arg::Ptr(self.x.ptr), Arg::Ptr(self.out.ptr));
        let ptr = |b: &Option<DeviceBuffer<T>>| Arg::Ptr(b.as_ref().map_or(0, |b| b.ptr));
        let elementwise = grid_stride(n, self.dev.sm_count);
        let rows = per_row(self.shape.rows);
        match self.op {
            TensorOp::Add | TensorOp::Mul => launch(
                self.dev,
                &name,
                elementwise,
                &[x, ptr(&self.y), z, Arg::U64(n)],
            ),
            TensorOp::Relu | TensorOp::Gelu => {
                launch(self.dev, &name, elementwise, &[x, z, Arg::U64(n)])
            }
            TensorOp::Sum | TensorOp::Softmax => launch(self.dev, &name, rows, &[x, z, cols]),
            TensorOp::LayerNorm => launch(
                self.dev,
                &name,
                rows,
                &[
                    x,
                    ptr(&self.gamma),
                    ptr(&self.beta),
                    z,
                    cols,
                    Arg::F32(LAYER_NORM_EPS as f32),
                ],
            ),
        }
    }
}

impl<T> TimedWorkload for CudaTensorOp<'_, T>
where
    T: HostElement + DeviceRepr + ValidAsZeroBits,
{
    fn verify(&mut self) -> Result<(), BackendError> {
        self.launch_once()?;
        self.dev.synchronize()?;
        let out = self.out.download(self.dev)?;
        let worst = check_output(self.op, self.shape, &self.inputs, &out).map_err(|detail| {
            BackendError::Mismatch {
                benchmark: format!(
                    "tensor_ops/cuda/{}/{}",
                    self.op.function_id(T::DTYPE),
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
        notes.insert("compute_precision".into(), "f32".into());
        notes.insert(
            "kernel".into(),
            format!("stackbench NVRTC {}_{}", self.op.id(), suffix(T::DTYPE)).into(),
        );
        if let Some(worst) = self.worst_error {
            notes.insert("worst_scaled_error".into(), worst.into());
        }
        self.timer.notes(self.dev, &mut notes);
        notes
    }
}
