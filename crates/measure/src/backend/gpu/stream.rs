//! STREAM kernels (copy, scale, add, triad, read, write) over f64 arrays in device memory,
//! checked as STREAM checks them and timed with events after a cache flush.

use super::kernels::{BLOCK, grid_stride};
use super::{Arg, GpuDevice, GpuTimer, RawBuffer, download, zeroed};
use crate::backend::{BackendError, TimedWorkload};
use crate::workload::Suite;
use crate::workload::stream::{self, FILL, INIT_A, INIT_B, INIT_C, SCALAR, StreamKernel};
use std::collections::BTreeMap;
use std::time::Duration;

/// Bytes per array of the sweep: 4× L2 at least (STREAM's rule), 1 GiB in the quick suite
/// (past every L2 and Infinity Cache; BabelStream's 2^25 f64 is 256 MiB), and from 1 MiB
/// up in the full one. Sizes that do not fit three times are dropped.
pub fn sizes(suite: Suite, l2_bytes: usize, memory_bytes: usize) -> Vec<usize> {
    let big = (4 * l2_bytes).next_power_of_two().max(1 << 30);
    let candidates: Vec<usize> = if suite.is_full() {
        std::iter::successors(Some(1usize << 20), |&s| Some(s * 4))
            .take_while(|&s| s < big)
            .chain([big, 2 * big])
            .collect()
    } else {
        vec![big]
    };
    candidates
        .into_iter()
        .filter(|&s| memory_bytes == 0 || 3 * s < memory_bytes / 10 * 8)
        .collect()
}

pub struct GpuStreamKernel<'a> {
    dev: &'a dyn GpuDevice,
    kernel: StreamKernel,
    n: usize,
    a: RawBuffer,
    b: RawBuffer,
    c: RawBuffer,
    partial: RawBuffer,
    timer: Box<dyn GpuTimer + 'a>,
}

impl<'a> GpuStreamKernel<'a> {
    pub fn new(
        dev: &'a dyn GpuDevice,
        kernel: StreamKernel,
        n: usize,
    ) -> Result<Self, BackendError> {
        dev.fits(3 * 8 * n as u64, "stream")?;
        let partial_len = grid_stride(n as u64 / 2, dev.units()).blocks.0 as usize;
        let w = GpuStreamKernel {
            dev,
            kernel,
            n,
            a: zeroed::<f64>(dev, n)?,
            b: zeroed::<f64>(dev, n)?,
            c: zeroed::<f64>(dev, n)?,
            partial: zeroed::<f64>(dev, partial_len)?,
            timer: dev.timer(true)?,
        };
        for (buffer, value) in [(&w.a, INIT_A), (&w.b, INIT_B), (&w.c, INIT_C)] {
            w.fill(buffer, value)?;
        }
        Ok(w)
    }

    fn fill(&self, buffer: &RawBuffer, value: f64) -> Result<(), BackendError> {
        let n = self.n as u64;
        self.dev.launch(
            "stream_fill",
            grid_stride(n, self.dev.units()),
            &[Arg::Ptr(buffer.ptr), Arg::F64(value), Arg::U64(n)],
        )
    }

    fn pass(&self, kernel: StreamKernel) -> Result<(), BackendError> {
        let n = self.n as u64;
        let (a, b, c) = (
            Arg::Ptr(self.a.ptr),
            Arg::Ptr(self.b.ptr),
            Arg::Ptr(self.c.ptr),
        );
        let (s, len) = (Arg::F64(SCALAR), Arg::U64(n));
        // The kernels move two f64 per thread step (16-byte accesses).
        let grid = grid_stride(n / 2, self.dev.units());
        let dev = self.dev;
        match kernel {
            StreamKernel::Copy => dev.launch("stream_copy", grid, &[a, c, len]),
            StreamKernel::Scale => dev.launch("stream_scale", grid, &[b, c, s, len]),
            StreamKernel::Add => dev.launch("stream_add", grid, &[a, b, c, len]),
            StreamKernel::Triad => dev.launch("stream_triad", grid, &[a, b, c, s, len]),
            StreamKernel::Read => {
                dev.launch("stream_read", grid, &[a, Arg::Ptr(self.partial.ptr), len])
            }
            StreamKernel::Write => dev.launch("stream_write", grid, &[a, Arg::F64(FILL), len]),
        }
    }

    /// The arrays (and the read kernel's sum) against STREAM's scalar recurrence.
    fn check(&self, kernel: Option<StreamKernel>) -> Result<(), BackendError> {
        let id = stream::bench_id(self.dev.kind().id(), self.kernel, self.n * 8);
        let mismatch = |detail: String| BackendError::mismatch(&id, detail);
        let round = stream::expected_after_rounds(1);
        let (ea, eb, ec) = kernel.map_or(round, |k| stream::expected_after_kernel(k, round));
        for (name, buffer, want) in [("a", &self.a, ea), ("b", &self.b, eb), ("c", &self.c, ec)] {
            let values = download::<f64>(self.dev, buffer)?;
            stream::check_array(name, &values[..self.n], want).map_err(mismatch)?;
        }
        if kernel == Some(StreamKernel::Read) {
            let got: f64 = download::<f64>(self.dev, &self.partial)?.iter().sum();
            let want = stream::expected_sum(ea, self.n);
            if (got - want).abs() > 1e-12 * want.abs() {
                return Err(mismatch(format!("sum is {got}, expected {want}")));
            }
        }
        Ok(())
    }
}

impl TimedWorkload for GpuStreamKernel<'_> {
    /// STREAM's check, as on the CPU: a = 2a, one round of the four kernels, every element
    /// against the recurrence; then this benchmark's kernel (idempotent from there).
    fn verify(&mut self) -> Result<(), BackendError> {
        let n = self.n as u64;
        self.dev.launch(
            "stream_scale_in_place",
            grid_stride(n, self.dev.units()),
            &[Arg::Ptr(self.a.ptr), Arg::F64(2.0), Arg::U64(n)],
        )?;
        for kernel in [
            StreamKernel::Copy,
            StreamKernel::Scale,
            StreamKernel::Add,
            StreamKernel::Triad,
        ] {
            self.pass(kernel)?;
        }
        self.dev.synchronize()?;
        self.check(None)?;
        self.pass(self.kernel)?;
        self.dev.synchronize()?;
        self.check(Some(self.kernel))
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.pass(self.kernel))
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("elements_per_array".into(), self.n.into());
        notes.insert("threads_per_block".into(), BLOCK.into());
        notes.insert(
            "check_after_timing".into(),
            match self.check(Some(self.kernel)) {
                Ok(()) => "passed".into(),
                Err(e) => e.to_string().into(),
            },
        );
        self.timer.notes(&mut notes);
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_pass_four_times_l2_and_fit_in_memory() {
        let quick = sizes(Suite::Quick, 50 << 20, 80 << 30);
        assert_eq!(quick, vec![1 << 30]);
        let full = sizes(Suite::Full, 50 << 20, 80 << 30);
        assert_eq!(full[0], 1 << 20);
        assert!(full.contains(&(2 << 30)));
        // A small card drops what does not fit three times.
        let small = sizes(Suite::Full, 4 << 20, 4 << 30);
        assert!(small.iter().all(|&s| 3 * s < (4usize << 30) / 10 * 8));
    }
}
