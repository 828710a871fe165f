//! Installation checks, the part of validation that is yes or no: the backends load, each
//! GPU on the PCI bus is bound to its vendor's driver, a backend's devices agree on the
//! driver version, torch's CUDA runtime suits the driver (`torch_cuda`), and the kernels
//! of every backend the suite touched ran (a benchmark that could run and did not is a
//! failed installation, not a slow one). A GPU backend with no GPU of its vendor on the
//! bus does not apply and is only noted.

use super::ThresholdCheck;
use super::check::yes_no;
use crate::results::RunRecord;
use crate::sidecar::BenchmarkOutcome;
use serde_json::Value;
use std::collections::BTreeMap;

/// PCI vendor ids and the kernel driver a working install binds.
const GPU_VENDORS: &[(&str, u64, &str)] = &[("cuda", 0x10de, "nvidia"), ("rocm", 0x1002, "amdgpu")];

/// The installation checks for `run`, and notes on what did not apply.
pub fn checks(
    run: &RunRecord,
    outcomes: &BTreeMap<String, BenchmarkOutcome>,
) -> (Vec<ThresholdCheck>, Vec<String>) {
    let mut notes = Vec::new();
    let Some(system) = run.system.as_ref() else {
        let check = yes_no(
            "installation/system probe",
            "the probe stackbench writes beside Criterion's output",
            "absent: hardware unknown".into(),
            false,
        );
        return (vec![check], notes);
    };
    let gpus: Vec<&Value> = system
        .get("gpus")
        .and_then(|g| g.as_array())
        .map(|g| g.iter().collect())
        .unwrap_or_default();
    let mut out = backend_checks(system, &gpus, &mut notes);
    out.extend(driver_bindings(&gpus));
    out.extend(driver_versions(system));
    out.extend(super::torch_cuda::checks(system, outcomes, &mut notes));
    out.extend(kernels_ran(outcomes));
    (out, notes)
}

fn has_gpu_of(gpus: &[&Value], vendor_id: u64) -> bool {
    gpus.iter()
        .any(|g| g.get("vendor_id").and_then(|v| v.as_u64()) == Some(vendor_id))
}

fn backend_checks(system: &Value, gpus: &[&Value], notes: &mut Vec<String>) -> Vec<ThresholdCheck> {
    let mut out = Vec::new();
    let Some(backends) = system.get("backends").and_then(|b| b.as_object()) else {
        return out;
    };
    for (kind, availability) in backends {
        let available = availability.get("status").and_then(|s| s.as_str()) == Some("available");
        let reason = availability
            .get("reason")
            .and_then(|r| r.as_str())
            .unwrap_or("no reason given");
        // Whether a machine without this backend lacks something: CUDA and ROCm need a GPU
        // of their vendor on the PCI bus, Vulkan a GPU of any vendor (a CPU driver such as
        // lavapipe is refused by default and is no GPU the machine should have reached).
        let applies = match GPU_VENDORS.iter().find(|(k, _, _)| k == kind) {
            Some((_, id, _)) => has_gpu_of(gpus, *id),
            None if kind == "vulkan" => !gpus.is_empty(),
            None => true,
        };
        if !available && !applies {
            notes.push(format!(
                "{kind}: not applicable, no such GPU on the PCI bus ({reason})"
            ));
            continue;
        }
        let actual = if available {
            let names: Vec<&str> = availability
                .get("devices")
                .and_then(|d| d.as_array())
                .map(|d| d.iter().filter_map(|x| x.get("name")?.as_str()).collect())
                .unwrap_or_default();
            format!("available: {}", names.join(", "))
        } else {
            format!("unavailable: {reason}")
        };
        out.push(yes_no(
            &format!("installation/{kind} loads"),
            "available",
            actual,
            available,
        ));
    }
    out
}

fn driver_bindings(gpus: &[&Value]) -> Vec<ThresholdCheck> {
    let mut out = Vec::new();
    for gpu in gpus {
        let vendor_id = gpu.get("vendor_id").and_then(|v| v.as_u64());
        let Some((_, _, driver)) = GPU_VENDORS.iter().find(|(_, id, _)| Some(*id) == vendor_id)
        else {
            continue;
        };
        let address = gpu
            .get("pci_address")
            .and_then(|a| a.as_str())
            .unwrap_or("?");
        let bound = gpu.get("driver").and_then(|d| d.as_str());
        out.push(yes_no(
            &format!("installation/{address} driver"),
            driver,
            bound.unwrap_or("no driver bound").into(),
            bound == Some(*driver),
        ));
    }
    out
}

/// Every CUDA device of one host reports the same driver version; two would mean a
/// half-upgraded install (a stale kernel module under a new user-space library).
fn driver_versions(system: &Value) -> Option<ThresholdCheck> {
    let devices = system
        .get("backends")?
        .get("cuda")?
        .get("devices")?
        .as_array()?;
    let mut versions: Vec<String> = devices
        .iter()
        .filter_map(|d| d.get("properties")?.get("driver_cuda_version"))
        .map(|v| v.to_string())
        .collect();
    if versions.is_empty() {
        return None;
    }
    versions.sort();
    versions.dedup();
    Some(yes_no(
        "installation/cuda driver versions consistent",
        "one driver version on every device",
        versions.join(", "),
        versions.len() == 1,
    ))
}

/// Per `<family>/<backend>` (per component in the component tier): the kernels ran.
fn kernels_ran(outcomes: &BTreeMap<String, BenchmarkOutcome>) -> Vec<ThresholdCheck> {
    let mut groups: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    for (id, outcome) in outcomes {
        let mut parts = id.split('/');
        let group = format!(
            "{}/{}",
            parts.next().unwrap_or(""),
            parts.next().unwrap_or("")
        );
        let entry = groups.entry(group).or_default();
        match outcome {
            BenchmarkOutcome::Measured { .. } => entry.0 += 1,
            BenchmarkOutcome::Failed { error } => entry.1.push(format!("{id}: {error}")),
            BenchmarkOutcome::Skipped { .. } => {}
        }
    }
    groups
        .into_iter()
        .filter(|(_, (measured, failed))| *measured > 0 || !failed.is_empty())
        .map(|(group, (measured, failed))| {
            let actual = match failed.first() {
                None => format!("{measured} measured"),
                Some(first) => format!("{} failed, first: {first}", failed.len()),
            };
            yes_no(
                &format!("installation/{group} runs"),
                "every selected benchmark runs and passes its correctness check",
                actual,
                failed.is_empty(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::Status;
    use serde_json::json;

    fn run_with(system: Value) -> RunRecord {
        serde_json::from_value(json!({
            "schema": "stackbench.run.v1", "run_id": "r", "created_unix_ms": 0,
            "timestamp": "t", "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
            "system": system, "benchmarks": []
        }))
        .unwrap()
    }

    fn find<'a>(checks: &'a [ThresholdCheck], name: &str) -> &'a ThresholdCheck {
        checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no {name} in {checks:#?}"))
    }

    #[test]
    fn a_gpu_without_its_driver_fails_and_an_absent_vendor_is_only_noted() {
        let run = run_with(json!({
            "gpus": [{"pci_address": "0000:01:00.0", "vendor_id": 0x10de, "driver": "vfio-pci"}],
            "backends": {
                "cpu": {"status": "available", "devices": [{"name": "EPYC"}]},
                "cuda": {"status": "unavailable", "reason": "libcuda.so.1 was not found"},
                "rocm": {"status": "unavailable", "reason": "no HIP runtime"},
                "vulkan": {"status": "unavailable", "reason": "no suitable Vulkan device"}
            }
        }));
        let (checks, notes) = checks(&run, &BTreeMap::new());
        // A GPU is on the bus and Vulkan reached none: that is a failure, as CUDA's is.
        assert_eq!(
            find(&checks, "installation/vulkan loads").status,
            Status::Failed
        );
        assert_eq!(
            find(&checks, "installation/cpu loads").status,
            Status::Passed
        );
        let cuda = find(&checks, "installation/cuda loads");
        assert_eq!(cuda.status, Status::Failed);
        assert!(cuda.actual.as_str().unwrap().contains("libcuda.so.1"));
        let bound = find(&checks, "installation/0000:01:00.0 driver");
        assert_eq!(
            (bound.status, bound.expected.as_str()),
            (Status::Failed, Some("nvidia"))
        );
        assert!(!checks.iter().any(|c| c.name.contains("rocm")));
        assert!(notes.iter().any(|n| n.starts_with("rocm: not applicable")));
    }

    /// No GPU on the bus: a Vulkan loader that found only a CPU driver (refused by default)
    /// is noted as not applicable, not failed, as an absent CUDA is.
    #[test]
    fn vulkan_without_any_gpu_on_the_bus_is_only_noted() {
        let run = run_with(json!({
            "gpus": [],
            "backends": {
                "cpu": {"status": "available", "devices": [{"name": "Xeon"}]},
                "vulkan": {"status": "unavailable", "reason": "llvmpipe is a CPU behind a Vulkan driver"}
            }
        }));
        let (checks, notes) = checks(&run, &BTreeMap::new());
        assert!(
            !checks.iter().any(|c| c.name.contains("vulkan")),
            "{checks:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("vulkan: not applicable") && n.contains("llvmpipe")),
            "{notes:?}"
        );
    }

    #[test]
    fn mixed_driver_versions_and_a_failed_kernel_fail() {
        let run = run_with(json!({
            "gpus": [],
            "backends": {"cuda": {"status": "available", "devices": [
                {"name": "H100", "properties": {"driver_cuda_version": 12080}},
                {"name": "H100", "properties": {"driver_cuda_version": 12040}}
            ]}}
        }));
        let outcomes: BTreeMap<String, BenchmarkOutcome> = [
            (
                "gemm/cuda/bf16/512x512x512".to_string(),
                BenchmarkOutcome::Failed {
                    error: "NVRTC: compile error".into(),
                },
            ),
            (
                "gemm/cuda/f32/512x512x512".to_string(),
                BenchmarkOutcome::Measured {
                    notes: BTreeMap::new(),
                },
            ),
            (
                "gemm/cpu/f32/512x512x512".to_string(),
                BenchmarkOutcome::Measured {
                    notes: BTreeMap::new(),
                },
            ),
        ]
        .into_iter()
        .collect();
        let (checks, _) = checks(&run, &outcomes);
        assert_eq!(
            find(&checks, "installation/cuda driver versions consistent").status,
            Status::Failed
        );
        let gpu = find(&checks, "installation/gemm/cuda runs");
        assert_eq!(gpu.status, Status::Failed);
        assert!(gpu.actual.as_str().unwrap().contains("NVRTC"));
        assert_eq!(
            find(&checks, "installation/gemm/cpu runs").status,
            Status::Passed
        );
    }

    #[test]
    fn a_run_without_a_probe_fails_its_one_check() {
        let mut run = run_with(json!(null));
        run.system = None;
        let (checks, _) = checks(&run, &BTreeMap::new());
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Failed);
    }
}
