//! ROCm backend tests: the absent-ROCm path runs everywhere (CI has no AMD GPU); the device
//! tests are `#[ignore]`d and print a skip message where no AMD GPU is present.

use stackbench::backend::rocm::{RocmBackend, presence};
use stackbench::backend::{Availability, Backend, BackendKind, probe};
use stackbench::workload::GemmShape;
use stackbench::workload::StreamKernel;
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::{TensorOp, TensorShape};
use stackbench::workload::transfer::TransferKind;

#[test]
fn probing_rocm_never_panics_and_explains_itself() {
    match probe(BackendKind::Rocm) {
        Availability::Unavailable { reason } => {
            assert!(reason.len() > 10, "{reason}");
            if !presence().hip {
                assert!(reason.contains("libamdhip64"), "{reason}");
            }
        }
        Availability::Available { devices } => {
            assert!(
                devices
                    .iter()
                    .all(|d| d.properties.contains_key("gfx_arch"))
            );
        }
    }
}

#[test]
fn opening_without_rocm_returns_the_reason() {
    if presence().hip {
        eprintln!("skipped: ROCm is installed here; the absent path cannot be exercised");
        return;
    }
    let err = RocmBackend::open().err().unwrap();
    assert!(err.contains("ROCm is not installed"), "{err}");
}

#[test]
#[ignore = "needs an AMD GPU"]
fn rocblas_gemm_and_copies_are_correct() {
    let dev = match RocmBackend::open() {
        Ok(dev) => dev,
        Err(reason) => {
            eprintln!("skipped: no usable AMD GPU ({reason})");
            return;
        }
    };
    for dtype in dev.gemm_dtypes() {
        let mut w = dev.gemm(GemmShape::new(96, 160, 208), dtype).unwrap();
        w.verify().unwrap_or_else(|e| panic!("{dtype}: {e}"));
        w.run(2).unwrap();
    }
    for kind in TransferKind::ALL {
        let mut w = dev.transfer(kind, 8 << 20).unwrap();
        w.verify().unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
}

#[test]
#[ignore = "needs an AMD GPU"]
fn hiprtc_kernels_are_correct() {
    let dev = match RocmBackend::open() {
        Ok(dev) => dev,
        Err(reason) => {
            eprintln!("skipped: no usable AMD GPU ({reason})");
            return;
        }
    };
    let skip_or_panic = |what: String, e: stackbench::backend::BackendError| {
        if e.is_skip() {
            eprintln!("skipped {what}: {e}");
        } else {
            panic!("{what}: {e}");
        }
    };
    for kernel in StreamKernel::ALL {
        let mut w = dev.stream(kernel, 8 * ((1 << 20) + 1)).unwrap();
        if let Err(e) = w.verify() {
            return skip_or_panic(format!("{kernel:?}"), e);
        }
    }
    for dtype in dev.tensor_dtypes() {
        for op in TensorOp::ALL {
            let mut w = dev
                .tensor_op(op, dtype, TensorShape::new(37, 1000))
                .unwrap();
            if let Err(e) = w.verify() {
                return skip_or_panic(op.function_id(dtype), e);
            }
        }
    }
    for dtype in dev.attention_dtypes() {
        for causal in [false, true] {
            let shape = AttentionShape::new(2, 3, 200, 128, causal);
            for kernel in AttentionKernel::ALL {
                let mut w = dev.attention(kernel, shape, dtype).unwrap();
                if let Err(e) = w.verify() {
                    return skip_or_panic(shape.function_id(kernel, dtype), e);
                }
            }
        }
    }
}
