//! What a device is, as both the machine's description and the backends name it: the kinds
//! of backend, one device's identity and facts, and whether a backend can run here. The
//! backends (one floor up) re-export these as `backend::{BackendKind, DeviceInfo,
//! Availability}`; they sit here so that the peak tables (`peak`) can name a device without
//! importing the backends that open it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The kinds of device stackbench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Cpu,
    Cuda,
    Rocm,
    Vulkan,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Cpu,
        BackendKind::Cuda,
        BackendKind::Rocm,
        BackendKind::Vulkan,
    ];

    /// The name used in benchmark ids (`gemm/<backend>/...`).
    pub fn id(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Rocm => "rocm",
            BackendKind::Vulkan => "vulkan",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// What a backend's device is, for the probe and the run record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub backend: BackendKind,
    pub name: String,
    /// Free-form facts (compute capability, SM count, library paths, ...), sorted by key.
    pub properties: BTreeMap<String, serde_json::Value>,
}

/// Whether a backend can run here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Availability {
    Available { devices: Vec<DeviceInfo> },
    Unavailable { reason: String },
}

impl Availability {
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available { .. })
    }
}

/// The device number the variable `env` holds (`value`, as read from the environment): 0
/// when unset; a value that is not a number is an error naming the variable. The CUDA and
/// ROCm backends, NVML's device lookup, the amdgpu telemetry and nvidia-smi's device memory
/// reading all choose their device by it.
pub fn device_ordinal(env: &str, value: Option<&str>) -> Result<usize, String> {
    match value {
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map_err(|_| format!("{env}={v} is not a device number")),
        None => Ok(0),
    }
}

/// [`device_ordinal`] of this process's `env`.
pub fn device_ordinal_from_env(env: &str) -> Result<usize, String> {
    device_ordinal(env, std::env::var(env).ok().as_deref())
}
