//! Tensor ops on GPUs: the kernels of `kernels.rs` (grid-stride elementwise kernels, one
//! block per row for sum, softmax and layer norm), checked against the same f64 reference
//! as the CPU, timed with events after a cache flush.

use super::checked::{close_notes, read_back};
use super::kernels::{grid_stride, per_row};
use super::{Arg, GpuDevice, GpuTimer, Pod, RawBuffer, upload, zeroed};
use crate::backend::{BackendError, TimedWorkload, keep_accuracy};
use crate::workload::DType;
use crate::workload::tensor_ops::{
    HostElement, LAYER_NORM_EPS, TensorInputs, TensorOp, TensorShape, bench_id, check_output,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// Opens a tensor-op workload in the precision `dtype`.
pub fn open<'a>(
    dev: &'a dyn GpuDevice,
    op: TensorOp,
    dtype: DType,
    shape: TensorShape,
) -> Result<Box<dyn TimedWorkload + 'a>, BackendError> {
    dev.has_kernel(&kernel_name(op, dtype))?;
    dev.fits(
        4 * (shape.elements() * dtype.size_bytes()) as u64,
        "tensor op",
    )?;
    match dtype {
        DType::F32 => Ok(Box::new(GpuTensorOp::<f32>::new(dev, op, shape)?)),
        DType::F16 => Ok(Box::new(GpuTensorOp::<half::f16>::new(dev, op, shape)?)),
        DType::Bf16 => Ok(Box::new(GpuTensorOp::<half::bf16>::new(dev, op, shape)?)),
        _ => Err(BackendError::unsupported(
            dev.kind(),
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

/// The kernel `op` runs in `dtype`: `add_f32`, `layer_norm_bf16`, …
pub fn kernel_name(op: TensorOp, dtype: DType) -> String {
    format!("{}_{}", op.id(), suffix(dtype))
}

pub struct GpuTensorOp<'a, T> {
    dev: &'a dyn GpuDevice,
    op: TensorOp,
    shape: TensorShape,
    inputs: TensorInputs<T>,
    x: RawBuffer,
    y: Option<RawBuffer>,
    gamma: Option<RawBuffer>,
    beta: Option<RawBuffer>,
    out: RawBuffer,
    timer: Box<dyn GpuTimer + 'a>,
    accuracy: Option<crate::workload::Accuracy>,
}

impl<'a, T: HostElement + Pod> GpuTensorOp<'a, T> {
    pub fn new(
        dev: &'a dyn GpuDevice,
        op: TensorOp,
        shape: TensorShape,
    ) -> Result<Self, BackendError> {
        let inputs = TensorInputs::<T>::new(op, shape);
        let optional = |v: &Vec<T>| -> Result<Option<RawBuffer>, BackendError> {
            if v.is_empty() {
                Ok(None)
            } else {
                upload(dev, v).map(Some)
            }
        };
        Ok(GpuTensorOp {
            dev,
            op,
            shape,
            x: upload(dev, &inputs.x)?,
            y: optional(&inputs.y)?,
            gamma: optional(&inputs.gamma)?,
            beta: optional(&inputs.beta)?,
            out: zeroed::<T>(dev, op.output_len(shape))?,
            inputs,
            timer: dev.timer(true)?,
            accuracy: None,
        })
    }

    fn launch_once(&self) -> Result<(), BackendError> {
        let name = kernel_name(self.op, T::DTYPE);
        let n = self.shape.elements() as u64;
        let cols = Arg::I32(self.shape.cols as i32);
        let (x, z) = (Arg::Ptr(self.x.ptr), Arg::Ptr(self.out.ptr));
        let ptr = |b: &Option<RawBuffer>| Arg::Ptr(b.as_ref().map_or(0, |b| b.ptr));
        let elementwise = grid_stride(n, self.dev.units());
        let rows = per_row(self.shape.rows);
        match self.op {
            TensorOp::Add | TensorOp::Mul => {
                self.dev
                    .launch(&name, elementwise, &[x, ptr(&self.y), z, Arg::U64(n)])
            }
            TensorOp::Relu | TensorOp::Gelu => {
                self.dev.launch(&name, elementwise, &[x, z, Arg::U64(n)])
            }
            TensorOp::Sum | TensorOp::Softmax => self.dev.launch(&name, rows, &[x, z, cols]),
            TensorOp::LayerNorm => self.dev.launch(
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

impl<T: HostElement + Pod> TimedWorkload for GpuTensorOp<'_, T> {
    fn verify(&mut self) -> Result<(), BackendError> {
        let len = self.op.output_len(self.shape);
        let out = read_back::<T>(self.dev, &self.out, len, || self.launch_once())?;
        let id = bench_id(self.dev.kind().id(), self.op, T::DTYPE, self.shape);
        let checked = check_output(self.op, self.shape, &self.inputs, &out);
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.launch_once())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("compute_precision".into(), "f32".into());
        notes.insert(
            "kernel".into(),
            format!("stackbench {}", kernel_name(self.op, T::DTYPE)).into(),
        );
        close_notes(&mut notes, self.accuracy.as_ref(), self.timer.as_ref());
        notes
    }
}
