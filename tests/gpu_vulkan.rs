//! Vulkan backend tests, on whatever Vulkan device is here: on CI and this VM that is
//! Mesa's lavapipe (a CPU that Vulkan presents as a device), which ci/test.sh installs
//! (`mesa-vulkan-drivers`, `libvulkan1`). No device skips the device tests with the reason,
//! and fails them under `STACKBENCH_REQUIRE_TOOLS=1`, so CI never counts a skip as a pass.
//! The reasoned skips (no loader, a loader with no device) run everywhere, through the real
//! `stackbench info` with the loader override and the loader's own driver variables.

use stackbench::backend::vulkan::VulkanBackend;
use stackbench::backend::{Availability, Backend, BackendKind, probe};
use stackbench::family::attention::AttentionBackend;
use stackbench::family::gemm::GemmBackend;
use stackbench::family::memory_bandwidth::BandwidthBackend;
use stackbench::family::tensor_ops::TensorOpsBackend;
use stackbench::workload::attention::{AttentionKernel, AttentionShape};
use stackbench::workload::tensor_ops::{TensorOp, TensorShape};
use stackbench::workload::transfer::TransferKind;
use stackbench::workload::{DType, GemmShape, StreamKernel, Suite};

mod gpu_support;
use gpu_support::Tally;

#[path = "tool_support/mod.rs"]
#[allow(dead_code)] // its command lookup: Vulkan is a library, not a command
mod tool_support;

/// The opened backend, or `None` having said why (a failure under
/// `STACKBENCH_REQUIRE_TOOLS=1`).
fn device() -> Option<VulkanBackend> {
    // lavapipe is a CPU behind a Vulkan driver, which the backend refuses unless asked.
    stackbench::backend::vulkan::context::allow_cpu_driver();
    match probe(BackendKind::Vulkan) {
        Availability::Unavailable { reason } => {
            tool_support::skipping(&format!(
                "no Vulkan device ({reason}); install mesa-vulkan-drivers and libvulkan1"
            ));
            None
        }
        Availability::Available { .. } => Some(
            VulkanBackend::open()
                .unwrap_or_else(|e| panic!("the probe found a Vulkan device; opening it: {e}")),
        ),
    }
}

#[test]
fn the_probe_names_the_device_driver_and_what_it_uses() {
    let Some(vk) = device() else { return };
    let info = vk.device();
    assert_eq!(info.backend, BackendKind::Vulkan);
    assert!(!info.name.is_empty());
    for key in [
        "api_version",
        "driver_name",
        "driver_info",
        "vendor_id",
        "device_id",
        "device_type",
        "subgroup_size",
        "timestamp_period_ns",
        "shader_float16",
        "cooperative_matrix",
        "f16_gemm_path",
    ] {
        assert!(info.properties.contains_key(key), "{key} missing: {info:?}");
    }
    assert!(
        info.properties["subgroup_size"]
            .as_u64()
            .is_some_and(|s| s >= 1)
    );
    if info.properties["device_type"] == "cpu" {
        assert!(info.properties["note"].as_str().unwrap().contains("CPU"));
    }
}

#[test]
fn every_vulkan_kernel_is_checked_then_timed_on_the_device() {
    let Some(vk) = device() else { return };
    let mut tally = Tally::default();
    // The STREAM set at the sweep's own size on this device (lavapipe: 64 MiB per array).
    let bytes = vk.stream_sizes(Suite::Quick)[0];
    for kernel in StreamKernel::ALL {
        tally.measure(
            format!("{} {bytes}", kernel.id()),
            || vk.stream(kernel, bytes),
            |_| Ok(()),
        );
    }
    for kind in [
        TransferKind::H2dPinned,
        TransferKind::D2hPinned,
        TransferKind::D2d,
    ] {
        tally.measure(kind.id(), || vk.transfer(kind, 8 << 20), |_| Ok(()));
    }
    for dtype in vk.gemm_dtypes() {
        for shape in [GemmShape::square(256), GemmShape::new(128, 192, 48)] {
            tally.measure(
                format!("gemm {dtype} {shape}"),
                || vk.gemm(shape, dtype),
                |w| match w.notes().get("path") {
                    Some(path) => {
                        eprintln!("gemm {dtype}: {path}");
                        Ok(())
                    }
                    None => Err("no path note".into()),
                },
            );
        }
    }
    // The tensor ops in f32, f16 and bf16 at this device's own quick shape, and at one whose
    // rows are not a whole number of workgroups and whose element count is not of grid
    // strides; three rows, so two 16-bit row sums share a word. An element count that is
    // odd in 16 bits leaves half a word of padding.
    let quick = vk.tensor_shapes(Suite::Quick)[0];
    let shapes = [quick, TensorShape::new(3, 1000), TensorShape::new(1, 999)];
    for (op, dtype, shape) in TensorOp::ALL.into_iter().flat_map(|op| {
        [DType::F32, DType::F16, DType::Bf16]
            .into_iter()
            .flat_map(move |d| shapes.map(|s| (op, d, s)))
    }) {
        // A 16-bit row of odd length is refused (the skip test checks it).
        let row_op = matches!(op, TensorOp::Sum | TensorOp::Softmax | TensorOp::LayerNorm);
        if row_op && dtype != DType::F32 && shape.cols % 2 != 0 {
            continue;
        }
        tally.measure(
            format!(
                "tensor op {} {dtype} {}x{}",
                op.id(),
                shape.rows,
                shape.cols
            ),
            || vk.tensor_op(op, dtype, shape),
            |w| match w.notes().get(stackbench::workload::accuracy::ACCURACY_NOTE) {
                Some(_) => Ok(()),
                None => Err(format!("no accuracy note: {:?}", w.notes())),
            },
        );
    }
    // Both attention paths (the fused kernel; the batched GEMMs around a softmax) at this
    // device's own quick problems (causal and not), at head dimension 128, and at a
    // sequence that is not a whole number of workgroups (16 query rows, 16-wide GEMM
    // tiles) nor of key tiles (8), causal, where a mask goes wrong first; each in f32, f16
    // and bf16 (16-bit Q, K, V, O and scores on packed words). An odd sequence, whose
    // 16-bit score rows would share words, runs fused only (the standard path's refusal
    // is tested below).
    let mut problems = vk.attention_shapes(Suite::Quick);
    problems.push(AttentionShape::new(1, 2, 64, 128, false));
    problems.push(AttentionShape::new(2, 1, 100, 64, true));
    let odd = AttentionShape::new(1, 1, 63, 64, true);
    problems.push(odd);
    let runs = problems.into_iter().flat_map(|shape| {
        AttentionKernel::ALL.into_iter().flat_map(move |kernel| {
            [DType::F32, DType::F16, DType::Bf16]
                .into_iter()
                .filter(move |&d| {
                    shape != odd || kernel == AttentionKernel::Flash || d == DType::F32
                })
                .map(move |dtype| (shape, (kernel, dtype)))
        })
    });
    for (shape, (kernel, dtype)) in runs {
        tally.measure(
            format!("attention {} {dtype} {shape}", kernel.id()),
            || vk.attention(kernel, shape, dtype),
            |w| {
                let notes = w.notes();
                let implementation = notes.get("implementation").and_then(|i| i.as_str());
                let wgsl = implementation.is_some_and(|i| i.contains("WGSL"));
                match notes.get(stackbench::workload::accuracy::ACCURACY_NOTE) {
                    Some(_) if wgsl => Ok(()),
                    _ => Err(format!(
                        "no accuracy note or not the WGSL kernel: {notes:?}"
                    )),
                }
            },
        );
    }
    tally.assert_all_measured("vulkan");
}

#[test]
fn what_vulkan_does_not_run_is_a_skip_that_says_why() {
    let Some(vk) = device() else { return };
    let reason = |r: Result<Box<dyn stackbench::backend::TimedWorkload + '_>, _>| {
        let err: stackbench::backend::BackendError = r.err().expect("a skip, not a workload");
        assert!(err.is_skip(), "{err}");
        err.to_string()
    };
    let pageable = reason(vk.transfer(TransferKind::H2dPageable, 1 << 20));
    assert!(pageable.contains("pageable"), "{pageable}");
    let odd = reason(vk.gemm(GemmShape::new(100, 64, 64), DType::F32));
    assert!(odd.contains("multiples of 64"), "{odd}");
    let bf16 = reason(vk.gemm(GemmShape::square(64), DType::Bf16));
    assert!(bf16.contains("f32 and f16"), "{bf16}");
    // A 16-bit row op on rows of odd length would share a u32 word between two rows: it
    // is refused, naming the length.
    let odd = vk
        .tensor_op(TensorOp::Softmax, DType::F16, TensorShape::new(3, 999))
        .and_then(|mut w| w.verify().map(|_| w));
    let odd = reason(odd);
    assert!(odd.contains("rows of 999 16-bit elements"), "{odd}");
    // The standard path in 16 bits over an odd sequence: its scores' rows would share u32
    // words, so the batched GEMM refuses it, naming what must be even.
    let odd = AttentionShape::new(1, 1, 63, 64, false);
    for dtype in [DType::F16, DType::Bf16] {
        let standard = vk
            .attention(AttentionKernel::Standard, odd, dtype)
            .and_then(|mut w| w.verify().map(|_| w));
        let standard = reason(standard);
        assert!(standard.contains("must be even"), "{standard}");
    }
}

#[test]
fn the_measured_peaks_are_checked_and_each_missing_one_says_why() {
    use stackbench::system::peak::PeakMetric;
    let Some(vk) = device() else { return };
    let properties = vk.device().properties.clone();
    let has = |feature: &str| properties[feature] == true;
    drop(vk);
    let (peaks, notes) = stackbench::backend::vulkan::peak::measured_peaks();
    let peak = |metric: PeakMetric, dtype: Option<DType>| {
        peaks
            .iter()
            .find(|p| p.metric == metric && p.dtype == dtype)
            .and_then(|p| p.measured)
    };
    let note = |dtype: &str| {
        notes
            .iter()
            .find(|n| n.contains(&format!("Vulkan {dtype} ")))
    };
    // Each figure is there only if its kernel's result matched the host's replay of it.
    let f32_rate = peak(PeakMetric::FlopsPerSecond, Some(DType::F32));
    assert!(f32_rate.is_some_and(|r| r > 0.0), "{peaks:?} {notes:?}");
    // A device with a feature measures its peak; one without says which feature it lacks.
    for (feature, metric, dtype, lacks) in [
        (
            "shader_float16",
            PeakMetric::FlopsPerSecond,
            DType::F16,
            "shaderFloat16",
        ),
        (
            "shader_integer_dot_product",
            PeakMetric::IntOpsPerSecond,
            DType::Int8,
            "shaderIntegerDotProduct",
        ),
    ] {
        let rate = peak(metric, Some(dtype));
        if has(feature) {
            assert!(
                rate.is_some_and(|r| r > 0.0),
                "{dtype}: {peaks:?} {notes:?}"
            );
            assert!(note(&dtype.to_string()).is_none(), "{notes:?}");
        } else {
            assert!(rate.is_none(), "{peaks:?}");
            let why = note(&dtype.to_string()).expect("a note for the missing peak");
            assert!(why.contains(lacks), "{why}");
        }
    }
    // lavapipe, CI's device, has both, so there the f16 and int8 kernels ran and were
    // checked; a device without them has only tested their notes.
    if !(has("shader_float16") && has("shader_integer_dot_product")) {
        tool_support::skipping(
            "this Vulkan device lacks shaderFloat16 or the integer dot product, so the f16 \
             and int8 peak kernels did not run (lavapipe has both)",
        );
    }
}

/// `stackbench info --no-measure`'s `backend vulkan` line under the given environment.
fn info_vulkan_line(env: &[(&str, &str)]) -> String {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_stackbench"));
    command.args(["info", "--no-measure"]);
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().expect("running stackbench info");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.trim_start().starts_with("backend vulkan "))
        .unwrap_or_else(|| panic!("no 'backend vulkan' line in:\n{text}"))
        .to_owned()
}

#[test]
fn no_loader_is_a_reasoned_skip_naming_the_library_tried() {
    let missing = "/nonexistent/stackbench/libvulkan.so.1";
    let line = info_vulkan_line(&[("STACKBENCH_VULKAN_LIBRARY", missing)]);
    assert!(line.contains("unavailable:"), "{line}");
    assert!(line.contains(missing), "{line}");
}

#[test]
fn a_loader_with_no_device_is_a_reasoned_skip() {
    // The loader itself must be here for this one: without it the first test covers it.
    stackbench::backend::vulkan::context::allow_cpu_driver();
    if !probe(BackendKind::Vulkan).is_available() {
        tool_support::skipping("no Vulkan loader and device to hide the device from");
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let icd = empty.path().join("none.json");
    let icd = icd.to_str().unwrap();
    // VK_ICD_FILENAMES (older loaders) and VK_DRIVER_FILES (1.3.207+) replace the search
    // for drivers: a file that is not there leaves the loader with none.
    let line = info_vulkan_line(&[("VK_ICD_FILENAMES", icd), ("VK_DRIVER_FILES", icd)]);
    assert!(line.contains("unavailable:"), "{line}");
    assert!(line.contains("found no device"), "{line}");
}

/// A CPU behind a Vulkan driver (lavapipe) is refused unless asked for, with the reason and
/// the variable that asks; asked for, it is taken; a value that is not yes/no is named.
#[test]
fn a_cpu_driver_is_refused_naming_the_opt_in_and_taken_when_asked() {
    let Some(backend) = device() else {
        return;
    };
    if !backend.is_cpu_driver() {
        eprintln!("the Vulkan device here is a GPU: nothing to refuse");
        return;
    }
    let refused = info_vulkan_line(&[("STACKBENCH_VULKAN_ALLOW_CPU", "0")]);
    assert!(refused.contains("unavailable:"), "{refused}");
    assert!(
        refused.contains("is a CPU behind a Vulkan driver"),
        "{refused}"
    );
    assert!(
        refused.contains("STACKBENCH_VULKAN_ALLOW_CPU=1"),
        "{refused}"
    );
    let taken = info_vulkan_line(&[("STACKBENCH_VULKAN_ALLOW_CPU", "1")]);
    assert!(!taken.contains("unavailable"), "{taken}");
    let typo = info_vulkan_line(&[("STACKBENCH_VULKAN_ALLOW_CPU", "please")]);
    assert!(typo.contains("is not a yes/no value"), "{typo}");
}

/// `STACKBENCH_VULKAN_DEVICE` picks the device by the loader's index: an index that is there
/// is taken, one past the last is refused listing the devices, and a value that is not an
/// index is named.
#[test]
fn the_device_is_chosen_by_index_and_a_wrong_index_is_named() {
    let Some(_backend) = device() else {
        return;
    };
    let allow = ("STACKBENCH_VULKAN_ALLOW_CPU", "1");
    let first = info_vulkan_line(&[allow, ("STACKBENCH_VULKAN_DEVICE", "0")]);
    assert!(!first.contains("unavailable"), "{first}");
    let past = info_vulkan_line(&[allow, ("STACKBENCH_VULKAN_DEVICE", "99")]);
    assert!(past.contains("unavailable:"), "{past}");
    assert!(
        past.contains("STACKBENCH_VULKAN_DEVICE=99, but the loader has"),
        "{past}"
    );
    assert!(past.contains("0: "), "the devices are listed: {past}");
    let typo = info_vulkan_line(&[allow, ("STACKBENCH_VULKAN_DEVICE", "gpu0")]);
    assert!(typo.contains("is not a device index"), "{typo}");
}

/// `stackbench validate --level 1 --filter vulkan` treats Vulkan as it treats CUDA: it times
/// the level's Vulkan triad, both pinned copies and one f32 GEMM, and judges the triad
/// against the probe's bandwidth peak (measured on the device before the run: Vulkan
/// reports no clocks), with a threshold that names that source. The GEMM, stackbench's own
/// shader, gets no fraction of the FMA peak. On lavapipe the backend is opted in, as a user
/// would; whether the figures pass is this machine's business, not the test's.
#[test]
fn validate_level_1_times_vulkan_and_judges_its_triad_against_the_probes_peak() {
    if device().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackbench"))
        .args([
            "validate",
            "--level",
            "1",
            "--filter",
            "vulkan",
            "--json",
            "--results",
        ])
        .arg(&results)
        .current_dir(dir.path())
        .env("STACKBENCH_VULKAN_ALLOW_CPU", "1")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_SUITE")
        .env_remove("STACKBENCH_VALIDATE_BUDGET_S")
        .output()
        .expect("running stackbench validate");
    let err = String::from_utf8_lossy(&out.stderr);
    // 0 passed, 1 a figure failed its threshold; 2 would be bad input or a broken run.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("validate --json printed no verdict ({e}): {err}"));
    let measured: Vec<&str> = verdict["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["outcome"] == "measured")
        .filter_map(|r| r["id"].as_str())
        .collect();
    for prefix in [
        "memory_bandwidth/vulkan/triad/",
        "memory_bandwidth/vulkan/h2d_pinned/",
        "memory_bandwidth/vulkan/d2h_pinned/",
        "gemm/vulkan/f32/",
    ] {
        assert_eq!(
            measured.iter().filter(|id| id.starts_with(prefix)).count(),
            1,
            "{prefix}: {measured:?}\n{err}"
        );
    }
    assert!(
        measured
            .iter()
            .all(|id| id.split('/').nth(1) == Some("vulkan")),
        "{measured:?}"
    );
    let checks = verdict["threshold_checks"]
        .as_array()
        .expect("threshold_checks");
    let judged = |prefix: &str| {
        checks
            .iter()
            .filter(|c| {
                c["benchmark"]
                    .as_str()
                    .is_some_and(|b| b.starts_with(prefix))
            })
            .collect::<Vec<_>>()
    };
    // The probe's bandwidth peak is the copy measured on the device just before; on a CPU
    // driver sharing two cores, the triad can come out above it. Then the peak is suspect,
    // no fraction of it judges the triad, and the verdict says so; else the fraction does.
    let triad_id = measured
        .iter()
        .find(|id| id.starts_with("memory_bandwidth/vulkan/triad/"))
        .unwrap();
    let triad_result = verdict["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == *triad_id)
        .unwrap();
    let notes: Vec<&str> = verdict["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let triad = judged("memory_bandwidth/vulkan/triad/");
    match triad_result["throughput"]["percent_of_peak"].as_f64() {
        Some(percent) => {
            assert_eq!(triad.len(), 1, "{verdict:#}");
            let triad = triad[0];
            assert_eq!(triad["threshold_kind"], "peak_fraction", "{triad:#}");
            assert!(
                triad["source"]
                    .as_str()
                    .is_some_and(|s| s.contains("Vulkan reports no clocks")),
                "{triad:#}"
            );
            let expected = triad["expected"].as_f64().expect("a number expected");
            let failure_at = triad["failure_at"].as_f64().expect("a failure line");
            let actual = triad["actual"].as_f64().expect("the measured figure");
            assert!(expected > 0.0 && actual > 0.0, "{triad:#}");
            // 70 % of the peak expected, failing below 50 % of it.
            let peak = actual * 100.0 / percent;
            assert!((expected / peak - 0.70).abs() < 1e-6, "{triad:#}");
            assert!((failure_at / peak - 0.50).abs() < 1e-6, "{triad:#}");
        }
        None => {
            assert!(triad.is_empty(), "{verdict:#}");
            assert!(
                notes.iter().any(|n| n.starts_with(*triad_id)
                    && n.contains("no fraction of the probe's peak judges it")
                    && n.contains("peak suspect")),
                "{notes:#?}"
            );
        }
    }
    assert!(
        judged("gemm/vulkan/")
            .iter()
            .all(|c| c["threshold_kind"] != "peak_fraction"),
        "{verdict:#}"
    );
}
