//! The cross-hardware matrix: for every workload (benchmark family and shape), each
//! device's figure across the runs of its machine, with % of peak, perf per dollar, perf
//! per watt and the spread over that machine's runs; then, per workload family, the best
//! device by raw speed, by perf/$ and by perf/W.
//!
//! A device is one machine fingerprint with one backend (`cpu`, `cuda`, `rocm`): the same
//! box's CPU and GPU are different devices. Figures are rates (higher is better), each in
//! its benchmark's own unit ([`RateUnit`]): GFLOP/s, GB/s, busbw for collectives, tokens/s
//! for model components, calls/s where no work was declared. Units never convert.
//!
//! Honesty rules: a device not measured on a family is listed as such and never ranked; a
//! missing price or power is `None` ("n/a"), never 0; a family's ranking uses only the
//! workloads every ranked device measured (the geometric mean of their figures), so a
//! device is never ahead because it ran only the easy shapes. A figure above its peak
//! shows no percentage: the cell carries the suspect peak and its source instead.

use super::prices::PriceList;
use super::throughput::{PeakTable, RateUnit, SuspectPeak};
use crate::results::{BenchmarkRecord, RunRecord};
use crate::stats::median;
use crate::workload::family::IdParts;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One device: a machine fingerprint and a backend on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Device {
    /// `<fingerprint> [<backend>]`, the key cells refer to.
    pub key: String,
    pub fingerprint: String,
    pub backend: String,
    /// The device kind prices are looked up by (the GPU's or CPU's name in the probe).
    pub kind: String,
    /// The API its figures came through, with what the probe recorded of it: `CPU`,
    /// `CUDA, compute capability 9.0`, `Vulkan 1.3.230, driver llvmpipe (Mesa 22.3.6)`.
    /// One GPU measured through CUDA and through Vulkan is two devices, each saying which.
    pub api: String,
    pub runs: usize,
}

/// One device's figure on one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub device: String,
    /// Median over the machine's runs of each run's median rate.
    pub figure: f64,
    pub percent_of_peak: Option<f64>,
    /// Set when a figure of this cell exceeded its peak: the peak is wrong, and no
    /// percentage is given.
    pub suspect_peak: Option<SuspectPeak>,
    pub perf_per_dollar: Option<f64>,
    /// Figure per watt of mean power during the benchmark (from the telemetry).
    pub perf_per_watt: Option<f64>,
    /// (max - min) / median of the per-run figures, in percent; `None` with one run.
    pub spread_percent: Option<f64>,
    pub runs: usize,
}

/// Every device's figure on one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadRow {
    pub family: String,
    /// The id without its device part, e.g. `gemm/f32/512x512x512`.
    pub workload: String,
    pub unit: RateUnit,
    pub cells: Vec<Cell>,
}

/// The winner of one ranking, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Pick {
    Best { device: String, score: f64 },
    NotAvailable { reason: String },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recommendation {
    pub family: String,
    /// The unit of the family's figures and scores: a family whose workloads are measured
    /// in several units (a component's FLOP and byte benchmarks) is ranked once per unit.
    pub unit: RateUnit,
    /// The workloads every ranked device measured (what the scores are over).
    pub compared_on: usize,
    pub fastest: Pick,
    pub best_per_dollar: Pick,
    pub best_per_watt: Pick,
    /// Devices with no measurement in this family: shown, never ranked.
    pub not_measured: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HardwareReport {
    pub price_basis: String,
    pub devices: Vec<Device>,
    pub rows: Vec<WorkloadRow>,
    pub recommendations: Vec<Recommendation>,
}

/// One run's figure for one benchmark, keyed by device and workload.
struct Observation {
    device: String,
    workload: String,
    family: String,
    unit: RateUnit,
    figure: f64,
    percent_of_peak: Option<f64>,
    suspect_peak: Option<SuspectPeak>,
    watts: Option<f64>,
}

/// Builds the matrix from every run (as `RunStore::load_all` returns them).
pub fn analyze_hardware(runs: &[RunRecord], prices: &dyn PriceList) -> HardwareReport {
    let mut devices: BTreeMap<String, (Device, BTreeSet<String>)> = BTreeMap::new();
    let mut observations = Vec::new();
    for run in runs {
        let fingerprint = run.fingerprint.clone().unwrap_or_else(|| "unknown".into());
        let peaks = PeakTable::from_probe_peaks(&run.peaks(), run.probed_by_harness());
        for bench in &run.benchmarks {
            let Some(observation) = observe(run, &fingerprint, &peaks, bench) else {
                continue;
            };
            let entry = devices
                .entry(observation.device.clone())
                .or_insert_with(|| {
                    let backend = backend_of(run, &bench.id);
                    let device = Device {
                        key: observation.device.clone(),
                        fingerprint: fingerprint.clone(),
                        kind: device_kind(run, &backend),
                        api: api_of(run, &backend),
                        backend,
                        runs: 0,
                    };
                    (device, BTreeSet::new())
                });
            entry.1.insert(run.run_id.clone());
            observations.push(observation);
        }
    }
    let devices: Vec<Device> = devices
        .into_values()
        .map(|(mut d, runs)| {
            d.runs = runs.len();
            d
        })
        .collect();
    let rows = build_rows(&observations, &devices, prices);
    let recommendations = recommend(&rows, &devices);
    HardwareReport {
        price_basis: prices.basis(),
        devices,
        rows,
        recommendations,
    }
}

fn observe(
    run: &RunRecord,
    fingerprint: &str,
    peaks: &PeakTable,
    bench: &BenchmarkRecord,
) -> Option<Observation> {
    let per_iter = bench.samples.per_iteration_ns();
    if per_iter.is_empty() {
        return None;
    }
    let ns = median(&per_iter);
    let (workload, family) = workload_of(&bench.id);
    let (mut unit, mut figure, percent_of_peak, suspect_peak) = match &bench.throughput {
        Some(throughput) => {
            let rate = peaks.rate(&bench.id, throughput, ns)?;
            (
                rate.unit,
                rate.value,
                rate.percent_of_peak,
                rate.suspect_peak,
            )
        }
        None => (RateUnit::CallsPerSecond, 1e9 / ns, None, None),
    };
    if let Some(factor) = busbw_factor(&bench.id).filter(|_| unit == RateUnit::GbPerSecond) {
        // nccl-tests' bus bandwidth: comparable across rank counts, unlike algbw.
        figure *= factor;
        unit = RateUnit::BusGbPerSecond;
    }
    if !(figure.is_finite() && figure > 0.0) {
        return None;
    }
    let watts = bench
        .telemetry
        .as_ref()
        .and_then(|t| t.power_watts)
        .map(|p| p.mean)
        .filter(|w| w.is_finite() && *w > 0.0);
    Some(Observation {
        device: format!("{fingerprint} [{}]", backend_of(run, &bench.id)),
        workload,
        family,
        unit,
        figure,
        percent_of_peak,
        suspect_peak,
        watts,
    })
}

/// `(workload, family)`: the id without its device part, and the family it is ranked in.
/// The family table (`workload::family`) decides both; two kinds of component ids are
/// ranked by what they measure rather than by component: collectives with a bus
/// bandwidth (one workload per operation and message size, whatever the ranks), and
/// inference engines (tokens/s).
pub fn workload_of(id: &str) -> (String, String) {
    let parts = IdParts::split(id);
    match (parts.family, parts.backend, parts.function, parts.value) {
        ("components", "collectives", op, params) if busbw_factor(id).is_some() => {
            let bytes = params.rsplit('_').next().unwrap_or(params);
            (format!("collectives/{op}/{bytes}"), "collectives".into())
        }
        ("components", "vllm" | "tiny_gpt", _, _) => (id.to_owned(), "inference tokens/s".into()),
        // A foreign id is its own workload, ranked under its first part.
        _ => IdParts::parse(id)
            .and_then(|p| Some(p.family()?.workload(&p)))
            .unwrap_or_else(|| (id.to_owned(), parts.family.to_owned())),
    }
}

/// nccl-tests' busbw factor for a collectives id `components/collectives/<op>/<b>_<n>r_<bytes>`.
fn busbw_factor(id: &str) -> Option<f64> {
    let parts: Vec<&str> = id.split('/').collect();
    let ["components", "collectives", op, params] = parts.as_slice() else {
        return None;
    };
    let ranks: f64 = params.split('_').nth(1)?.strip_suffix('r')?.parse().ok()?;
    match *op {
        "all_reduce" => Some(2.0 * (ranks - 1.0) / ranks),
        "all_gather" | "reduce_scatter" | "all_to_all" => Some((ranks - 1.0) / ranks),
        "broadcast" => Some(1.0),
        _ => None,
    }
}

/// The backend a figure was measured on: the id's second part for native families; for
/// collectives the communication backend's device; for other components the GPU the run
/// had (components run on the GPU when there is one), else the CPU.
fn backend_of(run: &RunRecord, id: &str) -> String {
    let parts: Vec<&str> = id.split('/').collect();
    match parts.as_slice() {
        ["components", "collectives", _, params] => match params.split('_').next() {
            Some("nccl") => "cuda".into(),
            Some("rccl") => "rocm".into(),
            _ => "cpu".into(),
        },
        ["components", ..] => ["cuda", "rocm"]
            .into_iter()
            .find(|b| backend_available(run, b))
            .unwrap_or("cpu")
            .into(),
        [_, backend, ..] => (*backend).into(),
        _ => "cpu".into(),
    }
}

fn backend_available(run: &RunRecord, backend: &str) -> bool {
    probe_text(run, &format!("/backends/{backend}/status")) == Some("available")
}

/// The string at `pointer` in the run's probe, if there is one.
fn probe_text<'a>(run: &'a RunRecord, pointer: &str) -> Option<&'a str> {
    run.system.as_ref()?.pointer(pointer)?.as_str()
}

/// The name prices are keyed by: the backend's first device in the probe, else the CPU model.
fn device_kind(run: &RunRecord, backend: &str) -> String {
    probe_text(run, &format!("/backends/{backend}/devices/0/name"))
        .or_else(|| probe_text(run, "/cpu/model"))
        .unwrap_or(backend)
        .to_owned()
}

/// What a backend's figures came through ([`Device::api`]): the API's name, then what the
/// probe recorded of its first device: the API version and the driver (Vulkan), the compute
/// capability (CUDA), the architecture (ROCm); and a driver that runs on the CPU says so.
fn api_of(run: &RunRecord, backend: &str) -> String {
    let text = |key: &str| {
        probe_text(
            run,
            &format!("/backends/{backend}/devices/0/properties/{key}"),
        )
        .filter(|v| !v.is_empty())
    };
    let mut api = match backend {
        "cpu" => "CPU".to_string(),
        "cuda" => "CUDA".into(),
        "rocm" => "ROCm (HIP)".into(),
        "vulkan" => "Vulkan".into(),
        other => other.to_string(),
    };
    if let Some(version) = text("api_version") {
        api.push_str(&format!(" {version}"));
    }
    if let Some(cc) = text("compute_capability") {
        api.push_str(&format!(", compute capability {cc}"));
    }
    if let Some(arch) = text("gfx_arch") {
        api.push_str(&format!(", {arch}"));
    }
    match (text("driver_name"), text("driver_info")) {
        (Some(name), Some(info)) => api.push_str(&format!(", driver {name} ({info})")),
        (Some(driver), None) | (None, Some(driver)) => api.push_str(&format!(", driver {driver}")),
        (None, None) => {}
    }
    if backend != "cpu" && text("device_type") == Some("cpu") {
        api.push_str(": a CPU behind the driver, not a GPU");
    }
    api
}

fn build_rows(
    observations: &[Observation],
    devices: &[Device],
    prices: &dyn PriceList,
) -> Vec<WorkloadRow> {
    // The unit is part of the key: figures in different units are different rows, never
    // one median.
    type Key = (String, String, RateUnit);
    let mut grouped: BTreeMap<Key, BTreeMap<String, Vec<&Observation>>> = BTreeMap::new();
    for o in observations {
        grouped
            .entry((o.family.clone(), o.workload.clone(), o.unit))
            .or_default()
            .entry(o.device.clone())
            .or_default()
            .push(o);
    }
    grouped
        .into_iter()
        .map(|((family, workload, unit), by_device)| {
            let cells = by_device
                .iter()
                .map(|(device, obs)| cell(device, obs, devices, prices))
                .collect();
            WorkloadRow {
                family,
                workload,
                unit,
                cells,
            }
        })
        .collect()
}

fn cell(device: &str, obs: &[&Observation], devices: &[Device], prices: &dyn PriceList) -> Cell {
    let figures: Vec<f64> = obs.iter().map(|o| o.figure).collect();
    let figure = median(&figures);
    let optional_median = |values: Vec<f64>| (!values.is_empty()).then(|| median(&values));
    let percent_of_peak = optional_median(obs.iter().filter_map(|o| o.percent_of_peak).collect());
    let watts = optional_median(obs.iter().filter_map(|o| o.watts).collect());
    // One run over its peak makes the peak suspect for the whole cell: the percentages of
    // the other runs divide by the same wrong figure.
    let suspect_peak = obs.iter().find_map(|o| o.suspect_peak.clone());
    let percent_of_peak = percent_of_peak.filter(|_| suspect_peak.is_none());
    let kind = devices
        .iter()
        .find(|d| d.key == device)
        .map(|d| d.kind.as_str());
    let spread_percent = (figures.len() > 1).then(|| {
        let lo = figures.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = figures.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        100.0 * (hi - lo) / figure
    });
    Cell {
        device: device.to_owned(),
        figure,
        percent_of_peak,
        suspect_peak,
        perf_per_dollar: kind.and_then(|k| prices.price(k)).map(|p| figure / p),
        perf_per_watt: watts.map(|w| figure / w),
        spread_percent,
        runs: figures.len(),
    }
}

fn recommend(rows: &[WorkloadRow], devices: &[Device]) -> Vec<Recommendation> {
    let families: BTreeSet<(&str, RateUnit)> =
        rows.iter().map(|r| (r.family.as_str(), r.unit)).collect();
    families
        .into_iter()
        .map(|(family, unit)| {
            let family_rows: Vec<&WorkloadRow> = rows
                .iter()
                .filter(|r| r.family == family && r.unit == unit)
                .collect();
            recommend_family((family, unit), &family_rows, devices)
        })
        .collect()
}

fn recommend_family(
    (family, unit): (&str, RateUnit),
    rows: &[&WorkloadRow],
    devices: &[Device],
) -> Recommendation {
    let measured: BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r.cells.iter().map(|c| c.device.as_str()))
        .collect();
    let not_measured = devices
        .iter()
        .filter(|d| !measured.contains(d.key.as_str()))
        .map(|d| d.key.clone())
        .collect();
    // Only the workloads every measured device ran: the comparison is like for like.
    let common: Vec<&&WorkloadRow> = rows
        .iter()
        .filter(|r| {
            measured
                .iter()
                .all(|d| r.cells.iter().any(|c| c.device == *d))
        })
        .collect();
    let pick =
        |value: &dyn Fn(&Cell) -> Option<f64>, what: &str| best(&common, &measured, value, what);
    Recommendation {
        family: family.to_owned(),
        unit,
        compared_on: common.len(),
        fastest: pick(&|c| Some(c.figure), "figure"),
        best_per_dollar: pick(&|c| c.perf_per_dollar, "price"),
        best_per_watt: pick(&|c| c.perf_per_watt, "power reading"),
        not_measured,
    }
}

/// The device with the highest geometric mean of `value` over `rows`; devices lacking the
/// value on any row (no price, no power) are left out of this ranking.
fn best(
    rows: &[&&WorkloadRow],
    measured: &BTreeSet<&str>,
    value: &dyn Fn(&Cell) -> Option<f64>,
    what: &str,
) -> Pick {
    if rows.is_empty() {
        return Pick::NotAvailable {
            reason: "no workload in this family was measured on every device that ran it".into(),
        };
    }
    let scores = measured.iter().filter_map(|device| {
        let logs: Option<Vec<f64>> = rows
            .iter()
            .map(|r| {
                let c = r.cells.iter().find(|c| c.device == *device)?;
                value(c).filter(|v| *v > 0.0).map(f64::ln)
            })
            .collect();
        let logs = logs?;
        Some((
            *device,
            (logs.iter().sum::<f64>() / logs.len() as f64).exp(),
        ))
    });
    match scores.max_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((device, score)) => Pick::Best {
            device: device.to_owned(),
            score,
        },
        None => Pick::NotAvailable {
            reason: format!("n/a: no device has a {what} for every workload"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_are_keyed_by_op_and_size_and_ranked_on_busbw() {
        let id = "components/collectives/all_reduce/nccl_8r_1048576";
        assert_eq!(
            workload_of(id),
            (
                "collectives/all_reduce/1048576".into(),
                "collectives".into()
            )
        );
        assert_eq!(busbw_factor(id), Some(2.0 * 7.0 / 8.0));
        assert_eq!(
            busbw_factor("components/collectives/all_gather/gloo_2r_32768"),
            Some(0.5)
        );
        assert_eq!(
            busbw_factor("components/collectives/broadcast/rccl_4r_32768"),
            Some(1.0)
        );
        // Scaling rows are not collectives: no busbw, their own family.
        let dp = "components/collectives/dp_strong/gloo_2r_b8_s64";
        assert_eq!(busbw_factor(dp), None);
        assert_eq!(workload_of(dp).1, "components/collectives");
    }

    #[test]
    fn families_follow_the_benchmark_kind() {
        assert_eq!(workload_of("gemm/cuda/bf16/4096x4096x4096").1, "GEMM bf16");
        assert_eq!(
            workload_of("memory_bandwidth/rocm/triad/1GiB").0,
            "memory_bandwidth/triad/1GiB"
        );
        assert_eq!(
            workload_of("components/vllm/offline/b1_in128_out128").1,
            "inference tokens/s"
        );
        assert_eq!(
            workload_of("tensor_ops/cpu/add_f32/256x4096"),
            ("tensor_ops/add_f32/256x4096".into(), "tensor ops".into())
        );
        assert_eq!(
            workload_of("attention/cuda/flash_causal_f16/b1_h8_s1024_d64"),
            (
                "attention/flash_causal_f16/b1_h8_s1024_d64".into(),
                "attention".into()
            )
        );
        assert_eq!(
            workload_of("components/torch_matmul/f16/1024").1,
            "components/torch_matmul"
        );
        // A foreign id is its own workload, ranked under its first part.
        assert_eq!(
            workload_of("parse/json/small"),
            ("parse/json/small".into(), "parse".into())
        );
    }
}
