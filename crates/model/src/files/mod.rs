//! File plumbing every floor uses: atomic writes (the harness's sidecar, the store, the
//! reports) and the parallel map that reads many small files (the Criterion reader, the
//! store, the analyses). It depends on nothing else in the crate, so the harness and the
//! Criterion reader can use it without reaching up into `results`.

pub mod atomic;
mod parallel;

pub use parallel::parallel_map;
