//! The shape of the crate, checked: the family table agrees with the places that must still
//! name a family by hand (the bench targets in `Cargo.toml` and `benches/`, the list the
//! runner script and the Slurm fleet read from Cargo.toml, CI's bench loop), and no module imports from a module above it on the path of
//! one number (ARCHITECTURE.md), so the circles that were mended stay mended.

use stackbench::workload::family::TARGETS;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn table() -> Vec<String> {
    TARGETS.iter().map(|t| t.to_string()).collect()
}

/// The words of a shell list such as `for target in gemm memory_bandwidth ...; do`.
fn shell_list(text: &str, start: &str, end: char) -> Vec<String> {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in the script"))
        + start.len();
    let rest = &text[from..];
    let list = &rest[..rest.find(end).unwrap_or(rest.len())];
    list.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn every_family_has_its_bench_target_and_every_bench_target_a_family() {
    let manifest: toml::Value = toml::from_str(&read("Cargo.toml")).expect("Cargo.toml parses");
    let benches: Vec<String> = manifest["bench"]
        .as_array()
        .expect("[[bench]] entries")
        .iter()
        .map(|b| b["name"].as_str().expect("a bench name").to_owned())
        .collect();
    assert_eq!(
        benches,
        table(),
        "Cargo.toml's [[bench]] against the family table"
    );
    let mut files: Vec<String> = std::fs::read_dir(root().join("benches"))
        .expect("benches/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".rs").map(str::to_owned))
        .collect();
    files.sort();
    let mut expected = table();
    expected.sort();
    assert_eq!(files, expected, "benches/*.rs against the family table");
}

/// The runner script and the Slurm fleet's submit.sh take their targets from
/// `ci/bench_targets.sh`, which reads Cargo.toml: run it, and check that both scripts use it
/// rather than a list of their own.
#[test]
fn the_runner_script_and_ci_run_every_family_in_the_table_order() {
    let listed = std::process::Command::new("bash")
        .args(["-c", ". ci/bench_targets.sh && bench_targets ."])
        .current_dir(root())
        .output()
        .expect("bash runs ci/bench_targets.sh");
    assert!(listed.status.success(), "{listed:?}");
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        names,
        table(),
        "ci/bench_targets.sh against the family table"
    );
    for script in ["run_benchmarks.sh", "ci/slurm/submit.sh"] {
        let text = read(script);
        assert!(
            text.contains("bench_targets.sh\""),
            "{script} does not source ci/bench_targets.sh"
        );
        assert!(
            text.contains("< <(bench_targets "),
            "{script} does not call bench_targets"
        );
        assert!(
            !text.contains("ALL_TARGETS=("),
            "{script} keeps a list of its own"
        );
    }
    let ci = read("ci/test.sh");
    assert_eq!(shell_list(&ci, "for target in ", ';'), table());
}

/// The floors of the crate, lowest first. A module may import from its own floor or below,
/// never above. A new top-level module needs its floor here.
const FLOORS: &[&[&str]] = &[
    // Plumbing and definitions that depend on nothing else of the crate.
    &["files", "units", "workload"],
    &["stats"],
    &["system"],
    &["backend"],
    // On-disk formats: Criterion's, and stackbench's own beside it.
    &["criterion_output"],
    &["sidecar"],
    &["config", "components"],
    &["harness"],
    &["results"],
    &["analysis"],
    &["view"],
    &["dashboard"],
    &["report"],
    &["gate", "validate"],
    // The web dashboard: pages and API over the results store and the report models.
    &["serve"],
    &["cli"],
];

/// Edges that still run upward, each with the work that removes it. The test fails when one
/// of them is gone, so the list shrinks as they are mended.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[
    (
        "system",
        "backend",
        "the system probe asks each backend for its devices, while backends read peak tables and the PCIe link from system",
    ),
    (
        "harness",
        "results",
        "the progress events' clock (results::now_unix_ms) belongs below both",
    ),
    (
        "components",
        "harness",
        "the component suite runs inside the harness's loop",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src/").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::<module>` a top-level module names, with one file that names it.
fn imports() -> BTreeMap<(String, String), PathBuf> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src/");
        let Some(from) = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|c| c.trim_end_matches(".rs").to_owned())
        else {
            continue;
        };
        if from == "lib" || from == "bin" {
            continue;
        }
        let source = std::fs::read_to_string(&file).expect("readable source");
        // Code only: a comment that points the reader elsewhere is not a dependency.
        let text: String = source
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in text.match_indices("crate::") {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `stackbench::`, `other_crate::`
            }
            let name: String = text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != from {
                edges
                    .entry((from.clone(), name))
                    .or_insert_with(|| relative.to_path_buf());
            }
        }
    }
    edges
}

fn floor(module: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&module))
        .unwrap_or_else(|| panic!("src/{module} has no floor: add it to FLOORS in {}", file!()))
}

#[test]
fn no_module_imports_from_a_module_above_it() {
    let mut upward = BTreeSet::new();
    let mut unexpected = Vec::new();
    for ((from, to), file) in imports() {
        if floor(&to) <= floor(&from) {
            continue;
        }
        upward.insert((from.clone(), to.clone()));
        if !KNOWN_UPWARD.iter().any(|(f, t, _)| *f == from && *t == to) {
            unexpected.push(format!("{from} → {to} (src/{})", file.display()));
        }
    }
    assert!(
        unexpected.is_empty(),
        "imports that run up the path of one number:\n{}",
        unexpected.join("\n")
    );
    let mended: Vec<_> = KNOWN_UPWARD
        .iter()
        .filter(|(f, t, _)| !upward.contains(&(f.to_string(), t.to_string())))
        .collect();
    assert!(
        mended.is_empty(),
        "mended, so remove from KNOWN_UPWARD: {mended:?}"
    );
}

#[test]
fn the_readers_and_the_view_models_do_not_reach_into_the_dashboard_or_the_harness() {
    // The specific back edges this layout removed, named so a regression reads plainly.
    for ((from, to), file) in imports() {
        let back = matches!(
            (from.as_str(), to.as_str()),
            (
                "results" | "analysis" | "criterion_output" | "view",
                "dashboard"
            ) | (
                "results" | "analysis" | "criterion_output" | "sidecar",
                "harness"
            ) | ("criterion_output" | "sidecar", "results")
        );
        assert!(!back, "{from} imports {to} (src/{})", file.display());
    }
}
