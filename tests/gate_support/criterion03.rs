//! A generated Criterion 0.3 crate in a temporary git repository, built offline: the oldest
//! Criterion series the gate supports (README, "Criterion versions"). About 60 benchmarks,
//! among them routines of about 1 ns (`black_box(1u8)`), the kind that sit at the timer's
//! resolution; tag `base`, and tag `docs`, a commit that changes only doc comments.
//!
//! Criterion 0.3 is not in every cargo cache: `ci/test.sh` fetches it through
//! `tests/fixtures/criterion-0.3-fetch/Cargo.toml`, and [`fetched`] tells a test to skip
//! without it, or fails it when `STACKBENCH_REQUIRE_TOOLS=1`. Other tests (counting mode,
//! below-floor) can build the same crate through [`create`] and their own assertions.

#![allow(dead_code)]

pub use super::repo::prebuild;
use super::repo::{git, write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The manifest `ci/test.sh` fetches; its `Cargo.lock` pins what the generated crate uses.
pub fn fetch_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.3-fetch/Cargo.toml")
}

/// Whether Criterion 0.3 and its dependencies are in cargo's cache (an offline fetch
/// succeeds). A miss skips the test with a message, or fails it under
/// `STACKBENCH_REQUIRE_TOOLS=1`, the rule of `tests/tool_support`.
pub fn fetched() -> bool {
    let present = Command::new("cargo")
        .args(["fetch", "--offline", "--locked", "--manifest-path"])
        .arg(fetch_manifest())
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        let required = std::env::var("STACKBENCH_REQUIRE_TOOLS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "Criterion 0.3 is required (STACKBENCH_REQUIRE_TOOLS=1) but not in cargo's cache: \
             cargo fetch --manifest-path {}",
            fetch_manifest().display()
        );
        eprintln!(
            "SKIPPED: Criterion 0.3 is not in cargo's cache (ci/test.sh fetches it: cargo fetch \
             --manifest-path {})",
            fetch_manifest().display()
        );
    }
    present
}

/// The ~1 ns routines: each returns a constant through `black_box`.
pub const TINY: &[(&str, &str)] = &[
    ("tiny/u8", "black_box(1u8)"),
    ("tiny/u16", "black_box(1u16)"),
    ("tiny/u32", "black_box(1u32)"),
    ("tiny/u64", "black_box(1u64)"),
    ("tiny/bool", "black_box(true)"),
    ("tiny/char", "black_box('a')"),
];

/// Sizes of the parameterised groups: 6 tiny + 3 groups × 18 sizes = 60 benchmarks.
pub const SIZES: &[u64] = &[
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
];
pub const GROUPS: &[&str] = &["sum", "xor", "bytes"];

/// Every benchmark id the crate has.
pub fn ids() -> Vec<String> {
    let mut ids: Vec<String> = TINY.iter().map(|(id, _)| id.to_string()).collect();
    for group in GROUPS {
        ids.extend(SIZES.iter().map(|n| format!("{group}/{n}")));
    }
    ids
}

const MANIFEST: &str = r#"[package]
name = "gen03"
version = "0.1.0"
edition = "2018"

[lib]
bench = false

[dev-dependencies]
criterion = "0.3"

[[bench]]
name = "gen"
harness = false
"#;

const LIB: &str = r#"/// Adds the numbers below `n`.
pub fn sum(n: u64) -> u64 {
    (0..n).fold(0, |a, x| a.wrapping_add(x))
}

/// Xors the numbers below `n`.
pub fn xor(n: u64) -> u64 {
    (0..n).fold(0, |a, x| a ^ x)
}

/// Counts the set bits of `n` bytes.
pub fn bytes(n: u64) -> u32 {
    (0..n).map(|x| (x as u8).count_ones()).sum()
}
"#;

/// The bench file: short Criterion timing set in code (0.3 takes whole seconds on its
/// command line), so the gate's test passes only `--sample-size`.
fn bench_source() -> String {
    let mut tiny = String::new();
    for (id, body) in TINY {
        tiny.push_str(&format!(
            "    c.bench_function({id:?}, |b| b.iter(|| {body}));\n"
        ));
    }
    let mut groups = String::new();
    for group in GROUPS {
        groups.push_str(&format!(
            "    let mut group = c.benchmark_group({group:?});\n    for n in SIZES.iter() {{\n        \
             group.bench_with_input(BenchmarkId::from_parameter(n), n, |b, &n| {{\n            \
             b.iter(|| gen03::{group}(black_box(n)))\n        }});\n    }}\n    group.finish();\n"
        ));
    }
    let sizes: Vec<String> = SIZES.iter().map(u64::to_string).collect();
    format!(
        "use criterion::{{black_box, criterion_group, criterion_main, BenchmarkId, Criterion}};\n\
         use std::time::Duration;\n\n\
         /// The sizes every group runs at.\n\
         const SIZES: &[u64] = &[{}];\n\n\
         /// Every benchmark of the crate.\n\
         fn benches(c: &mut Criterion) {{\n{tiny}{groups}}}\n\n\
         fn config() -> Criterion {{\n    Criterion::default()\n        \
         .warm_up_time(Duration::from_millis(50))\n        \
         .measurement_time(Duration::from_millis(100))\n        \
         .nresamples(1000)\n}}\n\n\
         criterion_group! {{\n    name = group;\n    config = config();\n    targets = benches\n}}\n\
         criterion_main!(group);\n",
        sizes.join(", ")
    )
}

/// Writes the crate into `repo` (a new directory), commits it as tag `base`, then a commit
/// that rewords doc comments only as tag `docs`, and leaves `base` checked out. The lock
/// is the fetch manifest's, so everything resolves offline.
pub fn create(repo: &Path) {
    write(&repo.join("Cargo.toml"), MANIFEST);
    write(&repo.join("src/lib.rs"), LIB);
    write(&repo.join("benches/gen.rs"), &bench_source());
    write(&repo.join(".gitignore"), "target\n");
    let lock = fetch_manifest().with_file_name("Cargo.lock");
    std::fs::copy(&lock, repo.join("Cargo.lock")).expect("copy the fetched lock");
    // Renames the lock's root package to this crate's, offline.
    let metadata = Command::new("cargo")
        .args(["metadata", "--offline", "--format-version", "1"])
        .current_dir(repo)
        .output()
        .expect("cargo runs");
    assert!(metadata.status.success(), "offline lock: {metadata:?}");
    git(repo, &["init", "-q"]);
    for (k, v) in [("user.email", "gate@test"), ("user.name", "gate test")] {
        git(repo, &["config", k, v]);
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "base"]);
    git(repo, &["tag", "base"]);
    let lib = LIB
        .replace(
            "/// Adds the numbers below `n`.",
            "/// The sum of 0..n, wrapping.",
        )
        .replace("/// Xors the numbers below `n`.", "/// The xor of 0..n.");
    write(&repo.join("src/lib.rs"), &lib);
    let bench = bench_source().replace(
        "/// Every benchmark of the crate.",
        "/// Every benchmark of this crate, in one group.",
    );
    write(&repo.join("benches/gen.rs"), &bench);
    git(repo, &["commit", "-qam", "docs only"]);
    git(repo, &["tag", "docs"]);
    git(repo, &["checkout", "-q", "base"]);
}
