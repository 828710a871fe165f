//! The run store under `benchmark_results/`: versioned schema, atomic writes, import/export.

pub mod atomic;
