//! The software side of a run: OS, kernel, compiler, stackbench's version and the git
//! revision (with a dirty flag) of the tree that was benchmarked.

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub arch: String,
}

impl HostInfo {
    pub fn read(root: &Path, notes: &mut Vec<String>) -> HostInfo {
        let read = |p: &str| {
            std::fs::read_to_string(root.join(p))
                .ok()
                .map(|s| s.trim().to_owned())
        };
        let os = read("etc/os-release").and_then(|text| parse_os_release(&text));
        if os.is_none() {
            notes.push("/etc/os-release unreadable: OS name unknown".into());
        }
        HostInfo {
            hostname: read("proc/sys/kernel/hostname").or_else(|| read("etc/hostname")),
            os,
            kernel: read("proc/sys/kernel/osrelease"),
            arch: std::env::consts::ARCH.to_owned(),
        }
    }
}

/// `PRETTY_NAME` from os-release, else `NAME VERSION_ID`.
pub fn parse_os_release(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_owned())
    };
    field("PRETTY_NAME").or_else(|| {
        Some(format!(
            "{} {}",
            field("NAME")?,
            field("VERSION_ID").unwrap_or_default()
        ))
    })
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftwareInfo {
    pub stackbench_version: String,
    pub rustc: Option<String>,
    pub git_revision: Option<String>,
    pub git_dirty: Option<bool>,
    /// Command line of the process that probed (a bench target or `stackbench info`).
    pub argv: Vec<String>,
}

impl SoftwareInfo {
    pub fn collect() -> SoftwareInfo {
        let (git_revision, git_dirty) = git_state(Path::new("."));
        SoftwareInfo {
            stackbench_version: env!("CARGO_PKG_VERSION").to_owned(),
            rustc: command_output("rustc", &["--version"]),
            git_revision,
            git_dirty,
            argv: std::env::args().collect(),
        }
    }
}

/// The revision of the git work tree at `dir` and whether it has uncommitted changes.
pub fn git_state(dir: &Path) -> (Option<String>, Option<bool>) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let revision = git(&["rev-parse", "HEAD"]);
    let dirty = revision
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    (revision, dirty)
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_forms() {
        assert_eq!(
            parse_os_release(
                "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
            )
            .as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            parse_os_release("NAME=Alpine\nVERSION_ID=3.19\n").as_deref(),
            Some("Alpine 3.19")
        );
        assert_eq!(parse_os_release("ID=x\n"), None);
    }

    #[test]
    fn git_state_outside_a_repository_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git_state(dir.path()), (None, None));
    }
}
