//! Whether Linux perf can record here, for the tests that profile for real: missing perf
//! skips with a message (a failure under `STACKBENCH_REQUIRE_TOOLS=1`, which ci/test.sh sets
//! after installing `linux-perf`); perf present but refused by `kernel.perf_event_paranoid`
//! is said with the setting's value and perf's own words, and is a failure under
//! `STACKBENCH_REQUIRE_TOOLS=1`, so CI never counts a profile that did not run as a pass.

use std::path::Path;
use std::process::Command;

/// `true` when perf can record a process here; `false` after printing `SKIPPED: <why>`.
/// Panics with the reason where `STACKBENCH_REQUIRE_TOOLS=1` requires it to run.
pub fn perf_can_record(scratch: &Path) -> bool {
    let required = std::env::var("STACKBENCH_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
    let why = match Command::new("perf")
        .args(["record", "-o"])
        .arg(scratch.join("probe.perf.data"))
        .args(["--", "true"])
        .output()
    {
        Err(e) => format!("perf is not installed (the Debian package linux-perf): {e}"),
        Ok(out) if out.status.success() => return true,
        Ok(out) => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|e| format!("unreadable ({e})"));
            format!(
                "perf cannot record here: kernel.perf_event_paranoid is {paranoid} \
                 (/proc/sys/kernel/perf_event_paranoid); perf said: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
        }
    };
    assert!(!required, "{why}");
    eprintln!("SKIPPED: {why}");
    false
}

/// The hottest symbols `perf report` names in `profile` (its first `limit` `[.]` lines).
pub fn top_symbols(profile: &Path, limit: usize) -> Vec<String> {
    let read = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "symbol",
            "-i",
        ])
        .arg(profile)
        .output()
        .expect("running perf report");
    assert!(
        read.status.success(),
        "perf report -i {}: {}",
        profile.display(),
        String::from_utf8_lossy(&read.stderr)
    );
    String::from_utf8_lossy(&read.stdout)
        .lines()
        .filter(|l| l.contains("[.]"))
        .take(limit)
        .map(str::to_owned)
        .collect()
}
