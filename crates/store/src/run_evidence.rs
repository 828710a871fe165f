//! What a run stands on: how many benchmarks it measured, with how many usable samples, and
//! how many failed and why. Every path that brings a run in (`record` from Criterion's tree,
//! `import` and the store from run files and the database) applies one rule here: a
//! benchmark whose samples cannot be judged (none, zero, negative, not finite, counts and
//! times of different lengths) is a failure naming its id and the reason, never a
//! measurement. Downstream (compare, history, show, the dashboard) therefore never sees a
//! number that was not measured.
//!
//! The run-level evidence is the verdicts' [`Evidence`] (`evidence.rs`), built from a run:
//! one count and one wording for every command.

use super::evidence::Evidence;
use super::run::{FailedBenchmark, RunRecord};
use crate::stats::{SampleDefect, UNUSABLE_SAMPLES};
use std::fmt;

impl FailedBenchmark {
    /// `id` failed for want of usable samples (`reason`: the [`crate::stats::SampleDefect`],
    /// or the reader's words): the one wording every path records, so summaries can count
    /// these failures apart from the harness's own errors.
    pub fn unusable_samples(id: String, reason: impl fmt::Display) -> FailedBenchmark {
        FailedBenchmark {
            id,
            error: format!("{UNUSABLE_SAMPLES}: {reason}"),
        }
    }

    /// Whether this failure is one of [`FailedBenchmark::unusable_samples`].
    pub fn is_unusable_samples(&self) -> bool {
        self.error.starts_with(UNUSABLE_SAMPLES)
    }

    /// The defect of a [`FailedBenchmark::unusable_samples`] failure, as evidence for a
    /// verdict that reads this run; `None` for the harness's own errors.
    pub fn unusable_defect(&self) -> Option<SampleDefect> {
        let reason = self.error.strip_prefix(UNUSABLE_SAMPLES)?;
        let reason = reason.strip_prefix(": ").unwrap_or(reason);
        Some(SampleDefect::Recorded {
            reason: reason.to_string(),
        })
    }
}

impl RunRecord {
    /// Moves every benchmark without usable samples into `failed`, with the reason; returns
    /// the ids moved. A run file written by hand, by an older version or by another tool
    /// may hold such samples, and the statistics downstream take logs of them.
    pub fn fail_unusable(&mut self) -> Vec<String> {
        let mut moved = Vec::new();
        let mut kept = Vec::with_capacity(self.benchmarks.len());
        for bench in std::mem::take(&mut self.benchmarks) {
            match bench.samples.usable() {
                Err(defect) => {
                    moved.push(bench.id.clone());
                    self.failed
                        .push(FailedBenchmark::unusable_samples(bench.id, defect));
                }
                Ok(_) => kept.push(bench),
            }
        }
        self.benchmarks = kept;
        moved
    }

    /// This run as the store keeps it: itself when every benchmark's samples are usable
    /// (no copy), else a copy with the unusable ones failed.
    pub fn with_unusable_failed(&self) -> std::borrow::Cow<'_, RunRecord> {
        if self.benchmarks.iter().all(|b| b.samples.usable().is_ok()) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut run = self.clone();
        run.fail_unusable();
        std::borrow::Cow::Owned(run)
    }
}

/// The evidence of one or more runs, for the summary line of `record` and `import`: the
/// shared [`Evidence`], one source per run, counted and worded in one place.
impl Evidence {
    /// The evidence of `run`.
    pub fn of_run(run: &RunRecord) -> Evidence {
        let mut evidence = Evidence::new();
        evidence.add_run(run);
        evidence
    }

    /// Adds `run`'s benchmarks: each measured one judged on its usable samples, each
    /// failure of the sample rule as unusable (with its reason), the harness's errors as
    /// failed, and what this machine could not run as skipped.
    pub fn add_run(&mut self, run: &RunRecord) {
        for bench in &run.benchmarks {
            match bench.samples.usable() {
                Ok(n) => self.judged(&bench.id, &[n]),
                Err(defect) => self.unusable(&bench.id, Some(&run.run_id), defect),
            }
        }
        for failure in &run.failed {
            match failure.unusable_defect() {
                Some(defect) => self.unusable(&failure.id, Some(&run.run_id), defect),
                None => self.failed(1),
            }
        }
        self.skipped(run.skipped.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BenchmarkRecord, Samples};

    fn bench(id: &str, times: Vec<f64>) -> BenchmarkRecord {
        let samples = Samples {
            sampling_mode: None,
            iters: vec![1.0; times.len()],
            times,
        };
        BenchmarkRecord::new(id, "g", samples)
    }

    #[test]
    fn unusable_samples_become_failures_naming_the_reason() {
        let mut run = RunRecord::new(0, std::path::Path::new("c"), "new", None);
        run.benchmarks = vec![
            bench("a", vec![1.0, 2.0]),
            bench("b", vec![-1.0, 2.0]),
            bench("c", vec![0.0, 0.0]),
            bench("d", vec![]),
            bench("e", vec![f64::NAN]),
        ];
        assert_eq!(run.fail_unusable(), vec!["b", "c", "d", "e"]);
        assert_eq!(run.benchmarks.len(), 1);
        assert!(run.failure("b").unwrap().contains("-1"), "{:?}", run.failed);
        assert!(run.failure("d").unwrap().contains("no samples"));
        let evidence = Evidence::of_run(&run);
        assert_eq!(
            evidence.describe_measured(),
            "1 benchmarks measured (2 samples each, 2 in all), 4 failed (4 with no usable samples), 0 skipped"
        );
    }
}
