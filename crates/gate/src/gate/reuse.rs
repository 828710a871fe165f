//! A side's last build, reused when the side's sources are the very tree it was built from.
//!
//! Each gate checks its sides out afresh (`git worktree add`), so every file is newer than
//! the build its side's target directory holds, and cargo recompiles the crate and every
//! path dependency in the repository even when nothing in them changed: on a repeated gate
//! against the same base, the base side's whole build again. Cargo judges freshness by
//! modification times, so a side whose commit has the same git tree as the last build that
//! *succeeded* in its target directory gets its files' times set back to when that build
//! started; cargo then finds its units fresh, and rebuilds whatever else changed (the
//! toolchain, flags, environment a build script reads) as always.
//!
//! The stamp (`<target>/stackbench-gate-built`: the tree and the start time) is removed
//! before every build and written only after one succeeds, so it never describes a target
//! directory that a failed, interrupted or other build has touched since. Times are set only
//! on a checkout whose content equals the tree the stamp names, so a time left unset (an
//! error partway) costs a recompilation, never a stale binary.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const STAMP: &str = "stackbench-gate-built";

/// The last successful build in a side's target directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The git tree (`<commit>^{tree}`) the build was of.
    pub tree: String,
    /// When that build started: every source file it read is at least this old.
    pub started: SystemTime,
}

fn stamp_path(target_dir: &Path) -> PathBuf {
    target_dir.join(STAMP)
}

impl Stamp {
    fn to_text(&self) -> String {
        let since = self.started.duration_since(UNIX_EPOCH).unwrap_or_default();
        format!("tree {}\nstarted_unix_ns {}\n", self.tree, since.as_nanos())
    }

    /// `None` for anything but the two lines [`Stamp::to_text`] writes (a hex tree, a
    /// time): a stamp that cannot be read whole is no reason to trust a build.
    fn parse(text: &str) -> Option<Stamp> {
        let mut lines = text.lines();
        let tree = lines.next()?.strip_prefix("tree ")?;
        let nanos: u64 = lines
            .next()?
            .strip_prefix("started_unix_ns ")?
            .parse()
            .ok()?;
        let hex = tree.len() >= 40 && tree.bytes().all(|b| b.is_ascii_hexdigit());
        (hex && lines.next().is_none()).then(|| Stamp {
            tree: tree.to_owned(),
            started: UNIX_EPOCH + Duration::from_nanos(nanos),
        })
    }
}

/// The stamp in `target_dir`, if one is there and reads whole.
pub fn read(target_dir: &Path) -> Option<Stamp> {
    Stamp::parse(&std::fs::read_to_string(stamp_path(target_dir)).ok()?)
}

/// Removes the stamp before a build: from here the directory is no longer known to hold
/// any particular tree's build.
pub fn forget(target_dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(stamp_path(target_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Records a build that succeeded (written to a temporary name, then renamed).
pub fn remember(target_dir: &Path, stamp: &Stamp) -> std::io::Result<()> {
    let path = stamp_path(target_dir);
    let partial = path.with_extension("partial");
    std::fs::write(&partial, stamp.to_text())?;
    std::fs::rename(&partial, &path)
}

/// Sets the modification time of every file and directory under `checkout` (not its `.git`
/// link, not through symbolic links) to `to`. Returns how many it set.
pub fn backdate(checkout: &Path, to: SystemTime) -> std::io::Result<usize> {
    let mut set = 0;
    let mut pending = vec![checkout.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if dir == checkout && entry.file_name() == ".git" {
                continue;
            }
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                std::fs::File::open(entry.path())?.set_modified(to)?;
                set += 1;
            }
        }
        // After its entries: listing a directory leaves its time alone, setting it last
        // keeps it.
        std::fs::File::open(&dir)?.set_modified(to)?;
        set += 1;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> Stamp {
        Stamp {
            tree: "4b825dc642cb6eb9a060e54bf8d69288fbee4904".into(),
            started: UNIX_EPOCH + Duration::from_nanos(1_764_460_800_123_456_789),
        }
    }

    #[test]
    fn a_stamp_reads_back_as_written_and_forget_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        forget(dir.path()).unwrap();
        remember(dir.path(), &stamp()).unwrap();
        assert_eq!(read(dir.path()), Some(stamp()));
        forget(dir.path()).unwrap();
        assert_eq!(read(dir.path()), None);
    }

    #[test]
    fn a_stamp_that_is_not_whole_is_no_stamp() {
        let good = stamp().to_text();
        assert_eq!(Stamp::parse(&good), Some(stamp()));
        for bad in [
            "",
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n",
            "tree 4b825dc6\nstarted_unix_ns 1\n",
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee490z\nstarted_unix_ns 1\n",
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nstarted_unix_ns -1\n",
            "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nstarted 1\n",
            &format!("{good}extra\n"),
        ] {
            assert_eq!(Stamp::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn backdate_sets_every_file_and_directory_but_the_git_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/nested")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "x").unwrap();
        std::fs::write(root.join("src/lib.rs"), "x").unwrap();
        std::fs::write(root.join("src/nested/mod.rs"), "x").unwrap();
        std::fs::write(root.join(".git"), "gitdir: elsewhere").unwrap();
        std::os::unix::fs::symlink("/nonexistent", root.join("src/link")).unwrap();
        let to = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        // Three files and three directories (the checkout itself, src, src/nested).
        assert_eq!(backdate(root, to).unwrap(), 6);
        for path in ["Cargo.toml", "src/lib.rs", "src/nested/mod.rs", "src", "."] {
            let modified = std::fs::metadata(root.join(path))
                .unwrap()
                .modified()
                .unwrap();
            assert_eq!(modified, to, "{path}");
        }
        let git = std::fs::metadata(root.join(".git")).unwrap();
        assert_ne!(git.modified().unwrap(), to);
    }
}
