//! The loop `cargo bench --bench models` runs: for each backend of the plan, one worker
//! (`scripts/components/models.py` with `STACKBENCH_MODELS_BACKEND=<backend>`), and for each
//! cell it offers, a skip with its reason or one timed benchmark
//! `models/<backend>/<model>-<precision>-<phase>/<b<B>_s<S>>`.
//!
//! It reuses the component runner (sessions, timeouts, process groups) with two rules of its
//! own, because a sweep is many independent cells rather than one component:
//!
//! - a cell that crashes, hangs (the per-call timeout) or is killed for memory fails alone:
//!   the next cell starts a fresh worker, where the component suite skips the rest;
//! - a cell that cannot fit in the device's free memory, that is longer than the model's
//!   positions, or whose device this machine lacks (MPS, QNN) is skipped with the reason
//!   before any worker tries it; so is a serve cell on a backend without a request loop
//!   (OpenVINO here) or of a model that is not decoder-only.
//!
//! A serve cell's timed quantity is one request's end-to-end latency under load (arrival
//! to last token, queueing included), replayed by the worker from its load runs; its notes
//! carry the load's figures (`offered_rps`, `achieved_rps`, `goodput_rps`, `slo_attainment`,
//! TTFT/TPOT/E2E percentiles under load).
//!
//! Each measured cell gets its MFU in the notes: FLOPs per element (the catalogue's, at the
//! cell's context) x elements per second / the probe's peak for that device and precision.
//! Over 100 % is not a number but a failed record, through the harness's check after timing.

use super::config::RunnerConfig;
use super::interpreter::Interpreter;
use super::session::{ComponentSession, OfferedBenchmark};
use super::suite::{BenchSink, whole_id};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::harness::CHECK_AFTER_TIMING_NOTE;
use crate::system::peak::{Peak, PeakMetric};
use crate::workload::BenchId;
use crate::workload::family::MODELS;
use crate::workload::models::plan::{BACKEND_ENV, Cell, PLAN_ENV, SweepPlan};
use crate::workload::models::{SweepBackend, SweepDevice, gib};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The worker script every backend runs.
pub const SCRIPT: &str = "models.py";

/// Memory a cell may use on the device, and where the figure came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    pub bytes: u64,
    pub source: String,
}

/// Everything one sweep needs beside the sink.
pub struct Sweep<'a> {
    pub plan: &'a SweepPlan,
    pub plan_path: &'a Path,
    /// The runner's settings; `family` and `env` are set per backend here.
    pub config: RunnerConfig,
    /// The memory cells are checked against; `Err` (unreadable) refuses none.
    pub budget: Result<MemoryBudget, String>,
    /// Why the plan's device is absent from this machine: every cell is skipped with it.
    pub absent: Option<String>,
    /// The probe's peaks, for MFU.
    pub peaks: Vec<Peak>,
}

impl Sweep<'_> {
    fn backend_kind(&self) -> BackendKind {
        match self.plan.device {
            SweepDevice::Cuda => BackendKind::Cuda,
            SweepDevice::Rocm => BackendKind::Rocm,
            _ => BackendKind::Cpu,
        }
    }

    /// The worker settings of one backend.
    fn worker_config(&self, backend: SweepBackend) -> RunnerConfig {
        let mut config = self.config.clone();
        config.family = MODELS.name;
        config.env.extend([
            (PLAN_ENV.into(), self.plan_path.display().to_string()),
            (BACKEND_ENV.into(), backend.id().into()),
        ]);
        config
    }

    /// The plan's cells with their ids on `backend`.
    fn cells(&self, backend: SweepBackend) -> Vec<(BenchId, &Cell)> {
        self.plan
            .cells
            .iter()
            .map(|c| (cell_id(backend, c), c))
            .collect()
    }

    /// Why `cell` is not tried on `backend`, if it is not.
    pub fn precheck(&self, backend: SweepBackend, cell: &Cell) -> Option<String> {
        use crate::workload::models::{Phase, Task};
        if let Some(reason) = &self.absent {
            return Some(reason.clone());
        }
        if cell.phase == Phase::Serve {
            if !backend.serves() {
                return Some(format!(
                    "{backend} has no request loop in this sweep (serve cells run on torch, \
                     onnxruntime and vllm)"
                ));
            }
            let task = self.plan.models.get(&cell.model).map(|m| m.task.as_str());
            if task != Some(Task::Decoder.id()) {
                return Some(format!(
                    "the serve loop drives decoder-only LMs; {} is {} (its generation is \
                     timed by its decode cell)",
                    cell.model,
                    task.unwrap_or("unknown")
                ));
            }
        }
        let spec = self.plan.spec(cell)?;
        // Only a generating cell adds new tokens to its positions; a forward or prefill
        // holds the prompt alone (BERT at seq 512 fits its 512 positions).
        let new_tokens = match cell.phase {
            Phase::Decode | Phase::Serve => self.plan.new_tokens,
            _ => 0,
        };
        let context = cell.seq + new_tokens;
        if let Some(max) = spec.max_positions()
            && spec.task().uses_seq()
            && context > max
        {
            return Some(format!(
                "sequence too long: {} prompt + {new_tokens} new tokens exceed {}'s {max} positions",
                cell.seq, spec.name
            ));
        }
        let budget = self.budget.as_ref().ok()?;
        let predicted = spec.predicted_memory_bytes(cell, self.plan.new_tokens);
        (predicted > budget.bytes).then(|| {
            format!(
                "out of memory (predicted {} GiB of {} GiB free on {}, {})",
                gib(predicted),
                gib(budget.bytes),
                self.plan.device,
                budget.source
            )
        })
    }
}

/// `models/<backend>/<model>-<precision>-<phase>/<parameters>`.
pub fn cell_id(backend: SweepBackend, cell: &Cell) -> BenchId {
    BenchId::new(
        MODELS.name,
        backend.id(),
        cell.benchmark(),
        cell.parameters(),
    )
}

/// Runs every backend of the plan, one worker process each, one after the other.
pub fn run_sweep(
    sink: &mut impl BenchSink,
    interpreter: &Result<Interpreter, String>,
    sweep: &Sweep,
) {
    for &backend in &sweep.plan.backends {
        let cells = sweep.cells(backend);
        if let Some(reason) = &sweep.absent {
            for (id, _) in &cells {
                sink.skip(id, reason.clone());
            }
            continue;
        }
        match interpreter {
            Ok(interpreter) => run_backend(sink, interpreter, sweep, backend),
            Err(error) => {
                for (id, _) in &cells {
                    sink.skip(id, format!("no usable Python interpreter: {error}"));
                }
            }
        }
    }
}

fn start(
    interpreter: &Interpreter,
    backend: SweepBackend,
    config: &RunnerConfig,
) -> Result<ComponentSession, super::SessionError> {
    let script = config.scripts_dir.join(SCRIPT);
    ComponentSession::start_script(interpreter, backend.id(), &script, config)
}

/// One backend's worker over every cell; a dead worker is replaced before the next cell.
fn run_backend(
    sink: &mut impl BenchSink,
    interpreter: &Interpreter,
    sweep: &Sweep,
    backend: SweepBackend,
) {
    let config = sweep.worker_config(backend);
    let cells = sweep.cells(backend);
    let mut session = match start(interpreter, backend, &config) {
        Ok(session) => session,
        Err(error) => return not_started(sink, sweep, backend, &cells, &error),
    };
    let offered = session.offered();
    if let Some(reason) = session.unavailable_reason() {
        for (id, _) in &cells {
            sink.skip(id, reason.clone());
        }
        shut_down(session, backend);
        return;
    }
    let sampling = config.sampling(sink.suite());
    for benchmark in &offered {
        let cell = cells
            .iter()
            .find(|(id, _)| *id == benchmark.id)
            .map(|c| c.1);
        if let Some(reason) = skip_reason(sweep, backend, benchmark, cell) {
            sink.skip(&benchmark.id, reason);
            continue;
        }
        if let Some(reason) = session.dead_reason() {
            eprintln!(
                "stackbench models/{backend}: a fresh worker for the next cell (the last one died: {reason})"
            );
            shut_down(session, backend);
            session = match start(interpreter, backend, &config) {
                Ok(fresh) => fresh,
                Err(error) => return not_restarted(sink, &offered, benchmark, &error, sweep),
            };
        }
        sink.bench(&benchmark.id, benchmark.throughput(), sampling, || {
            let inner = session.workload(benchmark)?;
            Ok(Box::new(SweepWorkload {
                inner,
                sweep,
                cell: cell.cloned(),
                backend: sweep.backend_kind(),
                id: benchmark.id.clone(),
            }) as Box<dyn TimedWorkload + '_>)
        });
    }
    for (id, _) in cells
        .iter()
        .filter(|(id, _)| !offered.iter().any(|b| b.id == *id))
    {
        let error = sweep_error(sweep, id, "the worker did not offer this cell of the plan");
        sink.fail(id, error);
    }
    shut_down(session, backend);
}

fn skip_reason(
    sweep: &Sweep,
    backend: SweepBackend,
    benchmark: &OfferedBenchmark,
    cell: Option<&Cell>,
) -> Option<String> {
    if crate::system::interrupt::interrupted() {
        return Some("not run: the sweep was interrupted (Ctrl-C) before this cell".into());
    }
    if let Some(reason) = benchmark.skip_reason() {
        return Some(reason.to_owned());
    }
    cell.and_then(|c| sweep.precheck(backend, c))
}

fn shut_down(session: ComponentSession, backend: SweepBackend) {
    if let Err(error) = session.shutdown() {
        eprintln!("stackbench models/{backend}: shutting the worker down: {error}");
    }
}

fn sweep_error(sweep: &Sweep, id: &BenchId, message: impl Into<String>) -> BackendError {
    BackendError::Device {
        backend: sweep.backend_kind(),
        context: id.full(),
        message: message.into(),
    }
}

/// The worker could not start or describe itself: a skip of every cell when this machine
/// cannot run the backend (not installed), else one failure for the backend and a skip of
/// each cell that names it.
fn not_started(
    sink: &mut impl BenchSink,
    sweep: &Sweep,
    backend: SweepBackend,
    cells: &[(BenchId, &Cell)],
    error: &super::SessionError,
) {
    if error.is_skip() {
        for (id, _) in cells {
            sink.skip(id, error.to_string());
        }
        return;
    }
    let whole = whole_id(MODELS.name, backend.id());
    sink.fail(&whole, sweep_error(sweep, &whole, error.to_string()));
    for (id, _) in cells {
        sink.skip(
            id,
            format!("not run: the {backend} worker failed to start (see {whole})"),
        );
    }
}

/// A replacement worker failed to start: this cell fails with why, the rest say so.
fn not_restarted(
    sink: &mut impl BenchSink,
    offered: &[OfferedBenchmark],
    failed_at: &OfferedBenchmark,
    error: &super::SessionError,
    sweep: &Sweep,
) {
    let message = format!("a fresh worker after a crash could not start: {error}");
    sink.fail(&failed_at.id, sweep_error(sweep, &failed_at.id, message));
    let later = offered.iter().skip_while(|b| b.id != failed_at.id).skip(1);
    for benchmark in later {
        sink.skip(
            &benchmark.id,
            format!(
                "not run: no worker could be started after {} failed",
                failed_at.id
            ),
        );
    }
}

/// A cell's workload with the sweep's own notes (MFU, the predicted memory, the size class)
/// and Ctrl-C honoured between timed calls.
struct SweepWorkload<'s> {
    inner: Box<dyn TimedWorkload + 's>,
    sweep: &'s Sweep<'s>,
    cell: Option<Cell>,
    backend: BackendKind,
    id: BenchId,
}

impl TimedWorkload for SweepWorkload<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.inner.verify()
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        if crate::system::interrupt::interrupted() {
            // A skip, not a failure: nothing is wrong with the cell, it was not finished.
            return Err(BackendError::unsupported(
                self.backend,
                self.id.full(),
                "not finished: the sweep was interrupted (Ctrl-C) during this cell",
            ));
        }
        self.inner.run(iters)
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut notes = self.inner.notes();
        let Some(cell) = &self.cell else {
            return notes;
        };
        let plan = self.sweep.plan;
        if let Some(spec) = plan.spec(cell) {
            let predicted = spec.predicted_memory_bytes(cell, plan.new_tokens);
            notes.insert("memory_predicted_bytes".into(), predicted.into());
            notes.insert("size_class".into(), spec.size_class().id().into());
            notes.insert("params_expected".into(), spec.params().into());
        }
        match mfu(&notes, self.sweep, cell) {
            Ok(utilisation) => utilisation.write(&mut notes),
            Err(why) => {
                notes.insert("mfu_unavailable".into(), why.into());
            }
        }
        match mbu(&notes, self.sweep, cell) {
            Ok(Some(bandwidth)) => bandwidth.write(&mut notes),
            Ok(None) => {}
            Err(why) => {
                notes.insert("mbu_unavailable".into(), why.into());
            }
        }
        notes
    }
}

/// Model FLOP utilisation of one measured cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Utilisation {
    pub mfu: f64,
    pub flops_per_element: f64,
    pub peak_flops: f64,
}

impl Utilisation {
    fn write(&self, notes: &mut BTreeMap<String, Value>) {
        notes.insert("mfu".into(), self.mfu.into());
        notes.insert(
            "mfu_flops_per_element".into(),
            self.flops_per_element.into(),
        );
        notes.insert("mfu_peak_flops".into(), self.peak_flops.into());
        fail_over_full(
            notes,
            self.mfu,
            format_args!(
                "model FLOP utilisation {:.0} % exceeds 100 % of the probe's peak \
                 ({:.3e} FLOP/s): the FLOP count",
                self.mfu * 100.0,
                self.peak_flops
            ),
        );
    }
}

/// Over 100 % of a peak means a wrong count, timer or peak: `fraction` above 1 makes the
/// record a failure through the harness's check after timing, saying `what` was over.
fn fail_over_full(notes: &mut BTreeMap<String, Value>, fraction: f64, what: std::fmt::Arguments) {
    if fraction > 1.0 {
        let why = format!("{what}, the timing or the peak is wrong");
        notes.insert(CHECK_AFTER_TIMING_NOTE.into(), why.into());
    }
}

/// A rate the worker reported under `key`, when it is a positive number.
fn positive_rate(notes: &BTreeMap<String, Value>, key: &str) -> Option<f64> {
    notes
        .get(key)
        .and_then(Value::as_f64)
        .filter(|r| r.is_finite() && *r > 0.0)
}

/// MFU from a cell's notes: elements per second (`tokens_per_s`, else `samples_per_s`)
/// x FLOPs per element / the probe's peak for the device and precision; `Err` says why
/// there is none.
pub fn mfu(
    notes: &BTreeMap<String, Value>,
    sweep: &Sweep,
    cell: &Cell,
) -> Result<Utilisation, String> {
    let rate = |key: &str| positive_rate(notes, key);
    let (per_second, per_sample) = match (rate("tokens_per_s"), rate("samples_per_s")) {
        (Some(tokens), _) => (tokens, false),
        (None, Some(samples)) => (samples, true),
        (None, None) => return Err("the worker reported no tokens_per_s or samples_per_s".into()),
    };
    let flops_per_element = match sweep.plan.spec(cell) {
        Some(spec) => spec.flops_per_element(cell, sweep.plan.new_tokens) as f64,
        None if !per_sample => rate("flops_per_token")
            .ok_or("no catalogue entry and no flops_per_token from the worker")?,
        None => return Err("FLOPs per sample of a local model are unknown".into()),
    };
    let peak_flops = peak_for(&sweep.peaks, sweep.plan.device, cell.precision)?;
    Ok(Utilisation {
        mfu: flops_per_element * per_second / peak_flops,
        flops_per_element,
        peak_flops,
    })
}

/// Model bandwidth utilisation of one decoding cell: decode is bound by memory, so its
/// figure is the bytes each step must read over the time a step takes, against the probe's
/// memory bandwidth (MFU stays beside it, and is tiny for decode by nature).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bandwidth {
    pub mbu: f64,
    pub bytes_per_step: f64,
    pub peak_bytes_per_s: f64,
}

impl Bandwidth {
    fn write(&self, notes: &mut BTreeMap<String, Value>) {
        notes.insert("mbu".into(), self.mbu.into());
        notes.insert("mbu_bytes_per_step".into(), self.bytes_per_step.into());
        notes.insert("mbu_peak_bytes_per_s".into(), self.peak_bytes_per_s.into());
        notes.insert(
            "mbu_method".into(),
            "weights a token is multiplied by + the KV cache at the mean context, per step \
             (tokens_per_s / batch steps a second); a lower bound where the timed call \
             includes the prompt's prefill"
                .into(),
        );
        fail_over_full(
            notes,
            self.mbu,
            format_args!(
                "model bandwidth utilisation {:.0} % exceeds 100 % of the probe's memory \
                 bandwidth ({:.3e} B/s): the byte count",
                self.mbu * 100.0,
                self.peak_bytes_per_s
            ),
        );
    }
}

/// MBU from a decoding cell's notes: [`ModelSpec::decode_step_bytes`] x steps per second
/// (`tokens_per_s` / batch: a step makes one token of each sequence) / the probe's memory
/// bandwidth. `Ok(None)` for a cell that does not decode; `Err` says why a decoding cell
/// has none.
///
/// [`ModelSpec::decode_step_bytes`]: crate::workload::models::ModelSpec::decode_step_bytes
pub fn mbu(
    notes: &BTreeMap<String, Value>,
    sweep: &Sweep,
    cell: &Cell,
) -> Result<Option<Bandwidth>, String> {
    use crate::workload::models::Phase;
    if !matches!(cell.phase, Phase::Decode | Phase::Serve) {
        return Ok(None);
    }
    let Some(spec) = sweep.plan.spec(cell) else {
        return Err("the bytes a step reads need the catalogue's geometry (a local model)".into());
    };
    let Some(bytes) = spec.decode_step_bytes(cell, sweep.plan.new_tokens) else {
        return Ok(None);
    };
    let tokens =
        positive_rate(notes, "tokens_per_s").ok_or("the worker reported no tokens_per_s")?;
    let steps = tokens / f64::from(cell.batch.max(1));
    let peak = bandwidth_peak(&sweep.peaks, sweep.plan.device)?;
    Ok(Some(Bandwidth {
        mbu: bytes as f64 * steps / peak,
        bytes_per_step: bytes as f64,
        peak_bytes_per_s: peak,
    }))
}

/// The backend whose peaks the probe lists for a sweep device; `None` for the devices it
/// has no table for (NPUs, OpenVINO's).
fn probed_backend(device: SweepDevice) -> Option<BackendKind> {
    match device {
        SweepDevice::Cpu => Some(BackendKind::Cpu),
        SweepDevice::Cuda => Some(BackendKind::Cuda),
        SweepDevice::Rocm => Some(BackendKind::Rocm),
        _ => None,
    }
}

/// The probe's memory bandwidth for `device` (the larger of theoretical and measured).
pub fn bandwidth_peak(peaks: &[Peak], device: SweepDevice) -> Result<f64, String> {
    let kind = probed_backend(device)
        .ok_or_else(|| format!("the probe has no memory bandwidth for {device}"))?;
    peaks
        .iter()
        .filter(|p| p.backend == kind && p.metric == PeakMetric::BytesPerSecond)
        .find_map(Peak::reference)
        .filter(|p| *p > 0.0)
        .ok_or_else(|| format!("the probe has no memory bandwidth on {device}"))
}

/// The probe's FLOP/s peak for `device` at `precision` (the larger of theoretical and
/// measured, as every "% of peak" takes it).
pub fn peak_for(
    peaks: &[Peak],
    device: SweepDevice,
    precision: crate::workload::models::Precision,
) -> Result<f64, String> {
    let kind = probed_backend(device)
        .ok_or_else(|| format!("the probe has no peak table for {device}"))?;
    let dtype = precision
        .peak_dtype()
        .ok_or_else(|| format!("the probe has no {precision} FLOP peak"))?;
    peaks
        .iter()
        .filter(|p| p.backend == kind && p.metric == PeakMetric::FlopsPerSecond)
        .filter(|p| p.dtype == Some(dtype))
        .find_map(Peak::reference)
        .filter(|p| *p > 0.0)
        .ok_or_else(|| format!("the probe has no {} peak on {device}", dtype.id()))
}

/// Caps the memory a cell may use below what the device has free (GiB, a decimal): for a
/// device shared with other work, and for tests of the out-of-memory skip.
pub const MEMORY_LIMIT_ENV: &str = "STACKBENCH_MODELS_MEMORY_LIMIT_GIB";

/// The plan `STACKBENCH_MODELS_PLAN` names; without it (a bare `cargo bench --bench models`)
/// the suite's own: quick runs every `ci-` model once on torch (b1, s128, fp32), full adds
/// batch 8, seq 512, bf16 and the ONNX Runtime and OpenVINO backends. The default plan is
/// written into `scratch`, which must outlive the sweep.
pub fn plan_from_env(
    suite: crate::workload::Suite,
    scratch: &Path,
) -> Result<(SweepPlan, std::path::PathBuf), crate::workload::models::PlanError> {
    use crate::workload::models::plan::RawAxes;
    if let Some(path) = std::env::var_os(PLAN_ENV).filter(|p| !p.is_empty()) {
        let path = std::path::PathBuf::from(path);
        return Ok((SweepPlan::load(&path)?, path));
    }
    let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
    let raw = match suite {
        crate::workload::Suite::Quick => RawAxes::default(),
        crate::workload::Suite::Full => RawAxes {
            batch: strings(&["1", "8"]),
            seq: strings(&["128", "512"]),
            precision: strings(&["fp32", "bf16"]),
            backend: strings(&["torch", "onnxruntime", "openvino"]),
            ..RawAxes::default()
        },
    };
    let device = crate::system::device_memory::detect_sweep_device(Path::new("/"));
    let axes = crate::workload::models::SweepAxes::resolve(&raw, device)?;
    let plan = SweepPlan::from_axes(&axes);
    let path = scratch.join("plan.json");
    plan.write(&path)?;
    Ok((plan, path))
}

/// The memory cells are checked against: the device's free memory, capped by
/// `STACKBENCH_MODELS_MEMORY_LIMIT_GIB` when set.
pub fn budget_from_env(device: SweepDevice) -> Result<MemoryBudget, String> {
    let limit = match std::env::var(MEMORY_LIMIT_ENV) {
        Ok(text) if !text.trim().is_empty() => Some(
            text.trim()
                .parse::<f64>()
                .ok()
                .filter(|g| g.is_finite() && *g > 0.0)
                .map(|g| (g * (1u64 << 30) as f64) as u64)
                .ok_or_else(|| {
                    format!("{MEMORY_LIMIT_ENV}={text:?} is not a positive number of GiB")
                })?,
        ),
        _ => None,
    };
    let free = crate::system::device_memory::free_memory(device, Path::new("/"));
    match (free, limit) {
        (Ok(free), Some(limit)) if limit < free.free_bytes => Ok(MemoryBudget {
            bytes: limit,
            source: format!("capped by {MEMORY_LIMIT_ENV}"),
        }),
        (Ok(free), _) => Ok(MemoryBudget {
            bytes: free.free_bytes,
            source: free.source,
        }),
        (Err(_), Some(limit)) => Ok(MemoryBudget {
            bytes: limit,
            source: format!("set by {MEMORY_LIMIT_ENV}"),
        }),
        (Err(why), None) => Err(why),
    }
}

/// The peaks of the probe this run wrote beside Criterion's output; none when it is not
/// there (`--list`), and MFU then says why it is missing.
pub fn probe_peaks() -> Vec<Peak> {
    let dir = crate::sidecar::criterion_home();
    let Some(Ok(probe)) = crate::sidecar::read_system_probe(&dir) else {
        return Vec::new();
    };
    probe
        .get("peaks")
        .cloned()
        .and_then(|p| serde_json::from_value(p).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::DType;
    use crate::workload::models::Precision;
    use crate::workload::models::plan::{RawAxes, SweepAxes};

    fn peak(backend: BackendKind, dtype: DType, theoretical: f64, measured: Option<f64>) -> Peak {
        Peak {
            backend,
            device: "d".into(),
            metric: PeakMetric::FlopsPerSecond,
            dtype: Some(dtype),
            theoretical: Some(theoretical),
            measured,
            source: String::new(),
        }
    }

    #[test]
    fn the_peak_is_the_devices_at_the_cells_precision() {
        let peaks = [
            peak(BackendKind::Cpu, DType::F32, 2e11, Some(3e11)),
            peak(BackendKind::Cuda, DType::Bf16, 9.9e14, None),
        ];
        assert_eq!(
            peak_for(&peaks, SweepDevice::Cpu, Precision::Fp32),
            Ok(3e11)
        );
        assert_eq!(
            peak_for(&peaks, SweepDevice::Cuda, Precision::Bf16),
            Ok(9.9e14)
        );
        let none = peak_for(&peaks, SweepDevice::Cpu, Precision::Bf16).unwrap_err();
        assert_eq!(none, "the probe has no bf16 peak on cpu");
        assert!(
            peak_for(&peaks, SweepDevice::Cpu, Precision::Int8)
                .unwrap_err()
                .contains("int8")
        );
        assert!(peak_for(&peaks, SweepDevice::Qnn, Precision::Fp32).is_err());
    }

    /// A sweep over `plan` whose memory budget was never read (nothing is refused for
    /// memory), with `peaks` as the probe's.
    fn unread_budget_sweep(plan: &SweepPlan, peaks: Vec<Peak>) -> Sweep<'_> {
        Sweep {
            plan,
            plan_path: Path::new("/p"),
            config: RunnerConfig::default(),
            budget: Err("unread".into()),
            absent: None,
            peaks,
        }
    }

    #[test]
    fn mfu_is_flops_per_element_times_rate_over_the_peak_and_over_100_percent_fails() {
        let raw = RawAxes {
            models: Some(vec!["gpt2-small".into()]),
            seq: Some(vec!["512".into()]),
            ..RawAxes::default()
        };
        let plan = SweepPlan::from_axes(&SweepAxes::resolve(&raw, SweepDevice::Cpu).unwrap());
        let sweep =
            unread_budget_sweep(&plan, vec![peak(BackendKind::Cpu, DType::F32, 1e12, None)]);
        let cell = &plan.cells[0];
        let per_token = crate::workload::models::find("gpt2-small")
            .unwrap()
            .flops_per_token_at(512) as f64;
        let notes = BTreeMap::from([("tokens_per_s".to_string(), Value::from(1000.0))]);
        let u = mfu(&notes, &sweep, cell).unwrap();
        assert_eq!(u.flops_per_element, per_token);
        assert!((u.mfu - per_token * 1000.0 / 1e12).abs() < 1e-12);
        let mut written = BTreeMap::new();
        u.write(&mut written);
        assert!(!written.contains_key(CHECK_AFTER_TIMING_NOTE));
        let fast = BTreeMap::from([("tokens_per_s".to_string(), Value::from(1e7))]);
        let mut written = BTreeMap::new();
        mfu(&fast, &sweep, cell).unwrap().write(&mut written);
        let why = written[CHECK_AFTER_TIMING_NOTE].as_str().unwrap();
        assert!(why.contains("exceeds 100 %"), "{why}");
        assert!(
            mfu(&BTreeMap::new(), &sweep, cell)
                .unwrap_err()
                .contains("no tokens_per_s")
        );
        // No budget read: nothing is refused for memory; the positions still are.
        assert_eq!(sweep.precheck(SweepBackend::Torch, cell), None);
    }

    #[test]
    fn mbu_is_the_bytes_of_a_step_times_steps_per_second_over_the_bandwidth() {
        let raw = RawAxes {
            models: Some(vec!["tinyllama-1.1b".into()]),
            seq: Some(vec!["512".into()]),
            batch: Some(vec!["4".into()]),
            ..RawAxes::default()
        };
        let plan = SweepPlan::from_axes(&SweepAxes::resolve(&raw, SweepDevice::Cpu).unwrap());
        let bandwidth = Peak {
            metric: PeakMetric::BytesPerSecond,
            dtype: None,
            ..peak(BackendKind::Cpu, DType::F32, 1e11, Some(8e10))
        };
        let sweep = unread_budget_sweep(&plan, vec![bandwidth]);
        let find = |phase: &str| {
            plan.cells
                .iter()
                .find(|c| c.phase.id() == phase)
                .unwrap_or_else(|| panic!("no {phase} cell in {:?}", plan.cells))
        };
        let decode = find("decode");
        let step = crate::workload::models::find("tinyllama-1.1b")
            .unwrap()
            .decode_step_bytes(decode, plan.new_tokens)
            .unwrap() as f64;
        // 40 tokens/s over batch 4: 10 steps a second; the larger of the two peaks.
        let notes = BTreeMap::from([("tokens_per_s".to_string(), Value::from(40.0))]);
        let b = mbu(&notes, &sweep, decode).unwrap().unwrap();
        assert_eq!((b.bytes_per_step, b.peak_bytes_per_s), (step, 1e11));
        assert!((b.mbu - step * 10.0 / 1e11).abs() < 1e-12, "{b:?}");
        let mut written = BTreeMap::new();
        b.write(&mut written);
        assert!(!written.contains_key(CHECK_AFTER_TIMING_NOTE));
        assert!(written["mbu_method"].as_str().unwrap().contains("KV cache"));
        // Faster than the memory can feed it: a failed record, as MFU over 100 % is.
        let fast = BTreeMap::from([("tokens_per_s".to_string(), Value::from(1e6))]);
        let mut written = BTreeMap::new();
        mbu(&fast, &sweep, decode)
            .unwrap()
            .unwrap()
            .write(&mut written);
        assert!(
            written[CHECK_AFTER_TIMING_NOTE]
                .as_str()
                .unwrap()
                .contains("exceeds 100 %")
        );
        // A prefill has no MBU; a decode without a rate or a bandwidth says why.
        assert_eq!(mbu(&notes, &sweep, find("prefill")), Ok(None));
        assert!(
            mbu(&BTreeMap::new(), &sweep, decode)
                .unwrap_err()
                .contains("tokens_per_s")
        );
        let no_peak = unread_budget_sweep(&plan, Vec::new());
        assert!(
            mbu(&notes, &no_peak, decode)
                .unwrap_err()
                .contains("memory bandwidth on cpu")
        );
    }

    #[test]
    fn only_a_decode_cell_adds_its_new_tokens_to_the_positions() {
        let raw = RawAxes {
            models: Some(vec!["bert-base".into(), "gpt2-small".into()]),
            seq: Some(vec!["512".into(), "1024".into()]),
            ..RawAxes::default()
        };
        let plan = SweepPlan::from_axes(&SweepAxes::resolve(&raw, SweepDevice::Cpu).unwrap());
        let sweep = unread_budget_sweep(&plan, Vec::new());
        let reason = |id: &str| {
            let cell = plan
                .cells
                .iter()
                .find(|c| format!("{}/{}", c.benchmark(), c.parameters()) == id)
                .unwrap();
            sweep.precheck(SweepBackend::Torch, cell)
        };
        assert_eq!(reason("bert-base-fp32-forward/b1_s512"), None);
        assert!(
            reason("bert-base-fp32-forward/b1_s1024")
                .unwrap()
                .contains("512 positions")
        );
        assert_eq!(reason("gpt2-small-fp32-prefill/b1_s1024"), None);
        let long = reason("gpt2-small-fp32-decode/b1_s1024").unwrap();
        assert_eq!(
            long,
            "sequence too long: 1024 prompt + 16 new tokens exceed gpt2-small's 1024 positions"
        );
    }
}
