//! `cargo bench --bench attention`: forward scaled dot-product attention, the standard kernel
//! (scores materialised) against the fused online-softmax (flash-style) one, causal and not,
//! over sequence lengths. Ids `attention/<backend>/<kernel>[_causal]_<dtype>/b<B>_h<H>_s<S>_d<D>`;
//! throughput 4·B·S²·H·D FLOPs (half when causal). Each record notes the kernel's memory.

use criterion::Throughput;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::attention::{self, AttentionKernel};
use std::process::ExitCode;

const FAMILY: &str = stackbench_measure::workload::family::ATTENTION.name;

fn main() -> ExitCode {
    let mut harness = Harness::start(FAMILY);
    let suite = harness.suite();
    let backends = harness.open_backends(FAMILY);
    for backend in &backends {
        for dtype in backend.attention_dtypes() {
            for shape in backend.attention_shapes(suite) {
                for kernel in AttentionKernel::ALL {
                    let id = attention::bench_id(backend.kind().id(), kernel, shape, dtype);
                    let throughput = Throughput::Elements(shape.flops());
                    harness.bench(&id, throughput, backend.light_sampling(suite), || {
                        backend.attention(kernel, shape, dtype)
                    });
                }
            }
        }
    }
    harness.finish()
}
