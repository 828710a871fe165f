//! The sweep plan: the axes a user asks for (models x batch x seq x precision x backend on
//! one device), checked against what exists, expanded into cells, and written as the JSON
//! file the worker reads (`STACKBENCH_MODELS_PLAN`, `version` 1; the format is the shared
//! design's, with one addition: `backends`, the workers the bench target starts).
//!
//! Bad names are errors that list the valid ones, before anything runs: a sweep that has
//! been running for an hour must not stop at a typo in its last axis.
//!
//! Rates (requests/s) are an axis of their own: with them, each model that generates gets
//! `serve` cells (`<model>-<precision>-serve/b<B>_s<S>_r<R>`, B the most concurrent
//! requests), and the plan carries `serve`: the requests of one load run, the seed of the
//! arrivals and the per-request SLOs goodput counts against. Without rates the plan is what
//! it was (no `serve`, no `rate`), so sweeps that do not ask for load keep their size.

use super::catalogue::{self, Arch, ModelSpec};
use super::{Phase, Precision, SweepBackend, SweepDevice, Task};
use crate::files::atomic::{AtomicWriteError, write_json_atomic};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment variable naming the plan file the bench target and its workers read.
pub const PLAN_ENV: &str = "STACKBENCH_MODELS_PLAN";
/// The backend one worker process runs (`torch`, `onnxruntime`, `openvino`, `vllm`).
pub const BACKEND_ENV: &str = "STACKBENCH_MODELS_BACKEND";
/// The plan format this code writes and reads.
pub const PLAN_VERSION: u32 = 1;
/// New tokens of a decode cell, fixed (no early stop on EOS) so cells compare.
pub const DEFAULT_NEW_TOKENS: u64 = 16;
/// Requests of one serve cell's load run, unless the sweep says otherwise.
pub const DEFAULT_SERVE_REQUESTS: u32 = 32;
/// The per-request SLOs goodput counts against unless the sweep states its own: MLPerf
/// Inference's Llama-2-70B Server scenario bounds (TTFT <= 2 s, TPOT <= 200 ms).
pub const DEFAULT_SERVE_SLOS: &[&str] = &["ttft<=2s", "tpot<=200ms"];
/// The seed of a load run's arrival times: every backend sees the same arrivals.
pub const SERVE_SEED: u64 = 0;
/// Rates a serve cell may offer, requests/s. Inside this range Rust's and Python's
/// shortest float forms agree (no exponent), so both write the same id.
pub const RATE_RANGE: (f64, f64) = (0.001, 1e6);

/// Why a sweep cannot be planned; each names what was wrong and what would be valid.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("unknown model '{name}' (valid: {valid}, or a directory holding a config.json)")]
    UnknownModel { name: String, valid: String },
    #[error("unknown {axis} '{value}' (valid: {valid})")]
    UnknownName {
        axis: &'static str,
        value: String,
        valid: String,
    },
    #[error("{axis}: '{value}' is not a positive whole number")]
    BadNumber { axis: &'static str, value: String },
    #[error(
        "rate: '{value}' is not a request rate (a number of requests/s from {} to {})",
        RATE_RANGE.0,
        RATE_RANGE.1
    )]
    BadRate { value: String },
    #[error(
        "serve SLO '{text}': {why} (valid forms: ttft<=2s, tpot<=200ms, e2e<=10s: a \
         per-request bound on ttft, tpot or e2e, units ns|us|ms|s)"
    )]
    BadServeSlo { text: String, why: String },
    #[error("the {axis} axis is empty: a sweep needs at least one value")]
    Empty { axis: &'static str },
    #[error("{dir}: {detail}")]
    LocalModel { dir: PathBuf, detail: String },
    #[error("the plan {path}: {detail}")]
    Read { path: PathBuf, detail: String },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

/// The axes as written in flags or `[sweeps.NAME]`: names not yet checked. `None` keeps the
/// default of that axis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawAxes {
    pub models: Option<Vec<String>>,
    pub batch: Option<Vec<String>>,
    pub seq: Option<Vec<String>>,
    pub precision: Option<Vec<String>>,
    pub backend: Option<Vec<String>>,
    pub device: Option<String>,
    pub new_tokens: Option<u64>,
    /// Requests/s of the serve cells; none: no serve cells.
    pub rates: Option<Vec<String>>,
    /// Per-request SLOs of the serve cells (`ttft<=200ms`).
    pub serve_slos: Option<Vec<String>>,
    /// Requests of one load run.
    pub serve_requests: Option<u32>,
}

impl RawAxes {
    /// `self`, with each axis `over` sets replacing this one's (flags over the file).
    pub fn overridden_by(self, over: RawAxes) -> RawAxes {
        RawAxes {
            models: over.models.or(self.models),
            batch: over.batch.or(self.batch),
            seq: over.seq.or(self.seq),
            precision: over.precision.or(self.precision),
            backend: over.backend.or(self.backend),
            device: over.device.or(self.device),
            new_tokens: over.new_tokens.or(self.new_tokens),
            rates: over.rates.or(self.rates),
            serve_slos: over.serve_slos.or(self.serve_slos),
            serve_requests: over.serve_requests.or(self.serve_requests),
        }
    }
}

/// A model to build: one of the catalogue's, or a user's directory used as is.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelRef {
    Catalogue(&'static ModelSpec),
    Local {
        name: String,
        dir: PathBuf,
        arch: Arch,
    },
}

impl ModelRef {
    pub fn name(&self) -> &str {
        match self {
            ModelRef::Catalogue(spec) => spec.name,
            ModelRef::Local { name, .. } => name,
        }
    }

    pub fn task(&self) -> Task {
        match self {
            ModelRef::Catalogue(spec) => spec.task(),
            ModelRef::Local { arch, .. } => arch.task(),
        }
    }
}

/// Checked axes.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepAxes {
    pub models: Vec<ModelRef>,
    pub batch: Vec<u32>,
    pub seq: Vec<u64>,
    pub precision: Vec<Precision>,
    pub backend: Vec<SweepBackend>,
    pub device: SweepDevice,
    pub new_tokens: u64,
    /// Requests/s of the serve cells; empty: no serve cells.
    pub rates: Vec<f64>,
    /// How a serve cell loads its backend (used only when `rates` is not empty).
    pub serve: ServePlan,
}

impl SweepAxes {
    /// Checks every name and number; unset axes take their defaults (the `ci-` models,
    /// batch 1, seq 128, fp32, torch, the best device this machine has).
    pub fn resolve(raw: &RawAxes, detected: SweepDevice) -> Result<SweepAxes, PlanError> {
        let models = match &raw.models {
            Some(names) => names.iter().map(|n| model(n)).collect::<Result<_, _>>()?,
            None => catalogue::CATALOGUE
                .iter()
                .filter(|m| m.name.starts_with("ci-"))
                .map(ModelRef::Catalogue)
                .collect(),
        };
        let device = match &raw.device {
            Some(name) => named("device", name, SweepDevice::parse, SweepDevice::valid)?,
            None => detected,
        };
        let axes = SweepAxes {
            models: dedup(models),
            batch: numbers("batch", raw.batch.as_deref(), &["1"])?,
            seq: numbers("seq", raw.seq.as_deref(), &["128"])?,
            precision: names(
                "precision",
                &raw.precision,
                Precision::parse,
                Precision::valid,
            )?
            .unwrap_or_else(|| vec![Precision::Fp32]),
            backend: names(
                "backend",
                &raw.backend,
                SweepBackend::parse,
                SweepBackend::valid,
            )?
            .unwrap_or_else(|| vec![SweepBackend::Torch]),
            device,
            new_tokens: raw.new_tokens.unwrap_or(DEFAULT_NEW_TOKENS),
            rates: rates(raw.rates.as_deref())?,
            serve: ServePlan::resolve(raw)?,
        };
        if axes.models.is_empty() {
            return Err(PlanError::Empty { axis: "models" });
        }
        if axes.new_tokens == 0 {
            return Err(PlanError::BadNumber {
                axis: "new_tokens",
                value: "0".into(),
            });
        }
        Ok(axes)
    }
}

/// Checks the serve axes alone (rates, SLOs, requests), for a config file's keys.
pub fn check_serve(raw: &RawAxes) -> Result<(), PlanError> {
    rates(raw.rates.as_deref())?;
    ServePlan::resolve(raw).map(|_| ())
}

/// Request rates: positive numbers inside [`RATE_RANGE`], deduplicated; none when unset.
fn rates(values: Option<&[String]>) -> Result<Vec<f64>, PlanError> {
    let Some(values) = values else {
        return Ok(Vec::new());
    };
    if values.is_empty() {
        return Err(PlanError::Empty { axis: "rates" });
    }
    let parsed = values
        .iter()
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && (RATE_RANGE.0..=RATE_RANGE.1).contains(r))
                .ok_or_else(|| PlanError::BadRate {
                    value: v.to_string(),
                })
        })
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(dedup(parsed))
}

fn dedup<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut kept: Vec<T> = Vec::new();
    for item in items {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    kept
}

fn named<T>(
    axis: &'static str,
    value: &str,
    parse: impl Fn(&str) -> Option<T>,
    valid: impl Fn() -> String,
) -> Result<T, PlanError> {
    parse(value).ok_or_else(|| PlanError::UnknownName {
        axis,
        value: value.trim().to_owned(),
        valid: valid(),
    })
}

fn names<T: PartialEq>(
    axis: &'static str,
    values: &Option<Vec<String>>,
    parse: impl Fn(&str) -> Option<T> + Copy,
    valid: impl Fn() -> String + Copy,
) -> Result<Option<Vec<T>>, PlanError> {
    let Some(values) = values else {
        return Ok(None);
    };
    let parsed: Vec<T> = values
        .iter()
        .map(|v| named(axis, v, parse, valid))
        .collect::<Result<_, _>>()?;
    if parsed.is_empty() {
        return Err(PlanError::Empty { axis });
    }
    Ok(Some(dedup(parsed)))
}

fn numbers<T: std::str::FromStr + PartialEq + Default>(
    axis: &'static str,
    values: Option<&[String]>,
    default: &[&str],
) -> Result<Vec<T>, PlanError> {
    let values: Vec<&str> = match values {
        Some(v) => v.iter().map(String::as_str).collect(),
        None => default.to_vec(),
    };
    if values.is_empty() {
        return Err(PlanError::Empty { axis });
    }
    let parsed = values
        .iter()
        .map(|v| {
            v.trim()
                .parse::<T>()
                .ok()
                .filter(|n| *n != T::default())
                .ok_or_else(|| PlanError::BadNumber {
                    axis,
                    value: v.to_string(),
                })
        })
        .collect::<Result<Vec<T>, _>>()?;
    Ok(dedup(parsed))
}

/// A catalogue name, or a directory with a `config.json` whose `model_type` stackbench
/// knows (named after the directory).
pub fn model(name: &str) -> Result<ModelRef, PlanError> {
    let name = name.trim();
    if let Some(spec) = catalogue::find(name) {
        return Ok(ModelRef::Catalogue(spec));
    }
    let dir = Path::new(name);
    if !(name.contains('/') || dir.is_dir()) {
        return Err(PlanError::UnknownModel {
            name: name.into(),
            valid: catalogue::names().join(", "),
        });
    }
    let local = |detail: String| PlanError::LocalModel {
        dir: dir.to_path_buf(),
        detail,
    };
    let config_path = dir.join("config.json");
    let text = std::fs::read_to_string(&config_path)
        .map_err(|e| local(format!("cannot read {}: {e}", config_path.display())))?;
    let config: Value = serde_json::from_str(&text)
        .map_err(|e| local(format!("{} is not JSON: {e}", config_path.display())))?;
    let model_type = config["model_type"].as_str().unwrap_or("");
    let arch = Arch::parse(model_type).ok_or_else(|| {
        let valid: Vec<&str> = Arch::ALL.iter().map(|a| a.id()).collect();
        local(format!(
            "model_type '{model_type}' is not one stackbench sweeps (valid: {})",
            valid.join(", ")
        ))
    })?;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let base = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    // Ids split on '/' and '-' separates the model from its precision and phase.
    let name: String = base
        .unwrap_or_else(|| "local".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(ModelRef::Local { name, dir, arch })
}

/// A per-request bound a serve cell's goodput counts against: a request is good when it
/// meets every one (vLLM's goodput; a bound on a percentile would not be per request).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestSlo {
    /// As written, normalised (`ttft<=200ms`).
    pub text: String,
    /// `ttft` (arrival to first token, queueing included), `tpot` or `e2e`.
    pub metric: String,
    pub bound_ns: f64,
}

/// The per-request metrics a serve SLO may bound.
pub const REQUEST_SLO_METRICS: &[&str] = &["ttft", "tpot", "e2e"];

impl std::str::FromStr for RequestSlo {
    type Err = PlanError;

    fn from_str(text: &str) -> Result<RequestSlo, PlanError> {
        let bad = |why: String| PlanError::BadServeSlo {
            text: text.trim().to_owned(),
            why,
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (metric, value) = compact
            .split_once("<=")
            .ok_or_else(|| bad("no <= (a serve SLO bounds a latency from above)".into()))?;
        let metric = metric.to_ascii_lowercase();
        if !REQUEST_SLO_METRICS.contains(&metric.as_str()) {
            return Err(bad(format!("unknown metric '{metric}'")));
        }
        let bound_ns = crate::units::parse_latency_ns(value).map_err(bad)?;
        Ok(RequestSlo {
            text: format!("{metric}<={value}"),
            metric,
            bound_ns,
        })
    }
}

/// How every serve cell of a plan loads its backend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServePlan {
    /// Requests of one load run (arrivals at the cell's rate, then the run drains).
    pub requests: u32,
    /// Seed of the exponential inter-arrival times.
    pub seed: u64,
    pub slos: Vec<RequestSlo>,
}

impl ServePlan {
    fn resolve(raw: &RawAxes) -> Result<ServePlan, PlanError> {
        let defaults: Vec<String> = DEFAULT_SERVE_SLOS.iter().map(|s| s.to_string()).collect();
        let texts = raw.serve_slos.as_ref().unwrap_or(&defaults);
        if texts.is_empty() {
            return Err(PlanError::Empty { axis: "serve_slo" });
        }
        let slos = texts
            .iter()
            .map(|t| t.parse())
            .collect::<Result<Vec<RequestSlo>, _>>()?;
        let requests = raw.serve_requests.unwrap_or(DEFAULT_SERVE_REQUESTS);
        if requests == 0 {
            return Err(PlanError::BadNumber {
                axis: "serve_requests",
                value: "0".into(),
            });
        }
        Ok(ServePlan {
            requests,
            seed: SERVE_SEED,
            slos: dedup(slos),
        })
    }
}

/// One timed benchmark of the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub model: String,
    pub precision: Precision,
    pub phase: Phase,
    /// At most this many requests at once in a serve cell.
    pub batch: u32,
    /// Prompt tokens; 0 where the input size is fixed (vision, speech).
    pub seq: u64,
    /// Requests/s offered to a serve cell; absent for every other phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
}

impl Cell {
    /// Criterion's function id: `<model>-<precision>-<phase>`.
    pub fn benchmark(&self) -> String {
        format!("{}-{}-{}", self.model, self.precision, self.phase.id())
    }

    /// Criterion's value: `b<B>_s<S>`, or `b<B>` where the sequence does not apply;
    /// a serve cell adds its rate, `b<B>_s<S>_r<R>` (R as the shortest decimal: `r8`,
    /// `r0.5`).
    pub fn parameters(&self) -> String {
        let shape = if self.seq == 0 {
            format!("b{}", self.batch)
        } else {
            format!("b{}_s{}", self.batch, self.seq)
        };
        match self.rate {
            Some(rate) => format!("{shape}_r{rate}"),
            None => shape,
        }
    }
}

/// One model as the plan file carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanModel {
    pub arch: String,
    pub task: String,
    /// The `transformers` config kwargs, or null when `local_dir` is set.
    pub config: Option<Value>,
    pub local_dir: Option<PathBuf>,
    /// The catalogue's count from the dims (null for a local directory).
    pub params_expected: Option<u64>,
    /// Forward FLOPs per token at context 0 (null for a local directory).
    pub flops_per_token: Option<u64>,
}

/// The file the worker reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    pub version: u32,
    pub device: SweepDevice,
    pub new_tokens: u64,
    /// The workers to start, one process each, in this order.
    pub backends: Vec<SweepBackend>,
    pub models: BTreeMap<String, PlanModel>,
    pub cells: Vec<Cell>,
    /// How serve cells load their backend; absent when the plan has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve: Option<ServePlan>,
}

impl SweepPlan {
    /// Every cell of the axes: model x precision x phase x batch x seq, in that order,
    /// then (with rates) each generating model's serve cells: batch x seq x rate.
    pub fn from_axes(axes: &SweepAxes) -> SweepPlan {
        let mut models = BTreeMap::new();
        let mut cells = Vec::new();
        for model in &axes.models {
            models.insert(model.name().to_owned(), plan_model(model));
            let seqs: &[u64] = if model.task().uses_seq() {
                &axes.seq
            } else {
                &[0]
            };
            for &precision in &axes.precision {
                for &phase in model.task().phases() {
                    for &batch in &axes.batch {
                        for &seq in seqs {
                            cells.push(Cell {
                                model: model.name().to_owned(),
                                precision,
                                phase,
                                batch,
                                seq,
                                rate: None,
                            });
                        }
                    }
                }
                if !model.task().generates() {
                    continue;
                }
                for &batch in &axes.batch {
                    for &seq in seqs {
                        for &rate in &axes.rates {
                            cells.push(Cell {
                                model: model.name().to_owned(),
                                precision,
                                phase: Phase::Serve,
                                batch,
                                seq,
                                rate: Some(rate),
                            });
                        }
                    }
                }
            }
        }
        SweepPlan {
            version: PLAN_VERSION,
            device: axes.device,
            new_tokens: axes.new_tokens,
            backends: axes.backend.clone(),
            models,
            cells,
            serve: (!axes.rates.is_empty()).then(|| axes.serve.clone()),
        }
    }

    /// Writes the plan atomically (a reader never sees half of it).
    pub fn write(&self, path: &Path) -> Result<(), PlanError> {
        Ok(write_json_atomic(path, self)?)
    }

    /// Reads a plan file; a wrong version or shape is an error naming the file.
    pub fn load(path: &Path) -> Result<SweepPlan, PlanError> {
        let read = |detail: String| PlanError::Read {
            path: path.to_path_buf(),
            detail,
        };
        let text = std::fs::read_to_string(path).map_err(|e| read(e.to_string()))?;
        let plan: SweepPlan = serde_json::from_str(&text).map_err(|e| read(e.to_string()))?;
        if plan.version != PLAN_VERSION {
            return Err(read(format!(
                "version {} (this stackbench reads version {PLAN_VERSION})",
                plan.version
            )));
        }
        if let Some(cell) = plan
            .cells
            .iter()
            .find(|c| !plan.models.contains_key(&c.model))
        {
            return Err(read(format!("cell of unknown model '{}'", cell.model)));
        }
        let serving = plan.cells.iter().find(|c| c.phase == Phase::Serve);
        if let Some(cell) = serving.filter(|c| c.rate.is_none() || plan.serve.is_none()) {
            return Err(read(format!(
                "serve cell {}/{} needs its rate and the plan's serve settings",
                cell.benchmark(),
                cell.parameters()
            )));
        }
        Ok(plan)
    }

    /// The catalogue entry of a cell's model; `None` for a local directory.
    pub fn spec(&self, cell: &Cell) -> Option<&'static ModelSpec> {
        let local = self
            .models
            .get(&cell.model)
            .is_some_and(|m| m.local_dir.is_some());
        (!local).then(|| catalogue::find(&cell.model)).flatten()
    }
}

fn plan_model(model: &ModelRef) -> PlanModel {
    match model {
        ModelRef::Catalogue(spec) => PlanModel {
            arch: spec.arch().id().into(),
            task: spec.task().id().into(),
            config: Some(spec.dims.hf_config()),
            local_dir: None,
            params_expected: Some(spec.params()),
            flops_per_token: Some(spec.flops_per_token()),
        },
        ModelRef::Local { dir, arch, .. } => PlanModel {
            arch: arch.id().into(),
            task: arch.task().id().into(),
            config: None,
            local_dir: Some(dir.clone()),
            params_expected: None,
            flops_per_token: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Option<Vec<String>> {
        Some(items.iter().map(|s| s.to_string()).collect())
    }

    /// The error `resolve` gives for `raw`, which the test expects it to refuse.
    fn refused(raw: RawAxes) -> PlanError {
        resolve(raw).unwrap_err()
    }

    fn resolve(raw: RawAxes) -> Result<SweepAxes, PlanError> {
        SweepAxes::resolve(&raw, SweepDevice::Cpu)
    }

    #[test]
    fn defaults_are_the_ci_models_at_one_point() {
        let axes = resolve(RawAxes::default()).unwrap();
        assert_eq!(axes.models.len(), 7);
        assert!(axes.models.iter().all(|m| m.name().starts_with("ci-")));
        assert_eq!((axes.batch.clone(), axes.seq.clone()), (vec![1], vec![128]));
        assert_eq!(axes.precision, vec![Precision::Fp32]);
        assert_eq!(axes.backend, vec![SweepBackend::Torch]);
        assert_eq!((axes.device, axes.new_tokens), (SweepDevice::Cpu, 16));
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let err = refused(RawAxes {
            models: strings(&["gpt3"]),
            ..RawAxes::default()
        })
        .to_string();
        assert!(
            err.contains("unknown model 'gpt3'") && err.contains("gpt2-small, "),
            "{err}"
        );
        let err = refused(RawAxes {
            precision: strings(&["fp32", "fp8"]),
            ..RawAxes::default()
        })
        .to_string();
        assert_eq!(
            err,
            "unknown precision 'fp8' (valid: fp32, bf16, fp16, int8)"
        );
        let err = refused(RawAxes {
            backend: strings(&["tensorrt"]),
            ..RawAxes::default()
        })
        .to_string();
        assert!(
            err.contains("valid: torch, onnxruntime, openvino, vllm"),
            "{err}"
        );
        let err = refused(RawAxes {
            device: Some("tpu".into()),
            ..RawAxes::default()
        })
        .to_string();
        assert!(err.contains("valid: cpu, cuda, rocm, mps, qnn"), "{err}");
        for bad in ["0", "-1", "x", ""] {
            let err = refused(RawAxes {
                batch: strings(&[bad]),
                ..RawAxes::default()
            });
            assert!(
                matches!(err, PlanError::BadNumber { axis: "batch", .. }),
                "{bad}"
            );
        }
        let err = refused(RawAxes {
            seq: Some(vec![]),
            ..RawAxes::default()
        });
        assert!(matches!(err, PlanError::Empty { axis: "seq" }));
    }

    #[test]
    fn cells_cover_every_axis_and_fixed_inputs_ignore_seq() {
        let axes = resolve(RawAxes {
            models: strings(&["ci-gpt2", "ci-vit", "ci-gpt2"]),
            batch: strings(&["1", "8"]),
            seq: strings(&["128", "512"]),
            precision: strings(&["fp32", "int8"]),
            ..RawAxes::default()
        })
        .unwrap();
        let plan = SweepPlan::from_axes(&axes);
        // gpt2: 2 precisions x 2 phases x 2 batches x 2 seqs; vit: 2 x 1 x 2 x 1.
        assert_eq!(plan.cells.len(), 16 + 4);
        let ids: Vec<String> = plan
            .cells
            .iter()
            .map(|c| format!("{}/{}", c.benchmark(), c.parameters()))
            .collect();
        assert_eq!(ids[0], "ci-gpt2-fp32-prefill/b1_s128");
        assert!(ids.contains(&"ci-gpt2-int8-decode/b8_s512".to_string()));
        assert!(ids.contains(&"ci-vit-fp32-forward/b8".to_string()));
        let gpt2 = &plan.models["ci-gpt2"];
        assert_eq!(
            (gpt2.arch.as_str(), gpt2.task.as_str()),
            ("gpt2", "decoder")
        );
        assert_eq!(gpt2.config.as_ref().unwrap()["n_embd"], 64);
    }

    #[test]
    fn the_plan_file_round_trips_in_the_designed_format() {
        let axes = resolve(RawAxes {
            models: strings(&["ci-t5"]),
            backend: strings(&["torch", "onnxruntime"]),
            ..RawAxes::default()
        })
        .unwrap();
        let plan = SweepPlan::from_axes(&axes);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        plan.write(&path).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["version"], 1);
        assert_eq!(doc["device"], "cpu");
        assert_eq!(doc["new_tokens"], 16);
        assert_eq!(doc["backends"], serde_json::json!(["torch", "onnxruntime"]));
        assert_eq!(doc["models"]["ci-t5"]["task"], "encoder_decoder");
        assert!(doc["models"]["ci-t5"]["local_dir"].is_null());
        assert!(doc["models"]["ci-t5"]["params_expected"].as_u64().unwrap() > 0);
        assert_eq!(
            doc["cells"][0],
            serde_json::json!({"model": "ci-t5", "precision": "fp32", "phase": "forward", "batch": 1, "seq": 128})
        );
        assert_eq!(SweepPlan::load(&path).unwrap(), plan);
        std::fs::write(&path, "{\"version\": 2}").unwrap();
        assert!(SweepPlan::load(&path).is_err());
    }

    #[test]
    fn rates_add_serve_cells_for_generating_models_and_nothing_else_changes() {
        let plain = resolve(RawAxes {
            models: strings(&["ci-gpt2", "ci-bert"]),
            ..RawAxes::default()
        })
        .unwrap();
        let without = SweepPlan::from_axes(&plain);
        assert!(without.serve.is_none());
        assert!(without.cells.iter().all(|c| c.rate.is_none()));
        let loaded = resolve(RawAxes {
            models: strings(&["ci-gpt2", "ci-bert", "ci-t5"]),
            batch: strings(&["4"]),
            rates: strings(&["2", "0.5", "2"]),
            ..RawAxes::default()
        })
        .unwrap();
        let plan = SweepPlan::from_axes(&loaded);
        let ids: Vec<String> = plan
            .cells
            .iter()
            .filter(|c| c.phase == Phase::Serve)
            .map(|c| format!("{}/{}", c.benchmark(), c.parameters()))
            .collect();
        // gpt2 and t5 generate (t5 is skipped later, with its reason); bert does not.
        assert_eq!(
            ids,
            [
                "ci-gpt2-fp32-serve/b4_s128_r2",
                "ci-gpt2-fp32-serve/b4_s128_r0.5",
                "ci-t5-fp32-serve/b4_s128_r2",
                "ci-t5-fp32-serve/b4_s128_r0.5",
            ]
        );
        let serve = plan.serve.as_ref().unwrap();
        assert_eq!(serve.requests, DEFAULT_SERVE_REQUESTS);
        let slos: Vec<&str> = serve.slos.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(slos, DEFAULT_SERVE_SLOS);
        assert_eq!(serve.slos[1].bound_ns, 2e8);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.json");
        plan.write(&path).unwrap();
        assert_eq!(SweepPlan::load(&path).unwrap(), plan);
        let mut broken = plan.clone();
        broken.serve = None;
        broken.write(&path).unwrap();
        let err = SweepPlan::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("serve cell ci-gpt2-fp32-serve/b4_s128_r2"),
            "{err}"
        );
    }

    #[test]
    fn bad_rates_and_serve_slos_name_the_value() {
        for bad in ["0", "-1", "x", "", "1e9", "inf"] {
            let err = refused(RawAxes {
                rates: strings(&[bad]),
                ..RawAxes::default()
            })
            .to_string();
            assert!(err.starts_with(&format!("rate: '{bad}' is not")), "{err}");
        }
        for (bad, why) in [
            ("ttft_p99<=1s", "unknown metric 'ttft_p99'"),
            ("ttft>=1s", "no <="),
            ("tpot<=5", "no time unit"),
        ] {
            let err = refused(RawAxes {
                serve_slos: strings(&[bad]),
                ..RawAxes::default()
            })
            .to_string();
            assert!(err.contains(bad) && err.contains(why), "{err}");
            assert!(err.contains("ttft<=2s, tpot<=200ms, e2e<=10s"), "{err}");
        }
        let slo: RequestSlo = " E2E <= 1.5s ".parse().unwrap();
        assert_eq!((slo.text.as_str(), slo.bound_ns), ("e2e<=1.5s", 1.5e9));
        let zero = resolve(RawAxes {
            serve_requests: Some(0),
            ..RawAxes::default()
        });
        assert!(matches!(
            zero,
            Err(PlanError::BadNumber {
                axis: "serve_requests",
                ..
            })
        ));
    }

    #[test]
    fn a_local_directory_is_used_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let model_dir = dir.path().join("my-model");
        std::fs::create_dir(&model_dir).unwrap();
        std::fs::write(model_dir.join("config.json"), r#"{"model_type": "llama"}"#).unwrap();
        let found = model(model_dir.to_str().unwrap()).unwrap();
        assert_eq!(found.name(), "my_model");
        assert_eq!(found.task(), Task::Decoder);
        let plan_model = plan_model(&found);
        assert!(plan_model.config.is_none() && plan_model.params_expected.is_none());
        std::fs::write(model_dir.join("config.json"), r#"{"model_type": "mamba"}"#).unwrap();
        let err = model(model_dir.to_str().unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("'mamba'") && err.contains("gpt2, llama"),
            "{err}"
        );
    }
}
