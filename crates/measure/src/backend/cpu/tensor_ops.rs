//! Tensor ops on the CPU: rows split statically across the pinned pool, each row computed in
//! f32 from the stored precision (f32, f16, bf16) and rounded back, as PyTorch's CPU kernels
//! do. Row-wise ops (sum, softmax, layer norm) make rows the natural unit of work.

use super::pool::StaticPool;
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy, with_accuracy};
use crate::workload::tensor_ops::{
    HostElement, LAYER_NORM_EPS, TensorInputs, TensorOp, TensorShape, bench_id, check_output,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// The output buffer, shared by row: each worker writes only the rows it owns.
#[derive(Clone, Copy)]
struct RowsPtr<T>(*mut T);
// SAFETY: workers form slices over disjoint row ranges only (StaticPool::chunk).
unsafe impl<T> Send for RowsPtr<T> {}
unsafe impl<T> Sync for RowsPtr<T> {}

impl<T> RowsPtr<T> {
    /// # Safety
    /// The range must be in bounds and owned by the caller for this call.
    unsafe fn rows<'a>(self, start: usize, len: usize) -> &'a mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

pub struct CpuTensorOp<'p, T> {
    pool: &'p StaticPool,
    op: TensorOp,
    shape: TensorShape,
    inputs: TensorInputs<T>,
    out: Vec<T>,
    accuracy: Option<crate::workload::Accuracy>,
}

impl<'p, T: HostElement> CpuTensorOp<'p, T> {
    pub fn new(
        pool: &'p StaticPool,
        op: TensorOp,
        shape: TensorShape,
    ) -> Result<Self, BackendError> {
        if shape.elements() == 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                op.function_id(T::DTYPE),
                "empty tensor",
            ));
        }
        Ok(CpuTensorOp {
            pool,
            op,
            shape,
            inputs: TensorInputs::new(op, shape),
            // Non-zero so a kernel that forgets to write an element cannot pass the check.
            out: vec![T::from_f32(f32::NAN); op.output_len(shape)],
            accuracy: None,
        })
    }

    /// One call: every worker computes its rows.
    fn compute(&mut self) {
        let (op, cols, rows) = (self.op, self.shape.cols, self.shape.rows);
        let inputs = &self.inputs;
        let out = RowsPtr(self.out.as_mut_ptr());
        let out_per_row = if op.is_row_reduction() { 1 } else { cols };
        let pool = self.pool;
        pool.run(|t| {
            let range = pool.chunk(t, rows, 1);
            // SAFETY: row ranges of different workers are disjoint and within `out`.
            let dst = unsafe { out.rows(range.start * out_per_row, range.len() * out_per_row) };
            for (i, row) in range.enumerate() {
                let span = row * cols..(row + 1) * cols;
                let y = if op.is_binary() {
                    &inputs.y[span.clone()]
                } else {
                    &[][..]
                };
                let dst_row = &mut dst[i * out_per_row..(i + 1) * out_per_row];
                compute_row(op, &inputs.x[span], y, &inputs.gamma, &inputs.beta, dst_row);
            }
        });
    }
}

/// Writes `f(i)` rounded to `T` into every element of `out` (generic, so it inlines and
/// vectorises where `f` allows).
fn map_into<T: HostElement>(out: &mut [T], f: impl Fn(usize) -> f32) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = T::from_f32(f(i));
    }
}

/// One row of `op` in f32.
fn compute_row<T: HostElement>(
    op: TensorOp,
    x: &[T],
    y: &[T],
    gamma: &[T],
    beta: &[T],
    out: &mut [T],
) {
    match op {
        TensorOp::Add => map_into(out, |i| x[i].to_f32() + y[i].to_f32()),
        TensorOp::Mul => map_into(out, |i| x[i].to_f32() * y[i].to_f32()),
        TensorOp::Relu => map_into(out, |i| x[i].to_f32().max(0.0)),
        TensorOp::Gelu => map_into(out, |i| gelu_f32(x[i].to_f32())),
        TensorOp::Sum => out[0] = T::from_f32(sum_f32(x)),
        TensorOp::Softmax => {
            let max = x
                .iter()
                .map(|v| v.to_f32())
                .fold(f32::NEG_INFINITY, f32::max);
            // The exponentials go to an f32 row first: a plain map vectorises, and dividing
            // them after rounding to a half-precision output would round twice.
            let exps: Vec<f32> = x.iter().map(|v| exp_f32(v.to_f32() - max)).collect();
            let inv = 1.0 / sum_f32(&exps);
            map_into(out, |i| exps[i] * inv);
        }
        TensorOp::LayerNorm => {
            let n = x.len() as f32;
            let mean = sum_f32(x) / n;
            let var = lanes(x, 0.0, |acc, v| acc + (v - mean) * (v - mean), |a, b| a + b) / n;
            let inv = 1.0 / (var + LAYER_NORM_EPS as f32).sqrt();
            map_into(out, |i| {
                (x[i].to_f32() - mean) * inv * gamma[i].to_f32() + beta[i].to_f32()
            });
        }
    }
}

/// e^x in f32 without branches, so loops over it vectorise (as PyTorch's CPU kernels use
/// SLEEF): x = n·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor polynomial (relative
/// error below 2e-7 there), 2^n built in the exponent bits. Inputs are clamped to the range
/// where the result is a normal f32.
pub fn exp_f32(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    // Round to nearest by adding and subtracting 1.5·2^23 (exact for |v| < 2^22): plain
    // SSE2 arithmetic, where `round`/`floor` become libm calls on the baseline x86-64
    // target and stop the loop from vectorising.
    const MAGIC: f32 = 12_582_912.0;
    let n = (x * std::f32::consts::LOG2_E + MAGIC) - MAGIC;
    // ln 2 in two parts (Cody–Waite): n·LN2_HI is exact, so r keeps its low bits.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r / 720.0)))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    p * scale
}

/// GELU (tanh approximation) in f32 through [`exp_f32`]. ½x(1 + tanh u) equals
/// x·σ(2u) = x / (1 + e^{−2u}), which has no cancellation for negative x.
fn gelu_f32(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    x / (1.0 + exp_f32(-2.0 * u))
}

/// A reduction over the row in eight independent lanes, combined at the end: the compiler
/// can vectorise it (a single running value is a serial chain it must not reorder), and
/// rounding grows like √n.
fn lanes<T: HostElement>(
    x: &[T],
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    combine: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = [init; 8];
    let mut chunks = x.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, v) in acc.iter_mut().zip(chunk) {
            *lane = step(*lane, v.to_f32());
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(init, |a, v| step(a, v.to_f32()));
    acc.into_iter().fold(tail, combine)
}

fn sum_f32<T: HostElement>(x: &[T]) -> f32 {
    lanes(x, 0.0, |a, v| a + v, |a, b| a + b)
}

impl<T: HostElement> TimedWorkload for CpuTensorOp<'_, T> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.compute();
        let id = bench_id("cpu", self.op, T::DTYPE, self.shape);
        let checked = check_output(self.op, self.shape, &self.inputs, &self.out);
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        Ok(super::time_kept(self, iters, Self::compute, |w| &w.out))
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("threads".into(), self.pool.threads().into());
        notes.insert("compute_precision".into(), "f32".into());
        with_accuracy(notes, self.accuracy.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::DType;
    use half::{bf16, f16};

    fn verify_all<T: HostElement>(pool: &StaticPool) {
        // Odd sizes: rows not a multiple of the thread count, columns not of the lane count.
        let shape = TensorShape::new(37, 129);
        for op in TensorOp::ALL {
            let mut w = CpuTensorOp::<T>::new(pool, op, shape).unwrap();
            w.verify()
                .unwrap_or_else(|e| panic!("{} failed: {e}", op.function_id(T::DTYPE)));
            assert!(w.run(2).is_ok());
            let a: crate::workload::Accuracy =
                serde_json::from_value(w.notes()["accuracy"].clone()).unwrap();
            assert_eq!(a.elements as usize, op.output_len(shape), "{op}");
            assert_eq!(a.reference, "all of the output (37 rows)");
            assert_eq!(a.dtype, T::DTYPE.id());
            // Relu is exact in every precision; the rest round at least somewhere.
            if op == TensorOp::Relu {
                assert_eq!(a.max_abs_error, 0.0);
            } else {
                assert!(a.max_abs_error > 0.0, "{op} {}: {a:?}", T::DTYPE);
            }
        }
    }

    #[test]
    fn every_op_and_precision_matches_the_reference() {
        let pool = StaticPool::new(3).unwrap();
        verify_all::<f32>(&pool);
        verify_all::<f16>(&pool);
        verify_all::<bf16>(&pool);
    }

    #[test]
    fn fast_exp_is_accurate_over_the_softmax_range() {
        let mut worst = 0.0f64;
        for i in 0..=20_000 {
            let x = -80.0 + i as f32 * 0.0044;
            let want = (x as f64).exp();
            worst = worst.max((exp_f32(x) as f64 - want).abs() / want);
        }
        assert!(worst < 5e-7, "worst relative error {worst:e}");
    }

    #[test]
    fn a_corrupted_output_is_caught() {
        let pool = StaticPool::new(2).unwrap();
        let shape = TensorShape::new(9, 64);
        let mut w = CpuTensorOp::<f32>::new(&pool, TensorOp::Softmax, shape).unwrap();
        w.compute();
        w.out[8 * 64 + 63] *= 1.5;
        assert!(check_output(w.op, shape, &w.inputs, &w.out).is_err());
        assert_eq!(<f32 as HostElement>::DTYPE, DType::F32);
    }
}
