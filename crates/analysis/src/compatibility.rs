//! The compatibility map of a model sweep: each cell of the plan (model x precision x
//! phase x batch x seq on one backend and device) is measured, failed with its error, or
//! skipped with its reason (predicted out of memory, dtype unsupported, backend not
//! installed, MPS or QNN absent). Read from the run record alone, so a stored sweep shows
//! the same map as the one that just ran; a planned cell the run has nothing about (the
//! target was killed before it) is said to be missing, never dropped.

use crate::results::RunRecord;
use crate::sidecar::{BenchmarkOutcome, TargetReport};
use crate::workload::models::SweepDevice;
use serde_json::Value;
use std::collections::BTreeMap;

/// What happened to one cell.
#[derive(Clone, Debug, PartialEq)]
pub enum CellStatus {
    /// Measured; the detail is its throughput and MFU where the notes have them.
    Measured(String),
    Failed(String),
    Skipped(String),
    /// The run holds nothing about it.
    Missing,
}

impl CellStatus {
    pub fn name(&self) -> &'static str {
        match self {
            CellStatus::Measured(_) => "measured",
            CellStatus::Failed(_) => "failed",
            CellStatus::Skipped(_) => "skipped",
            CellStatus::Missing => "missing",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CellOutcome {
    pub id: String,
    pub status: CellStatus,
}

/// Every cell of a sweep with its outcome, planned cells first in plan order.
#[derive(Clone, Debug, PartialEq)]
pub struct CompatibilityMap {
    pub device: String,
    pub cells: Vec<CellOutcome>,
}

impl CompatibilityMap {
    /// The map of `run` over the `planned` ids (and any other id of `family` the run
    /// recorded, such as a backend whose worker failed to start).
    pub fn from_run(run: &RunRecord, family: &str, planned: &[String], device: &str) -> Self {
        let entries = outcomes(run, family);
        let mut cells: Vec<CellOutcome> = planned
            .iter()
            .map(|id| CellOutcome {
                id: id.clone(),
                status: status(run, &entries, id),
            })
            .collect();
        for id in entries.keys().filter(|id| !planned.contains(id)) {
            cells.push(CellOutcome {
                id: id.clone(),
                status: status(run, &entries, id),
            });
        }
        CompatibilityMap {
            device: device.into(),
            cells,
        }
    }

    /// How many cells have each status: (measured, failed, skipped, missing).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let of = |name| {
            self.cells
                .iter()
                .filter(|c| c.status.name() == name)
                .count()
        };
        (of("measured"), of("failed"), of("skipped"), of("missing"))
    }

    /// The map as a table for a terminal: one cell a line, its outcome and why.
    pub fn to_text(&self) -> String {
        let (measured, failed, skipped, missing) = self.counts();
        let width = self
            .cells
            .iter()
            .map(|c| c.id.len())
            .max()
            .unwrap_or(2)
            .max(2);
        let mut out = format!(
            "compatibility map on {} ({} cells: {measured} measured, {failed} failed, {skipped} skipped, {missing} missing)\n",
            self.device,
            self.cells.len()
        );
        out.push_str(&format!("  {:<width$}  {:<8}  detail\n", "id", "outcome"));
        for cell in &self.cells {
            let detail = match &cell.status {
                CellStatus::Measured(d) | CellStatus::Failed(d) | CellStatus::Skipped(d) => {
                    first_line(d)
                }
                CellStatus::Missing => {
                    "the run holds nothing about it (interrupted or killed before it)".into()
                }
            };
            out.push_str(&format!(
                "  {:<width$}  {:<8}  {detail}\n",
                cell.id,
                cell.status.name()
            ));
        }
        out
    }
}

/// One device column of the map: every device a sweep can target, MPS and QNN included, so
/// a Mac or Snapdragon user gets real runs and anyone else the reason there are none.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceColumn {
    pub device: SweepDevice,
    pub state: DeviceState,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DeviceState {
    /// This sweep's cells ran here.
    Swept,
    /// The machine may have it; another sweep with `--device` fills the column.
    NotSwept,
    /// Not on this machine, and why.
    Absent(String),
}

/// Every device's column for a sweep of `swept`, `absent` saying why a device is not here
/// (`system::device_memory::absent_reason` on a live machine).
pub fn device_columns(
    swept: SweepDevice,
    absent: impl Fn(SweepDevice) -> Option<String>,
) -> Vec<DeviceColumn> {
    SweepDevice::ALL
        .iter()
        .map(|&device| DeviceColumn {
            device,
            state: match absent(device) {
                Some(reason) => DeviceState::Absent(reason),
                None if device == swept => DeviceState::Swept,
                None => DeviceState::NotSwept,
            },
        })
        .collect()
}

impl DeviceColumn {
    /// `mps: absent: MPS is not present on this machine ...`: one line, for the map and
    /// the run's notes.
    pub fn describe(&self) -> String {
        let state = match &self.state {
            DeviceState::Swept => "swept".to_string(),
            DeviceState::NotSwept => format!(
                "present, not swept: `stackbench sweep --device {}` fills this column",
                self.device
            ),
            DeviceState::Absent(reason) => format!("absent: {reason}"),
        };
        format!("{}: {state}", self.device)
    }
}

/// The device columns as the lines under the map.
pub fn device_columns_text(columns: &[DeviceColumn]) -> String {
    let mut out = String::from("devices (one sweep fills one column):\n");
    for column in columns {
        out.push_str(&format!("  {}\n", column.describe()));
    }
    out
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let shown: String = line.chars().take(160).collect();
    if shown.len() < text.len() {
        format!("{shown} ...")
    } else {
        shown
    }
}

/// The target reports' outcomes of `family`'s ids, by id.
fn outcomes(run: &RunRecord, family: &str) -> BTreeMap<String, BenchmarkOutcome> {
    let prefix = format!("{family}/");
    run.targets
        .iter()
        .filter_map(|t| serde_json::from_value::<TargetReport>(t.clone()).ok())
        .flat_map(|report| report.benchmarks.into_iter())
        .filter(|(id, _)| id.starts_with(&prefix))
        .map(|(id, entry)| (id, entry.outcome))
        .collect()
}

fn status(run: &RunRecord, entries: &BTreeMap<String, BenchmarkOutcome>, id: &str) -> CellStatus {
    let failed = run.failed.iter().find(|f| f.id == id);
    match (entries.get(id), failed) {
        (_, Some(f)) => CellStatus::Failed(f.error.clone()),
        (Some(BenchmarkOutcome::Failed { error }), None) => CellStatus::Failed(error.clone()),
        (Some(BenchmarkOutcome::Skipped { reason }), None) => CellStatus::Skipped(reason.clone()),
        (Some(BenchmarkOutcome::Measured { notes }), None) => CellStatus::Measured(measured(notes)),
        (None, None) if run.benchmark(id).is_some() => CellStatus::Measured(String::new()),
        (None, None) => CellStatus::Missing,
    }
}

/// `1234 tokens/s, MFU 3.1 %` (and `MBU 41.0 %` for a decode cell) from a measured cell's
/// notes; a serve cell leads with its
/// load (`goodput 7.9 of 8 req/s offered (99 % met SLOs)`), the figure it exists for.
fn measured(notes: &BTreeMap<String, Value>) -> String {
    let number = |key: &str| notes.get(key).and_then(Value::as_f64);
    let mut parts = Vec::new();
    if let (Some(goodput), Some(offered)) = (number("goodput_rps"), number("offered_rps")) {
        let met = number("slo_attainment").unwrap_or(0.0) * 100.0;
        parts.push(format!(
            "goodput {goodput:.2} of {offered} req/s offered ({met:.0} % met SLOs)"
        ));
    }
    if let Some(rate) = number("tokens_per_s") {
        parts.push(format!("{rate:.1} tokens/s"));
    } else if let Some(rate) = number("samples_per_s") {
        parts.push(format!("{rate:.2} samples/s"));
    }
    if let Some(p50) = number("latency_p50_ns") {
        parts.push(format!("p50 {:.2} ms", p50 / 1e6));
    }
    match (
        number("mfu"),
        notes.get("mfu_unavailable").and_then(Value::as_str),
    ) {
        (Some(mfu), _) => parts.push(format!("MFU {:.2} %", mfu * 100.0)),
        (None, Some(why)) => parts.push(format!("no MFU: {why}")),
        _ => {}
    }
    // Decode is bound by memory: its bandwidth figure beside the FLOP one.
    if let Some(mbu) = number("mbu") {
        parts.push(format!("MBU {:.1} %", mbu * 100.0));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::FailedBenchmark;
    use serde_json::json;

    #[test]
    fn every_device_is_a_column_with_mps_and_qnn_given_a_reason_when_absent() {
        // A Linux machine with a CUDA GPU, swept on the CPU.
        let absent = |d: SweepDevice| match d {
            SweepDevice::Rocm | SweepDevice::Mps | SweepDevice::Qnn => Some(format!("no {d} here")),
            _ => None,
        };
        let columns = device_columns(SweepDevice::Cpu, absent);
        let text = device_columns_text(&columns);
        assert_eq!(columns.len(), SweepDevice::ALL.len());
        assert!(text.contains("  cpu: swept\n"), "{text}");
        assert!(
            text.contains("  cuda: present, not swept: `stackbench sweep --device cuda`"),
            "{text}"
        );
        for device in ["rocm", "mps", "qnn"] {
            assert!(
                text.contains(&format!("  {device}: absent: no {device} here\n")),
                "{text}"
            );
        }
        // Asked for a device this machine lacks: its column is absent, not swept.
        let columns = device_columns(SweepDevice::Mps, absent);
        assert!(!columns.iter().any(|c| c.state == DeviceState::Swept));
    }

    fn run_with(report: Value, failed: Vec<FailedBenchmark>) -> RunRecord {
        let mut run = RunRecord::new(0, std::path::Path::new("/c"), "new", None);
        run.targets = vec![report];
        run.failed = failed;
        run
    }

    #[test]
    fn every_planned_cell_has_an_outcome_and_a_reason() {
        let entry = |id: &str, outcome: Value| {
            let mut e = json!({"group": "models/torch", "function": "f", "value": "v"});
            e.as_object_mut()
                .unwrap()
                .extend(outcome.as_object().unwrap().clone());
            (id.to_string(), e)
        };
        let benchmarks: serde_json::Map<String, Value> = [
            entry("models/torch/a-fp32-prefill/b1_s8", json!({"outcome": "measured", "notes": {"tokens_per_s": 100.0, "mfu": 0.05}})),
            entry("models/torch/a-int8-prefill/b1_s8", json!({"outcome": "skipped", "reason": "out of memory (predicted 9.0 GiB of 2.0 GiB)"})),
            entry("models/torch/a-fp32-decode/b1_s8", json!({"outcome": "failed", "error": "worker exited\ntraceback"})),
            entry("models/vllm/all/all", json!({"outcome": "skipped", "reason": "vllm is not installed"})),
        ]
        .into_iter()
        .collect();
        let report = json!({"schema": "stackbench.target.v1", "target": "models", "suite": "sweep",
            "started_unix_s": 0, "benchmarks": benchmarks});
        let run = run_with(report, vec![]);
        let planned: Vec<String> = [
            "models/torch/a-fp32-prefill/b1_s8",
            "models/torch/a-int8-prefill/b1_s8",
            "models/torch/a-fp32-decode/b1_s8",
            "models/torch/a-fp32-decode/b8_s8",
        ]
        .map(String::from)
        .to_vec();
        let map = CompatibilityMap::from_run(&run, "models", &planned, "cpu");
        assert_eq!(map.counts(), (1, 1, 2, 1));
        assert_eq!(
            map.cells[0].status,
            CellStatus::Measured("100.0 tokens/s, MFU 5.00 %".into())
        );
        assert_eq!(map.cells[4].id, "models/vllm/all/all");
        let serve = serde_json::from_value(json!({"goodput_rps": 7.5, "offered_rps": 8.0,
            "slo_attainment": 0.9, "tokens_per_s": 120.0, "latency_p50_ns": 2.5e6}))
        .unwrap();
        assert_eq!(
            measured(&serve),
            "goodput 7.50 of 8 req/s offered (90 % met SLOs), 120.0 tokens/s, p50 2.50 ms"
        );
        let decode =
            serde_json::from_value(json!({"tokens_per_s": 800.0, "mfu": 0.004, "mbu": 0.412}))
                .unwrap();
        assert_eq!(measured(&decode), "800.0 tokens/s, MFU 0.40 %, MBU 41.2 %");
        let text = map.to_text();
        assert!(
            text.contains("5 cells: 1 measured, 1 failed, 2 skipped, 1 missing"),
            "{text}"
        );
        assert!(
            text.contains("out of memory (predicted 9.0 GiB of 2.0 GiB)"),
            "{text}"
        );
        assert!(
            text.contains("worker exited ...") && !text.contains("traceback"),
            "{text}"
        );
    }
}
