//! `stackbench validate`: a verdict on the hardware itself. `compare` says whether a
//! change made something slower; this says whether a freshly installed machine performs
//! as it should: each measured benchmark against an expected figure (the config's rule, a
//! vendor's published threshold, a fraction of the probe's peak, or the machine's own
//! history), plus installation checks (backends load, kernels run, drivers bound).
//!
//! Every check says which kind of threshold judged it, because "below the vendor's
//! acceptance figure" and "below this machine's usual" call for different actions.

pub mod check;
pub mod defaults;
pub mod evidence;
pub mod installation;
pub mod parts;
pub mod render;
pub mod runner;
pub mod selection;
pub mod torch_cuda;

use crate::analysis::throughput::PeakTable;
use crate::config::{Config, ResolvedSuite};
use crate::results::RunRecord;
use crate::results::{BenchmarkRecord, UNUSABLE_SAMPLES};
use crate::sidecar::BenchmarkOutcome;
use evidence::Evidence;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a verdict could not be made at all: bad input, not a failed machine.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    #[error("{}", empty_selection(suite, filter.as_deref()))]
    EmptySelection {
        suite: String,
        filter: Option<String>,
    },
    #[error("--filter '{filter}' is not a valid regex: {source}")]
    BadFilter {
        filter: String,
        source: regex::Error,
    },
}

fn empty_selection(suite: &str, filter: Option<&str>) -> String {
    match filter {
        Some(filter) => format!(
            "the filter '{filter}' selects no benchmark of suite '{suite}' in this run: nothing to judge \
             (`stackbench suite {suite}` shows what the suite selects)"
        ),
        None => format!(
            "suite '{suite}' selects no benchmark in this run: nothing to judge \
             (`stackbench suite {suite}` shows what it selects)"
        ),
    }
}

pub const VALIDATION_SCHEMA: &str = "stackbench.validation.v1";

/// A check's verdict; the run's status is the worst of its checks.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Warning,
    Failed,
}

/// Where an expected figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdKind {
    /// A `[[thresholds]]` rule in stackbench.toml.
    Config,
    /// A vendor's published acceptance figure (DCGM, RVS).
    Vendor,
    /// A fraction of the GPU's peak from the probe, where no vendor figure exists.
    PeakFraction,
    /// A fraction of the CPU's FMA peak (measured or theoretical, the larger).
    CpuPeak,
    /// A fraction of the DIMMs' theoretical bandwidth that STREAM reaches on all cores.
    StreamExpectation,
    /// This machine's own history: median − k·noise over its stored runs.
    Learned,
    /// Something installed works or does not (a backend loads, a kernel runs).
    Installation,
}

/// An expected figure with the levels that turn it into a warning and a failure.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub kind: ThresholdKind,
    pub expected: f64,
    pub warning_at: f64,
    pub failure_at: f64,
    /// Rates: higher is better. Times (benchmarks without throughput): lower is better.
    pub higher_is_better: bool,
    pub source: String,
}

impl Threshold {
    pub fn judge(&self, actual: f64) -> Status {
        let below = |level: f64| {
            if self.higher_is_better {
                actual < level
            } else {
                actual > level
            }
        };
        if !actual.is_finite() || below(self.failure_at) {
            Status::Failed
        } else if below(self.warning_at) {
            Status::Warning
        } else {
            Status::Passed
        }
    }

    /// How far the actual figure is above (rates) or below (times) the expected one, in
    /// percent of it: negative means worse than expected.
    pub fn margin_percent(&self, actual: f64) -> f64 {
        let ratio = if self.higher_is_better {
            actual / self.expected
        } else {
            self.expected / actual
        };
        (ratio - 1.0) * 100.0
    }
}

/// One line of the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
// `passed` is false exactly when the check failed (a warning passes, as the exit code says).
#[schemars(extend(
    "if" = {"properties": {"status": {"const": "failed"}}},
    "then" = {"properties": {"passed": {"const": false}}},
    "else" = {"properties": {"passed": {"const": true}}}
))]
pub struct ThresholdCheck {
    pub name: String,
    /// The benchmark id it judges, when it judges one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
    pub threshold_kind: ThresholdKind,
    /// A number (in `unit`) or, for installation checks, what was expected in words.
    #[schemars(schema_with = "figure_or_words")]
    pub expected: serde_json::Value,
    #[schemars(schema_with = "figure_or_words")]
    pub actual: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_percent: Option<f64>,
    /// False only for `failed`: a warning passes, as the exit code says.
    pub passed: bool,
    pub status: Status,
    pub source: String,
    /// `--base`: the same figure in the earlier run, and the change to now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_percent: Option<f64>,
}

/// A threshold's figure: a number in the check's unit, or words for an installation check.
fn figure_or_words(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["number", "string"] })
}

/// A benchmark's figures, in the component-result shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchmarkResult {
    pub id: String,
    /// `measured`, `skipped` or `failed`.
    #[schemars(extend("enum" = ["measured", "skipped", "failed"]))]
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<ThroughputFigure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFigure>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThroughputFigure {
    pub value: f64,
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_of_peak: Option<f64>,
}

/// Per-iteration time over Criterion's samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub std: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryFigure {
    pub peak_bytes: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counts {
    pub passed: usize,
    pub warning: usize,
    pub failed: usize,
}

/// The whole verdict (schema `stackbench.validation.v1`, `schemas/validation.schema.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ValidationResult {
    #[schemars(extend("const" = VALIDATION_SCHEMA))]
    pub schema: String,
    pub status: Status,
    pub suite: String,
    pub run_id: String,
    pub timestamp: String,
    #[serde(default)]
    pub fingerprint: Option<String>,
    #[serde(default)]
    pub config: Option<String>,
    #[serde(default)]
    pub compare_to: Option<String>,
    pub counts: Counts,
    /// Which checks ran, on which tiers, with how many usable samples each.
    pub evidence: Evidence,
    pub threshold_checks: Vec<ThresholdCheck>,
    pub results: Vec<BenchmarkResult>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Seconds the measuring took, every target and its checks included (absent when a
    /// stored run was judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// `--level`: which level ran and whether it kept to its budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<LevelRun>,
}

/// A validate level as it ran (`stackbench validate --level N`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LevelRun {
    pub level: u8,
    /// The wall time the level should stay within, in seconds.
    pub budget_s: f64,
    /// True when the measured wall time passed the budget (false when nothing was
    /// measured: a stored run has no wall time of its own).
    pub over_budget: bool,
}

impl ValidationResult {
    /// Records the level, its budget and the measured wall time; a level over its budget
    /// gets a note as well as the field, so the table says it too.
    pub fn record_level(&mut self, level: u8, budget_s: f64, wall_s: Option<f64>) {
        let over_budget = wall_s.is_some_and(|wall| wall > budget_s);
        if let (true, Some(wall)) = (over_budget, wall_s) {
            self.notes
                .push(over_budget_line(level, wall, budget_s).to_string());
        }
        self.wall_s = wall_s;
        self.level = Some(LevelRun {
            level,
            budget_s,
            over_budget,
        });
    }
}

/// The warning a level over its budget prints and records.
pub fn over_budget_line(level: u8, wall_s: f64, budget_s: f64) -> String {
    format!("level {level} took {wall_s:.1} s, over its budget of {budget_s} s")
}

/// What one validation judges.
pub struct Inputs<'a> {
    pub run: &'a RunRecord,
    pub suite: &'a ResolvedSuite,
    pub config: &'a Config,
    /// Earlier runs of the same hardware (for learned thresholds).
    pub history: &'a [RunRecord],
    pub before: Option<&'a RunRecord>,
    /// Criterion's filter (`--filter`): only ids it matches, within the suite.
    pub filter: Option<&'a str>,
}

/// One benchmark's headline figure: a rate where it declares throughput, else its time.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
    pub percent_of_peak: Option<f64>,
    /// Why the figure has no percent of peak though the probe has a peak for it: it beat
    /// that peak, so the peak is not trusted (`measured … GB/s; peak suspect: …`).
    pub suspect_peak: Option<String>,
}

/// The headline figure of `benchmark` (median per-iteration time, so one slow sample
/// does not move it), with percent of peak where `peaks` has one.
pub fn figure(peaks: &PeakTable, benchmark: &BenchmarkRecord) -> Option<Figure> {
    let ns = crate::stats::median(&benchmark.samples.per_iteration_ns());
    if !(ns.is_finite() && ns > 0.0) {
        return None;
    }
    match benchmark
        .throughput
        .as_ref()
        .and_then(|t| peaks.rate(&benchmark.id, t, ns))
    {
        Some(rate) => Some(Figure {
            value: rate.value,
            unit: rate.unit.to_string(),
            higher_is_better: true,
            percent_of_peak: rate.percent_of_peak,
            suspect_peak: rate.suspect_note(),
        }),
        None => Some(Figure {
            value: ns / 1e6,
            unit: "ms".into(),
            higher_is_better: false,
            percent_of_peak: None,
            suspect_peak: None,
        }),
    }
}

/// Judges `inputs.run` against every threshold that applies. A suite (and filter) that
/// selects no benchmark of the run is an error, never a verdict.
pub fn validate(inputs: &Inputs) -> Result<ValidationResult, ValidationError> {
    let run = inputs.run;
    let peaks = PeakTable::from_probe_peaks(&run.peaks(), run.probed_by_harness());
    let selected = selected_outcomes(inputs)?;
    let (outcomes, samples) = with_usable_samples(run, selected);
    let (mut checks, mut notes) = installation::checks(run, &outcomes);
    let mut results = Vec::new();
    for (id, outcome) in &outcomes {
        let benchmark = run.benchmark(id);
        let measured = matches!(outcome, BenchmarkOutcome::Measured { .. });
        let figure = benchmark
            .filter(|_| measured)
            .and_then(|b| figure(&peaks, b));
        results.push(result_of(id, outcome, benchmark, figure.as_ref()));
        let (Some(benchmark), Some(figure)) = (benchmark, figure) else {
            continue;
        };
        checks.extend(threshold_checks(inputs, benchmark, &figure, &mut notes));
    }
    Ok(finish(inputs, checks, results, notes, &samples))
}

/// The outcomes of the run that the suite and the filter select; none is an error.
fn selected_outcomes(
    inputs: &Inputs,
) -> Result<BTreeMap<String, BenchmarkOutcome>, ValidationError> {
    let filter = inputs
        .filter
        .map(|filter| {
            regex::Regex::new(filter).map_err(|source| ValidationError::BadFilter {
                filter: filter.to_owned(),
                source,
            })
        })
        .transpose()?;
    let selected: BTreeMap<_, _> = outcomes(inputs.run, inputs.suite)
        .into_iter()
        .filter(|(id, _)| filter.as_ref().is_none_or(|re| re.is_match(id)))
        .collect();
    if selected.is_empty() {
        return Err(ValidationError::EmptySelection {
            suite: inputs.suite.name.clone(),
            filter: inputs.filter.map(String::from),
        });
    }
    Ok(selected)
}

/// The checks of one measured benchmark against every threshold that applies, with a note
/// where no hardware default could be made.
fn threshold_checks(
    inputs: &Inputs,
    benchmark: &BenchmarkRecord,
    figure: &Figure,
    notes: &mut Vec<String>,
) -> Vec<ThresholdCheck> {
    let id = benchmark.id.as_str();
    let thresholds = defaults::thresholds_for(inputs, benchmark, figure);
    // A default that could not be made is said even when a learned threshold judged
    // the benchmark: "as usual" is not "as the hardware allows".
    let no_default = thresholds.iter().all(|t| t.kind == ThresholdKind::Learned);
    let why = no_default
        .then(|| defaults::why_no_default(inputs.run, id))
        .flatten()
        .or_else(|| {
            // A figure above the probe's peak makes the peak, not the figure, suspect: no
            // fraction of it can judge the benchmark, and the verdict says why.
            let suspect = figure.suspect_peak.as_ref().filter(|_| no_default);
            suspect.map(|s| format!("no fraction of the probe's peak judges it ({s})"))
        })
        .or_else(|| thresholds.is_empty().then(|| "no threshold applies".into()));
    if let Some(why) = why {
        notes.push(format!(
            "{id}: {why} (add a [[thresholds]] rule to stackbench.toml)"
        ));
    }
    let before = inputs
        .before
        .and_then(|b| b.benchmark(id))
        .and_then(|b| self::figure(&PeakTable::from_probe_peaks(&[], true), b))
        .map(|f| f.value);
    thresholds
        .iter()
        .map(|threshold| check_of(id, figure, threshold, before))
        .collect()
}

/// Each benchmark the harness says it measured must have usable samples in the run: one
/// with none (absent, empty, zero, negative, not finite) failed, with the reason. Returns
/// the outcomes so corrected, and the usable sample count of every measured benchmark.
pub fn with_usable_samples(
    run: &RunRecord,
    outcomes: BTreeMap<String, BenchmarkOutcome>,
) -> (BTreeMap<String, BenchmarkOutcome>, BTreeMap<String, usize>) {
    let mut samples = BTreeMap::new();
    let outcomes = outcomes
        .into_iter()
        .map(|(id, outcome)| {
            let BenchmarkOutcome::Measured { .. } = outcome else {
                return (id, outcome);
            };
            match usable_samples(run.benchmark(&id)) {
                Ok(n) => {
                    samples.insert(id.clone(), n);
                    (id, outcome)
                }
                Err(why) => {
                    let error = format!("{UNUSABLE_SAMPLES}: {why}");
                    (id, BenchmarkOutcome::Failed { error })
                }
            }
        })
        .collect();
    (outcomes, samples)
}

/// How many samples of `benchmark` a verdict may use, or why none: the one sample rule
/// ([`crate::stats::usable_timed`]), or no samples at all.
fn usable_samples(benchmark: Option<&BenchmarkRecord>) -> Result<usize, String> {
    let benchmark = benchmark.ok_or("the run holds no samples for it (nothing was recorded)")?;
    benchmark
        .samples
        .usable()
        .map_err(|defect| defect.to_string())
}

fn finish(
    inputs: &Inputs,
    checks: Vec<ThresholdCheck>,
    results: Vec<BenchmarkResult>,
    mut notes: Vec<String>,
    samples: &BTreeMap<String, usize>,
) -> ValidationResult {
    let mut counts = Counts::default();
    for check in &checks {
        match check.status {
            Status::Passed => counts.passed += 1,
            Status::Warning => counts.warning += 1,
            Status::Failed => counts.failed += 1,
        }
    }
    let evidence = Evidence::of(&checks, samples);
    // Nothing measured is not a pass: installation checks alone (a backend loads) say
    // nothing about how the machine performs.
    let status = if checks.is_empty() || !evidence.measured_anything() {
        notes.push(
            "no check read a measured sample: nothing selected was measured (every selected \
             benchmark was skipped or failed)"
                .into(),
        );
        Status::Failed
    } else {
        checks
            .iter()
            .map(|c| c.status)
            .max()
            .unwrap_or(Status::Failed)
    };
    notes.extend(inputs.run.notes.iter().cloned());
    ValidationResult {
        schema: VALIDATION_SCHEMA.into(),
        status,
        suite: inputs.suite.name.clone(),
        run_id: inputs.run.run_id.clone(),
        timestamp: inputs.run.timestamp.clone(),
        fingerprint: inputs.run.fingerprint.clone(),
        config: inputs
            .config
            .source
            .as_ref()
            .map(|p| p.display().to_string()),
        compare_to: inputs.before.map(|b| b.run_id.clone()),
        counts,
        evidence,
        threshold_checks: checks,
        results,
        notes,
        wall_s: None,
        level: None,
    }
}

/// Every benchmark the suite selects that the run measured, skipped or failed, by id:
/// the harness's outcome where it recorded one, else measured (a plain Criterion tree).
/// Whether a measured one has usable samples is [`with_usable_samples`]'s question.
pub fn outcomes(run: &RunRecord, suite: &ResolvedSuite) -> BTreeMap<String, BenchmarkOutcome> {
    let mut outcomes = BTreeMap::new();
    for target in &run.targets {
        let Some(benchmarks) = target.get("benchmarks").and_then(|b| b.as_object()) else {
            continue;
        };
        for (id, entry) in benchmarks {
            if let Ok(outcome) = serde_json::from_value::<BenchmarkOutcome>(entry.clone()) {
                outcomes.insert(id.clone(), outcome);
            }
        }
    }
    for benchmark in &run.benchmarks {
        outcomes
            .entry(benchmark.id.clone())
            .or_insert(BenchmarkOutcome::Measured {
                notes: BTreeMap::new(),
            });
    }
    // The run's own failures win over "measured": the store and the reader fail a
    // benchmark whose samples the sample rule refuses, and it must stay selected, failed.
    for failed in &run.failed {
        let error = failed.error.clone();
        let entry = outcomes
            .entry(failed.id.clone())
            .or_insert(BenchmarkOutcome::Failed {
                error: error.clone(),
            });
        if !matches!(entry, BenchmarkOutcome::Failed { .. }) {
            *entry = BenchmarkOutcome::Failed { error };
        }
    }
    outcomes.retain(|id, _| suite.selects(id));
    outcomes
}

fn result_of(
    id: &str,
    outcome: &BenchmarkOutcome,
    benchmark: Option<&BenchmarkRecord>,
    figure: Option<&Figure>,
) -> BenchmarkResult {
    let (name, reason, notes) = match outcome {
        BenchmarkOutcome::Measured { notes } => ("measured", None, Some(notes)),
        BenchmarkOutcome::Skipped { reason } => ("skipped", Some(reason.clone()), None),
        BenchmarkOutcome::Failed { error } => ("failed", Some(error.clone()), None),
    };
    // A failed benchmark's samples (if any) are not a measurement: no latency from them.
    let latency = benchmark
        .filter(|_| name == "measured")
        .map(|b| latency(&b.samples.per_iteration_ns()));
    BenchmarkResult {
        id: id.into(),
        outcome: name.into(),
        reason,
        throughput: figure
            .filter(|f| f.higher_is_better)
            .map(|f| ThroughputFigure {
                value: f.value,
                unit: f.unit.clone(),
                percent_of_peak: f.percent_of_peak,
            }),
        latency_ns: latency.flatten(),
        memory: notes
            .and_then(|n| n.get("peak_memory_bytes"))
            .and_then(|v| v.as_f64())
            .map(|peak_bytes| MemoryFigure { peak_bytes }),
    }
}

fn latency(ns: &[f64]) -> Option<Latency> {
    if ns.is_empty() {
        return None;
    }
    let n = ns.len() as f64;
    let mean = ns.iter().sum::<f64>() / n;
    let variance = if ns.len() > 1 {
        ns.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some(Latency {
        mean,
        p50: crate::stats::quantile(ns, 0.5),
        p99: crate::stats::quantile(ns, 0.99),
        std: variance.sqrt(),
    })
}

fn check_of(
    id: &str,
    figure: &Figure,
    threshold: &Threshold,
    before: Option<f64>,
) -> ThresholdCheck {
    let status = threshold.judge(figure.value);
    let delta_percent = before
        .filter(|b| *b > 0.0)
        .map(|b| (figure.value / b - 1.0) * 100.0);
    ThresholdCheck {
        name: id.into(),
        benchmark: Some(id.into()),
        threshold_kind: threshold.kind,
        expected: serde_json::json!(threshold.expected),
        actual: serde_json::json!(figure.value),
        unit: Some(figure.unit.clone()),
        warning_at: Some(threshold.warning_at),
        failure_at: Some(threshold.failure_at),
        margin_percent: Some(threshold.margin_percent(figure.value)),
        passed: status != Status::Failed,
        status,
        source: threshold.source.clone(),
        before,
        delta_percent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(expected: f64, warning_at: f64, failure_at: f64) -> Threshold {
        Threshold {
            kind: ThresholdKind::Config,
            expected,
            warning_at,
            failure_at,
            higher_is_better: true,
            source: String::new(),
        }
    }

    #[test]
    fn levels_split_passed_warning_and_failed() {
        let t = rate(100.0, 100.0, 90.0);
        assert_eq!(t.judge(100.0), Status::Passed);
        assert_eq!(t.judge(95.0), Status::Warning);
        assert_eq!(t.judge(89.9), Status::Failed);
        assert_eq!(t.judge(f64::NAN), Status::Failed);
        assert!((t.margin_percent(95.0) + 5.0).abs() < 1e-9);
        let time = Threshold {
            higher_is_better: false,
            ..rate(10.0, 10.0, 12.0)
        };
        assert_eq!(time.judge(9.0), Status::Passed);
        assert_eq!(time.judge(11.0), Status::Warning);
        assert_eq!(time.judge(12.5), Status::Failed);
        assert!(time.margin_percent(12.5) < 0.0);
    }

    /// The verdict of `suite` on a run of one 1 GiB triad at `gb_per_s` on `backend`'s
    /// `device`, with the probe's `peaks`.
    fn triad_verdict(
        backend: &str,
        device: &str,
        peaks: serde_json::Value,
        suite: &str,
        gb_per_s: f64,
    ) -> ValidationResult {
        let bytes = 1u64 << 30;
        let ns = bytes as f64 / gb_per_s;
        let run: RunRecord = serde_json::from_value(serde_json::json!({
            "schema": "stackbench.run.v1", "run_id": "r", "created_unix_ms": 0, "timestamp": "t",
            "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
            "fingerprint": format!("gpu={device}"),
            "system": {"gpus": [], "peaks": peaks, "backends": {backend: {"status": "available",
                "devices": [{"name": device}]}}},
            "benchmarks": [{"id": format!("memory_bandwidth/{backend}/triad/1GiB"),
                "group": format!("memory_bandwidth/{backend}"),
                "throughput": {"Bytes": bytes},
                "samples": {"sampling_mode": "Flat", "iters": [1.0, 1.0, 1.0], "times": [ns, ns, ns]}}]
        }))
        .unwrap();
        let config = Config::default();
        let suite = config.suite(suite).unwrap();
        validate(&Inputs {
            run: &run,
            suite: &suite,
            config: &config,
            history: &[],
            before: None,
            filter: None,
        })
        .unwrap()
    }

    /// The GPU path without a GPU: an H100 whose triad reaches 1,500 GB/s fails DCGM's
    /// 1,905,000 MiB/s; one at 2,100 GB/s passes it. Both say the threshold is the vendor's.
    #[test]
    fn an_h100_below_dcgm_bandwidth_fails_on_the_vendor_figure() {
        let verdict = |gb_per_s: f64| {
            let h100 = "NVIDIA H100 80GB HBM3";
            triad_verdict("cuda", h100, serde_json::json!([]), "quick", gb_per_s)
        };
        let slow = verdict(1500.0);
        assert_eq!(slow.status, Status::Failed);
        let check = slow
            .threshold_checks
            .iter()
            .find(|c| c.threshold_kind == ThresholdKind::Vendor)
            .unwrap();
        assert!(check.source.contains("DCGM"));
        assert!((check.actual.as_f64().unwrap() - 1500.0).abs() < 1e-6);
        assert_eq!(verdict(2100.0).status, Status::Passed);
    }

    /// A Vulkan GPU with no vendor figure: its triad is judged at 70 %/50 % of the probe's
    /// bandwidth peak (here measured, 100 GB/s). A triad above that peak makes the peak
    /// suspect: nothing judges the triad by it, and a note says why with both figures.
    #[test]
    fn a_vulkan_triad_is_judged_against_the_probes_peak_unless_it_beat_it() {
        let arc = "Intel(R) Arc(tm) A770 Graphics";
        let peaks = serde_json::json!([{"backend": "vulkan", "device": arc, "dtype": null,
            "metric": "bytes_per_second", "theoretical": null, "measured": 100e9,
            "source": "measured: the STREAM copy kernel over 1 GiB arrays"}]);
        let verdict =
            |gb_per_s: f64| triad_verdict("vulkan", arc, peaks.clone(), "level-1", gb_per_s);
        let judged = |v: &ValidationResult| {
            v.threshold_checks
                .iter()
                .filter(|c| c.threshold_kind == ThresholdKind::PeakFraction)
                .map(|c| (c.status, c.expected.as_f64(), c.failure_at))
                .collect::<Vec<_>>()
        };
        let (passing, slow) = (verdict(80.0), verdict(40.0));
        assert_eq!(
            judged(&passing),
            vec![(Status::Passed, Some(70.0), Some(50.0))]
        );
        assert_eq!(
            judged(&slow),
            vec![(Status::Failed, Some(70.0), Some(50.0))]
        );
        let above = verdict(150.0);
        assert!(judged(&above).is_empty(), "{:?}", above.threshold_checks);
        let note = above
            .notes
            .iter()
            .find(|n| n.starts_with("memory_bandwidth/vulkan/triad/1GiB: "))
            .expect("a note on the unjudged triad");
        assert!(
            note.contains("no fraction of the probe's peak judges it")
                && note.contains("150")
                && note.contains("100"),
            "{note}"
        );
    }

    fn cpu_run(times: serde_json::Value) -> RunRecord {
        serde_json::from_value(serde_json::json!({
            "schema": "stackbench.run.v1", "run_id": "r", "created_unix_ms": 0, "timestamp": "t",
            "source": {"criterion_dir": "c", "baseline": "new", "analyzer_version": "0"},
            "system": {"gpus": [], "peaks": [], "backends": {"cpu": {"status": "available",
                "devices": [{"name": "cpu"}]}}},
            "benchmarks": [{"id": "gemm/cpu/f32/64x64x64", "group": "gemm/cpu",
                "samples": {"sampling_mode": "Flat", "iters": [1.0, 1.0], "times": times}}]
        }))
        .unwrap()
    }

    fn judge(
        run: &RunRecord,
        suite: &str,
        filter: Option<&str>,
    ) -> Result<ValidationResult, ValidationError> {
        let config = Config::parse(
            "[suites.none]\ninclude = ['^no/such$']\n",
            std::path::Path::new("stackbench.toml"),
        )
        .unwrap();
        let suite = config.suite(suite).unwrap();
        validate(&Inputs {
            run,
            suite: &suite,
            config: &config,
            history: &[],
            before: None,
            filter,
        })
    }

    #[test]
    fn an_empty_selection_is_an_error_naming_the_suite_or_filter() {
        let run = cpu_run(serde_json::json!([5.0, 6.0]));
        let none = judge(&run, "none", None).unwrap_err().to_string();
        assert!(none.contains("suite 'none' selects no benchmark"), "{none}");
        let filtered = judge(&run, "quick", Some("^x$")).unwrap_err().to_string();
        assert!(filtered.contains("the filter '^x$'"), "{filtered}");
        assert!(matches!(
            judge(&run, "quick", Some("(")),
            Err(ValidationError::BadFilter { .. })
        ));
        let judged = judge(&run, "quick", None).unwrap();
        assert_eq!(judged.evidence.samples, 2);
    }

    #[test]
    fn unusable_samples_fail_the_benchmark_and_the_verdict() {
        for times in [
            serde_json::json!([0.0, 0.0]),
            serde_json::json!([-1.0, 2.0]),
        ] {
            let verdict = judge(&cpu_run(times), "quick", None).unwrap();
            assert_eq!(verdict.status, Status::Failed);
            assert_eq!(verdict.results[0].outcome, "failed");
            assert!(
                verdict.results[0]
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("no usable samples: ")
                        && (r.contains("sample 0") || r.contains("all 2 sample times are 0"))),
                "{:?}",
                verdict.results[0]
            );
            assert!(verdict.results[0].latency_ns.is_none());
            assert_eq!(verdict.evidence.benchmarks, 0);
        }
    }

    #[test]
    fn latency_summary() {
        let l = latency(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(l.mean, 2.5);
        assert_eq!(l.p50, 2.5);
        assert!((l.std - 1.2909944).abs() < 1e-6);
        assert!(latency(&[]).is_none());
    }
}
