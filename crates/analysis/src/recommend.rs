//! The recommendation over stored model sweeps (`stackbench recommend`): for each model
//! and phase, every measured cell (hardware × backend × precision × batch × seq) of the
//! store, filtered by the stated SLOs and ranked by throughput, perf per dollar or perf
//! per watt; the result is a matrix (model rows × hardware columns) and one pick per row,
//! kept as a plain model that every view (terminal, Markdown, JSON, later the reports)
//! renders.
//!
//! Which runs count: the newest run per hardware fingerprint that holds `models/`
//! benchmarks. A machine's newest sweep is its current stack; mixing in older runs could
//! recommend a backend version that is no longer installed there, and the figures of two
//! stacks on one machine are not one population.
//!
//! Under load: a model's `serve` cells (requests at a set rate, `stackbench sweep --rate`)
//! form a row of their own, ranked by goodput (requests/s meeting every per-request SLO of
//! the sweep) and judged on TTFT/TPOT percentiles measured under that load, queueing
//! included. A p99-TTFT SLO means little on isolated calls, so where a model has serve cells
//! an SLO on TTFT or TPOT is judged there alone: the model's decode row (one batch at a
//! time, no queue) is left out, and the recommendation's notes say so. Each row states its
//! basis.
//!
//! Honesty rules: only measured cells count; a cell without the figure an SLO or the
//! ranking needs is never guessed (it says "no price" or "no energy figure"); a row with
//! no cell meeting the SLOs says so with the best figure seen; a hardware with no cell of
//! a model is "no data". Nothing is extrapolated across batch, sequence or hardware.

use super::prices::PriceList;
use crate::results::RunRecord;
use crate::sidecar::{BenchmarkOutcome, TargetReport};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

/// The `schema` field of the JSON output (schemas/recommend.schema.json).
pub const RECOMMEND_SCHEMA: &str = "stackbench.recommend.v1";

/// What an SLO bounds: a latency (an upper bound, in ns) or a rate (a floor, per second).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SloKind {
    Latency,
    Rate,
}

/// The SLO metrics: (name in `--slo`, the cell's note key, kind).
pub const SLO_METRICS: &[(&str, &str, SloKind)] = &[
    ("ttft_p50", "ttft_p50_ns", SloKind::Latency),
    ("ttft_p90", "ttft_p90_ns", SloKind::Latency),
    ("ttft_p99", "ttft_p99_ns", SloKind::Latency),
    ("tpot_p50", "tpot_p50_ns", SloKind::Latency),
    ("tpot_p90", "tpot_p90_ns", SloKind::Latency),
    ("tpot_p99", "tpot_p99_ns", SloKind::Latency),
    ("latency_p50", "latency_p50_ns", SloKind::Latency),
    ("latency_p99", "latency_p99_ns", SloKind::Latency),
    ("tokens_per_s", "tokens_per_s", SloKind::Rate),
    ("samples_per_s", "samples_per_s", SloKind::Rate),
];

/// Latency units an SLO may be written in, with their size in ns.
/// The forms `--slo` takes, for error messages and help.
pub const SLO_FORMS: &str = "ttft_p99<=200ms, tpot_p99<=50ms, latency_p99<=1s, \
     tokens_per_s>=1000, samples_per_s>=50 (latencies: ttft|tpot|latency with p50|p90|p99, \
     units ns|us|ms|s, bounded with <=; rates bounded with >=)";

/// Why a `--slo` text is not an SLO.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error("--slo {text:?}: {why}; valid forms: {SLO_FORMS}")]
    Invalid { text: String, why: String },
}

/// One service-level objective: a cell meets it when its note `note_key` is within
/// `bound` (`<=` for latencies, `>=` for rates).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slo {
    /// As written, normalised (`ttft_p99<=200ms`).
    pub text: String,
    pub metric: String,
    pub note_key: String,
    pub kind: SloKind,
    /// ns for latencies, per second for rates.
    pub bound: f64,
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(text: &str) -> Result<Self, SloError> {
        let invalid = |why: &str| SloError::Invalid {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (metric, op, value) = ["<=", ">="]
            .iter()
            .find_map(|op| {
                compact
                    .split_once(op)
                    .map(|(m, v)| (m.to_ascii_lowercase(), *op, v.to_owned()))
            })
            .ok_or_else(|| invalid("no <= or >="))?;
        let &(name, key, kind) = SLO_METRICS
            .iter()
            .find(|(name, ..)| *name == metric)
            .ok_or_else(|| invalid(&format!("unknown metric {metric:?}")))?;
        let bound = match kind {
            SloKind::Latency if op == "<=" => {
                crate::units::parse_latency_ns(&value).map_err(|w| invalid(&w))?
            }
            SloKind::Rate if op == ">=" => {
                crate::units::parse_positive(&value).map_err(|w| invalid(&w))?
            }
            SloKind::Latency => {
                return Err(invalid(&format!("{name} is a latency: bound it with <=")));
            }
            SloKind::Rate => return Err(invalid(&format!("{name} is a rate: bound it with >="))),
        };
        Ok(Slo {
            text: format!("{name}{op}{value}"),
            metric: name.into(),
            note_key: key.into(),
            kind,
            bound,
        })
    }
}

impl Slo {
    /// Whether `value` (ns or per second) is within the bound.
    pub fn met_by(&self, value: f64) -> bool {
        match self.kind {
            SloKind::Latency => value <= self.bound,
            SloKind::Rate => value >= self.bound,
        }
    }

    /// `200 ms`, `1000 /s`: a figure of this SLO's metric for people.
    pub fn show(&self, value: f64) -> String {
        match self.kind {
            SloKind::Latency => crate::units::format_ns(value),
            SloKind::Rate => format!("{value:.1}/s"),
        }
    }
}

/// What the pick maximises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Rank {
    /// tokens/s (or samples/s) of the cell; goodput (good requests/s) of a serve cell.
    Throughput,
    /// the rate per unit of the device's price (`[prices]`).
    PerDollar,
    /// tokens (samples) per joule: from the cell's energy per token, else its rate over
    /// the mean power the telemetry saw.
    PerWatt,
}

impl Rank {
    fn name(self) -> &'static str {
        match self {
            Rank::Throughput => "throughput",
            Rank::PerDollar => "per-dollar",
            Rank::PerWatt => "per-watt",
        }
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One measured cell of a stored sweep, with the figures the recommendation reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    pub benchmark_id: String,
    pub run_id: String,
    pub model: String,
    pub phase: String,
    /// The hardware fingerprint of the run.
    pub hardware: String,
    /// The device the price is looked up by (the GPU's or CPU's name in the probe).
    pub device: String,
    pub backend: String,
    pub precision: String,
    pub batch: u64,
    /// `None` for a fixed-input cell (vision, speech).
    pub seq: Option<u64>,
    /// Requests/s offered to a serve cell (`_r<R>` of its id); `None` for other phases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// `tokens/s` or `samples/s`; `good requests/s` (goodput) for a serve cell.
    pub rate_unit: String,
    pub rate: f64,
    /// Every numeric note of the cell (`ttft_p99_ns`, `memory_peak_bytes`, ...).
    pub figures: BTreeMap<String, f64>,
    /// The device's price on the price list's basis, if listed.
    pub price: Option<f64>,
    /// Joules per token (or sample), from the cell's energy counter.
    pub energy_j_per_unit: Option<f64>,
    /// Mean power while the cell ran, from the telemetry.
    pub power_w: Option<f64>,
}

impl Candidate {
    /// The score under `rank`, or why the cell has none.
    pub fn score(&self, rank: Rank) -> Result<f64, Unranked> {
        match rank {
            Rank::Throughput => Ok(self.rate),
            Rank::PerDollar => self.price.map(|p| self.rate / p).ok_or(Unranked::NoPrice),
            Rank::PerWatt => match (self.energy_j_per_unit, self.power_w) {
                (Some(j), _) if j > 0.0 => Ok(1.0 / j),
                (_, Some(w)) if w > 0.0 => Ok(self.rate / w),
                _ => Err(Unranked::NoEnergyFigure),
            },
        }
    }

    /// `torch bf16 b8 s512` (`... r8` for a serve cell at 8 requests/s): the cell's axes
    /// for people.
    pub fn axes(&self) -> String {
        let seq = self.seq.map(|s| format!(" s{s}")).unwrap_or_default();
        let rate = self
            .offered_rps
            .map(|r| format!(" r{r}"))
            .unwrap_or_default();
        format!(
            "{} {} b{}{seq}{rate}",
            self.backend, self.precision, self.batch
        )
    }
}

/// Why a cell meeting the SLOs cannot be ranked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unranked {
    NoPrice,
    NoEnergyFigure,
}

impl fmt::Display for Unranked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unranked::NoPrice => "no price",
            Unranked::NoEnergyFigure => "no energy figure",
        })
    }
}

/// `(model, precision, phase)` from a sweep id's function part (`gpt2-small-bf16-decode`):
/// the model name may hold dashes, the last two parts never do.
fn split_function(function: &str) -> Option<(&str, &str, &str)> {
    let mut parts = function.rsplitn(3, '-');
    let phase = parts.next()?;
    let precision = parts.next()?;
    let model = parts.next()?;
    Some((model, precision, phase))
}

/// The offered rate of a serve cell's parameters, `b4_s128_r8` -> 8.
fn split_rate(params: &str) -> Option<f64> {
    params.rsplit('_').next()?.strip_prefix('r')?.parse().ok()
}

/// `(batch, seq)` from `b8_s512` or `b8` (a serve cell's `_r<R>` after them is ignored).
fn split_params(params: &str) -> Option<(u64, Option<u64>)> {
    let mut parts = params.split('_');
    let batch = parts.next()?.strip_prefix('b')?.parse().ok()?;
    let seq = match parts.next() {
        Some(s) => Some(s.strip_prefix('s')?.parse().ok()?),
        None => None,
    };
    Some((batch, seq.filter(|&s: &u64| s > 0)))
}

/// The measured notes of every `models/` benchmark of `run`, by id.
fn measured_notes(run: &RunRecord) -> BTreeMap<String, BTreeMap<String, Value>> {
    run.targets
        .iter()
        .filter_map(|t| serde_json::from_value::<TargetReport>(t.clone()).ok())
        .flat_map(|report| report.benchmarks.into_iter())
        .filter(|(id, _)| id.starts_with("models/"))
        .filter_map(|(id, entry)| match entry.outcome {
            BenchmarkOutcome::Measured { notes } => Some((id, notes)),
            _ => None,
        })
        .collect()
}

/// The sweep's device on `run`'s machine: its GPU when the probe has one available,
/// else its CPU (the name prices are listed under).
pub fn sweep_device(run: &RunRecord) -> String {
    let text = |pointer: &str| {
        run.system
            .as_ref()
            .and_then(|s| s.pointer(pointer))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    ["cuda", "rocm"]
        .iter()
        .find(|b| text(&format!("/backends/{b}/status")).as_deref() == Some("available"))
        .and_then(|b| text(&format!("/backends/{b}/devices/0/name")))
        .or_else(|| text("/cpu/model"))
        .unwrap_or_else(|| "unknown device".into())
}

/// Every measured cell of `run` that the run itself also holds samples for (a failed
/// cell is never a candidate).
pub fn candidates(run: &RunRecord, prices: &dyn PriceList) -> Vec<Candidate> {
    let device = sweep_device(run);
    let price = prices.price(&device);
    measured_notes(run)
        .into_iter()
        .filter(|(id, _)| !run.failed.iter().any(|f| &f.id == id))
        .filter_map(|(id, notes)| candidate(run, &id, &notes, &device, price))
        .collect()
}

/// One measured cell as a candidate; `None` for an id that is not a sweep cell's, a cell
/// the run holds no samples for, or one that reported no rate.
fn candidate(
    run: &RunRecord,
    id: &str,
    notes: &BTreeMap<String, Value>,
    device: &str,
    price: Option<f64>,
) -> Option<Candidate> {
    let bench = run.benchmark(id)?;
    let parts: Vec<&str> = id.split('/').collect();
    let [_, backend, function, params] = parts.as_slice() else {
        return None;
    };
    let (model, precision, phase) = split_function(function)?;
    let (batch, seq) = split_params(params)?;
    let figures: BTreeMap<String, f64> = notes
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64().filter(|v| v.is_finite())?)))
        .collect();
    let served = phase == SERVE_PHASE;
    let (rate_unit, rate) = match (
        figures.get("goodput_rps"),
        figures.get("tokens_per_s"),
        figures.get("samples_per_s"),
    ) {
        (Some(&r), ..) if served => (GOODPUT_UNIT, r),
        _ if served => return None,
        (_, Some(&r), _) => ("tokens/s", r),
        (_, None, Some(&r)) => ("samples/s", r),
        (_, None, None) => return None,
    };
    let energy_j_per_unit = figures
        .get("energy_j_per_token")
        .or_else(|| figures.get("energy_j_per_sample"))
        .copied();
    let power_w = bench
        .telemetry
        .as_ref()
        .and_then(|t| t.power_watts.as_ref())
        .map(|p| p.mean);
    Some(Candidate {
        benchmark_id: id.into(),
        run_id: run.run_id.clone(),
        model: model.into(),
        phase: phase.into(),
        hardware: run.fingerprint.clone().unwrap_or_else(|| "unknown".into()),
        device: device.into(),
        backend: (*backend).into(),
        precision: precision.into(),
        batch,
        seq,
        offered_rps: split_rate(params).filter(|_| served),
        rate_unit: rate_unit.into(),
        rate,
        figures,
        price,
        energy_j_per_unit,
        power_w,
    })
}

/// The newest run of each fingerprint that holds `models/` benchmarks.
pub fn newest_sweeps(runs: &[RunRecord]) -> Vec<&RunRecord> {
    let mut newest: BTreeMap<String, &RunRecord> = BTreeMap::new();
    for run in runs {
        if !run.benchmarks.iter().any(|b| b.id.starts_with("models/")) {
            continue;
        }
        let key = run.fingerprint.clone().unwrap_or_else(|| "unknown".into());
        let entry = newest.entry(key).or_insert(run);
        if run.created_unix_ms > entry.created_unix_ms {
            *entry = run;
        }
    }
    newest.into_values().collect()
}

/// One (model, phase) on one hardware: its best cell, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// The best cell meeting every SLO, with its score under the rank.
    Best { cell: Box<Candidate>, score: f64 },
    /// Measured cells, none meeting the SLOs: which bound failed and the best figure seen.
    NoCellMeetsSlo { detail: String },
    /// Cells meet the SLOs, but none has the figure the rank needs.
    NotRanked { reason: Unranked, cells: usize },
    /// Nothing of this model was measured on this hardware.
    NoData,
}

impl Verdict {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Best { cell, .. } => cell.axes(),
            Verdict::NoCellMeetsSlo { detail } => detail.clone(),
            Verdict::NotRanked { reason, cells } => {
                format!("{reason} ({cells} cell(s) meet the SLOs)")
            }
            Verdict::NoData => "no data".into(),
        }
    }
}

/// One hardware column of the matrix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HardwareColumn {
    pub fingerprint: String,
    pub device: String,
    /// The run the column's cells come from (the newest sweep of that machine).
    pub run_id: String,
    pub price: Option<f64>,
}

/// One (model, phase) row: a verdict per hardware column and the pick across them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRow {
    pub model: String,
    pub phase: String,
    /// Verdicts in the order of [`Recommendation::hardware`].
    pub cells: Vec<Verdict>,
    pub pick: Verdict,
    /// What the row's figures are: isolated calls, or requests under load ranked by goodput.
    pub basis: String,
}

/// The phase of a sweep's load cells (`stackbench sweep --rate`).
pub const SERVE_PHASE: &str = "serve";
/// The rate unit of a serve cell: its goodput.
pub const GOODPUT_UNIT: &str = "good requests/s";
/// The basis of a serve row.
pub const UNDER_LOAD_BASIS: &str = "under load: SLOs judged on each serve cell's TTFT/TPOT \
     percentiles at its offered rate (TTFT from arrival, queueing included); ranked by \
     goodput, requests/s meeting every per-request SLO of the sweep (note serve_slos)";
/// The basis of every other row.
pub const ISOLATED_BASIS: &str = "isolated calls: one batch at a time, no queueing";

/// The recommendation: the matrix and the picks, for every view to render.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recommendation {
    pub schema: String,
    pub slos: Vec<Slo>,
    pub rank: Rank,
    /// What a per-dollar score is per: `USD per device-hour`, or `no prices given`.
    pub price_basis: String,
    pub hardware: Vec<HardwareColumn>,
    pub rows: Vec<ModelRow>,
    /// Rows left out and why (a decode row whose TTFT/TPOT SLOs the serve row judges).
    pub notes: Vec<String>,
}

impl Recommendation {
    /// Lines for people beside the matrix: each row's basis where the recommendation holds
    /// serve rows (with none, every row is isolated calls and nothing needs saying), then
    /// the notes.
    pub fn basis_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.rows.iter().any(|r| r.phase == SERVE_PHASE) {
            for row in &self.rows {
                lines.push(format!(
                    "basis of {} {}: {}",
                    row.model, row.phase, row.basis
                ));
            }
        }
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        lines
    }
}

/// What is asked: the SLOs every cell must meet, the ranking, and an optional model filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub slos: Vec<Slo>,
    pub rank: Rank,
    /// Empty: every model in the store.
    pub models: Vec<String>,
}

/// Why no recommendation can be made: bad input, never "nothing found, all fine".
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RecommendError {
    #[error("the store holds no measured model sweep cell (run `stackbench sweep` first)")]
    NoSweeps,
    #[error("model {name:?} is not in the store; models with measured cells: {}", known.join(", "))]
    UnknownModel { name: String, known: Vec<String> },
}

/// Builds the recommendation from every stored run (as `RunStore::load_all` returns them).
pub fn recommend(
    runs: &[RunRecord],
    request: &Request,
    prices: &dyn PriceList,
) -> Result<Recommendation, RecommendError> {
    let sweeps = newest_sweeps(runs);
    let mut hardware = Vec::new();
    let mut all = Vec::new();
    for run in sweeps {
        let cells = candidates(run, prices);
        if cells.is_empty() {
            continue;
        }
        let device = sweep_device(run);
        hardware.push(HardwareColumn {
            fingerprint: run.fingerprint.clone().unwrap_or_else(|| "unknown".into()),
            price: prices.price(&device),
            device,
            run_id: run.run_id.clone(),
        });
        all.extend(cells);
    }
    if all.is_empty() {
        return Err(RecommendError::NoSweeps);
    }
    let known: BTreeSet<&str> = all.iter().map(|c| c.model.as_str()).collect();
    if let Some(name) = request.models.iter().find(|m| !known.contains(m.as_str())) {
        return Err(RecommendError::UnknownModel {
            name: name.clone(),
            known: known.iter().map(|s| s.to_string()).collect(),
        });
    }
    let (rows, notes) = rows(&all, &hardware, request);
    Ok(Recommendation {
        schema: RECOMMEND_SCHEMA.into(),
        slos: request.slos.clone(),
        rank: request.rank,
        price_basis: prices.basis(),
        hardware,
        rows,
        notes,
    })
}

/// Whether `slo` bounds a per-request latency that load changes (TTFT, TPOT).
fn judged_under_load(slo: &Slo) -> bool {
    slo.metric.starts_with("ttft_") || slo.metric.starts_with("tpot_")
}

fn rows(
    all: &[Candidate],
    hardware: &[HardwareColumn],
    request: &Request,
) -> (Vec<ModelRow>, Vec<String>) {
    let mut grouped: BTreeMap<(&str, &str), Vec<&Candidate>> = BTreeMap::new();
    for cell in all {
        if request.models.is_empty() || request.models.contains(&cell.model) {
            grouped
                .entry((&cell.model, &cell.phase))
                .or_default()
                .push(cell);
        }
    }
    let load_slos: Vec<&str> = request
        .slos
        .iter()
        .filter(|s| judged_under_load(s))
        .map(|s| s.text.as_str())
        .collect();
    let mut notes = Vec::new();
    if !load_slos.is_empty() {
        let served: BTreeSet<&str> = grouped
            .keys()
            .filter(|(_, phase)| *phase == SERVE_PHASE)
            .map(|(model, _)| *model)
            .collect();
        grouped.retain(|(model, phase), _| {
            let judged_elsewhere = *phase == "decode" && served.contains(model);
            if judged_elsewhere {
                notes.push(format!(
                    "{model} decode left out: it has serve cells, so {} is judged under load \
                     in its serve row",
                    load_slos.join(" and ")
                ));
            }
            !judged_elsewhere
        });
    }
    let rows = grouped
        .into_iter()
        .map(|((model, phase), cells)| {
            let columns = hardware
                .iter()
                .map(|h| {
                    let mine: Vec<&Candidate> = cells
                        .iter()
                        .copied()
                        .filter(|c| c.hardware == h.fingerprint)
                        .collect();
                    select(&mine, &request.slos, request.rank)
                })
                .collect();
            ModelRow {
                model: model.into(),
                phase: phase.into(),
                cells: columns,
                pick: select(&cells, &request.slos, request.rank),
                basis: if phase == SERVE_PHASE {
                    UNDER_LOAD_BASIS
                } else {
                    ISOLATED_BASIS
                }
                .into(),
            }
        })
        .collect();
    (rows, notes)
}

/// The best of `cells` meeting every SLO under `rank`, or why there is none.
pub fn select(cells: &[&Candidate], slos: &[Slo], rank: Rank) -> Verdict {
    if cells.is_empty() {
        return Verdict::NoData;
    }
    let meeting: Vec<&Candidate> = cells
        .iter()
        .copied()
        .filter(|c| {
            slos.iter()
                .all(|s| c.figures.get(&s.note_key).is_some_and(|&v| s.met_by(v)))
        })
        .collect();
    if meeting.is_empty() {
        return Verdict::NoCellMeetsSlo {
            detail: shortfall(cells, slos),
        };
    }
    let mut best: Option<(&Candidate, f64)> = None;
    let mut unranked = None;
    for cell in meeting.iter().copied() {
        match cell.score(rank) {
            Ok(score) if best.is_none_or(|(_, b)| score > b) => best = Some((cell, score)),
            Ok(_) => {}
            Err(why) => unranked = unranked.or(Some(why)),
        }
    }
    match (best, unranked) {
        (Some((cell, score)), _) => Verdict::Best {
            cell: Box::new(cell.clone()),
            score,
        },
        (None, reason) => Verdict::NotRanked {
            reason: reason.unwrap_or(Unranked::NoPrice),
            cells: meeting.len(),
        },
    }
}

/// `no measured cell meets ttft_p99<=200ms; best was 250 ms (torch fp32 b1 s128)`, for
/// each SLO in turn.
fn shortfall(cells: &[&Candidate], slos: &[Slo]) -> String {
    let all: Vec<&str> = slos.iter().map(|s| s.text.as_str()).collect();
    let mut out = format!("no measured cell meets {}", all.join(" and "));
    for slo in slos {
        let seen = cells
            .iter()
            .filter_map(|c| Some((c, *c.figures.get(&slo.note_key)?)));
        let best = match slo.kind {
            SloKind::Latency => seen.min_by(|a, b| a.1.total_cmp(&b.1)),
            SloKind::Rate => seen.max_by(|a, b| a.1.total_cmp(&b.1)),
        };
        match best {
            Some((cell, value)) => out.push_str(&format!(
                "; best {} was {} ({})",
                slo.metric,
                slo.show(value),
                cell.axes()
            )),
            None => out.push_str(&format!("; no cell reports {}", slo.metric)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slo(text: &str) -> Slo {
        text.parse().unwrap()
    }

    #[test]
    fn slos_parse_with_units_spaces_and_either_case() {
        let ttft = slo("ttft_p99<=200ms");
        assert_eq!((ttft.note_key.as_str(), ttft.bound), ("ttft_p99_ns", 2e8));
        assert_eq!(ttft.kind, SloKind::Latency);
        assert_eq!(slo(" TPOT_p99 <= 50 ms ").bound, 5e7);
        assert_eq!(slo("latency_p99<=1.5s").bound, 1.5e9);
        assert_eq!(slo("tpot_p50<=800us").bound, 8e5);
        let rate = slo("tokens_per_s>=1000");
        assert_eq!((rate.kind, rate.bound), (SloKind::Rate, 1000.0));
        assert!(rate.met_by(1000.0) && !rate.met_by(999.0));
        assert!(ttft.met_by(2e8) && !ttft.met_by(2.1e8));
    }

    #[test]
    fn bad_slos_are_typed_errors_naming_the_text_and_the_forms() {
        for bad in [
            "ttft_p99<200ms",
            "ttft_p99<=200",
            "ttft_p99<=-3ms",
            "ttft_p99>=200ms",
            "tokens_per_s<=5",
            "goodput>=5",
            "tokens_per_s>=lots",
            "",
        ] {
            let error = bad.parse::<Slo>().unwrap_err();
            let text = error.to_string();
            assert!(text.contains(&format!("{bad:?}")), "{text}");
            assert!(text.contains("ttft_p99<=200ms"), "{text}");
        }
    }

    /// A decode cell of `model` on `hardware` with a price and figures.
    fn cell(hardware: &str, price: Option<f64>, rate: f64, ttft_ms: f64) -> Candidate {
        Candidate {
            benchmark_id: format!("models/torch/m-fp32-decode/b1_s128@{hardware}"),
            run_id: format!("run-{hardware}"),
            model: "m".into(),
            phase: "decode".into(),
            hardware: hardware.into(),
            device: format!("device-{hardware}"),
            backend: "torch".into(),
            precision: "fp32".into(),
            batch: 1,
            seq: Some(128),
            offered_rps: None,
            rate_unit: "tokens/s".into(),
            rate,
            figures: BTreeMap::from([
                ("tokens_per_s".into(), rate),
                ("ttft_p99_ns".into(), ttft_ms * 1e6),
            ]),
            price,
            energy_j_per_unit: None,
            power_w: None,
        }
    }

    fn best_hardware(verdict: &Verdict) -> &str {
        match verdict {
            Verdict::Best { cell, .. } => &cell.hardware,
            other => panic!("no pick: {other:?}"),
        }
    }

    #[test]
    fn per_dollar_and_throughput_pick_different_hardware() {
        let fast = cell("big-gpu", Some(4.0), 2000.0, 50.0);
        let cheap = cell("small-gpu", Some(1.0), 800.0, 120.0);
        let cells = [&fast, &cheap];
        let slos = [slo("ttft_p99<=200ms")];
        assert_eq!(
            best_hardware(&select(&cells, &slos, Rank::Throughput)),
            "big-gpu"
        );
        assert_eq!(
            best_hardware(&select(&cells, &slos, Rank::PerDollar)),
            "small-gpu"
        );
        // A tighter SLO leaves only the fast one, whatever it costs.
        let tight = [slo("ttft_p99<=100ms")];
        assert_eq!(
            best_hardware(&select(&cells, &tight, Rank::PerDollar)),
            "big-gpu"
        );
    }

    #[test]
    fn an_slo_no_cell_meets_says_so_with_the_best_figure_seen() {
        let a = cell("a", Some(1.0), 2000.0, 250.0);
        let b = cell("b", Some(1.0), 900.0, 300.0);
        let verdict = select(&[&a, &b], &[slo("ttft_p99<=200ms")], Rank::Throughput);
        let Verdict::NoCellMeetsSlo { detail } = verdict else {
            panic!("{verdict:?}")
        };
        assert!(
            detail.contains("no measured cell meets ttft_p99<=200ms"),
            "{detail}"
        );
        assert!(detail.contains("best ttft_p99 was 250 ms"), "{detail}");
        // A figure no cell reports is named, not treated as met.
        let verdict = select(&[&a], &[slo("tpot_p99<=50ms")], Rank::Throughput);
        assert!(
            verdict.describe().contains("no cell reports tpot_p99"),
            "{verdict:?}"
        );
        assert_eq!(select(&[], &[], Rank::Throughput), Verdict::NoData);
    }

    #[test]
    fn a_missing_price_or_energy_figure_is_listed_never_guessed() {
        let unpriced = cell("a", None, 2000.0, 50.0);
        let verdict = select(&[&unpriced], &[], Rank::PerDollar);
        assert_eq!(
            verdict,
            Verdict::NotRanked {
                reason: Unranked::NoPrice,
                cells: 1
            }
        );
        assert!(verdict.describe().starts_with("no price"));
        // A priced cell wins over an unpriced faster one: the unpriced is not ranked at all.
        let priced = cell("b", Some(2.0), 100.0, 50.0);
        assert_eq!(
            best_hardware(&select(&[&unpriced, &priced], &[], Rank::PerDollar)),
            "b"
        );
        let verdict = select(&[&unpriced], &[], Rank::PerWatt);
        assert!(
            verdict.describe().starts_with("no energy figure"),
            "{verdict:?}"
        );
        // Energy per token beats telemetry power; power alone also ranks.
        let mut counted = cell("c", None, 1000.0, 50.0);
        counted.energy_j_per_unit = Some(0.5);
        counted.power_w = Some(100.0);
        let mut powered = cell("d", None, 1000.0, 50.0);
        powered.power_w = Some(400.0);
        assert_eq!(counted.score(Rank::PerWatt), Ok(2.0));
        assert_eq!(powered.score(Rank::PerWatt), Ok(2.5));
        assert_eq!(
            best_hardware(&select(&[&counted, &powered], &[], Rank::PerWatt)),
            "d"
        );
    }

    /// A serve cell of `m` at `offered` requests/s with its goodput and TTFT under load.
    fn serve_cell(offered: f64, goodput: f64, ttft_ms: f64) -> Candidate {
        let mut cell = cell("a", None, goodput, ttft_ms);
        cell.benchmark_id = format!("models/torch/m-fp32-serve/b4_s128_r{offered}");
        cell.phase = SERVE_PHASE.into();
        cell.batch = 4;
        cell.offered_rps = Some(offered);
        cell.rate_unit = GOODPUT_UNIT.into();
        cell.figures.insert("goodput_rps".into(), goodput);
        cell
    }

    #[test]
    fn serve_cells_rank_by_goodput_under_load_and_a_ttft_slo_leaves_decode_out() {
        let hardware = [HardwareColumn {
            fingerprint: "a".into(),
            device: "device-a".into(),
            run_id: "run-a".into(),
            price: None,
        }];
        // Isolated, decode meets 200 ms easily; under load only the two lower rates do,
        // and of those the higher goodput wins (not the highest offered rate).
        let decode = cell("a", None, 5000.0, 20.0);
        let cells = [
            decode.clone(),
            serve_cell(2.0, 1.9, 90.0),
            serve_cell(8.0, 6.5, 180.0),
            serve_cell(32.0, 3.0, 900.0),
        ];
        let request = |slos: Vec<Slo>| Request {
            slos,
            rank: Rank::Throughput,
            models: Vec::new(),
        };
        let (rows, notes) = super::rows(&cells, &hardware, &request(vec![slo("ttft_p99<=200ms")]));
        let phases: Vec<&str> = rows.iter().map(|r| r.phase.as_str()).collect();
        assert_eq!(phases, ["serve"]);
        assert_eq!(rows[0].basis, UNDER_LOAD_BASIS);
        let Verdict::Best { cell, score } = &rows[0].pick else {
            panic!("{:?}", rows[0].pick)
        };
        assert_eq!((cell.offered_rps, *score), (Some(8.0), 6.5));
        assert_eq!(cell.axes(), "torch fp32 b4 s128 r8");
        assert_eq!(
            notes,
            [
                "m decode left out: it has serve cells, so ttft_p99<=200ms is judged under load \
              in its serve row"
            ]
        );
        // No TTFT/TPOT SLO: nothing is left out, and each row says what it is.
        let (rows, notes) = super::rows(&cells, &hardware, &request(vec![slo("tokens_per_s>=1")]));
        assert!(notes.is_empty());
        let bases: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.phase.as_str(), r.basis.as_str()))
            .collect();
        assert_eq!(
            bases,
            [("decode", ISOLATED_BASIS), ("serve", UNDER_LOAD_BASIS)]
        );
        // A model without serve cells keeps its decode row under a TTFT SLO.
        let (rows, _) = super::rows(&[decode], &hardware, &request(vec![slo("ttft_p99<=200ms")]));
        assert_eq!(rows[0].phase, "decode");
    }

    #[test]
    fn sweep_ids_split_into_their_axes() {
        assert_eq!(split_rate("b4_s128_r0.5"), Some(0.5));
        assert_eq!(split_rate("b4_s128"), None);
        assert_eq!(split_params("b4_s128_r8"), Some((4, Some(128))));
        assert_eq!(
            split_function("tinyllama-1.1b-bf16-decode"),
            Some(("tinyllama-1.1b", "bf16", "decode"))
        );
        assert_eq!(split_function("decode"), None);
        assert_eq!(split_params("b8_s512"), Some((8, Some(512))));
        assert_eq!(split_params("b4"), Some((4, None)));
        assert_eq!(split_params("b4_s0"), Some((4, None)));
        assert_eq!(split_params("x4"), None);
    }

    #[test]
    fn a_store_without_sweeps_is_an_error_not_an_empty_recommendation() {
        // (An unknown model is checked through the binary, on recorded runs:
        // tests/recommend_cli.rs.)
        let request = Request {
            slos: Vec::new(),
            rank: Rank::Throughput,
            models: vec!["nope".into()],
        };
        let nothing = recommend(&[], &request, &super::super::prices::NoPrices);
        assert_eq!(nothing, Err(RecommendError::NoSweeps));
    }
}
