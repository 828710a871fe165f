//! Whether a system tool the tests drive (tmux, chromium, valgrind) is here: a missing one
//! skips the calling test with a message, or fails it when `STACKBENCH_REQUIRE_TOOLS=1`
//! (ci/test.sh sets it and installs the tools), so CI never counts a skip as a pass.

/// Whether `tool` runs (`tool <version_flag>`).
pub fn tool_present(tool: &str, version_flag: &str) -> bool {
    let present = std::process::Command::new(tool)
        .arg(version_flag)
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        skipping(&format!("{tool} is not installed"));
    }
    present
}

/// Says the calling test skips because `why`, or fails it when `STACKBENCH_REQUIRE_TOOLS=1`.
pub fn skipping(why: &str) {
    let required = std::env::var("STACKBENCH_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
    assert!(!required, "required (STACKBENCH_REQUIRE_TOOLS=1): {why}");
    eprintln!("SKIPPED: {why} (ci/test.sh installs it)");
}
