//! AMD GPU power, temperature, clock and utilisation from the amdgpu driver's sysfs files,
//! the same files `rocm-smi` reads (no process per reading, no Python `amdsmi` binding):
//! `/sys/class/drm/card<n>/device/` with `vendor` = 0x1002, its `gpu_busy_percent`, and
//! `hwmon/hwmon<m>/` with `power1_average` (or `power1_input` on newer parts, microwatts),
//! `temp1_input` (millidegrees, edge sensor) and `freq1_input` (sclk, Hz).
//!
//! The card read is the one the benchmark ran on: HIP device `STACKBENCH_ROCM_DEVICE`
//! (default 0) among those `ROCR_VISIBLE_DEVICES` and then `HIP_VISIBLE_DEVICES` leave
//! visible. Cards are matched by PCI bus (the card's `device/uevent`), in the PCI order the
//! ROCm runtime numbers GPUs in, or by UUID (`GPU-<unique_id>`), never by DRM card number:
//! `card0` is whichever GPU the kernel probed first, and may be an integrated one.

use super::nvml::GpuReading;
use std::path::{Path, PathBuf};

/// The default sysfs root of DRM cards.
pub const DRM_ROOT: &str = "/sys/class/drm";
const AMD_VENDOR: &str = "0x1002";
/// The variable choosing the HIP device stackbench's ROCm backend opens (the same one
/// `backend::rocm::DEVICE_ENV` is: defined here, as `system` sits below the backends).
pub const ROCM_DEVICE_ENV: &str = "STACKBENCH_ROCM_DEVICE";

/// Which AMD GPU to read: a device number among the visible ones, after each visibility
/// list in turn (`ROCR_VISIBLE_DEVICES`, then `HIP_VISIBLE_DEVICES`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmdSelector {
    pub ordinal: usize,
    pub visible: Vec<String>,
}

impl AmdSelector {
    /// From this process's environment; a device number that is not one is an error.
    pub fn from_env() -> Result<AmdSelector, String> {
        let ordinal = crate::system::device::device_ordinal_from_env(ROCM_DEVICE_ENV)?;
        let visible = ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .filter(|v| !v.trim().is_empty())
            .collect();
        Ok(AmdSelector { ordinal, visible })
    }
}

/// One AMD card under the DRM root: its directory, PCI bus and UUID.
#[derive(Clone, Debug)]
struct Card {
    path: PathBuf,
    pci: String,
    unique_id: Option<String>,
}

/// The card `selector` names among `cards` (sorted by PCI bus).
fn select<'a>(cards: &'a [Card], selector: &AmdSelector) -> Result<&'a Card, String> {
    let mut visible: Vec<&Card> = cards.iter().collect();
    for list in &selector.visible {
        visible = list
            .split(',')
            .map(str::trim)
            .map(|entry| pick(&visible, entry, list))
            .collect::<Result<_, _>>()?;
    }
    visible.get(selector.ordinal).copied().ok_or_else(|| {
        format!(
            "amdgpu: no visible AMD GPU {} ({} visible)",
            selector.ordinal,
            visible.len()
        )
    })
}

/// One entry of a visibility list: a number among `visible`, or a `GPU-<unique_id>`.
fn pick<'a>(visible: &[&'a Card], entry: &str, list: &str) -> Result<&'a Card, String> {
    if let Some(uuid) = entry
        .strip_prefix("GPU-")
        .or_else(|| entry.strip_prefix("gpu-"))
    {
        let wanted = uuid.trim_start_matches("0x").to_lowercase();
        return visible
            .iter()
            .find(|c| {
                c.unique_id
                    .as_deref()
                    .is_some_and(|id| id.trim_start_matches("0x").to_lowercase() == wanted)
            })
            .copied()
            .ok_or_else(|| format!("amdgpu: no AMD GPU with UUID {entry} (in {list})"));
    }
    let k: usize = entry
        .parse()
        .map_err(|_| format!("amdgpu: {entry:?} in {list} is neither a number nor a UUID"))?;
    visible.get(k).copied().ok_or_else(|| {
        format!(
            "amdgpu: {list} names GPU {k}, and {} are visible",
            visible.len()
        )
    })
}

/// The card's PCI bus, from its `uevent` (`PCI_SLOT_NAME=0000:41:00.0`) or the name of the
/// PCI device its `device` link points to.
fn pci_of(card: &Path) -> Option<String> {
    read_text(&card.join("device/uevent"))
        .and_then(|u| {
            u.lines()
                .find_map(|l| l.strip_prefix("PCI_SLOT_NAME=").map(str::to_owned))
        })
        .or_else(|| {
            std::fs::canonicalize(card.join("device"))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        })
        .map(|p| crate::system::nvml::normalise_pci_bus_id(&p))
}

/// The files of one AMD card.
#[derive(Clone, Debug, PartialEq)]
pub struct AmdGpu {
    pub card: PathBuf,
    hwmon: Option<PathBuf>,
}

impl AmdGpu {
    /// The AMD card under `root` (the sysfs DRM root, a parameter so tests can fake one)
    /// that `selector` names; the error says why none can be read.
    pub fn discover(root: &Path, selector: &AmdSelector) -> Result<AmdGpu, String> {
        let mut cards: Vec<Card> = std::fs::read_dir(root)
            .map_err(|e| format!("amdgpu: {} is not readable ({e})", root.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_card(p))
            .filter(|c| read_text(&c.join("device/vendor")).as_deref() == Some(AMD_VENDOR))
            .map(|path| Card {
                pci: pci_of(&path).unwrap_or_default(),
                unique_id: read_text(&path.join("device/unique_id")),
                path,
            })
            .collect();
        if cards.is_empty() {
            return Err(format!(
                "amdgpu: no AMD card (vendor {AMD_VENDOR}) under {}",
                root.display()
            ));
        }
        if cards.len() > 1 && cards.iter().any(|c| c.pci.is_empty()) {
            return Err("amdgpu: several AMD cards and not every PCI bus is readable".into());
        }
        cards.sort_by(|a, b| a.pci.cmp(&b.pci));
        let card = select(&cards, selector)?.path.clone();
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

    /// An AMD card at PCI `pci` with UUID `unique_id`, drawing `watts`.
    fn amd_card(root: &Path, name: &str, pci: &str, unique_id: &str, watts: u64) {
        let device = card(root, name, "0x1002");
        std::fs::write(
            device.join("uevent"),
            format!("DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_SLOT_NAME={pci}\n"),
        )
        .unwrap();
        std::fs::write(device.join("unique_id"), format!("{unique_id}\n")).unwrap();
        std::fs::write(
            device.join("hwmon/hwmon3/power1_input"),
            format!("{}\n", watts * 1_000_000),
        )
        .unwrap();
    }

    fn watts(root: &Path, ordinal: usize, visible: &[&str]) -> Result<Option<f64>, String> {
        let selector = AmdSelector {
            ordinal,
            visible: visible.iter().map(|v| v.to_string()).collect(),
        };
        AmdGpu::discover(root, &selector).map(|gpu| gpu.read().power_watts)
    }

    #[test]
    fn reads_the_card_the_benchmark_ran_on_not_the_first_card() {
        let root = tempfile::tempdir().unwrap();
        // card0 sits on the higher PCI bus: the ROCm runtime numbers it device 1.
        amd_card(
            root.path(),
            "card0",
            "0000:c1:00.0",
            "0x7b2a3c4d5e6f7081",
            100,
        );
        amd_card(
            root.path(),
            "card1",
            "0000:41:00.0",
            "0x1122334455667788",
            200,
        );
        let root = root.path();
        assert_eq!(watts(root, 0, &[]), Ok(Some(200.0)));
        assert_eq!(watts(root, 1, &[]), Ok(Some(100.0)));
        // HIP_VISIBLE_DEVICES=1: device 0 is the second GPU by PCI bus.
        assert_eq!(watts(root, 0, &["1"]), Ok(Some(100.0)));
        // ROCR_VISIBLE_DEVICES by UUID, then HIP_VISIBLE_DEVICES within what is left.
        assert_eq!(watts(root, 0, &["GPU-7b2a3c4d5e6f7081"]), Ok(Some(100.0)));
        assert_eq!(watts(root, 0, &["1,0", "1"]), Ok(Some(200.0)));
        // A GPU that is not there is an error, never the first card.
        assert!(
            watts(root, 2, &[])
                .unwrap_err()
                .contains("no visible AMD GPU 2")
        );
        assert!(watts(root, 0, &["GPU-ffff"]).unwrap_err().contains("UUID"));
        assert!(watts(root, 0, &["3"]).is_err());
    }

    #[test]
    fn reads_an_amd_card_in_its_units() {
        let root = tempfile::tempdir().unwrap();
        card(root.path(), "card0", "0x10de"); // an NVIDIA card first
        let device = card(root.path(), "card1", "0x1002");
        std::fs::create_dir_all(root.path().join("card1-DP-1")).unwrap(); // a connector
        let hwmon = device.join("hwmon/hwmon3");
        std::fs::write(hwmon.join("power1_input"), "301000000\n").unwrap();
        std::fs::write(hwmon.join("temp1_input"), "45000\n").unwrap();
        std::fs::write(hwmon.join("freq1_input"), "2100000000\n").unwrap();
        std::fs::write(device.join("gpu_busy_percent"), "97\n").unwrap();
        let gpu = AmdGpu::discover(root.path(), &AmdSelector::default()).unwrap();
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
        let r = AmdGpu::discover(root.path(), &AmdSelector::default())
            .unwrap()
            .read();
        assert_eq!(r, GpuReading::default());
        let empty = tempfile::tempdir().unwrap();
        let error = AmdGpu::discover(empty.path(), &AmdSelector::default()).unwrap_err();
        assert!(error.contains("no AMD card"), "{error}");
    }
}
