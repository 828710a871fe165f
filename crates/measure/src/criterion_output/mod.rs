//! The only code that knows Criterion's on-disk format. That format is private to Criterion
//! and changes between versions (0.5 to 0.8 are fixture-tested), so this reader is tolerant:
//! missing fields become `None`, unknown fields are ignored, and one unreadable benchmark is
//! skipped with its path and reason instead of failing the whole tree. A benchmark whose
//! `benchmark.json` names it but whose samples cannot be used (unreadable, empty, zero,
//! negative, not finite) is returned by id with the reason, so the run records it as
//! failed: it is never dropped silently, nor counted as measured.
//!
//! Names always come from `benchmark.json`: Criterion sanitises directory names, cuts each
//! component to 64 bytes and resolves collisions with `_2`, so a directory name is never a
//! reliable id.

mod model;
mod reader;
pub mod writer;

pub use model::{
    ConfidenceInterval, Estimate, Estimates, RawBenchmarkJson, SampleFile, SamplingMode,
    Throughput, parse_throughput,
};
pub use reader::{
    BaselineRead, CriterionBenchmark, CriterionError, CriterionTree, SkippedBenchmark,
    list_baselines, read_baseline,
};
