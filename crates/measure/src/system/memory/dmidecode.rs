//! `dmidecode -t 17` output, for machines whose kernel does not expose the raw DMI entries
//! (older kernels, `CONFIG_DMI_SYSFS` off) but where dmidecode can read the table itself.
//!
//! dmidecode has printed these fields under different names over the years ("Configured
//! Clock Speed", "Configured Memory Clock Speed", "Configured Memory Speed"; MHz before
//! 3.1, MT/s since): each spelling is accepted, and the number is taken as MT/s either way,
//! as SMBIOS 3.1 clarified the field always held.

use super::{MemoryConfigError, MemoryDevice};

/// Every Memory Device block in `text` (other DMI types are ignored).
pub fn parse(text: &str) -> Result<Vec<MemoryDevice>, MemoryConfigError> {
    let mut devices = Vec::new();
    let mut current: Option<(usize, MemoryDevice)> = None;
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("Handle ") {
            devices.extend(current.take().map(|(_, d)| d));
            if line.contains("DMI type 17,") {
                current = Some((index + 1, MemoryDevice::default()));
            }
            continue;
        }
        let Some((_, device)) = current.as_mut() else {
            continue;
        };
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        apply(device, key.trim(), value.trim()).map_err(|reason| MemoryConfigError::Dmidecode {
            line: index + 1,
            reason,
        })?;
    }
    devices.extend(current.map(|(_, d)| d));
    Ok(devices)
}

fn apply(device: &mut MemoryDevice, key: &str, value: &str) -> Result<(), String> {
    let known = |v: &str| !matches!(v, "Unknown" | "Not Specified" | "" | "None");
    match key {
        "Locator" => device.locator = known(value).then(|| value.to_owned()),
        "Bank Locator" => device.bank_locator = known(value).then(|| value.to_owned()),
        "Type" => device.memory_type = known(value).then(|| value.to_owned()),
        "Size" => device.size_bytes = size(value)?,
        "Data Width" => device.data_width_bits = bits(value)?,
        "Total Width" => device.total_width_bits = bits(value)?,
        "Speed" => device.speed_mts = speed(value)?,
        "Configured Memory Speed" | "Configured Clock Speed" | "Configured Memory Clock Speed" => {
            device.configured_mts = speed(value)?
        }
        _ => {}
    }
    Ok(())
}

fn number_and_unit(value: &str) -> Result<(u64, &str), String> {
    let (number, unit) = value.split_once(' ').unwrap_or((value, ""));
    let number = number
        .parse()
        .map_err(|_| format!("'{value}' is not a number and a unit"))?;
    Ok((number, unit.trim()))
}

/// `Some(0)` for "No Module Installed", `None` for unknown sizes.
fn size(value: &str) -> Result<Option<u64>, String> {
    if value == "No Module Installed" {
        return Ok(Some(0));
    }
    if value.starts_with("Unknown") {
        return Ok(None);
    }
    let (n, unit) = number_and_unit(value)?;
    let shift = match unit {
        "bytes" => 0,
        "kB" | "KB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        other => return Err(format!("size '{value}' has an unknown unit '{other}'")),
    };
    Ok(Some(n << shift))
}

fn bits(value: &str) -> Result<Option<u16>, String> {
    if value.starts_with("Unknown") {
        return Ok(None);
    }
    match number_and_unit(value)? {
        (0, _) => Ok(None),
        (n, "bits") => u16::try_from(n)
            .map(Some)
            .map_err(|_| format!("width '{value}' is out of range")),
        (_, unit) => Err(format!("width '{value}' has an unknown unit '{unit}'")),
    }
}

fn speed(value: &str) -> Result<Option<u32>, String> {
    if value.starts_with("Unknown") {
        return Ok(None);
    }
    match number_and_unit(value)? {
        (0, _) => Ok(None),
        (n, "MT/s" | "MHz") => u32::try_from(n)
            .map(Some)
            .map_err(|_| format!("speed '{value}' is out of range")),
        (_, unit) => Err(format!("speed '{value}' has an unknown unit '{unit}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_SOCKET_DDR5: &str =
        include_str!("../../../../../tests/fixtures/dmidecode/type17-2s-ddr5.txt");

    #[test]
    fn a_two_socket_ddr5_server_with_empty_slots() {
        let devices = parse(TWO_SOCKET_DDR5).unwrap();
        assert_eq!(devices.len(), 8);
        let populated: Vec<&MemoryDevice> =
            devices.iter().filter(|d| d.size_bytes != Some(0)).collect();
        assert_eq!(populated.len(), 4);
        let first = populated[0];
        assert_eq!(first.locator.as_deref(), Some("CPU0_DIMM_A1"));
        assert_eq!(first.bank_locator.as_deref(), Some("NODE 0"));
        assert_eq!(first.size_bytes, Some(32 << 30));
        assert_eq!(first.memory_type.as_deref(), Some("DDR5"));
        assert_eq!(
            (first.speed_mts, first.configured_mts),
            (Some(5600), Some(4800))
        );
        assert_eq!(
            (first.data_width_bits, first.total_width_bits),
            (Some(64), Some(80))
        );
        let empty = devices.iter().find(|d| d.size_bytes == Some(0)).unwrap();
        assert_eq!(
            (empty.speed_mts, empty.memory_type.as_deref()),
            (None, None)
        );
    }

    #[test]
    fn old_spellings_and_bad_values() {
        let old = "Handle 0x0040, DMI type 17, 34 bytes\nMemory Device\n\tSize: 8192 MB\n\
                   \tLocator: ChannelB-DIMM0\n\tSpeed: 2400 MHz\n\tConfigured Clock Speed: 2133 MHz\n\
                   Handle 0x0041, DMI type 19, 31 bytes\nMemory Array Mapped Address\n\tSize: 8 GB\n";
        let devices = parse(old).unwrap();
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].size_bytes, Some(8 << 30));
        assert_eq!(devices[0].configured_mts, Some(2133));
        let bad = "Handle 0x0040, DMI type 17, 34 bytes\nMemory Device\n\tSize: lots\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("dmidecode -t 17") && err.contains("line 3"),
            "{err}"
        );
        assert!(err.contains("'lots'"), "{err}");
        assert!(
            parse("# dmidecode 3.4\nNo SMBIOS nor DMI entry point found.\n")
                .unwrap()
                .is_empty()
        );
    }
}
