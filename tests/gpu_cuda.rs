//! CUDA backend tests. The first two run everywhere (a machine without a driver must get a
//! reason, never a panic); the rest need an NVIDIA GPU: they are `#[ignore]`d, run by
//! `ci/gpu_tests.sh` with `--ignored`, and print a skip message where no GPU is present.

use stackbench::backend::cuda::CudaBackend;
use stackbench::backend::{Availability, Backend, BackendKind, probe};
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::{TensorOp, TensorShape};
use stackbench::workload::transfer::TransferKind;
use stackbench::workload::{DType, GemmShape, StreamKernel};

#[test]
fn probing_cuda_never_panics_and_explains_itself() {
    match probe(BackendKind::Cuda) {
        Availability::Unavailable { reason } => assert!(reason.len() > 10, "{reason}"),
        Availability::Available { devices } => {
            assert!(!devices.is_empty());
            for d in devices {
                assert!(d.properties.contains_key("compute_capability"));
                assert!(d.properties.contains_key("libraries"));
            }
        }
    }
}

#[test]
fn stackbench_info_reports_both_gpu_backends() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args(["info", "--no-measure"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for backend in ["backend cuda", "backend rocm"] {
        let line = text.lines().find(|l| l.contains(backend)).unwrap();
        assert!(line.contains("available"), "{line}");
    }
}

/// The device, or `None` with a printed reason (the test then passes as skipped).
fn device() -> Option<CudaBackend> {
    match CudaBackend::open() {
        Ok(backend) => Some(backend),
        Err(reason) => {
            eprintln!("skipped: no usable NVIDIA GPU ({reason})");
            None
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gemm_is_correct_in_every_precision_and_odd_shapes() {
    let Some(dev) = device() else { return };
    for dtype in dev.gemm_dtypes() {
        for shape in [GemmShape::new(256, 256, 256), GemmShape::new(96, 160, 208)] {
            let mut w = match dev.gemm(shape, dtype) {
                Ok(w) => w,
                Err(e) if e.is_skip() => continue,
                Err(e) => panic!("{dtype} {shape}: {e}"),
            };
            w.verify()
                .unwrap_or_else(|e| panic!("{dtype} {shape}: {e}"));
            assert!(w.run(3).unwrap().as_nanos() > 0);
            let notes = w.notes();
            assert!(notes.contains_key("throttled") || notes.contains_key("sm_clock"));
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn stream_kernels_and_copies_are_correct() {
    let Some(dev) = device() else { return };
    for kernel in StreamKernel::ALL {
        // An odd element count exercises the scalar tail of the 16-byte kernels.
        let mut w = dev.stream(kernel, 8 * ((1 << 20) + 1)).unwrap();
        w.verify().unwrap_or_else(|e| panic!("{kernel:?}: {e}"));
        w.run(2).unwrap();
    }
    for kind in TransferKind::ALL {
        let mut w = dev.transfer(kind, 8 << 20).unwrap();
        w.verify().unwrap_or_else(|e| panic!("{kind}: {e}"));
        w.run(2).unwrap();
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn tensor_ops_are_correct_in_every_precision() {
    let Some(dev) = device() else { return };
    let shape = TensorShape::new(37, 1000);
    for dtype in dev.tensor_dtypes() {
        for op in TensorOp::ALL {
            let mut w = dev.tensor_op(op, dtype, shape).unwrap();
            w.verify()
                .unwrap_or_else(|e| panic!("{}: {e}", op.function_id(dtype)));
            w.run(2).unwrap();
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn attention_kernels_agree_with_the_reference_and_flash_uses_less_memory() {
    let Some(dev) = device() else { return };
    for dtype in [DType::F32, DType::F16, DType::Bf16] {
        for d in [64, 128] {
            for causal in [false, true] {
                // 200 is not a multiple of either tile size.
                let shape = AttentionShape::new(2, 3, 200, d, causal);
                let mut peaks = Vec::new();
                for kernel in AttentionKernel::ALL {
                    let mut w = dev.attention(kernel, shape, dtype).unwrap();
                    w.verify()
                        .unwrap_or_else(|e| panic!("{}: {e}", shape.function_id(kernel, dtype)));
                    w.run(2).unwrap();
                    peaks.push(w.notes()["peak_memory_bytes"].as_u64().unwrap());
                }
                assert!(
                    peaks[1] < peaks[0],
                    "flash {} vs standard {}",
                    peaks[1],
                    peaks[0]
                );
            }
        }
    }
}
