//! `analyze-trends bisect`: a range with no commit in it (`--good` and `--bad` the same
//! commit) has nothing to judge, so it is bad input naming the commit, never a pass or an
//! empty search; nothing is built or written.

use super::support::{ANALYZE_TRENDS, run};
use std::process::Command;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn an_empty_range_is_bad_input_naming_the_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("README"), "one commit\n").unwrap();
    git(repo, &["add", "-A"]);
    git(
        repo,
        &[
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "only",
        ],
    );
    let head = git(repo, &["rev-parse", "HEAD"]);
    let out = run(
        ANALYZE_TRENDS,
        &["bisect", "--good", "HEAD", "--bad", &head[..10]],
        repo,
    );
    assert_eq!(out.code, Some(2), "{}", out.text());
    assert!(out.stderr.contains(&head), "{}", out.stderr);
    assert!(out.stderr.contains("no commit to judge"), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(!repo.join("target").exists(), "nothing is written");
}
