//! ROCm backend tests: the absent-ROCm path runs everywhere (CI has no AMD GPU); the device
//! tests are `#[ignore]`d. Where the probe finds no AMD GPU they print why and skip; where
//! it finds one they fail unless every benchmark they name was measured.

use stackbench::backend::rocm::{RocmBackend, presence};
use stackbench::backend::{Availability, Backend, BackendKind, probe};
use stackbench::family::attention::AttentionBackend;
use stackbench::family::gemm::GemmBackend;
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::TensorShape;
use stackbench::workload::{DType, GemmShape};

mod gpu_support;
use gpu_support::Tally;

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

fn device() -> Option<RocmBackend> {
    gpu_support::device_or_skip(BackendKind::Rocm, RocmBackend::open)
}

#[test]
#[ignore = "needs an AMD GPU"]
fn rocblas_gemm_and_copies_are_correct() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    assert!(dev.gemm_dtypes().contains(&DType::Int8));
    for dtype in dev.gemm_dtypes() {
        let shape = GemmShape::new(96, 160, 208);
        if dtype == DType::Int8q {
            // rocBLAS writes int32 only: a recorded skip that names hipBLASLt.
            let err = dev
                .gemm(shape, dtype)
                .err()
                .expect("int8q is a skip on rocBLAS");
            assert!(
                err.is_skip() && err.to_string().contains("hipBLASLt"),
                "{err}"
            );
            continue;
        }
        tally.measure(
            format!("gemm {dtype} {shape}"),
            || dev.gemm(shape, dtype),
            |w| {
                w.notes()
                    .contains_key("accuracy")
                    .then_some(())
                    .ok_or_else(|| "no accuracy set after the check".to_string())
            },
        );
    }
    tally.transfers(&dev, 8 << 20);
    tally.assert_all_measured("rocm gemm and transfers");
}

#[test]
#[ignore = "needs an AMD GPU"]
fn hiprtc_kernels_are_correct() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    tally.stream_kernels(&dev, 8 * ((1 << 20) + 1));
    tally.tensor_ops(&dev, TensorShape::new(37, 1000));
    for dtype in dev.attention_dtypes() {
        for causal in [false, true] {
            let shape = AttentionShape::new(2, 3, 200, 128, causal);
            for kernel in AttentionKernel::ALL {
                let id = shape.function_id(kernel, dtype);
                tally.measure(id, || dev.attention(kernel, shape, dtype), |_| Ok(()));
            }
        }
    }
    tally.assert_all_measured("rocm hipRTC kernels");
}

#[test]
#[ignore = "needs an AMD GPU"]
fn the_probe_records_the_host_link_and_a_checked_bandwidth_peak() {
    let Some(dev) = device() else { return };
    let p = &dev.device().properties;
    let peaks = &p["peaks"];
    gpu_support::assert_host_link(p);
    // MI300X's clocks give 2.66 TB/s; the table's 5.3 must win and both be recorded.
    if dev.device().name.to_lowercase().contains("mi300x") {
        assert_eq!(
            peaks["bandwidth"]["bytes_per_s"].as_f64(),
            Some(5.3e12),
            "{peaks}"
        );
        assert!(peaks["bandwidth"]["clock_bytes_per_s"].as_f64().is_some());
    }
}
