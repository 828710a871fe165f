//! Every setting of the table in `src/cli/settings.rs` is resolved flag > environment >
//! stackbench.toml > default, checked through the real `analyze-trends` on one command
//! that takes it. [`TABLE`] holds, per setting, the value each layer sets and how to see
//! which one the command used; the walk sets all three layers, then drops the flag, then
//! the variable, then the file, and expects the next layer's value each time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One setting: its names, the value each layer gives it, and the command that shows it.
struct Row {
    flag: &'static str,
    env: &'static str,
    /// stackbench.toml setting the file's value (under its section).
    file: &'static str,
    /// The values of the flag and of the variable.
    values: [&'static str; 2],
    /// The command, without the flag.
    args: fn() -> Vec<String>,
    /// What the command shows of the setting, given the working directory and the output.
    observe: fn(&Path, &Output) -> String,
    /// The observation with the flag, the variable, the file, and nothing set.
    expect: [&'static str; 4],
}

const TABLE: &[Row] = &[
    Row {
        flag: "--results",
        env: "STACKBENCH_RESULTS_DIR",
        file: "results_dir = \"file_results\"\n",
        values: ["flag_results", "env_results"],
        args: || strings(&["runs"]),
        observe: |_, out| between(&text(out), "results directory ", " does not exist"),
        expect: [
            "flag_results",
            "env_results",
            "file_results",
            "benchmark_results",
        ],
    },
    Row {
        flag: "--store",
        env: "STACKBENCH_STORE",
        file: "store = \"sqlite:file.db\"\n",
        values: ["sqlite:flag.db", "sqlite:env.db"],
        args: || {
            let mut args = strings(&["record", "--label", "precedence", "--criterion-dir"]);
            args.push(fixture().display().to_string());
            args
        },
        observe: |dir, _| {
            let made: Vec<&str> = [
                "flag.db",
                "env.db",
                "file.db",
                "benchmark_results/stackbench.db",
            ]
            .into_iter()
            .filter(|db| dir.join(db).is_file())
            .collect();
            made.join(" and ")
        },
        expect: [
            "flag.db",
            "env.db",
            "file.db",
            "benchmark_results/stackbench.db",
        ],
    },
    Row {
        flag: "--rounds",
        env: "STACKBENCH_GATE_ROUNDS",
        file: "[gate]\nrounds = 7\n",
        values: ["5", "6"],
        // --max-rounds below every value: the gate refuses at once, naming the rounds.
        args: || strings(&["gate", "--max-rounds", "1"]),
        observe: |_, out| between(&text(out), "at least the rounds, ", " (from"),
        expect: ["5", "6", "7", "4"],
    },
    Row {
        flag: "--threshold",
        env: "STACKBENCH_GATE_THRESHOLD_PERCENT",
        file: "[gate]\nthreshold_percent = 9\n",
        values: ["7", "8"],
        args: || {
            let mut args = strings(&["compare", "base", "new", "--format", "json"]);
            args.extend(["--criterion-dir".into(), fixture().display().to_string()]);
            args
        },
        observe: |_, out| {
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", text(out)));
            doc["threshold_percent"].to_string()
        },
        expect: ["7.0", "8.0", "9.0", "5.0"],
    },
    Row {
        flag: "--measure",
        env: "STACKBENCH_MEASURE",
        file: "[gate]\nmeasure = \"instructions\"\n",
        values: ["instructions", "instructions"],
        // A zero threshold, which counting mode refuses: refused, naming where the measure came from.
        args: || strings(&["gate", "--threshold", "0"]),
        observe: |_, out| {
            let text = text(out);
            if text.contains("the measure is instructions") {
                between(&text, "the measure is instructions (from ", ")")
            } else {
                "time".into()
            }
        },
        expect: [
            "--measure",
            "$STACKBENCH_MEASURE",
            "[gate] measure in stackbench.toml",
            "time",
        ],
    },
];

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criterion-0.8")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The text between `before` and the next `after` (empty when `before` is absent).
fn between(text: &str, before: &str, after: &str) -> String {
    text.split_once(before)
        .and_then(|(_, rest)| rest.split_once(after))
        .map_or_else(String::new, |(value, _)| value.to_string())
}

/// Runs `row`'s command in a fresh directory with the layers given.
fn observe(row: &Row, flag: bool, env: bool, file: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    if file {
        std::fs::write(dir.path().join("stackbench.toml"), row.file).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_analyze-trends"));
    command.args((row.args)()).current_dir(dir.path());
    command.env_remove("STACKBENCH_CONFIG");
    for other in TABLE {
        command.env_remove(other.env);
    }
    if flag {
        command.args([row.flag, row.values[0]]);
    }
    if env {
        command.env(row.env, row.values[1]);
    }
    let out = command.output().expect("running analyze-trends");
    (row.observe)(dir.path(), &out)
}

#[test]
fn every_setting_is_flag_then_environment_then_file_then_default() {
    for row in TABLE {
        let layers = [
            (true, true, true),
            (false, true, true),
            (false, false, true),
            (false, false, false),
        ];
        for ((flag, env, file), expected) in layers.into_iter().zip(row.expect) {
            assert_eq!(
                observe(row, flag, env, file),
                expected,
                "{} with flag {flag}, ${} {env}, file {file}",
                row.flag,
                row.env
            );
        }
    }
}

#[test]
fn help_states_the_results_default_the_same_way_on_every_command() {
    for command in [
        "runs", "record", "history", "compare", "export", "report", "ack",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            help.contains("[default: $STACKBENCH_RESULTS_DIR, else `results_dir` in stackbench.toml, else benchmark_results]"),
            "{command}: {help}"
        );
        assert!(
            !help.contains("[default: benchmark_results]"),
            "{command}: {help}"
        );
    }
}
