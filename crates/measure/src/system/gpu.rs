//! GPUs visible without any driver library: PCI functions of display or accelerator class
//! in sysfs, with their vendor and device ids; plus the text of `nvidia-smi` / `rocm-smi`
//! queries when those tools are on PATH. Driver-level detail (SM counts, clocks) comes from
//! the GPU backends, which load their libraries at run time.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const VENDOR_NVIDIA: u16 = 0x10de;
pub const VENDOR_AMD: u16 = 0x1002;
pub const VENDOR_INTEL: u16 = 0x8086;

/// One GPU-like PCI function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciGpu {
    pub pci_address: String,
    pub vendor_id: u16,
    pub device_id: u16,
    pub class: u32,
    pub vendor: String,
    /// A product name for device ids stackbench knows; `None` otherwise.
    pub product: Option<String>,
    /// The kernel driver bound to it (`nvidia`, `amdgpu`, `vfio-pci`, ...), if any.
    pub driver: Option<String>,
}

impl PciGpu {
    pub fn describe(&self) -> String {
        match &self.product {
            Some(product) => format!("{} {product}", self.vendor),
            None => format!(
                "{} {:04x}:{:04x}",
                self.vendor, self.vendor_id, self.device_id
            ),
        }
    }
}

/// PCI classes of GPUs and compute accelerators: VGA (0x0300), 3D (0x0302), other
/// display (0x0380, AMD Instinct), processing accelerator (0x1200).
fn is_gpu_class(class: u32) -> bool {
    matches!(class >> 8, 0x0300 | 0x0302 | 0x0380 | 0x1200)
}

pub fn vendor_name(vendor_id: u16) -> &'static str {
    match vendor_id {
        VENDOR_NVIDIA => "NVIDIA",
        VENDOR_AMD => "AMD",
        VENDOR_INTEL => "Intel",
        _ => "unknown vendor",
    }
}

/// Data-center and workstation GPUs of the peak table, by PCI id.
pub fn product_name(vendor_id: u16, device_id: u16) -> Option<&'static str> {
    Some(match (vendor_id, device_id) {
        (VENDOR_NVIDIA, 0x2330) => "H100 SXM5 80GB",
        (VENDOR_NVIDIA, 0x2331) => "H100 PCIe",
        (VENDOR_NVIDIA, 0x2335) => "H200 SXM 141GB",
        (VENDOR_NVIDIA, 0x20b0 | 0x20b2) => "A100 SXM4",
        (VENDOR_NVIDIA, 0x20b5) => "A100 PCIe 80GB",
        (VENDOR_NVIDIA, 0x26b9) => "L40S",
        (VENDOR_NVIDIA, 0x2684) => "GeForce RTX 4090",
        (VENDOR_AMD, 0x740c) => "Instinct MI250X/MI250",
        (VENDOR_AMD, 0x74a1) => "Instinct MI300X",
        (VENDOR_AMD, 0x74a5) => "Instinct MI325X",
        _ => return None,
    })
}

fn read_hex(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// GPU-class PCI functions under `root/sys/bus/pci/devices`.
pub fn scan_pci(root: &Path, notes: &mut Vec<String>) -> Vec<PciGpu> {
    let dir = root.join("sys/bus/pci/devices");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        notes.push(format!(
            "{} unreadable: GPUs on the PCI bus unknown",
            dir.display()
        ));
        return Vec::new();
    };
    let mut gpus: Vec<PciGpu> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let class = read_hex(&path.join("class"))?;
            if !is_gpu_class(class) {
                return None;
            }
            let vendor_id = read_hex(&path.join("vendor"))? as u16;
            let device_id = read_hex(&path.join("device"))? as u16;
            let driver = std::fs::read_link(path.join("driver"))
                .ok()
                .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()));
            Some(PciGpu {
                pci_address: entry.file_name().to_string_lossy().into_owned(),
                vendor_id,
                device_id,
                class,
                vendor: vendor_name(vendor_id).to_owned(),
                product: product_name(vendor_id, device_id).map(str::to_owned),
                driver,
            })
        })
        .collect();
    gpus.sort_by(|a, b| a.pci_address.cmp(&b.pci_address));
    gpus
}

/// The vendor tools' own descriptions, when they are installed. Each runs under a time
/// limit: a wedged driver must not hang the probe.
pub fn query_tools() -> BTreeMap<String, String> {
    let queries: [(&str, &[&str]); 2] = [
        (
            "nvidia-smi",
            &[
                "--query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max,power.limit",
                "--format=csv",
            ],
        ),
        (
            "rocm-smi",
            &[
                "--showproductname",
                "--showdriverversion",
                "--showmeminfo",
                "vram",
                "--json",
            ],
        ),
    ];
    queries
        .into_iter()
        .filter_map(|(tool, args)| {
            run_with_timeout(tool, args, Duration::from_secs(10)).map(|out| (tool.to_owned(), out))
        })
        .collect()
}

/// Runs `program args` and returns its stdout, or `None` if it is missing, fails or
/// outlives `limit` (then it is killed).
pub fn run_with_timeout(program: &str, args: &[&str], limit: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                use std::io::Read;
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return status.success().then_some(out);
            }
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_names() {
        assert!(is_gpu_class(0x030000));
        assert!(is_gpu_class(0x030200));
        assert!(is_gpu_class(0x038000));
        assert!(!is_gpu_class(0x020000));
        assert_eq!(product_name(VENDOR_NVIDIA, 0x2335), Some("H200 SXM 141GB"));
        assert_eq!(product_name(VENDOR_NVIDIA, 0x1234), None);
    }

    #[test]
    fn missing_tools_and_sysfs_are_values() {
        assert!(run_with_timeout("stackbench-no-such-tool", &[], Duration::from_secs(1)).is_none());
        let mut notes = Vec::new();
        assert!(scan_pci(Path::new("/nonexistent-root"), &mut notes).is_empty());
        assert_eq!(notes.len(), 1);
    }
}
