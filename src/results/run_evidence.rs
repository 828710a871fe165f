//! What a run stands on: how many benchmarks it measured, with how many usable samples, and
//! how many failed and why. Every path that brings a run in (`record` from Criterion's tree,
//! `import` and the store from run files and the database) applies one rule here: a
//! benchmark whose samples cannot be judged (none, zero, negative, not finite, counts and
//! times of different lengths) is a failure naming its id and the reason, never a
//! measurement. Downstream (compare, history, show, the dashboard) therefore never sees a
//! number that was not measured.
//!
//! This is the run-level half of the evidence rule; the verdict-level `Evidence` of
//! compare/gate/validate lives beside `Outcome` and may take these counts.

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

/// The evidence of one or more runs, for the summary line of `record` and `import`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunEvidence {
    /// Benchmarks with usable samples.
    pub measured: usize,
    /// Usable samples over all measured benchmarks.
    pub samples: usize,
    /// Fewest and most samples of one measured benchmark.
    pub fewest_samples: Option<usize>,
    pub most_samples: Option<usize>,
    /// Benchmarks that ran and failed: the harness's errors and unusable samples.
    pub failed: usize,
    /// Of `failed`, those whose samples were unusable.
    pub unusable: usize,
    /// Benchmarks this machine could not run, or whose files the reader could not name.
    pub skipped: usize,
}

impl RunEvidence {
    pub fn of(run: &RunRecord) -> RunEvidence {
        let mut evidence = RunEvidence::default();
        evidence.add(run);
        evidence
    }

    /// Adds `run`'s benchmarks to the counts.
    pub fn add(&mut self, run: &RunRecord) {
        for bench in &run.benchmarks {
            let n = bench.samples.times.len();
            self.measured += 1;
            self.samples += n;
            self.fewest_samples = Some(self.fewest_samples.map_or(n, |m| m.min(n)));
            self.most_samples = Some(self.most_samples.map_or(n, |m| m.max(n)));
        }
        self.failed += run.failed.len();
        self.unusable += run
            .failed
            .iter()
            .filter(|f| f.is_unusable_samples())
            .count();
        self.skipped += run.skipped.len();
    }

    /// Nothing measured and nothing failed: no evidence of anything.
    pub fn is_empty(&self) -> bool {
        self.measured == 0 && self.failed == 0
    }
}

impl fmt::Display for RunEvidence {
    /// `12 benchmarks measured (10 to 100 samples each, 840 in all), 2 failed (1 with no
    /// usable samples, 1 error), 3 skipped`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} benchmarks measured", self.measured)?;
        match (self.fewest_samples, self.most_samples) {
            (Some(lo), Some(hi)) if lo == hi => {
                write!(f, " ({lo} samples each, {} in all)", self.samples)?
            }
            (Some(lo), Some(hi)) => {
                write!(f, " ({lo} to {hi} samples each, {} in all)", self.samples)?
            }
            _ => {}
        }
        write!(f, ", {} failed", self.failed)?;
        if self.failed > 0 {
            let errors = self.failed - self.unusable;
            let mut why = Vec::new();
            if self.unusable > 0 {
                why.push(format!("{} with {UNUSABLE_SAMPLES}", self.unusable));
            }
            if errors > 0 {
                why.push(format!("{errors} with an error"));
            }
            write!(f, " ({})", why.join(", "))?;
        }
        write!(f, ", {} skipped", self.skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{BenchmarkRecord, Samples};

    fn bench(id: &str, times: Vec<f64>) -> BenchmarkRecord {
        BenchmarkRecord {
            id: id.into(),
            group: "g".into(),
            function: None,
            value: None,
            throughput: None,
            estimates: None,
            samples: Samples {
                sampling_mode: None,
                iters: vec![1.0; times.len()],
                times,
            },
            notes: Vec::new(),
            telemetry: None,
        }
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
        let evidence = RunEvidence::of(&run);
        assert_eq!(
            evidence.to_string(),
            "1 benchmarks measured (2 samples each, 2 in all), 4 failed (4 with no usable samples), 0 skipped"
        );
    }
}
