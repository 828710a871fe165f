//! The CPU as `/proc/cpuinfo` and sysfs describe it: model, topology, clocks, caches and
//! ISA features. x86 and ARM write `/proc/cpuinfo` differently (ARM has no model name,
//! only implementer and part numbers), and containers may hide sysfs, so every field is
//! optional and each unreadable source adds a note.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One cache level as sysfs reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_bytes: u64,
    /// How many logical CPUs share one instance.
    pub shared_by_cpus: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuInfo {
    pub architecture: String,
    pub vendor: Option<String>,
    pub model: Option<String>,
    /// x86 family/model/stepping or ARM implementer/part, as read.
    pub identification: BTreeMap<String, String>,
    pub sockets: Option<u32>,
    pub physical_cores: Option<u32>,
    pub logical_cpus: Option<u32>,
    pub base_mhz: Option<f64>,
    pub max_mhz: Option<f64>,
    pub caches: Vec<CacheInfo>,
    /// Vector and matrix ISA features that matter for peak FLOPs (avx2, fma, avx512f,
    /// amx_tile, neon, sve, ...), normalised to lower case.
    pub features: Vec<String>,
}

/// The ISA features stackbench reports (flag names as the kernel spells them on x86;
/// `asimd` is reported as `neon` on ARM).
const INTERESTING_FEATURES: &[&str] = &[
    "sse2",
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "neon",
    "asimdhp",
    "asimddp",
    "sve",
    "sve2",
    "sme",
    "bf16",
    "i8mm",
];

impl CpuInfo {
    pub fn read(root: &Path, notes: &mut Vec<String>) -> CpuInfo {
        let mut info = CpuInfo {
            architecture: std::env::consts::ARCH.to_owned(),
            ..CpuInfo::default()
        };
        match std::fs::read_to_string(root.join("proc/cpuinfo")) {
            Ok(text) => info.apply_cpuinfo(&text),
            Err(e) => notes.push(format!(
                "/proc/cpuinfo unreadable ({e}): CPU model and features unknown"
            )),
        }
        info.apply_sysfs(root, notes);
        if info.logical_cpus.is_none() {
            info.logical_cpus = std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32);
        }
        info
    }

    /// Parses `/proc/cpuinfo` in the x86 or the ARM layout.
    pub fn apply_cpuinfo(&mut self, text: &str) {
        let mut processors = 0u32;
        let mut packages = BTreeSet::new();
        let mut cores = BTreeSet::new();
        let mut features = BTreeSet::new();
        let mut current_package = String::from("0");
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "processor" => processors += 1,
                "model name" | "Model Name" => {
                    self.model.get_or_insert_with(|| value.to_owned());
                }
                "vendor_id" => {
                    self.vendor.get_or_insert_with(|| value.to_owned());
                }
                "physical id" => {
                    current_package = value.to_owned();
                    packages.insert(value.to_owned());
                }
                "core id" => {
                    cores.insert((current_package.clone(), value.to_owned()));
                }
                "cpu MHz" if self.base_mhz.is_none() => self.base_mhz = value.parse().ok(),
                "flags" | "Features" => {
                    for flag in value.split_whitespace() {
                        let flag = if flag == "asimd" { "neon" } else { flag };
                        if INTERESTING_FEATURES.contains(&flag) {
                            features.insert(flag.to_owned());
                        }
                    }
                }
                "cpu family" | "model" | "stepping" | "CPU implementer" | "CPU part"
                | "CPU variant" | "CPU architecture" => {
                    self.identification
                        .entry(key.to_owned())
                        .or_insert_with(|| value.to_owned());
                }
                _ => {}
            }
        }
        // The layout tells the architecture: ARM kernels print implementer/part numbers.
        if self.identification.contains_key("CPU implementer") {
            self.architecture = "aarch64".into();
        } else if self.vendor.is_some() {
            self.architecture = "x86_64".into();
        }
        if processors > 0 {
            self.logical_cpus = Some(processors);
        }
        if !packages.is_empty() {
            self.sockets = Some(packages.len() as u32);
        }
        if !cores.is_empty() {
            self.physical_cores = Some(cores.len() as u32);
        }
        if self.model.is_none() {
            self.model = arm_model_name(&self.identification);
        }
        if self.vendor.is_none() {
            self.vendor = self
                .identification
                .get("CPU implementer")
                .map(|i| arm_implementer(i).to_owned());
        }
        self.features = features.into_iter().collect();
    }

    fn apply_sysfs(&mut self, root: &Path, notes: &mut Vec<String>) {
        let cpu0 = root.join("sys/devices/system/cpu/cpu0");
        if !cpu0.exists() {
            notes.push("sysfs CPU topology unavailable: cache sizes and max clock unknown".into());
            return;
        }
        self.caches = read_caches(&cpu0.join("cache"));
        let khz = |name: &str| {
            read_trimmed(&cpu0.join("cpufreq").join(name)).and_then(|s| s.parse::<f64>().ok())
        };
        if let Some(max) = khz("cpuinfo_max_freq") {
            self.max_mhz = Some(max / 1000.0);
        }
        if let Some(base) = khz("base_frequency") {
            self.base_mhz = Some(base / 1000.0);
        }
        if self.physical_cores.is_none() || self.sockets.is_none() {
            self.apply_sysfs_topology(root);
        }
    }

    /// ARM kernels print no `physical id`/`core id`: count them from sysfs topology.
    fn apply_sysfs_topology(&mut self, root: &Path) {
        let Ok(entries) = std::fs::read_dir(root.join("sys/devices/system/cpu")) else {
            return;
        };
        let mut packages = BTreeSet::new();
        let mut cores = BTreeSet::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name
                .strip_prefix("cpu")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                continue;
            }
            let topology = entry.path().join("topology");
            let package =
                read_trimmed(&topology.join("physical_package_id")).unwrap_or_else(|| "0".into());
            if let Some(core) = read_trimmed(&topology.join("core_id")) {
                cores.insert((package.clone(), core));
            }
            packages.insert(package);
        }
        if self.sockets.is_none() && !packages.is_empty() {
            self.sockets = Some(packages.len() as u32);
        }
        if self.physical_cores.is_none() && !cores.is_empty() {
            self.physical_cores = Some(cores.len() as u32);
        }
    }

    /// The last-level cache's total size across its instances on this machine.
    pub fn llc_bytes(&self) -> Option<u64> {
        let level = self
            .caches
            .iter()
            .filter(|c| c.kind != "Instruction")
            .map(|c| c.level)
            .max()?;
        let cache = self
            .caches
            .iter()
            .find(|c| c.level == level && c.kind != "Instruction")?;
        let instances = match (cache.shared_by_cpus, self.logical_cpus) {
            (Some(shared), Some(cpus)) if shared > 0 => cpus.div_ceil(shared).max(1),
            _ => 1,
        };
        Some(cache.size_bytes * instances as u64)
    }

    pub fn has(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }

    /// Cores that run work: physical cores when known, else logical CPUs.
    pub fn compute_cores(&self) -> Option<u32> {
        self.physical_cores.or(self.logical_cpus)
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

fn read_caches(dir: &Path) -> Vec<CacheInfo> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut caches: Vec<CacheInfo> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| {
            let path = e.path();
            Some(CacheInfo {
                level: read_trimmed(&path.join("level"))?.parse().ok()?,
                kind: read_trimmed(&path.join("type"))?,
                size_bytes: parse_size(&read_trimmed(&path.join("size"))?)?,
                shared_by_cpus: read_trimmed(&path.join("shared_cpu_list"))
                    .map(|l| count_cpu_list(&l)),
            })
        })
        .collect();
    caches.sort_by(|a, b| (a.level, &a.kind).cmp(&(b.level, &b.kind)));
    caches
}

/// Sizes as sysfs writes them: `32K`, `1024K`, `32768K`, `16M`, or plain bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&text[..i], text[i..].trim()),
        None => (text, ""),
    };
    let number: u64 = number.parse().ok()?;
    let scale = match unit {
        "" | "B" => 1,
        "K" | "KB" | "KiB" => 1 << 10,
        "M" | "MB" | "MiB" => 1 << 20,
        "G" | "GB" | "GiB" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(scale)
}

/// Counts CPUs in a list such as `0-3,8-11,15`.
pub fn count_cpu_list(list: &str) -> u32 {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(part.trim().parse::<u32>().is_ok()),
        })
        .sum()
}

/// `MemTotal` from `/proc/meminfo`, in bytes.
pub fn read_mem_total(root: &Path, notes: &mut Vec<String>) -> Option<u64> {
    let text = match std::fs::read_to_string(root.join("proc/meminfo")) {
        Ok(text) => text,
        Err(e) => {
            notes.push(format!(
                "/proc/meminfo unreadable ({e}): memory size unknown"
            ));
            return None;
        }
    };
    parse_mem_total(&text)
}

pub fn parse_mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn arm_implementer(code: &str) -> &'static str {
    match code.to_ascii_lowercase().as_str() {
        "0x41" => "ARM",
        "0x42" => "Broadcom",
        "0x43" => "Cavium",
        "0x48" => "HiSilicon",
        "0x4e" => "NVIDIA",
        "0x51" => "Qualcomm",
        "0x61" => "Apple",
        "0xc0" => "Ampere",
        _ => "unknown ARM implementer",
    }
}

/// A readable name for common ARM server cores (ARM's own part numbers).
fn arm_model_name(id: &BTreeMap<String, String>) -> Option<String> {
    let implementer = id.get("CPU implementer")?;
    let part = id.get("CPU part").map(|p| p.to_ascii_lowercase());
    let core = match (implementer.to_ascii_lowercase().as_str(), part.as_deref()) {
        ("0x41", Some("0xd0c")) => "Neoverse-N1",
        ("0x41", Some("0xd40")) => "Neoverse-V1",
        ("0x41", Some("0xd49")) => "Neoverse-N2",
        ("0x41", Some("0xd4f")) => "Neoverse-V2",
        ("0x41", Some("0xd84")) => "Neoverse-V3",
        ("0x41", Some("0xd08")) => "Cortex-A72",
        ("0x41", Some("0xd0b")) => "Cortex-A76",
        ("0xc0", Some("0xac3")) => "Ampere-1",
        _ => {
            return Some(format!(
                "{} part {}",
                arm_implementer(implementer),
                part.as_deref().unwrap_or("?")
            ));
        }
    };
    Some(format!("{} {core}", arm_implementer(implementer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(count_cpu_list("0-3,8-11,15"), 9);
        assert_eq!(count_cpu_list("0"), 1);
        assert_eq!(count_cpu_list(""), 0);
        assert_eq!(
            parse_mem_total("MemTotal:       24608492 kB\nMemFree: 1 kB"),
            Some(24608492 * 1024)
        );
    }

    #[test]
    fn missing_root_gives_notes_not_panics() {
        let mut notes = Vec::new();
        let info = CpuInfo::read(Path::new("/nonexistent-root"), &mut notes);
        assert!(info.model.is_none());
        assert!(notes.len() >= 2, "{notes:?}");
        assert!(read_mem_total(Path::new("/nonexistent-root"), &mut notes).is_none());
    }
}
