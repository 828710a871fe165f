//! The sweep plan: the axes a user asks for (models x batch x seq x precision x backend on
//! one device), checked against what exists, expanded into cells, and written as the JSON
//! file the worker reads (`STACKBENCH_MODELS_PLAN`, `version` 1; the format is the shared
//! design's, with one addition: `backends`, the workers the bench target starts).
//!
//! Bad names are errors that list the valid ones, before anything runs: a sweep that has
//! been running for an hour must not stop at a typo in its last axis.

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

/// One timed benchmark of the sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub model: String,
    pub precision: Precision,
    pub phase: Phase,
    pub batch: u32,
    /// Prompt tokens; 0 where the input size is fixed (vision, speech).
    pub seq: u64,
}

impl Cell {
    /// Criterion's function id: `<model>-<precision>-<phase>`.
    pub fn benchmark(&self) -> String {
        format!("{}-{}-{}", self.model, self.precision, self.phase.id())
    }

    /// Criterion's value: `b<B>_s<S>`, or `b<B>` where the sequence does not apply.
    pub fn parameters(&self) -> String {
        if self.seq == 0 {
            format!("b{}", self.batch)
        } else {
            format!("b{}_s{}", self.batch, self.seq)
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
}

impl SweepPlan {
    /// Every cell of the axes: model x precision x phase x batch x seq, in that order.
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
        let err = resolve(RawAxes {
            models: strings(&["gpt3"]),
            ..RawAxes::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("unknown model 'gpt3'") && err.contains("gpt2-small, "),
            "{err}"
        );
        let err = resolve(RawAxes {
            precision: strings(&["fp32", "fp8"]),
            ..RawAxes::default()
        })
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "unknown precision 'fp8' (valid: fp32, bf16, fp16, int8)"
        );
        let err = resolve(RawAxes {
            backend: strings(&["tensorrt"]),
            ..RawAxes::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("valid: torch, onnxruntime, openvino, vllm"),
            "{err}"
        );
        let err = resolve(RawAxes {
            device: Some("tpu".into()),
            ..RawAxes::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("valid: cpu, cuda, rocm, mps, qnn"), "{err}");
        for bad in ["0", "-1", "x", ""] {
            let err = resolve(RawAxes {
                batch: strings(&[bad]),
                ..RawAxes::default()
            })
            .unwrap_err();
            assert!(
                matches!(err, PlanError::BadNumber { axis: "batch", .. }),
                "{bad}"
            );
        }
        let err = resolve(RawAxes {
            seq: Some(vec![]),
            ..RawAxes::default()
        })
        .unwrap_err();
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
