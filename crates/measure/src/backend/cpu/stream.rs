//! STREAM-style bandwidth kernels on all cores: f64 arrays split statically across a pinned
//! thread pool, first-touched by the threads that use them, each thread sweeping its own
//! chunk `iters` times per timed call (no barrier between passes: chunks are independent).

use super::pool::StaticPool;
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::stream::{self, FILL, INIT_A, INIT_B, INIT_C, SCALAR, StreamKernel};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Elements per cache line of f64: chunk boundaries fall on lines so no two threads share one.
const LINE_ELEMENTS: usize = 8;

/// A raw pointer that may cross threads; each thread derives a disjoint chunk from it.
#[derive(Clone, Copy)]
struct SharedPtr(*mut f64);
// SAFETY: threads only form slices over disjoint ranges (StaticPool::chunk).
unsafe impl Send for SharedPtr {}
unsafe impl Sync for SharedPtr {}

impl SharedPtr {
    /// # Safety
    /// `range` must be in bounds and no other live slice may overlap it.
    unsafe fn slice<'a>(self, range: std::ops::Range<usize>) -> &'a mut [f64] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(range.start), range.len()) }
    }
}

pub struct CpuStream<'p> {
    pool: &'p StaticPool,
    kernel: StreamKernel,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    /// Per-thread partial sums of the read kernel, so the sum is never dead code.
    sums: Vec<f64>,
}

impl<'p> CpuStream<'p> {
    /// Allocates three arrays of `elements` f64 without touching them (calloc'd pages are
    /// mapped lazily), then lets each worker write its own chunk: first touch places it.
    pub fn new(
        pool: &'p StaticPool,
        kernel: StreamKernel,
        elements: usize,
    ) -> Result<Self, BackendError> {
        if elements == 0 {
            return Err(BackendError::unsupported(
                BackendKind::Cpu,
                "stream",
                "zero-length arrays",
            ));
        }
        let mut workload = CpuStream {
            pool,
            kernel,
            a: vec![0.0; elements],
            b: vec![0.0; elements],
            c: vec![0.0; elements],
            sums: vec![0.0; pool.threads()],
        };
        workload.for_each_chunk(|a, b, c, _| {
            a.fill(INIT_A);
            b.fill(INIT_B);
            c.fill(INIT_C);
        });
        Ok(workload)
    }

    /// Runs `f(a, b, c, thread)` on every worker over its own chunks of the arrays.
    fn for_each_chunk(&mut self, f: impl Fn(&mut [f64], &mut [f64], &mut [f64], usize) + Sync) {
        let len = self.a.len();
        let (a, b, c) = (
            SharedPtr(self.a.as_mut_ptr()),
            SharedPtr(self.b.as_mut_ptr()),
            SharedPtr(self.c.as_mut_ptr()),
        );
        let pool = self.pool;
        pool.run(|t| {
            let range = pool.chunk(t, len, LINE_ELEMENTS);
            // SAFETY: chunk ranges of different workers are disjoint and within `len`;
            // `self` is mutably borrowed for the whole call, so nothing else aliases.
            let (a, b, c) = unsafe {
                (
                    a.slice(range.clone()),
                    b.slice(range.clone()),
                    c.slice(range),
                )
            };
            f(a, b, c, t);
        });
    }

    fn pass(&mut self, kernel: StreamKernel, iters: u64) {
        let sums = SharedPtr(self.sums.as_mut_ptr());
        self.for_each_chunk(|a, b, c, t| {
            let mut sum = 0.0;
            for _ in 0..iters {
                match kernel {
                    StreamKernel::Copy => kernels::copy(c, a),
                    StreamKernel::Scale => kernels::scale(b, c, SCALAR),
                    StreamKernel::Add => kernels::add(c, a, b),
                    StreamKernel::Triad => kernels::triad(a, b, c, SCALAR),
                    StreamKernel::Read => sum = kernels::sum(std::hint::black_box(&*a)),
                    StreamKernel::Write => kernels::fill(std::hint::black_box(&mut *a), FILL),
                }
            }
            // SAFETY: one slot per worker index.
            unsafe { sums.slice(t..t + 1)[0] = sum };
        });
    }

    /// The arrays against STREAM's scalar recurrence: after the verification round and
    /// then `kernel` (any number of times: it is idempotent from there), or after the round
    /// alone when `kernel` is `None`. The read kernel's sum is checked too.
    fn check_arrays(&self, kernel: Option<StreamKernel>) -> Result<(), String> {
        let round = stream::expected_after_rounds(1);
        let (ea, eb, ec) = kernel.map_or(round, |k| stream::expected_after_kernel(k, round));
        stream::check_array("a", &self.a, ea)?;
        stream::check_array("b", &self.b, eb)?;
        stream::check_array("c", &self.c, ec)?;
        if kernel == Some(StreamKernel::Read) {
            let want = stream::expected_sum(ea, self.a.len());
            let got: f64 = self.sums.iter().sum();
            if (got - want).abs() > 1e-12 * want.abs() {
                return Err(format!("sum is {got}, expected {want}"));
            }
        }
        Ok(())
    }

    fn mismatch(&self, detail: String) -> BackendError {
        BackendError::mismatch(
            &stream::bench_id("cpu", self.kernel, self.a.len() * 8),
            detail,
        )
    }
}

impl TimedWorkload for CpuStream<'_> {
    /// STREAM's own check: a = 2a, one round of copy, scale, add, triad through the same
    /// kernels, every element against the scalar recurrence; then this workload's kernel
    /// once and its result. Timing repeats that kernel, which is idempotent from there, so
    /// the same check holds after timing (recorded in the notes).
    fn verify(&mut self) -> Result<(), BackendError> {
        self.for_each_chunk(|a, _, _, _| a.iter_mut().for_each(|x| *x *= 2.0));
        for kernel in [
            StreamKernel::Copy,
            StreamKernel::Scale,
            StreamKernel::Add,
            StreamKernel::Triad,
        ] {
            self.pass(kernel, 1);
        }
        self.check_arrays(None).map_err(|d| self.mismatch(d))?;
        self.pass(self.kernel, 1);
        self.check_arrays(Some(self.kernel))
            .map_err(|d| self.mismatch(d))
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let start = Instant::now();
        self.pass(self.kernel, iters);
        Ok(start.elapsed())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let check = match self.check_arrays(Some(self.kernel)) {
            Ok(()) => "passed".to_owned(),
            Err(e) => e,
        };
        BTreeMap::from([
            ("threads".to_owned(), self.pool.threads().into()),
            ("elements_per_array".to_owned(), self.a.len().into()),
            ("check_after_timing".to_owned(), check.into()),
        ])
    }
}

/// The kernels, compiled for the widest vector ISA present (picked at run time).
mod kernels {
    macro_rules! dispatch {
        ($(fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)? $body:block)*) => {$(
            #[inline]
            pub fn $name($($arg: $ty),*) $(-> $ret)? {
                #[inline(always)]
                fn generic($($arg: $ty),*) $(-> $ret)? $body
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx512f")]
                    fn avx512($($arg: $ty),*) $(-> $ret)? { generic($($arg),*) }
                    #[target_feature(enable = "avx2")]
                    fn avx2($($arg: $ty),*) $(-> $ret)? { generic($($arg),*) }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        // SAFETY: the feature was detected at run time.
                        return unsafe { avx512($($arg),*) };
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: as above.
                        return unsafe { avx2($($arg),*) };
                    }
                }
                generic($($arg),*)
            }
        )*};
    }

    dispatch! {
        fn copy(dst: &mut [f64], src: &[f64]) {
            dst.copy_from_slice(src)
        }
        fn scale(dst: &mut [f64], src: &[f64], q: f64) {
            for (d, s) in dst.iter_mut().zip(src) { *d = q * s; }
        }
        fn add(dst: &mut [f64], x: &[f64], y: &[f64]) {
            for ((d, a), b) in dst.iter_mut().zip(x).zip(y) { *d = a + b; }
        }
        fn triad(dst: &mut [f64], x: &[f64], y: &[f64], q: f64) {
            for ((d, b), c) in dst.iter_mut().zip(x).zip(y) { *d = b + q * c; }
        }
        fn fill(dst: &mut [f64], value: f64) {
            dst.fill(value)
        }
        fn sum(src: &[f64]) -> f64 {
            // Eight independent partial sums: floating-point addition is not associative,
            // so the compiler will not split one accumulator into vector lanes itself.
            let mut acc = [0.0f64; 8];
            let mut chunks = src.chunks_exact(8);
            for chunk in &mut chunks {
                for (a, x) in acc.iter_mut().zip(chunk) { *a += x; }
            }
            acc.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_passes_streams_check_at_small_sizes() {
        let pool = StaticPool::new(3).unwrap();
        for kernel in StreamKernel::ALL {
            for elements in [1, 13, 1000, 4099] {
                let mut w = CpuStream::new(&pool, kernel, elements).unwrap();
                w.verify()
                    .unwrap_or_else(|e| panic!("{kernel:?} {elements}: {e}"));
                w.run(3).unwrap();
                assert_eq!(
                    w.notes()["check_after_timing"],
                    "passed",
                    "{kernel:?} {elements}"
                );
            }
        }
    }

    #[test]
    fn a_corrupted_array_fails_the_check() {
        let pool = StaticPool::new(2).unwrap();
        let mut w = CpuStream::new(&pool, StreamKernel::Triad, 1000).unwrap();
        w.verify().unwrap();
        w.c[777] = 1.0;
        let err = w.check_arrays(Some(StreamKernel::Triad)).unwrap_err();
        assert!(err.contains("array c") && err.contains("777"), "{err}");
    }
}
