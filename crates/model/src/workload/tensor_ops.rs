//! Tensor operations a transformer spends its non-GEMM time in: elementwise add, mul, relu
//! and gelu, a row reduction (sum over the last axis), softmax and layer norm, on a
//! `rows × cols` row-major tensor. All are memory-bound, so each declares the bytes it must
//! move at minimum and Criterion prints GB/s; the same definition serves every backend.
//!
//! Values are stored in the benchmark's precision (f32, f16, bf16) and computed in f32, as
//! PyTorch's kernels do; the check compares with an f64 evaluation of the stored inputs.

use super::DType;
use super::accuracy::{Accuracy, AccuracyMeter};
use super::random::{SeededRng, normal_f64};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Width of the last axis: LLaMA-7B's hidden size, the row every norm and softmax sees.
pub const HIDDEN: usize = 4096;
/// Rows of the CPU sweep (full suite); the quick suite keeps the first.
pub const CPU_ROWS: &[usize] = &[256, 4096];
/// Rows of the GPU sweep (full suite): 4 MiB to 512 MiB of f32 per tensor, well past L2.
pub const GPU_ROWS: &[usize] = &[256, 4096, 16384, 32768];
/// Precisions the family runs in.
pub const DTYPES: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
/// Layer norm's epsilon (PyTorch's default).
pub const LAYER_NORM_EPS: f64 = 1e-5;
/// Rows checked besides the first and last two: enough to catch a wrong tail or stride.
const RANDOM_ROWS: usize = 60;

pub const SEED_X: u64 = 0x7E45_0001;
pub const SEED_Y: u64 = 0x7E45_0002;
pub const SEED_GAMMA: u64 = 0x7E45_0003;
pub const SEED_BETA: u64 = 0x7E45_0004;

/// One operation of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorOp {
    /// z = x + y
    Add,
    /// z = x · y
    Mul,
    /// z = max(x, 0)
    Relu,
    /// z = GELU(x), tanh approximation (`torch.nn.functional.gelu(x, approximate="tanh")`).
    Gelu,
    /// z_r = Σ_c x_rc (sum over the last axis)
    Sum,
    /// z_r = softmax(x_r) over the last axis
    Softmax,
    /// z_r = (x_r − mean) / sqrt(var + eps) · γ + β over the last axis
    LayerNorm,
}

impl TensorOp {
    pub const ALL: [TensorOp; 7] = [
        TensorOp::Add,
        TensorOp::Mul,
        TensorOp::Relu,
        TensorOp::Gelu,
        TensorOp::Sum,
        TensorOp::Softmax,
        TensorOp::LayerNorm,
    ];

    pub fn id(self) -> &'static str {
        match self {
            TensorOp::Add => "add",
            TensorOp::Mul => "mul",
            TensorOp::Relu => "relu",
            TensorOp::Gelu => "gelu",
            TensorOp::Sum => "sum",
            TensorOp::Softmax => "softmax",
            TensorOp::LayerNorm => "layer_norm",
        }
    }

    /// Whether the op reads a second tensor `y`.
    pub fn is_binary(self) -> bool {
        matches!(self, TensorOp::Add | TensorOp::Mul)
    }

    /// Whether the output has one value per row rather than one per element.
    pub fn is_row_reduction(self) -> bool {
        self == TensorOp::Sum
    }

    /// The function part of the id: `<op>_<dtype>`, e.g. `softmax_bf16`.
    pub fn function_id(self, dtype: DType) -> String {
        format!("{}_{}", self.id(), dtype.id())
    }

    /// Minimum bytes moved by one call: each input read once, each output written once
    /// (layer norm's γ and β count once per call). Write-allocate traffic is not counted,
    /// as STREAM does not count it.
    pub fn bytes(self, shape: TensorShape, dtype: DType) -> u64 {
        let n = shape.elements() as u64;
        let s = dtype.size_bytes() as u64;
        match self {
            TensorOp::Add | TensorOp::Mul => 3 * n * s,
            TensorOp::Relu | TensorOp::Gelu | TensorOp::Softmax => 2 * n * s,
            TensorOp::Sum => n * s + shape.rows as u64 * s,
            TensorOp::LayerNorm => 2 * n * s + 2 * shape.cols as u64 * s,
        }
    }

    /// Elements of the output.
    pub fn output_len(self, shape: TensorShape) -> usize {
        if self.is_row_reduction() {
            shape.rows
        } else {
            shape.elements()
        }
    }
}

impl fmt::Display for TensorOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A row-major `rows × cols` tensor; the last axis is the one reductions run over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorShape {
    pub rows: usize,
    pub cols: usize,
}

impl TensorShape {
    pub const fn new(rows: usize, cols: usize) -> Self {
        TensorShape { rows, cols }
    }

    pub fn elements(&self) -> usize {
        self.rows * self.cols
    }

    /// The value part of the id: `<rows>x<cols>`.
    pub fn id(&self) -> String {
        format!("{}x{}", self.rows, self.cols)
    }
}

/// Shapes a suite covers for a backend with this row sweep.
pub fn shapes(rows: &[usize], full: bool) -> Vec<TensorShape> {
    let rows = if full { rows } else { &rows[..1] };
    rows.iter().map(|&r| TensorShape::new(r, HIDDEN)).collect()
}

/// Precisions the quick suite covers: f32 and bf16 (f16 behaves like bf16 for a memory-bound
/// op; the full suite has it).
pub fn in_quick_suite(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::Bf16)
}

/// A storage type a host keeps tensors in, widened to f32 for arithmetic.
pub trait HostElement: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn from_f32(v: f32) -> Self;
    fn to_f32(self) -> f32;
}

impl HostElement for f32 {
    const DTYPE: DType = DType::F32;
    fn from_f32(v: f32) -> Self {
        v
    }
    fn to_f32(self) -> f32 {
        self
    }
}

/// The two half-precision types widen and narrow alike, through `half`'s own conversions.
macro_rules! half_host_element {
    ($($ty:ty => $dtype:expr),* $(,)?) => {$(
        impl HostElement for $ty {
            const DTYPE: DType = $dtype;
            fn from_f32(v: f32) -> Self {
                <$ty>::from_f32(v)
            }
            fn to_f32(self) -> f32 {
                <$ty>::to_f32(self)
            }
        }
    )*};
}

half_host_element!(half::f16 => DType::F16, half::bf16 => DType::Bf16);

/// Seeded random normal values rounded to `T`.
pub fn random_tensor<T: HostElement>(seed: u64, len: usize, mean: f64, std: f64) -> Vec<T> {
    normal_f64(seed, len)
        .into_iter()
        .map(|v| T::from_f32((mean + std * v) as f32))
        .collect()
}

/// The inputs of one benchmark, already rounded to the storage precision.
pub struct TensorInputs<T> {
    pub x: Vec<T>,
    /// Second operand of add and mul; empty otherwise.
    pub y: Vec<T>,
    /// Layer norm's scale (≈ 1) and shift (≈ 0), `cols` each; empty otherwise.
    pub gamma: Vec<T>,
    pub beta: Vec<T>,
}

impl<T: HostElement> TensorInputs<T> {
    pub fn new(op: TensorOp, shape: TensorShape) -> Self {
        let n = shape.elements();
        let layer_norm = op == TensorOp::LayerNorm;
        TensorInputs {
            x: random_tensor(SEED_X, n, 0.0, 1.0),
            y: if op.is_binary() {
                random_tensor(SEED_Y, n, 0.0, 1.0)
            } else {
                Vec::new()
            },
            gamma: if layer_norm {
                random_tensor(SEED_GAMMA, shape.cols, 1.0, 0.1)
            } else {
                Vec::new()
            },
            beta: if layer_norm {
                random_tensor(SEED_BETA, shape.cols, 0.0, 0.1)
            } else {
                Vec::new()
            },
        }
    }
}

/// GELU, tanh approximation, in any float precision the caller computes in.
pub fn gelu_tanh(x: f64) -> f64 {
    const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// The f64 reference for one row: the expected outputs and, for each, the scale its error
/// is measured against (|value| for elementwise ops, Σ|x| for the sum, max(|value|, 1) for
/// layer norm, |value| + 1/cols for softmax).
pub fn reference_row(
    op: TensorOp,
    x: &[f64],
    y: &[f64],
    gamma: &[f64],
    beta: &[f64],
) -> Vec<(f64, f64)> {
    let elementwise = |f: &dyn Fn(usize) -> f64| -> Vec<(f64, f64)> {
        (0..x.len())
            .map(|i| {
                let v = f(i);
                (v, v.abs())
            })
            .collect()
    };
    match op {
        TensorOp::Add => elementwise(&|i| x[i] + y[i]),
        TensorOp::Mul => elementwise(&|i| x[i] * y[i]),
        TensorOp::Relu => elementwise(&|i| x[i].max(0.0)),
        TensorOp::Gelu => elementwise(&|i| gelu_tanh(x[i])),
        TensorOp::Sum => vec![(x.iter().sum(), x.iter().map(|v| v.abs()).sum())],
        TensorOp::Softmax => {
            let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let exps: Vec<f64> = x.iter().map(|v| (v - max).exp()).collect();
            let total: f64 = exps.iter().sum();
            let floor = 1.0 / x.len() as f64;
            exps.iter()
                .map(|e| (e / total, e / total + floor))
                .collect()
        }
        TensorOp::LayerNorm => {
            let n = x.len() as f64;
            let mean = x.iter().sum::<f64>() / n;
            let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + LAYER_NORM_EPS).sqrt();
            (0..x.len())
                .map(|i| {
                    let v = (x[i] - mean) * inv * gamma[i] + beta[i];
                    (v, v.abs().max(1.0))
                })
                .collect()
        }
    }
}

/// Relative tolerance for an op over rows of `cols` stored in `dtype` and computed in f32:
/// the output's rounding plus f32 accumulation over the row, with a factor of 8 for
/// differences in order. A wrong element (a missed tail, a wrong stride, a sign) is off by
/// order one and fails.
pub fn tolerance(dtype: DType, cols: usize) -> f64 {
    8.0 * (dtype.unit_roundoff() + (cols as f64).sqrt() * 2f64.powi(-24))
}

/// The smallest normal value of a storage precision: below it results are subnormal and
/// carry absolute, not relative, rounding error (a product of two f16 values often is).
pub fn min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-14),
        DType::F64 => f64::MIN_POSITIVE,
        _ => f32::MIN_POSITIVE as f64,
    }
}

/// Rows the check compares: the first two, the last two and some in between.
pub fn check_rows(rows: usize) -> Vec<usize> {
    let mut picked: Vec<usize> = [0, 1, rows.saturating_sub(2), rows.saturating_sub(1)]
        .into_iter()
        .filter(|&r| r < rows)
        .collect();
    let mut rng = SeededRng::new(0xC0FFEE);
    picked.extend((0..RANDOM_ROWS.min(rows)).map(|_| rng.below(rows)));
    picked.sort_unstable();
    picked.dedup();
    picked
}

/// Leading rows the reference covers ([`crate::workload::accuracy::reference_rows`]): per
/// row, the f64 inputs (x, and y for a binary op) and the output, and a few operations per
/// element (softmax and layer norm pass over the row three times).
pub fn reference_rows(op: TensorOp, shape: TensorShape) -> usize {
    let cols = shape.cols as u64;
    let arrays = if op.is_binary() { 3 } else { 2 };
    super::accuracy::reference_rows(shape.rows, 16 * cols, arrays * 8 * cols, 4 * cols)
}

/// Compares a backend's output with the f64 reference on the leading rows
/// ([`reference_rows`], all of them unless past the reference budgets) and on the checked
/// rows ([`check_rows`]) outside them. Returns the accuracy set (each element's scale as
/// [`reference_row`] gives it), or the first failure.
pub fn check_output<T: HostElement>(
    op: TensorOp,
    shape: TensorShape,
    inputs: &TensorInputs<T>,
    out: &[T],
) -> Result<Accuracy, String> {
    let dtype = T::DTYPE;
    if out.len() != op.output_len(shape) {
        return Err(format!(
            "{} {}: output has {} elements, expected {}",
            op.function_id(dtype),
            shape.id(),
            out.len(),
            op.output_len(shape)
        ));
    }
    let wide = |v: &[T]| -> Vec<f64> { v.iter().map(|e| e.to_f32() as f64).collect() };
    let (gamma, beta) = (wide(&inputs.gamma), wide(&inputs.beta));
    let tol = tolerance(dtype, shape.cols);
    let leading = reference_rows(op, shape);
    let outside: Vec<usize> = check_rows(shape.rows)
        .into_iter()
        .filter(|&r| r >= leading)
        .collect();
    let mut meter = AccuracyMeter::new(dtype);
    for row in (0..leading).chain(outside.iter().copied()) {
        let span = row * shape.cols..(row + 1) * shape.cols;
        let x = wide(&inputs.x[span.clone()]);
        let y = if op.is_binary() {
            wide(&inputs.y[span.clone()])
        } else {
            Vec::new()
        };
        let expected = reference_row(op, &x, &y, &gamma, &beta);
        let got = if op.is_row_reduction() {
            &out[row..row + 1]
        } else {
            &out[span]
        };
        for (col, ((want, scale), got)) in expected.iter().zip(got).enumerate() {
            let got = got.to_f32() as f64;
            let bound = tol * scale.max(min_normal(dtype));
            meter.add(got, *want, *scale, bound).map_err(|e| {
                format!(
                    "{} {}: element [{row},{col}] = {e}",
                    op.function_id(dtype),
                    shape.id()
                )
            })?;
        }
    }
    let name = if leading == shape.rows {
        format!("all of the output ({} rows)", shape.rows)
    } else {
        format!(
            "rows 0..{leading} of {}, plus {} checked rows after them",
            shape.rows,
            outside.len()
        )
    };
    Ok(meter.finish(name, leading < shape.rows))
}

/// The benchmark id `tensor_ops/<backend>/<op>_<dtype>/<rows>x<cols>`.
pub fn bench_id(backend: &str, op: TensorOp, dtype: DType, shape: TensorShape) -> super::BenchId {
    super::BenchId::new(
        super::family::TENSOR_OPS.name,
        backend,
        op.function_id(dtype),
        shape.id(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_follow_the_declared_formulas() {
        let shape = TensorShape::new(8, 16);
        assert_eq!(TensorOp::Add.bytes(shape, DType::F32), 3 * 128 * 4);
        assert_eq!(TensorOp::Relu.bytes(shape, DType::Bf16), 2 * 128 * 2);
        assert_eq!(TensorOp::Sum.bytes(shape, DType::F32), 128 * 4 + 8 * 4);
        assert_eq!(
            TensorOp::LayerNorm.bytes(shape, DType::F16),
            2 * 128 * 2 + 2 * 16 * 2
        );
        assert_eq!(TensorOp::Softmax.function_id(DType::Bf16), "softmax_bf16");
        assert_eq!(shape.id(), "8x16");
    }

    #[test]
    fn gelu_matches_known_values() {
        assert_eq!(gelu_tanh(0.0), 0.0);
        assert!((gelu_tanh(1.0) - 0.841_191_990_607_477_2).abs() < 1e-12);
        assert!(gelu_tanh(-10.0).abs() < 1e-12);
    }

    #[test]
    fn reference_softmax_sums_to_one_and_layer_norm_is_standardised() {
        let x = normal_f64(3, 64);
        let sm = reference_row(TensorOp::Softmax, &x, &[], &[], &[]);
        assert!((sm.iter().map(|p| p.0).sum::<f64>() - 1.0).abs() < 1e-12);
        let ones = vec![1.0; 64];
        let zeros = vec![0.0; 64];
        let ln = reference_row(TensorOp::LayerNorm, &x, &[], &ones, &zeros);
        let mean = ln.iter().map(|p| p.0).sum::<f64>() / 64.0;
        let var = ln.iter().map(|p| p.0 * p.0).sum::<f64>() / 64.0;
        assert!(
            mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-3,
            "{mean} {var}"
        );
    }

    #[test]
    fn check_rejects_a_wrong_element_and_a_wrong_length() {
        let shape = TensorShape::new(5, 32);
        let inputs = TensorInputs::<f32>::new(TensorOp::Add, shape);
        let mut out: Vec<f32> = inputs.x.iter().zip(&inputs.y).map(|(a, b)| a + b).collect();
        check_output(TensorOp::Add, shape, &inputs, &out).unwrap();
        out[4 * 32 + 31] += 0.5;
        let err = check_output(TensorOp::Add, shape, &inputs, &out).unwrap_err();
        assert!(err.contains("[4,31]"), "{err}");
        assert!(check_output(TensorOp::Add, shape, &inputs, &out[1..]).is_err());
    }

    #[test]
    fn checked_rows_include_both_ends() {
        let rows = check_rows(1000);
        assert!(rows.contains(&0) && rows.contains(&999) && rows.len() > 10);
        assert_eq!(check_rows(1), vec![0]);
    }
}
