//! What a verdict stands on, and the one rule that keeps a verdict honest: a verdict on no
//! evidence is never a pass. Every command that judges samples (`compare`, `gate`,
//! `validate`, `history`, `record`, `import`, `show`) builds an [`Evidence`] as it reads,
//! asks the sample rule ([`crate::stats::usable_timed`], [`crate::stats::usable_median`],
//! in `stats` so the Criterion reader below shares it) about each benchmark's samples, and
//! ends with [`Evidence::require_some`] and [`Evidence::outcome`]:
//!
//! - a filter or suite that matches nothing is bad input ([`NoEvidence`], exit 2), naming
//!   the filter or the inputs;
//! - a benchmark with no usable samples (empty, all zero, negative, NaN or non-finite, an
//!   unreadable file) is `failed`, with its id and the [`SampleDefect`]; it is never
//!   skipped silently, and it makes the outcome [`Outcome::RegressionFound`] (exit 1).
//!
//! - a verdict whose benchmarks were judged but some of them could be told neither
//!   unchanged nor changed (`inconclusive`: the rounds or the samples disagree more than
//!   the threshold allows) is [`Outcome::Unsure`] (exit 3), never a pass; a maintainer
//!   may accept it for one head commit ([`AcceptedUnsure`]), which is then recorded with
//!   the verdict.
//!
//! It lives here, below the verdicts and beside the run record, so that the run-level
//! evidence of `record` and `import` (`run_evidence.rs`) is the same type, counted and
//! worded here, as the verdict-level evidence of compare, gate, history and validate. The
//! binaries map [`Outcome`] to their exit code with [`Outcome::exit_code`].

use crate::stats::{SampleDefect, UNUSABLE_SAMPLES};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a command found, as the binaries' exit codes: 0 clean, 1 a regression or a failed
/// benchmark, 2 bad input, 3 unsure. Errors (`Err`) are bad input too; `BadInput` is for a
/// command that finished and printed its findings but had nothing valid to judge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    /// A regression, or a benchmark that failed or had no usable samples.
    RegressionFound,
    BadInput,
    /// Nothing regressed or failed, but at least one benchmark was `inconclusive` and no
    /// one accepted that: the data could not rule out a change of the threshold's size.
    Unsure,
}

/// The exit code of [`Outcome::Unsure`], for help texts and scripts.
pub const UNSURE_EXIT_CODE: i32 = 3;

impl Outcome {
    /// 0 clean, 1 regression or failure, 2 bad input, 3 unsure.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Clean => 0,
            Outcome::RegressionFound => 1,
            Outcome::BadInput => 2,
            Outcome::Unsure => UNSURE_EXIT_CODE,
        }
    }
}

/// A maintainer's acceptance of an unsure verdict for one head commit (in CI: the label
/// `stackbench-accept-unsure:<sha7>`, which the reusable workflow turns into
/// `--accept-unsure SHA --accept-unsure-label LABEL`). It binds to that commit only: a
/// new push is a new head and is judged afresh. Recorded in the comparison (and so in the
/// store) as `accepted_unsure`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AcceptedUnsure {
    /// The label that carried the acceptance; `None` when given on the command line alone.
    pub by_label: Option<String>,
    /// The head commit the acceptance names, as given (7 to 40 hex digits).
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{7,40}$"))]
    pub sha: String,
}

/// `--accept-unsure` named something that is not the head it would apply to (bad input).
#[derive(Debug, thiserror::Error)]
pub enum AcceptanceError {
    #[error(
        "--accept-unsure `{sha}` is not a commit SHA (7 to 40 hexadecimal digits): an acceptance binds to one head commit"
    )]
    NotASha { sha: String },
    #[error(
        "--accept-unsure names {sha}, but the head is {head}: an acceptance binds to the head commit it was given for, and this one is not it"
    )]
    OtherHead { sha: String, head: String },
    #[error(
        "--accept-unsure names {sha}, but the head is the current checkout, which has no commit to bind it to"
    )]
    NoHeadCommit { sha: String },
}

impl AcceptedUnsure {
    /// An acceptance of `sha` (7 to 40 hex digits), carried by `label` when given.
    pub fn new(sha: &str, label: Option<&str>) -> Result<AcceptedUnsure, AcceptanceError> {
        let sha = sha.trim().to_ascii_lowercase();
        if !(7..=40).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AcceptanceError::NotASha { sha });
        }
        Ok(AcceptedUnsure {
            by_label: label.map(String::from),
            sha,
        })
    }

    /// Checks that the acceptance names `head` (a full commit id): its SHA must be a prefix
    /// of it, so an acceptance given for an earlier push never carries over.
    pub fn bind(&self, head: Option<&str>) -> Result<(), AcceptanceError> {
        let Some(head) = head else {
            return Err(AcceptanceError::NoHeadCommit {
                sha: self.sha.clone(),
            });
        };
        if head.to_ascii_lowercase().starts_with(&self.sha) {
            Ok(())
        } else {
            Err(AcceptanceError::OtherHead {
                sha: self.sha.clone(),
                head: head.to_string(),
            })
        }
    }
}

/// One benchmark or check a verdict stood on, with its usable samples per source (one
/// count for a run, two for baseline and candidate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Judged {
    pub id: String,
    pub samples: Vec<usize>,
}

/// One benchmark that could not be judged, with why; it counts as `failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unusable {
    pub id: String,
    /// Which side or source it came from (`baseline`, `candidate`, a run id), when more
    /// than one was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub defect: SampleDefect,
    /// The defect in words, for readers that do not know the kinds.
    pub reason: String,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{} ({source}): {}", self.id, self.defect),
            None => write!(f, "{}: {}", self.id, self.defect),
        }
    }
}

/// What a verdict stands on: the benchmarks judged with their usable samples, the ones
/// that failed (no usable samples, or a failure the harness reported), and how many were
/// left out on purpose. Serialised as the `evidence` field of the JSON the binaries write.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
// A verdict on no evidence is never written (`require_some`): the schema holds it too.
#[schemars(extend("anyOf" = [
    {"properties": {"judged": {"minimum": 1}}},
    {"properties": {"failed": {"minimum": 1}}}
]))]
pub struct Evidence {
    /// Benchmarks or checks judged.
    judged: usize,
    /// Benchmarks or checks counted as failed.
    failed: usize,
    /// Left out with a stated reason that is not a failure (`new`, `missing`, a filter).
    skipped: usize,
    /// Per source, the fewest usable samples any judged benchmark had.
    min_samples: Vec<usize>,
    benchmarks: Vec<Judged>,
    unusable: Vec<Unusable>,
}

/// A verdict was asked of nothing: an empty filter, suite or input. Bad input (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("nothing to judge: {scope} left no benchmark with samples, so there is no verdict")]
pub struct NoEvidence {
    /// The filter, suite or inputs, in words.
    pub scope: String,
}

impl Evidence {
    pub fn new() -> Evidence {
        Evidence::default()
    }

    /// `id` was judged on `samples` usable samples per source.
    pub fn judged(&mut self, id: &str, samples: &[usize]) {
        if self.min_samples.len() < samples.len() {
            self.min_samples.resize(samples.len(), usize::MAX);
        }
        for (min, n) in self.min_samples.iter_mut().zip(samples) {
            *min = (*min).min(*n);
        }
        self.judged += 1;
        self.benchmarks.push(Judged {
            id: id.to_string(),
            samples: samples.to_vec(),
        });
    }

    /// `id` had no usable samples in `source`: a failure, never a silent skip.
    pub fn unusable(&mut self, id: &str, source: Option<&str>, defect: SampleDefect) {
        self.failed += 1;
        self.unusable.push(Unusable {
            id: id.to_string(),
            source: source.map(String::from),
            reason: defect.to_string(),
            defect,
        });
    }

    /// A failure reported by something else (the harness, a check), counted here so the
    /// summary's counts stay complete.
    pub fn failed(&mut self, count: usize) {
        self.failed += count;
    }

    /// Left out with a reason that is not a failure.
    pub fn skipped(&mut self, count: usize) {
        self.skipped += count;
    }

    pub fn judged_count(&self) -> usize {
        self.judged
    }

    pub fn failed_count(&self) -> usize {
        self.failed
    }

    pub fn skipped_count(&self) -> usize {
        self.skipped
    }

    /// The fewest usable samples per source over the judged benchmarks.
    pub fn min_samples(&self) -> &[usize] {
        &self.min_samples
    }

    pub fn benchmarks(&self) -> &[Judged] {
        &self.benchmarks
    }

    pub fn unusable_list(&self) -> &[Unusable] {
        &self.unusable
    }

    /// Nothing judged and nothing failed: no evidence of anything.
    pub fn is_empty(&self) -> bool {
        self.judged == 0 && self.failed == 0
    }

    /// Usable samples over every judged benchmark and source.
    pub fn samples_total(&self) -> usize {
        self.benchmarks.iter().flat_map(|b| &b.samples).sum()
    }

    /// What was measured, in words, for the summary line of a command that keeps runs
    /// (`record`, `import`): `12 benchmarks measured (10 to 100 samples each, 840 in all),
    /// 2 failed (1 with no usable samples, 1 with an error), 3 skipped`.
    pub fn describe_measured(&self) -> String {
        let mut line = format!("{} benchmarks measured", self.judged);
        let counts = self.benchmarks.iter().flat_map(|b| &b.samples);
        if let (Some(lo), Some(hi)) = (counts.clone().min(), counts.max()) {
            let total = self.samples_total();
            line += &if lo == hi {
                format!(" ({lo} samples each, {total} in all)")
            } else {
                format!(" ({lo} to {hi} samples each, {total} in all)")
            };
        }
        line += &format!(", {} failed", self.failed);
        if self.failed > 0 {
            let unusable = self.unusable.len();
            let errors = self.failed - unusable;
            let mut why = Vec::new();
            if unusable > 0 {
                why.push(format!("{unusable} with {UNUSABLE_SAMPLES}"));
            }
            if errors > 0 {
                why.push(format!("{errors} with an error"));
            }
            line += &format!(" ({})", why.join(", "));
        }
        line + &format!(", {} skipped", self.skipped)
    }

    /// The rule's first half: nothing judged and nothing failed is no verdict at all.
    /// `scope` names what was asked for (the filter, the suite, the inputs).
    pub fn require_some(&self, scope: impl FnOnce() -> String) -> Result<(), NoEvidence> {
        if self.is_empty() {
            return Err(NoEvidence { scope: scope() });
        }
        Ok(())
    }

    /// The rule's second half: a failure, or a regression found by the caller's own
    /// verdict, is exit 1; nothing judged is bad input; else clean.
    pub fn outcome(&self, regression: bool) -> Outcome {
        self.verdict_outcome(regression, false)
    }

    /// As [`Evidence::outcome`] for a verdict that can also be unsure: `unsure` (some
    /// benchmark inconclusive, not accepted) is exit 3 when nothing regressed or failed;
    /// a regression or a failure outranks it, and it never becomes a pass.
    pub fn verdict_outcome(&self, regression: bool, unsure: bool) -> Outcome {
        if regression || self.failed > 0 {
            Outcome::RegressionFound
        } else if self.judged == 0 {
            Outcome::BadInput
        } else if unsure {
            Outcome::Unsure
        } else {
            Outcome::Clean
        }
    }

    /// What was judged, in words, for a command's summary line, e.g.
    /// `12 benchmarks judged on 10+10 samples each (min)`; the caller adds its own counts.
    pub fn describe(&self, noun: &str) -> String {
        let plural = if self.judged == 1 { "" } else { "s" };
        if self.judged == 0 {
            return format!("0 {noun}s judged");
        }
        let per_source: Vec<String> = self.min_samples.iter().map(|n| n.to_string()).collect();
        format!(
            "{} {noun}{plural} judged on {} samples each (min)",
            self.judged,
            per_source.join("+")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_evidence_is_never_a_pass() {
        let empty = Evidence::new();
        let err = empty.require_some(|| "--filter `^x$`".into()).unwrap_err();
        assert!(err.to_string().contains("--filter `^x$`"), "{err}");
        assert_eq!(empty.outcome(false), Outcome::BadInput);

        let mut broken = Evidence::new();
        broken.unusable(
            "a/b",
            Some("candidate"),
            SampleDefect::AllZero { samples: 3 },
        );
        assert!(broken.require_some(String::new).is_ok());
        assert_eq!(broken.outcome(false), Outcome::RegressionFound);
        assert!(broken.unusable_list()[0].to_string().contains("a/b"));

        let mut fine = Evidence::new();
        fine.judged("a", &[10, 12]);
        fine.judged("b", &[11, 9]);
        assert_eq!(fine.outcome(false), Outcome::Clean);
        assert_eq!(fine.outcome(true), Outcome::RegressionFound);
        assert_eq!(
            fine.describe("benchmark"),
            "2 benchmarks judged on 10+9 samples each (min)"
        );
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Outcome::Clean.exit_code(), 0);
        assert_eq!(Outcome::RegressionFound.exit_code(), 1);
        assert_eq!(Outcome::BadInput.exit_code(), 2);
        assert_eq!(Outcome::Unsure.exit_code(), 3);
    }

    #[test]
    fn unsure_is_never_a_pass_and_a_regression_outranks_it() {
        let mut e = Evidence::new();
        e.judged("a", &[10, 10]);
        assert_eq!(e.verdict_outcome(false, true), Outcome::Unsure);
        assert_eq!(e.verdict_outcome(true, true), Outcome::RegressionFound);
        assert_eq!(e.verdict_outcome(false, false), Outcome::Clean);
        e.unusable("b", None, SampleDefect::AllZero { samples: 3 });
        assert_eq!(e.verdict_outcome(false, true), Outcome::RegressionFound);
        assert_eq!(
            Evidence::new().verdict_outcome(false, true),
            Outcome::BadInput
        );
    }

    #[test]
    fn an_acceptance_binds_to_its_head_commit_only() {
        let head = "0123456789abcdef0123456789abcdef01234567";
        let a = AcceptedUnsure::new("0123456", Some("stackbench-accept-unsure:0123456")).unwrap();
        assert!(a.bind(Some(head)).is_ok());
        assert!(
            AcceptedUnsure::new(head, None)
                .unwrap()
                .bind(Some(head))
                .is_ok()
        );
        let other = AcceptedUnsure::new("fedcba9", None).unwrap();
        let err = other.bind(Some(head)).unwrap_err().to_string();
        assert!(err.contains("fedcba9") && err.contains(head), "{err}");
        assert!(a.bind(None).is_err());
        for bad in [
            "012345",
            "xyz1234",
            "",
            "0123456789abcdef0123456789abcdef012345678",
        ] {
            assert!(AcceptedUnsure::new(bad, None).is_err(), "{bad}");
        }
    }
}
