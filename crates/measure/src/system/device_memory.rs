//! How much memory a model sweep's device has free right now, so a cell that cannot fit is
//! skipped with its predicted size before a worker tries it (and dies, or swaps for an
//! hour). Read without loading any driver library and without creating a GPU context,
//! which would itself take hundreds of MiB of the memory being measured:
//!
//! - CPU: `MemAvailable` in `/proc/meminfo` (what the kernel can give without swapping);
//! - CUDA: `nvidia-smi --query-gpu=memory.free,memory.total` for the device the benchmark
//!   uses (`STACKBENCH_CUDA_DEVICE` among `CUDA_VISIBLE_DEVICES`, by UUID or index);
//! - ROCm: the amdgpu driver's `mem_info_vram_total` and `mem_info_vram_used` in sysfs;
//! - MPS and QNN do not exist on Linux: the reason says so.

use crate::workload::models::SweepDevice;
use std::path::Path;
use std::time::Duration;

/// Free and total memory of one device, and where the figures came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceMemory {
    pub free_bytes: u64,
    pub total_bytes: Option<u64>,
    pub source: String,
}

/// The device a sweep runs on when none is named: an NVIDIA GPU with its driver bound,
/// else an AMD one, else the CPU (sysfs under `root`; no driver library loaded).
pub fn detect_sweep_device(root: &Path) -> SweepDevice {
    let gpus = super::gpu::scan_pci(root, &mut Vec::new());
    let bound = |vendor, driver: &str| {
        gpus.iter()
            .any(|g| g.vendor_id == vendor && g.driver.as_deref() == Some(driver))
    };
    if bound(super::gpu::VENDOR_NVIDIA, "nvidia") {
        SweepDevice::Cuda
    } else if bound(super::gpu::VENDOR_AMD, "amdgpu") {
        SweepDevice::Rocm
    } else {
        SweepDevice::Cpu
    }
}

/// Why a device is absent here, for the skip of every cell on it; `None` when it may be
/// present (the worker then has the last word).
pub fn absent_reason(device: SweepDevice, root: &Path) -> Option<String> {
    match device {
        SweepDevice::Cpu => None,
        SweepDevice::Mps => (std::env::consts::OS != "macos").then(|| {
            format!(
                "MPS is not present on this machine: it is Apple silicon's GPU under macOS (this is {} on {})",
                std::env::consts::OS,
                std::env::consts::ARCH
            )
        }),
        SweepDevice::Qnn => Some(format!(
            "QNN is not present on this machine: it is the Qualcomm Hexagon NPU of Snapdragon \
             devices, through ONNX Runtime's QNN execution provider (this is {} on {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        )),
        SweepDevice::Cuda | SweepDevice::Rocm => (detect_sweep_device(root) != device)
            .then(|| format!("no {device} GPU with its driver bound on this machine")),
    }
}

/// The free memory of `device`, or why it could not be read.
pub fn free_memory(device: SweepDevice, root: &Path) -> Result<DeviceMemory, String> {
    match device {
        SweepDevice::Cpu => cpu_available(root),
        SweepDevice::Cuda => nvidia_smi_free(),
        SweepDevice::Rocm => amdgpu_free(root),
        SweepDevice::Mps | SweepDevice::Qnn => {
            Err(format!("no memory reading for {device} on this machine"))
        }
    }
}

fn cpu_available(root: &Path) -> Result<DeviceMemory, String> {
    let path = root.join("proc/meminfo");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kib| kib * 1024)
    };
    let free_bytes = field("MemAvailable:")
        .ok_or_else(|| format!("{}: no MemAvailable line", path.display()))?;
    Ok(DeviceMemory {
        free_bytes,
        total_bytes: field("MemTotal:"),
        source: "MemAvailable (/proc/meminfo)".into(),
    })
}

/// The `-i` argument naming the device the benchmark uses, as nvidia-smi numbers them.
fn nvidia_smi_device() -> String {
    // A value that is no device number is the backend's error to report; here it reads as
    // device 0, as it always did.
    let ordinal = super::device::device_ordinal_from_env(super::nvml::CUDA_DEVICE_ENV).unwrap_or(0);
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default();
    let entries: Vec<&str> = visible
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    // nvidia-smi ignores CUDA_VISIBLE_DEVICES; its entries are indices or UUIDs it takes.
    entries
        .get(ordinal)
        .map(|e| e.to_string())
        .unwrap_or_else(|| ordinal.to_string())
}

fn nvidia_smi_free() -> Result<DeviceMemory, String> {
    let device = nvidia_smi_device();
    let args = [
        "--query-gpu=memory.free,memory.total",
        "--format=csv,noheader,nounits",
        "-i",
        device.as_str(),
    ];
    let out = super::gpu::run_with_timeout("nvidia-smi", &args, Duration::from_secs(10))
        .ok_or_else(|| "nvidia-smi is missing, failed or timed out".to_string())?;
    parse_nvidia_smi(&out).ok_or_else(|| format!("nvidia-smi answered {out:?}"))
}

/// `"81000, 81559"` (MiB) into bytes.
pub fn parse_nvidia_smi(out: &str) -> Option<DeviceMemory> {
    let line = out.lines().next()?;
    let mut fields = line.split(',').map(|f| f.trim().parse::<u64>().ok());
    let free = fields.next()??;
    let total = fields.next().flatten();
    Some(DeviceMemory {
        free_bytes: free << 20,
        total_bytes: total.map(|t| t << 20),
        source: "nvidia-smi memory.free".into(),
    })
}

fn amdgpu_free(root: &Path) -> Result<DeviceMemory, String> {
    let drm = root.join("sys/class/drm");
    let entries = std::fs::read_dir(&drm).map_err(|e| format!("{}: {e}", drm.display()))?;
    let mut cards: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    cards.sort();
    let read =
        |path: &Path| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    cards
        .iter()
        .find_map(|card| {
            let device = card.join("device");
            let total = read(&device.join("mem_info_vram_total"))?;
            let used = read(&device.join("mem_info_vram_used"))?;
            Some(DeviceMemory {
                free_bytes: total.saturating_sub(used),
                total_bytes: Some(total),
                source: format!("amdgpu mem_info_vram ({})", card.display()),
            })
        })
        .ok_or_else(|| {
            format!(
                "no amdgpu card with mem_info_vram_* under {}",
                drm.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_memory_is_what_the_kernel_can_give() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/meminfo"),
            "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n",
        )
        .unwrap();
        let memory = free_memory(SweepDevice::Cpu, dir.path()).unwrap();
        assert_eq!(memory.free_bytes, 8_000_000 * 1024);
        assert_eq!(memory.total_bytes, Some(16_000_000 * 1024));
        assert!(free_memory(SweepDevice::Cpu, Path::new("/nonexistent")).is_err());
    }

    #[test]
    fn gpu_memory_reads_nvidia_smi_and_amdgpu_sysfs() {
        // What an H100 80GB answered on the device machine (2026-11-27): MiB free, total.
        let m = parse_nvidia_smi("81079, 81559\n").unwrap();
        assert_eq!(
            (m.free_bytes, m.total_bytes),
            (81079 << 20, Some(81559 << 20))
        );
        assert!(parse_nvidia_smi("[N/A], 1").is_none());
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("sys/class/drm/card1/device");
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(device.join("mem_info_vram_total"), "1000\n").unwrap();
        std::fs::write(device.join("mem_info_vram_used"), "400\n").unwrap();
        assert_eq!(
            free_memory(SweepDevice::Rocm, dir.path())
                .unwrap()
                .free_bytes,
            600
        );
    }

    #[test]
    fn absent_devices_say_why() {
        let none = Path::new("/nonexistent");
        assert_eq!(detect_sweep_device(none), SweepDevice::Cpu);
        assert!(absent_reason(SweepDevice::Cpu, none).is_none());
        let qnn = absent_reason(SweepDevice::Qnn, none).unwrap();
        assert!(
            qnn.starts_with("QNN is not present on this machine"),
            "{qnn}"
        );
        if cfg!(not(target_os = "macos")) {
            assert!(
                absent_reason(SweepDevice::Mps, none)
                    .unwrap()
                    .starts_with("MPS is not present")
            );
        }
        assert!(
            absent_reason(SweepDevice::Cuda, none)
                .unwrap()
                .contains("no cuda GPU")
        );
    }
}
