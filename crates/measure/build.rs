//! Puts the Cargo.lock this crate is built with into OUT_DIR, for the counter (the Criterion
//! version the bench executables link, `harness::counting`): the workspace's lock in a
//! checkout, the package's own in a packaged crate (`cargo package` includes it), whichever
//! is nearest above the manifest.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let lock = manifest
        .ancestors()
        .map(|dir| dir.join("Cargo.lock"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("no Cargo.lock in or above {}", manifest.display()));
    println!("cargo:rerun-if-changed={}", lock.display());
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets it")).join("Cargo.lock");
    std::fs::copy(&lock, &out)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", lock.display(), out.display()));
}
