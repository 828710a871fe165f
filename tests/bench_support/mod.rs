//! The bench executables the tests drive directly, as `cargo bench` builds them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The bench executable of `target`, built (or found up to date) by cargo in the bench
/// profile, under the same target directory as the calling test.
pub fn bench_executable(target: &str) -> PathBuf {
    let build = Command::new(env!("CARGO"))
        .args([
            "bench",
            "--no-run",
            "--message-format=json",
            "--bench",
            target,
        ])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .expect("running cargo");
    assert!(
        build.status.success(),
        "building the {target} bench: {}",
        String::from_utf8_lossy(&build.stderr)
    );
    String::from_utf8_lossy(&build.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == target)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo names the {target} bench executable"))
}

/// A finished command's status, stdout and stderr, for an assertion's message.
pub fn output_text(output: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
