//! The git side of the gate: find the repository and the crate in it, resolve revisions to
//! commits, and check each one out into its own worktree under `target/`, never touching
//! the user's working tree. [`Worktree`] removes itself when dropped, so an error or a
//! Ctrl-C anywhere after the checkout still cleans up.

use super::GateError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository around the current directory and where the crate sits inside it.
#[derive(Clone, Debug)]
pub struct Repo {
    /// The top of the working tree.
    pub root: PathBuf,
    /// The crate's directory relative to `root` (empty when the crate is at the top).
    pub crate_prefix: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

impl Repo {
    /// The repository holding `dir`; the crate is the package whose manifest cargo finds
    /// from `dir`.
    pub fn discover(dir: &Path) -> Result<Repo, GateError> {
        let shown = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let not_repo = |detail: String| GateError::NotARepo {
            dir: shown.clone(),
            detail,
        };
        let root = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"]).map_err(not_repo)?);
        let manifest = locate_manifest(dir)?;
        let crate_dir = manifest.parent().unwrap_or(Path::new("."));
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let crate_prefix = canonical(crate_dir)
            .strip_prefix(canonical(&root))
            .map(Path::to_path_buf)
            .map_err(|_| {
                not_repo(format!(
                    "the crate at {} lies outside the repository at {}",
                    crate_dir.display(),
                    root.display()
                ))
            })?;
        Ok(Repo { root, crate_prefix })
    }

    /// The crate's directory in the user's own checkout.
    pub fn crate_dir(&self) -> PathBuf {
        self.root.join(&self.crate_prefix)
    }

    /// The full commit hash `rev` names, or `UnknownRev` quoting git.
    pub fn resolve(&self, rev: &str) -> Result<String, GateError> {
        if rev.starts_with('-') {
            return Err(GateError::UnknownRev {
                rev: rev.into(),
                detail: "a revision cannot start with `-`".into(),
            });
        }
        self.peel(
            rev,
            "commit",
            "cannot resolve it to a commit in this repository",
        )
    }

    /// The tree `commit` records: equal trees are equal sources, whatever the commits.
    pub fn tree_of(&self, commit: &str) -> Result<String, GateError> {
        self.peel(commit, "tree", "finds no tree for this commit")
    }

    /// `git rev-parse --verify REV^{KIND}`: the hash of the object of that kind `rev` names.
    fn peel(&self, rev: &str, kind: &str, missing: &str) -> Result<String, GateError> {
        let object = format!("{rev}^{{{kind}}}");
        git(&self.root, &["rev-parse", "--verify", "--quiet", &object])
            .ok()
            .filter(|hash| !hash.is_empty())
            .ok_or_else(|| GateError::UnknownRev {
                rev: rev.into(),
                detail: format!("git rev-parse {missing}"),
            })
    }

    /// Checks `commit` out, detached, at `path` (replacing a leftover of an earlier run).
    pub fn add_worktree(&self, path: &Path, commit: &str) -> Result<Worktree, GateError> {
        if path.exists() {
            let _ = git(
                &self.root,
                &["worktree", "remove", "--force", &path.to_string_lossy()],
            );
            let _ = std::fs::remove_dir_all(path);
        }
        let _ = git(&self.root, &["worktree", "prune"]);
        git(
            &self.root,
            &[
                "worktree",
                "add",
                "--detach",
                "--force",
                &path.to_string_lossy(),
                commit,
            ],
        )
        .map_err(|detail| GateError::Git {
            action: format!("check out {commit} into {}", path.display()),
            detail,
        })?;
        Ok(Worktree {
            repo_root: self.root.clone(),
            path: path.to_path_buf(),
        })
    }
}

/// `cargo locate-project` from `dir`: the manifest of the package there.
fn locate_manifest(dir: &Path) -> Result<PathBuf, GateError> {
    let out = stackbench_measure::system::cargo::command()
        .args(["locate-project", "--message-format", "plain"])
        .current_dir(dir)
        .output()
        .map_err(|source| GateError::Spawn {
            program: "cargo".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(GateError::NotACrate {
            dir: dir.to_path_buf(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A checked-out worktree, removed (and pruned from git's list) when dropped.
#[derive(Debug)]
pub struct Worktree {
    repo_root: PathBuf,
    pub path: PathBuf,
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let path = self.path.to_string_lossy().into_owned();
        if git(&self.repo_root, &["worktree", "remove", "--force", &path]).is_err() {
            // Never panic in Drop: remove what is left by hand and let git forget it.
            let _ = std::fs::remove_dir_all(&self.path);
            let _ = git(&self.repo_root, &["worktree", "prune"]);
        }
    }
}
