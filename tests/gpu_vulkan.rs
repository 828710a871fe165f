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
    let op = reason(vk.tensor_op(TensorOp::Add, DType::F32, TensorShape::new(64, 64)));
    assert!(op.contains("not implemented on vulkan yet"), "{op}");
    let shape = AttentionShape::new(1, 1, 64, 64, false);
    let attention = reason(vk.attention(AttentionKernel::ALL[0], shape, DType::F32));
    assert!(
        attention.contains("not implemented on vulkan yet"),
        "{attention}"
    );
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
