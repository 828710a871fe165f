//! Writes Criterion-shaped trees (the files Criterion 0.8 writes for one benchmark and
//! baseline). Used by the simulator that measures the gate's quality and speed, so those
//! trees go through the same reader as real ones.

use super::model::{ConfidenceInterval, Estimate, Estimates, SampleFile, Throughput};
use crate::stats::{mad, median};
use std::path::{Path, PathBuf};

/// Criterion's directory-name rule: characters that are unsafe in paths become `_`, and a
/// component is cut to at most 64 bytes on a character boundary.
pub fn sanitize_component(name: &str) -> String {
    let replaced: String = name
        .chars()
        .map(|c| match c {
            '?' | '"' | '/' | '\\' | '*' | '<' | '>' | ':' | '|' | '^' => '_',
            c => c,
        })
        .collect();
    let mut end = replaced.len().min(64);
    while !replaced.is_char_boundary(end) {
        end -= 1;
    }
    replaced[..end].to_string()
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// One benchmark to write.
pub struct WrittenBenchmark<'a> {
    pub group: &'a str,
    pub function: Option<&'a str>,
    pub value: Option<&'a str>,
    pub throughput: Option<Throughput>,
    pub samples: &'a SampleFile,
}

impl WrittenBenchmark<'_> {
    pub fn full_id(&self) -> String {
        let mut id = self.group.to_string();
        for part in [self.function, self.value].into_iter().flatten() {
            id.push('/');
            id.push_str(part);
        }
        id
    }

    fn directory(&self) -> PathBuf {
        let mut dir = PathBuf::from(sanitize_component(self.group));
        for part in [self.function, self.value].into_iter().flatten() {
            dir.push(sanitize_component(part));
        }
        dir
    }
}

fn estimate(point: f64, spread: f64) -> Estimate {
    Estimate {
        point_estimate: point,
        standard_error: Some(spread),
        confidence_interval: Some(ConfidenceInterval {
            confidence_level: Some(0.95),
            lower_bound: Some(point - 1.96 * spread),
            upper_bound: Some(point + 1.96 * spread),
        }),
    }
}

/// Summary estimates from the samples (the reader never trusts them; tools such as critcmp
/// read only these).
fn estimates(samples: &SampleFile) -> Estimates {
    let per_iter = samples.per_iteration_ns();
    let n = per_iter.len().max(1) as f64;
    let mean = per_iter.iter().sum::<f64>() / n;
    let sd = (per_iter.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let slope = samples.times.iter().sum::<f64>() / samples.iters.iter().sum::<f64>();
    Estimates {
        mean: Some(estimate(mean, sd / n.sqrt())),
        median: Some(estimate(median(&per_iter), 1.25 * sd / n.sqrt())),
        median_abs_dev: Some(estimate(mad(&per_iter), sd / n.sqrt())),
        slope: Some(estimate(slope, sd / n.sqrt())),
        std_dev: Some(estimate(sd, sd / (2.0 * n).sqrt())),
    }
}

/// Writes `benchmark.json`, `estimates.json` and `sample.json` for `bench` under
/// `root/<sanitised id>/<baseline>/`.
pub fn write_benchmark(
    root: &Path,
    baseline: &str,
    bench: &WrittenBenchmark<'_>,
) -> Result<(), WriteError> {
    let dir = root.join(bench.directory());
    let base = dir.join(baseline);
    let full_id = bench.full_id();
    let json = serde_json::json!({
        "group_id": bench.group,
        "function_id": bench.function,
        "value_str": bench.value,
        "throughput": bench.throughput,
        "full_id": full_id,
        "directory_name": bench.directory().to_string_lossy(),
        "title": full_id,
    });
    std::fs::create_dir_all(&base).map_err(|source| WriteError {
        path: base.clone(),
        source,
    })?;
    write_compact(&base.join("benchmark.json"), &json)?;
    write_compact(&base.join("estimates.json"), &estimates(bench.samples))?;
    write_compact(&base.join("sample.json"), bench.samples)
}

/// Plain (not atomic) compact writes, as Criterion itself writes: these trees are scratch
/// data for simulations, and an fsync per file would make a 10,000-benchmark tree take
/// minutes to write.
fn write_compact<T: serde::Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), WriteError> {
    let wrap = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let bytes = serde_json::to_vec(value).map_err(|e| wrap(std::io::Error::other(e)))?;
    std::fs::write(path, bytes).map_err(wrap)
}
