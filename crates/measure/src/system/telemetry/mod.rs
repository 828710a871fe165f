//! Telemetry while a benchmark runs: power, temperature, clocks and utilisation, sampled
//! by a background thread and kept per benchmark as min / mean / max, with the energy per
//! iteration where power is known. A number beside a time explains it (a throttled clock,
//! a cold package) and gives the cross-hardware report its perf per watt.
//!
//! Sources: NVML on NVIDIA (loaded at run time), the amdgpu driver's sysfs files on AMD
//! (what rocm-smi reads), RAPL energy counters under
//! `/sys/class/powercap` on CPUs where they are readable ([`rapl`]). Where none can be
//! read the summary says why, and perf per watt is "n/a", never 0.

pub mod amdgpu;
pub mod nvml;
pub mod rapl;
pub mod sampler;

use serde::{Deserialize, Serialize};

/// min / mean / max of one quantity over a benchmark's samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub samples: usize,
}

impl Range {
    /// `None` for no (finite) values: an empty range is "not measured", not zero.
    pub fn of(values: &[f64]) -> Option<Range> {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.is_empty() {
            return None;
        }
        Some(Range {
            min: finite.iter().copied().fold(f64::INFINITY, f64::min),
            mean: finite.iter().sum::<f64>() / finite.len() as f64,
            max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            samples: finite.len(),
        })
    }
}

/// What the sampler saw during one benchmark. Every field is optional: old runs and
/// machines without a readable source load and show "n/a".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// Where the figures came from (`nvml`, `rapl`), or empty when nothing was readable.
    #[serde(default)]
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_watts: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<Range>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_percent: Option<Range>,
    /// Joules per benchmark iteration: energy over the measurement / iterations run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_per_iteration_joules: Option<f64>,
    /// Why a quantity could not be read here (no NVML, RAPL not readable, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_ignore_non_finite_values_and_empty_is_none() {
        let r = Range::of(&[2.0, f64::NAN, 4.0]).unwrap();
        assert_eq!((r.min, r.mean, r.max, r.samples), (2.0, 3.0, 4.0, 2));
        assert!(Range::of(&[]).is_none());
        assert!(Range::of(&[f64::INFINITY]).is_none());
    }

    #[test]
    fn an_old_record_without_telemetry_fields_loads() {
        let t: TelemetrySummary = serde_json::from_str("{}").unwrap();
        assert!(t.power_watts.is_none() && t.source.is_empty());
    }
}
