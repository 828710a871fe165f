//! Argument lists of `analyze-trends` commands that several test files run, each test file
//! with its own way of starting the binary and reading what it left.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `record` of the Criterion tree `tree` into `results`, then `extra`.
#[allow(dead_code)]
pub fn record_args<'a>(tree: &'a Path, results: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "record",
        "--criterion-dir",
        tree.to_str().expect("a UTF-8 tree path"),
        "--results",
        results.to_str().expect("a UTF-8 results path"),
    ];
    args.extend(extra);
    args
}

/// `compare base cand` of the Criterion tree `tree` (its baselines `base` and `cand`), then
/// `extra`.
#[allow(dead_code)]
pub fn compare_args<'a>(
    base: &'a str,
    cand: &'a str,
    tree: &'a Path,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let tree = tree.to_str().expect("a UTF-8 tree path");
    let mut args = vec!["compare", base, cand, "--criterion-dir", tree];
    args.extend(extra);
    args
}

/// Starts every command at once, each one's stdout dropped and its stderr kept for a failure
/// message, and waits for them all: their outputs, in order.
#[allow(dead_code)]
pub fn run_at_once(commands: impl IntoIterator<Item = Command>) -> Vec<Output> {
    let children: Vec<_> = commands
        .into_iter()
        .map(|mut command| {
            command
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary starts")
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().expect("the binary runs"))
        .collect()
}
