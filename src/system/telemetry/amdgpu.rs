//! AMD GPU power, temperature, clock and utilisation from the amdgpu driver's sysfs files,
//! the same files `rocm-smi` reads (no process per reading, no Python `amdsmi` binding):
//! `/sys/class/drm/card<n>/device/` with `vendor` = 0x1002, its `gpu_busy_percent`, and
//! `hwmon/hwmon<m>/` with `power1_average` (or `power1_input` on newer parts, microwatts),
//! `temp1_input` (millidegrees, edge sensor) and `freq1_input` (sclk, Hz). The first AMD
//! card is read: the device every single-GPU benchmark runs on.

use super::nvml::GpuReading;
use std::path::{Path, PathBuf};

/// The default sysfs root of DRM cards.
pub const DRM_ROOT: &str = "/sys/class/drm";
const AMD_VENDOR: &str = "0x1002";

/// The files of one AMD card.
#[derive(Clone, Debug, PartialEq)]
pub struct AmdGpu {
    pub card: PathBuf,
    hwmon: Option<PathBuf>,
}

impl AmdGpu {
    /// The first AMD card under `root`; the error says why none can be read.
    pub fn discover(root: &Path) -> Result<AmdGpu, String> {
        let mut cards: Vec<PathBuf> = std::fs::read_dir(root)
            .map_err(|e| format!("amdgpu: {} is not readable ({e})", root.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_card(p))
            .collect();
        cards.sort();
        let card = cards
            .into_iter()
            .find(|c| read_text(&c.join("device/vendor")).as_deref() == Some(AMD_VENDOR))
            .ok_or_else(|| {
                format!(
                    "amdgpu: no AMD card (vendor {AMD_VENDOR}) under {}",
                    root.display()
                )
            })?;
        let hwmon = std::fs::read_dir(card.join("device/hwmon"))
            .ok()
            .and_then(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).min());
        Ok(AmdGpu { card, hwmon })
    }

    /// What the card reports now; a file that is absent or unreadable is `None`.
    pub fn read(&self) -> GpuReading {
        let hwmon = |name: &str| {
            self.hwmon
                .as_ref()
                .and_then(|h| read_text(&h.join(name)))
                .and_then(|t| t.parse::<f64>().ok())
        };
        GpuReading {
            power_watts: hwmon("power1_average")
                .or_else(|| hwmon("power1_input"))
                .map(|uw| uw / 1e6),
            temperature_c: hwmon("temp1_input").map(|mc| mc / 1000.0),
            clock_mhz: hwmon("freq1_input").map(|hz| hz / 1e6),
            utilization_percent: read_text(&self.card.join("device/gpu_busy_percent"))
                .and_then(|t| t.parse().ok()),
        }
    }
}

fn is_card(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("card"))
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
}

fn read_text(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(root: &Path, name: &str, vendor: &str) -> PathBuf {
        let device = root.join(name).join("device");
        std::fs::create_dir_all(device.join("hwmon/hwmon3")).unwrap();
        std::fs::write(device.join("vendor"), format!("{vendor}\n")).unwrap();
        device
    }

    #[test]
    fn reads_the_first_amd_card_in_its_units() {
        let root = tempfile::tempdir().unwrap();
        card(root.path(), "card0", "0x10de"); // an NVIDIA card first
        let device = card(root.path(), "card1", "0x1002");
        std::fs::create_dir_all(root.path().join("card1-DP-1")).unwrap(); // a connector
        let hwmon = device.join("hwmon/hwmon3");
        std::fs::write(hwmon.join("power1_input"), "301000000\n").unwrap();
        std::fs::write(hwmon.join("temp1_input"), "45000\n").unwrap();
        std::fs::write(hwmon.join("freq1_input"), "2100000000\n").unwrap();
        std::fs::write(device.join("gpu_busy_percent"), "97\n").unwrap();
        let gpu = AmdGpu::discover(root.path()).unwrap();
        assert!(gpu.card.ends_with("card1"));
        let r = gpu.read();
        assert_eq!(r.power_watts, Some(301.0));
        assert_eq!(r.temperature_c, Some(45.0));
        assert_eq!(r.clock_mhz, Some(2100.0));
        assert_eq!(r.utilization_percent, Some(97.0));
        // power1_average wins where both exist (the older parts' averaged reading).
        std::fs::write(hwmon.join("power1_average"), "250000000\n").unwrap();
        assert_eq!(gpu.read().power_watts, Some(250.0));
    }

    #[test]
    fn missing_files_are_none_and_no_card_says_why() {
        let root = tempfile::tempdir().unwrap();
        card(root.path(), "card0", "0x1002");
        let r = AmdGpu::discover(root.path()).unwrap().read();
        assert_eq!(r, GpuReading::default());
        let empty = tempfile::tempdir().unwrap();
        let error = AmdGpu::discover(empty.path()).unwrap_err();
        assert!(error.contains("no AMD card"), "{error}");
    }
}
