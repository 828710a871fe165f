//! `cargo bench --bench memory_bandwidth`: STREAM kernels (copy, scale, add, triad) plus a
//! read (sum) and a write (fill) over f64 arrays, per backend and array size.
//! Ids `memory_bandwidth/<backend>/<kernel>/<bytes per array>`; bytes counted as STREAM does.
//! GPU backends add copies: `memory_bandwidth/<backend>/{h2d,d2h}_{pinned,pageable}|d2d/512MiB`.
//! The family is `stackbench_measure::family::memory_bandwidth`.

fn main() -> std::process::ExitCode {
    stackbench_measure::run(&stackbench_measure::family::memory_bandwidth::MemoryBandwidth)
}
