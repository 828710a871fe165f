//! The real `stackbench` binary: `show` prints the pages as text, and `dashboard` runs
//! under tmux (a real terminal): it starts, switches pages by key, quits with `q` and
//! leaves the terminal as it found it (alternate screen left, cursor visible).
//!
//! Without tmux the terminal test is skipped with a message, unless
//! `STACKBENCH_REQUIRE_TOOLS=1` (ci/test.sh sets it), which makes a missing tmux a failure.

mod dashboard_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stackbench");

#[test]
fn show_prints_every_page_and_rejects_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    dashboard_support::write_fixture_store(dir.path());
    let out = Command::new(BIN)
        .args(["show", "--page", "all", "--width", "100", "--results"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for title in [
        "1 Baseline",
        "2 GEMM",
        "5 Before/after",
        "7 Skips/failures",
        "8 Summary",
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
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "`{text}` never appeared:\n{screen}"
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

fn start_dashboard(results: &Path) -> Tmux {
    let tmux = Tmux {
        socket: format!("stackbench-test-{}", std::process::id()),
    };
    let command = format!(
        "NO_COLOR=1 '{BIN}' dashboard --results '{}'; echo \"EXITED $?\"; sleep 60",
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
    let tmux = start_dashboard(dir.path());
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
    tmux.keys(&["7"]);
    let outcomes = tmux.wait_for("Not measured in this run (4)");
    assert!(outcomes.contains("no CUDA driver"), "{outcomes}");
    tmux.keys(&["?"]);
    tmux.wait_for("switch page");
    tmux.keys(&["Escape"]);
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
