//! GEMM: C = A·B with A (M×K), B (K×N), C (M×N), row-major. The shapes, the FLOP and byte
//! formulas, and the correctness check every backend's result passes before it is timed.

use super::accuracy::{Accuracy, AccuracyMeter};
use super::{DType, Suite};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Square sizes of the full suite (256 to 4096 on the CPU; GPUs extend it).
pub const SQUARE_SIZES: &[usize] = &[256, 512, 1024, 2048, 4096];
/// Square sizes of the quick suite.
pub const QUICK_SQUARE_SIZES: &[usize] = &[512, 2048];

/// Square sizes of the GPU suites (256 to 16384: past 8192 the big GPUs reach their peak).
pub const GPU_SQUARE_SIZES: &[usize] = &[256, 512, 1024, 2048, 4096, 8192, 16384];
/// Square sizes of the GPU quick suite.
pub const GPU_QUICK_SQUARE_SIZES: &[usize] = &[1024, 4096, 8192];

/// The GEMMs of a transformer MLP block (LLaMA-7B widths: hidden 4096, FFN 11008) for a
/// batch of 2048 tokens: the up projection and its two transposes, the ones the forward
/// down projection and the backward pass run.
pub const TRANSFORMER_MLP_SHAPES: &[GemmShape] = &[
    GemmShape::new(2048, 11008, 4096),
    GemmShape::new(2048, 4096, 11008),
    GemmShape::new(4096, 11008, 2048),
];

/// One GEMM problem size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl GemmShape {
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        GemmShape { m, n, k }
    }

    pub const fn square(size: usize) -> Self {
        GemmShape::new(size, size, size)
    }

    /// Operations: one multiply and one add per term, 2·M·N·K. Floating-point operations
    /// for the float precisions, integer operations for int8 (counted as TOPS, never FLOP:
    /// `analysis::throughput` gives `gemm/*/int8*` ids their own unit).
    pub fn flops(&self) -> u64 {
        2 * self.m as u64 * self.n as u64 * self.k as u64
    }

    /// Bytes of A, B and C each touched once: the minimum traffic, the roofline's denominator.
    pub fn min_bytes(&self, dtype: DType) -> u64 {
        let elements = self.m * self.k + self.k * self.n + self.m * self.n;
        (elements * dtype.size_bytes()) as u64
    }

    /// FLOPs per byte of minimum traffic: 2MNK / (bytes_per_elem·(MK + KN + MN)).
    pub fn arithmetic_intensity(&self, dtype: DType) -> f64 {
        self.flops() as f64 / self.min_bytes(dtype) as f64
    }

    /// The value part of the id: `<M>x<N>x<K>`.
    pub fn id(&self) -> String {
        format!("{}x{}x{}", self.m, self.n, self.k)
    }
}

impl fmt::Display for GemmShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// Roofline bound in FLOP/s: min(peak compute, intensity · peak bandwidth).
pub fn roofline_flops(peak_flops: f64, peak_bytes_per_s: f64, intensity: f64) -> f64 {
    peak_flops.min(intensity * peak_bytes_per_s)
}

/// The shapes a suite covers on the CPU: in the full suite the squares and the transformer
/// shapes; in the quick suite the two squares only. The quick suite is the first result a
/// new user waits for (issue 30: at most 120 s on a 2-core machine): a 2048×11008×4096 f32
/// GEMM takes 2.3 s a call on this project's 2-core VM, so its ten samples cost 28 s per
/// library, a quarter of that budget, and the non-square path stays covered by the full
/// suite and by the kernels' tests.
pub fn cpu_shapes(suite: Suite) -> Vec<GemmShape> {
    if suite.is_full() {
        SQUARE_SIZES
            .iter()
            .map(|&s| GemmShape::square(s))
            .chain(TRANSFORMER_MLP_SHAPES.iter().copied())
            .collect()
    } else {
        QUICK_SQUARE_SIZES
            .iter()
            .map(|&s| GemmShape::square(s))
            .collect()
    }
}

/// The largest integer GEMM of the CPU quick suite: 512³. Without AVX-512 VNNI (or AMX) the
/// int8 kernels take 1.4–1.7 s per 2048³ call (2-core AVX2 VM, 2026-11-28), 30–40 s of
/// samples each; the full suite times them at every size.
pub const CPU_QUICK_INT8_MAX: usize = 512;

/// Whether the CPU quick suite times this combination: [`in_quick_suite`], with the integer
/// GEMMs at [`CPU_QUICK_INT8_MAX`] and below.
pub fn in_cpu_quick_suite(dtype: DType, shape: GemmShape) -> bool {
    let integer = matches!(dtype, DType::Int8 | DType::Int8q);
    in_quick_suite(dtype, shape)
        && (!integer || shape.m.max(shape.n).max(shape.k) <= CPU_QUICK_INT8_MAX)
}

/// The shapes a suite covers on a GPU (CUDA and ROCm alike), so both vendors' numbers
/// line up id for id.
pub fn gpu_shapes(suite: Suite) -> Vec<GemmShape> {
    let (squares, transformer) = if suite.is_full() {
        (GPU_SQUARE_SIZES, TRANSFORMER_MLP_SHAPES)
    } else {
        (GPU_QUICK_SQUARE_SIZES, &TRANSFORMER_MLP_SHAPES[..1])
    };
    squares
        .iter()
        .map(|&s| GemmShape::square(s))
        .chain(transformer.iter().copied())
        .collect()
}

/// Whether the quick suite times this combination: every dtype on the square sizes, and the
/// transformer shape only in f32 (one non-square point keeps that path covered while the
/// quick suite stays within minutes on a small machine).
pub fn in_quick_suite(dtype: DType, shape: GemmShape) -> bool {
    (shape.m == shape.n && shape.n == shape.k) || dtype == DType::F32
}

/// Multiply-adds (M·N·K) from which a GEMM's result is checked on a sample of its entries
/// ([`check_positions`]) instead of all of C: 2048³. Below it the check is exact and full
/// (or a named slice where the f64 reference passes its budgets); past it a full f64
/// reference costs seconds per precision on the host (2^33 multiply-adds at 2048³, 2^39
/// at 8192³), more than the timing it guards. A sampled check still fails a wrong kernel:
/// layout bugs, a wrong precision and bad edge tiles corrupt far more than one entry.
pub const SAMPLED_CHECK_FROM: u64 = 2048 * 2048 * 2048;
/// Sampled entries on each of C's four edges (first and last row and column), evenly spaced
/// from corner to corner, in a sampled check.
pub const EDGE_SAMPLES: usize = 64;

/// Whether `shape`'s result is checked on a sample of its entries ([`SAMPLED_CHECK_FROM`]).
pub fn checks_sampled(shape: GemmShape) -> bool {
    shape.m as u64 * shape.n as u64 * shape.k as u64 >= SAMPLED_CHECK_FROM
}

/// `count` indices from 0 to `len - 1`, evenly spaced, both ends included.
fn evenly_spaced(len: usize, count: usize) -> impl Iterator<Item = usize> {
    let steps = count.max(2) - 1;
    (0..=steps).map(move |s| s * (len - 1) / steps)
}

/// Output positions the check compares: the four corners, the first and last rows and
/// columns (edge tiles are where blocked kernels go wrong), and `random` positions inside.
/// For a shape checked by sample ([`checks_sampled`]) the edges are [`EDGE_SAMPLES`] evenly
/// spaced entries each instead of all of them, so the whole check is a few hundred f64 dot
/// products.
pub fn check_positions(shape: GemmShape, random: usize, seed: u64) -> Vec<(usize, usize)> {
    let GemmShape { m, n, .. } = shape;
    let (rows, cols): (Vec<usize>, Vec<usize>) = if checks_sampled(shape) {
        (
            evenly_spaced(m, EDGE_SAMPLES).collect(),
            evenly_spaced(n, EDGE_SAMPLES).collect(),
        )
    } else {
        ((0..m).collect(), (0..n).collect())
    };
    let mut positions = Vec::with_capacity(2 * (rows.len() + cols.len()) + random);
    for &j in &cols {
        positions.push((0, j));
        positions.push((m - 1, j));
    }
    for &i in &rows {
        positions.push((i, 0));
        positions.push((i, n - 1));
    }
    let mut rng = super::random::SeededRng::new(seed);
    positions.extend((0..random).map(|_| (rng.below(m), rng.below(n))));
    positions.sort_unstable();
    positions.dedup();
    positions
}

/// Compares `c` with f64 dot products of `a` and `b` (row-major, the values the kernel
/// actually read, already rounded to its input precision) on the reference slice
/// ([`reference_slice`]: all of C unless that is past the reference budgets) and at
/// `positions` outside it (edges and random entries of the rest). The error of each entry
/// must stay within `dtype.dot_error_bound(k, |want|, Σ|a_ik·b_kj|)`; its scale for the
/// accuracy set is Σ|a_ik·b_kj| (the backward-error scale). Returns the accuracy set, or
/// the first failure.
pub fn check_product(
    shape: GemmShape,
    dtype: DType,
    a: &[f64],
    b: &[f64],
    c: impl Fn(usize, usize) -> f64,
    positions: &[(usize, usize)],
) -> Result<Accuracy, String> {
    check_product_rounded(shape, dtype, dtype.gemm_rounding(), a, b, c, positions)
}

/// The leading block of C the reference covers: `(rows, columns)`. All of C when its f64
/// reference (A, B and C) fits [`REFERENCE_BUDGET_BYTES`] and its M·N·K multiply-adds fit
/// [`REFERENCE_BUDGET_OPS`]; else the first columns (only when B alone takes more than half
/// the memory budget) and as many leading rows as then fit.
///
/// [`REFERENCE_BUDGET_BYTES`]: super::accuracy::REFERENCE_BUDGET_BYTES
/// [`REFERENCE_BUDGET_OPS`]: super::accuracy::REFERENCE_BUDGET_OPS
pub fn reference_slice(shape: GemmShape) -> (usize, usize) {
    let GemmShape { m, n, k } = shape;
    let (k64, n64) = (k as u64, n as u64);
    let half_budget = super::accuracy::REFERENCE_BUDGET_BYTES / 2;
    let cols = if 8 * k64 * n64 <= half_budget {
        n
    } else {
        ((half_budget / (8 * k64)).max(1) as usize).min(n)
    };
    let cols64 = cols as u64;
    let rows =
        super::accuracy::reference_rows(m, 8 * k64 * cols64, 8 * (k64 + cols64), cols64 * k64);
    (rows, cols)
}

/// What the reference of `shape` covered, for the record: `all of C (MxN)`, or the slice
/// and how many entries outside it were checked too.
fn slice_name(shape: GemmShape, (rows, cols): (usize, usize), outside: usize) -> String {
    let GemmShape { m, n, .. } = shape;
    if rows == m && cols == n {
        return format!("all of C ({m}x{n})");
    }
    let columns = if cols == n {
        format!("all {n} columns")
    } else {
        format!("columns 0..{cols}")
    };
    format!(
        "rows 0..{rows}, {columns} of C ({m}x{n}), plus {outside} edge and random entries outside it"
    )
}

/// What a sampled check compared, and the tolerance each entry was held to, for the
/// benchmark's notes.
fn sample_name(
    shape: GemmShape,
    rounding: crate::workload::dtype::GemmRounding,
    compared: usize,
) -> String {
    let GemmShape { m, n, k } = shape;
    // The bound is linear in |c| and Σ|a·b|: its two coefficients at this K.
    let per_value = rounding.bound(k, 1.0, 0.0);
    let per_scale = rounding.bound(k, 0.0, 1.0);
    format!(
        "sampled: {compared} entries of C ({m}x{n}) (the corners, {EDGE_SAMPLES} evenly spaced \
         on each edge, the rest at seeded random positions), each against an f64 dot product \
         of the stored inputs; tolerance per entry {per_value:.2e}·|c| + {per_scale:.2e}·Σ|a·b| \
         (the precision's rounding bound at K={k})"
    )
}

/// [`check_product`] for a library whose rounding differs from `dtype`'s usual one (see
/// [`crate::workload::dtype::GemmRounding`]).
pub fn check_product_rounded(
    shape: GemmShape,
    dtype: DType,
    rounding: crate::workload::dtype::GemmRounding,
    a: &[f64],
    b: &[f64],
    c: impl Fn(usize, usize) -> f64,
    positions: &[(usize, usize)],
) -> Result<Accuracy, String> {
    check_input_sizes(shape, a.len(), b.len())?;
    let GemmShape { m, n, k } = shape;
    let mut meter = AccuracyMeter::new(dtype);
    let mut entry = |i: usize, j: usize, want: f64, scale: f64| {
        let got = c(i, j);
        let bound = rounding.bound(k, want.abs(), scale);
        meter
            .add(got, want, scale, bound)
            .map(|_| ())
            .map_err(|e| format!("{dtype} {shape}: C[{i},{j}] = {e}"))
    };
    let sampled = checks_sampled(shape);
    // A sampled check has no slice: every entry it compares is one of `positions`.
    let (rows, cols) = if sampled {
        (0, 0)
    } else {
        reference_slice(shape)
    };
    // Row by row over the slice: each entry's sum still runs over p in order (the same
    // sequential f64 dot product as below), but the inner loop walks B's rows contiguously.
    let (mut want, mut scale) = (vec![0.0f64; cols], vec![0.0f64; cols]);
    for i in 0..rows {
        want.fill(0.0);
        scale.fill(0.0);
        for p in 0..k {
            let aip = a[i * k + p];
            let b_row = &b[p * n..p * n + cols];
            for ((w, s), &bpj) in want.iter_mut().zip(scale.iter_mut()).zip(b_row) {
                let term = aip * bpj;
                *w += term;
                *s += term.abs();
            }
        }
        for j in 0..cols {
            entry(i, j, want[j], scale[j])?;
        }
    }
    let mut outside = 0;
    for &(i, j) in positions.iter().filter(|&&(i, j)| i >= rows || j >= cols) {
        let (mut want, mut scale) = (0.0f64, 0.0f64);
        for p in 0..k {
            let term = a[i * k + p] * b[p * n + j];
            want += term;
            scale += term.abs();
        }
        entry(i, j, want, scale)?;
        outside += 1;
    }
    if sampled {
        return Ok(meter.finish(sample_name(shape, rounding, outside), true));
    }
    let sliced = rows < m || cols < n;
    Ok(meter.finish(slice_name(shape, (rows, cols), outside), sliced))
}

/// The benchmark id `gemm/<backend>/<dtype>/<M>x<N>x<K>`: built here only, so bench targets
/// and the backends' error messages cannot disagree.
pub fn bench_id(backend: &str, dtype: DType, shape: GemmShape) -> super::BenchId {
    super::BenchId::new(super::family::GEMM.name, backend, dtype.id(), shape.id())
}

/// The function-part prefix of a GEMM run through a CPU BLAS library (OpenBLAS, BLIS,
/// oneMKL) rather than the backend's own kernels: `gemm/cpu/blas_f32/1024x1024x1024`
/// beside `gemm/cpu/f32/...`. The device stays the id's second part, so telemetry, peaks
/// and the cross-hardware matrix read it as the CPU it ran on; the function names the
/// kernel and the precision, as attention's `flash_causal_f16` does. The library is
/// named in each id's notes, not in the id, so one id compares across machines.
pub const BLAS_PREFIX: &str = "blas_";

/// `gemm/<backend>/blas_<dtype>/<M>x<N>x<K>`: the GEMM of a BLAS library ([`BLAS_PREFIX`]).
pub fn blas_bench_id(backend: &str, dtype: DType, shape: GemmShape) -> super::BenchId {
    super::BenchId::new(
        super::family::GEMM.name,
        backend,
        format!("{BLAS_PREFIX}{}", dtype.id()),
        shape.id(),
    )
}

/// The precision of a GEMM id's function part, the own kernels' (`f32`) or a BLAS's
/// (`blas_f32`); `None` for anything else.
pub fn function_dtype(function: &str) -> Option<DType> {
    function
        .strip_prefix(BLAS_PREFIX)
        .unwrap_or(function)
        .parse()
        .ok()
}

/// Sub-byte float formats (OCP MX FP6 e3m2 and FP4 e2m1) with tensor-core support only on
/// Blackwell (sm_100 and newer) and MI355X (gfx950). Every backend names a row per shape
/// for each, skipped with its reason (`backend::sub_byte_gemm_skip`), so their absence is
/// a recorded fact of the run rather than a missing line.
pub const SUB_BYTE_FORMATS: &[&str] = &["fp6e3m2", "fp4e2m1"];

/// `gemm/<backend>/<format>/<M>x<N>x<K>` for a [`SUB_BYTE_FORMATS`] entry.
pub fn sub_byte_bench_id(backend: &str, format: &str, shape: GemmShape) -> super::BenchId {
    super::BenchId::new(super::family::GEMM.name, backend, format, shape.id())
}

/// A (M×K) and B (K×N) hold as many entries as the shape says, or an error naming both.
pub(crate) fn check_input_sizes(
    shape: GemmShape,
    a_len: usize,
    b_len: usize,
) -> Result<(), String> {
    let GemmShape { m, n, k } = shape;
    if a_len != m * k || b_len != k * n {
        return Err(format!("input sizes {a_len}, {b_len} do not match {shape}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn blas_ids_name_the_precision_after_the_prefix() {
        let id = blas_bench_id("cpu", DType::F64, GemmShape::square(1024));
        assert_eq!(id.full(), "gemm/cpu/blas_f64/1024x1024x1024");
        assert_eq!(function_dtype(&id.function), Some(DType::F64));
        assert_eq!(function_dtype("int8q"), Some(DType::Int8q));
        assert_eq!(function_dtype("blas_"), None);
        assert_eq!(function_dtype("all"), None);
    }
    use super::*;
    use crate::workload::dtype::FP8_PROMOTION_K;

    #[test]
    fn flops_and_intensity_follow_the_formulas() {
        let s = GemmShape::new(2048, 11008, 4096);
        assert_eq!(s.flops(), 2 * 2048 * 11008 * 4096);
        let sq = GemmShape::square(1024);
        // 2n^3 / (4 · 3n^2) = n/6 for f32.
        assert!((sq.arithmetic_intensity(DType::F32) - 1024.0 / 6.0).abs() < 1e-9);
        assert_eq!(sq.id(), "1024x1024x1024");
        assert_eq!(roofline_flops(100.0, 10.0, 5.0), 50.0);
        assert_eq!(roofline_flops(100.0, 10.0, 50.0), 100.0);
    }

    #[test]
    fn suites_cover_the_documented_axes() {
        let quick = cpu_shapes(Suite::Quick);
        assert_eq!(quick.len(), 2);
        assert!(quick.contains(&GemmShape::square(2048)));
        assert!(in_cpu_quick_suite(DType::F32, GemmShape::square(2048)));
        assert!(in_cpu_quick_suite(DType::Int8q, GemmShape::square(512)));
        assert!(!in_cpu_quick_suite(DType::Int8, GemmShape::square(2048)));
        assert!(!in_cpu_quick_suite(
            DType::F16,
            GemmShape::new(2048, 11008, 4096)
        ));
        let full = cpu_shapes(Suite::Full);
        assert_eq!(
            full.len(),
            SQUARE_SIZES.len() + TRANSFORMER_MLP_SHAPES.len()
        );
    }

    fn naive(shape: GemmShape, a: &[f64], b: &[f64]) -> Vec<f64> {
        let GemmShape { m, n, k } = shape;
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn check_accepts_a_right_product_and_rejects_a_wrong_one() {
        let shape = GemmShape::new(7, 5, 9);
        let a = crate::workload::random::normal_f64(1, 63);
        let b = crate::workload::random::normal_f64(2, 45);
        let c = naive(shape, &a, &b);
        let positions = check_positions(shape, 10, 3);
        assert!(positions.contains(&(6, 4)));
        check_product(shape, DType::F64, &a, &b, |i, j| c[i * 5 + j], &positions).unwrap();
        // A transposed read of B is the classic layout bug.
        let err = check_product(
            shape,
            DType::F32,
            &a,
            &b,
            |i, j| c[j * 7 % 35 + i % 5],
            &positions,
        );
        assert!(err.is_err());
        let mut bad = c.clone();
        bad[6 * 5 + 4] += 2.0;
        let err = check_product(
            shape,
            DType::Bf16,
            &a,
            &b,
            |i, j| bad[i * 5 + j],
            &positions,
        )
        .unwrap_err();
        assert!(err.contains("C[6,4]"), "{err}");
    }

    #[test]
    fn large_problems_are_checked_on_a_named_slice() {
        // Under the sampled size, past the ops budget: 2^32 multiply-adds, 512 rows of C.
        let under = GemmShape::new(1024, 2048, 2048);
        assert!(!checks_sampled(under));
        assert_eq!(reference_slice(under), (512, 2048));
        // 4096³: all of it is 384 MiB of f64 but 2^36 multiply-adds: 128 rows of C.
        assert_eq!(reference_slice(GemmShape::square(4096)), (128, 4096));
        // 16384³: B alone is 2 GiB of f64, so the columns are cut too.
        let (rows, cols) = reference_slice(GemmShape::square(16384));
        assert_eq!(cols, 4096);
        assert!(rows >= 1 && rows as u64 * 4096 * 16384 <= 1 << 31);
        assert_eq!(reference_slice(GemmShape::square(512)), (512, 512));
        // A sliced check names the slice and still checks the edges outside it.
        // Here memory binds first: B is 256 MB of f64 and each row of A 32 MB, so 25 rows
        // fit in 1 GiB (the multiply-adds would allow 67).
        let shape = GemmShape::new(700, 8, 4_000_000);
        assert_eq!(reference_slice(shape), (25, 8));
        let name = slice_name(shape, reference_slice(shape), 1416);
        assert_eq!(
            name,
            "rows 0..25, all 8 columns of C (700x8), plus 1416 edge and random entries outside it"
        );
    }

    /// The smallest sampled shapes, cheap to build: 2^33 multiply-adds with K = 512.
    fn sampled_inputs() -> (GemmShape, Vec<f64>, Vec<f64>) {
        let shape = GemmShape::new(4096, 4096, 512);
        let a = crate::workload::random::normal_f64(21, shape.m * shape.k);
        let b = crate::workload::random::normal_f64(22, shape.k * shape.n);
        (shape, a, b)
    }

    /// The exact product at one entry: a "kernel" evaluated only where the check looks.
    fn entry(shape: GemmShape, a: &[f64], b: &[f64], i: usize, j: usize) -> f64 {
        (0..shape.k)
            .map(|p| a[i * shape.k + p] * b[p * shape.n + j])
            .sum()
    }

    #[test]
    fn large_shapes_are_checked_on_a_few_hundred_sampled_entries_with_the_corners() {
        assert!(checks_sampled(GemmShape::square(2048)));
        assert!(checks_sampled(GemmShape::square(8192)));
        assert!(!checks_sampled(GemmShape::square(1024)));
        let (shape, a, b) = sampled_inputs();
        let positions = check_positions(shape, 512, 7);
        assert!(
            positions.len() <= 4 * EDGE_SAMPLES + 512,
            "{}",
            positions.len()
        );
        for corner in [(0, 0), (0, 4095), (4095, 0), (4095, 4095)] {
            assert!(positions.contains(&corner), "{corner:?}");
        }
        // Deterministic: the same seed samples the same entries.
        assert_eq!(positions, check_positions(shape, 512, 7));
        let right = |i, j| entry(shape, &a, &b, i, j);
        let acc = check_product(shape, DType::F32, &a, &b, right, &positions).unwrap();
        assert_eq!(acc.elements, positions.len() as u64);
        assert!(acc.sliced);
        assert!(
            acc.reference
                .starts_with(&format!("sampled: {} entries", positions.len()))
                && acc.reference.contains("tolerance per entry")
                && acc.reference.contains("K=512"),
            "{}",
            acc.reference
        );
        // One wrong sampled entry fails the check, wherever it is among the samples.
        for &(bad_i, bad_j) in [positions[0], positions[positions.len() / 2], (4095, 4095)].iter() {
            let wrong = |i, j| right(i, j) + if (i, j) == (bad_i, bad_j) { 1.0 } else { 0.0 };
            let err = check_product(shape, DType::F32, &a, &b, wrong, &positions).unwrap_err();
            assert!(err.contains(&format!("C[{bad_i},{bad_j}]")), "{err}");
        }
        // A transposed read (the classic layout bug) fails on the samples too.
        let transposed = |i, j| entry(shape, &a, &b, j, i);
        assert!(check_product(shape, DType::Bf16, &a, &b, transposed, &positions).is_err());
    }

    /// Below the sampled size the check is full: an entry that no edge or random position
    /// names is still compared, and a wrong one there fails.
    #[test]
    fn a_small_shape_wrong_only_off_the_sampled_positions_fails_the_full_check() {
        let shape = GemmShape::square(64);
        let a = crate::workload::random::normal_f64(31, 64 * 64);
        let b = crate::workload::random::normal_f64(32, 64 * 64);
        let positions = check_positions(shape, 0, 1);
        assert!(!positions.contains(&(17, 33)));
        let c = naive(shape, &a, &b);
        let wrong = |i, j| c[i * 64 + j] + if (i, j) == (17, 33) { 0.5 } else { 0.0 };
        let err = check_product(shape, DType::F32, &a, &b, wrong, &positions).unwrap_err();
        assert!(err.contains("C[17,33]"), "{err}");
        let acc =
            check_product(shape, DType::F32, &a, &b, |i, j| c[i * 64 + j], &positions).unwrap();
        assert_eq!(acc.reference, "all of C (64x64)");
        assert_eq!(acc.elements, 64 * 64);
    }

    #[test]
    fn the_accuracy_set_measures_a_constructed_error() {
        let shape = GemmShape::new(4, 3, 5);
        // Integer-valued inputs: every f64 product and sum is exact.
        let a: Vec<f64> = (0..20).map(|v| (v % 7) as f64 - 3.0).collect();
        let b: Vec<f64> = (0..15).map(|v| (v % 5) as f64 - 2.0).collect();
        let mut c = naive(shape, &a, &b);
        let exact = check_product(shape, DType::F32, &a, &b, |i, j| c[i * 3 + j], &[]).unwrap();
        assert_eq!((exact.max_abs_error, exact.max_eps_error), (0.0, 0.0));
        assert_eq!(exact.elements, 12);
        // One entry off by 2 ulps of f32 at its value.
        let (i, j) = (2, 1);
        let want = c[i * 3 + j];
        assert!(want != 0.0);
        let ulp = (want.abs() as f32).to_bits();
        let off = f32::from_bits(ulp + 2) as f64 - want.abs();
        c[i * 3 + j] += off.copysign(want);
        let acc = check_product(shape, DType::F32, &a, &b, |i, j| c[i * 3 + j], &[]).unwrap();
        let scale: f64 = (0..5).map(|p| (a[i * 5 + p] * b[p * 3 + j]).abs()).sum();
        assert_eq!(acc.max_abs_error, off);
        assert_eq!(acc.max_rel_error, off / want.abs());
        assert_eq!(acc.mean_rel_error, off / want.abs() / 12.0);
        assert_eq!(acc.max_eps_error, off / (f32::EPSILON as f64 * scale));
        assert_eq!(acc.reference, "all of C (4x3)");
    }

    /// Every GEMM shape any suite runs, CPU and GPU.
    fn every_suite_shape() -> Vec<GemmShape> {
        let mut shapes: Vec<GemmShape> = [Suite::Quick, Suite::Full]
            .into_iter()
            .flat_map(|suite| cpu_shapes(suite).into_iter().chain(gpu_shapes(suite)))
            .collect();
        shapes.sort_by_key(|s| (s.m, s.n, s.k));
        shapes.dedup();
        shapes
    }

    /// The inputs of a slice of `shape`: all of K (the bound depends on K and the
    /// precision only) and at most 8 rows and columns, rounded to `dtype`'s storage.
    fn slice_inputs(shape: GemmShape, dtype: DType) -> (GemmShape, Vec<f64>, Vec<f64>) {
        let slice = GemmShape::new(shape.m.min(8), shape.n.min(8), shape.k);
        let round = |v: Vec<f64>| v.into_iter().map(|x| dtype.round_stored(x)).collect();
        let a = round(crate::workload::random::normal_f64(11, slice.m * slice.k));
        let b = round(crate::workload::random::normal_f64(12, slice.k * slice.n));
        (slice, a, b)
    }

    /// TF32 keeps 10 explicit mantissa bits: round an f32 to it, ties to even.
    fn to_tf32(x: f64) -> f64 {
        let bits = (x as f32).to_bits();
        let rounded = bits.wrapping_add(0xfff + ((bits >> 13) & 1)) & !0x1fff;
        f32::from_bits(rounded) as f64
    }

    /// `x` truncated to `bits` significant bits: a short accumulator that drops, not rounds.
    fn truncate_bits(x: f64, bits: i32) -> f64 {
        if x == 0.0 {
            return 0.0;
        }
        let step = 2f64.powi(x.abs().log2().floor() as i32 + 1 - bits);
        (x / step).trunc() * step
    }

    /// One entry as the libraries compute it: inputs rounded where the library rounds
    /// them, products summed in the accumulation precision (FP8 in 14-bit blocks promoted
    /// into f32), the output rounded to storage.
    fn simulated_entry(dtype: DType, a: &[f64], b: &[f64]) -> f64 {
        let k = a.len();
        let (mut acc, mut block, mut in_block) = (0.0f64, 0.0f64, 0);
        for p in 0..k {
            let product = match dtype {
                DType::Tf32 => to_tf32(a[p]) * to_tf32(b[p]),
                _ => a[p] * b[p],
            };
            match dtype {
                DType::F64 => acc += product,
                DType::Fp8E4m3 | DType::Fp8E5m2 => {
                    block = truncate_bits(block + product, 14);
                    in_block += 1;
                    if in_block == FP8_PROMOTION_K || p + 1 == k {
                        acc = (acc + block) as f32 as f64;
                        (block, in_block) = (0.0, 0);
                    }
                }
                _ => acc = (acc + product) as f32 as f64,
            }
        }
        match dtype {
            DType::Fp8E4m3 | DType::Fp8E5m2 => DType::Bf16.round_stored(acc),
            _ => dtype.round_stored(acc),
        }
    }

    fn simulated_product(shape: GemmShape, dtype: DType, a: &[f64], b: &[f64]) -> Vec<f64> {
        let GemmShape { m, n, k } = shape;
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let column: Vec<f64> = (0..k).map(|p| b[p * n + j]).collect();
                c[i * n + j] = simulated_entry(dtype, &a[i * k..(i + 1) * k], &column);
            }
        }
        c
    }

    /// One ulp of `x` in the output precision of `dtype`.
    fn output_ulp(dtype: DType, x: f64) -> f64 {
        let u = dtype.gemm_rounding().output;
        2.0 * u * 2f64.powi(x.abs().log2().floor() as i32)
    }

    #[test]
    fn every_precision_passes_right_and_fails_wrong_products_at_every_suite_shape() {
        for shape in every_suite_shape() {
            // Integer products are checked for equality (workload::int8), not by bounds.
            for dtype in DType::ALL.into_iter().filter(|d| !d.is_integer()) {
                let (s, a, b) = slice_inputs(shape, dtype);
                let (m, n, k) = (s.m, s.n, s.k);
                let c = simulated_product(s, dtype, &a, &b);
                let all: Vec<(usize, usize)> =
                    (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
                let check =
                    |got: &dyn Fn(usize, usize) -> f64| check_product(s, dtype, &a, &b, got, &all);
                let case = format!("{dtype} {shape} (slice {s})");
                check(&|i, j| c[i * n + j]).unwrap_or_else(|e| panic!("right {case}: {e}"));
                // Libraries may round the last bit differently: one output ulp passes.
                check(&|i, j| c[i * n + j] + output_ulp(dtype, c[i * n + j]))
                    .unwrap_or_else(|e| panic!("one ulp {case}: {e}"));
                assert!(check(&|_, _| 0.0).is_err(), "zero output passed: {case}");
                assert!(
                    check(&|i, j| c[j * m + i]).is_err(),
                    "transposed output passed: {case}"
                );
                // Just past the derived bound, by one output ulp, fails.
                let past = |i: usize, j: usize| {
                    let (row, col) = (&a[i * k..(i + 1) * k], (0..k).map(|p| b[p * n + j]));
                    let (want, scale) = row
                        .iter()
                        .zip(col)
                        .fold((0.0, 0.0), |(w, s), (x, y)| (w + x * y, s + (x * y).abs()));
                    want + dtype.dot_error_bound(k, want.abs(), scale) + output_ulp(dtype, want)
                };
                assert!(check(&past).is_err(), "bound + one ulp passed: {case}");
            }
        }
    }

    #[test]
    fn a_library_rounding_running_sums_to_f16_passes_and_wrong_products_still_fail() {
        // The CPU backend's f16 GEMM keeps C in f16 between K blocks of >= 256 products.
        let every = 256;
        let rounding = DType::F16
            .gemm_rounding()
            .with_partial_sums(every, 2f64.powi(-11));
        for shape in every_suite_shape() {
            let (s, a, b) = slice_inputs(shape, DType::F16);
            let (m, n, k) = (s.m, s.n, s.k);
            let entry = |i: usize, j: usize| {
                let mut running = 0.0f64;
                for start in (0..k).step_by(every) {
                    let block: f32 = (start..(start + every).min(k))
                        .map(|p| (a[i * k + p] * b[p * n + j]) as f32)
                        .sum();
                    running = DType::F16.round_stored(running + block as f64);
                }
                running
            };
            let c: Vec<f64> = (0..m * n).map(|x| entry(x / n, x % n)).collect();
            let all: Vec<(usize, usize)> =
                (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
            let check = |got: &dyn Fn(usize, usize) -> f64| {
                check_product_rounded(s, DType::F16, rounding, &a, &b, got, &all)
            };
            check(&|i, j| c[i * n + j]).unwrap_or_else(|e| panic!("right {shape}: {e}"));
            assert!(check(&|_, _| 0.0).is_err(), "zero output passed: {shape}");
            assert!(
                check(&|i, j| c[j * m + i]).is_err(),
                "transposed passed: {shape}"
            );
        }
    }
}
