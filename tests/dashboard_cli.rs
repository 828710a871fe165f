//! The real `stackbench` binary: `show` prints the pages as text, and `dashboard` runs
//! under tmux (a real terminal): it starts, switches pages by key, quits with `q` and
//! leaves the terminal as it found it (alternate screen left, cursor visible).
//!
//! Without tmux the terminal test is skipped with a message, unless
//! `STACKBENCH_REQUIRE_TOOLS=1` (ci/test.sh sets it), which makes a missing tmux a failure.

mod dashboard_support;
#[path = "pg_support/mod.rs"]
mod pg_support;
mod sweep_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stackbench");

/// `stackbench show ARGS --results RESULTS`, which must succeed; its stdout.
fn show_text(args: &[&str], results: &Path) -> String {
    let out = Command::new(BIN)
        .arg("show")
        .args(args)
        .arg("--results")
        .arg(results)
        .env_remove("STACKBENCH_STORE")
        .env_remove("STACKBENCH_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn show_prints_every_page_and_rejects_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let text = show_text(&["--page", "all", "--width", "100"], dir.path());
    for title in [
        "1 Baseline",
        "2 GEMM",
        "5 Before/after",
        "7 Skips/failures",
        "8 Summary",
        "9 Hardware",
    ] {
        assert!(
            text.contains(&format!("── {title} ──")),
            "{title} missing:\n{text}"
        );
    }
    assert!(text.contains("GEMM cpu f32"), "summary gauges:\n{text}");
    let out = Command::new(BIN)
        .args(["show", "--page", "nope", "--results"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown page `nope`"));
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["show", "--results"])
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no runs in"));
}

/// The two sides are `--head` and `--base`, as in every command; `--run` and `--compare`, their
/// spellings before, still work with a note naming the new flag, and the two spellings of one
/// side together are a usage error.
#[test]
fn show_takes_head_and_base_and_the_old_spellings_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("show")
            .args(["--page", "summary", "--width", "100"])
            .args(args)
            .arg("--results")
            .arg(dir.path())
            .env_remove("STACKBENCH_STORE")
            .env_remove("STACKBENCH_CONFIG")
            .output()
            .unwrap()
    };
    let new = run(&["--head", "latest", "--base", "previous"]);
    assert!(
        new.status.success(),
        "{}",
        String::from_utf8_lossy(&new.stderr)
    );
    assert!(!String::from_utf8_lossy(&new.stderr).contains("note: --"));
    let old = run(&["--run", "latest", "--compare", "previous"]);
    assert!(
        old.status.success(),
        "{}",
        String::from_utf8_lossy(&old.stderr)
    );
    assert_eq!(old.stdout, new.stdout, "the same runs, the same page");
    let notes = String::from_utf8_lossy(&old.stderr);
    assert!(
        notes.contains("--run is now --head") && notes.contains("--compare is now --base"),
        "{notes}"
    );
    let both = run(&["--head", "latest", "--run", "latest"]);
    assert_eq!(both.status.code(), Some(2));
}

/// `show --page components` prints the four components charts from a recorded store: the
/// workers' notes go through the store and come back as the charts' numbers.
#[test]
fn show_prints_the_components_charts_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let text = show_text(&["--page", "components", "--width", "120"], dir.path());
    for expected in [
        "── 4 Components ──",
        "PyTorch matmul vs size",
        "side n (log2)",
        "bf16",
        "SDPA GFLOP/s b2_h8_s512_d64_f32",
        "flash 57.7 GFLOP/s",
        "efficient, cudnn: refused: No available kernel.",
        "vLLM tokens/s vs batch, bar p99..p50",
        "in128 out128",
        "batch (log2)",
        "DeepSpeed memory by ZeRO stage (MiB)",
        "ZeRO 3",
        "1680 MiB",
        "activations",
    ] {
        assert!(text.contains(expected), "`{expected}` missing:\n{text}");
    }
}

/// `show --page hardware` prints the cross-hardware page from runs of three machines, priced
/// from `--prices`; a bad prices file is bad input (exit 2) naming the file.
#[test]
fn show_prints_the_hardware_page() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dashboard_support::copy_hardware_runs(dir.path());
    let show = |prices: &Path| {
        Command::new(BIN)
            .args(["show", "--page", "hardware", "--width", "120", "--results"])
            .arg(dir.path())
            .arg("--prices")
            .arg(prices)
            .output()
            .unwrap()
    };
    let out = show(&prices);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("── 9 Hardware ──"), "{text}");
    assert!(text.contains("3 devices"), "{text}");
    assert!(text.contains("perf/$: USD per device-hour"), "{text}");
    assert!(text.contains("NVIDIA Grace [cpu] not measured"), "{text}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[prices]\nbasis = \"hour\"\n[prices.devices]\n\"AMD EPYC\" = -1\n",
    )
    .unwrap();
    let out = show(&bad);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.toml"), "{stderr}");
}

/// `show --page models` prints the recommendation matrix from the stored sweeps of two
/// machines (the config given): ranked by throughput, A's 2000 tokens/s wins ci-gpt2 over
/// B's 900, and B's failed ci-vit cell is no data.
#[test]
fn show_prints_the_models_page_from_stored_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let (results, config) = sweep_support::results(dir.path());
    let out = Command::new(BIN)
        .args(["show", "--page", "models", "--width", "140", "--results"])
        .arg(&results)
        .arg("--config")
        .arg(&config)
        .env_remove("STACKBENCH_STORE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("── 10 Models ──"), "{text}");
    assert!(text.contains("2 machines; rank: throughput"), "{text}");
    let gpt2 = text
        .lines()
        .find(|l| l.contains("ci-gpt2 · decode"))
        .unwrap_or_else(|| panic!("no ci-gpt2 row:\n{text}"));
    assert!(gpt2.contains("GPU-A: torch fp32 b1 s128"), "{gpt2}");
    let vit = text
        .lines()
        .find(|l| l.contains("ci-vit · forward"))
        .unwrap_or_else(|| panic!("no ci-vit row:\n{text}"));
    assert!(vit.contains("no data"), "{vit}");
}

struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "dash"])
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_all(&[text])
    }

    /// Waits for one screen that holds every one of `texts`. tmux can be read while the
    /// dashboard is half-way through redrawing, so a text seen on one capture says nothing
    /// about the rest of that capture: what a test asserts is waited for together.
    fn wait_for_all(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            let missing: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|text| !screen.contains(text))
                .collect();
            if missing.is_empty() {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{missing:?} never appeared together with the rest of {texts:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `text` is gone from the screen (an overlay closed).
    fn wait_without(&self, text: &str) {
        let start = Instant::now();
        while self.screen().contains(text) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "`{text}` never went away:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "dash"];
        args.extend_from_slice(keys);
        self.cmd(&args);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// Starts the dashboard with `extra` arguments in its own tmux server (one per test).
fn start_dashboard(results: &Path, extra: &str) -> Tmux {
    start_dashboard_with_env(results, "", extra)
}

/// As [`start_dashboard`], with `env` (`NAME=value ...`) set for the dashboard.
fn start_dashboard_with_env(results: &Path, env: &str, extra: &str) -> Tmux {
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let tmux = Tmux {
        socket: format!("stackbench-test-{}-{n}", std::process::id()),
    };
    let command = format!(
        "NO_COLOR=1 {env} '{BIN}' dashboard --results '{}' {extra}; echo \"EXITED $?\"; sleep 60",
        results.display()
    );
    tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "dash",
        "-x",
        "100",
        "-y",
        "30",
        &command,
    ]);
    tmux
}

#[test]
fn the_dashboard_runs_in_a_real_terminal_and_restores_it() {
    if !dashboard_support::tool_present("tmux", "-V") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let tmux = start_dashboard(dir.path(), "");
    tmux.wait_for("Memory bandwidth");
    assert_eq!(
        tmux.cmd(&["display", "-p", "-t", "dash", "#{alternate_on}"])
            .trim(),
        "1"
    );
    tmux.keys(&["2"]);
    tmux.wait_for("GEMM throughput vs size");
    tmux.keys(&["Right"]);
    tmux.wait_for("Tensor ops at their largest size");
    tmux.keys(&["Right"]);
    tmux.wait_for_all(&["vLLM tokens/s vs batch", "DeepSpeed memory by ZeRO stage"]);
    tmux.keys(&["7"]);
    tmux.wait_for_all(&["Not measured in this run (6)", "no CUDA driver"]);
    tmux.keys(&["?"]);
    tmux.wait_for("switch page");
    tmux.keys(&["Escape"]);
    // A key sent right after Escape can reach the terminal as one Alt+key sequence: wait
    // for the help to close first, as a person would.
    tmux.wait_without("Help (? or Esc closes)");
    tmux.keys(&["5"]);
    tmux.wait_for("before nightly-17 → after nightly-18");
    tmux.keys(&["q"]);
    let after = tmux.wait_for("EXITED 0");
    assert!(
        !after.contains("Before/after"),
        "the dashboard is still on screen:\n{after}"
    );
    assert_eq!(
        tmux.cmd(&["display", "-p", "-t", "dash", "#{alternate_on}"])
            .trim(),
        "0"
    );
    assert_eq!(
        tmux.cmd(&["display", "-p", "-t", "dash", "#{cursor_flag}"])
            .trim(),
        "1"
    );
}

/// The fixture store copied into PostgreSQL (`analyze-trends store copy`) reads the same
/// through `--store`: every `show` page is the text the SQLite store gives, and the
/// terminal dashboard opens on it and switches pages, with a results directory that holds
/// no store of its own.
#[test]
fn the_dashboard_and_every_page_read_a_postgresql_store_as_they_read_sqlite() {
    let Some(url) = pg_support::fresh_database("dashboard_pages") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let from = format!("sqlite:{}", dir.path().join("stackbench.db").display());
    let copied = Command::new(env!("CARGO_BIN_EXE_analyze-trends"))
        .args(["store", "copy", &from, &url])
        .output()
        .unwrap();
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    let viewer = tempfile::tempdir().unwrap();
    let page = ["--page", "all", "--width", "100"];
    let on_sqlite = show_text(&page, dir.path());
    let on_postgres = show_text(&[&page[..], &["--store", &url]].concat(), viewer.path());
    assert_eq!(on_postgres, on_sqlite);
    assert!(on_postgres.contains("── 9 Hardware ──"), "{on_postgres}");
    if !dashboard_support::tool_present("tmux", "-V") {
        return;
    }
    let tmux = start_dashboard(viewer.path(), &format!("--store '{url}'"));
    tmux.wait_for("Memory bandwidth");
    tmux.keys(&["5"]);
    tmux.wait_for("before nightly-17 → after nightly-18");
    tmux.keys(&["7"]);
    tmux.wait_for_all(&["Not measured in this run (6)", "no CUDA driver"]);
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn follow_mode_shows_benchmarks_as_they_land() {
    if !dashboard_support::tool_present("tmux", "-V") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let progress = dir.path().join("progress.jsonl");
    let benchmark = |id: &str, ms: u64| {
        format!(
            r#"{{"event":"benchmark","target":"gemm","id":"{id}","outcome":"measured","throughput":{{"Elements":2000000}},"samples":{{"iters":[10,10,10],"times":[1000000,1100000,1050000]}},"unix_ms":{ms}}}"#
        )
    };
    let plan = r#"{"event":"plan","total":3,"suite":"quick","unix_ms":1000}"#;
    let target = r#"{"event":"target","target":"gemm","unix_ms":1000}"#;
    let first = benchmark("gemm/cpu/f32/100x100x100", 2000);
    std::fs::write(&progress, format!("{plan}\n{target}\n{first}\n")).unwrap();
    // No run recorded yet: following the first suite of a fresh results directory.
    let results = dir.path().join("results");
    let tmux = start_dashboard(
        &results,
        &format!(
            "--follow --progress '{}' --criterion-dir '{}'",
            progress.display(),
            dir.path().display()
        ),
    );
    tmux.wait_for("benchmark 1 of 3");
    tmux.keys(&["2"]);
    tmux.wait_for("100x100x100");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&progress)
        .unwrap();
    use std::io::Write;
    writeln!(file, "{}", benchmark("gemm/cpu/f32/200x200x200", 3000)).unwrap();
    writeln!(file, r#"{{"event":"benchmark","target":"gemm","id":"gemm/cpu/f16/100x100x100","outcome":"skipped","reason":"no f16 here","unix_ms":4000}}"#).unwrap();
    writeln!(file, r#"{{"event":"done","unix_ms":5000}}"#).unwrap();
    // The chart filled in, and the count reached the plan's total.
    tmux.wait_for_all(&["live: finished", "benchmark 3 of 3", "200x200x200"]);
    tmux.keys(&["7"]);
    tmux.wait_for("no f16 here");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

/// A panic while the dashboard runs (forced by the test-only panic key) still leaves the
/// alternate screen, shows the cursor and prints the panic message.
#[test]
fn a_panic_restores_the_terminal_and_prints_its_message() {
    if !dashboard_support::tool_present("tmux", "-V") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let tmux = start_dashboard_with_env(dir.path(), "STACKBENCH_DASHBOARD_PANIC_KEY=x", "");
    tmux.wait_for("Memory bandwidth");
    let display = |format: &str| tmux.cmd(&["display", "-p", "-t", "dash", format]);
    assert_eq!(display("#{alternate_on}").trim(), "1");
    // Another page first, so the panic happens in a dashboard that has been used.
    tmux.keys(&["2"]);
    tmux.wait_for("GEMM throughput vs size");
    tmux.keys(&["x"]);
    let after = tmux.wait_for("EXITED 101");
    assert!(
        after.contains("panicking on purpose at key Char('x')"),
        "the panic message is missing:\n{after}"
    );
    assert!(
        !after.contains("GEMM throughput vs size"),
        "the dashboard is still on screen:\n{after}"
    );
    assert_eq!(display("#{alternate_on}").trim(), "0");
    assert_eq!(display("#{cursor_flag}").trim(), "1");
}
