//! One `--format` vocabulary through the real binaries: every command that prints a report
//! takes `md` and `markdown` as the same format. Where the report is written in Markdown
//! both spellings print the same bytes; where it is not, both are refused the same way,
//! exit 2 before any work, naming the command and the formats it does write (never a
//! different format printed instead). The store is the recorded sweeps of two machines
//! (`sweep_support`) and the comparison is of the checked-in Criterion 0.5 tree.

#[path = "sweep_support/mod.rs"]
mod sweep_support;

use std::path::Path;
use std::process::{Command, Output};

const ANALYZER: &str = env!("CARGO_BIN_EXE_analyze-trends");
const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");
const SPELLINGS: [&str; 2] = ["md", "markdown"];

fn run(bin: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_remove("CRITERION_HOME")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("STACKBENCH_CONFIG")
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_SERVER_URL")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args --format SPELLING` for both spellings; the outputs, in spelling order.
fn both(bin: &str, args: &[&str], cwd: &Path) -> Vec<Output> {
    SPELLINGS
        .iter()
        .map(|spelling| {
            let mut all = args.to_vec();
            all.extend(["--format", spelling]);
            run(bin, &all, cwd)
        })
        .collect()
}

#[test]
fn every_markdown_report_prints_the_same_markdown_for_md_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = sweep_support::results(dir.path());
    let results = results.to_str().unwrap();
    let config = config.to_str().unwrap();
    let criterion = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.5");
    let compared = dir.path().join("compared");
    let commands: [(&str, Vec<&str>); 3] = [
        (
            ANALYZER,
            vec![
                "compare",
                "base",
                "new",
                "--criterion-dir",
                criterion.to_str().unwrap(),
                "--results",
                compared.to_str().unwrap(),
            ],
        ),
        (ANALYZER, vec!["hardware", "--results", results]),
        (
            STACKBENCH,
            vec!["recommend", "--results", results, "--config", config],
        ),
    ];
    for (bin, args) in &commands {
        let outs = both(bin, args, dir.path());
        for (spelling, out) in SPELLINGS.iter().zip(&outs) {
            assert_ne!(
                out.status.code(),
                Some(2),
                "{args:?} --format {spelling}: {}",
                text(&out.stderr)
            );
            assert!(
                text(&out.stdout).contains("|---"),
                "{args:?} --format {spelling} is not a Markdown table: {}",
                text(&out.stdout)
            );
        }
        assert_eq!(text(&outs[0].stdout), text(&outs[1].stdout), "{args:?}");
        assert_eq!(outs[0].status.code(), outs[1].status.code(), "{args:?}");
    }
    // sweep-report writes files: both spellings write the same sweep-report.md.
    let written: Vec<String> = SPELLINGS
        .iter()
        .map(|spelling| {
            let out_dir = dir.path().join(format!("sweep-{spelling}"));
            let args = [
                "sweep-report",
                "--out",
                out_dir.to_str().unwrap(),
                "--results",
                results,
                "--config",
                config,
                "--format",
                spelling,
            ];
            let out = run(STACKBENCH, &args, dir.path());
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            std::fs::read_to_string(out_dir.join("sweep-report.md")).expect("sweep-report.md")
        })
        .collect();
    assert!(written[0].contains("|---"), "{}", written[0]);
    assert_eq!(written[0], written[1]);
}

#[test]
fn a_report_without_markdown_refuses_both_spellings_naming_what_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (results, _) = sweep_support::results(dir.path());
    let results = results.to_str().unwrap();
    let stored = || {
        let out = run(
            ANALYZER,
            &["runs", "--results", results, "--format", "json"],
            dir.path(),
        );
        let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        runs.as_array().map(Vec::len)
    };
    let before = stored();
    assert!(before.is_some_and(|n| n > 0), "{before:?}");
    let commands: [(&str, Vec<&str>, &str); 7] = [
        (
            "analyze-trends runs",
            vec!["runs", "--results", results],
            "table, json, csv",
        ),
        (
            "analyze-trends comparisons",
            vec!["comparisons", "--results", results],
            "table, json, csv",
        ),
        (
            "analyze-trends history",
            vec!["history", sweep_support::GPT2, "--results", results],
            "table, json, csv",
        ),
        (
            "analyze-trends prune",
            vec!["prune", "--keep-days", "0", "--results", results],
            "table, json, csv",
        ),
        (
            "analyze-trends export",
            vec!["export", "--results", results],
            "csv, json",
        ),
        (
            "analyze-trends bisect",
            vec!["bisect", "--good", "HEAD~1", "--bad", "HEAD"],
            "table, json",
        ),
        (
            "analyze-trends gate",
            vec!["gate", "--base", "HEAD~1", "--head", "HEAD"],
            "",
        ),
    ];
    for (command, args, offered) in &commands {
        let outs = both(ANALYZER, args, dir.path());
        for (spelling, out) in SPELLINGS.iter().zip(&outs) {
            let stderr = text(&out.stderr);
            if offered.is_empty() {
                // The gate writes Markdown: the spelling is taken, whatever else then fails
                // (here: no git repository).
                assert!(
                    !stderr.contains("--format") && !stderr.contains("does not write"),
                    "{command} --format {spelling}: {stderr}"
                );
                continue;
            }
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} --format {spelling}: {stderr}"
            );
            assert!(
                stderr.contains(&format!(
                    "{command} does not write markdown; its formats: {offered}"
                )),
                "{command} --format {spelling}: {stderr}"
            );
            assert!(
                out.stdout.is_empty(),
                "{command} --format {spelling} printed"
            );
        }
    }
    // Nothing was pruned: the refusal came before any work.
    assert_eq!(stored(), before);
}
