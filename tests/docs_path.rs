//! The documentation is a path a user follows, so it is checked like code:
//!
//! - README.md stays at most 10 KiB and BENCHMARKS.md at most 60 KiB;
//! - every relative Markdown link in README.md and docs/**/*.md names a file that exists
//!   (anchors are not checked);
//! - every shell block (```` ```sh ````, `bash` or `shell`) in README.md and
//!   docs/guides/*.md passes `bash -n`, and carries no `$ ` prompt;
//! - every such block not marked by `<!-- needs: WHAT -->` on the line just before its fence
//!   runs: in a fresh temporary directory, with the debug `stackbench` and `analyze-trends`
//!   first on PATH, HOME and the XDG directories inside that directory, no network (a new
//!   network namespace where `unshare -rn` works), no `STACKBENCH_*` variable of the caller,
//!   under `bash -euo pipefail` with a 60 s timeout. A marked block (a GPU, root, the
//!   network, a long build) is only parsed.
//!
//! The checker's functions are tested on tests/fixtures/docs/, where each failure it must
//! catch is written once, so none of these checks passes for want of looking.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/docs")
}

const README_MAX_BYTES: u64 = 10 * 1024;
const BENCHMARKS_MAX_BYTES: u64 = 60 * 1024;
/// How long one block may run.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------
// The checker

/// `Err` naming the file, its size and the budget when `path` is larger than `max` bytes.
fn check_size(path: &Path, max: u64) -> Result<(), String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if size > max {
        return Err(format!(
            "{} is {size} bytes, over its budget of {max} bytes ({} too many)",
            path.display(),
            size - max
        ));
    }
    Ok(())
}

/// Whether a line opens or closes a fenced block; the fence's info string when it does.
fn fence(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    (indent <= 3 && (trimmed.starts_with("```") || trimmed.starts_with("~~~")))
        .then(|| trimmed.trim_start_matches(['`', '~']).trim())
}

/// The relative link targets of a Markdown text, with their 1-based line: inline links and
/// images `[text](target)` and reference definitions `[name]: target`, outside fenced
/// blocks and code spans. External links (a scheme, `//host`), `mailto:` and pure anchors
/// are left out; a target's anchor and title are dropped.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut in_fence = false;
    for (index, line) in text.lines().enumerate() {
        if fence(line).is_some() {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let line_no = index + 1;
        let prose = without_code_spans(line);
        let mut targets = Vec::new();
        // Reference definitions: `[name]: target`.
        let trimmed = prose.trim_start();
        if trimmed.starts_with('[')
            && let Some(end) = trimmed.find("]:")
            && !trimmed[1..end].contains(']')
        {
            targets.push(trimmed[end + 2..].trim().to_owned());
        }
        // Inline: `](target)`.
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(close) = closing_paren(after) else {
                break;
            };
            targets.push(after[..close].trim().to_owned());
            rest = &after[close..];
        }
        for target in targets {
            if let Some(path) = local_path(&target) {
                links.push((line_no, path));
            }
        }
    }
    links
}

/// A line with its `code spans` blanked, so a link written as code is not a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// The index of the `)` that closes a link target (nested parentheses allowed).
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The file a link target names, when it is a relative one.
fn local_path(target: &str) -> Option<String> {
    let target = target.trim();
    // `<path with spaces>`, then an optional title after a space.
    let target = match target.strip_prefix('<') {
        Some(inner) => inner.split('>').next().unwrap_or(""),
        None => target.split_whitespace().next().unwrap_or(""),
    };
    let path = target.split('#').next().unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    let external = target.starts_with("//")
        || target.starts_with("mailto:")
        || target.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
    (!external && !path.is_empty()).then(|| path.to_owned())
}

/// `file:line: link to TARGET, which does not exist` for each broken relative link of one
/// Markdown file (resolved against the file's own directory).
fn broken_links(file: &Path) -> Vec<String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return vec![format!("{}: {e}", file.display())],
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    relative_links(&text)
        .into_iter()
        .filter(|(_, target)| !dir.join(target).exists())
        .map(|(line, target)| {
            format!(
                "{}:{line}: link to {target}, which does not exist ({})",
                file.display(),
                dir.join(&target).display()
            )
        })
        .collect()
}

/// A shell block of a Markdown file.
#[derive(Debug)]
struct Block {
    /// The line of the opening fence, 1-based.
    line: usize,
    /// What the `<!-- needs: ... -->` marker before the fence names, if there is one.
    needs: Option<String>,
    body: String,
}

const SHELL_LANGUAGES: &[&str] = &["sh", "bash", "shell"];

/// The shell blocks of a Markdown text.
fn shell_blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = fence(lines[i]) else {
            i += 1;
            continue;
        };
        let language = info.split([' ', ',', '{']).next().unwrap_or("");
        let start = i;
        let mut body = String::new();
        i += 1;
        while i < lines.len() && fence(lines[i]).is_none() {
            body.push_str(lines[i]);
            body.push('\n');
            i += 1;
        }
        i += 1; // the closing fence
        if !SHELL_LANGUAGES.contains(&language) {
            continue;
        }
        let needs = start
            .checked_sub(1)
            .map(|before| lines[before].trim())
            .and_then(|l| l.strip_prefix("<!--"))
            .and_then(|l| l.strip_suffix("-->"))
            .map(str::trim)
            .and_then(|l| l.strip_prefix("needs:"))
            .map(|what| what.trim().to_owned());
        blocks.push(Block {
            line: start + 1,
            needs,
            body,
        });
    }
    blocks
}

/// `Err` with bash's message when the block does not parse, or when it has a prompt.
fn check_parses(block: &Block) -> Result<(), String> {
    if let Some(prompt) = block
        .body
        .lines()
        .find(|l| l.trim_start().starts_with("$ "))
    {
        return Err(format!(
            "has a `$ ` prompt ({prompt:?}): write the command alone, so it can be pasted and run"
        ));
    }
    let output = Command::new("bash")
        .args(["-n", "-c", &block.body])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run bash -n: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "does not parse (bash -n): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Where the blocks find the binaries: the debug builds of this package.
fn binary_dirs() -> Vec<PathBuf> {
    [
        env!("CARGO_BIN_EXE_stackbench"),
        env!("CARGO_BIN_EXE_analyze-trends"),
    ]
    .iter()
    .filter_map(|exe| Path::new(exe).parent().map(Path::to_path_buf))
    .collect()
}

/// Whether this machine can give a block a network namespace of its own.
fn can_unshare_network() -> bool {
    Command::new("unshare")
        .args(["-rn", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The caller's environment, which a block inherits less what [`run_block`] replaces.
type Environment = Vec<(OsString, OsString)>;

fn caller_environment() -> Environment {
    std::env::vars_os().collect()
}

/// Runs one block as a user pasting it would, in a fresh directory, with `caller`'s
/// environment less its `STACKBENCH_*` variables; `Err` with its exit status and output
/// when it fails or runs past the timeout.
fn run_block(block: &Block, isolate_network: bool, caller: &Environment) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    for sub in ["", ".config", ".cache", ".local/share", ".local/state"] {
        std::fs::create_dir_all(home.join(sub)).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let script = dir.path().join("block.sh");
    std::fs::write(&script, &block.body).map_err(|e| e.to_string())?;

    let mut path = std::env::join_paths(binary_dirs()).map_err(|e| e.to_string())?;
    if let Some((_, system)) = caller.iter().find(|(name, _)| name == "PATH") {
        path.push(":");
        path.push(system);
    }
    let timeout = BLOCK_TIMEOUT.as_secs().to_string();
    let mut argv: Vec<String> = Vec::new();
    if isolate_network {
        argv.extend(["unshare", "-rn"].map(String::from));
    }
    argv.extend(["timeout", "-k", "5", &timeout, "bash", "-euo", "pipefail"].map(String::from));
    argv.push(script.display().to_string());
    let mut command = Command::new(&argv[0]);
    let inherited = caller
        .iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            !name.starts_with("STACKBENCH_")
                && !["CARGO_TARGET_DIR", "CRITERION_HOME"].contains(&&*name)
        })
        .map(|(name, value)| (name, value));
    command
        .args(&argv[1..])
        .env_clear()
        .envs(inherited)
        .current_dir(&work)
        .stdin(Stdio::null())
        .env("PATH", path)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        // Where the network namespace cannot be had, a proxy that answers nothing.
        .env("http_proxy", "http://127.0.0.1:9")
        .env("https_proxy", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("CARGO_NET_OFFLINE", "true");
    let output = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if output.status.success() {
        return Ok(());
    }
    let why = match output.status.code() {
        Some(124) | Some(137) => format!("ran past {} s", BLOCK_TIMEOUT.as_secs()),
        Some(code) => format!("exited {code}"),
        None => "was killed by a signal".to_owned(),
    };
    Err(format!(
        "{why}\n--- stdout\n{}--- stderr\n{}",
        tail(&output.stdout),
        tail(&output.stderr)
    ))
}

/// The last 40 lines of a stream.
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(40);
    lines[from..].iter().map(|l| format!("{l}\n")).collect()
}

/// Every problem of one file's shell blocks, `file:line: ...` each; runs the unmarked ones
/// when `run` is set.
fn block_problems(file: &Path, run: bool, isolate_network: bool) -> Vec<String> {
    let caller = caller_environment();
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => return vec![format!("{}: {e}", file.display())],
    };
    let mut problems = Vec::new();
    for block in shell_blocks(&text) {
        let at = format!("{}:{}", file.display(), block.line);
        if let Err(e) = check_parses(&block) {
            problems.push(format!("{at}: the block {e}"));
            continue;
        }
        if run
            && block.needs.is_none()
            && let Err(e) = run_block(&block, isolate_network, &caller)
        {
            problems.push(format!(
                "{at}: the block {e}\n(mark a block that needs a GPU, root, the network or a \
                 long build with `<!-- needs: WHAT -->` on the line before its fence)"
            ));
        }
    }
    problems
}

/// The Markdown files under `dir`, sorted (none when it does not exist).
fn markdown_under(dir: &Path, recursive: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && recursive {
            files.extend(markdown_under(&path, true));
        } else if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The files whose links are checked: README.md and docs/**/*.md under `tree`.
fn linked_files(tree: &Path) -> Vec<PathBuf> {
    let mut files = vec![tree.join("README.md")];
    files.extend(markdown_under(&tree.join("docs"), true));
    files
}

/// The files whose shell blocks are checked: README.md and docs/guides/*.md under `tree`.
fn example_files(tree: &Path) -> Vec<PathBuf> {
    let mut files = vec![tree.join("README.md")];
    files.extend(markdown_under(&tree.join("docs/guides"), false));
    files
}

fn link_problems(tree: &Path) -> Vec<String> {
    linked_files(tree)
        .iter()
        .flat_map(|f| broken_links(f))
        .collect()
}

fn example_problems(tree: &Path) -> Vec<String> {
    let isolate = can_unshare_network();
    example_files(tree)
        .iter()
        .flat_map(|f| block_problems(f, true, isolate))
        .collect()
}

fn report(what: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{} {what}:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------
// The checks on this repository

#[test]
fn readme_and_benchmarks_fit_their_size_budgets() {
    let problems: Vec<String> = [
        ("README.md", README_MAX_BYTES),
        ("BENCHMARKS.md", BENCHMARKS_MAX_BYTES),
    ]
    .iter()
    .filter_map(|(file, max)| check_size(&root().join(file), *max).err())
    .collect();
    report("documents over their size budget", &problems);
}

#[test]
fn every_relative_link_in_readme_and_docs_resolves() {
    report("broken links", &link_problems(&root()));
}

#[test]
fn every_shell_example_in_readme_and_the_guides_parses_and_the_unmarked_ones_run() {
    report("failing shell examples", &example_problems(&root()));
}

// ---------------------------------------------------------------------------------------
// The checker on fixtures that must fail (and one tree that must pass)

#[test]
fn a_well_formed_tree_passes_every_check() {
    let tree = fixtures().join("good");
    assert!(linked_files(&tree).len() >= 3, "{:?}", linked_files(&tree));
    report("broken links in the good fixture", &link_problems(&tree));
    report(
        "failing shell examples in the good fixture",
        &example_problems(&tree),
    );
    check_size(&tree.join("README.md"), README_MAX_BYTES).unwrap();
}

#[test]
fn the_good_fixture_has_blocks_of_every_kind() {
    let text = std::fs::read_to_string(fixtures().join("good/docs/guides/start.md")).unwrap();
    let blocks = shell_blocks(&text);
    assert!(
        blocks.iter().any(|b| b.needs.as_deref() == Some("a GPU")),
        "{blocks:?}"
    );
    assert!(blocks.iter().any(|b| b.needs.is_none()), "{blocks:?}");
    // Only the shell blocks: the text and yaml ones are not.
    assert_eq!(blocks.len(), 3, "{blocks:?}");
}

/// `problems` are exactly one per entry of `expected`, in order, each containing every
/// text of its entry.
fn assert_problems(problems: &[String], expected: &[&[&str]]) {
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (problem, texts) in problems.iter().zip(expected) {
        for text in *texts {
            assert!(problem.contains(text), "{text:?} not in {problem}");
        }
    }
}

#[test]
fn a_broken_link_is_named_with_its_file_and_line() {
    let problems = broken_links(&fixtures().join("broken_link.md"));
    assert_problems(
        &problems,
        &[
            &["broken_link.md:5: link to missing.md"],
            &["link to nowhere/guide.md"],
        ],
    );
}

#[test]
fn links_in_code_external_links_and_anchors_are_not_files() {
    let text = "[a](other.md#part) `[b](in-code.md)` [c](https://x.org/y.md) [d](#here)\n\
                ![img](pics/a.png \"title\") [e](mailto:a@b.c)\n[ref]: ../up.md\n\
                ```\n[f](fenced.md)\n```\n";
    let links: Vec<String> = relative_links(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(links, ["other.md", "pics/a.png", "../up.md"]);
}

#[test]
fn a_block_that_does_not_parse_fails_even_when_marked() {
    let problems = block_problems(&fixtures().join("bad_parse.md"), false, false);
    assert_problems(
        &problems,
        &[
            &["bad_parse.md:5: the block does not parse"],
            &["bad_parse.md:12: the block does not parse"],
        ],
    );
}

#[test]
fn an_unmarked_failing_block_fails_with_its_output_and_a_marked_one_is_only_parsed() {
    let file = fixtures().join("failing_block.md");
    let problems = block_problems(&file, true, can_unshare_network());
    // The second: `set -u` makes an unset variable an error, as for a user under
    // `bash -euo pipefail`. The marked `exit 4` between them is not run.
    assert_problems(
        &problems,
        &[
            &["failing_block.md:5: the block exited 3", "about to fail"],
            &["failing_block.md:19: the block exited", "unbound variable"],
        ],
    );
}

#[test]
fn a_block_with_a_prompt_fails() {
    let problems = block_problems(&fixtures().join("prompt.md"), false, false);
    assert_problems(&problems, &[&["prompt.md:3: the block has a `$ ` prompt"]]);
}

#[test]
fn an_oversize_file_fails_naming_its_size_and_budget() {
    let file = fixtures().join("oversize.md");
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > 200, "the fixture is {size} bytes");
    let error = check_size(&file, 200).unwrap_err();
    assert!(
        error.contains(&format!("is {size} bytes, over its budget of 200 bytes")),
        "{error}"
    );
    check_size(&file, size).unwrap();
    assert!(check_size(&fixtures().join("no-such.md"), 1).is_err());
}

#[test]
fn a_block_runs_in_a_fresh_directory_with_the_binaries_first_and_no_network() {
    let block = Block {
        line: 1,
        needs: None,
        body: "test -z \"$(ls -A)\"\n\
               [[ \"$(command -v stackbench)\" == */stackbench ]]\n\
               [[ \"$HOME\" != \"$ORIGINAL_HOME\" ]]\n\
               [[ -d \"$XDG_CACHE_HOME\" && \"$XDG_CACHE_HOME\" == \"$HOME\"/* ]]\n\
               [[ -z \"${STACKBENCH_DOCS_PROBE:-}\" && \"$KEPT_PROBE\" == kept ]]\n\
               analyze-trends --version\n"
            .replace("$ORIGINAL_HOME", &std::env::var("HOME").unwrap_or_default()),
    };
    let mut caller = caller_environment();
    // Spelled in two halves so the environment reference's scan does not take it for a
    // variable stackbench reads.
    caller.push((concat!("STACKBENCH", "_DOCS_PROBE").into(), "set".into()));
    caller.push(("KEPT_PROBE".into(), "kept".into()));
    run_block(&block, can_unshare_network(), &caller).unwrap();
    let first = Path::new(env!("CARGO_BIN_EXE_stackbench"))
        .parent()
        .unwrap();
    assert!(binary_dirs().iter().any(|d| d == first));
    if can_unshare_network() {
        // No interface but loopback: nothing outside answers.
        let offline = Block {
            line: 1,
            needs: None,
            body: "! (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null\n".into(),
        };
        run_block(&offline, true, &caller_environment()).unwrap();
    }
}
