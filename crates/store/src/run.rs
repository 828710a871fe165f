//! The run record: schema `stackbench.run.v1`, one file per recorded Criterion baseline.

use crate::criterion_output::{
    CriterionBenchmark, Estimates, SampleFile, SkippedBenchmark, Throughput,
};
use serde::{Deserialize, Serialize};

pub const RUN_SCHEMA_PREFIX: &str = "stackbench.run.v";
pub const RUN_SCHEMA_VERSION: u32 = 1;
pub const RUN_SCHEMA: &str = "stackbench.run.v1";

pub use crate::sidecar::{COUNTED_STATUS, NOT_COUNTABLE_STATUS};

/// Raw samples exactly as Criterion wrote them (total ns per sample, iterations per sample).
pub type Samples = SampleFile;

/// Where the run was read from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    pub criterion_dir: String,
    pub baseline: String,
    pub analyzer_version: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkRecord {
    /// Criterion's full id (`group/function/value`), the key across runs.
    pub id: String,
    pub group: String,
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub throughput: Option<Throughput>,
    /// Criterion's own estimates, kept for reference; verdicts use the samples.
    #[serde(default)]
    pub estimates: Option<Estimates>,
    pub samples: Samples,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Power, temperature, clocks and utilisation while it ran (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::system::telemetry::TelemetrySummary>,
    /// The result's error against a float64 reference on the same inputs, from the check
    /// before timing (absent in older runs and for benchmarks without a reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<crate::workload::Accuracy>,
}

impl BenchmarkRecord {
    /// A benchmark of `group` that holds only its samples: no function or value names,
    /// throughput, estimates, notes, telemetry or accuracy yet (callers fill those with
    /// struct-update syntax).
    pub fn new(id: impl Into<String>, group: impl Into<String>, samples: Samples) -> Self {
        BenchmarkRecord {
            id: id.into(),
            group: group.into(),
            function: None,
            value: None,
            throughput: None,
            estimates: None,
            samples,
            notes: Vec::new(),
            telemetry: None,
            accuracy: None,
        }
    }
}

impl From<CriterionBenchmark> for BenchmarkRecord {
    fn from(b: CriterionBenchmark) -> Self {
        BenchmarkRecord {
            id: b.id,
            group: b.group,
            function: b.function,
            value: b.value,
            throughput: b.throughput,
            estimates: b.estimates,
            samples: b.samples,
            notes: b.notes,
            telemetry: None,
            accuracy: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub run_id: String,
    pub created_unix_ms: u64,
    /// RFC 3339 UTC, for people; ordering uses `created_unix_ms`.
    pub timestamp: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub git_revision: Option<String>,
    #[serde(default)]
    pub git_dirty: Option<bool>,
    pub source: SourceInfo,
    /// Copied from the system probe: runs are grouped and compared within one fingerprint.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The system probe as written beside Criterion's output, kept verbatim.
    #[serde(default)]
    pub system: Option<serde_json::Value>,
    /// stackbench's per-target outcome files (skipped and failed benchmarks with reasons).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<serde_json::Value>,
    #[serde(default)]
    pub notes: Vec<String>,
    pub benchmarks: Vec<BenchmarkRecord>,
    #[serde(default)]
    pub skipped: Vec<SkippedBenchmark>,
    /// Benchmarks this run tried and could not measure, with their errors. They hold no
    /// samples: a failure is never stored as a measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedBenchmark>,
    /// Environment variables that defined this run's side of a gate (`--base-env`,
    /// `--head-env`), so a run measured against another Python or library path says so.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub environment: std::collections::BTreeMap<String, String>,
    /// Counting mode (`STACKBENCH_MEASURE=instructions cargo bench`): each counted id's
    /// instruction counts, estimated cycles and time estimate with the cost model, and the
    /// variant that was counted (stackbench's own benches: single-threaded); or why the id
    /// is not countable (GPU, Python worker). Keyed by full id; empty for a timed run.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    /// Each entry as the target report kept it (the harness's `CountedOutcome`, tagged by
    /// `status`: `counted` or `not_countable`).
    pub counted: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A benchmark that ran in this run and failed (its harness recorded the error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedBenchmark {
    pub id: String,
    pub error: String,
}

/// The hardware fingerprint a system probe carries, the key runs are grouped and compared by.
pub fn probe_fingerprint(system: Option<&serde_json::Value>) -> Option<String> {
    system
        .and_then(|s| s.get("fingerprint"))
        .and_then(|f| f.as_str())
        .map(String::from)
}

impl RunRecord {
    /// A run created at `created_unix_ms` (its id and timestamp follow from it), read from
    /// `baseline` of the Criterion output in `criterion_dir`, on the machine `system`
    /// describes (the fingerprint follows from the probe). Nothing measured, noted or
    /// labelled yet: callers fill those with struct-update syntax.
    pub fn new(
        created_unix_ms: u64,
        criterion_dir: &std::path::Path,
        baseline: &str,
        system: Option<serde_json::Value>,
    ) -> RunRecord {
        RunRecord {
            schema: super::RUN_SCHEMA.into(),
            run_id: super::new_run_id(created_unix_ms),
            created_unix_ms,
            timestamp: super::format_rfc3339_ms(created_unix_ms),
            label: None,
            git_revision: None,
            git_dirty: None,
            source: SourceInfo {
                criterion_dir: criterion_dir.display().to_string(),
                baseline: baseline.to_string(),
                analyzer_version: env!("CARGO_PKG_VERSION").into(),
            },
            fingerprint: probe_fingerprint(system.as_ref()),
            system,
            targets: Vec::new(),
            notes: Vec::new(),
            benchmarks: Vec::new(),
            skipped: Vec::new(),
            failed: Vec::new(),
            environment: Default::default(),
            counted: Default::default(),
        }
    }

    /// The error of `id` when it failed in this run.
    pub fn failure(&self, id: &str) -> Option<&str> {
        self.failed
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.error.as_str())
    }

    pub fn benchmark(&self, id: &str) -> Option<&BenchmarkRecord> {
        self.benchmarks
            .binary_search_by(|b| b.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.benchmarks[i])
    }

    /// How many ids were counted, and how many were not countable.
    pub fn counted_summary(&self) -> (usize, usize) {
        self.counted
            .values()
            .fold((0, 0), |(counted, not), outcome| {
                match outcome.get("status").and_then(|s| s.as_str()) {
                    Some(COUNTED_STATUS) => (counted + 1, not),
                    Some(NOT_COUNTABLE_STATUS) => (counted, not + 1),
                    _ => (counted, not),
                }
            })
    }

    /// Peaks from the probe, as raw JSON objects (empty when no probe).
    pub fn peaks(&self) -> Vec<serde_json::Value> {
        self.system
            .as_ref()
            .and_then(|s| s.get("peaks"))
            .and_then(|p| p.as_array())
            .cloned()
            .unwrap_or_default()
    }

    /// Whether the system probe was written by stackbench's bench harness, so the ids are
    /// stackbench's and Criterion's `Elements` are FLOPs. A run without a probe, or one the
    /// gate probed for another crate's benches ([`GATE_PROBE_NOTE`]), is not.
    pub fn probed_by_harness(&self) -> bool {
        self.system.as_ref().is_some_and(|s| {
            !s.get("notes")
                .and_then(|n| n.as_array())
                .is_some_and(|notes| notes.iter().any(|n| n == GATE_PROBE_NOTE))
        })
    }
}

/// The note a system probe carries when `analyze-trends gate` made it (the crate's bench
/// executables wrote none): the hardware is known, but the benchmarks are not stackbench's.
pub const GATE_PROBE_NOTE: &str = "probed by analyze-trends gate, the process that ran both sides: \
     the bench executables wrote no system probe";
