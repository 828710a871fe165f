//! The shape of the workspace, checked: the family table agrees with the places that must
//! still name a family by hand (the bench targets in `crates/benches/Cargo.toml` and
//! `crates/benches/benches/`, the list the runner script and the Slurm fleet read from that
//! manifest, CI's bench loop); the member crates are the floors of docs/ARCHITECTURE.md, in
//! order, as Cargo resolves them; the bench targets build none of the upper floors' heavy
//! dependencies; and inside each crate no module imports from a module above it, so the
//! circles that were mended stay mended.

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
    let manifest: toml::Value =
        toml::from_str(&read("crates/benches/Cargo.toml")).expect("the benches' Cargo.toml parses");
    let benches: Vec<String> = manifest["bench"]
        .as_array()
        .expect("[[bench]] entries")
        .iter()
        .map(|b| b["name"].as_str().expect("a bench name").to_owned())
        .collect();
    assert_eq!(
        benches,
        table(),
        "crates/benches/Cargo.toml's [[bench]] against the family table"
    );
    let mut files: Vec<String> = std::fs::read_dir(root().join("crates/benches/benches"))
        .expect("crates/benches/benches/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".rs").map(str::to_owned))
        .collect();
    files.sort();
    let mut expected = table();
    expected.sort();
    assert_eq!(
        files, expected,
        "crates/benches/benches/*.rs against the family table"
    );
}

/// The runner script and the Slurm fleet's submit.sh take their targets from
/// `ci/bench_targets.sh`, which reads crates/benches/Cargo.toml: run it, and check that both scripts use it
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

/// The workspace's member crates, lowest floor first (docs/ARCHITECTURE.md). A member may
/// depend only on members of a lower floor; Cargo refuses a circle, and this order keeps a
/// new edge from quietly turning a floor upside down.
const CRATE_FLOORS: &[&str] = &[
    "stackbench-model",
    "stackbench-measure",
    "stackbench-benches",
    "stackbench",
];

/// What the upper floors bring that measuring never needs: the web server and its runtime,
/// the database drivers, the HTTP client, the terminal UI and the gate's progress bar.
const NOT_FOR_BENCHES: &[&str] = &[
    "axum",
    "tokio",
    "hyper",
    "rusqlite",
    "postgres",
    "ureq",
    "ratatui",
    "crossterm",
    "indicatif",
    "stackbench",
];

/// `cargo metadata` of this workspace (offline: the lock file already names everything).
fn metadata() -> serde_json::Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Package id to name, and each resolved package's dependencies that are built into it
/// (normal and build dependencies; dev-dependencies build only its tests).
fn resolved(meta: &serde_json::Value) -> (BTreeMap<String, String>, BTreeMap<String, Vec<String>>) {
    let names = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_owned(),
                p["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let deps = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve.nodes")
        .iter()
        .map(|node| {
            let built: Vec<String> = node["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|dep| {
                    dep["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds")
                        .iter()
                        .any(|k| k["kind"].is_null() || k["kind"] == "build")
                })
                .map(|dep| dep["pkg"].as_str().unwrap().to_owned())
                .collect();
            (node["id"].as_str().unwrap().to_owned(), built)
        })
        .collect();
    (names, deps)
}

#[test]
fn the_member_crates_are_floors_and_none_depends_on_one_above_it() {
    let meta = metadata();
    let (names, deps) = resolved(&meta);
    let members: Vec<String> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .map(|id| id.as_str().unwrap().to_owned())
        .collect();
    let mut listed: Vec<&str> = members.iter().map(|id| names[id].as_str()).collect();
    listed.sort();
    let mut expected = CRATE_FLOORS.to_vec();
    expected.sort();
    assert_eq!(
        listed, expected,
        "a new member crate needs its floor in CRATE_FLOORS"
    );
    let floor = |name: &str| CRATE_FLOORS.iter().position(|c| *c == name);
    for id in &members {
        let from = names[id].as_str();
        for dep in &deps[id] {
            let Some(to_floor) = floor(&names[dep]) else {
                continue; // not a member
            };
            assert!(
                to_floor < floor(from).unwrap(),
                "{from} depends on {}, which is not on a floor below it",
                names[dep]
            );
        }
    }
}

#[test]
fn the_bench_targets_build_none_of_the_upper_floors() {
    let meta = metadata();
    let (names, deps) = resolved(&meta);
    let benches = names
        .iter()
        .find(|(_, name)| name.as_str() == "stackbench-benches")
        .map(|(id, _)| id.clone())
        .expect("the stackbench-benches member");
    let mut seen = BTreeSet::new();
    let mut stack = vec![benches];
    while let Some(id) = stack.pop() {
        for dep in &deps[&id] {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    let pulled: Vec<&str> = seen
        .iter()
        .map(|id| names[id].as_str())
        .filter(|name| NOT_FOR_BENCHES.contains(name))
        .collect();
    assert!(
        pulled.is_empty(),
        "`cargo bench` would build {pulled:?}: keep them above the measuring floors"
    );
    // A check that cannot fail is no check: the closure must hold what a bench does need.
    for needed in [
        "criterion",
        "stackbench-measure",
        "stackbench-model",
        "cudarc",
    ] {
        assert!(
            seen.iter().any(|id| names[id] == needed),
            "the benches' closure lacks {needed}: the walk above read nothing"
        );
    }
}

/// The floors of the modules inside each crate, lowest first. A module may import from its
/// own floor or below, never above. A new top-level module needs its floor here.
const MODULE_FLOORS: &[(&str, &[&[&str]])] = &[
    (
        "crates/model/src",
        &[&["files", "units", "time", "workload"], &["stats"]],
    ),
    (
        "crates/measure/src",
        &[
            &["system"],
            &["backend"],
            // Each native family: its ids and axes, and how each backend opens it.
            &["family"],
            // On-disk formats: Criterion's, and stackbench's own beside it.
            &["criterion_output"],
            &["sidecar"],
            &["config", "components"],
            &["harness"],
        ],
    ),
    (
        "src",
        &[
            &["results"],
            &["analysis"],
            &["view"],
            &["dashboard"],
            &["report"],
            &["gate", "validate"],
            // The web dashboard: pages and API over the results store and the report models.
            &["serve"],
            &["cli"],
        ],
    ),
];

/// Edges that still run upward inside a crate, each with the work that removes it. The test
/// fails when one of them is gone, so the list shrinks as they are mended.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[
    (
        "system",
        "backend",
        "the system probe asks each backend for its devices, while backends read peak tables and the PCIe link from system",
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

/// Every `crate::<module>` a top-level module of the crate at `src` names, with one file
/// that names it. Modules a crate re-exports from the floor below resolve to that crate and
/// are skipped: Cargo already keeps those edges pointing down.
fn imports(src: &str) -> BTreeMap<(String, String), PathBuf> {
    let src = root().join(src);
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

#[test]
fn no_module_imports_from_a_module_above_it() {
    let mut upward = BTreeSet::new();
    let mut unexpected = Vec::new();
    let mut edges_read = 0;
    for (src, floors) in MODULE_FLOORS {
        let floor = |module: &str| {
            floors
                .iter()
                .position(|f| f.contains(&module))
                .unwrap_or_else(|| {
                    panic!(
                        "{src}/{module} has no floor: add it to MODULE_FLOORS in {}",
                        file!()
                    )
                })
        };
        let own = |module: &str| {
            root().join(src).join(module).exists()
                || root().join(src).join(format!("{module}.rs")).exists()
        };
        for ((from, to), file) in imports(src) {
            if !own(&to) {
                continue; // re-exported from a lower crate
            }
            edges_read += 1;
            if floor(&to) <= floor(&from) {
                continue;
            }
            upward.insert((from.clone(), to.clone()));
            if !KNOWN_UPWARD.iter().any(|(f, t, _)| *f == from && *t == to) {
                unexpected.push(format!("{from} → {to} ({src}/{})", file.display()));
            }
        }
    }
    assert!(
        edges_read > 20,
        "read only {edges_read} imports: the walk found no sources"
    );
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
    // Across crates Cargo forbids them outright; inside the top crate they are checked here.
    for ((from, to), file) in imports("src") {
        let back = matches!(
            (from.as_str(), to.as_str()),
            (
                "results" | "analysis" | "view",
                "dashboard" | "gate" | "report" | "serve" | "cli"
            )
        );
        assert!(!back, "{from} imports {to} (src/{})", file.display());
    }
}
