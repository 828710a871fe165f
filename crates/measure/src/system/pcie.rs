//! The host link a GPU sits on, read from sysfs, so host↔device copies are judged against
//! the link (PCIe Gen4 x16 ≈ 31.5 GB/s per direction) and not against HBM (3.35 TB/s on an
//! H100, which would make every copy read as 1 % of peak).
//!
//! The figure is the link the slot and the device can both train to: the lower of the
//! device's and its upstream port's `max_link_speed` and `max_link_width`. The current
//! speed is recorded but not used, because GPUs drop their link to Gen1 when idle (the
//! probe runs idle). Per-direction payload rate = GT/s × lanes × encoding efficiency / 8:
//! 8b/10b for Gen1–2, 128b/130b for Gen3–5, and 242/256 FLIT for Gen6.
//!
//! Grace Hopper / Grace Blackwell superchips move host data over NVLink-C2C instead; they
//! are recognised by name and get NVIDIA's C2C figure.

use std::path::{Path, PathBuf};

/// NVLink-C2C per direction: 900 GB/s total bidirectional (NVIDIA GH200 datasheet).
pub const NVLINK_C2C_BYTES_PER_S: f64 = 450e9;

/// The host link of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct HostLink {
    /// Payload bytes per second in one direction.
    pub bytes_per_s: f64,
    /// How the figure was derived, for the reader.
    pub source: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LinkError {
    #[error("{path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{path}: cannot read a PCIe link speed from '{text}'")]
    BadSpeed { path: PathBuf, text: String },
    #[error("{path}: cannot read a PCIe link width from '{text}'")]
    BadWidth { path: PathBuf, text: String },
    #[error("'{0}' is not a PCI bus id (domain:bus:device.function)")]
    BadBusId(String),
}

/// A link's speed and width as sysfs states them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkState {
    pub gt_per_s: f64,
    pub lanes: u32,
}

impl LinkState {
    /// Payload bytes per second per direction.
    pub fn bytes_per_s(self) -> f64 {
        self.gt_per_s * 1e9 * self.lanes as f64 * encoding_efficiency(self.gt_per_s) / 8.0
    }

    /// "Gen4 x16 (16 GT/s)".
    pub fn label(self) -> String {
        format!(
            "Gen{} x{} ({} GT/s)",
            generation(self.gt_per_s),
            self.lanes,
            self.gt_per_s
        )
    }
}

fn encoding_efficiency(gt_per_s: f64) -> f64 {
    match generation(gt_per_s) {
        1 | 2 => 8.0 / 10.0,
        3..=5 => 128.0 / 130.0,
        _ => 242.0 / 256.0,
    }
}

fn generation(gt_per_s: f64) -> u32 {
    match gt_per_s {
        s if s <= 2.5 => 1,
        s if s <= 5.0 => 2,
        s if s <= 8.0 => 3,
        s if s <= 16.0 => 4,
        s if s <= 32.0 => 5,
        _ => 6,
    }
}

/// `16.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s PCIe` → GT/s. `Unknown` and garbage → `None`.
pub fn parse_speed(text: &str) -> Option<f64> {
    let number = text.split_whitespace().next()?;
    let unit_ok = text.contains("GT/s");
    number
        .parse::<f64>()
        .ok()
        .filter(|v| unit_ok && v.is_finite() && *v > 0.0)
}

/// `16` → 16; `0`, `x16` and garbage → `None`.
pub fn parse_width(text: &str) -> Option<u32> {
    text.trim().parse::<u32>().ok().filter(|w| *w > 0)
}

fn read(dir: &Path, file: &str) -> Result<String, LinkError> {
    let path = dir.join(file);
    std::fs::read_to_string(&path)
        .map(|s| s.trim().to_owned())
        .map_err(|e| LinkError::Unreadable {
            path,
            reason: e.to_string(),
        })
}

/// The link state one PCI function's directory states in `speed_file` / `width_file`.
pub fn read_state(dir: &Path, prefix: &str) -> Result<LinkState, LinkError> {
    let (speed_file, width_file) = (
        format!("{prefix}_link_speed"),
        format!("{prefix}_link_width"),
    );
    let speed = read(dir, &speed_file)?;
    let width = read(dir, &width_file)?;
    Ok(LinkState {
        gt_per_s: parse_speed(&speed).ok_or_else(|| LinkError::BadSpeed {
            path: dir.join(&speed_file),
            text: speed,
        })?,
        lanes: parse_width(&width).ok_or_else(|| LinkError::BadWidth {
            path: dir.join(&width_file),
            text: width,
        })?,
    })
}

/// `00000000:17:00.0` (CUDA) or `0000:17:00.0` → sysfs's `0000:17:00.0`.
pub fn sysfs_bus_id(bus_id: &str) -> Result<String, LinkError> {
    let bad = || LinkError::BadBusId(bus_id.to_owned());
    let (domain, rest) = bus_id.trim().split_once(':').ok_or_else(bad)?;
    let domain = u32::from_str_radix(domain, 16).map_err(|_| bad())?;
    let (bus, devfn) = rest.split_once(':').ok_or_else(bad)?;
    let (dev, func) = devfn.split_once('.').ok_or_else(bad)?;
    let bus = u8::from_str_radix(bus, 16).map_err(|_| bad())?;
    let dev = u8::from_str_radix(dev, 16).map_err(|_| bad())?;
    let func = u8::from_str_radix(func, 16).map_err(|_| bad())?;
    Ok(format!("{domain:04x}:{bus:02x}:{dev:02x}.{func:x}"))
}

/// The host link of the device at `bus_id`, with `/sys/bus/pci/devices` under `sysfs`.
pub fn pcie_link(sysfs: &Path, bus_id: &str) -> Result<HostLink, LinkError> {
    let link = sysfs.join("bus/pci/devices").join(sysfs_bus_id(bus_id)?);
    let dir = std::fs::canonicalize(&link).map_err(|e| LinkError::Unreadable {
        path: link.clone(),
        reason: e.to_string(),
    })?;
    let device = read_state(&dir, "max")?;
    // The upstream port is the parent directory; a root-complex device has none readable.
    let upstream = dir.parent().and_then(|p| read_state(p, "max").ok());
    let current = read_state(&dir, "current").ok();
    let usable = match upstream {
        Some(up) => LinkState {
            gt_per_s: device.gt_per_s.min(up.gt_per_s),
            lanes: device.lanes.min(up.lanes),
        },
        None => device,
    };
    let mut source = format!(
        "PCIe {} per direction (sysfs max_link_*: device",
        usable.label()
    );
    source.push_str(&format!(" {}", device.label()));
    match upstream {
        Some(up) => source.push_str(&format!(", upstream port {}", up.label())),
        None => source.push_str(", upstream port unreadable"),
    }
    if let Some(now) = current {
        source.push_str(&format!("; current {} while idle", now.label()));
    }
    source.push(')');
    Ok(HostLink {
        bytes_per_s: usable.bytes_per_s(),
        source,
    })
}

/// The host link for a GPU: NVLink-C2C for Grace superchips (by name), else the PCIe link
/// from sysfs.
pub fn host_link(name: &str, bus_id: &str) -> Result<HostLink, LinkError> {
    let lower = name.to_lowercase();
    if lower.contains("gh200") || lower.contains("gb200") {
        return Ok(HostLink {
            bytes_per_s: NVLINK_C2C_BYTES_PER_S,
            source:
                "NVLink-C2C, 450 GB/s per direction (NVIDIA datasheet; Grace superchip by name)"
                    .into(),
        });
    }
    pcie_link(Path::new("/sys"), bus_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_and_widths_as_kernels_write_them() {
        assert_eq!(parse_speed("16.0 GT/s PCIe"), Some(16.0));
        assert_eq!(parse_speed("8 GT/s"), Some(8.0));
        assert_eq!(parse_speed("2.5 GT/s PCIe"), Some(2.5));
        assert_eq!(parse_speed("Unknown"), None);
        assert_eq!(parse_speed("16.0"), None);
        assert_eq!(parse_width("16\n"), Some(16));
        assert_eq!(parse_width("0"), None);
        assert_eq!(parse_width("x16"), None);
    }

    #[test]
    fn payload_rates_follow_each_generations_encoding() {
        let gen4 = LinkState {
            gt_per_s: 16.0,
            lanes: 16,
        };
        assert!((gen4.bytes_per_s() - 31.508e9).abs() < 0.01e9);
        let gen5 = LinkState {
            gt_per_s: 32.0,
            lanes: 16,
        };
        assert!((gen5.bytes_per_s() - 63.015e9).abs() < 0.01e9);
        let gen2 = LinkState {
            gt_per_s: 5.0,
            lanes: 8,
        };
        assert_eq!(gen2.bytes_per_s(), 4e9);
        assert_eq!(gen5.label(), "Gen5 x16 (32 GT/s)");
    }

    #[test]
    fn bus_ids_from_cuda_and_rocm_map_to_sysfs_names() {
        assert_eq!(sysfs_bus_id("00000000:17:00.0").unwrap(), "0000:17:00.0");
        assert_eq!(sysfs_bus_id("0000:C1:00.0").unwrap(), "0000:c1:00.0");
        assert!(sysfs_bus_id("17:00.0").is_err());
        assert!(sysfs_bus_id("0000:zz:00.0").is_err());
    }

    /// A sysfs tree like the kernel's: the device directory inside its upstream port's,
    /// and `bus/pci/devices/<id>` a symlink to it.
    fn fixture(device: [&str; 4], port: Option<[&str; 2]>) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let port_dir = root.path().join("devices/pci0000:00/0000:00:01.0");
        let dev_dir = port_dir.join("0000:17:00.0");
        std::fs::create_dir_all(&dev_dir).unwrap();
        for (file, text) in [
            "max_link_speed",
            "max_link_width",
            "current_link_speed",
            "current_link_width",
        ]
        .iter()
        .zip(device)
        {
            std::fs::write(dev_dir.join(file), format!("{text}\n")).unwrap();
        }
        if let Some([speed, width]) = port {
            std::fs::write(port_dir.join("max_link_speed"), speed).unwrap();
            std::fs::write(port_dir.join("max_link_width"), width).unwrap();
        }
        let devices = root.path().join("bus/pci/devices");
        std::fs::create_dir_all(&devices).unwrap();
        std::os::unix::fs::symlink(&dev_dir, devices.join("0000:17:00.0")).unwrap();
        root
    }

    #[test]
    fn an_idle_gen5_card_in_a_gen4_slot_is_judged_against_gen4_x16() {
        let root = fixture(
            ["32.0 GT/s PCIe", "16", "2.5 GT/s PCIe", "16"],
            Some(["16.0 GT/s PCIe", "16"]),
        );
        let link = pcie_link(root.path(), "00000000:17:00.0").unwrap();
        assert!((link.bytes_per_s - 31.508e9).abs() < 0.01e9, "{link:?}");
        assert!(link.source.contains("Gen4 x16") && link.source.contains("current Gen1 x16"));
        assert!(link.source.contains("device Gen5 x16"), "{}", link.source);
    }

    #[test]
    fn without_a_readable_port_the_device_maximum_is_used_and_said() {
        let root = fixture(["16.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "8"], None);
        let link = pcie_link(root.path(), "0000:17:00.0").unwrap();
        assert!((link.bytes_per_s - 15.754e9).abs() < 0.01e9);
        assert!(link.source.contains("upstream port unreadable"));
    }

    #[test]
    fn bad_files_name_the_file_and_the_text() {
        let root = fixture(["Unknown", "16", "Unknown", "16"], None);
        let err = pcie_link(root.path(), "0000:17:00.0").unwrap_err();
        assert!(
            matches!(&err, LinkError::BadSpeed { text, .. } if text == "Unknown"),
            "{err}"
        );
        assert!(err.to_string().contains("max_link_speed"));
        let missing = pcie_link(root.path(), "0000:18:00.0").unwrap_err();
        assert!(matches!(missing, LinkError::Unreadable { .. }));
    }

    #[test]
    fn grace_superchips_use_nvlink_c2c() {
        let link = host_link("NVIDIA GH200 480GB", "bogus").unwrap();
        assert_eq!(link.bytes_per_s, NVLINK_C2C_BYTES_PER_S);
    }
}
