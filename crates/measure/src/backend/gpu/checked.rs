//! What the checked GPU workloads do around their kernels, said once for every vendor: a
//! GEMM keeps its inputs on the host only until its one check before timing, a workload's
//! output is read back after one run, a copy is compared with its source, and every timed
//! record's notes end with what the check found and how the timer measured.

use super::{GpuDevice, GpuTimer, Pod, RawBuffer, download};
use crate::backend::{BackendError, keep_accuracy, with_accuracy};
use crate::workload::gemm::{check_positions, check_product};
use crate::workload::ids::format_bytes_id;
use crate::workload::transfer::{self, TransferKind};
use crate::workload::{Accuracy, BenchId, DType, GemmShape, family};
use std::collections::BTreeMap;

/// Output positions a GPU GEMM's check draws at random, besides every edge row and column.
pub(crate) const GEMM_RANDOM_CHECKS: usize = 512;

/// A GEMM's inputs as its kernel reads them, kept on the host for the one check before
/// timing, and what that check found.
pub(crate) struct GemmCheck<T> {
    a: Vec<T>,
    b: Vec<T>,
    accuracy: Option<Accuracy>,
}

impl<T> GemmCheck<T> {
    pub(crate) fn new(a: Vec<T>, b: Vec<T>) -> Self {
        GemmCheck {
            a,
            b,
            accuracy: None,
        }
    }

    /// Compares the output through `check` of the inputs, then frees the inputs: they are
    /// not needed again, and large shapes hold gigabytes of them. A mismatch fails `id`.
    pub(crate) fn check(
        &mut self,
        id: &BenchId,
        check: impl FnOnce(&[T], &[T]) -> Result<Accuracy, String>,
    ) -> Result<(), BackendError> {
        keep_accuracy(&mut self.accuracy, id, check(&self.a, &self.b))?;
        self.a = Vec::new();
        self.b = Vec::new();
        Ok(())
    }

    /// What the check found, once it ran.
    pub(crate) fn accuracy(&self) -> Option<&Accuracy> {
        self.accuracy.as_ref()
    }
}

/// Checks a float GEMM's C (row-major M×N, as f64) against the f64 product of its inputs,
/// at every edge row and column and at [`GEMM_RANDOM_CHECKS`] positions drawn from `seed`.
pub(crate) fn check_float_gemm(
    shape: GemmShape,
    dtype: DType,
    [a, b, c]: [&[f64]; 3],
    seed: u64,
) -> Result<Accuracy, String> {
    let positions = check_positions(shape, GEMM_RANDOM_CHECKS, seed);
    check_product(shape, dtype, a, b, |i, j| c[i * shape.n + j], &positions)
}

/// Whether a copy's destination `got` holds `source`'s bytes at every position the
/// transfer family checks; a difference fails the `memory_bandwidth` benchmark of
/// `backend` (its id, e.g. "cuda") and `kind`.
pub(crate) fn check_copy(
    backend: &str,
    kind: TransferKind,
    source: &[u8],
    got: &[u8],
) -> Result<(), BackendError> {
    match transfer::check_positions(source.len())
        .into_iter()
        .find(|&i| got.get(i) != source.get(i))
    {
        None => Ok(()),
        Some(i) => {
            let id = BenchId::new(
                family::MEMORY_BANDWIDTH.name,
                backend,
                kind.id(),
                format_bytes_id(source.len()),
            );
            Err(BackendError::mismatch(
                &id,
                format!("byte {i} differs after the copy"),
            ))
        }
    }
}

/// Runs a workload's kernels once through `launch`, waits for them, and reads back the
/// first `len` values of its output `out` (buffers may be padded past the output).
pub(crate) fn read_back<T: Pod>(
    dev: &dyn GpuDevice,
    out: &RawBuffer,
    len: usize,
    launch: impl FnOnce() -> Result<(), BackendError>,
) -> Result<Vec<T>, BackendError> {
    launch()?;
    dev.synchronize()?;
    let mut values = download::<T>(dev, out)?;
    values.truncate(len);
    Ok(values)
}

/// Ends a timed GPU record's notes: the check's accuracy, once it ran, then the timer's
/// method (events, cache flush, clocks).
pub(crate) fn close_notes(
    notes: &mut BTreeMap<String, serde_json::Value>,
    accuracy: Option<&Accuracy>,
    timer: &dyn GpuTimer,
) {
    *notes = with_accuracy(std::mem::take(notes), accuracy);
    timer.notes(notes);
}
