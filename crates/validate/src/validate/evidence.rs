//! What a validation verdict stands on: which checks ran, on which tier (installation, or
//! the benchmark family the check judged), and how many usable samples each one read.
//! A verdict whose checks read no sample at all measured nothing, and is never a pass.
//!
//! Its shape is validate's own (checks and tiers, `evidence` in
//! `schemas/validation.schema.json`); the samples it counts are those the one sample rule
//! ([`crate::stats::usable_timed`]) let through.

use super::{Status, ThresholdCheck};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The tier of installation checks; a benchmark check's tier is its family.
pub const INSTALLATION_TIER: &str = "installation";

/// One check that ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckEvidence {
    /// The check's name (the benchmark id for a threshold check).
    pub id: String,
    pub tier: String,
    /// Usable samples the check read: the benchmark's samples for a threshold check, those of
    /// every measured benchmark of its group for "…runs", 0 for a yes/no observation.
    pub samples: usize,
    pub status: Status,
}

/// The checks and their counts (`evidence` in `schemas/validation.schema.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    pub checks: usize,
    pub tiers: usize,
    pub passed: usize,
    pub warnings: usize,
    pub failed: usize,
    /// Selected benchmarks measured with usable samples, and those samples together.
    pub benchmarks: usize,
    pub samples: usize,
    /// Which checks ran, in the verdict's order.
    pub ran: Vec<CheckEvidence>,
}

impl Evidence {
    /// The evidence of `checks`; `samples` maps each judged benchmark id to its usable samples.
    pub fn of(checks: &[ThresholdCheck], samples: &BTreeMap<String, usize>) -> Evidence {
        let ran: Vec<CheckEvidence> = checks
            .iter()
            .map(|check| CheckEvidence {
                id: check.name.clone(),
                tier: tier_of(check),
                samples: samples_of(check, samples),
                status: check.status,
            })
            .collect();
        let count = |status: Status| ran.iter().filter(|c| c.status == status).count();
        Evidence {
            checks: ran.len(),
            tiers: ran.iter().map(|c| &c.tier).collect::<BTreeSet<_>>().len(),
            passed: count(Status::Passed),
            warnings: count(Status::Warning),
            failed: count(Status::Failed),
            benchmarks: samples.len(),
            samples: samples.values().sum(),
            ran,
        }
    }

    /// Whether any check read a measured sample: without one, nothing was measured.
    pub fn measured_anything(&self) -> bool {
        self.ran.iter().any(|c| c.samples > 0)
    }

    /// "14 checks on 3 tiers, 12 passed, 2 warnings, 0 failed; 9 benchmarks measured, 90
    /// usable samples".
    pub fn summary(&self) -> String {
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        format!(
            "{} on {}, {} passed, {}, {} failed; {} measured, {}",
            plural(self.checks, "check"),
            plural(self.tiers, "tier"),
            self.passed,
            plural(self.warnings, "warning"),
            self.failed,
            plural(self.benchmarks, "benchmark"),
            plural(self.samples, "usable sample"),
        )
    }
}

fn tier_of(check: &ThresholdCheck) -> String {
    match &check.benchmark {
        Some(id) => crate::workload::family::IdParts::split(id)
            .family
            .to_owned(),
        None => INSTALLATION_TIER.to_owned(),
    }
}

/// A threshold check reads its benchmark's samples; "installation/<family>/<backend> runs"
/// reads those of every measured benchmark of that group.
fn samples_of(check: &ThresholdCheck, samples: &BTreeMap<String, usize>) -> usize {
    if let Some(id) = &check.benchmark {
        return samples.get(id).copied().unwrap_or(0);
    }
    let Some(group) = check
        .name
        .strip_prefix("installation/")
        .and_then(|rest| rest.strip_suffix(" runs"))
    else {
        return 0;
    };
    let prefix = format!("{group}/");
    samples
        .iter()
        .filter(|(id, _)| id.starts_with(&prefix))
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::check::yes_no;

    #[test]
    fn counts_tiers_and_samples_per_check() {
        let mut triad = yes_no("memory_bandwidth/cpu/triad/1GiB", "", String::new(), true);
        triad.benchmark = Some("memory_bandwidth/cpu/triad/1GiB".into());
        triad.status = Status::Warning;
        let checks = vec![
            yes_no("installation/cpu loads", "", String::new(), true),
            yes_no(
                "installation/memory_bandwidth/cpu runs",
                "",
                String::new(),
                true,
            ),
            triad,
        ];
        let samples = BTreeMap::from([("memory_bandwidth/cpu/triad/1GiB".to_string(), 10)]);
        let evidence = Evidence::of(&checks, &samples);
        assert_eq!(
            (
                evidence.checks,
                evidence.tiers,
                evidence.passed,
                evidence.warnings
            ),
            (3, 2, 2, 1)
        );
        let per_check: Vec<usize> = evidence.ran.iter().map(|c| c.samples).collect();
        assert_eq!(per_check, vec![0, 10, 10]);
        assert!(evidence.measured_anything());
        assert_eq!(
            evidence.summary(),
            "3 checks on 2 tiers, 2 passed, 1 warning, 0 failed; 1 benchmark measured, 10 usable samples"
        );
        let observed_only = Evidence::of(&checks[..1], &BTreeMap::new());
        assert!(!observed_only.measured_anything());
    }
}
