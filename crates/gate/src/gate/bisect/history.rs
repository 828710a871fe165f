//! The git side of bisect: the repository around the current directory, the two revisions
//! resolved to commits, the check that `--good` is an ancestor of `--bad`, and the
//! first-parent line between them (oldest first). The gate keeps its own git module for
//! worktrees; this one only reads history, so it never touches a working tree.

use super::BisectError;
use crate::gate::GateError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One commit of the searched range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Commit {
    pub commit: String,
    pub subject: String,
}

impl Commit {
    /// The abbreviated hash shown in tables and step directories.
    pub fn short(&self) -> &str {
        &self.commit[..self.commit.len().min(7)]
    }
}

/// The repository the bisect searches.
pub struct History {
    root: PathBuf,
}

/// `git -C dir args`, whatever its exit status: the caller reads it, since
/// `merge-base --is-ancestor` answers "no" with status 1 and a failure with another.
fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, BisectError> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|source| {
            GateError::Spawn {
                program: "git".into(),
                source,
            }
            .into()
        })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

impl History {
    /// The repository holding `dir`.
    pub fn discover(dir: &Path) -> Result<History, BisectError> {
        let out = git(dir, &["rev-parse", "--show-toplevel"])?;
        if !out.status.success() {
            // The gate's own error: bisect and the gate say the same of a directory outside git.
            return Err(GateError::NotARepo {
                dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
                detail: text(&out.stderr),
            }
            .into());
        }
        Ok(History {
            root: PathBuf::from(text(&out.stdout)),
        })
    }

    /// The full hash `rev` names, or `UnknownRev` naming the flag it came from.
    pub fn resolve(&self, flag: &'static str, rev: &str) -> Result<String, BisectError> {
        let unknown = |detail: &str| BisectError::UnknownRev {
            flag,
            rev: rev.into(),
            detail: detail.into(),
        };
        if rev.starts_with('-') {
            return Err(unknown("a revision cannot start with `-`"));
        }
        let spec = format!("{rev}^{{commit}}");
        let out = git(
            &self.root,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
        )?;
        let hash = text(&out.stdout);
        if !out.status.success() || hash.is_empty() {
            return Err(unknown(
                "git rev-parse cannot resolve it to a commit in this repository",
            ));
        }
        Ok(hash)
    }

    /// The commits after `good` up to and including `bad` on `bad`'s first-parent line,
    /// oldest first. `good` must be an ancestor of `bad` and differ from it.
    pub fn range(&self, good: &Commit, bad: &Commit) -> Result<Vec<Commit>, BisectError> {
        if good.commit == bad.commit {
            return Err(BisectError::EmptyRange {
                commit: good.commit.clone(),
            });
        }
        let out = git(
            &self.root,
            &["merge-base", "--is-ancestor", &good.commit, &bad.commit],
        )?;
        match out.status.code() {
            Some(0) => {}
            Some(1) => {
                return Err(BisectError::NotAncestor {
                    good: good.clone(),
                    bad: bad.clone(),
                });
            }
            _ => {
                return Err(GateError::Git {
                    action: "check that --good is an ancestor of --bad".into(),
                    detail: text(&out.stderr),
                }
                .into());
            }
        }
        let span = format!("{}..{}", good.commit, bad.commit);
        let out = git(
            &self.root,
            &[
                "log",
                "--first-parent",
                "--reverse",
                "--format=%H%x09%s",
                &span,
            ],
        )?;
        if !out.status.success() {
            return Err(GateError::Git {
                action: format!("list the first-parent history {span}"),
                detail: text(&out.stderr),
            }
            .into());
        }
        let commits: Vec<Commit> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let (hash, subject) = line.split_once('\t').unwrap_or((line, ""));
                (!hash.is_empty()).then(|| Commit {
                    commit: hash.to_string(),
                    subject: subject.to_string(),
                })
            })
            .collect();
        // `--is-ancestor` said yes, so the walk from `bad` reaches `good`'s history and
        // ends at `bad` itself.
        if commits.last().map(|c| &c.commit) != Some(&bad.commit) {
            return Err(GateError::Git {
                action: format!("list the first-parent history {span}"),
                detail: "the list does not end at --bad".into(),
            }
            .into());
        }
        Ok(commits)
    }

    /// `commit` with its subject line.
    pub fn commit(&self, hash: &str) -> Result<Commit, BisectError> {
        let out = git(&self.root, &["log", "-1", "--format=%s", hash])?;
        if !out.status.success() {
            return Err(GateError::Git {
                action: format!("read the subject of {hash}"),
                detail: text(&out.stderr),
            }
            .into());
        }
        Ok(Commit {
            commit: hash.to_string(),
            subject: text(&out.stdout),
        })
    }
}
