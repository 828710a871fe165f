//! Live mode: the suite as it runs. `run_benchmarks.sh` names a progress file
//! (`STACKBENCH_PROGRESS`, JSON lines); it writes the plan (how many benchmarks) and the
//! end, and the harness appends one line per benchmark as it lands, with its samples.
//! The dashboard re-reads the file, so nothing parses Criterion's stdout and a dashboard
//! started late still sees everything. A half-written last line is left for the next read.

use super::theme::Theme;
use crate::criterion_output::{SampleFile, Throughput};
use crate::harness::sidecar::{
    BenchmarkEntry, BenchmarkOutcome, TARGET_REPORT_SCHEMA, TargetReport,
};
use crate::results::{BenchmarkRecord, RunRecord};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Widget};
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
    fn entry(&self) -> BenchmarkEntry {
        let parts: Vec<&str> = self.id.splitn(4, '/').collect();
        let part = |i: usize| parts.get(i).copied().unwrap_or_default().to_string();
        let reason = self.reason.clone().unwrap_or_default();
        let outcome = match self.outcome.as_str() {
            "failed" => BenchmarkOutcome::Failed { error: reason },
            "skipped" => BenchmarkOutcome::Skipped { reason },
            _ => BenchmarkOutcome::Measured {
                notes: Default::default(),
            },
        };
        BenchmarkEntry {
            group: format!("{}/{}", part(0), part(1)),
            function: part(2),
            value: part(3),
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

    /// A run record of what has landed, so every page draws the live run unchanged.
    pub fn to_run(&self, system: Option<serde_json::Value>) -> RunRecord {
        let mut benchmarks: Vec<BenchmarkRecord> = Vec::new();
        let mut outcomes = std::collections::BTreeMap::new();
        for l in &self.landed {
            let entry = l.entry();
            if let (Some(samples), "measured") = (&l.samples, l.outcome.as_str()) {
                benchmarks.push(BenchmarkRecord {
                    id: l.id.clone(),
                    group: entry.group.clone(),
                    function: Some(entry.function.clone()),
                    value: Some(entry.value.clone()),
                    throughput: l.throughput,
                    estimates: None,
                    samples: samples.clone(),
                    notes: Vec::new(),
                    telemetry: None,
                });
            }
            outcomes.insert(l.id.clone(), entry);
        }
        benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
        let started = self.started_unix_ms.unwrap_or(0);
        // Failures of the live run are in its target report's outcomes.
        RunRecord {
            run_id: "live".into(),
            label: Some("live".into()),
            targets: serde_json::to_value(TargetReport {
                schema: TARGET_REPORT_SCHEMA.into(),
                target: "live".into(),
                suite: self.suite.clone(),
                started_unix_s: started / 1000,
                benchmarks: outcomes,
            })
            .into_iter()
            .collect(),
            benchmarks,
            ..RunRecord::new(started, std::path::Path::new(""), "live", system)
        }
    }
}

fn minutes(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}", s / 60, s % 60)
}

/// Three lines over the pages: target, i of n, elapsed and ETA; the last results.
pub fn live_header(p: &Progress, theme: Theme) -> impl Widget + '_ {
    LiveHeader { p, theme }
}

struct LiveHeader<'a> {
    p: &'a Progress,
    theme: Theme,
}

impl Widget for LiveHeader<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let p = self.p;
        let (elapsed, eta) = p.timing(crate::results::now_unix_ms());
        let state = if p.finished_unix_ms.is_some() {
            "finished"
        } else {
            "running"
        };
        let total = p.total.map_or("?".into(), |t| t.to_string());
        let title = format!(
            " live: {state} · {} · benchmark {} of {total} · elapsed {} · ETA {} ",
            p.target.as_deref().unwrap_or("starting"),
            p.landed.len(),
            minutes(elapsed),
            eta.map_or("–".into(), minutes),
        );
        let block = Block::bordered().title(title);
        let inner = block.inner(area);
        block.render(area, buf);
        let last: Vec<String> = p
            .landed
            .iter()
            .rev()
            .take(3)
            .map(|l| match l.outcome.as_str() {
                "measured" => {
                    let ns = l
                        .samples
                        .as_ref()
                        .map(|s| crate::stats::median(&s.per_iteration_ns()));
                    format!("{} {}", l.id, ns.map_or("".into(), crate::units::format_ns))
                }
                other => format!("{} {other}", l.id),
            })
            .collect();
        let style = if p.landed.last().is_some_and(|l| l.outcome == "failed") {
            self.theme.failure()
        } else {
            ratatui::style::Style::new()
        };
        Line::styled(format!("last: {}", last.join(" · ")), style).render(inner, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_half_written_line_waits_and_eta_follows_the_mean() {
        let text = concat!(
            r#"{"event":"plan","total":4,"suite":"quick","unix_ms":1000}"#,
            "\n",
            r#"{"event":"target","target":"gemm","unix_ms":1000}"#,
            "\n",
            r#"{"event":"benchmark","target":"gemm","id":"gemm/cpu/f32/8x8x8","outcome":"measured","samples":{"iters":[1,1],"times":[10,12]},"unix_ms":3000}"#,
            "\n",
            r#"{"event":"benchmark","target":"gemm","id":"gemm/cpu/f16/8x8x8","outcome":"skipped","reason":"no f16","unix_ms":5000}"#,
            "\n",
            r#"{"event":"benchmark","target":"gemm","id":"#,
        );
        let p = Progress::parse(text);
        assert_eq!(p.total, Some(4));
        assert_eq!(p.landed.len(), 2);
        assert_eq!(p.bad_lines, 0);
        assert_eq!(p.timing(5000), (4000, Some(4000)));
        let run = p.to_run(None);
        assert_eq!(run.benchmarks.len(), 1);
        let not_measured = crate::analysis::trends::not_measured(&run);
        assert_eq!(not_measured.len(), 1, "{not_measured:?}");
        assert_eq!(not_measured[0].reason, "no f16");
    }
}
