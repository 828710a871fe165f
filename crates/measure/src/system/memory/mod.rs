//! The DIMM configuration, from SMBIOS type 17 (Memory Device) records, and the memory
//! bandwidth it allows: channels × transfer rate × bus width. `stackbench validate` needs
//! this to expect a CPU's STREAM figure; `/proc/meminfo` says how much memory there is,
//! not how fast it can be.
//!
//! Sources, in order: the kernel's raw DMI entries (`/sys/firmware/dmi/entries/17-*/raw`,
//! readable by root), else `dmidecode -t 17` where it is installed. Neither exists in most
//! VMs and containers: the reading is then `unavailable` with the reason, which validate
//! repeats beside the check it cannot make.

pub mod channels;
pub mod dmidecode;
pub mod smbios;

use channels::ChannelBasis;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DMI_ENTRIES: &str = "sys/firmware/dmi/entries";

#[derive(Debug, thiserror::Error)]
pub enum MemoryConfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid SMBIOS Memory Device record: {reason}")]
    Garbled { path: PathBuf, reason: String },
    #[error("dmidecode -t 17 output, line {line}: {reason}")]
    Dmidecode { line: usize, reason: String },
}

/// One memory slot (a type-17 record), populated or not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDevice {
    pub locator: Option<String>,
    pub bank_locator: Option<String>,
    /// 0 for an empty slot; `None` where the firmware says "unknown".
    pub size_bytes: Option<u64>,
    /// `DDR4`, `DDR5`, ...
    pub memory_type: Option<String>,
    /// The rated transfer rate.
    pub speed_mts: Option<u32>,
    /// The rate the memory controller runs it at (often below the rated one).
    pub configured_mts: Option<u32>,
    pub data_width_bits: Option<u16>,
    /// Data plus ECC bits.
    pub total_width_bits: Option<u16>,
}

impl MemoryDevice {
    pub fn is_populated(&self) -> bool {
        self.size_bytes != Some(0)
    }
}

/// What the DIMMs allow, with how each figure was found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryConfig {
    /// The files or the command the records came from.
    pub source: String,
    /// Every slot the firmware lists, empty ones included.
    pub slots: u32,
    /// The populated slots only.
    pub dimms: Vec<MemoryDevice>,
    /// The slowest populated DIMM's configured rate (a controller runs its channels at one
    /// rate), else its rated one; `rate_basis` says which.
    pub transfer_rate_mts: Option<u32>,
    pub rate_basis: String,
    /// The narrowest populated DIMM's data width (ECC bits carry no data).
    pub data_width_bits: Option<u16>,
    pub channels: u32,
    pub channels_from: ChannelBasis,
    /// channels × MT/s × data width in bytes; `None` when a factor is unknown.
    pub theoretical_bytes_per_s: Option<f64>,
    /// The product written out, or why there is none.
    pub peak_formula: String,
}

/// The probe's reading of the memory configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MemoryReading {
    Read(MemoryConfig),
    Unavailable { reason: String },
}

impl Default for MemoryReading {
    /// What a probe written before this field existed holds.
    fn default() -> Self {
        MemoryReading::Unavailable {
            reason: "not recorded: the probe predates memory-configuration reading".into(),
        }
    }
}

impl MemoryReading {
    /// Reads `<root>/sys/firmware/dmi/entries`, else (on the live machine only) dmidecode.
    pub fn read(root: &Path) -> MemoryReading {
        let entries = root.join(DMI_ENTRIES);
        let from_sysfs = match read_sysfs(&entries) {
            Ok(Some(slots)) => {
                return Self::from_slots(&slots, &format!("{}/17-*/raw", entries.display()));
            }
            Ok(None) if !entries.exists() => {
                format!("{} is absent (no SMBIOS tables exposed)", entries.display())
            }
            Ok(None) => format!("{} has no type-17 records", entries.display()),
            Err(e) => {
                return MemoryReading::Unavailable {
                    reason: e.to_string(),
                };
            }
        };
        if root != Path::new("/") {
            return MemoryReading::Unavailable { reason: from_sysfs };
        }
        match run_dmidecode() {
            Ok(slots) if !slots.is_empty() => Self::from_slots(&slots, "dmidecode -t 17"),
            Ok(_) => MemoryReading::Unavailable {
                reason: format!("{from_sysfs}, and dmidecode -t 17 lists no memory devices"),
            },
            Err(why) => MemoryReading::Unavailable {
                reason: format!("{from_sysfs}, and {why}"),
            },
        }
    }

    pub fn from_slots(slots: &[MemoryDevice], source: &str) -> MemoryReading {
        let dimms: Vec<MemoryDevice> = slots.iter().filter(|d| d.is_populated()).cloned().collect();
        if dimms.is_empty() {
            return MemoryReading::Unavailable {
                reason: format!("{source}: {} slot(s), none populated", slots.len()),
            };
        }
        let configured = dimms
            .iter()
            .map(|d| d.configured_mts)
            .collect::<Option<Vec<_>>>();
        let rated = dimms
            .iter()
            .map(|d| d.speed_mts)
            .collect::<Option<Vec<_>>>();
        let (transfer_rate_mts, rate_basis) = match (configured, rated) {
            (Some(c), _) => (c.into_iter().min(), "configured speed"),
            (None, Some(r)) => (
                r.into_iter().min(),
                "rated speed (no configured speed recorded: an upper bound)",
            ),
            (None, None) => (None, "unknown: a populated DIMM reports no speed"),
        };
        let data_width_bits = dimms
            .iter()
            .map(|d| d.data_width_bits)
            .collect::<Option<Vec<_>>>()
            .and_then(|w| w.into_iter().min());
        let (channels, channels_from) = channels::infer(slots);
        let (theoretical_bytes_per_s, peak_formula) =
            theoretical_peak(channels, transfer_rate_mts, data_width_bits);
        MemoryReading::Read(MemoryConfig {
            source: source.into(),
            slots: slots.len() as u32,
            dimms,
            transfer_rate_mts,
            rate_basis: rate_basis.into(),
            data_width_bits,
            channels,
            channels_from,
            theoretical_bytes_per_s,
            peak_formula,
        })
    }

    /// One line for `stackbench info`.
    pub fn describe(&self) -> String {
        match self {
            MemoryReading::Read(c) => {
                let kinds: std::collections::BTreeSet<&str> = c
                    .dimms
                    .iter()
                    .filter_map(|d| d.memory_type.as_deref())
                    .collect();
                let basis = match c.channels_from {
                    ChannelBasis::Locators => "from slot names",
                    ChannelBasis::PopulatedDimms => "one per DIMM: slot names unrecognised",
                };
                format!(
                    "{} of {} slots populated ({}), {} channel(s) ({basis}); {}",
                    c.dimms.len(),
                    c.slots,
                    kinds.into_iter().collect::<Vec<_>>().join(", "),
                    c.channels,
                    c.peak_formula
                )
            }
            MemoryReading::Unavailable { reason } => format!("unknown: {reason}"),
        }
    }

    /// The CPU memory-bandwidth peak reports divide by ("% of peak" beside a STREAM
    /// figure); theoretical only: the probe runs no bandwidth kernel.
    pub fn peak(&self, device: &str) -> Option<super::peak::Peak> {
        let (peak, config) = self.theoretical_bytes_per_s().ok()?;
        Some(super::peak::Peak {
            backend: super::device::BackendKind::Cpu,
            device: device.into(),
            metric: super::peak::PeakMetric::BytesPerSecond,
            dtype: None,
            theoretical: Some(peak),
            measured: None,
            source: format!("DIMMs ({}): {}", config.source, config.peak_formula),
        })
    }

    /// The configuration's theoretical bandwidth, or why there is none.
    pub fn theoretical_bytes_per_s(&self) -> Result<(f64, &MemoryConfig), String> {
        match self {
            MemoryReading::Read(c) => match c.theoretical_bytes_per_s {
                Some(peak) if peak > 0.0 => Ok((peak, c)),
                _ => Err(format!("{}: {}", c.source, c.peak_formula)),
            },
            MemoryReading::Unavailable { reason } => Err(reason.clone()),
        }
    }
}

/// channels × MT/s × bus bytes, written out; `None` with the reason when a factor is unknown.
fn theoretical_peak(channels: u32, mts: Option<u32>, bits: Option<u16>) -> (Option<f64>, String) {
    match (mts, bits) {
        (Some(mts), Some(bits)) => {
            let peak = f64::from(channels) * f64::from(mts) * 1e6 * f64::from(bits) / 8.0;
            (
                Some(peak),
                format!(
                    "{channels} channel(s) x {mts} MT/s x {} bytes = {:.1} GB/s",
                    bits / 8,
                    peak / 1e9
                ),
            )
        }
        _ => (
            None,
            "no peak: the transfer rate or data width is unknown".into(),
        ),
    }
}

/// Every `17-*/raw` record under `entries`; `None` when there are none (no DMI at all).
fn read_sysfs(entries: &Path) -> Result<Option<Vec<MemoryDevice>>, MemoryConfigError> {
    let Ok(listing) = std::fs::read_dir(entries) else {
        return Ok(None);
    };
    let mut dirs: Vec<PathBuf> = listing
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("17-"))
        })
        .collect();
    if dirs.is_empty() {
        return Ok(None);
    }
    // Instance order (17-0, 17-1, ..., 17-10), so slots read in the firmware's order.
    dirs.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n[3..].parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    });
    dirs.iter()
        .map(|dir| {
            let path = dir.join("raw");
            let raw = std::fs::read(&path).map_err(|source| MemoryConfigError::Io {
                path: path.clone(),
                source,
            })?;
            smbios::parse_memory_device(&raw, &path)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn run_dmidecode() -> Result<Vec<MemoryDevice>, String> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("dmidecode").is_file()))
        .unwrap_or(false);
    if !on_path {
        return Err("dmidecode is not installed".into());
    }
    let text = super::gpu::run_with_timeout("dmidecode", &["-t", "17"], Duration::from_secs(10))
        .ok_or("dmidecode -t 17 failed or timed out (it needs root and an SMBIOS table to read)")?;
    dmidecode::parse(&text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::smbios::tests::Record;
    use super::*;

    fn write_entries(root: &Path, records: &[Vec<u8>]) {
        for (i, bytes) in records.iter().enumerate() {
            let dir = root.join(DMI_ENTRIES).join(format!("17-{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("raw"), bytes).unwrap();
        }
        // Other types sit beside them and are not read.
        let other = root.join(DMI_ENTRIES).join("16-0");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("raw"), [16u8, 4, 0, 0, 0, 0]).unwrap();
    }

    #[test]
    fn sysfs_records_give_channels_rate_and_peak() {
        let dir = tempfile::tempdir().unwrap();
        let dimm = |loc: &str, mts: u16| Record::dimm(0x28, &[loc, "BANK"], 0x1A, 16384, mts).bytes;
        let empty = |loc: &str| Record::new(0x28, &[loc, "BANK"]).bytes;
        write_entries(
            dir.path(),
            &[
                dimm("DIMM_A1", 3200),
                empty("DIMM_A2"),
                dimm("DIMM_B1", 2933),
                empty("DIMM_B2"),
            ],
        );
        let MemoryReading::Read(c) = MemoryReading::read(dir.path()) else {
            panic!("not read");
        };
        assert_eq!((c.slots, c.dimms.len()), (4, 2));
        assert_eq!((c.channels, c.channels_from), (2, ChannelBasis::Locators));
        // The slower DIMM sets the rate of both channels.
        assert_eq!(c.transfer_rate_mts, Some(2933));
        assert_eq!(c.theoretical_bytes_per_s, Some(2.0 * 2933e6 * 8.0));
        assert_eq!(
            c.peak_formula,
            "2 channel(s) x 2933 MT/s x 8 bytes = 46.9 GB/s"
        );
    }

    #[test]
    fn no_dmi_a_garbled_entry_and_unknown_speeds_are_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let reason = |r: MemoryReading| match r {
            MemoryReading::Unavailable { reason } => reason,
            other => panic!("read: {other:?}"),
        };
        assert!(reason(MemoryReading::read(dir.path())).contains("entries is absent"));
        std::fs::create_dir_all(dir.path().join(DMI_ENTRIES)).unwrap();
        assert!(reason(MemoryReading::read(dir.path())).contains("has no type-17 records"));
        let good = Record::dimm(0x28, &["DIMM_A1"], 0x1A, 8192, 2666).bytes;
        write_entries(dir.path(), &[good.clone(), good[..0x20].to_vec()]);
        let why = reason(MemoryReading::read(dir.path()));
        assert!(
            why.contains("17-1/raw") && why.contains("truncated"),
            "{why}"
        );

        let unknown = smbios::parse_memory_device(
            &Record::dimm(0x28, &["DIMM 0"], 0x07, 8192, 0).bytes,
            Path::new("x"),
        )
        .unwrap();
        let reading = MemoryReading::from_slots(&[unknown], "test");
        assert!(
            reading
                .theoretical_bytes_per_s()
                .unwrap_err()
                .contains("transfer rate")
        );
        let none = MemoryReading::from_slots(
            &[MemoryDevice {
                size_bytes: Some(0),
                ..Default::default()
            }],
            "t",
        );
        assert!(reason(none).contains("none populated"));
    }

    #[test]
    fn the_dmidecode_fixture_gives_four_ddr5_channels() {
        let text = include_str!("../../../../../tests/fixtures/dmidecode/type17-2s-ddr5.txt");
        let slots = dmidecode::parse(text).unwrap();
        let MemoryReading::Read(c) = MemoryReading::from_slots(&slots, "dmidecode -t 17") else {
            panic!("not read");
        };
        assert_eq!((c.channels, c.channels_from), (4, ChannelBasis::Locators));
        assert_eq!(
            (c.transfer_rate_mts, c.data_width_bits),
            (Some(4800), Some(64))
        );
        assert_eq!(c.theoretical_bytes_per_s, Some(4.0 * 4800e6 * 8.0));
        assert_eq!(c.rate_basis, "configured speed");
    }
}
