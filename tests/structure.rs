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
    // CI's pass over every bench target (ci/test.sh runs it beside the untimed tests).
    let ci = read("ci/bench_pass.sh");
    assert_eq!(shell_list(&ci, "for target in ", ';'), table());
}

/// The workspace's member crates by floor, lowest first (docs/ARCHITECTURE.md). A member may
/// depend only on members of a lower floor, never on one of its own: the gate, validate and
/// the server stand side by side, and none of them may lean on another. Cargo refuses a
/// circle; these floors keep a new edge from quietly turning one upside down.
const CRATE_FLOORS: &[&[&str]] = &[
    &["stackbench-model"],
    &["stackbench-measure"],
    &["stackbench-benches"],
    &["stackbench-store"],
    &["stackbench-analysis"],
    &["stackbench-dashboard"],
    &["stackbench-report"],
    &["stackbench-gate", "stackbench-validate", "stackbench-serve"],
    &["stackbench"],
];

/// What the upper floors bring that measuring never needs: the web server and its runtime,
/// the database drivers, the HTTP client, the terminal UI, the gate's progress bar, and the
/// store and analysis crates themselves.
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
    "stackbench-store",
    "stackbench-analysis",
    "stackbench-dashboard",
    "stackbench-report",
    "stackbench-gate",
    "stackbench-validate",
    "stackbench-serve",
    "stackbench",
];

/// The stdout of `cargo ARGS` in the workspace root, which must succeed.
fn cargo_in_root(args: &[&str]) -> Vec<u8> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(args)
        .current_dir(root())
        .output()
        .unwrap_or_else(|e| panic!("cargo {args:?}: {e}"));
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `cargo metadata` of this workspace (offline: the lock file already names everything).
fn metadata() -> serde_json::Value {
    serde_json::from_slice(&cargo_in_root(&[
        "metadata",
        "--format-version",
        "1",
        "--offline",
    ]))
    .expect("cargo metadata prints JSON")
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
    let mut expected: Vec<&str> = CRATE_FLOORS.concat();
    expected.sort();
    assert_eq!(
        listed, expected,
        "a new member crate needs its floor in CRATE_FLOORS"
    );
    let floor = |name: &str| CRATE_FLOORS.iter().position(|f| f.contains(&name));
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

/// The names of every package built into the member `member` (its normal and build
/// dependencies, transitively).
fn built_into(member: &str) -> BTreeSet<String> {
    let meta = metadata();
    let (names, deps) = resolved(&meta);
    let start = names
        .iter()
        .find(|(_, name)| name.as_str() == member)
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("the {member} member"));
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(id) = stack.pop() {
        for dep in &deps[&id] {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen.iter().map(|id| names[id].clone()).collect()
}

#[test]
fn the_bench_targets_build_none_of_the_upper_floors() {
    let seen = built_into("stackbench-benches");
    let pulled: Vec<&String> = seen
        .iter()
        .filter(|name| NOT_FOR_BENCHES.contains(&name.as_str()))
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
            seen.contains(needed),
            "the benches' closure lacks {needed}: the walk above read nothing"
        );
    }
}

/// The store and the verdicts are read by the server, the dashboard and the gate, never
/// the other way round: neither builds the web server, the terminal UI or the progress bar.
/// (tokio is there: the sync `postgres` client runs tokio-postgres on a runtime of its own.)
#[test]
fn the_store_and_the_analysis_build_none_of_the_views() {
    for member in ["stackbench-store", "stackbench-analysis"] {
        let seen = built_into(member);
        let pulled: Vec<&str> = ["axum", "hyper", "ratatui", "crossterm", "indicatif"]
            .into_iter()
            .filter(|name| seen.contains(*name))
            .collect();
        assert!(pulled.is_empty(), "{member} builds {pulled:?}");
        assert!(
            seen.contains("rusqlite") && seen.contains("stackbench-measure"),
            "{member}'s closure lacks the store's driver: the walk above read nothing"
        );
    }
}

/// Each crate of the top floors builds the heavy parts it uses and no other's: only the server
/// builds the web server and its runtime's HTTP stack, and only the gate its progress bar.
/// A view that grew an import of the server, or a report that started drawing a bar, would
/// make every one of its users build them.
#[test]
fn each_upper_crate_builds_only_the_heavy_parts_it_uses() {
    let owners: &[(&str, &[&str])] = &[
        ("stackbench-serve", &["axum", "hyper"]),
        ("stackbench-gate", &["indicatif"]),
    ];
    for member in [
        "stackbench-dashboard",
        "stackbench-report",
        "stackbench-gate",
        "stackbench-validate",
        "stackbench-serve",
    ] {
        let seen = built_into(member);
        assert!(
            seen.contains("stackbench-analysis"),
            "{member}'s closure lacks the verdicts: the walk above read nothing"
        );
        for (owner, parts) in owners {
            for part in *parts {
                assert_eq!(
                    seen.contains(*part),
                    member == *owner,
                    "{member} {} {part}, which only {owner} should build",
                    if seen.contains(*part) {
                        "builds"
                    } else {
                        "lacks"
                    }
                );
            }
        }
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
            // The machine's facts (and what a device is), then the backends that read them,
            // then the probe that puts the two together.
            &["system"],
            &["backend"],
            &["probe"],
            // Each native family: its ids and axes, and how each backend opens it.
            &["family"],
            // On-disk formats: Criterion's, and stackbench's own beside it.
            &["criterion_output"],
            &["sidecar"],
            &["config"],
            &["harness"],
            // The Python components' suite runs inside the harness's loop.
            &["components"],
        ],
    ),
    // `results` and `analysis` are the crates stackbench-store and stackbench-analysis, below
    // the crates that follow: Cargo keeps those edges pointing down, and the circle check
    // below reads them.
    (
        "crates/dashboard/src",
        &[
            // The view model every report and page shares, then the terminal dashboard.
            &["view"],
            &["dashboard"],
        ],
    ),
    ("crates/report/src", &[&["report"]]),
    ("crates/gate/src", &[&["gate"]]),
    ("crates/validate/src", &[&["validate"]]),
    ("crates/serve/src", &[&["serve"]]),
    (
        "src",
        &[
            // The JSON Schemas generated from the documents' types.
            &["schemas"],
            &["cli"],
        ],
    ),
];

/// Edges that still run upward inside a crate, each with the work that removes it. The test
/// fails when one of them is gone, so the list shrinks as they are mended.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

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
    // Across crates Cargo forbids them outright (the readers, `results` and `analysis`, and
    // the reports, the gate, the server and the command lines are crates of their own);
    // inside the views' crate the one that is left to take is checked here.
    let edges = imports("crates/dashboard/src");
    assert!(
        edges.keys().any(|(from, _)| from == "view"),
        "read no import of view: the walk found no sources"
    );
    for ((from, to), file) in edges {
        let back = matches!((from.as_str(), to.as_str()), ("view", "dashboard"));
        assert!(
            !back,
            "{from} imports {to} (crates/dashboard/src/{})",
            file.display()
        );
    }
}

/// Import circles between files that remain, each with the work that removes it. The test
/// fails when one is gone, so the list shrinks as they are mended.
const KNOWN_CYCLES: &[(&[&str], &str)] = &[];

/// A crate's modules by path (`gate::rounds`), each with its file. `mod.rs` and `lib.rs`
/// name their folder's module.
fn module_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(src).ok()?.with_extension("");
            let mut path: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if path.first().is_some_and(|p| p == "bin") {
                return None;
            }
            if path.last().is_some_and(|p| p == "mod" || p == "lib") {
                path.pop();
            }
            Some((path, file))
        })
        .collect()
}

/// The code of a file without comments and without its trailing `#[cfg(test)] mod tests`
/// (a test may reach anywhere), with every `use a::{b, c::d}` group spelled out as
/// `a::b` and `a::c::d` so each path can be read on its own.
fn code_paths(source: &str) -> Vec<String> {
    let code = source
        .find("#[cfg(test)]\nmod tests")
        .map_or(source, |at| &source[..at]);
    let code: String = code
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = Vec::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|head| code_at(&bytes, i, head))
            .filter(|_| i == 0 || !(word(bytes[i - 1]) || bytes[i - 1] == ':'));
        let Some(_) = starts else {
            i += 1;
            continue;
        };
        // Read `head::a::b` up to the first character that is neither a word nor `::`.
        let mut j = i;
        while j < bytes.len() && (word(bytes[j]) || bytes[j] == ':') {
            j += 1;
        }
        let base: String = bytes[i..j].iter().collect();
        if j < bytes.len() && bytes[j] == '{' {
            let close = bytes[j..]
                .iter()
                .position(|c| *c == '}')
                .map_or(bytes.len(), |p| j + p);
            let group: String = bytes[j + 1..close].iter().collect();
            for part in group.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                paths.push(format!("{base}{part}"));
            }
            i = close;
        } else {
            paths.push(base);
            i = j;
        }
    }
    paths
}

fn code_at(text: &[char], at: usize, head: &str) -> bool {
    head.chars()
        .enumerate()
        .all(|(k, c)| text.get(at + k) == Some(&c))
}

/// The module a path names from module `me`: the longest prefix of the resolved path that
/// is one of the crate's files.
fn target_module(
    path: &str,
    me: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<Vec<String>> {
    let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    // `self` is the module itself: a folder's mod.rs names the folder, a file names itself.
    let mut base: Vec<String> = me.to_vec();
    match parts.first() {
        Some(&"crate") => {
            base.clear();
            parts.remove(0);
        }
        Some(&"self") => {
            parts.remove(0);
        }
        _ => {
            while parts.first() == Some(&"super") {
                base.pop()?;
                parts.remove(0);
            }
        }
    }
    base.extend(parts.iter().map(|p| p.to_string()));
    (0..=base.len())
        .rev()
        .map(|k| base[..k].to_vec())
        .find(|candidate| modules.contains_key(candidate))
}

/// Strongly connected groups of more than one module, each sorted, by Tarjan's algorithm.
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// The file-level import graph of one crate: module → the modules its code names, leaving
/// out a module's own ancestors and descendants (a folder's `mod.rs` is its facade: a file
/// naming an item its parent declares, or a parent naming its children, is containment,
/// not a circle between peers).
fn file_graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules = module_files(src);
    modules
        .iter()
        .map(|(me, file)| {
            let source = std::fs::read_to_string(file).expect("readable source");
            let targets = code_paths(&source)
                .iter()
                .filter_map(|path| target_module(path, me, &modules))
                .filter(|to| !to.starts_with(me) && !me.starts_with(to))
                .collect();
            (me.clone(), targets)
        })
        .collect()
}

#[test]
fn no_two_files_import_each_other_in_a_circle() {
    let mut found = Vec::new();
    for src in [
        "crates/model/src",
        "crates/measure/src",
        "crates/store/src",
        "crates/analysis/src",
        "crates/dashboard/src",
        "crates/report/src",
        "crates/gate/src",
        "crates/validate/src",
        "crates/serve/src",
        "src",
    ] {
        let graph = file_graph(&root().join(src));
        let edges: usize = graph.values().map(BTreeSet::len).sum();
        // Some crates' files mostly import the floors below them, not each other (the
        // validate crate's files four times today, the analysis crate's ten); a walk that
        // read nothing finds none.
        assert!(
            edges >= 3,
            "{src}: only {edges} imports read: the walk found no sources"
        );
        found.extend(circles(&graph));
    }
    let known: Vec<Vec<String>> = KNOWN_CYCLES
        .iter()
        .map(|(group, _)| group.iter().map(|m| m.to_string()).collect())
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    assert!(
        new.is_empty(),
        "files that import each other in a circle: {new:?}"
    );
    let mended: Vec<_> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        mended.is_empty(),
        "mended, so remove from KNOWN_CYCLES: {mended:?}"
    );
}

/// No two top-level modules of a crate import each other, directly or round a longer loop,
/// whether or not the floors above tell them apart (modules that share a floor, and the
/// crates with one floor, are covered here).
#[test]
fn no_two_modules_import_each_other_in_a_circle() {
    let mut found = Vec::new();
    let mut edges_read = 0;
    for (src, _) in MODULE_FLOORS.iter().chain(&[
        ("crates/store/src", &[] as &[&[&str]]),
        ("crates/analysis/src", &[]),
    ]) {
        let dir = root().join(src);
        let modules: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .map(|name| name.trim_end_matches(".rs").to_owned())
            .filter(|name| !matches!(name.as_str(), "lib" | "main" | "bin"))
            .collect();
        let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = modules
            .iter()
            .map(|m| (vec![m.clone()], BTreeSet::new()))
            .collect();
        for (from, to) in imports(src).into_keys() {
            if modules.contains(&from) && modules.contains(&to) {
                edges_read += 1;
                graph.entry(vec![from]).or_default().insert(vec![to]);
            }
        }
        found.extend(circles(&graph).into_iter().map(|c| format!("{src}: {c:?}")));
    }
    assert!(
        edges_read > 20,
        "read only {edges_read} imports between modules: the walk found no sources"
    );
    assert!(
        found.is_empty(),
        "modules that import each other in a circle:\n{}",
        found.join("\n")
    );
}

/// The circle finder itself, on a graph with one circle and one chain: a finder that
/// found nothing would pass the test above on any code.
#[test]
fn the_circle_finder_finds_a_planted_circle_and_only_it() {
    let m = |s: &str| s.split("::").map(str::to_owned).collect::<Vec<_>>();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    graph.insert(m("gate::calibrate"), [m("gate::rounds")].into());
    graph.insert(m("gate::rounds"), [m("gate::calibrate"), m("stats")].into());
    graph.insert(m("stats"), BTreeSet::new());
    assert_eq!(
        circles(&graph),
        vec![vec![
            "gate::calibrate".to_owned(),
            "gate::rounds".to_owned()
        ]]
    );
    let modules: BTreeMap<Vec<String>, PathBuf> =
        [m("gate"), m("gate::rounds"), m("gate::calibrate")]
            .into_iter()
            .map(|k| (k, PathBuf::new()))
            .collect();
    let paths = code_paths(
        "use super::{rounds::Collected, GateOptions};\nfn f() { crate::gate::calibrate::x(); }\n#[cfg(test)]\nmod tests { use crate::stats; }\n",
    );
    let targets: Vec<_> = paths
        .iter()
        .filter_map(|p| target_module(p, &m("gate::calibrate"), &modules))
        .collect();
    assert_eq!(
        targets,
        vec![m("gate::rounds"), m("gate"), m("gate::calibrate")]
    );
}

/// `ci/check_scripts.sh` (run by ci/test.sh over the repository) fails on a shell script
/// or Python file that does not parse, naming each, and passes the ones that do: the
/// check can fail, and finds scripts by extension and by their `#!` line.
#[test]
fn the_script_check_names_every_script_that_does_not_parse() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("ci/check_scripts.sh");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("scripts/good.sh", "echo ok\n");
    write("scripts/good.py", "print('ok')\n");
    write("ci/no_extension", "#!/usr/bin/env bash\nset -e\necho ok\n");
    write(
        "notes.txt",
        "if then fi (not a script: no extension, no #! line)\n",
    );
    let run = || {
        std::process::Command::new("bash")
            .arg(&script)
            .arg(dir.path())
            .output()
            .expect("bash runs the check")
    };
    let clean = run();
    let said = String::from_utf8_lossy(&clean.stdout).into_owned();
    assert_eq!(clean.status.code(), Some(0), "{said}");
    assert!(
        said.contains("2 shell scripts, 1 Python files; 0 broken"),
        "{said}"
    );

    write("ci/half_copy", "#!/bin/bash\nif true; then\n  echo one\n");
    write("scripts/noise_quality.sh", "for x in 1 2; do\n  echo $x\n");
    write("scripts/broken.py", "def f(:\n    pass\n");
    let broken = run();
    let err = String::from_utf8_lossy(&broken.stderr).into_owned();
    assert_eq!(broken.status.code(), Some(1), "{err}");
    for name in [
        "ci/half_copy",
        "scripts/noise_quality.sh",
        "scripts/broken.py",
    ] {
        assert!(
            err.contains(&format!("check_scripts: {name} does not")),
            "{name}: {err}"
        );
    }
    assert!(!err.contains("good"), "{err}");
    assert!(
        String::from_utf8_lossy(&broken.stdout).contains("; 3 broken"),
        "{:?}",
        broken.stdout
    );
}

/// `cargo tree` of `scope` over dependency `edges`, as package → the feature sets it is
/// resolved with (one per build context: a crate built for build scripts and proc macros
/// can differ from the same crate built for the target).
fn resolved_features(scope: &[&str], edges: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut args = vec!["tree"];
    args.extend_from_slice(scope);
    args.extend([
        "--offline",
        "-e",
        edges,
        "--prefix",
        "none",
        "-f",
        "{p}|{f}",
    ]);
    let out = cargo_in_root(&args);
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let Some((package, set)) = line.split_once('|') else {
            continue;
        };
        // "name v1.2.3 (/path) (*)": the name and version identify the package.
        let package: Vec<&str> = package.split_whitespace().take(2).collect();
        let set = set.trim_end_matches(" (*)").trim();
        features
            .entry(package.join(" "))
            .or_default()
            .insert(set.to_owned());
    }
    features
}

/// `cargo install --path .` resolves the root package without any dev-dependency, `cargo
/// bench`, `cargo test` and run_benchmarks.sh's build resolve the whole workspace with
/// them. Where a dev-dependency turns on a feature of a shared crate, the two resolutions
/// compile that crate and everything above it twice (a second full release build for
/// `cargo install` after `./run_benchmarks.sh`, and rebuilds between CI's steps). The root's
/// feature-alignment dependencies keep the two the same; this names what drifted.
#[test]
fn installing_resolves_every_crate_with_the_features_the_workspace_build_uses() {
    let install = resolved_features(&["-p", "stackbench"], "normal,build");
    let workspace = resolved_features(&["--workspace"], "normal,build,dev");
    // A check that cannot fail is no check: both walks must have read the graph.
    for needed in ["serde_json", "criterion", "clap", "regex-automata"] {
        assert!(
            install
                .keys()
                .any(|p| p.starts_with(&format!("{needed} v"))),
            "cargo tree listed no {needed}: the walk read nothing"
        );
    }
    let drifted: Vec<String> = install
        .iter()
        .filter(|(package, sets)| workspace.get(*package) != Some(sets))
        .map(|(package, sets)| {
            format!(
                "{package}: installed with {sets:?}, built by the workspace with {:?}",
                workspace.get(package)
            )
        })
        .collect();
    assert!(
        drifted.is_empty(),
        "add the missing features to the root's feature-alignment dependencies in \
         Cargo.toml:\n{}",
        drifted.join("\n")
    );
}

/// run_benchmarks.sh unsets, by hand, the running package's variables that stackbench's own
/// cargo commands drop (`system::cargo`): each name the Rust list has must be in the script.
#[test]
fn run_benchmarks_sh_drops_every_variable_stackbenchs_cargo_commands_drop() {
    let script = read("run_benchmarks.sh");
    // The script's words: names and glob patterns such as `CARGO_PKG_*` in its `case` arm.
    let words: BTreeSet<&str> = script
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '*'))
        .collect();
    let missing: Vec<&&str> = stackbench_measure::system::cargo::RUNNING_PACKAGE_VARIABLES
        .iter()
        .chain(&["CARGO_PKG_*"])
        .filter(|name| !words.contains(**name))
        .collect();
    assert!(
        missing.is_empty(),
        "run_benchmarks.sh does not unset {missing:?}"
    );
}
