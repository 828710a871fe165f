//! How a run maps onto rows. Samples are the bulk of a run (two numbers per sample, a
//! hundred samples per benchmark), so they are stored as little-endian `f64` blobs: 8 bytes
//! a number instead of about 18 as JSON text, and no parsing to read them back. Everything
//! else is kept as the record's own JSON beside the indexed columns, so fields added to
//! `RunRecord` or `BenchmarkRecord` later survive a round trip through the database.

use crate::run::{BenchmarkRecord, RunRecord};

/// The columns of one `benchmarks` row and its `samples` row.
pub(super) struct BenchmarkRow {
    pub median_ns: Option<f64>,
    pub min_ns: Option<f64>,
    pub sample_count: usize,
    pub throughput_kind: Option<&'static str>,
    pub throughput_elements: Option<u64>,
    pub throughput_bytes: Option<u64>,
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub record_json: String,
    pub iters: Vec<u8>,
    pub times: Vec<u8>,
}

pub(super) fn encode_f64s(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub(super) fn decode_f64s(bytes: &[u8]) -> Result<Vec<f64>, String> {
    if !bytes.len().is_multiple_of(8) {
        return Err(format!(
            "a sample blob of {} bytes is not a whole number of f64s",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// The run without its benchmarks, as JSON: environment, probe, targets, notes and any
/// field a later version adds.
pub(super) fn run_json(run: &RunRecord) -> Result<String, serde_json::Error> {
    let header = RunRecord {
        benchmarks: Vec::new(),
        ..run.clone()
    };
    serde_json::to_string(&header)
}

/// A field of the serialised record as text: a string as itself, anything else as JSON
/// (the shape of `outcome` and `error` belongs to the recorder, not to the store).
fn field_text(value: &serde_json::Value, key: &str) -> Option<String> {
    match value.get(key)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

pub(super) fn benchmark_row(b: &BenchmarkRecord) -> Result<BenchmarkRow, serde_json::Error> {
    let mut lite = b.clone();
    lite.samples.iters = Vec::new();
    lite.samples.times = Vec::new();
    let value = serde_json::to_value(&lite)?;
    let finite = b.samples.usable_per_iteration_ns();
    Ok(BenchmarkRow {
        median_ns: finite.as_deref().map(crate::stats::median),
        min_ns: finite
            .as_deref()
            .map(|v| v.iter().copied().fold(f64::INFINITY, f64::min)),
        sample_count: b.samples.times.len().min(b.samples.iters.len()),
        throughput_kind: b.throughput.as_ref().map(|t| t.kind()),
        throughput_elements: b.throughput.and_then(|t| t.elements()),
        throughput_bytes: b.throughput.and_then(|t| t.bytes()),
        outcome: field_text(&value, "outcome"),
        error: field_text(&value, "error"),
        record_json: value.to_string(),
        iters: encode_f64s(&b.samples.iters),
        times: encode_f64s(&b.samples.times),
    })
}

/// Rebuilds one benchmark from its JSON and sample blobs.
pub(super) fn benchmark_from_row(
    record_json: &str,
    iters: Option<&[u8]>,
    times: Option<&[u8]>,
) -> Result<BenchmarkRecord, String> {
    let mut b: BenchmarkRecord =
        serde_json::from_str(record_json).map_err(|e| format!("benchmark JSON: {e}"))?;
    b.samples.iters = decode_f64s(iters.unwrap_or_default())?;
    b.samples.times = decode_f64s(times.unwrap_or_default())?;
    if b.samples.iters.len() != b.samples.times.len() {
        return Err(format!(
            "benchmark {}: {} iteration counts but {} times",
            b.id,
            b.samples.iters.len(),
            b.samples.times.len()
        ));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_exactly_and_reject_torn_lengths() {
        let values = [1.0, 0.1, f64::MAX, 1e-300, 12345.678];
        assert_eq!(decode_f64s(&encode_f64s(&values)).unwrap(), values);
        assert!(decode_f64s(&[0u8; 12]).unwrap_err().contains("12 bytes"));
    }
}
