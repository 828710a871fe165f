//! `cargo bench --bench tensor_ops`: elementwise add, mul, relu, gelu, a row sum, softmax and
//! layer norm per backend, precision and shape. Ids `tensor_ops/<backend>/<op>_<dtype>/<rows>x<cols>`;
//! throughput is the minimum bytes moved (inputs read once, outputs written once), i.e. GB/s.
//! The family is `stackbench_measure::family::tensor_ops`.

fn main() -> std::process::ExitCode {
    stackbench_measure::run(&stackbench_measure::family::tensor_ops::TensorOps)
}
