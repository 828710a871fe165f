//! Is the CUDA runtime PyTorch was built for one the installed driver can run? A driver
//! runs any runtime of its own CUDA major or older; within a major, a runtime newer than the
//! driver still runs (CUDA's minor-version compatibility) but PTX it carries for newer
//! GPUs cannot be JIT-compiled by the older driver; a newer major does not start at all.
//!
//! torch's build comes from the component workers' facts (`cuda_version`, `hip_version`,
//! written by `scripts/components/lib/torch_common.py::torch_facts` into each measured
//! benchmark's notes) or, when torch could not use the GPU at all, from the failure
//! `torch_common.device_kind` raises ("torch X (built for cuda M.m) cannot use ...").
//! The driver's supported CUDA version is the probe's `driver_cuda_version`.
//!
//! ROCm is left: torch's ROCm wheels bundle their own HIP runtime, and AMD documents the
//! kernel driver's support as a window of ROCm releases rather than a major/minor rule,
//! so a HIP build is noted with its version, not judged.

use super::check::verdict;
use super::{Status, ThresholdCheck};
use crate::sidecar::BenchmarkOutcome;
use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// (major, minor) of a CUDA version.
pub type CudaVersion = (u32, u32);

/// "12.8", "12.8.1" or the driver API's integer 12080.
pub fn parse_cuda_version(value: &Value) -> Option<CudaVersion> {
    if let Some(n) = value.as_u64() {
        return (n >= 1000).then_some(((n / 1000) as u32, ((n % 1000) / 10) as u32));
    }
    let mut parts = value.as_str()?.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// The rule in the module comment.
pub fn judge(torch: CudaVersion, driver: CudaVersion) -> Status {
    if torch.0 > driver.0 {
        Status::Failed
    } else if torch.0 == driver.0 && torch.1 > driver.1 {
        Status::Warning
    } else {
        Status::Passed
    }
}

/// What the workers said about torch's build: per torch version, its CUDA and HIP
/// versions (`None` for a CPU-only build) and one benchmark that said so.
#[derive(Default)]
struct Builds {
    cuda: BTreeMap<(String, String), String>,
    hip: BTreeSet<(String, String)>,
    cpu_only: BTreeSet<String>,
}

fn failure_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"torch (\S+) \(built for cuda ([0-9.]+)\)").expect("valid regex"))
}

fn builds(outcomes: &BTreeMap<String, BenchmarkOutcome>) -> Builds {
    let mut found = Builds::default();
    for (id, outcome) in outcomes {
        match outcome {
            BenchmarkOutcome::Measured { notes } => {
                let Some(torch) = notes.get("torch_version").and_then(|v| v.as_str()) else {
                    continue;
                };
                let text = |key: &str| notes.get(key).and_then(|v| v.as_str()).map(String::from);
                match (text("cuda_version"), text("hip_version")) {
                    (_, Some(hip)) => {
                        found.hip.insert((torch.into(), hip));
                    }
                    (Some(cuda), None) => {
                        found
                            .cuda
                            .entry((torch.into(), cuda))
                            .or_insert_with(|| id.clone());
                    }
                    (None, None) => {
                        found.cpu_only.insert(torch.into());
                    }
                }
            }
            BenchmarkOutcome::Failed { error } => {
                if let Some(c) = failure_pattern().captures(error) {
                    found
                        .cuda
                        .entry((c[1].to_owned(), c[2].to_owned()))
                        .or_insert_with(|| id.clone());
                }
            }
            BenchmarkOutcome::Skipped { .. } => {}
        }
    }
    found
}

/// The lowest CUDA version the driver reports on any device (a mixed install is failed by
/// the driver-version check; torch must run on the oldest).
fn driver_version(system: &Value) -> Option<CudaVersion> {
    system
        .get("backends")?
        .get("cuda")?
        .get("devices")?
        .as_array()?
        .iter()
        .filter_map(|d| parse_cuda_version(d.get("properties")?.get("driver_cuda_version")?))
        .min()
}

/// One check per CUDA build of torch the run used, and notes where none applies.
pub fn checks(
    system: &Value,
    outcomes: &BTreeMap<String, BenchmarkOutcome>,
    notes: &mut Vec<String>,
) -> Vec<ThresholdCheck> {
    let found = builds(outcomes);
    for torch in &found.cpu_only {
        notes.push(format!(
            "torch {torch} is a CPU-only build: its CUDA version against the driver's does not apply"
        ));
    }
    for (torch, hip) in &found.hip {
        notes.push(format!(
            "torch {torch} is built for ROCm (HIP {hip}): its runtime is not compared with the \
             driver (no major/minor rule for ROCm; left unchecked)"
        ));
    }
    let driver = driver_version(system);
    let mut out = Vec::new();
    for ((torch, cuda), id) in &found.cuda {
        let Some(torch_cuda) = parse_cuda_version(&Value::from(cuda.as_str())) else {
            notes.push(format!(
                "{id}: torch {torch} reports an unreadable CUDA version '{cuda}'"
            ));
            continue;
        };
        let Some(driver) = driver else {
            notes.push(format!(
                "torch {torch} is built for CUDA {cuda}, but the probe found no NVIDIA driver: \
                 the CUDA version check does not apply"
            ));
            continue;
        };
        let status = judge(torch_cuda, driver);
        let why = match status {
            Status::Failed => "a newer CUDA major than the driver's: cannot run",
            Status::Warning => {
                "a newer minor than the driver's: runs by minor-version compatibility, but PTX \
                 newer than the driver cannot be JIT-compiled"
            }
            Status::Passed => "the driver supports it",
        };
        out.push(verdict(
            &format!("installation/torch {torch} cuda runtime vs driver"),
            &format!(
                "CUDA {}.{} or older (the driver's), same major at most",
                driver.0, driver.1
            ),
            format!("built for CUDA {cuda} ({why}; seen in {id})"),
            status,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_parse_from_strings_and_the_driver_integer() {
        assert_eq!(parse_cuda_version(&json!("12.8")), Some((12, 8)));
        assert_eq!(parse_cuda_version(&json!("13.0.1")), Some((13, 0)));
        assert_eq!(parse_cuda_version(&json!(12080)), Some((12, 8)));
        assert_eq!(parse_cuda_version(&json!("12")), Some((12, 0)));
        assert_eq!(parse_cuda_version(&json!("twelve")), None);
        assert_eq!(parse_cuda_version(&json!(null)), None);
    }

    #[test]
    fn newer_major_fails_newer_minor_warns_else_passes() {
        assert_eq!(judge((13, 0), (12, 8)), Status::Failed);
        assert_eq!(judge((12, 8), (12, 4)), Status::Warning);
        assert_eq!(judge((12, 4), (12, 8)), Status::Passed);
        assert_eq!(judge((12, 8), (12, 8)), Status::Passed);
        assert_eq!(judge((11, 8), (12, 0)), Status::Passed);
    }

    fn measured(facts: Value) -> BenchmarkOutcome {
        BenchmarkOutcome::Measured {
            notes: serde_json::from_value(facts).unwrap(),
        }
    }

    fn system(driver: Option<Value>) -> Value {
        match driver {
            Some(v) => json!({"backends": {"cuda": {"status": "available", "devices": [
                {"name": "H100", "properties": {"driver_cuda_version": v}}]}}}),
            None => {
                json!({"backends": {"cuda": {"status": "unavailable", "reason": "no libcuda"}}})
            }
        }
    }

    #[test]
    fn each_branch_from_worker_facts_and_failures() {
        let outcomes: BTreeMap<String, BenchmarkOutcome> = [
            (
                "components/pytorch/matmul/a".to_string(),
                measured(json!({"torch_version": "2.6.0", "cuda_version": "12.6", "hip_version": null})),
            ),
            (
                "components/attention/x/b".to_string(),
                BenchmarkOutcome::Failed {
                    error: "torch 2.9.0 (built for cuda 13.0) cannot use this machine's GPU although /dev/nvidiactl exists".into(),
                },
            ),
            (
                "components/triton/y/c".to_string(),
                measured(json!({"torch_version": "2.5.0", "cuda_version": null})),
            ),
            (
                "components/vllm/z/d".to_string(),
                measured(json!({"torch_version": "2.5.0+rocm6.2", "cuda_version": null, "hip_version": "6.2.41133"})),
            ),
        ]
        .into_iter()
        .collect();
        let mut notes = Vec::new();
        let judged = checks(&system(Some(json!("12.4"))), &outcomes, &mut notes);
        let status = |torch: &str| {
            judged
                .iter()
                .find(|c| c.name.contains(torch))
                .unwrap_or_else(|| panic!("{torch}: {judged:#?}"))
        };
        assert_eq!(status("2.9.0").status, Status::Failed);
        assert!(!status("2.9.0").passed);
        let warned = status("2.6.0");
        assert_eq!((warned.status, warned.passed), (Status::Warning, true));
        assert!(
            warned
                .actual
                .as_str()
                .unwrap()
                .contains("minor-version compatibility")
        );
        assert_eq!(judged.len(), 2);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("2.5.0 is a CPU-only build"))
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("HIP 6.2.41133") && n.contains("left unchecked"))
        );

        let same = checks_for(&system(Some(json!(12060))), &outcomes);
        assert_eq!(same.iter().map(|c| c.status).max(), Some(Status::Failed));
        assert!(
            same.iter()
                .any(|c| c.status == Status::Passed && c.name.contains("2.6.0"))
        );

        let mut notes = Vec::new();
        assert!(checks(&system(None), &outcomes, &mut notes).is_empty());
        assert!(
            notes
                .iter()
                .any(|n| n.contains("CUDA 12.6") && n.contains("no NVIDIA driver"))
        );
    }

    fn checks_for(
        system: &Value,
        outcomes: &BTreeMap<String, BenchmarkOutcome>,
    ) -> Vec<ThresholdCheck> {
        checks(system, outcomes, &mut Vec::new())
    }
}
