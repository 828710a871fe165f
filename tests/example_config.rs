//! `stackbench.example.toml` is accepted by every command that takes `--config` or
//! `--prices`, through the real binaries. The commands are found from `--help`, so a new
//! subcommand with either flag fails this test until it has a case here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ANALYZE_TRENDS: &str = env!("CARGO_BIN_EXE_analyze-trends");
const STACKBENCH: &str = env!("CARGO_BIN_EXE_stackbench");

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("stackbench.example.toml")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Subcommands of `bin` whose `--help` lists `--config` or `--prices`.
fn taking_config(bin: &str) -> Vec<String> {
    let help = Command::new(bin).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands: Vec<String> = help
        .split("Commands:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect();
    assert!(
        !commands.is_empty(),
        "no subcommands in {bin} --help:\n{help}"
    );
    commands
        .into_iter()
        .filter(|c| {
            let out = Command::new(bin)
                .args([c.as_str(), "--help"])
                .output()
                .unwrap();
            let help = String::from_utf8_lossy(&out.stdout);
            help.contains("--config") || help.contains("--prices")
        })
        .collect()
}

/// A results directory holding the three machines of the cross-hardware fixture.
fn fixture_store(dir: &Path) -> PathBuf {
    let results = dir.join("results");
    std::fs::create_dir_all(results.join("runs")).unwrap();
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hardware/runs");
    for entry in std::fs::read_dir(runs).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, results.join("runs").join(path.file_name().unwrap())).unwrap();
    }
    results
}

#[test]
fn every_command_taking_config_or_prices_accepts_the_example() {
    let tmp = tempfile::tempdir().unwrap();
    let results = fixture_store(tmp.path());
    let (ex, r) = (example(), results.to_str().unwrap().to_string());
    let ex = ex.to_str().unwrap();
    // (binary, command, arguments, exit code it must end with: None where the outcome
    // depends on the stored runs, not on the config).
    let cases: Vec<(&str, &str, Vec<&str>, Option<i32>)> = vec![
        // The [accuracy] rules judge whatever the stored runs hold.
        (
            ANALYZE_TRENDS,
            "compare",
            vec!["previous", "latest", "--config", ex, "--results", &r],
            None,
        ),
        (
            ANALYZE_TRENDS,
            "hardware",
            vec!["--prices", ex, "--results", &r],
            Some(0),
        ),
        (
            STACKBENCH,
            "show",
            vec!["--page", "hardware", "--prices", ex, "--results", &r],
            Some(0),
        ),
        (
            STACKBENCH,
            "show",
            vec!["--page", "summary", "--config", ex, "--results", &r],
            Some(0),
        ),
        // Past the config, into the store: an unknown run is the error, not the file.
        (
            STACKBENCH,
            "dashboard",
            vec![
                "--config",
                ex,
                "--prices",
                ex,
                "--results",
                &r,
                "--run",
                "no-such-run",
            ],
            Some(2),
        ),
        (STACKBENCH, "suite", vec!["smoke", "--config", ex], Some(0)),
        // Past the config (its prices), into the store: it holds no sweep, which is the error.
        (
            STACKBENCH,
            "recommend",
            vec!["--config", ex, "--rank", "per-dollar", "--results", &r],
            Some(2),
        ),
        // The same for the sweep report: nothing to report, so nothing is written.
        (
            STACKBENCH,
            "sweep-report",
            vec![
                "--config",
                ex,
                "--rank",
                "per-dollar",
                "--results",
                &r,
                "--out",
                "sweep-report",
            ],
            Some(2),
        ),
        // The plan only: a sweep would run the models bench target.
        (
            STACKBENCH,
            "sweep",
            vec!["--config", ex, "--sweep", "serving", "--print-plan"],
            Some(0),
        ),
        // Past the config, to the store it cannot open (it would serve until killed).
        (
            STACKBENCH,
            "serve",
            vec![
                "--config",
                ex,
                "--store",
                "nosuch:x",
                "--bind",
                "127.0.0.1:0",
            ],
            Some(2),
        ),
        (
            STACKBENCH,
            "config",
            vec!["--get", "results_dir", "--config", ex],
            Some(0),
        ),
        // Judges a stored run (measures nothing); pass or fail is the runs' business.
        (
            STACKBENCH,
            "validate",
            vec![
                "--config",
                ex,
                "--run",
                "latest",
                "--suite",
                "quick",
                "--no-save",
                "--results",
                &r,
            ],
            None,
        ),
    ];
    let covered: Vec<(&str, &str)> = cases.iter().map(|(b, c, _, _)| (*b, *c)).collect();
    for bin in [ANALYZE_TRENDS, STACKBENCH] {
        for command in taking_config(bin) {
            assert!(
                covered.contains(&(bin, command.as_str())),
                "{bin} {command} takes --config or --prices: add a case for it here"
            );
        }
    }
    for (bin, command, args, expected) in &cases {
        let out = Command::new(bin)
            .arg(command)
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let all = text(&out);
        // Every config error names the file; none may here.
        assert!(
            !all.contains("stackbench.example.toml"),
            "{command} refused the example: {all}"
        );
        assert_ne!(out.status.code(), Some(101), "{command} panicked: {all}");
        if let Some(code) = expected {
            assert_eq!(out.status.code(), Some(*code), "{command} {args:?}: {all}");
        }
    }
}

#[test]
fn show_and_dashboard_take_results_dir_from_the_config() {
    let tmp = tempfile::tempdir().unwrap();
    let results = fixture_store(tmp.path());
    std::fs::write(
        tmp.path().join("stackbench.toml"),
        format!("results_dir = {:?}\n", results.to_str().unwrap()),
    )
    .unwrap();
    // No --results: the config's directory, from ./stackbench.toml and from --config.
    for args in [
        vec!["show", "--page", "summary"],
        vec!["show", "--page", "summary", "--config", "stackbench.toml"],
    ] {
        let out = Command::new(STACKBENCH)
            .args(&args)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("── 8 Summary ──"));
    }
    // The dashboard resolves its runs there too: an unknown run is named in that store.
    let out = Command::new(STACKBENCH)
        .args(["dashboard", "--run", "no-such-run"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(results.to_str().unwrap()),
        "{}",
        text(&out)
    );
}
