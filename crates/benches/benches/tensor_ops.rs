//! `cargo bench --bench tensor_ops`: elementwise add, mul, relu, gelu, a row sum, softmax and
//! layer norm per backend, precision and shape. Ids `tensor_ops/<backend>/<op>_<dtype>/<rows>x<cols>`;
//! throughput is the minimum bytes moved (inputs read once, outputs written once), i.e. GB/s.

use criterion::Throughput;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::Suite;
use stackbench_measure::workload::tensor_ops::{self, TensorOp, in_quick_suite};
use std::process::ExitCode;

const FAMILY: &str = stackbench_measure::workload::family::TENSOR_OPS.name;

fn main() -> ExitCode {
    let mut harness = Harness::start(FAMILY);
    let suite = harness.suite();
    let backends = harness.open_backends(FAMILY);
    for backend in &backends {
        for dtype in backend.tensor_dtypes() {
            if suite == Suite::Quick && !in_quick_suite(dtype) {
                continue;
            }
            for shape in backend.tensor_shapes(suite) {
                for op in TensorOp::ALL {
                    let id = tensor_ops::bench_id(backend.kind().id(), op, dtype, shape);
                    let throughput = Throughput::Bytes(op.bytes(shape, dtype));
                    harness.bench(&id, throughput, backend.light_sampling(suite), || {
                        backend.tensor_op(op, dtype, shape)
                    });
                }
            }
        }
    }
    harness.finish()
}
