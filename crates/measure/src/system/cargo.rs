//! The `cargo` that stackbench runs to build bench targets (validate's runner, `setup`, the
//! gate), with the variables cargo sets for the package it is running taken out.
//!
//! Run from `cargo run`, `cargo test` or a bench target, stackbench inherits
//! `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME` and the rest of its own package's variables. A
//! nested cargo passes them on to build scripts' change tracking: `ring` (under rustls, in
//! the store's HTTP client) declares `rerun-if-env-changed=CARGO_MANIFEST_DIR`, so a build
//! started from inside cargo and one started from a shell each found the other's build of
//! ring stale and recompiled it and every crate above it (about 150 s on a 2-core VM, twice
//! per CI run). Without these variables the nested build sees what a shell would.

use std::ffi::OsString;
use std::process::Command;

/// The variables cargo sets for the package it runs, by name (`run_benchmarks.sh` unsets the
/// same ones; `tests/structure.rs` checks that it names each).
pub const RUNNING_PACKAGE_VARIABLES: &[&str] = &[
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Whether `name` is one of the variables cargo sets for the package it runs (and never a
/// user's setting such as `CARGO_TARGET_DIR`, `CARGO_HOME` or `CARGO_BUILD_JOBS`).
pub fn set_for_a_running_package(name: &str) -> bool {
    RUNNING_PACKAGE_VARIABLES.contains(&name)
        || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

/// `$CARGO` (the cargo that started us, if any), else `cargo` on `PATH`, with the running
/// package's variables removed from its environment.
pub fn command() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_for_a_running_package) {
            command.env_remove::<OsString>(name);
        }
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_packages_variables_go_and_the_users_settings_stay() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_EXE_stackbench",
            "CARGO_TARGET_TMPDIR",
            "OUT_DIR",
        ] {
            assert!(set_for_a_running_package(name), "{name}");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_JOBS",
            "CARGO_NET_OFFLINE",
            "CARGO_PROFILE_BENCH_DEBUG",
            "RUSTFLAGS",
        ] {
            assert!(!set_for_a_running_package(name), "{name}");
        }
    }

    #[test]
    fn the_command_removes_what_this_test_process_was_given() {
        // `cargo test` sets CARGO_MANIFEST_DIR for this process: the command must drop it.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let command = command();
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        assert!(
            removed.iter().any(|n| n == "CARGO_MANIFEST_DIR"),
            "{removed:?}"
        );
        assert!(removed.iter().any(|n| n == "CARGO_PKG_NAME"), "{removed:?}");
    }
}
