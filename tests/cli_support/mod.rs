//! Argument lists of `analyze-trends` commands that several test files run, each test file
//! with its own way of starting the binary and reading what it left.

use std::path::Path;

/// `record` of the Criterion tree `tree` into `results`, then `extra`.
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
