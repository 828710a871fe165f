//! Attention on the CPU, f32, both ways the family compares:
//! - `standard`: three passes over a materialised B·H·S·S score matrix (Q·Kᵀ, softmax,
//!   P·V), as an unfused framework runs it; the matrix is the memory it pays for;
//! - `flash`: query blocks of [`BLOCK_Q`] rows sweep key blocks of [`BLOCK_K`] with a running
//!   max and sum per row (online softmax), so each worker needs one small tile.
//!
//! Work is split over the pinned pool by rows (standard) or query blocks (flash), assigned
//! round-robin so a causal mask's triangle spreads evenly over the workers.

use super::pool::StaticPool;
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy, with_accuracy};
use crate::workload::DType;
use crate::workload::attention::{
    AttentionInputs, AttentionKernel, AttentionShape, bench_id, check_output,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// Query rows per flash block and keys per tile: a 32×64 f32 tile and a 32×D accumulator
/// stay inside L1/L2 of one core.
pub const BLOCK_Q: usize = 32;
pub const BLOCK_K: usize = 64;

/// A buffer shared by disjoint ranges: each worker writes only what it owns.
#[derive(Clone, Copy)]
struct SharedMut(*mut f32);
// SAFETY: every use below forms slices over ranges no other worker touches in that pass.
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl SharedMut {
    /// # Safety
    /// The range must be in bounds and owned by the caller for the current pass.
    unsafe fn slice<'a>(self, start: usize, len: usize) -> &'a mut [f32] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

pub struct CpuAttention<'p> {
    pool: &'p StaticPool,
    kernel: AttentionKernel,
    shape: AttentionShape,
    inputs: AttentionInputs<f32>,
    out: Vec<f32>,
    /// The standard kernel's score matrix, or the flash kernel's per-worker tiles.
    scratch: Vec<f32>,
    accuracy: Option<crate::workload::Accuracy>,
}

impl<'p> CpuAttention<'p> {
    pub fn new(
        pool: &'p StaticPool,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Self, BackendError> {
        if dtype != DType::F32 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                shape.function_id(kernel, dtype),
                "the CPU attention kernels run in f32 only",
            ));
        }
        if shape.elements() == 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                shape.function_id(kernel, dtype),
                "empty problem",
            ));
        }
        let scratch_len = match kernel {
            AttentionKernel::Standard => (shape.score_bytes(DType::F32) / 4) as usize,
            AttentionKernel::Flash => pool.threads() * flash_tile_len(shape.head_dim),
        };
        Ok(CpuAttention {
            pool,
            kernel,
            shape,
            inputs: AttentionInputs::new(shape),
            out: vec![f32::NAN; shape.elements()],
            scratch: vec![0.0; scratch_len],
            accuracy: None,
        })
    }

    fn compute(&mut self) {
        match self.kernel {
            AttentionKernel::Standard => self.standard(),
            AttentionKernel::Flash => self.flash(),
        }
    }

    /// Q·Kᵀ into the score matrix, softmax over each row, then P·V: three passes.
    fn standard(&mut self) {
        let shape = self.shape;
        let (s, d) = (shape.seq, shape.head_dim);
        let rows = shape.batch * shape.heads * s;
        let (q, k, v) = (&self.inputs.q, &self.inputs.k, &self.inputs.v);
        let scores = SharedMut(self.scratch.as_mut_ptr());
        let out = SharedMut(self.out.as_mut_ptr());
        let pool = self.pool;
        let threads = pool.threads();
        let scale = shape.scale() as f32;
        // Each pass visits rows r = t, t + threads, ...: rows are disjoint per worker.
        pool.run(|t| {
            for r in (t..rows).step_by(threads) {
                let (bh, i) = (r / s, r % s);
                let base = bh * s * d;
                let qi = &q[base + i * d..base + (i + 1) * d];
                // SAFETY: row r of the score matrix belongs to this worker in this pass.
                let row = unsafe { scores.slice(r * s, s) };
                for (j, score) in row.iter_mut().enumerate() {
                    *score = if j < shape.keys_for(i) {
                        dot(qi, &k[base + j * d..base + (j + 1) * d]) * scale
                    } else {
                        f32::NEG_INFINITY
                    };
                }
            }
        });
        pool.run(|t| {
            for r in (t..rows).step_by(threads) {
                // SAFETY: as above.
                let row = unsafe { scores.slice(r * s, s) };
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut total = 0.0f32;
                for p in row.iter_mut() {
                    *p = (*p - max).exp();
                    total += *p;
                }
                let inv = 1.0 / total;
                row.iter_mut().for_each(|p| *p *= inv);
            }
        });
        pool.run(|t| {
            for r in (t..rows).step_by(threads) {
                let (bh, i) = (r / s, r % s);
                let base = bh * s * d;
                // SAFETY: row r of the scores and of the output belong to this worker.
                let (p, o) = unsafe { (scores.slice(r * s, s), out.slice(r * d, d)) };
                o.fill(0.0);
                for (j, &pj) in p[..shape.keys_for(i)].iter().enumerate() {
                    axpy(pj, &v[base + j * d..base + (j + 1) * d], o);
                }
            }
        });
    }

    /// Query blocks sweep key tiles with a running max and sum per row.
    fn flash(&mut self) {
        let shape = self.shape;
        let (s, d) = (shape.seq, shape.head_dim);
        let blocks_per_head = s.div_ceil(BLOCK_Q);
        let blocks = shape.batch * shape.heads * blocks_per_head;
        let inputs = &self.inputs;
        let tiles = SharedMut(self.scratch.as_mut_ptr());
        let out = SharedMut(self.out.as_mut_ptr());
        let pool = self.pool;
        let threads = pool.threads();
        let tile_len = flash_tile_len(d);
        pool.run(|t| {
            // SAFETY: worker t owns tile t of the scratch.
            let tile = unsafe { tiles.slice(t * tile_len, tile_len) };
            for block in (t..blocks).step_by(threads) {
                let (bh, qb) = (block / blocks_per_head, block % blocks_per_head);
                let rows = qb * BLOCK_Q..((qb + 1) * BLOCK_Q).min(s);
                // SAFETY: these output rows belong to this block only.
                let o = unsafe { out.slice((bh * s + rows.start) * d, rows.len() * d) };
                flash_block(shape, inputs, bh, rows, tile, o);
            }
        });
    }

    /// Extra memory the kernel holds beyond Q, K, V and O, in bytes.
    fn scratch_bytes(&self) -> usize {
        self.scratch.len() * std::mem::size_of::<f32>()
    }
}

/// f32 scratch per flash worker: scores of one tile, the accumulator, running max and sum.
fn flash_tile_len(head_dim: usize) -> usize {
    BLOCK_Q * BLOCK_K + BLOCK_Q * head_dim + 2 * BLOCK_Q
}

/// One query block of one head: online softmax over key tiles.
fn flash_block(
    shape: AttentionShape,
    inputs: &AttentionInputs<f32>,
    bh: usize,
    rows: std::ops::Range<usize>,
    tile: &mut [f32],
    o: &mut [f32],
) {
    let (s, d) = (shape.seq, shape.head_dim);
    let base = bh * s * d;
    let scale = shape.scale() as f32;
    let (scores, rest) = tile.split_at_mut(BLOCK_Q * BLOCK_K);
    let (max, sum) = rest[BLOCK_Q * d..].split_at_mut(BLOCK_Q);
    max.fill(f32::NEG_INFINITY);
    sum.fill(0.0);
    o.fill(0.0);
    // Causal: keys beyond the block's last row are never needed.
    let key_end = if shape.causal { rows.end } else { s };
    for k0 in (0..key_end).step_by(BLOCK_K) {
        let keys = k0..(k0 + BLOCK_K).min(key_end);
        for (r, i) in rows.clone().enumerate() {
            let qi = &inputs.q[base + i * d..base + (i + 1) * d];
            let limit = shape.keys_for(i);
            let row = &mut scores[r * BLOCK_K..r * BLOCK_K + keys.len()];
            let mut tile_max = f32::NEG_INFINITY;
            for (c, j) in keys.clone().enumerate() {
                row[c] = if j < limit {
                    dot(qi, &inputs.k[base + j * d..base + (j + 1) * d]) * scale
                } else {
                    f32::NEG_INFINITY
                };
                tile_max = tile_max.max(row[c]);
            }
            if tile_max == f32::NEG_INFINITY {
                continue; // every key of this tile is masked for this row
            }
            let new_max = max[r].max(tile_max);
            let correction = (max[r] - new_max).exp();
            let acc = &mut o[r * d..(r + 1) * d];
            acc.iter_mut().for_each(|a| *a *= correction);
            let mut tile_sum = 0.0f32;
            for (c, j) in keys.clone().enumerate() {
                let p = (row[c] - new_max).exp();
                tile_sum += p;
                if p != 0.0 {
                    axpy(p, &inputs.v[base + j * d..base + (j + 1) * d], acc);
                }
            }
            sum[r] = sum[r] * correction + tile_sum;
            max[r] = new_max;
        }
    }
    for (r, acc) in o.chunks_exact_mut(d).enumerate() {
        let inv = 1.0 / sum[r];
        acc.iter_mut().for_each(|a| *a *= inv);
    }
}

/// Dot product in eight lanes (vectorisable; rounding grows like √n).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// acc += alpha · x
fn axpy(alpha: f32, x: &[f32], acc: &mut [f32]) {
    for (a, v) in acc.iter_mut().zip(x) {
        *a += alpha * v;
    }
}

impl TimedWorkload for CpuAttention<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.compute();
        let id = bench_id("cpu", self.kernel, self.shape, DType::F32);
        let checked = check_output(self.shape, &self.inputs, &self.out);
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        Ok(super::time_kept(self, iters, Self::compute, |w| &w.out))
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        let io = self.shape.io_bytes(DType::F32);
        notes.insert("io_bytes".into(), io.into());
        // What the kernel holds beyond Q, K, V and O: the S² matrix, or one tile per worker.
        notes.insert("scratch_bytes".into(), self.scratch_bytes().into());
        notes.insert(
            "peak_memory_bytes".into(),
            (io + self.scratch_bytes() as u64).into(),
        );
        notes.insert("threads".into(), self.pool.threads().into());
        with_accuracy(notes, self.accuracy.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kernels_match_the_reference_causal_and_not() {
        let pool = StaticPool::new(3).unwrap();
        // S not a multiple of either block, D not a multiple of the lane count.
        for causal in [false, true] {
            let shape = AttentionShape::new(2, 3, 100, 20, causal);
            for kernel in AttentionKernel::ALL {
                let mut w = CpuAttention::new(&pool, kernel, shape, DType::F32).unwrap();
                w.verify()
                    .unwrap_or_else(|e| panic!("{kernel:?} causal={causal}: {e}"));
                assert!(w.run(1).is_ok());
                let a: crate::workload::Accuracy =
                    serde_json::from_value(w.notes()["accuracy"].clone()).unwrap();
                assert_eq!(a.elements as usize, shape.elements());
                assert_eq!(a.reference, "all of O (600 query rows)");
                assert!(a.max_abs_error > 0.0 && a.max_eps_error < 64.0, "{a:?}");
            }
        }
    }

    #[test]
    fn kernels_agree_with_each_other() {
        let pool = StaticPool::new(2).unwrap();
        let shape = AttentionShape::new(1, 2, 130, 64, true);
        let mut outs = Vec::new();
        for kernel in AttentionKernel::ALL {
            let mut w = CpuAttention::new(&pool, kernel, shape, DType::F32).unwrap();
            w.compute();
            outs.push(w.out);
        }
        let diff = outs[0]
            .iter()
            .zip(&outs[1])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(diff < 1e-4, "standard and flash differ by {diff}");
    }

    #[test]
    fn flash_needs_far_less_memory_than_standard() {
        let pool = StaticPool::new(2).unwrap();
        let shape = AttentionShape::new(1, 4, 1024, 64, false);
        let standard = CpuAttention::new(&pool, AttentionKernel::Standard, shape, DType::F32)
            .unwrap()
            .scratch_bytes();
        let flash = CpuAttention::new(&pool, AttentionKernel::Flash, shape, DType::F32)
            .unwrap()
            .scratch_bytes();
        assert_eq!(standard as u64, shape.score_bytes(DType::F32));
        assert!(
            flash * 100 < standard,
            "flash {flash} vs standard {standard}"
        );
    }

    #[test]
    fn half_precision_is_a_recorded_skip() {
        let pool = StaticPool::new(1).unwrap();
        let shape = AttentionShape::new(1, 1, 8, 8, false);
        let err = CpuAttention::new(&pool, AttentionKernel::Flash, shape, DType::Bf16)
            .err()
            .unwrap();
        assert!(err.is_skip());
    }
}
