//! docs/reference/ cannot drift from the code: `cli.md` is what the command trees render
//! (`stackbench::cli::reference`), and `environment.md` documents exactly the
//! `STACKBENCH_*` variables the sources read.
//!
//! A stale `cli.md` fails here; rewrite it with
//! `STACKBENCH_UPDATE_DOCS=1 cargo test --test docs_reference`. `environment.md` is written
//! by hand (what a variable means is not in the code's types); the test names each variable
//! it lacks and each it documents that nothing reads any more.

use stackbench::cli::reference::{UPDATE_COMMAND, cli_reference};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_cli_reference_is_what_the_code_renders() {
    let path = root().join("docs/reference/cli.md");
    let generated = cli_reference();
    if std::env::var("STACKBENCH_UPDATE_DOCS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "{} differs from what the command line renders (first at line {}:\n  committed: {:?}\n  generated: {:?})\n\
             regenerate it with `{UPDATE_COMMAND}`",
            path.display(),
            line + 1,
            committed.lines().nth(line).unwrap_or("<end of file>"),
            generated.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}

/// Where the variables are read: the crates, the scripts, CI and the workflows.
const SCANNED: &[&str] = &[
    "src",
    "crates",
    "scripts",
    "ci",
    "tests",
    ".github/workflows",
    "run_benchmarks.sh",
];

/// How a file reads a variable, by its kind: a string literal that is exactly the name
/// (Rust, Python), or an expansion (`$NAME`, `${NAME...}`, `vars.NAME` in a workflow).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Rust,
    Python,
    Shell,
}

fn kind_of(path: &Path) -> Option<Kind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("rs") => Some(Kind::Rust),
        Some("py") => Some(Kind::Python),
        Some("sh" | "sbatch" | "yml" | "yaml" | "bash") => Some(Kind::Shell),
        Some(_) => None,
        // Extensionless files under ci/ and scripts/ are shell scripts when they say so.
        None => std::fs::read_to_string(path)
            .ok()
            .filter(|t| t.starts_with("#!") && t.lines().next().is_some_and(|l| l.contains("sh")))
            .map(|_| Kind::Shell),
    }
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'
}

/// The variable names one file's text reads.
fn names_read(text: &str, kind: Kind) -> BTreeSet<String> {
    const PREFIX: &str = "STACKBENCH_";
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(PREFIX) {
        let start = from + at;
        let mut end = start + PREFIX.len();
        while end < bytes.len() && is_name_char(bytes[end]) {
            end += 1;
        }
        from = end;
        if end == start + PREFIX.len() || (start > 0 && is_name_char(bytes[start - 1])) {
            continue;
        }
        let before = &text[..start];
        let after = bytes.get(end).copied();
        let read = match kind {
            Kind::Rust => before.ends_with('"') && after == Some(b'"'),
            Kind::Python => {
                (before.ends_with('"') && after == Some(b'"'))
                    || (before.ends_with('\'') && after == Some(b'\''))
                    || before.ends_with('$')
                    || before.ends_with("${")
            }
            Kind::Shell => {
                before.ends_with('$') || before.ends_with("${") || before.ends_with("vars.")
            }
        };
        if read {
            names.insert(text[start..end].to_owned());
        }
    }
    names
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            walk(&entry, out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

/// Every variable the sources read, with the first file that reads it.
fn variables_read() -> BTreeMap<String, String> {
    let root = root();
    let mut files = Vec::new();
    for dir in SCANNED {
        walk(&root.join(dir), &mut files);
    }
    let mut read = BTreeMap::new();
    for file in files {
        let Some(kind) = kind_of(&file) else { continue };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for name in names_read(&text, kind) {
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            read.entry(name).or_insert(shown);
        }
    }
    read
}

/// The names `environment.md` documents: the first backticked `STACKBENCH_` name of each
/// table row.
fn variables_documented(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .filter(|name| name.starts_with("STACKBENCH_") && name.bytes().all(is_name_char))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_environment_reference_documents_exactly_the_variables_the_code_reads() {
    let path = root().join("docs/reference/environment.md");
    let page = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let documented = variables_documented(&page);
    let read = variables_read();
    // The scan itself is checked: these are read in all three kinds of file.
    for known in [
        "STACKBENCH_RESULTS_DIR",
        "STACKBENCH_PYTHON",
        "STACKBENCH_FLEET_DIR",
    ] {
        assert!(read.contains_key(known), "the scan missed {known}");
    }
    let missing: Vec<String> = read
        .iter()
        .filter(|(name, _)| !documented.contains(*name))
        .map(|(name, file)| format!("{name} (read in {file})"))
        .collect();
    let stale: Vec<&String> = documented
        .iter()
        .filter(|name| !read.contains_key(*name))
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{} does not match the code.\nread but not documented ({}): {missing:#?}\n\
         documented but read nowhere ({}): {stale:#?}",
        path.display(),
        missing.len(),
        stale.len()
    );
}

/// Test names spelled so that the scan of this very file does not read them: `@` stands
/// for the prefix.
fn spelled(text: &str) -> String {
    text.replace('@', "STACKBENCH")
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| format!("STACKBENCH_{n}")).collect()
}

#[test]
fn the_scan_tells_a_read_from_a_mention() {
    let rust = spelled(
        r#"
        // @_IN_A_COMMENT is not read
        let a = std::env::var("@_READ");
        let msg = "set @_IN_A_MESSAGE to 1";
        const @_CONST_NAME: &str = "x";
    "#,
    );
    assert_eq!(names_read(&rust, Kind::Rust), set(&["READ"]));
    let shell = spelled(
        "# @_COMMENT\nx=\"${@_A:-1}\" y=$@_B\n\
         runs-on: ${{ vars.@_C }}\n@_SET_ONLY=1 cmd\n",
    );
    assert_eq!(names_read(&shell, Kind::Shell), set(&["A", "B", "C"]));
    let python = spelled("os.environ.get('@_P')\nMARKER = \"@_REPORT \"\n");
    assert_eq!(names_read(&python, Kind::Python), set(&["P"]));
}

#[test]
fn documented_names_are_the_first_code_span_of_a_table_row() {
    let page = spelled(
        "| `@_A` | x |\n| `@_B`, `@_X` | y |\n\
         text `@_C`\n| `OTHER` | z |\n",
    );
    assert_eq!(variables_documented(&page), set(&["A", "B"]));
}
