//! Scaled dot-product attention, forward: O = softmax(Q·Kᵀ/√D [+ causal mask])·V for
//! Q, K, V, O of shape (B, H, S, D), row-major. Two kernels compute it:
//! - `standard` materialises the B·H·S·S score matrix, as an unfused implementation does;
//! - `flash` tiles keys and values and keeps a running max and sum per query row (the online
//!   softmax of FlashAttention), so its extra memory is a tile per worker, not S².
//!
//! Both are held to the same f64 reference; the point of the pair is the memory each needs
//! (recorded with each benchmark) and the time each takes.

use super::DType;
use super::accuracy::{Accuracy, AccuracyMeter};
use super::random::SeededRng;
use super::tensor_ops::{HostElement, random_tensor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Sequence lengths of the CPU sweep (full suite); the quick suite keeps the first.
pub const CPU_SEQ_LENS: &[usize] = &[256, 1024];
/// Sequence lengths of the GPU sweep (full suite); the quick suite keeps 1024 and 4096.
pub const GPU_SEQ_LENS: &[usize] = &[512, 1024, 2048, 4096, 8192];
/// Heads and head dimension of the CPU sweep (a small model) and the GPU one (LLaMA-7B).
pub const CPU_HEADS: usize = 4;
pub const GPU_HEADS: usize = 32;
pub const HEAD_DIM: usize = 64;
pub const GPU_HEAD_DIM: usize = 128;
/// Query rows checked besides the first three and the last (where masks go wrong).
const RANDOM_ROWS: usize = 24;

pub const SEED_Q: u64 = 0xA77E_0001;
pub const SEED_K: u64 = 0xA77E_0002;
pub const SEED_V: u64 = 0xA77E_0003;

/// Which algorithm computes the attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttentionKernel {
    Standard,
    Flash,
}

impl AttentionKernel {
    pub const ALL: [AttentionKernel; 2] = [AttentionKernel::Standard, AttentionKernel::Flash];

    pub fn id(self) -> &'static str {
        match self {
            AttentionKernel::Standard => "standard",
            AttentionKernel::Flash => "flash",
        }
    }
}

/// One attention problem: its shape and whether it is causal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttentionShape {
    pub batch: usize,
    pub heads: usize,
    pub seq: usize,
    pub head_dim: usize,
    pub causal: bool,
}

impl AttentionShape {
    pub fn new(batch: usize, heads: usize, seq: usize, head_dim: usize, causal: bool) -> Self {
        AttentionShape {
            batch,
            heads,
            seq,
            head_dim,
            causal,
        }
    }

    /// Elements of one of Q, K, V or O.
    pub fn elements(&self) -> usize {
        self.batch * self.heads * self.seq * self.head_dim
    }

    /// Forward FLOPs: 4·B·S²·H·D (Q·Kᵀ and P·V, two FLOPs per multiply-add), halved when
    /// causal, as FlashAttention's benchmark counts them.
    pub fn flops(&self) -> u64 {
        let full = 4
            * (self.batch * self.heads) as u64
            * (self.seq * self.seq) as u64
            * self.head_dim as u64;
        if self.causal { full / 2 } else { full }
    }

    /// Bytes of the materialised score matrix (B·H·S·S in `dtype`): what the standard
    /// kernel needs beyond Q, K, V, O and the flash kernel does not.
    pub fn score_bytes(&self, dtype: DType) -> u64 {
        (self.batch * self.heads) as u64 * (self.seq * self.seq) as u64 * dtype.size_bytes() as u64
    }

    /// Bytes of Q, K, V and O together.
    pub fn io_bytes(&self, dtype: DType) -> u64 {
        4 * self.elements() as u64 * dtype.size_bytes() as u64
    }

    /// The value part of the id: `b<B>_h<H>_s<S>_d<D>`.
    pub fn id(&self) -> String {
        format!(
            "b{}_h{}_s{}_d{}",
            self.batch, self.heads, self.seq, self.head_dim
        )
    }

    /// The function part of the id: `<kernel>[_causal]_<dtype>`, e.g. `flash_causal_bf16`.
    pub fn function_id(&self, kernel: AttentionKernel, dtype: DType) -> String {
        let mask = if self.causal { "_causal" } else { "" };
        format!("{}{mask}_{}", kernel.id(), dtype.id())
    }

    /// 1/√D, the softmax scale.
    pub fn scale(&self) -> f64 {
        1.0 / (self.head_dim as f64).sqrt()
    }

    /// Keys query row `i` attends to: all, or 0..=i when causal.
    pub fn keys_for(&self, i: usize) -> usize {
        if self.causal { i + 1 } else { self.seq }
    }
}

impl fmt::Display for AttentionShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            self.id(),
            if self.causal { " causal" } else { "" }
        )
    }
}

/// Shapes a suite covers: every sequence length, causal and not.
pub fn shapes(
    seq_lens: &[usize],
    quick_seq_lens: &[usize],
    heads: usize,
    head_dim: usize,
    full: bool,
) -> Vec<AttentionShape> {
    let lens = if full { seq_lens } else { quick_seq_lens };
    lens.iter()
        .flat_map(|&s| {
            [false, true]
                .into_iter()
                .map(move |causal| AttentionShape::new(1, heads, s, head_dim, causal))
        })
        .collect()
}

/// Q, K and V in the storage precision, laid out (B, H, S, D).
pub struct AttentionInputs<T> {
    pub q: Vec<T>,
    pub k: Vec<T>,
    pub v: Vec<T>,
}

impl<T: HostElement> AttentionInputs<T> {
    pub fn new(shape: AttentionShape) -> Self {
        let n = shape.elements();
        AttentionInputs {
            q: random_tensor(SEED_Q, n, 0.0, 1.0),
            k: random_tensor(SEED_K, n, 0.0, 1.0),
            v: random_tensor(SEED_V, n, 0.0, 1.0),
        }
    }
}

/// The f64 reference output row for query `i` of head `bh` (b·H + h), and for each of its
/// D values the scale its error is measured against: Σ_j p_j·|v_jd|.
pub fn reference_row(
    shape: AttentionShape,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    bh: usize,
    i: usize,
) -> Vec<(f64, f64)> {
    let (s, d) = (shape.seq, shape.head_dim);
    let base = bh * s * d;
    let qi = &q[base + i * d..base + (i + 1) * d];
    let keys = shape.keys_for(i);
    let scores: Vec<f64> = (0..keys)
        .map(|j| {
            let kj = &k[base + j * d..base + (j + 1) * d];
            qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * shape.scale()
        })
        .collect();
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    (0..d)
        .map(|c| {
            let (mut value, mut scale) = (0.0, 0.0);
            for (j, w) in weights.iter().enumerate() {
                let vj = v[base + j * d + c];
                value += w * vj;
                scale += w * vj.abs();
            }
            (value / total, scale / total)
        })
        .collect()
}

/// Relative tolerance: the output's and the probabilities' rounding to `dtype` (GPU kernels
/// round P to the input precision before P·V) plus f32 accumulation over D and S.
pub fn tolerance(dtype: DType, shape: AttentionShape) -> f64 {
    let accumulation =
        ((shape.head_dim as f64).sqrt() + (shape.seq as f64).sqrt()) * 2f64.powi(-24);
    16.0 * dtype.unit_roundoff() + 8.0 * accumulation
}

/// (head, query row) pairs the check compares: rows 0, 1, 2 and the last of the first and
/// last heads (a causal mask off by one shows in the first rows), and random ones.
pub fn check_rows(shape: AttentionShape) -> Vec<(usize, usize)> {
    let heads = shape.batch * shape.heads;
    let s = shape.seq;
    let mut rows = Vec::new();
    for bh in [0, heads - 1] {
        for i in [0, 1.min(s - 1), 2.min(s - 1), s - 1] {
            rows.push((bh, i));
        }
    }
    let mut rng = SeededRng::new(0xA77E);
    rows.extend((0..RANDOM_ROWS).map(|_| (rng.below(heads), rng.below(s))));
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Leading query rows, in (head, row) order, the reference covers: all of them unless past
/// the reference budgets ([`crate::workload::accuracy::reference_rows`]). The reference
/// widens one head's Q, K and V at a time; each row costs 2·S·D multiply-adds.
pub fn reference_rows(shape: AttentionShape) -> usize {
    let (s, d) = (shape.seq as u64, shape.head_dim as u64);
    super::accuracy::reference_rows(
        shape.batch * shape.heads * shape.seq,
        24 * s * d,
        8 * d,
        2 * s * d,
    )
}

/// Compares a backend's output with the f64 reference on the leading query rows
/// ([`reference_rows`]) and on the checked rows ([`check_rows`]) after them. Returns the
/// accuracy set (each value's scale Σ_j p_j·|v_jd|), or the first failure.
pub fn check_output<T: HostElement>(
    shape: AttentionShape,
    inputs: &AttentionInputs<T>,
    out: &[T],
) -> Result<Accuracy, String> {
    let dtype = T::DTYPE;
    if out.len() != shape.elements() {
        return Err(format!(
            "attention {shape}: output has {} elements, expected {}",
            out.len(),
            shape.elements()
        ));
    }
    let (s, d) = (shape.seq, shape.head_dim);
    let head = |v: &[T], bh: usize| -> Vec<f64> {
        v[bh * s * d..(bh + 1) * s * d]
            .iter()
            .map(|e| e.to_f32() as f64)
            .collect()
    };
    let one_head = AttentionShape::new(1, 1, s, d, shape.causal);
    let tol = tolerance(dtype, shape);
    let leading = reference_rows(shape);
    let outside: Vec<(usize, usize)> = check_rows(shape)
        .into_iter()
        .filter(|&(bh, i)| bh * s + i >= leading)
        .collect();
    let rows = (0..leading)
        .map(|r| (r / s, r % s))
        .chain(outside.iter().copied());
    let mut meter = AccuracyMeter::new(dtype);
    let mut widened: Option<(usize, [Vec<f64>; 3])> = None;
    for (bh, i) in rows {
        if widened.as_ref().is_none_or(|(h, _)| *h != bh) {
            let qkv = [
                head(&inputs.q, bh),
                head(&inputs.k, bh),
                head(&inputs.v, bh),
            ];
            widened = Some((bh, qkv));
        }
        let expected = match &widened {
            Some((_, [q, k, v])) => reference_row(one_head, q, k, v, 0, i),
            None => Vec::new(),
        };
        let start = (bh * s + i) * d;
        for (c, (want, scale)) in expected.into_iter().enumerate() {
            let got = out[start + c].to_f32() as f64;
            let bound = tol * scale.max(f64::MIN_POSITIVE);
            meter.add(got, want, scale, bound).map_err(|e| {
                format!("attention {shape} {dtype}: O[head {bh}, row {i}, {c}] = {e}")
            })?;
        }
    }
    let total = shape.batch * shape.heads * s;
    let name = if leading == total {
        format!("all of O ({total} query rows)")
    } else {
        format!(
            "query rows 0..{leading} of {total} (head-major), plus {} checked rows after them",
            outside.len()
        )
    };
    Ok(meter.finish(name, leading < total))
}

/// The benchmark id `attention/<backend>/<kernel>[_causal]_<dtype>/b<B>_h<H>_s<S>_d<D>`.
pub fn bench_id(
    backend: &str,
    kernel: AttentionKernel,
    shape: AttentionShape,
    dtype: DType,
) -> super::BenchId {
    super::BenchId::new(
        super::family::ATTENTION.name,
        backend,
        shape.function_id(kernel, dtype),
        shape.id(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_and_ids_follow_the_methodology() {
        let s = AttentionShape::new(1, 8, 1024, 64, false);
        assert_eq!(s.flops(), 4 * 8 * 1024 * 1024 * 64);
        let c = AttentionShape::new(1, 8, 1024, 64, true);
        assert_eq!(c.flops(), s.flops() / 2);
        assert_eq!(
            c.function_id(AttentionKernel::Flash, DType::F32),
            "flash_causal_f32"
        );
        assert_eq!(
            s.function_id(AttentionKernel::Standard, DType::Bf16),
            "standard_bf16"
        );
        assert_eq!(s.id(), "b1_h8_s1024_d64");
        assert_eq!(s.score_bytes(DType::F32), 8 * 1024 * 1024 * 4);
    }

    #[test]
    fn reference_rows_are_convex_combinations_of_values() {
        let shape = AttentionShape::new(1, 1, 5, 4, true);
        let inputs = AttentionInputs::<f32>::new(shape);
        let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let (q, k, v) = (wide(&inputs.q), wide(&inputs.k), wide(&inputs.v));
        // Causal row 0 attends to key 0 only: its output is V's row 0.
        let row0 = reference_row(shape, &q, &k, &v, 0, 0);
        for (c, (value, _)) in row0.iter().enumerate() {
            assert!((value - v[c]).abs() < 1e-12);
        }
    }

    #[test]
    fn check_rejects_the_unmasked_answer_for_a_causal_problem() {
        let causal = AttentionShape::new(1, 2, 16, 8, true);
        let open = AttentionShape {
            causal: false,
            ..causal
        };
        let inputs = AttentionInputs::<f32>::new(causal);
        let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let (q, k, v) = (wide(&inputs.q), wide(&inputs.k), wide(&inputs.v));
        let compute = |shape| -> Vec<f32> {
            (0..2)
                .flat_map(|bh| (0..16).map(move |i| (bh, i)))
                .flat_map(|(bh, i)| reference_row(shape, &q, &k, &v, bh, i))
                .map(|(value, _)| value as f32)
                .collect()
        };
        check_output(causal, &inputs, &compute(causal)).unwrap();
        assert!(check_output(causal, &inputs, &compute(open)).is_err());
    }
}
