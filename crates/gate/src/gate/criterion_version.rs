//! Which Criterion versions the gate can measure, read from each side's `Cargo.lock`. The
//! gate drives a bench executable through Criterion's command line and reads its files:
//! `CRITERION_HOME` (from 0.3.3) keeps each side's rounds apart, `--save-baseline` names a
//! round, and `benchmark.json`/`sample.json` are read by `criterion_output`. Before 0.3.3
//! Criterion ignores `CRITERION_HOME` and writes into the crate's own target directory, so
//! rounds would read nothing or, worse, each other; a version after the last one verified
//! may have moved any of these. Either is refused by name before a round runs, rather than
//! ending in an empty or wrong verdict. Counting mode has its own, narrower range
//! ([`crate::harness::measure::InstructionCounter::new`]).

use super::GateError;
use super::rounds::SideRun;
use crate::harness::measure::instructions::{CountError, CriterionVersion};
use std::path::{Path, PathBuf};

/// The oldest Criterion the gate measures in time mode.
pub const OLDEST_SUPPORTED: CriterionVersion = CriterionVersion {
    major: 0,
    minor: 3,
    patch: 3,
};
/// The newest minor series verified (0.8.x).
pub const NEWEST_MINOR: u64 = 8;
/// The supported range as README and the refusal say it.
pub const SUPPORTED: &str = "0.3.3 to 0.8.x";

/// Whether the lock must exist: before the build a side may have none yet (cargo writes
/// it then); after the build it must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lock {
    IfPresent,
    Required,
}

/// [`check`] for both sides, base first.
pub fn check_sides(sides: [&SideRun; 2], lock: Lock) -> Result<(), GateError> {
    sides.into_iter().try_for_each(|side| check(side, lock))
}

/// Refuses `side` when its `Cargo.lock` holds a Criterion outside [`SUPPORTED`], or none.
pub fn check(side: &SideRun, lock: Lock) -> Result<(), GateError> {
    let Some(path) = find_lock(&side.crate_dir) else {
        return match lock {
            Lock::IfPresent => Ok(()),
            Lock::Required => Err(GateError::CriterionVersion {
                side: side.name.to_string(),
                lock: side.crate_dir.join("Cargo.lock"),
                detail: "no Cargo.lock after the build".into(),
            }),
        };
    };
    let refuse = |detail: String| GateError::CriterionVersion {
        side: side.name.to_string(),
        lock: path.clone(),
        detail,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| refuse(e.to_string()))?;
    let versions = criterion_versions(&text).map_err(refuse)?;
    if versions.is_empty() {
        return Err(refuse(
            "it has no `criterion` package: the gate measures Criterion benches".into(),
        ));
    }
    match versions.iter().find(|v| !supported(**v)) {
        Some(v) => Err(refuse(format!(
            "Criterion {v} is not supported by the gate (supported: {SUPPORTED}; {})",
            why(*v)
        ))),
        None => Ok(()),
    }
}

fn supported(v: CriterionVersion) -> bool {
    v >= OLDEST_SUPPORTED && v.major == 0 && v.minor <= NEWEST_MINOR
}

fn why(v: CriterionVersion) -> &'static str {
    if v < OLDEST_SUPPORTED {
        "it ignores CRITERION_HOME, so the two sides' rounds cannot be kept apart; update to 0.3.3 or later"
    } else {
        "newer than the last version verified"
    }
}

/// The `Cargo.lock` of the tree `crate_dir` is in: the nearest one upwards, but never above
/// the checkout's root (the directory holding `.git`), since a side's worktree lives inside
/// the user's repository and must not read the user's lock.
fn find_lock(crate_dir: &Path) -> Option<PathBuf> {
    for dir in crate_dir.ancestors() {
        let lock = dir.join("Cargo.lock");
        if lock.is_file() {
            return Some(lock);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Every `criterion` version a lock file lists.
fn criterion_versions(text: &str) -> Result<Vec<CriterionVersion>, String> {
    #[derive(serde::Deserialize)]
    struct LockFile {
        #[serde(default)]
        package: Vec<Package>,
    }
    #[derive(serde::Deserialize)]
    struct Package {
        name: String,
        version: String,
    }
    let lock: LockFile = toml::from_str(text).map_err(|e| e.to_string())?;
    lock.package
        .iter()
        .filter(|p| p.name == "criterion")
        .map(|p| p.version.parse().map_err(|e: CountError| e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> CriterionVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_range_is_0_3_3_to_0_8() {
        for ok in [
            "0.3.3", "0.3.6", "0.4.0", "0.5.1", "0.6.0", "0.7.0", "0.8.2",
        ] {
            assert!(supported(version(ok)), "{ok}");
        }
        for refused in ["0.2.11", "0.3.0", "0.3.2", "0.9.0", "1.0.0"] {
            assert!(!supported(version(refused)), "{refused}");
        }
    }

    #[test]
    fn every_criterion_in_the_lock_is_read() {
        let text = "version = 3\n\n[[package]]\nname = \"criterion\"\nversion = \"0.3.6\"\n\n\
                    [[package]]\nname = \"serde\"\nversion = \"1.0.0\"\n\n\
                    [[package]]\nname = \"criterion\"\nversion = \"0.2.11\"\n";
        let versions = criterion_versions(text).unwrap();
        assert_eq!(versions, [version("0.3.6"), version("0.2.11")]);
        assert!(criterion_versions("[[package]]\nname = 1\n").is_err());
    }

    #[test]
    fn the_lock_is_never_taken_from_above_the_checkout() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.lock"), "").unwrap();
        let tree = dir.path().join("target/worktree-base");
        std::fs::create_dir_all(tree.join("crate")).unwrap();
        std::fs::write(tree.join(".git"), "gitdir: elsewhere").unwrap();
        assert_eq!(find_lock(&tree.join("crate")), None);
        std::fs::write(tree.join("Cargo.lock"), "").unwrap();
        assert_eq!(
            find_lock(&tree.join("crate")),
            Some(tree.join("Cargo.lock"))
        );
    }
}
