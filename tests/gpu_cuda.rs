//! CUDA backend tests. The first two run everywhere (a machine without a driver must get a
//! reason, never a panic); the rest need an NVIDIA GPU: they are `#[ignore]`d and run by
//! `ci/gpu_tests.sh` with `--ignored`. Where the probe finds no GPU they print why and
//! skip; where it finds one they fail unless every benchmark they name was measured.

use stackbench::backend::cuda::CudaBackend;
use stackbench::backend::{Availability, Backend, BackendKind, probe};
use stackbench::family::attention::AttentionBackend;
use stackbench::family::gemm::GemmBackend;
use stackbench::family::memory_bandwidth::BandwidthBackend;
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::TensorShape;
use stackbench::workload::{DType, GemmShape, StreamKernel};

mod gpu_support;
use gpu_support::Tally;

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
    for kind in [BackendKind::Cuda, BackendKind::Rocm] {
        gpu_support::info_line_matches_probe(&text, kind);
    }
}

#[test]
fn the_device_tests_fail_on_a_skip_or_a_wrong_result_and_pass_on_measured_work() {
    // The tally's rule, on the CPU backend (always there): the GPU tests use the same code.
    let cpu = stackbench::backend::cpu::CpuBackend::open().unwrap();
    let shape = GemmShape::new(16, 16, 16);
    let mut good = Tally::default();
    good.measure("gemm f32", || cpu.gemm(shape, DType::F32), |_| Ok(()));
    good.assert_all_measured("cpu");
    let mut skipped = Tally::default();
    skipped.measure("gemm f32", || cpu.gemm(shape, DType::F32), |_| Ok(()));
    skipped.measure("gemm tf32", || cpu.gemm(shape, DType::Tf32), |_| Ok(()));
    let panic = std::panic::catch_unwind(|| skipped.assert_all_measured("cpu")).unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(
        text.contains("1 of 2") && text.contains("gemm tf32: skipped"),
        "{text}"
    );
    let mut wrong = Tally::default();
    wrong.measure(
        "gemm f32",
        || cpu.gemm(shape, DType::F32),
        |_| Err("bad notes".into()),
    );
    assert!(std::panic::catch_unwind(|| wrong.assert_all_measured("cpu")).is_err());
    assert!(std::panic::catch_unwind(|| Tally::default().assert_all_measured("none")).is_err());
}

/// The device where the probe finds one (it must open), `None` with the reason otherwise.
fn device() -> Option<CudaBackend> {
    gpu_support::device_or_skip(BackendKind::Cuda, CudaBackend::open)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gemm_is_correct_in_every_precision_and_odd_shapes() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    // INT8 (IMMA, exact check) is named on every device, FP8 e5m2 beside e4m3 where FP8 is.
    let dtypes = dev.gemm_dtypes();
    assert!(dtypes.contains(&DType::Int8) && dtypes.contains(&DType::Int8q));
    assert_eq!(
        dtypes.contains(&DType::Fp8E4m3),
        dtypes.contains(&DType::Fp8E5m2)
    );
    for dtype in dtypes {
        // Every dimension a multiple of 16, as cuBLASLt's FP8 requires, none of 128.
        for shape in [GemmShape::new(256, 256, 256), GemmShape::new(96, 160, 208)] {
            tally.measure(
                format!("gemm {dtype} {shape}"),
                || dev.gemm(shape, dtype),
                |w| {
                    let notes = w.notes();
                    if !notes.contains_key("accuracy") {
                        return Err(format!("no accuracy set after the check: {notes:?}"));
                    }
                    (notes.contains_key("throttled") || notes.contains_key("sm_clock"))
                        .then_some(())
                        .ok_or_else(|| format!("no clock notes: {notes:?}"))
                },
            );
        }
    }
    tally.assert_all_measured("cuda gemm");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn stream_kernels_and_copies_are_correct() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    // An odd element count exercises the scalar tail of the 16-byte kernels.
    tally.stream_kernels(&dev, 8 * ((1 << 20) + 1));
    tally.transfers(&dev, 8 << 20);
    tally.assert_all_measured("cuda stream and transfers");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn tensor_ops_are_correct_in_every_precision() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    tally.tensor_ops(&dev, TensorShape::new(37, 1000));
    tally.assert_all_measured("cuda tensor ops");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn attention_kernels_agree_with_the_reference_and_flash_uses_less_memory() {
    let Some(dev) = device() else { return };
    let mut tally = Tally::default();
    for dtype in dev.attention_dtypes() {
        for d in [64, 128] {
            for causal in [false, true] {
                // 200 is not a multiple of either tile size.
                let shape = AttentionShape::new(2, 3, 200, d, causal);
                let mut peaks = Vec::new();
                for kernel in AttentionKernel::ALL {
                    tally.measure(
                        shape.function_id(kernel, dtype),
                        || dev.attention(kernel, shape, dtype),
                        |w| {
                            let notes = w.notes();
                            let peak = notes.get("peak_memory_bytes").and_then(|v| v.as_u64());
                            peaks.push(peak.ok_or("no peak_memory_bytes note")?);
                            // f16 and bf16 flash run on tensor cores on NVIDIA; f32 on SIMT.
                            let implementation = notes
                                .get("implementation")
                                .and_then(|v| v.as_str())
                                .unwrap_or_default();
                            let want = match (kernel, dtype) {
                                (AttentionKernel::Standard, _) => "BLAS",
                                (AttentionKernel::Flash, DType::F32) => "SIMT",
                                (AttentionKernel::Flash, _) => "tensor cores (mma.sync m16n8k16)",
                            };
                            if !implementation.contains(want) {
                                return Err(format!(
                                    "implementation note {implementation:?} lacks {want:?}"
                                ));
                            }
                            Ok(())
                        },
                    );
                }
                if let [standard, flash] = peaks[..] {
                    assert!(
                        flash < standard,
                        "{dtype} d{d}: flash {flash} vs standard {standard}"
                    );
                }
            }
        }
    }
    tally.assert_all_measured("cuda attention");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_probe_records_the_host_link_the_library_choice_and_the_bandwidth_source() {
    let Some(dev) = device() else { return };
    let p = &dev.device().properties;
    let peaks = &p["peaks"];
    gpu_support::assert_host_link(p);
    let source = peaks["bandwidth"]["source"].as_str().unwrap_or("");
    assert!(!source.is_empty(), "{peaks}");
    for library in ["cublas", "cublasLt", "nvrtc"] {
        let choice = p["libraries"][library]["choice"].as_str().unwrap_or("");
        assert!(
            choice.contains("driver supports CUDA"),
            "{library}: {choice}"
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn throttle_notes_come_from_busy_clocks_after_warm_up() {
    let Some(dev) = device() else { return };
    let mut w = dev.stream(StreamKernel::Triad, 256 << 20).unwrap();
    w.verify().unwrap();
    for _ in 0..6 {
        w.run(20).unwrap();
    }
    let notes = w.notes();
    // NVML ships with the driver: a GPU machine without clock readings is a defect.
    assert_eq!(
        notes.get("sm_clock_busy_samples"),
        Some(&3.into()),
        "{notes:?}"
    );
    assert!(notes.contains_key("throttled") && notes.contains_key("sm_clock_reference"));
    if notes["throttled"] == true {
        eprintln!(
            "this GPU reports throttling: {:?}",
            notes.get("throttled_because")
        );
    }
}
