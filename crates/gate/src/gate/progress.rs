//! Progress of the gate on stderr: on a terminal an `indicatif` bar with the round, the side,
//! the benchmark being measured and an ETA; otherwise (CI logs) one line per round, so a log
//! stays readable and still shows where a long gate is.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Instant;

pub struct Progress {
    bar: ProgressBar,
    interactive: bool,
    round_started: std::cell::Cell<Instant>,
}

impl Progress {
    /// `steps`: target runs planned (rounds × sides × targets); more can be added later.
    pub fn new(steps: u64) -> Progress {
        let interactive = std::io::stderr().is_terminal();
        let bar = if interactive {
            ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        if let Ok(style) =
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} ETA {eta} {wide_msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            interactive,
            round_started: std::cell::Cell::new(Instant::now()),
        }
    }

    /// Adds planned steps (extra rounds for inconclusive benchmarks).
    pub fn plan_more(&self, steps: u64) {
        self.bar.inc_length(steps);
    }

    pub fn round_start(&self, round: usize, order: &str) {
        self.round_started.set(Instant::now());
        self.bar.set_prefix(format!("round {round} ({order})"));
    }

    pub fn side(&self, side: &str, target: &str) {
        self.bar.set_message(format!("{side} · {target}"));
    }

    pub fn benchmark(&self, id: &str) {
        if self.interactive {
            self.bar.set_message(id.trim().to_string());
        }
    }

    pub fn step_done(&self) {
        self.bar.inc(1);
    }

    /// The one line per round a non-terminal gets.
    pub fn round_done(&self, round: usize, order: &str, benchmarks: usize) {
        let took = self.round_started.get().elapsed().as_secs_f64();
        if self.interactive {
            self.bar
                .println(format!("round {round} ({order}) done in {took:.1} s"));
        } else {
            eprintln!(
                "analyze-trends gate: round {round} ({order}) measured {benchmarks} benchmark(s) in {took:.1} s"
            );
        }
    }

    pub fn note(&self, line: &str) {
        if self.interactive {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
