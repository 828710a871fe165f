//! Files stackbench writes beside Criterion's output, under `<criterion dir>/stackbench/`:
//! - `system.json`: the system probe of the machine that ran the benches;
//! - `targets/<target>.json`: per bench target, the suite and every benchmark's outcome
//!   (measured with notes such as peak memory or extra metrics, skipped with its reason,
//!   or failed with its error), so the run record can show what did not run and why; in
//!   counting mode also each id's instruction counts or why it is not countable.
//!
//! - the progress file of a live run ([`progress`]), which `run_benchmarks.sh` puts there.
//!
//! The analyzer reads these through [`read_system_probe`] and [`read_target_reports`];
//! Criterion ignores the folder (it has no `benchmark.json`). The formats live here, beside
//! the Criterion reader and below both the harness that writes them and the results,
//! analysis, validation and dashboard code that reads them, so no reader depends on the
//! harness.

pub mod progress;

use crate::files::atomic::{AtomicWriteError, write_json_atomic};
use crate::workload::{BenchId, Suite};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder under the Criterion directory that holds stackbench's own files.
pub const SIDECAR_DIR: &str = "stackbench";
pub const SYSTEM_PROBE_FILE: &str = "system.json";
pub const TARGETS_DIR: &str = "targets";
pub const TARGET_REPORT_SCHEMA: &str = "stackbench.target.v1";

/// The `status` of a counted entry whose id was counted, and of one that could not be.
pub const COUNTED_STATUS: &str = "counted";
pub const NOT_COUNTABLE_STATUS: &str = "not_countable";

/// The note of a measured benchmark that holds its [`TelemetrySummary`], which the run
/// record lifts into `BenchmarkRecord::telemetry`.
///
/// [`TelemetrySummary`]: crate::system::telemetry::TelemetrySummary
pub const TELEMETRY_NOTE: &str = "telemetry";

/// Where Criterion writes, found the way Criterion finds it: `$CRITERION_HOME`, else
/// `$CARGO_TARGET_DIR/criterion`, else the workspace's target directory as `cargo metadata`
/// names it (bench targets run from their own package's folder, below the
/// workspace, so a `target/` relative to it would be the wrong one), else `target/criterion`.
pub fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            // Asked once per process: the metadata call costs a cargo start.
            static METADATA: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
            METADATA.get_or_init(cargo_target_directory).clone()
        })
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("criterion")
}

/// The target directory of the workspace cargo is running us in (`$CARGO` is set for
/// processes `cargo bench` starts); `None` outside cargo or when it cannot say.
fn cargo_target_directory() -> Option<PathBuf> {
    #[derive(Deserialize)]
    struct Metadata {
        target_directory: PathBuf,
    }
    let cargo = std::env::var_os("CARGO")?;
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    serde_json::from_slice::<Metadata>(&output.stdout)
        .ok()
        .map(|m| m.target_directory)
}

pub fn system_probe_path_in(criterion_dir: &Path) -> PathBuf {
    criterion_dir.join(SIDECAR_DIR).join(SYSTEM_PROBE_FILE)
}

pub fn target_report_path_in(criterion_dir: &Path, target: &str) -> PathBuf {
    criterion_dir
        .join(SIDECAR_DIR)
        .join(TARGETS_DIR)
        .join(format!("{target}.json"))
}

pub fn target_report_path(target: &str) -> PathBuf {
    target_report_path_in(&criterion_home(), target)
}

/// Probes the system and writes `system.json`. Every bench target does this at start (about
/// 0.2 s, mostly the FMA measurement), so `cargo bench --bench X` alone still leaves a probe
/// beside its output. A failure to write is reported, not fatal (the benches still run;
/// the record will note the probe is missing).
pub fn write_system_probe() {
    let path = system_probe_path_in(&criterion_home());
    let mut probe = crate::probe::SystemProbe::collect();
    // An earlier probe that is missing or unreadable (another version's) carries nothing:
    // this one replaces it.
    if let Ok(earlier) = read_json::<crate::probe::SystemProbe>(&path) {
        probe.carry_device_peaks(&earlier);
    }
    if let Err(error) = write_json_atomic(&path, &probe) {
        eprintln!("stackbench: warning: {error}");
    }
}

/// Adds the Vulkan device's measured peaks to `system.json`, once per run of a target that
/// times a `vulkan` id, unless the probe already holds them: so that a run's % of peak
/// (reports, `validate`, the hardware matrix) means something on a GPU with no datasheet
/// row. A failure to write is reported, not fatal, as for the probe itself.
pub fn add_device_peaks() {
    let path = system_probe_path_in(&criterion_home());
    let probe = match read_json::<crate::probe::SystemProbe>(&path) {
        Ok(probe) => probe,
        Err(error) => {
            eprintln!("stackbench: warning: the Vulkan peaks were not measured: {error}");
            return;
        }
    };
    if probe.has_device_peaks() {
        return;
    }
    let probe = probe.with_device_peaks();
    if let Err(error) = write_json_atomic(&path, &probe) {
        eprintln!("stackbench: warning: {error}");
    }
}

/// What happened to one benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum BenchmarkOutcome {
    Measured {
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        notes: BTreeMap<String, serde_json::Value>,
    },
    Skipped {
        reason: String,
    },
    Failed {
        error: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkEntry {
    pub group: String,
    pub function: String,
    pub value: String,
    #[serde(flatten)]
    pub outcome: BenchmarkOutcome,
}

/// One bench target's record of its last run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetReport {
    pub schema: String,
    pub target: String,
    pub suite: String,
    pub started_unix_s: u64,
    /// Keyed by full benchmark id.
    pub benchmarks: BTreeMap<String, BenchmarkEntry>,
    /// The GPU clocks over this target's run: locked or not and why, before and after, the
    /// lowest busy clock; or why none were recorded. Absent in reports older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_clocks: Option<crate::system::clocks::GpuClocksRecord>,
    /// `instructions` when the target ran in counting mode (`STACKBENCH_MEASURE`); absent
    /// for a timed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// Counting mode: each selected id's counts, or why it is not countable, keyed by full
    /// id; a count that failed is in `benchmarks` as a failure instead. Each entry is the
    /// harness's `CountedOutcome` (`crates/measure/src/harness/measure/mod.rs`) as JSON, kept verbatim like
    /// the system probe: the shape is the harness's and `schemas/target.schema.json`'s, and
    /// no reader below the harness needs more than its `status`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counted: BTreeMap<String, serde_json::Value>,
    /// Profiles taken after the measurement (`STACKBENCH_PROFILE`), keyed by full id: each
    /// the harness's `ProfileRecord` (`crates/measure/src/harness/profile.rs`) as JSON, verbatim like
    /// `counted`: where the profile was written, or why it is unavailable or failed. A failed
    /// profile never fails the benchmark.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, serde_json::Value>,
}

impl TargetReport {
    /// The accuracy set the backend's check before timing left in `id`'s notes, when
    /// there is one this version can read.
    pub fn accuracy(&self, id: &str) -> Option<crate::workload::Accuracy> {
        match &self.benchmarks.get(id)?.outcome {
            BenchmarkOutcome::Measured { notes } => {
                serde_json::from_value(notes.get(crate::workload::accuracy::ACCURACY_NOTE)?.clone())
                    .ok()
            }
            _ => None,
        }
    }

    pub fn new(target: &str, suite: Suite) -> Self {
        TargetReport {
            schema: TARGET_REPORT_SCHEMA.into(),
            target: target.into(),
            suite: suite.to_string(),
            started_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            benchmarks: BTreeMap::new(),
            gpu_clocks: None,
            measure: None,
            counted: BTreeMap::new(),
            profiles: BTreeMap::new(),
        }
    }

    pub fn record(&mut self, id: &BenchId, outcome: BenchmarkOutcome) {
        let entry = BenchmarkEntry {
            group: id.group.clone(),
            function: id.function.clone(),
            value: id.value.clone(),
            outcome,
        };
        self.benchmarks.insert(id.full(), entry);
    }

    /// (skipped, failed)
    pub fn counts(&self) -> (usize, usize) {
        self.benchmarks
            .values()
            .fold((0, 0), |(s, f), e| match e.outcome {
                BenchmarkOutcome::Skipped { .. } => (s + 1, f),
                BenchmarkOutcome::Failed { .. } => (s, f + 1),
                BenchmarkOutcome::Measured { .. } => (s, f),
            })
    }

    /// Saves under the Criterion directory, atomically.
    pub fn save(&self) -> Result<(), AtomicWriteError> {
        write_json_atomic(&target_report_path(&self.target), self)
    }
}

/// Errors reading a sidecar file name the file.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON of the expected shape: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// The system probe written beside the Criterion output in `criterion_dir`, as raw JSON
/// (newer probes may carry fields this version does not know). `None` when absent.
pub fn read_system_probe(criterion_dir: &Path) -> Option<Result<serde_json::Value, SidecarError>> {
    let path = system_probe_path_in(criterion_dir);
    if !path.exists() {
        return None;
    }
    Some(read_json(&path))
}

/// Every target report under `criterion_dir`; each unreadable file is returned as its own
/// error so one bad file loses nothing else.
pub fn read_target_reports(criterion_dir: &Path) -> Vec<Result<TargetReport, SidecarError>> {
    let dir = criterion_dir.join(SIDECAR_DIR).join(TARGETS_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read_json(p)).collect()
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SidecarError> {
    let text = std::fs::read_to_string(path).map_err(|source| SidecarError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| SidecarError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_reports_round_trip_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = TargetReport::new("gemm", Suite::Quick);
        report.record(
            &BenchId::new("gemm", "cuda", "f32", "512x512x512"),
            BenchmarkOutcome::Skipped {
                reason: "no driver".into(),
            },
        );
        report.record(
            &BenchId::new("gemm", "cpu", "f32", "512x512x512"),
            BenchmarkOutcome::Measured {
                notes: BTreeMap::new(),
            },
        );
        assert_eq!(report.counts(), (1, 0));
        let path = target_report_path_in(dir.path(), "gemm");
        write_json_atomic(&path, &report).unwrap();
        std::fs::write(target_report_path_in(dir.path(), "broken"), "{ not json").unwrap();
        let reports = read_target_reports(dir.path());
        assert_eq!(reports.len(), 2);
        let err = reports[0].as_ref().unwrap_err().to_string();
        assert!(err.contains("broken.json"), "{err}");
        assert_eq!(reports[1].as_ref().unwrap(), &report);
        assert!(read_system_probe(dir.path()).is_none());
    }
}
