//! `cargo bench --bench gemm`: C = A·B per backend, precision and shape.
//! Ids `gemm/<backend>/<dtype>/<M>x<N>x<K>`; throughput 2·M·N·K elements: FLOP/s, and
//! integer operations per second (TOPS) for `int8` and `int8q` (the unit follows the id).
//! The family is `stackbench_measure::family::gemm`.

fn main() -> std::process::ExitCode {
    stackbench_measure::run(&stackbench_measure::family::gemm::Gemm)
}
