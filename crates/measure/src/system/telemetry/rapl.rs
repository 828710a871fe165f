//! CPU package power from RAPL energy counters under `/sys/class/powercap`
//! (`intel-rapl:<n>/energy_uj`; AMD's Zen driver uses the same names).
//!
//! Only package zones (`intel-rapl:<n>`, one per socket) are summed: their sub-zones
//! (`intel-rapl:<n>:<m>`, cores, uncore, DRAM on some parts) are already inside the package
//! figure on most parts, and adding them would count twice. Counters are microjoules that
//! wrap at `max_energy_range_uj`; a reading below the previous one means one wrap. Since
//! Linux 5.10 `energy_uj` is readable by root only (a side-channel fix): elsewhere the
//! reader says so, and power is "not readable here", never 0.

use std::path::{Path, PathBuf};

/// The default sysfs root.
pub const POWERCAP_ROOT: &str = "/sys/class/powercap";

/// One package zone.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub name: String,
    energy_path: PathBuf,
    /// The counter wraps after this many microjoules.
    pub max_range_uj: u64,
}

/// The readable package zones of one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Rapl {
    pub zones: Vec<Zone>,
}

/// Energy counters of every zone at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading(pub Vec<u64>);

impl Rapl {
    /// Finds the package zones under `root`; the error says why power cannot be read.
    pub fn discover(root: &Path) -> Result<Rapl, String> {
        let entries = std::fs::read_dir(root).map_err(|e| {
            format!(
                "RAPL: {} is not readable ({e}): no powercap driver",
                root.display()
            )
        })?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_package_zone(p))
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(format!(
                "RAPL: no package zone (intel-rapl:<n>) under {}",
                root.display()
            ));
        }
        let zones = dirs
            .iter()
            .map(|dir| zone(dir))
            .collect::<Result<Vec<_>, _>>()?;
        let rapl = Rapl { zones };
        rapl.read()?; // energy_uj is root-only since Linux 5.10: find out now, not mid-run
        Ok(rapl)
    }

    /// Reads every zone's counter.
    pub fn read(&self) -> Result<Reading, String> {
        self.zones
            .iter()
            .map(|z| read_u64(&z.energy_path))
            .collect::<Result<Vec<_>, _>>()
            .map(Reading)
    }

    /// Joules used between two readings, summed over zones, with one wrap per zone allowed.
    pub fn joules_between(&self, before: &Reading, after: &Reading) -> f64 {
        self.zones
            .iter()
            .zip(before.0.iter().zip(&after.0))
            .map(|(zone, (&b, &a))| wrapped_delta(b, a, zone.max_range_uj) as f64 * 1e-6)
            .sum()
    }
}

/// `after - before` for a counter that wraps to 0 after `max_range`.
pub fn wrapped_delta(before: u64, after: u64, max_range: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        max_range.saturating_sub(before) + after
    }
}

fn is_package_zone(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.strip_prefix("intel-rapl:")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()))
}

fn zone(dir: &Path) -> Result<Zone, String> {
    let name = std::fs::read_to_string(dir.join("name"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| dir.display().to_string());
    Ok(Zone {
        name,
        energy_path: dir.join("energy_uj"),
        max_range_uj: read_u64(&dir.join("max_energy_range_uj"))?,
    })
}

fn read_u64(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => format!(
            "RAPL: {} is not readable by this user (root only since Linux 5.10)",
            path.display()
        ),
        _ => format!("RAPL: cannot read {}: {e}", path.display()),
    })?;
    text.trim().parse().map_err(|e| {
        format!(
            "RAPL: {} holds {:?}, not a counter: {e}",
            path.display(),
            text.trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A powercap tree: package zones with sub-zones, and one non-RAPL entry.
    fn tree(packages: &[(u64, u64)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (i, (energy, max)) in packages.iter().enumerate() {
            let dir = root.path().join(format!("intel-rapl:{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("name"), format!("package-{i}\n")).unwrap();
            std::fs::write(dir.join("energy_uj"), format!("{energy}\n")).unwrap();
            std::fs::write(dir.join("max_energy_range_uj"), format!("{max}\n")).unwrap();
            let sub = root.path().join(format!("intel-rapl:{i}:0"));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join("energy_uj"), "999999\n").unwrap();
        }
        std::fs::create_dir_all(root.path().join("dtpm")).unwrap();
        root
    }

    fn set_energy(root: &Path, zone: usize, value: u64) {
        let path = root.join(format!("intel-rapl:{zone}/energy_uj"));
        std::fs::write(path, format!("{value}\n")).unwrap();
    }

    #[test]
    fn sums_package_zones_only() {
        let root = tree(&[(1_000_000, 262_143_328_850), (5_000_000, 262_143_328_850)]);
        let rapl = Rapl::discover(root.path()).unwrap();
        assert_eq!(
            rapl.zones.len(),
            2,
            "sub-zones and other drivers are not packages"
        );
        assert_eq!(rapl.zones[1].name, "package-1");
        let before = rapl.read().unwrap();
        set_energy(root.path(), 0, 3_000_000);
        set_energy(root.path(), 1, 5_500_000);
        let after = rapl.read().unwrap();
        assert!((rapl.joules_between(&before, &after) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn a_counter_that_wrapped_counts_once_around() {
        let max = 262_143_328_850;
        let root = tree(&[(max - 1_000_000, max)]);
        let rapl = Rapl::discover(root.path()).unwrap();
        let before = rapl.read().unwrap();
        set_energy(root.path(), 0, 2_000_000);
        let after = rapl.read().unwrap();
        assert!((rapl.joules_between(&before, &after) - 3.0).abs() < 1e-12);
        assert_eq!(wrapped_delta(10, 4, 12), 6);
    }

    #[test]
    fn unreadable_trees_say_why() {
        let missing = Rapl::discover(Path::new("/nonexistent/powercap")).unwrap_err();
        assert!(missing.contains("no powercap driver"), "{missing}");
        let empty = tempfile::tempdir().unwrap();
        let none = Rapl::discover(empty.path()).unwrap_err();
        assert!(none.contains("no package zone"), "{none}");
        let root = tree(&[(1, 100)]);
        std::fs::write(root.path().join("intel-rapl:0/energy_uj"), "garbage\n").unwrap();
        let garbage = Rapl::discover(root.path()).unwrap_err();
        assert!(garbage.contains("not a counter"), "{garbage}");
    }
}
