//! INT8 GEMM on the CPU: int8 A (M×K) and B (K×N), row-major, int32 sums, int32 output
//! (`int8`) or int8 output requantised with one per-tensor scale (`int8q`).
//!
//! No maintained Rust crate does int8×int8→int32 GEMM (the `gemm` crate has f16/f32/f64
//! and complex only; `matrixmultiply` and `faer` are floating point), so this is a
//! BLIS-shaped kernel written with `std::arch`: B is packed into panels of NR columns, A
//! into panels of MR rows, both in groups of four K, and a register-blocked micro-kernel
//! runs over one KC block at a time. The instruction set is chosen at run time:
//! - AVX-512 VNNI (`vpdpbusd zmm`): 6 rows × 64 columns, 24 accumulators;
//! - AVX-VNNI (`vpdpbusd ymm`, VEX): 6 rows × 16 columns, for CPUs without AVX-512;
//! - portable Rust: 4 rows × 16 columns, on the same packing, anywhere else.
//!
//! `vpdpbusd` multiplies *unsigned* bytes by signed bytes. A is made unsigned by adding
//! 128 (flipping its top bit while packing): Σ(a+128)·b = Σa·b + 128·Σb, so each column's
//! 128·Σ_p b[p,j], summed while B is packed, is subtracted. The arithmetic is modulo 2³²
//! throughout (vpdpbusd wraps), so the result is exact whenever the true sum fits in
//! int32, and the check compares it with an exact i64 reference. Packing A and B happens
//! inside every timed call: a real int8 layer gets new activations each call, and oneDNN
//! (torch `_int_mm`'s CPU path) reorders its inputs per call as well.
//!
//! AMX-INT8 (Sapphire Rapids and later) is not used yet: this machine has none to check
//! it on. Such a CPU runs the AVX-512 VNNI kernel, and the notes name the kernel.

use super::pool::{StaticPool, chunk_range};
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy, with_accuracy};
use crate::workload::gemm::{bench_id as gemm_id, check_positions};
use crate::workload::int8::{ARITHMETIC, Requant, check_int8, check_int8q, quantized_inputs};
use crate::workload::{DType, GemmShape};
use std::collections::BTreeMap;
use std::time::Duration;

const SEED_A: u64 = 0x0005_EEDA;
const SEED_B: u64 = 0x0005_EEDB;
/// Output positions checked at random, besides every edge row and column.
const RANDOM_CHECKS: usize = 512;
/// K per block (a multiple of 4): a 64-column B micro-panel of one block is 64 KiB, read
/// from L2 while the 6 KiB A micro-panel stays in L1.
const KC: usize = 1024;

/// Which micro-kernel runs; each has its own register block (MR rows × NR columns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int8Kernel {
    Avx512Vnni,
    AvxVnni,
    Portable,
}

impl Int8Kernel {
    /// The fastest kernel this CPU runs, detected at run time.
    pub fn detect() -> Int8Kernel {
        Self::available()
            .into_iter()
            .next()
            .unwrap_or(Int8Kernel::Portable)
    }

    /// Every kernel this CPU can run, fastest first (the portable one always).
    pub fn available() -> Vec<Int8Kernel> {
        let mut kernels = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
            {
                kernels.push(Int8Kernel::Avx512Vnni);
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("avxvnni")
            {
                kernels.push(Int8Kernel::AvxVnni);
            }
        }
        kernels.push(Int8Kernel::Portable);
        kernels
    }

    /// (MR, NR): the register block, and so the packing.
    fn block(self) -> (usize, usize) {
        match self {
            Int8Kernel::Avx512Vnni => (6, 64),
            Int8Kernel::AvxVnni => (6, 16),
            Int8Kernel::Portable => (4, 16),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Int8Kernel::Avx512Vnni => "stackbench std::arch AVX-512 VNNI (vpdpbusd zmm, 6x64)",
            Int8Kernel::AvxVnni => "stackbench std::arch AVX-VNNI (vpdpbusd ymm, 6x16)",
            Int8Kernel::Portable => "stackbench portable Rust (no VNNI on this CPU), 4x16",
        }
    }
}

/// Buffers one call works in, sized once in `new` so no timed call allocates.
struct Scratch {
    /// A panels: [panel][K/4][MR][4] unsigned bytes (a + 128).
    packed_a: Vec<u8>,
    /// B panels: [panel][K/4][NR][4] signed bytes.
    packed_b: Vec<i8>,
    /// 128·Σ_p b[p,j] per column (modulo 2³²).
    correction: Vec<i32>,
    /// The int32 sums (the output of `int8`, the accumulator of `int8q`).
    c32: Vec<i32>,
    c8: Vec<i8>,
}

pub struct CpuInt8Gemm<'p> {
    pool: &'p StaticPool,
    shape: GemmShape,
    dtype: DType,
    kernel: Int8Kernel,
    a: Vec<i8>,
    b: Vec<i8>,
    requant: Requant,
    scratch: Scratch,
    accuracy: Option<crate::workload::Accuracy>,
}

impl<'p> CpuInt8Gemm<'p> {
    pub fn new(pool: &'p StaticPool, shape: GemmShape, dtype: DType) -> Result<Self, BackendError> {
        Self::with_kernel(pool, shape, dtype, Int8Kernel::detect())
    }

    /// With a named kernel (tests run every kernel the CPU has against the reference).
    pub fn with_kernel(
        pool: &'p StaticPool,
        shape: GemmShape,
        dtype: DType,
        kernel: Int8Kernel,
    ) -> Result<Self, BackendError> {
        let GemmShape { m, n, k } = shape;
        if !dtype.is_integer() || m == 0 || n == 0 || k == 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                format!("gemm {dtype} {shape}"),
                "the int8 kernel runs int8 and int8q on non-empty shapes",
            ));
        }
        let a = quantized_inputs(SEED_A, m * k);
        let b = quantized_inputs(SEED_B, k * n);
        Self::from_inputs(pool, shape, dtype, kernel, a, b)
    }

    /// On given inputs (tests use edge values).
    pub fn from_inputs(
        pool: &'p StaticPool,
        shape: GemmShape,
        dtype: DType,
        kernel: Int8Kernel,
        a: Vec<i8>,
        b: Vec<i8>,
    ) -> Result<Self, BackendError> {
        let GemmShape { m, n, k } = shape;
        assert!(a.len() == m * k && b.len() == k * n, "inputs match {shape}");
        let (mr, nr) = kernel.block();
        let k4 = k.div_ceil(4) * 4;
        let scratch = Scratch {
            packed_a: vec![0x80; m.div_ceil(mr) * mr * k4],
            packed_b: vec![0; n.div_ceil(nr) * nr * k4],
            correction: vec![0; n.div_ceil(nr) * nr],
            c32: vec![0; m * n],
            c8: if dtype == DType::Int8q {
                vec![0; m * n]
            } else {
                Vec::new()
            },
        };
        Ok(CpuInt8Gemm {
            pool,
            shape,
            dtype,
            kernel,
            requant: Requant::for_inputs(k, &a, &b),
            a,
            b,
            scratch,
            accuracy: None,
        })
    }

    fn multiply_once(&mut self) {
        let job = Job::new(self);
        let threads = self.pool.threads();
        self.pool.run(|t| job.pack(t, threads));
        self.pool.run(|t| job.compute(t, threads));
    }

    pub fn output_i32(&self, i: usize, j: usize) -> i32 {
        self.scratch.c32[i * self.shape.n + j]
    }

    pub fn output_i8(&self, i: usize, j: usize) -> i8 {
        self.scratch.c8[i * self.shape.n + j]
    }

    /// Checks the output at `positions` against the exact reference.
    fn check(&self, positions: &[(usize, usize)]) -> Result<crate::workload::Accuracy, String> {
        let (shape, a, b) = (self.shape, &self.a, &self.b);
        match self.dtype {
            DType::Int8q => check_int8q(
                shape,
                a,
                b,
                self.requant,
                |i, j| self.output_i8(i, j),
                positions,
            ),
            _ => check_int8(shape, a, b, |i, j| self.output_i32(i, j), positions),
        }
    }
}

/// Raw pointers into one call's buffers, shared by the pool's workers. Each worker writes
/// only the panels and rows it owns (`pack` and `compute` say which), so no two write
/// the same byte, and the pool's `run` returns only when all have finished.
struct Job {
    shape: GemmShape,
    kernel: Int8Kernel,
    requant: Option<Requant>,
    a: *const i8,
    b: *const i8,
    packed_a: *mut u8,
    packed_b: *mut i8,
    correction: *mut i32,
    c32: *mut i32,
    c8: *mut i8,
}

// SAFETY: see the struct's comment: disjoint writes, reads after the writers finished.
unsafe impl Sync for Job {}

impl Job {
    fn new(g: &mut CpuInt8Gemm<'_>) -> Job {
        Job {
            shape: g.shape,
            kernel: g.kernel,
            requant: (g.dtype == DType::Int8q).then_some(g.requant),
            a: g.a.as_ptr(),
            b: g.b.as_ptr(),
            packed_a: g.scratch.packed_a.as_mut_ptr(),
            packed_b: g.scratch.packed_b.as_mut_ptr(),
            correction: g.scratch.correction.as_mut_ptr(),
            c32: g.scratch.c32.as_mut_ptr(),
            c8: g.scratch.c8.as_mut_ptr(),
        }
    }

    fn k4(&self) -> usize {
        self.shape.k.div_ceil(4) * 4
    }

    /// The A panels worker `t` owns (it packs them and computes their rows).
    fn a_panels(&self, t: usize, threads: usize) -> std::ops::Range<usize> {
        let (mr, _) = self.kernel.block();
        chunk_range(t, threads, self.shape.m.div_ceil(mr), 1)
    }

    /// Worker `t` packs its A panels and every `threads`-th B panel.
    fn pack(&self, t: usize, threads: usize) {
        let (mr, nr) = self.kernel.block();
        for panel in self.a_panels(t, threads) {
            // SAFETY: panel < ceil(M/MR), so the panel lies inside packed_a.
            unsafe { self.pack_a_panel(panel, mr) };
        }
        for panel in (t..self.shape.n.div_ceil(nr)).step_by(threads) {
            // SAFETY: as above for packed_b and correction.
            unsafe { self.pack_b_panel(panel, nr) };
        }
    }

    /// Rows `panel·MR ..` of A, K in groups of four, each byte + 128; rows past M and K
    /// past its end stay 0x80 (a zero) from the allocation.
    unsafe fn pack_a_panel(&self, panel: usize, mr: usize) {
        let GemmShape { m, k, .. } = self.shape;
        let k4 = self.k4();
        // SAFETY: the caller gives a panel inside the buffer.
        let out =
            unsafe { std::slice::from_raw_parts_mut(self.packed_a.add(panel * mr * k4), mr * k4) };
        for r in 0..mr.min(m - panel * mr) {
            let i = panel * mr + r;
            // SAFETY: row i < M of A (M×K).
            let row = unsafe { std::slice::from_raw_parts(self.a.add(i * k), k) };
            let whole = k / 4;
            for g in 0..whole {
                let word = u32::from_ne_bytes([
                    row[4 * g] as u8,
                    row[4 * g + 1] as u8,
                    row[4 * g + 2] as u8,
                    row[4 * g + 3] as u8,
                ]) ^ 0x8080_8080;
                let at = (g * mr + r) * 4;
                out[at..at + 4].copy_from_slice(&word.to_ne_bytes());
            }
            for p in whole * 4..k {
                out[(whole * mr + r) * 4 + p % 4] = row[p] as u8 ^ 0x80;
            }
        }
    }

    /// Columns `panel·NR ..` of B as [K/4][NR][4] (columns and K past the end are 0), and
    /// their corrections 128·Σ_p b[p,j].
    unsafe fn pack_b_panel(&self, panel: usize, nr: usize) {
        let GemmShape { n, k, .. } = self.shape;
        let k4 = self.k4();
        let j0 = panel * nr;
        let cols = nr.min(n - j0);
        // SAFETY: the caller gives a panel inside the buffers.
        let out =
            unsafe { std::slice::from_raw_parts_mut(self.packed_b.add(panel * nr * k4), nr * k4) };
        let sums = unsafe { std::slice::from_raw_parts_mut(self.correction.add(j0), nr) };
        sums.fill(0);
        // SAFETY: B is K×N.
        let b = unsafe { std::slice::from_raw_parts(self.b, k * n) };
        for g in 0..k4 / 4 {
            let dst = &mut out[g * nr * 4..(g + 1) * nr * 4];
            let full_rows = g * 4 + 4 <= k;
            let mut c = 0;
            if full_rows {
                while c + 16 <= cols {
                    let rows: [&[i8]; 4] =
                        std::array::from_fn(|q| &b[(g * 4 + q) * n + j0 + c..][..16]);
                    interleave16(rows, &mut dst[c * 4..c * 4 + 64]);
                    c += 16;
                }
            }
            for col in c..cols {
                for q in 0..4 {
                    let p = g * 4 + q;
                    dst[col * 4 + q] = if p < k { b[p * n + j0 + col] } else { 0 };
                }
            }
            for col in cols..nr {
                dst[col * 4..col * 4 + 4].fill(0);
            }
        }
        for p in 0..k {
            for (s, &x) in sums[..cols]
                .iter_mut()
                .zip(&b[p * n + j0..p * n + j0 + cols])
            {
                *s += x as i32;
            }
        }
        for s in sums.iter_mut() {
            *s = s.wrapping_mul(128);
        }
    }

    /// Worker `t` computes the rows of its A panels, one KC block at a time.
    fn compute(&self, t: usize, threads: usize) {
        let panels = self.a_panels(t, threads);
        // SAFETY: each branch runs only where `available` detected its features.
        #[cfg(target_arch = "x86_64")]
        match self.kernel {
            Int8Kernel::Avx512Vnni => return unsafe { x86::compute_avx512(self, panels) },
            Int8Kernel::AvxVnni => return unsafe { x86::compute_avxvnni(self, panels) },
            Int8Kernel::Portable => {}
        }
        // SAFETY: the portable kernel needs no feature.
        unsafe { self.compute_with::<4, 16>(panels, portable_tile::<4, 16>) }
    }

    /// The loop nest around a micro-kernel `tile(kgroups, a, b, out)` that writes the
    /// MR×NR sums of `kgroups` groups of four K into `out` (row stride NR).
    #[inline(always)]
    unsafe fn compute_with<const MR: usize, const NR: usize>(
        &self,
        panels: std::ops::Range<usize>,
        tile: unsafe fn(usize, *const u8, *const i8, &mut [i32]),
    ) {
        let GemmShape { m, n, .. } = self.shape;
        let k4 = self.k4();
        let mut sums = vec![0i32; MR * NR];
        let n_panels = n.div_ceil(NR);
        for k0 in (0..k4).step_by(KC) {
            let kc = KC.min(k4 - k0);
            let (first, last) = (k0 == 0, k0 + kc == k4);
            for np in 0..n_panels {
                let j0 = np * NR;
                let cols = NR.min(n - j0);
                // SAFETY: the panels lie inside the packed buffers (sized in `new`).
                let b = unsafe { self.packed_b.add(np * NR * k4 + k0 * NR) } as *const i8;
                let correction =
                    unsafe { std::slice::from_raw_parts(self.correction.add(j0), cols) };
                for mp in panels.clone() {
                    let a = unsafe { self.packed_a.add(mp * MR * k4 + k0 * MR) } as *const u8;
                    unsafe { tile(kc / 4, a, b, &mut sums) };
                    for r in 0..MR.min(m - mp * MR) {
                        let i = mp * MR + r;
                        // SAFETY: row i < M, columns j0..j0+cols < N: this worker's rows.
                        let c = unsafe {
                            std::slice::from_raw_parts_mut(self.c32.add(i * n + j0), cols)
                        };
                        let s = &sums[r * NR..r * NR + cols];
                        merge_row(c, s, correction, first);
                        if last && let Some(requant) = self.requant {
                            let q = unsafe {
                                std::slice::from_raw_parts_mut(self.c8.add(i * n + j0), cols)
                            };
                            requant_row(q, c, requant);
                        }
                    }
                }
            }
        }
    }
}

/// Adds one block's sums into C; the first block replaces C, less the correction.
#[inline(always)]
fn merge_row(c: &mut [i32], sums: &[i32], correction: &[i32], first: bool) {
    if first {
        for ((c, &s), &x) in c.iter_mut().zip(sums).zip(correction) {
            *c = s.wrapping_sub(x);
        }
    } else {
        for (c, &s) in c.iter_mut().zip(sums) {
            *c = c.wrapping_add(s);
        }
    }
}

#[inline(always)]
fn requant_row(q: &mut [i8], c: &[i32], requant: Requant) {
    for (q, &c) in q.iter_mut().zip(c) {
        *q = requant.apply(c);
    }
}

/// Four rows of 16 bytes to 16 columns of four consecutive K each (the packed layout):
/// `out[4c + q] = rows[q][c]`.
#[inline(always)]
fn interleave16(rows: [&[i8]; 4], out: &mut [i8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86_64; each row has 16 bytes and `out` 64 (asserted by
        // the slicing of the caller; loads and stores are unaligned).
        unsafe {
            let [r0, r1, r2, r3] = rows.map(|r| _mm_loadu_si128(r.as_ptr() as *const __m128i));
            let (t0, t1) = (_mm_unpacklo_epi8(r0, r1), _mm_unpackhi_epi8(r0, r1));
            let (t2, t3) = (_mm_unpacklo_epi8(r2, r3), _mm_unpackhi_epi8(r2, r3));
            let o = out.as_mut_ptr() as *mut __m128i;
            _mm_storeu_si128(o, _mm_unpacklo_epi16(t0, t2));
            _mm_storeu_si128(o.add(1), _mm_unpackhi_epi16(t0, t2));
            _mm_storeu_si128(o.add(2), _mm_unpacklo_epi16(t1, t3));
            _mm_storeu_si128(o.add(3), _mm_unpackhi_epi16(t1, t3));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for c in 0..16 {
        for q in 0..4 {
            out[4 * c + q] = rows[q][c];
        }
    }
}

/// The portable micro-kernel: the same packed layout and unsigned×signed sums as
/// vpdpbusd, in plain integer arithmetic.
unsafe fn portable_tile<const MR: usize, const NR: usize>(
    kgroups: usize,
    a: *const u8,
    b: *const i8,
    out: &mut [i32],
) {
    // SAFETY: the caller passes panels of `kgroups` groups.
    let a = unsafe { std::slice::from_raw_parts(a, kgroups * MR * 4) };
    let b = unsafe { std::slice::from_raw_parts(b, kgroups * NR * 4) };
    let mut acc = [[0i32; NR]; MR];
    for g in 0..kgroups {
        let (ag, bg) = (&a[g * MR * 4..][..MR * 4], &b[g * NR * 4..][..NR * 4]);
        for (r, row) in acc.iter_mut().enumerate() {
            for (c, x) in row.iter_mut().enumerate() {
                let mut s = 0i32;
                for q in 0..4 {
                    s += ag[r * 4 + q] as i32 * bg[c * 4 + q] as i32;
                }
                *x = x.wrapping_add(s);
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        out[r * NR..(r + 1) * NR].copy_from_slice(row);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Job;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// The loop nest compiled for AVX-512, so its merge and requantisation loops are
    /// vectorised with the same instructions.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn compute_avx512(job: &Job, panels: Range<usize>) {
        // SAFETY: this function's features are the tile's.
        unsafe { job.compute_with::<6, 64>(panels, tile_avx512) }
    }

    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn compute_avxvnni(job: &Job, panels: Range<usize>) {
        // SAFETY: as above.
        unsafe { job.compute_with::<6, 16>(panels, tile_avxvnni) }
    }

    /// One VNNI micro-kernel: 6 rows of `$vecs` vectors of `$lanes` i32 sums; per group
    /// of four K, `$vecs` loads of B, six 4-byte broadcasts of A and 6·`$vecs` unsigned ×
    /// signed dot products. AVX-512 and AVX-VNNI differ only in the vector type, its
    /// width and the intrinsics, so both tiles are this one loop nest.
    macro_rules! vnni_tile {
        (
            $(#[$doc:meta])*
            $name:ident, $features:literal, $vec:ty, $vecs:literal x $lanes:literal,
            $zero:ident, $load:ident, $set1:ident, $dot:ident, $store:ident
        ) => {
            $(#[$doc])*
            #[target_feature(enable = $features)]
            unsafe fn $name(kgroups: usize, a: *const u8, b: *const i8, out: &mut [i32]) {
                const NR: usize = $vecs * $lanes;
                let mut acc = [[$zero(); $vecs]; 6];
                for g in 0..kgroups {
                    // SAFETY: the panels hold `kgroups` groups of 6×4 and NR×4 bytes.
                    unsafe {
                        let bp = b.add(g * NR * 4) as *const $vec;
                        let mut bv = [$zero(); $vecs];
                        for (v, x) in bv.iter_mut().enumerate() {
                            *x = $load(bp.add(v));
                        }
                        let ap = a.add(g * 24) as *const i32;
                        for (r, row) in acc.iter_mut().enumerate() {
                            let av = $set1(ap.add(r).read_unaligned());
                            for (x, &bv) in row.iter_mut().zip(&bv) {
                                *x = $dot(*x, av, bv);
                            }
                        }
                    }
                }
                for (r, row) in acc.iter().enumerate() {
                    for (v, x) in row.iter().enumerate() {
                        // SAFETY: out holds 6 rows of NR.
                        unsafe { $store(out.as_mut_ptr().add(r * NR + v * $lanes) as *mut $vec, *x) };
                    }
                }
            }
        };
    }

    vnni_tile!(
        /// 6×64 sums with vpdpbusd on zmm: 24 accumulators, four B loads, six broadcasts.
        tile_avx512, "avx512f,avx512bw,avx512vnni", __m512i, 4 x 16,
        _mm512_setzero_si512, _mm512_loadu_si512, _mm512_set1_epi32, _mm512_dpbusd_epi32,
        _mm512_storeu_si512
    );

    vnni_tile!(
        /// 6×16 sums with VEX vpdpbusd on ymm: 12 accumulators, two B loads, six broadcasts.
        tile_avxvnni, "avx2,avxvnni", __m256i, 2 x 8,
        _mm256_setzero_si256, _mm256_loadu_si256, _mm256_set1_epi32, _mm256_dpbusd_avx_epi32,
        _mm256_storeu_si256
    );
}

impl TimedWorkload for CpuInt8Gemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.multiply_once();
        let positions = check_positions(self.shape, RANDOM_CHECKS, 0xC4EC);
        let id = gemm_id("cpu", self.dtype, self.shape);
        let checked = self.check(&positions);
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        Ok(super::time_kept(self, iters, Self::multiply_once, |w| {
            &w.scratch.c32
        }))
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::from([
            ("threads".to_owned(), self.pool.threads().into()),
            ("kernel".to_owned(), self.kernel.name().into()),
            ("arithmetic".to_owned(), ARITHMETIC.into()),
        ]);
        if self.dtype == DType::Int8q {
            notes.insert(
                "requantisation".to_owned(),
                crate::workload::int8::REQUANT_SCHEME.into(),
            );
            notes.insert(
                "requant_scale".to_owned(),
                (self.requant.scale as f64).into(),
            );
        }
        with_accuracy(notes, self.accuracy.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::int8::exact_product;

    fn every_position(shape: GemmShape) -> Vec<(usize, usize)> {
        (0..shape.m)
            .flat_map(|i| (0..shape.n).map(move |j| (i, j)))
            .collect()
    }

    /// Inputs with runs of both edge values (where the +128 offset wraps if it is wrong).
    fn edge_inputs(shape: GemmShape) -> (Vec<i8>, Vec<i8>) {
        let mut a = quantized_inputs(21, shape.m * shape.k);
        let mut b = quantized_inputs(22, shape.k * shape.n);
        for (x, v) in a
            .iter_mut()
            .zip([-128i8, 127, -128, -128, 127, 0, -1].iter().cycle())
            .step_by(3)
        {
            *x = *v;
        }
        for (x, v) in b
            .iter_mut()
            .zip([127i8, -128, -128, 127].iter().cycle())
            .step_by(2)
        {
            *x = *v;
        }
        // Row 0 of A and column 0 of B all −128: the largest positive sums.
        a[..shape.k].fill(-128);
        for p in 0..shape.k {
            b[p * shape.n] = -128;
        }
        (a, b)
    }

    const SHAPES: &[GemmShape] = &[
        GemmShape::new(1, 1, 1),
        GemmShape::new(7, 13, 5),
        GemmShape::new(6, 64, 4),
        GemmShape::new(13, 67, 1027),
        GemmShape::new(31, 129, 2051),
        GemmShape::new(65, 33, 3),
    ];

    #[test]
    fn every_kernel_matches_the_exact_reference_bit_for_bit() {
        let pools = [StaticPool::inline(), StaticPool::new(3).unwrap()];
        let kernels = Int8Kernel::available();
        assert!(kernels.contains(&Int8Kernel::Portable));
        for pool in &pools {
            for &kernel in &kernels {
                for &shape in SHAPES {
                    let (a, b) = edge_inputs(shape);
                    let want = exact_product(shape, &a, &b).unwrap();
                    let all = every_position(shape);
                    for dtype in [DType::Int8, DType::Int8q] {
                        let mut g = CpuInt8Gemm::from_inputs(
                            pool,
                            shape,
                            dtype,
                            kernel,
                            a.clone(),
                            b.clone(),
                        )
                        .unwrap();
                        g.multiply_once();
                        let case = format!("{kernel:?} {dtype} {shape} threads {}", pool.threads());
                        if dtype == DType::Int8 {
                            for (x, &(i, j)) in want.iter().zip(&all) {
                                assert_eq!(g.output_i32(i, j), *x, "{case} C[{i},{j}]");
                            }
                        } else {
                            let r = g.requant;
                            for (x, &(i, j)) in want.iter().zip(&all) {
                                assert_eq!(g.output_i8(i, j), r.apply(*x), "{case} C[{i},{j}]");
                            }
                        }
                        g.check(&all).unwrap_or_else(|e| panic!("{case}: {e}"));
                        // A second call over the same buffers gives the same answer.
                        g.multiply_once();
                        g.check(&all)
                            .unwrap_or_else(|e| panic!("second call {case}: {e}"));
                    }
                }
            }
        }
    }

    #[test]
    fn this_machine_runs_a_vnni_kernel_where_it_has_one() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512vnni") {
            assert_eq!(Int8Kernel::detect(), Int8Kernel::Avx512Vnni);
        }
        let pool = StaticPool::inline();
        let g = CpuInt8Gemm::new(&pool, GemmShape::square(8), DType::Int8).unwrap();
        assert_eq!(g.notes()["kernel"], Int8Kernel::detect().name());
    }

    #[test]
    fn verify_runs_and_catches_a_wrong_entry() {
        let pool = StaticPool::new(2).unwrap();
        let shape = GemmShape::new(70, 130, 300);
        for dtype in [DType::Int8, DType::Int8q] {
            let mut g = CpuInt8Gemm::new(&pool, shape, dtype).unwrap();
            g.verify().unwrap_or_else(|e| panic!("{dtype}: {e}"));
            assert!(g.run(2).unwrap() > Duration::ZERO);
            if dtype == DType::Int8 {
                g.scratch.c32[69 * 130 + 129] += 1;
            } else {
                g.scratch.c8[69 * 130 + 129] ^= 1;
            }
            let err = g.check(&check_positions(shape, 0, 1)).unwrap_err();
            assert!(err.contains("C[69,129]"), "{err}");
        }
        assert!(
            CpuInt8Gemm::new(&pool, shape, DType::F32)
                .err()
                .unwrap()
                .is_skip()
        );
    }
}
