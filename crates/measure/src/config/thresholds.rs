//! `[[thresholds]]` and `[validate]`: what `stackbench validate` expects of a benchmark on
//! a kind of device. A rule states an expected value (absolute, or a percentage of the
//! probe's peak) and two levels as fractions of it: below `warning_below` is a warning,
//! below `failure_below` a failure. The built-in defaults (vendor tables, peak fractions,
//! learned history) live in `crate::validate::defaults`; a rule here replaces them for the
//! ids it matches.

use regex::Regex;
use serde::Deserialize;

/// One `[[thresholds]]` entry.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThresholdRule {
    /// Regex over the full benchmark id.
    pub pattern: String,
    /// Device kind it applies to: a backend (`cpu`, `cuda`, `rocm`) or part of a device
    /// name (`H100`, `MI300X`); unset applies everywhere.
    pub device: Option<String>,
    /// The expected rate in the benchmark's own unit (GB/s for byte throughput, GFLOP/s
    /// for FLOP counts); for a benchmark without throughput, the expected mean time in ms
    /// (lower is better there).
    pub expected: Option<f64>,
    /// The expected rate as a percentage of the probe's peak for that backend/precision.
    pub percent_of_peak: Option<f64>,
    /// Below this fraction of `expected`: a warning (default 1.0: anything under it).
    #[serde(default = "one")]
    pub warning_below: f64,
    /// Below this fraction of `expected`: a failure (default 0.9).
    #[serde(default = "default_failure")]
    pub failure_below: f64,
    /// Where the figure comes from, shown beside each check.
    pub source: Option<String>,
}

fn one() -> f64 {
    1.0
}

fn default_failure() -> f64 {
    0.9
}

impl ThresholdRule {
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        Regex::new(&self.pattern).map_err(|e| {
            (
                "pattern".to_string(),
                format!("'{}' is not a valid regex: {e}", self.pattern),
            )
        })?;
        match (self.expected, self.percent_of_peak) {
            (Some(_), Some(_)) | (None, None) => {
                return Err((
                    "expected".into(),
                    "give exactly one of expected and percent_of_peak".into(),
                ));
            }
            (Some(v), None) | (None, Some(v)) if !(v.is_finite() && v > 0.0) => {
                return Err(("expected".into(), format!("{v} is not a positive number")));
            }
            _ => {}
        }
        let fraction = |v: f64| v.is_finite() && v > 0.0;
        if !(fraction(self.warning_below)
            && fraction(self.failure_below)
            && self.failure_below <= self.warning_below)
        {
            return Err((
                "failure_below".into(),
                format!(
                    "needs 0 < failure_below ({}) <= warning_below ({})",
                    self.failure_below, self.warning_below
                ),
            ));
        }
        Ok(())
    }

    /// The compiled pattern (checked when the file was read).
    pub fn regex(&self) -> Option<Regex> {
        Regex::new(&self.pattern).ok()
    }

    /// Whether the rule applies to a benchmark on `backend` whose devices are `devices`.
    pub fn applies_to(&self, backend: &str, devices: &[String]) -> bool {
        match &self.device {
            None => true,
            Some(kind) => {
                let kind = kind.to_lowercase();
                backend == kind || devices.iter().any(|d| d.to_lowercase().contains(&kind))
            }
        }
    }
}

/// `[validate]`: how learned thresholds are drawn from a machine's own history.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ValidateConfig {
    /// Stored runs of this fingerprint needed before a learned threshold is drawn.
    pub learned_min_runs: usize,
    /// A failure below median − k·noise (noise: 1.4826 × MAD of the per-run medians).
    pub learned_failure_k: f64,
    /// A warning below median − k·noise.
    pub learned_warning_k: f64,
}

impl Default for ValidateConfig {
    fn default() -> Self {
        ValidateConfig {
            learned_min_runs: 5,
            learned_failure_k: 3.0,
            learned_warning_k: 2.0,
        }
    }
}

impl ValidateConfig {
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        if self.learned_min_runs < 3 {
            return Err((
                "validate.learned_min_runs".into(),
                "needs at least 3 runs for a median and a spread".into(),
            ));
        }
        let k = |v: f64| v.is_finite() && v >= 0.0;
        if !(k(self.learned_failure_k)
            && k(self.learned_warning_k)
            && self.learned_warning_k <= self.learned_failure_k)
        {
            return Err((
                "validate.learned_warning_k".into(),
                "needs 0 <= learned_warning_k <= learned_failure_k".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn rules_need_one_expectation_and_ordered_levels() {
        let parse = |t: &str| Config::parse(t, Path::new("t.toml")).map(|c| c.thresholds);
        let ok = parse(
            "[[thresholds]]\npattern = \"^gemm/\"\ndevice = \"H100\"\npercent_of_peak = 60\n",
        )
        .unwrap();
        assert_eq!(ok[0].failure_below, 0.9);
        assert!(ok[0].applies_to("cuda", &["NVIDIA H100 80GB HBM3".into()]));
        assert!(!ok[0].applies_to("cpu", &["AMD EPYC".into()]));
        for bad in [
            "[[thresholds]]\npattern = \"x\"\n",
            "[[thresholds]]\npattern = \"x\"\nexpected = 1\npercent_of_peak = 2\n",
            "[[thresholds]]\npattern = \"x\"\nexpected = -1\n",
            "[[thresholds]]\npattern = \"(\"\nexpected = 1\n",
            "[[thresholds]]\npattern = \"x\"\nexpected = 1\nwarning_below = 0.8\nfailure_below = 0.9\n",
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("thresholds[0]"), "{bad}: {err}");
        }
    }
}
