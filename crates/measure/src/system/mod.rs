//! Hardware and environment capture: CPU, memory, GPUs visible without any driver library,
//! the software versions and git revision, and the peak figures reports divide by. These
//! are the facts below the backends; the probe that puts them together with what each
//! backend finds is one floor above the backends (`crate::probe`).
//!
//! Every reader here takes a root path so it can run on recorded fixtures (x86, ARM,
//! containers without sysfs); a file that cannot be read becomes a missing field and a
//! note, never a panic.

pub mod cargo;
pub mod clocks;
pub mod cpu;
pub mod device;
pub mod device_memory;
pub mod gpu;
pub mod gpu_peaks;
pub mod interrupt;
pub mod memory;
pub mod nvml;
pub mod pcie;
pub mod peak;
pub mod software;
pub mod telemetry;

/// `cpu=<model> x<threads>;gpu=<names...>`: what decides whether two runs are comparable.
pub fn fingerprint(cpu: &cpu::CpuInfo, gpus: &[gpu::PciGpu]) -> String {
    let mut gpu_names: Vec<String> = gpus.iter().map(|g| g.describe()).collect();
    gpu_names.sort();
    format!(
        "cpu={} x{};gpu={}",
        cpu.model.as_deref().unwrap_or("unknown"),
        cpu.logical_cpus.unwrap_or(0),
        if gpu_names.is_empty() {
            "none".to_owned()
        } else {
            gpu_names.join(",")
        }
    )
}

/// A yes/no environment variable `variable` set to `value`: `1`, `true`, `yes`, `on` (any
/// case) are yes; unset, empty, `0`, `false`, `no`, `off` are no; anything else is an error
/// naming the variable, so a typo never silently means no.
pub fn yes_no(variable: &str, value: Option<&str>) -> Result<bool, String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(false);
    };
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("{variable}={value} is not a yes/no value (1 or 0)")),
    }
}
