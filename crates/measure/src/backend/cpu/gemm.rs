//! CPU GEMM through the pure-Rust `gemm` crate (BLIS-style, runtime ISA dispatch, on par
//! with OpenBLAS here). Its call computes `dst = alpha·dst + beta·lhs·rhs`: alpha and beta
//! are swapped relative to BLAS, so a plain product passes alpha = 0, beta = 1.
//!
//! bf16 has no kernel in the crate: inputs are stored as bf16 and each timed call widens
//! them to f32, runs sgemm and rounds the result back, which is what a bf16 GEMM costs on
//! a CPU without bf16 matrix units. The widening is inside the timed window on purpose.
//!
//! The same workload runs f32 and f64 through a CPU BLAS loaded at run time ([`super::blas`])
//! instead, with the same inputs and the same check: `gemm/cpu/blas_f32/...` beside the
//! crate's `gemm/cpu/f32/...`.

use super::blas::{Blas, BlasInfo};
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy, with_accuracy};
use crate::workload::gemm::{
    bench_id as gemm_id, blas_bench_id, check_positions, check_product_rounded,
};
use crate::workload::random::normal_f64;
use crate::workload::{DType, GemmShape};
use gemm::{Parallelism, f16};
use half::bf16;
use std::collections::BTreeMap;
use std::time::Duration;

/// Output positions checked at random, besides every edge row and column.
const RANDOM_CHECKS: usize = 512;
const SEED_A: u64 = 0x0005_EEDA;
const SEED_B: u64 = 0x0005_EEDB;
/// The gemm crate keeps C in f16 between its K blocks, so an f16 GEMM's running sum is
/// rounded to f16 once per block. Its block (`kc`, gemm-common's cache.rs) is at least 512
/// before it is balanced over K, so at least 256 products.
pub const F16_PARTIAL_SUM_EVERY: usize = 256;

enum Operands {
    F64 {
        a: Vec<f64>,
        b: Vec<f64>,
        c: Vec<f64>,
    },
    F32 {
        a: Vec<f32>,
        b: Vec<f32>,
        c: Vec<f32>,
    },
    F16 {
        a: Vec<f16>,
        b: Vec<f16>,
        c: Vec<f16>,
    },
    Bf16 {
        a: Vec<bf16>,
        b: Vec<bf16>,
        c: Vec<bf16>,
        wide: [Vec<f32>; 3],
    },
}

/// Whose kernels multiply.
enum Kernel {
    /// The `gemm` crate: stackbench's own CPU kernels.
    Crate,
    /// A CPU BLAS library, with what it says about itself (threads as set for this run).
    Blas(&'static Blas, BlasInfo),
}

pub struct CpuGemm {
    shape: GemmShape,
    dtype: DType,
    threads: usize,
    operands: Operands,
    kernel: Kernel,
    accuracy: Option<crate::workload::Accuracy>,
}

impl CpuGemm {
    pub fn new(shape: GemmShape, dtype: DType, threads: usize) -> Result<Self, BackendError> {
        let GemmShape { m, n, k } = shape;
        if m == 0 || n == 0 || k == 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                format!("gemm {shape}"),
                "empty shape",
            ));
        }
        let a = normal_f64(SEED_A, m * k);
        let b = normal_f64(SEED_B, k * n);
        let convert = |v: &[f64], f: fn(f64) -> _| v.iter().map(|&x| f(x)).collect::<Vec<_>>();
        let operands = match dtype {
            DType::F64 => Operands::F64 {
                a,
                b,
                c: vec![0.0; m * n],
            },
            DType::F32 => Operands::F32 {
                a: convert(&a, |x| x as f32),
                b: convert(&b, |x| x as f32),
                c: vec![0.0; m * n],
            },
            DType::F16 => Operands::F16 {
                a: a.iter().map(|&x| f16::from_f64(x)).collect(),
                b: b.iter().map(|&x| f16::from_f64(x)).collect(),
                c: vec![f16::ZERO; m * n],
            },
            DType::Bf16 => Operands::Bf16 {
                a: a.iter().map(|&x| bf16::from_f64(x)).collect(),
                b: b.iter().map(|&x| bf16::from_f64(x)).collect(),
                c: vec![bf16::ZERO; m * n],
                wide: [vec![0.0; m * k], vec![0.0; k * n], vec![0.0; m * n]],
            },
            other => {
                return Err(BackendError::unsupported(
                    BackendKind::Cpu,
                    format!("gemm {other}"),
                    "no CPU kernel for this precision (TF32 and FP8 are GPU tensor-core formats)",
                ));
            }
        };
        Ok(CpuGemm {
            shape,
            dtype,
            threads,
            operands,
            kernel: Kernel::Crate,
            accuracy: None,
        })
    }

    /// The same GEMM through `blas` (f32 and f64 only), its thread count set to `threads`:
    /// the own kernels' count, and 1 in counting mode, so the library runs on the caller.
    pub fn with_blas(
        shape: GemmShape,
        dtype: DType,
        threads: usize,
        blas: &'static Blas,
    ) -> Result<Self, BackendError> {
        if !matches!(dtype, DType::F32 | DType::F64) {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                format!("BLAS gemm {dtype}"),
                "CBLAS has GEMM in f32 and f64 only",
            ));
        }
        let mut gemm = Self::new(shape, dtype, threads)?;
        gemm.kernel = Kernel::Blas(blas, blas.info_with_threads(threads));
        Ok(gemm)
    }

    fn id(&self) -> crate::workload::BenchId {
        match self.kernel {
            Kernel::Crate => gemm_id("cpu", self.dtype, self.shape),
            Kernel::Blas(..) => blas_bench_id("cpu", self.dtype, self.shape),
        }
    }

    fn multiply_once(&mut self) -> Result<(), BackendError> {
        if let Kernel::Blas(blas, _) = self.kernel {
            let GemmShape { m, n, k } = self.shape;
            let done = match &mut self.operands {
                Operands::F64 { a, b, c } => blas.gemm((m, n, k), a, b, c),
                Operands::F32 { a, b, c } => blas.gemm((m, n, k), a, b, c),
                _ => unreachable!("with_blas admits f32 and f64 only"),
            };
            return done.map_err(|e| BackendError::mismatch(&self.id(), e));
        }
        // One thread runs on the caller, without rayon: in counting mode Callgrind counts
        // only the calling thread, and on a one-CPU machine a pool only adds hand-offs.
        let par = match self.threads {
            0 | 1 => Parallelism::None,
            threads => Parallelism::Rayon(threads),
        };
        let shape = self.shape;
        match &mut self.operands {
            Operands::F64 { a, b, c } => matmul(shape, a, b, c, 0.0, 1.0, par),
            Operands::F32 { a, b, c } => matmul(shape, a, b, c, 0.0, 1.0, par),
            Operands::F16 { a, b, c } => matmul(shape, a, b, c, f16::ZERO, f16::ONE, par),
            Operands::Bf16 { a, b, c, wide } => {
                let [wa, wb, wc] = wide;
                widen(a, wa);
                widen(b, wb);
                matmul(shape, wa, wb, wc, 0.0, 1.0, par);
                for (dst, &src) in c.iter_mut().zip(wc.iter()) {
                    *dst = bf16::from_f32(src);
                }
            }
        }
        Ok(())
    }

    /// The inputs as the kernel read them, widened to f64 for the reference.
    fn inputs_f64(&self) -> (Vec<f64>, Vec<f64>) {
        fn wide<T: Copy>(v: &[T], f: impl Fn(T) -> f64) -> Vec<f64> {
            v.iter().map(|&x| f(x)).collect()
        }
        match &self.operands {
            Operands::F64 { a, b, .. } => (a.clone(), b.clone()),
            Operands::F32 { a, b, .. } => (wide(a, f64::from), wide(b, f64::from)),
            Operands::F16 { a, b, .. } => (wide(a, f16::to_f64), wide(b, f16::to_f64)),
            Operands::Bf16 { a, b, .. } => (wide(a, bf16::to_f64), wide(b, bf16::to_f64)),
        }
    }

    fn output(&self, i: usize, j: usize) -> f64 {
        let idx = i * self.shape.n + j;
        match &self.operands {
            Operands::F64 { c, .. } => c[idx],
            Operands::F32 { c, .. } => c[idx] as f64,
            Operands::F16 { c, .. } => c[idx].to_f64(),
            Operands::Bf16 { c, .. } => c[idx].to_f64(),
        }
    }
}

fn widen(src: &[bf16], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.to_f32();
    }
}

/// Row-major C = A·B through the `gemm` crate.
fn matmul<T: 'static + Copy>(
    shape: GemmShape,
    a: &[T],
    b: &[T],
    c: &mut [T],
    zero: T,
    one: T,
    par: Parallelism,
) {
    let GemmShape { m, n, k } = shape;
    assert!(
        a.len() == m * k && b.len() == k * n && c.len() == m * n,
        "operand sizes match {shape}"
    );
    // SAFETY: the pointers cover m·k, k·n and m·n elements with the strides given
    // (row-major: row stride = columns, column stride = 1), as asserted above.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            zero,
            one,
            false,
            false,
            false,
            par,
        );
    }
}

impl TimedWorkload for CpuGemm {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.multiply_once()?;
        let (a, b) = self.inputs_f64();
        let positions = check_positions(self.shape, RANDOM_CHECKS, 0xC4EC);
        let mut rounding = self.dtype.gemm_rounding();
        if self.dtype == DType::F16 {
            rounding = rounding.with_partial_sums(F16_PARTIAL_SUM_EVERY, rounding.output);
        }
        let checked = check_product_rounded(
            self.shape,
            self.dtype,
            rounding,
            &a,
            &b,
            |i, j| self.output(i, j),
            &positions,
        );
        let id = self.id();
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let mut failed = Ok(());
        let time = super::time_calls(iters, || {
            if failed.is_ok() {
                failed = self.multiply_once();
            }
        });
        failed.map(|()| time)
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let notes = match &self.kernel {
            Kernel::Crate => {
                let kernel = match self.dtype {
                    DType::Bf16 => {
                        "gemm crate sgemm, bf16 widened to f32 per call (stackbench's own \
                         kernels, not a BLAS)"
                    }
                    _ => "gemm crate (stackbench's own kernels, not a BLAS)",
                };
                BTreeMap::from([
                    ("threads".to_owned(), self.threads.into()),
                    ("kernel".to_owned(), kernel.into()),
                ])
            }
            Kernel::Blas(_, info) => BTreeMap::from([
                // The count the library reports after it was set.
                (
                    "threads".to_owned(),
                    info.threads.map_or_else(
                        || "unknown: the library has no thread call stackbench knows".into(),
                        serde_json::Value::from,
                    ),
                ),
                (
                    "kernel".to_owned(),
                    format!("CPU BLAS {}", info.describe()).into(),
                ),
                (
                    "blas".to_owned(),
                    serde_json::to_value(info).unwrap_or_default(),
                ),
            ]),
        };
        with_accuracy(notes, self.accuracy.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gemm::check_product;

    #[test]
    fn every_dtype_is_correct_on_odd_shapes() {
        for dtype in [DType::F64, DType::F32, DType::F16, DType::Bf16] {
            for shape in [
                GemmShape::new(1, 1, 1),
                GemmShape::new(33, 17, 65),
                GemmShape::square(96),
            ] {
                let mut g = CpuGemm::new(shape, dtype, 2).unwrap();
                g.verify()
                    .unwrap_or_else(|e| panic!("{dtype} {shape}: {e}"));
                assert!(g.run(2).unwrap() > Duration::ZERO);
            }
        }
    }

    /// `g`'s C against the f64 product of its inputs in `dtype`, at the edge rows and
    /// columns (all of C at these sizes) and no random positions.
    fn check_every_edge(g: &CpuGemm, dtype: DType) -> Result<crate::workload::Accuracy, String> {
        let (a, b) = g.inputs_f64();
        let positions = check_positions(g.shape, 0, 1);
        check_product(g.shape, dtype, &a, &b, |i, j| g.output(i, j), &positions)
    }

    /// Multiplies a 20×30×40 f32 GEMM, adds one to C[i,j], and checks the reference names it.
    fn a_wrong_entry_is_caught(mut g: CpuGemm, (i, j): (usize, usize)) {
        let shape = g.shape;
        assert_eq!(shape, GemmShape::new(20, 30, 40));
        g.multiply_once().unwrap();
        if let Operands::F32 { c, .. } = &mut g.operands {
            c[i * 30 + j] += 1.0;
        }
        let err = check_every_edge(&g, DType::F32);
        assert!(err.unwrap_err().contains(&format!("C[{i},{j}]")));
    }

    #[test]
    fn a_wrong_product_is_caught() {
        let g = CpuGemm::new(GemmShape::new(20, 30, 40), DType::F32, 1).unwrap();
        a_wrong_entry_is_caught(g, (19, 29));
    }

    fn accuracy_of(g: &CpuGemm) -> crate::workload::Accuracy {
        let notes = g.notes();
        let note = notes
            .get("accuracy")
            .expect("verify leaves the accuracy set in the notes");
        serde_json::from_value(note.clone()).unwrap()
    }

    #[test]
    fn the_accuracy_set_reaches_the_notes_and_orders_the_precisions() {
        let shape = GemmShape::new(33, 17, 300);
        let mut sets = Vec::new();
        for dtype in [DType::F64, DType::F32, DType::F16, DType::Bf16] {
            let mut g = CpuGemm::new(shape, dtype, 2).unwrap();
            assert!(
                !g.notes().contains_key("accuracy"),
                "no set before the check"
            );
            g.verify().unwrap();
            let a = accuracy_of(&g);
            assert_eq!(a.dtype, dtype.id());
            assert_eq!(a.elements, 33 * 17);
            assert_eq!(a.reference, "all of C (33x17)");
            assert!(!a.sliced);
            assert!(
                a.max_abs_error > 0.0,
                "{dtype}: a rounded result is not exact: {a:?}"
            );
            assert!(a.max_rel_error >= a.mean_rel_error && a.mean_rel_error > 0.0);
            assert!(a.worst_bound_ratio > 0.0 && a.worst_bound_ratio <= 1.0);
            // Within a few epsilons at the Σ|a·b| scale (√300 ≈ 17 bounds the drift).
            assert!(a.max_eps_error < 20.0, "{dtype}: {a:?}");
            sets.push(a);
        }
        // Absolute errors order by precision: f64 < f32 < f16 < bf16.
        for pair in sets.windows(2) {
            assert!(
                pair[0].max_abs_error < pair[1].max_abs_error,
                "{} vs {}",
                pair[0].dtype,
                pair[1].dtype
            );
        }
    }

    #[test]
    fn a_known_error_within_the_bound_is_measured_exactly() {
        let shape = GemmShape::new(8, 8, 64);
        let mut g = CpuGemm::new(shape, DType::F64, 1).unwrap();
        g.multiply_once().unwrap();
        let (a, b) = g.inputs_f64();
        // f64 results are exact to ~1e-15 here: an added 1e-13 is the error the set sees.
        let mut delta = 1e-13;
        if let Operands::F64 { c, .. } = &mut g.operands {
            let before = c[3 * 8 + 5];
            c[3 * 8 + 5] += delta;
            delta = c[3 * 8 + 5] - before; // as the addition rounded it
        }
        let acc = check_every_edge(&g, DType::F64).unwrap();
        // The entry's own f64 rounding (a few 1e-16 at values near 10) comes on top.
        assert!(
            (acc.max_abs_error - delta).abs() < 1e-14,
            "{acc:?} vs {delta:e}"
        );
        let scale: f64 = (0..64).map(|p| (a[3 * 64 + p] * b[p * 8 + 5]).abs()).sum();
        let want_eps = delta / (f64::EPSILON * scale);
        assert!(
            (acc.max_eps_error / want_eps - 1.0).abs() < 0.1,
            "{acc:?} vs {want_eps}"
        );
    }

    /// Where a BLAS is installed: its GEMM passes the same check as the own kernels on odd
    /// shapes, names the library in its notes, and a wrong entry in its output is caught.
    #[test]
    fn the_blas_path_is_checked_like_the_own_kernels() {
        let Ok(blas) = Blas::shared() else {
            eprintln!("SKIPPED: no CPU BLAS installed");
            return;
        };
        // One thread, as every unit test sets the shared library: a test running beside
        // this one reads the count back.
        for dtype in [DType::F64, DType::F32] {
            for shape in [GemmShape::new(1, 1, 1), GemmShape::new(33, 17, 65)] {
                let mut g = CpuGemm::with_blas(shape, dtype, 1, blas).unwrap();
                g.verify()
                    .unwrap_or_else(|e| panic!("{dtype} {shape}: {e}"));
                assert!(g.run(2).unwrap() > Duration::ZERO);
                let notes = g.notes();
                assert!(notes["kernel"].as_str().unwrap().starts_with("CPU BLAS "));
                assert!(notes.contains_key("blas") && notes.contains_key("accuracy"));
            }
        }
        let err = CpuGemm::with_blas(GemmShape::square(8), DType::Bf16, 1, blas)
            .err()
            .unwrap();
        assert!(err.is_skip(), "{err}");
        let g = CpuGemm::with_blas(GemmShape::new(20, 30, 40), DType::F32, 1, blas).unwrap();
        a_wrong_entry_is_caught(g, (7, 3));
    }

    #[test]
    fn gpu_only_precisions_are_skips() {
        let err = CpuGemm::new(GemmShape::square(8), DType::Tf32, 1)
            .err()
            .unwrap();
        assert!(err.is_skip(), "{err}");
    }
}
