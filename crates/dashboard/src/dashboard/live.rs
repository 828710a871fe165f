//! Live mode: the suite as it runs, drawn from the progress file
//! ([`crate::sidecar::progress`]) as a header over the pages, with the run so far turned
//! into a run record so every page draws it unchanged.

use super::theme::Theme;
use crate::results::{BenchmarkRecord, RunRecord};
use crate::sidecar::progress::Progress;
use crate::sidecar::{TARGET_REPORT_SCHEMA, TargetReport};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Widget};

/// A run record of what has landed, so every page draws the live run unchanged.
pub fn live_run(progress: &Progress, system: Option<serde_json::Value>) -> RunRecord {
    let mut benchmarks: Vec<BenchmarkRecord> = Vec::new();
    let mut outcomes = std::collections::BTreeMap::new();
    for l in &progress.landed {
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
                accuracy: None,
            });
        }
        outcomes.insert(l.id.clone(), entry);
    }
    benchmarks.sort_by(|a, b| a.id.cmp(&b.id));
    let started = progress.started_unix_ms.unwrap_or(0);
    // Failures of the live run are in its target report's outcomes.
    let mut run = RunRecord {
        run_id: "live".into(),
        label: Some("live".into()),
        targets: serde_json::to_value(TargetReport {
            schema: TARGET_REPORT_SCHEMA.into(),
            target: "live".into(),
            suite: progress.suite.clone(),
            started_unix_s: started / 1000,
            benchmarks: outcomes,
            gpu_clocks: None,
            measure: None,
            counted: Default::default(),
            profiles: Default::default(),
        })
        .into_iter()
        .collect(),
        benchmarks,
        ..RunRecord::new(started, std::path::Path::new(""), "live", system)
    };
    // Samples no statistic can use never reach a page as a number: the same rule as a
    // stored run's, so a benchmark shows as failed with its reason while the suite runs.
    run.fail_unusable();
    run
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
        let run = live_run(&p, None);
        assert_eq!(run.benchmarks.len(), 1);
        let not_measured = crate::analysis::trends::not_measured(&run);
        assert_eq!(not_measured.len(), 1, "{not_measured:?}");
        assert_eq!(not_measured[0].reason, "no f16");
    }
}
