//! Mirror structs of Criterion's JSON files, every field optional where some version omits it.

use crate::stats::{SampleDefect, usable_timed};
use serde::{Deserialize, Serialize};

/// `benchmark.json`. `full_id` is the name other tools select by.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RawBenchmarkJson {
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub function_id: Option<String>,
    #[serde(default)]
    pub value_str: Option<String>,
    #[serde(default)]
    pub throughput: Option<serde_json::Value>,
    #[serde(default)]
    pub full_id: Option<String>,
    #[serde(default)]
    pub directory_name: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
}

/// The five throughput kinds Criterion 0.5 to 0.8 write (`Bits` and `ElementsAndBytes`
/// arrived in 0.7 and 0.8). Stored in runs in Criterion's own externally tagged shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Throughput {
    Bytes(u64),
    BytesDecimal(u64),
    Elements(u64),
    Bits(u64),
    ElementsAndBytes { elements: u64, bytes: u64 },
}

impl Throughput {
    pub fn kind(&self) -> &'static str {
        match self {
            Throughput::Bytes(_) => "Bytes",
            Throughput::BytesDecimal(_) => "BytesDecimal",
            Throughput::Elements(_) => "Elements",
            Throughput::Bits(_) => "Bits",
            Throughput::ElementsAndBytes { .. } => "ElementsAndBytes",
        }
    }

    /// Bytes moved per iteration, where the benchmark declared them.
    pub fn bytes(&self) -> Option<u64> {
        match *self {
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => Some(b),
            Throughput::Bits(b) => Some(b / 8),
            Throughput::ElementsAndBytes { bytes, .. } => Some(bytes),
            Throughput::Elements(_) => None,
        }
    }

    /// Elements (for stackbench's compute families: floating-point operations) per iteration.
    pub fn elements(&self) -> Option<u64> {
        match *self {
            Throughput::Elements(e) | Throughput::ElementsAndBytes { elements: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// Parses Criterion's throughput value; `Ok(None)` for null, `Err(text)` for a kind this
/// version does not know (the caller keeps the benchmark and notes the kind).
pub fn parse_throughput(value: &serde_json::Value) -> Result<Option<Throughput>, String> {
    if value.is_null() {
        return Ok(None);
    }
    serde_json::from_value::<Throughput>(value.clone())
        .map(Some)
        .map_err(|_| value.to_string())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    #[serde(default)]
    pub confidence_level: Option<f64>,
    #[serde(default)]
    pub lower_bound: Option<f64>,
    #[serde(default)]
    pub upper_bound: Option<f64>,
}

/// One statistic of `estimates.json`, per iteration in the measurement's unit (ns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub point_estimate: f64,
    #[serde(default)]
    pub standard_error: Option<f64>,
    #[serde(default)]
    pub confidence_interval: Option<ConfidenceInterval>,
}

/// `estimates.json`; `slope` is absent for flat sampling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimates {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_abs_dev: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slope: Option<Estimate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std_dev: Option<Estimate>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SamplingMode {
    Linear,
    Flat,
}

/// `sample.json`: per sample, the iteration count and the total time of those iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleFile {
    #[serde(default)]
    pub sampling_mode: Option<SamplingMode>,
    pub iters: Vec<f64>,
    pub times: Vec<f64>,
}

impl SampleFile {
    /// The usable sample count, or why these samples cannot be judged: the one rule,
    /// [`crate::stats::usable_timed`].
    pub fn usable(&self) -> Result<usize, SampleDefect> {
        usable_timed(&self.iters, &self.times)
    }

    /// Per-iteration times in ns.
    pub fn per_iteration_ns(&self) -> Vec<f64> {
        self.times
            .iter()
            .zip(&self.iters)
            .map(|(t, n)| t / n)
            .collect()
    }

    /// The median per-iteration time: what the history store keeps in its indexed
    /// column and the trends are drawn from. `None` when the samples fail the sample rule
    /// (a broken measurement has no median to trend).
    pub fn median_ns(&self) -> Option<f64> {
        self.usable_per_iteration_ns()
            .map(|per_iter| crate::stats::median(&per_iter))
    }

    /// The per-iteration times when the samples pass the one sample rule ([`Self::usable`]):
    /// the samples a median or minimum may be taken of.
    pub fn usable_per_iteration_ns(&self) -> Option<Vec<f64>> {
        self.usable().ok().map(|_| self.per_iteration_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_five_throughput_kinds_parse() {
        let cases = [
            (r#"{"Bytes":10}"#, Throughput::Bytes(10)),
            (r#"{"BytesDecimal":11}"#, Throughput::BytesDecimal(11)),
            (r#"{"Elements":12}"#, Throughput::Elements(12)),
            (r#"{"Bits":13}"#, Throughput::Bits(13)),
            (
                r#"{"ElementsAndBytes":{"elements":1,"bytes":2}}"#,
                Throughput::ElementsAndBytes {
                    elements: 1,
                    bytes: 2,
                },
            ),
        ];
        for (text, want) in cases {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_throughput(&value), Ok(Some(want)));
            assert_eq!(serde_json::to_value(want).unwrap(), value);
        }
        assert_eq!(parse_throughput(&serde_json::Value::Null), Ok(None));
        assert!(parse_throughput(&serde_json::json!({"Frobs": 1})).is_err());
    }

    #[test]
    fn sample_defects_are_named() {
        let s = |iters: Vec<f64>, times: Vec<f64>| SampleFile {
            sampling_mode: None,
            iters,
            times,
        };
        assert!(
            s(vec![1.0], vec![1.0, 2.0])
                .usable()
                .unwrap_err()
                .to_string()
                .contains("1 iteration")
        );
        assert!(s(vec![0.0], vec![3.0]).usable().is_err());
        assert_eq!(s(vec![2.0], vec![3.0]).usable(), Ok(1));
        assert_eq!(s(vec![2.0], vec![3.0]).per_iteration_ns(), vec![1.5]);
    }
}
