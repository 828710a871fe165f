//! `cargo bench --bench memory_bandwidth`: STREAM kernels (copy, scale, add, triad) plus a
//! read (sum) and a write (fill) over f64 arrays, per backend and array size.
//! Ids `memory_bandwidth/<backend>/<kernel>/<bytes per array>`; bytes counted as STREAM does.
//! GPU backends add copies: `memory_bandwidth/<backend>/{h2d,d2h}_{pinned,pageable}|d2d/512MiB`.

use criterion::Throughput;
use stackbench_measure::harness::Harness;
use stackbench_measure::workload::ids::format_bytes_id;
use stackbench_measure::workload::{BenchId, StreamKernel, stream};
use std::process::ExitCode;

const FAMILY: &str = stackbench_measure::workload::family::MEMORY_BANDWIDTH.name;

fn main() -> ExitCode {
    let mut harness = Harness::start(FAMILY);
    let suite = harness.suite();
    let backends = harness.open_backends(FAMILY);
    for backend in &backends {
        for bytes in backend.stream_sizes(suite) {
            for kernel in StreamKernel::ALL {
                let id = stream::bench_id(backend.kind().id(), kernel, bytes);
                let throughput = Throughput::Bytes(kernel.bytes(bytes / 8, 8));
                harness.bench(&id, throughput, backend.sampling(suite), || {
                    backend.stream(kernel, bytes)
                });
            }
        }
        // Host<->device and device<->device copies: only backends with their own memory
        // list any (the CPU lists none).
        for (kind, bytes) in backend.transfers(suite) {
            let id = BenchId::new(
                FAMILY,
                backend.kind().id(),
                kind.id(),
                format_bytes_id(bytes),
            );
            harness.bench(
                &id,
                Throughput::Bytes(kind.bytes(bytes)),
                backend.sampling(suite),
                || backend.transfer(kind, bytes),
            );
        }
    }
    harness.finish()
}
