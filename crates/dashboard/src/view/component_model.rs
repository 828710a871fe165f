//! The numbers behind the components charts (PyTorch matmul against size, SDPA backends,
//! vLLM tokens/s against batch with latency bars, DeepSpeed memory per ZeRO stage), taken
//! from a run's measured benchmarks and the notes its Python workers wrote. The dashboard
//! page, `stackbench show` and the HTML run pages all draw from these, so the terminal and
//! the report cannot read a worker's notes differently.
//!
//! Note keys read here are the workers' (scripts/components): `tokens_per_s`,
//! `e2e_p50_ns`/`e2e_p99_ns` (vllm.py, per call of one batch), `zero_stage`,
//! `peak_memory_bytes`, `memory_at_rest_bytes`, `memory_after_backward_bytes`
//! (deepspeed.py).

use super::model::{Measured, log2_size, target_notes};
use crate::analysis::trends::not_measured;
use crate::results::RunRecord;
use crate::workload::family::{COMPONENTS, IdParts, sequence_length};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

type Notes = BTreeMap<String, Map<String, Value>>;

/// Everything the components charts draw for one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComponentCharts {
    /// dtype → (log2 of the matrix side, TFLOP/s), sorted by size.
    pub matmul: BTreeMap<String, Vec<(f64, f64)>>,
    pub sdpa: Option<SdpaChart>,
    /// Prompt shape (`in128 out128`) → one point per batch size, sorted by batch.
    pub serving: BTreeMap<String, Vec<ServingPoint>>,
    pub zero: Vec<ZeroMemory>,
}

/// The SDPA backends measured (or refused) for one attention shape.
#[derive(Clone, Debug, PartialEq)]
pub struct SdpaChart {
    /// The id's parameters (`b4_h16_s2048_d64_bf16`).
    pub shape: String,
    pub backends: Vec<SdpaBackend>,
}

impl SdpaChart {
    /// The fastest measured backend's TFLOP/s (0 when none ran), for choosing the unit.
    pub fn max_tflops(&self) -> f64 {
        self.backends
            .iter()
            .filter_map(|b| match b.outcome {
                SdpaOutcome::Measured { tflops, .. } => Some(tflops),
                _ => None,
            })
            .fold(0.0, f64::max)
    }

    /// Each refusal or failure (`refused: <reason>`, `FAILED: <error>`) with the backends
    /// that gave it, in backend order: torch often refuses several with one message.
    pub fn not_run(&self) -> Vec<(String, Vec<&str>)> {
        let mut out: Vec<(String, Vec<&str>)> = Vec::new();
        for b in &self.backends {
            let text = match &b.outcome {
                SdpaOutcome::Measured { .. } => continue,
                SdpaOutcome::Refused { reason } => format!("refused: {reason}"),
                SdpaOutcome::Failed { error } => format!("FAILED: {error}"),
            };
            match out.iter_mut().find(|(t, _)| *t == text) {
                Some((_, names)) => names.push(&b.name),
                None => out.push((text, vec![&b.name])),
            }
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SdpaBackend {
    /// `math`, `efficient`, `flash`, `cudnn`, `default`.
    pub name: String,
    pub outcome: SdpaOutcome,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SdpaOutcome {
    Measured {
        tflops: f64,
        median_ns: f64,
    },
    /// Skipped: torch has no kernel of this backend for the inputs here.
    Refused {
        reason: String,
    },
    Failed {
        error: String,
    },
}

/// One vLLM batch size: output tokens/s over the timed calls, and the tokens/s a call
/// taking the p50 or the p99 call latency gives (the error bar: p99 below, p50 above).
#[derive(Clone, Debug, PartialEq)]
pub struct ServingPoint {
    pub batch: u64,
    pub tokens_per_s: f64,
    pub at_p50: Option<f64>,
    pub at_p99: Option<f64>,
}

/// One ZeRO stage's device memory, split by phase where the worker recorded the phases.
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroMemory {
    /// `ZeRO 2` (with the model width when a run has several: `ZeRO 2 d2048`).
    pub label: String,
    pub stage: u64,
    pub memory: ZeroBreakdown,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ZeroBreakdown {
    /// Bytes: at rest between steps (parameters + optimizer state partitions), added by
    /// backward (gradients), added at the step's peak (activations and temporaries).
    Phases {
        at_rest: f64,
        gradients: f64,
        activations: f64,
    },
    /// A run recorded before the phases were: its peak alone.
    PeakOnly(f64),
}

impl ZeroBreakdown {
    pub fn total(&self) -> f64 {
        match self {
            ZeroBreakdown::Phases {
                at_rest,
                gradients,
                activations,
            } => at_rest + gradients + activations,
            ZeroBreakdown::PeakOnly(peak) => *peak,
        }
    }

    /// The four stacked segments, in bytes: at rest, gradients, activations, peak only.
    pub fn segments(&self) -> [f64; 4] {
        match *self {
            ZeroBreakdown::Phases {
                at_rest,
                gradients,
                activations,
            } => [at_rest, gradients, activations, 0.0],
            ZeroBreakdown::PeakOnly(peak) => [0.0, 0.0, 0.0, peak],
        }
    }
}

/// Names of the four segments of [`ZeroBreakdown::segments`], short enough for a terminal
/// legend: memory at rest (parameters and optimizer state partitions), what backward adds
/// (gradients), what the step's peak adds (activations, temporaries), and the single peak
/// of a run recorded before the phases were.
pub const ZERO_SEGMENTS: [&str; 4] = ["params+optim", "grads", "activations", "peak only"];

/// The unit a FLOP rate reads best in: TFLOP/s from 1 TFLOP/s up, else GFLOP/s (a CPU's
/// matmul). Returns (factor from TFLOP/s, unit).
pub fn flop_unit(max_tflops: f64) -> (f64, &'static str) {
    if max_tflops >= 1.0 {
        (1.0, "TFLOP/s")
    } else {
        (1e3, "GFLOP/s")
    }
}

/// The SDPA backends in the order torch documents them; others follow by name.
const SDPA_ORDER: [&str; 5] = ["math", "efficient", "flash", "cudnn", "default"];

impl ComponentCharts {
    /// The unit the matmul chart reads best in, from its fastest point (see [`flop_unit`]).
    pub fn matmul_unit(&self) -> (f64, &'static str) {
        let max = self
            .matmul
            .values()
            .flatten()
            .map(|p| p.1)
            .fold(0.0, f64::max);
        flop_unit(max)
    }

    /// The charts of `run`, whose measured benchmarks are `measured`.
    pub fn from_run(run: &RunRecord, measured: &[Measured]) -> ComponentCharts {
        let notes = target_notes(run);
        let components: Vec<&Measured> = measured
            .iter()
            .filter(|m| m.family == COMPONENTS.name)
            .collect();
        ComponentCharts {
            matmul: matmul_series(&components),
            sdpa: sdpa_chart(run, &components),
            serving: serving_series(&components, &notes),
            zero: zero_memory(&components, &notes),
        }
    }
}

fn note(notes: &Notes, id: &str, key: &str) -> Option<f64> {
    notes.get(id)?.get(key)?.as_f64().filter(|v| v.is_finite())
}

/// `components/pytorch/matmul/<dtype>_<M>x<N>x<K>`: TFLOP/s (the declared throughput is
/// 2·M·N·K FLOP) against the side of the cube of equal work.
fn matmul_series(components: &[&Measured]) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in components
        .iter()
        .filter(|m| m.backend == "pytorch" && m.function == "matmul")
    {
        let Some((dtype, dims)) = m.value.split_once('_') else {
            continue;
        };
        if let (Some(x), Some(rate)) = (log2_size("gemm", dims), m.rate_value()) {
            series
                .entry(dtype.to_string())
                .or_default()
                .push((x, rate / 1e3));
        }
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// The shape with the most SDPA backends measured (ties: the longest sequence), with every
/// backend measured, refused or failed at that shape.
fn sdpa_chart(run: &RunRecord, components: &[&Measured]) -> Option<SdpaChart> {
    let backend_of = |function: &str| function.strip_prefix("sdpa_").map(str::to_string);
    let mut shapes: BTreeMap<String, Vec<SdpaBackend>> = BTreeMap::new();
    for m in components.iter().filter(|m| m.backend == "attention") {
        if let (Some(name), Some(rate)) = (backend_of(&m.function), m.rate_value()) {
            shapes
                .entry(m.value.clone())
                .or_default()
                .push(SdpaBackend {
                    name,
                    outcome: SdpaOutcome::Measured {
                        tflops: rate / 1e3,
                        median_ns: m.median_ns,
                    },
                });
        }
    }
    let shape = shapes
        .iter()
        .max_by(|a, b| {
            let seq = |s: &str| sequence_length(s).unwrap_or(0.0);
            a.1.len()
                .cmp(&b.1.len())
                .then(seq(a.0).total_cmp(&seq(b.0)))
        })?
        .0
        .clone();
    let mut backends = shapes.remove(&shape).unwrap_or_default();
    for n in not_measured(run) {
        let parts = IdParts::split(&n.id);
        if parts.family != COMPONENTS.name || parts.backend != "attention" || parts.value != shape {
            continue;
        }
        let Some(name) = backend_of(parts.function) else {
            continue;
        };
        let outcome = if n.outcome == "failed" {
            SdpaOutcome::Failed { error: n.reason }
        } else {
            SdpaOutcome::Refused { reason: n.reason }
        };
        backends.push(SdpaBackend { name, outcome });
    }
    let rank = |name: &str| SDPA_ORDER.iter().position(|o| *o == name).unwrap_or(99);
    backends.sort_by(|a, b| rank(&a.name).cmp(&rank(&b.name)).then(a.name.cmp(&b.name)));
    Some(SdpaChart { shape, backends })
}

/// `b<B>_in<I>_out<O>` → (B, I, O).
fn parse_serving(value: &str) -> Option<(u64, u64, u64)> {
    let rest = value.strip_prefix('b')?;
    let (batch, rest) = rest.split_once("_in")?;
    let (prompt, out) = rest.split_once("_out")?;
    Some((batch.parse().ok()?, prompt.parse().ok()?, out.parse().ok()?))
}

/// `components/vllm/offline/b<B>_in<I>_out<O>`, one series per prompt shape.
fn serving_series(components: &[&Measured], notes: &Notes) -> BTreeMap<String, Vec<ServingPoint>> {
    let mut series: BTreeMap<String, Vec<ServingPoint>> = BTreeMap::new();
    for m in components
        .iter()
        .filter(|m| m.backend == "vllm" && m.function == "offline")
    {
        let Some((batch, prompt, out)) = parse_serving(&m.value) else {
            continue;
        };
        let tokens = (batch * out) as f64;
        // A call generates B·O tokens: at a call latency of t ns that is B·O/t·1e9 tokens/s.
        let at = |key: &str| {
            note(notes, &m.id, key)
                .filter(|ns| *ns > 0.0)
                .map(|ns| tokens * 1e9 / ns)
        };
        let tokens_per_s = note(notes, &m.id, "tokens_per_s").unwrap_or(tokens * 1e9 / m.median_ns);
        series
            .entry(format!("in{prompt} out{out}"))
            .or_default()
            .push(ServingPoint {
                batch,
                tokens_per_s,
                at_p50: at("e2e_p50_ns"),
                at_p99: at("e2e_p99_ns"),
            });
    }
    for points in series.values_mut() {
        points.sort_by_key(|p| p.batch);
    }
    series
}

/// `components/deepspeed/zero_step/stage<S>_ranks<W>_d<D>_t<T>`, by stage then width.
fn zero_memory(components: &[&Measured], notes: &Notes) -> Vec<ZeroMemory> {
    let mut rows: Vec<(u64, String, ZeroBreakdown)> = Vec::new();
    for m in components
        .iter()
        .filter(|m| m.backend == "deepspeed" && m.function == "zero_step")
    {
        let stage = notes
            .get(&m.id)
            .and_then(|n| n.get("zero_stage"))
            .and_then(Value::as_u64)
            .or_else(|| stage_of(&m.value));
        let (Some(stage), Some(peak)) = (stage, note(notes, &m.id, "peak_memory_bytes")) else {
            continue;
        };
        let width = m
            .value
            .split('_')
            .find(|p| p.starts_with('d'))
            .unwrap_or_default()
            .to_string();
        let memory = match (
            note(notes, &m.id, "memory_at_rest_bytes"),
            note(notes, &m.id, "memory_after_backward_bytes"),
        ) {
            (Some(rest), Some(backward)) => ZeroBreakdown::Phases {
                at_rest: rest,
                // Allocator numbers can dip between snapshots: a part is never negative.
                gradients: (backward - rest).max(0.0),
                activations: (peak - backward.max(rest)).max(0.0),
            },
            _ => ZeroBreakdown::PeakOnly(peak),
        };
        rows.push((stage, width, memory));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let widths = {
        let mut w: Vec<&String> = rows.iter().map(|r| &r.1).collect();
        w.dedup();
        w.len()
    };
    rows.iter()
        .map(|(stage, width, memory)| ZeroMemory {
            label: if widths > 1 {
                format!("ZeRO {stage} {width}")
            } else {
                format!("ZeRO {stage}")
            },
            stage: *stage,
            memory: memory.clone(),
        })
        .collect()
}

fn stage_of(value: &str) -> Option<u64> {
    value.strip_prefix("stage")?.split('_').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(id: &str, median_ns: f64, rate: Option<f64>) -> Measured {
        let parts: Vec<&str> = id.splitn(4, '/').collect();
        Measured {
            id: id.into(),
            family: parts[0].into(),
            backend: parts[1].into(),
            function: parts[2].into(),
            value: parts[3].into(),
            median_ns,
            rate: rate.map(|value| crate::analysis::throughput::Rate {
                unit: crate::units::RateUnit::GflopPerSecond,
                value,
                percent_of_peak: None,
                suspect_peak: None,
            }),
            accuracy: None,
        }
    }

    fn notes_of(id: &str, pairs: &[(&str, f64)]) -> Notes {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect();
        BTreeMap::from([(id.to_string(), map)])
    }

    #[test]
    fn matmul_points_are_tflops_against_log2_side_per_dtype() {
        let a = measured(
            "components/pytorch/matmul/bf16_1024x1024x1024",
            1.0,
            Some(500.0),
        );
        let b = measured(
            "components/pytorch/matmul/bf16_256x256x256",
            1.0,
            Some(100.0),
        );
        let c = measured(
            "components/pytorch/conv2d/f32_n4_c64_h56_k64_r3_s1",
            1.0,
            Some(9.0),
        );
        let series = matmul_series(&[&a, &b, &c]);
        assert_eq!(series.len(), 1);
        assert_eq!(series["bf16"], vec![(8.0, 0.1), (10.0, 0.5)]);
    }

    #[test]
    fn serving_bars_convert_p50_and_p99_call_latency_to_tokens_per_second() {
        let id = "components/vllm/offline/b8_in128_out128";
        let m = measured(id, 2e9, None);
        let notes = notes_of(
            id,
            &[
                ("tokens_per_s", 500.0),
                ("e2e_p50_ns", 1.9e9),
                ("e2e_p99_ns", 2.5e9),
            ],
        );
        let series = serving_series(&[&m], &notes);
        let p = &series["in128 out128"][0];
        assert_eq!(p.batch, 8);
        assert_eq!(p.tokens_per_s, 500.0);
        // 8·128 tokens per call: 1024 / 1.9 s and 1024 / 2.5 s.
        assert!((p.at_p50.unwrap() - 1024.0 / 1.9).abs() < 1e-9);
        assert!((p.at_p99.unwrap() - 1024.0 / 2.5).abs() < 1e-9);
        assert!(parse_serving("b8_in128").is_none());
    }

    #[test]
    fn sdpa_refusals_group_by_reason_and_failures_stand_apart() {
        let backend = |name: &str, outcome| SdpaBackend {
            name: name.into(),
            outcome,
        };
        let refused = || SdpaOutcome::Refused {
            reason: "No available kernel.".into(),
        };
        let chart = SdpaChart {
            shape: "b1_h8_s512_d64_f32".into(),
            backends: vec![
                backend(
                    "math",
                    SdpaOutcome::Measured {
                        tflops: 0.02,
                        median_ns: 5e7,
                    },
                ),
                backend("efficient", refused()),
                backend(
                    "flash",
                    SdpaOutcome::Measured {
                        tflops: 0.06,
                        median_ns: 2e7,
                    },
                ),
                backend("cudnn", refused()),
                backend(
                    "default",
                    SdpaOutcome::Failed {
                        error: "CUDA error".into(),
                    },
                ),
            ],
        };
        assert_eq!(chart.max_tflops(), 0.06);
        assert_eq!(
            chart.not_run(),
            vec![
                (
                    "refused: No available kernel.".to_string(),
                    vec!["efficient", "cudnn"]
                ),
                ("FAILED: CUDA error".to_string(), vec!["default"]),
            ]
        );
        assert_eq!(flop_unit(chart.max_tflops()), (1e3, "GFLOP/s"));
        assert_eq!(flop_unit(1.5), (1.0, "TFLOP/s"));
    }

    #[test]
    fn zero_stages_split_by_phase_or_keep_their_single_peak() {
        let new = "components/deepspeed/zero_step/stage2_ranks1_d1024_t4096";
        let old = "components/deepspeed/zero_step/stage0_ranks1_d1024_t4096";
        let (a, b) = (measured(new, 1.0, None), measured(old, 1.0, None));
        let mut notes = notes_of(
            new,
            &[
                ("zero_stage", 2.0),
                ("peak_memory_bytes", 1000.0),
                ("memory_at_rest_bytes", 600.0),
                ("memory_after_backward_bytes", 750.0),
            ],
        );
        notes.extend(notes_of(old, &[("peak_memory_bytes", 1200.0)]));
        let rows = zero_memory(&[&a, &b], &notes);
        assert_eq!(rows[0].label, "ZeRO 0");
        assert_eq!(rows[0].memory, ZeroBreakdown::PeakOnly(1200.0));
        assert_eq!(rows[1].memory.segments(), [600.0, 150.0, 250.0, 0.0]);
        assert_eq!(rows[1].memory.total(), 1000.0);
    }
}
