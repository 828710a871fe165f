//! `cargo bench --bench gemm`: C = A·B per backend, precision and shape.
//! Ids `gemm/<backend>/<dtype>/<M>x<N>x<K>`; throughput 2·M·N·K elements: FLOP/s, and
//! integer operations per second (TOPS) for `int8` and `int8q` (the unit follows the id).

use criterion::Throughput;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::Suite;
use stackbench_measure::workload::gemm::{self, in_quick_suite};
use std::process::ExitCode;

const FAMILY: &str = stackbench_measure::workload::family::GEMM.name;

fn main() -> ExitCode {
    let mut harness = Harness::start(FAMILY);
    let suite = harness.suite();
    let backends = harness.open_backends(FAMILY);
    for backend in &backends {
        for dtype in backend.gemm_dtypes() {
            for shape in backend.gemm_shapes(suite) {
                if suite == Suite::Quick && !in_quick_suite(dtype, shape) {
                    continue;
                }
                let id = gemm::bench_id(backend.kind().id(), dtype, shape);
                let throughput = Throughput::Elements(shape.flops());
                harness.bench(&id, throughput, backend.sampling(suite), || {
                    backend.gemm(shape, dtype)
                });
            }
        }
        // FP6/FP4 rows: skipped with the device's reason (no backend runs them yet).
        for format in gemm::SUB_BYTE_FORMATS {
            let reason = stackbench_measure::backend::sub_byte_gemm_skip(backend.device(), format);
            for shape in backend.gemm_shapes(suite) {
                if suite == Suite::Quick && shape.m != shape.n {
                    continue;
                }
                let id = gemm::sub_byte_bench_id(backend.kind().id(), format, shape);
                harness.skip(&id, reason.clone());
            }
        }
    }
    harness.finish()
}
