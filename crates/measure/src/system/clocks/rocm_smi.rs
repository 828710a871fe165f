//! AMD clock control through `rocm-smi`, clocks read from the amdgpu driver's sysfs files
//! (`pp_dpm_sclk`, `pp_dpm_mclk`: the levels, the current one starred), the files
//! `rocm-smi` itself reads.
//!
//! The policy: `rocm-smi --setperfdeterminism <top sclk>` (MI200/MI300: the SM clock held
//! at a cap the card keeps under load); where that is refused as unsupported, `--setsclk
//! <top level>` (manual performance level). The restore undoes the one used
//! (`--resetperfdeterminism`, `--resetclocks`). Both need root; `rocm-smi` says "permission"
//! when it is not, and the run records that reason.
//!
//! Why a process and not a library binding: the change happens twice per bench target, so
//! a process each time costs nothing, and `rocm-smi` ships with every ROCm install while its
//! library's ABI moves between releases.

use super::{ClockController, ClockPair, LockRefused, LockedClocks};
use crate::system::telemetry::amdgpu::{AmdGpu, AmdSelector, DRM_ROOT};
use std::path::{Path, PathBuf};

/// Runs `rocm-smi` with the arguments: `Ok((succeeded, output))`, or why it could not run.
pub type SmiRunner = Box<dyn Fn(&[String]) -> Result<(bool, String), String> + Send>;

/// The real `rocm-smi` (or `$STACKBENCH_ROCM_SMI`).
pub fn system_rocm_smi() -> SmiRunner {
    Box::new(|args: &[String]| {
        let program = std::env::var("STACKBENCH_ROCM_SMI").unwrap_or_else(|_| "rocm-smi".into());
        let output = std::process::Command::new(&program)
            .args(args)
            .output()
            .map_err(|e| format!("{program} did not start: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        Ok((output.status.success(), text))
    })
}

/// The DPM levels of one clock, MHz, and the current one, from `pp_dpm_sclk` text:
/// `0: 500Mhz\n1: 1800Mhz *\n` (levels in order, the current starred).
pub fn parse_dpm(text: &str) -> (Vec<u32>, Option<u32>) {
    let mut levels = Vec::new();
    let mut current = None;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let Ok(mhz) = digits.parse::<u32>() else {
            continue;
        };
        levels.push(mhz);
        if rest.trim_end().ends_with('*') {
            current = Some(mhz);
        }
    }
    (levels, current)
}

/// How the lock was set, so the restore undoes that one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    PerfDeterminism,
    ManualLevel,
}

/// Why `rocm-smi` refused, from its output.
fn refusal(what: &str, output: &str) -> LockRefused {
    let lower = output.to_lowercase();
    let last = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let why = format!("rocm-smi {what}: {last}");
    if lower.contains("permission") || lower.contains("root") {
        LockRefused::NoPermission(why)
    } else if lower.contains("not supported") || lower.contains("unsupported") {
        LockRefused::Unsupported(why)
    } else {
        LockRefused::Failed(why)
    }
}

/// One AMD GPU's clocks.
pub struct RocmSmiClocks {
    /// `/sys/class/drm/cardN`.
    card: PathBuf,
    /// The device number `rocm-smi -d` takes.
    smi_index: usize,
    run: SmiRunner,
    locked_by: Option<Method>,
}

/// The position of `card` among the AMD cards under `root` sorted by PCI bus, which is the
/// order ROCm numbers GPUs in (and, unconfirmed on hardware, `rocm-smi -d`).
fn smi_index(root: &Path, card: &Path) -> Option<usize> {
    let pci = |c: &Path| {
        std::fs::read_to_string(c.join("device/uevent"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("PCI_SLOT_NAME=").map(str::to_owned))
    };
    let mut cards: Vec<(String, PathBuf)> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            std::fs::read_to_string(p.join("device/vendor")).is_ok_and(|v| v.trim() == "0x1002")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("card") && !n.contains('-'))
        })
        .filter_map(|p| Some((pci(&p)?, p)))
        .collect();
    cards.sort();
    cards.iter().position(|(_, p)| p == card)
}

impl RocmSmiClocks {
    /// The AMD GPU this process's ROCm benchmarks run on (`STACKBENCH_ROCM_DEVICE` among the
    /// visible ones); the error says why not.
    pub fn open_rocm_device() -> Result<RocmSmiClocks, String> {
        let root = Path::new(DRM_ROOT);
        let gpu = AmdGpu::discover(root, &AmdSelector::from_env()?)?;
        let smi_index = smi_index(root, &gpu.card)
            .ok_or_else(|| format!("amdgpu: no PCI bus for {}", gpu.card.display()))?;
        Ok(Self::new(gpu.card, smi_index, system_rocm_smi()))
    }

    pub fn new(card: PathBuf, smi_index: usize, run: SmiRunner) -> RocmSmiClocks {
        RocmSmiClocks {
            card,
            smi_index,
            run,
            locked_by: None,
        }
    }

    fn dpm(&self, file: &str) -> Result<(Vec<u32>, Option<u32>), String> {
        let path = self.card.join("device").join(file);
        std::fs::read_to_string(&path)
            .map(|t| parse_dpm(&t))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn smi(&self, args: &[&str]) -> Result<(bool, String), String> {
        let mut all = vec!["-d".to_string(), self.smi_index.to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        (self.run)(&all)
    }
}

impl ClockController for RocmSmiClocks {
    fn device(&self) -> String {
        format!(
            "AMD GPU {} (rocm-smi -d {})",
            self.card.display(),
            self.smi_index
        )
    }

    fn read(&self) -> Result<ClockPair, String> {
        let (_, sm) = self.dpm("pp_dpm_sclk")?;
        let memory = self.dpm("pp_dpm_mclk").ok().and_then(|(_, m)| m);
        Ok(ClockPair {
            sm_mhz: sm,
            memory_mhz: memory,
        })
    }

    fn lock(&mut self) -> Result<LockedClocks, LockRefused> {
        let (levels, _) = self.dpm("pp_dpm_sclk").map_err(LockRefused::Unsupported)?;
        let (Some(&top), Some(top_level)) = (levels.iter().max(), levels.len().checked_sub(1))
        else {
            return Err(LockRefused::Unsupported(
                "pp_dpm_sclk lists no level".into(),
            ));
        };
        let top_text = top.to_string();
        let (ok, output) = self
            .smi(&["--setperfdeterminism", &top_text])
            .map_err(LockRefused::Unsupported)?;
        if ok {
            self.locked_by = Some(Method::PerfDeterminism);
            return Ok(LockedClocks {
                sm_mhz: top,
                memory_mhz: None,
                method: "rocm-smi --setperfdeterminism".into(),
            });
        }
        let refused = refusal("--setperfdeterminism", &output);
        if !matches!(refused, LockRefused::Unsupported(_)) {
            return Err(refused);
        }
        let level = top_level.to_string();
        let (ok, output) = self
            .smi(&["--setsclk", &level])
            .map_err(LockRefused::Unsupported)?;
        if !ok {
            return Err(refusal("--setsclk", &output));
        }
        self.locked_by = Some(Method::ManualLevel);
        Ok(LockedClocks {
            sm_mhz: levels[top_level],
            memory_mhz: None,
            method: "rocm-smi --setsclk".into(),
        })
    }

    fn restore(&mut self) -> Result<(), String> {
        let flag = match self.locked_by.take() {
            None => return Ok(()),
            Some(Method::PerfDeterminism) => "--resetperfdeterminism",
            Some(Method::ManualLevel) => "--resetclocks",
        };
        match self.smi(&[flag])? {
            (true, _) => Ok(()),
            (false, output) => Err(format!("rocm-smi {flag}: {}", output.trim())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn dpm_levels_and_the_current_one_are_read() {
        let (levels, current) = parse_dpm("0: 500Mhz \n1: 1700Mhz *\n2: 2100Mhz \n");
        assert_eq!(levels, vec![500, 1700, 2100]);
        assert_eq!(current, Some(1700));
        assert_eq!(parse_dpm("garbage\n"), (vec![], None));
    }

    /// A card with three SM levels and a fake `rocm-smi` that answers from `answers` (by
    /// flag) and logs every call.
    fn card(
        answers: Vec<(&'static str, bool, &'static str)>,
    ) -> (RocmSmiClocks, Arc<Mutex<Vec<String>>>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("card1/device");
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(
            device.join("pp_dpm_sclk"),
            "0: 500Mhz\n1: 1500Mhz *\n2: 2100Mhz\n",
        )
        .unwrap();
        std::fs::write(device.join("pp_dpm_mclk"), "0: 1300Mhz *\n").unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let run: SmiRunner = Box::new(move |args: &[String]| {
            seen.lock().unwrap().push(args.join(" "));
            let flag = args.get(2).cloned().unwrap_or_default();
            let (ok, text) = answers
                .iter()
                .find(|(f, _, _)| *f == flag)
                .map(|(_, ok, text)| (*ok, text.to_string()))
                .unwrap_or((true, String::new()));
            Ok((ok, text))
        });
        (
            RocmSmiClocks::new(dir.path().join("card1"), 0, run),
            log,
            dir,
        )
    }

    #[test]
    fn perf_determinism_at_the_top_level_is_tried_first_and_undone() {
        let (mut amd, log, _dir) = card(vec![]);
        assert_eq!(
            amd.read().unwrap(),
            ClockPair {
                sm_mhz: Some(1500),
                memory_mhz: Some(1300)
            }
        );
        let locked = amd.lock().unwrap();
        assert_eq!(
            (locked.sm_mhz, locked.method.as_str()),
            (2100, "rocm-smi --setperfdeterminism")
        );
        amd.restore().unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            vec![
                "-d 0 --setperfdeterminism 2100",
                "-d 0 --resetperfdeterminism"
            ]
        );
    }

    #[test]
    fn unsupported_determinism_falls_back_to_the_manual_level() {
        let (mut amd, log, _dir) = card(vec![(
            "--setperfdeterminism",
            false,
            "ERROR: GPU[0] : Setting performance determinism is not supported",
        )]);
        assert_eq!(amd.lock().unwrap().method, "rocm-smi --setsclk");
        amd.restore().unwrap();
        let log = log.lock().unwrap();
        assert_eq!(log[1], "-d 0 --setsclk 2");
        assert_eq!(log[2], "-d 0 --resetclocks");
    }

    #[test]
    fn no_permission_is_a_refusal_with_the_reason_and_no_fallback() {
        let (mut amd, log, _dir) = card(vec![(
            "--setperfdeterminism",
            false,
            "Permission denied: this command requires root",
        )]);
        let refused = amd.lock().unwrap_err();
        assert!(
            matches!(refused, LockRefused::NoPermission(ref why) if why.contains("root")),
            "{refused:?}"
        );
        assert_eq!(
            log.lock().unwrap().len(),
            1,
            "no fallback after a refused permission"
        );
        amd.restore().unwrap();
        assert_eq!(log.lock().unwrap().len(), 1, "nothing to restore");
    }

    #[test]
    fn a_missing_rocm_smi_is_unsupported_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let device = dir.path().join("card0/device");
        std::fs::create_dir_all(&device).unwrap();
        std::fs::write(device.join("pp_dpm_sclk"), "0: 500Mhz *\n").unwrap();
        let run: SmiRunner =
            Box::new(|_: &[String]| Err("rocm-smi did not start: No such file".into()));
        let mut amd = RocmSmiClocks::new(dir.path().join("card0"), 0, run);
        assert!(matches!(amd.lock(), Err(LockRefused::Unsupported(_))));
    }
}
