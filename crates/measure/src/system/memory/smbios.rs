//! SMBIOS type 17 (Memory Device) records, parsed from the bytes the kernel exposes in
//! `/sys/firmware/dmi/entries/17-*/raw`: the formatted area then the string table.
//!
//! Offsets follow the DMTF SMBIOS Reference Specification (DSP0134), "Memory Device (Type
//! 17)". Firmware writes the structure of the spec version it implements, so every field
//! past the 2.1 layout is read only when the declared length covers it. A record that is
//! truncated or garbled is an error naming its file: a configuration with a slot missing
//! would undercount channels, and a wrong peak is worse than none.

use super::{MemoryConfigError, MemoryDevice};
use std::path::Path;

pub const MEMORY_DEVICE_TYPE: u8 = 17;

/// The 2.1 layout ends after Type Detail (0x13, a WORD): the smallest valid record.
const MIN_LENGTH: usize = 0x15;

// Offsets into the formatted area (DSP0134, Type 17 table).
const TOTAL_WIDTH: usize = 0x08;
const DATA_WIDTH: usize = 0x0A;
const SIZE: usize = 0x0C;
const DEVICE_LOCATOR: usize = 0x10;
const BANK_LOCATOR: usize = 0x11;
const MEMORY_TYPE: usize = 0x12;
/// 2.3+: in MT/s (specs before 3.1 said MHz, but firmware wrote the transfer rate).
const SPEED: usize = 0x15;
/// 2.7+: in MB, used when Size is 0x7FFF.
const EXTENDED_SIZE: usize = 0x1C;
/// 2.7+: the speed the memory controller actually runs the device at.
const CONFIGURED_SPEED: usize = 0x20;
/// 3.3+: the speeds in a DWORD, used when the WORD fields hold 0xFFFF.
const EXTENDED_SPEED: usize = 0x54;
const EXTENDED_CONFIGURED_SPEED: usize = 0x58;

/// Memory Type names from 0x01 on (DSP0134, "Memory Device — Type" table).
const MEMORY_TYPES: &[&str] = &[
    "Other",
    "Unknown",
    "DRAM",
    "EDRAM",
    "VRAM",
    "SRAM",
    "RAM",
    "ROM",
    "Flash",
    "EEPROM",
    "FEPROM",
    "EPROM",
    "CDRAM",
    "3DRAM",
    "SDRAM",
    "SGRAM",
    "RDRAM",
    "DDR",
    "DDR2",
    "DDR2 FB-DIMM",
    "Reserved",
    "Reserved",
    "Reserved",
    "DDR3",
    "FBD2",
    "DDR4",
    "LPDDR",
    "LPDDR2",
    "LPDDR3",
    "LPDDR4",
    "Logical non-volatile device",
    "HBM",
    "HBM2",
    "DDR5",
    "LPDDR5",
    "HBM3",
];

/// One type-17 record (`raw` as read from `path`, which only names it in errors).
pub fn parse_memory_device(raw: &[u8], path: &Path) -> Result<MemoryDevice, MemoryConfigError> {
    let garbled = |reason: String| MemoryConfigError::Garbled {
        path: path.to_path_buf(),
        reason,
    };
    let (&kind, &declared) = match raw {
        [kind, length, ..] => (kind, length),
        _ => return Err(garbled(format!("{} bytes, no SMBIOS header", raw.len()))),
    };
    if kind != MEMORY_DEVICE_TYPE {
        return Err(garbled(format!(
            "structure type {kind}, expected {MEMORY_DEVICE_TYPE} (Memory Device)"
        )));
    }
    let length = declared as usize;
    if length < MIN_LENGTH {
        return Err(garbled(format!(
            "formatted length {length} is below the {MIN_LENGTH} bytes of the oldest Memory Device layout"
        )));
    }
    if raw.len() < length {
        return Err(garbled(format!(
            "truncated: {} bytes, the header declares {length}",
            raw.len()
        )));
    }
    let (formatted, strings) = raw.split_at(length);
    let strings = string_table(strings).map_err(garbled)?;
    let string = |offset: usize| -> Result<Option<String>, MemoryConfigError> {
        match formatted[offset] as usize {
            0 => Ok(None),
            n => strings.get(n - 1).cloned().map(Some).ok_or_else(|| {
                garbled(format!(
                    "string {n} referenced at offset {offset:#04x}, but the table holds {}",
                    strings.len()
                ))
            }),
        }
    };
    let word = |offset: usize| read_le(formatted, offset, 2).map(|v| v as u16);
    let width = |offset: usize| word(offset).filter(|w| *w != 0 && *w != 0xFFFF);
    Ok(MemoryDevice {
        locator: string(DEVICE_LOCATOR)?,
        bank_locator: string(BANK_LOCATOR)?,
        size_bytes: size_bytes(formatted),
        memory_type: memory_type(formatted[MEMORY_TYPE]),
        speed_mts: speed(formatted, SPEED, EXTENDED_SPEED),
        configured_mts: speed(formatted, CONFIGURED_SPEED, EXTENDED_CONFIGURED_SPEED),
        data_width_bits: width(DATA_WIDTH),
        total_width_bits: width(TOTAL_WIDTH),
    })
}

/// A little-endian field of `bytes` long, if the formatted area reaches that far.
fn read_le(formatted: &[u8], offset: usize, bytes: usize) -> Option<u32> {
    let field = formatted.get(offset..offset + bytes)?;
    Some(
        field
            .iter()
            .rev()
            .fold(0u32, |acc, b| (acc << 8) | u32::from(*b)),
    )
}

/// `Some(0)` for an empty slot, `None` where the size is unknown.
fn size_bytes(formatted: &[u8]) -> Option<u64> {
    const MIB: u64 = 1 << 20;
    match read_le(formatted, SIZE, 2)? {
        0xFFFF => None,
        0x7FFF => read_le(formatted, EXTENDED_SIZE, 4).map(|mb| u64::from(mb & 0x7FFF_FFFF) * MIB),
        // Bit 15 selects KiB granularity instead of MiB.
        kib if kib & 0x8000 != 0 => Some(u64::from(kib & 0x7FFF) << 10),
        mib => Some(u64::from(mib) * MIB),
    }
}

/// A speed WORD: 0 is unknown; 0xFFFF sends the reader to the DWORD (bits 30:0).
fn speed(formatted: &[u8], offset: usize, extended: usize) -> Option<u32> {
    match read_le(formatted, offset, 2)? {
        0 => None,
        0xFFFF => read_le(formatted, extended, 4)
            .map(|v| v & 0x7FFF_FFFF)
            .filter(|v| *v != 0),
        mts => Some(mts),
    }
}

fn memory_type(code: u8) -> Option<String> {
    match code {
        0 | 2 => None,
        n => Some(
            MEMORY_TYPES
                .get(n as usize - 1)
                .map(|s| (*s).to_owned())
                .unwrap_or_else(|| format!("type {n:#04x}")),
        ),
    }
}

/// The NUL-terminated strings after the formatted area, which end with an empty string
/// (two NULs in a row; a record without strings is just the two NULs).
fn string_table(bytes: &[u8]) -> Result<Vec<String>, String> {
    if bytes.starts_with(&[0, 0]) {
        return Ok(Vec::new());
    }
    let mut strings = Vec::new();
    let mut rest = bytes;
    loop {
        let Some(end) = rest.iter().position(|b| *b == 0) else {
            return Err(format!(
                "string table is not terminated ({} bytes after the last NUL)",
                rest.len()
            ));
        };
        if end == 0 {
            return Ok(strings);
        }
        strings.push(String::from_utf8_lossy(&rest[..end]).trim().to_owned());
        rest = &rest[end + 1..];
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A hand-built type-17 record of the given formatted `length` (0x1C for SMBIOS 2.6,
    /// 0x28 for 2.8, 0x5C for 3.3) followed by `strings` (locator first, bank second).
    pub struct Record {
        pub bytes: Vec<u8>,
    }

    impl Record {
        pub fn new(length: u8, strings: &[&str]) -> Record {
            let mut bytes = vec![0u8; length as usize];
            bytes[0] = MEMORY_DEVICE_TYPE;
            bytes[1] = length;
            if !strings.is_empty() {
                bytes[DEVICE_LOCATOR] = 1;
            }
            if strings.len() > 1 {
                bytes[BANK_LOCATOR] = 2;
            }
            for s in strings {
                bytes.extend_from_slice(s.as_bytes());
                bytes.push(0);
            }
            if strings.is_empty() {
                bytes.push(0);
            }
            bytes.push(0);
            Record { bytes }
        }

        pub fn word(mut self, offset: usize, value: u16) -> Record {
            self.bytes[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
            self
        }

        pub fn dword(mut self, offset: usize, value: u32) -> Record {
            self.bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
            self
        }

        pub fn byte(mut self, offset: usize, value: u8) -> Record {
            self.bytes[offset] = value;
            self
        }

        /// A populated DIMM: `mib` of `kind` (0x1A DDR4, 0x22 DDR5) rated and configured
        /// at `mts`, 64 data bits of 72.
        pub fn dimm(length: u8, strings: &[&str], kind: u8, mib: u16, mts: u16) -> Record {
            let record = Record::new(length, strings)
                .word(TOTAL_WIDTH, 72)
                .word(DATA_WIDTH, 64)
                .word(SIZE, mib)
                .byte(MEMORY_TYPE, kind)
                .word(SPEED, mts);
            // Records older than SMBIOS 2.7 have no configured speed.
            if usize::from(length) >= CONFIGURED_SPEED + 2 {
                record.word(CONFIGURED_SPEED, mts)
            } else {
                record
            }
        }
    }

    fn parse(bytes: &[u8]) -> Result<MemoryDevice, MemoryConfigError> {
        parse_memory_device(bytes, Path::new("/sys/firmware/dmi/entries/17-3/raw"))
    }

    #[test]
    fn a_ddr4_dimm_of_smbios_2_8() {
        let r = Record::dimm(
            0x28,
            &["DIMM_A1", "P0_Node0_Channel0_Dimm0"],
            0x1A,
            16384,
            3200,
        )
        .word(CONFIGURED_SPEED, 2933);
        let d = parse(&r.bytes).unwrap();
        assert_eq!(d.locator.as_deref(), Some("DIMM_A1"));
        assert_eq!(d.bank_locator.as_deref(), Some("P0_Node0_Channel0_Dimm0"));
        assert_eq!(d.size_bytes, Some(16 << 30));
        assert_eq!(d.memory_type.as_deref(), Some("DDR4"));
        assert_eq!((d.speed_mts, d.configured_mts), (Some(3200), Some(2933)));
        assert_eq!(
            (d.data_width_bits, d.total_width_bits),
            (Some(64), Some(72))
        );
    }

    #[test]
    fn a_ddr5_dimm_of_smbios_3_3_with_extended_size_and_speeds() {
        let r = Record::dimm(0x5C, &["CPU1_DIMM_B1", "NODE 1"], 0x22, 0x7FFF, 0xFFFF)
            .dword(EXTENDED_SIZE, 65536)
            .word(CONFIGURED_SPEED, 0xFFFF)
            .dword(EXTENDED_SPEED, 6400)
            .dword(EXTENDED_CONFIGURED_SPEED, 5600);
        let d = parse(&r.bytes).unwrap();
        assert_eq!(d.memory_type.as_deref(), Some("DDR5"));
        assert_eq!(d.size_bytes, Some(64 << 30));
        assert_eq!((d.speed_mts, d.configured_mts), (Some(6400), Some(5600)));
    }

    #[test]
    fn empty_slots_unknown_speeds_and_kib_sizes() {
        let empty = Record::new(0x28, &["DIMM_A2", "BANK 1"]).word(DATA_WIDTH, 0xFFFF);
        let d = parse(&empty.bytes).unwrap();
        assert_eq!(d.size_bytes, Some(0));
        assert_eq!(
            (d.speed_mts, d.configured_mts, d.data_width_bits),
            (None, None, None)
        );
        assert_eq!(d.memory_type, None);
        // 0xFFFF speed in a 2.8 record has no extended field to send the reader to.
        let unknown = Record::dimm(0x28, &["DIMM 0"], 0x07, 0xFFFF, 0xFFFF);
        let d = parse(&unknown.bytes).unwrap();
        assert_eq!(
            (d.size_bytes, d.speed_mts, d.configured_mts),
            (None, None, None)
        );
        assert_eq!(d.bank_locator, None);
        let kib = Record::dimm(0x1C, &["A"], 0x18, 0x8000 | 512, 0);
        let d = parse(&kib.bytes).unwrap();
        assert_eq!((d.size_bytes, d.speed_mts), (Some(512 << 10), None));
        // SMBIOS 2.6 has no configured-speed field.
        assert_eq!(d.configured_mts, None);
        let no_strings = Record::new(0x15, &[]);
        assert_eq!(parse(&no_strings.bytes).unwrap().locator, None);
    }

    #[test]
    fn truncated_or_garbled_records_name_the_file() {
        let good = Record::dimm(0x28, &["DIMM_A1", "BANK 0"], 0x1A, 8192, 2666).bytes;
        let message = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
        for (bytes, says) in [
            (&good[..1], "no SMBIOS header"),
            (&good[..0x20], "truncated: 32 bytes, the header declares 40"),
            (&good[..good.len() - 1], "not terminated"),
        ] {
            let m = message(bytes);
            assert!(m.contains("/sys/firmware/dmi/entries/17-3/raw"), "{m}");
            assert!(m.contains(says), "{m}");
        }
        let mut wrong_type = good.clone();
        wrong_type[0] = 16;
        assert!(message(&wrong_type).contains("structure type 16"));
        let mut short = good.clone();
        short[1] = 0x10;
        assert!(message(&short).contains("formatted length 16"));
        let mut dangling = good;
        dangling[BANK_LOCATOR] = 5;
        assert!(message(&dangling).contains("string 5 referenced at offset 0x11"));
    }
}
