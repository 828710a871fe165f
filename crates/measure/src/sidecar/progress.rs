//! The progress file of a live run (`STACKBENCH_PROGRESS`, JSON lines): `run_benchmarks.sh`
//! writes the plan (how many benchmarks) and the end, and the harness appends one line per
//! benchmark as it lands, with its samples. The dashboard re-reads the file, so nothing
//! parses Criterion's stdout and a dashboard started late still sees everything. A
//! half-written last line is left for the next read.
//!
//! The protocol lives here, below both the harness that writes it and the dashboard that
//! reads it, so neither depends on the other.

use super::{BenchmarkEntry, BenchmarkOutcome};
use crate::criterion_output::{SampleFile, Throughput};
use crate::workload::family::IdParts;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// The environment variable naming the progress file; unset, the harness writes none.
pub const PROGRESS_ENV: &str = "STACKBENCH_PROGRESS";

/// One line of the progress file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum ProgressEvent {
    /// Written by the runner before the first target: how many benchmarks to expect.
    Plan {
        total: usize,
        suite: String,
        unix_ms: u64,
    },
    /// A bench target started.
    Target { target: String, unix_ms: u64 },
    /// One benchmark landed.
    Benchmark(Landed),
    /// The runner finished (every target ran; recording follows).
    Done { unix_ms: u64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Landed {
    pub target: String,
    pub id: String,
    /// `measured`, `skipped` or `failed`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Iterations and total ns of each timed sample, as Criterion's `sample.json` has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<SampleFile>,
    pub unix_ms: u64,
}

impl Landed {
    /// The benchmark as a bench target's report records it (id split, outcome, reason).
    pub fn entry(&self) -> BenchmarkEntry {
        let parts = IdParts::split(&self.id);
        let reason = self.reason.clone().unwrap_or_default();
        let outcome = match self.outcome.as_str() {
            "failed" => BenchmarkOutcome::Failed { error: reason },
            "skipped" => BenchmarkOutcome::Skipped { reason },
            _ => BenchmarkOutcome::Measured {
                notes: Default::default(),
            },
        };
        BenchmarkEntry {
            group: format!("{}/{}", parts.family, parts.backend),
            function: parts.function.to_owned(),
            value: parts.value.to_owned(),
            outcome,
        }
    }
}

/// Appends one event to the progress file named by [`PROGRESS_ENV`], if any. A failure
/// is printed and otherwise ignored: live display must never fail a benchmark run.
pub fn append_event(event: &ProgressEvent) {
    let Some(path) = std::env::var_os(PROGRESS_ENV).filter(|p| !p.is_empty()) else {
        return;
    };
    let result = serde_json::to_string(event)
        .map_err(std::io::Error::other)
        .and_then(|line| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            // One write of the whole line: a reader sees it whole or not at all.
            file.write_all(format!("{line}\n").as_bytes())
        });
    if let Err(error) = result {
        eprintln!(
            "stackbench: warning: cannot append to the progress file {}: {error}",
            Path::new(&path).display()
        );
    }
}

/// What the progress file says so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub total: Option<usize>,
    pub suite: String,
    pub started_unix_ms: Option<u64>,
    pub target: Option<String>,
    pub landed: Vec<Landed>,
    pub finished_unix_ms: Option<u64>,
    /// Lines that were not progress events (reported, not fatal).
    pub bad_lines: usize,
}

impl Progress {
    /// Parses the file's complete lines; a missing file is an empty progress.
    pub fn read(path: &Path) -> std::io::Result<Progress> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        Ok(Progress::parse(&text))
    }

    pub fn parse(text: &str) -> Progress {
        let mut p = Progress::default();
        // Only lines ended by a newline: the last may still be being written.
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        for line in complete.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<ProgressEvent>(line) {
                Ok(ProgressEvent::Plan {
                    total,
                    suite,
                    unix_ms,
                }) => {
                    p.total = Some(total);
                    p.suite = suite;
                    p.started_unix_ms = Some(unix_ms);
                }
                Ok(ProgressEvent::Target { target, unix_ms }) => {
                    p.started_unix_ms.get_or_insert(unix_ms);
                    p.target = Some(target);
                }
                Ok(ProgressEvent::Benchmark(landed)) => p.landed.push(landed),
                Ok(ProgressEvent::Done { unix_ms }) => p.finished_unix_ms = Some(unix_ms),
                Err(_) => p.bad_lines += 1,
            }
        }
        p
    }

    /// (elapsed ms, estimated ms left) at `now`, the estimate from the mean time so far.
    pub fn timing(&self, now_unix_ms: u64) -> (u64, Option<u64>) {
        let Some(start) = self.started_unix_ms else {
            return (0, None);
        };
        let end = self.finished_unix_ms.unwrap_or(now_unix_ms);
        let elapsed = end.saturating_sub(start);
        let done = self.landed.len() as u64;
        let eta = match self.total {
            Some(total) if done > 0 && self.finished_unix_ms.is_none() => {
                Some(elapsed / done * (total as u64).saturating_sub(done))
            }
            _ => None,
        };
        (elapsed, eta)
    }
}
