//! One round of one side: each bench target runs once with its own Criterion directory and
//! saves the round as baseline `r<N>`, and what it measured, skipped or failed is collected.
//! Only the round's own baseline is read, through the harness outcome files where the
//! crate writes them, so nothing an earlier round or run left on disk can reach a verdict.

use super::GateError;
use super::load::{self, SideLoad};
use super::process::{run_logged, tail};
use super::progress::Progress;
use crate::analysis::{BenchComparison, Status};
use crate::criterion_output::{CriterionError, CriterionTree, SampleFile};
use crate::results::{BenchmarkRecord, measured_only};
use crate::sidecar::read_target_reports;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One side of the gate, ready to run.
#[derive(Clone, Debug)]
pub struct SideRun {
    /// `base` or `head`.
    pub name: &'static str,
    /// What the user called it (a revision, or the current checkout).
    pub rev: String,
    /// The commit it was built from.
    pub commit: Option<String>,
    pub crate_dir: PathBuf,
    pub executables: BTreeMap<String, PathBuf>,
    pub env: Vec<(String, String)>,
    /// `<work>/criterion/<side>`: one Criterion directory per bench target below it.
    pub criterion_root: PathBuf,
    pub logs: PathBuf,
}

/// Everything measured so far, per side (index 0 base, 1 head).
#[derive(Debug, Default)]
pub struct Collected {
    /// Benchmark id → per side → round → per-iteration times in ns.
    pub per_round: BTreeMap<String, [BTreeMap<usize, Vec<f64>>; 2]>,
    /// Benchmark id → its bench target (for re-measuring it alone).
    pub target_of: BTreeMap<String, String>,
    /// Per side: benchmark id → the run record, its samples pooled over every round.
    pub records: [BTreeMap<String, BenchmarkRecord>; 2],
    /// Per side: benchmark id → the error the harness recorded.
    pub failures: [BTreeMap<String, String>; 2],
    /// Per side: benchmark id (or file, when the id is unknown) → why the reader refused
    /// its samples in some round (empty, all zero, negative, not finite, unreadable). Such
    /// a benchmark fails the gate; it is never dropped silently.
    pub unusable: [BTreeMap<String, String>; 2],
    /// Per side: bench target → why its executable exited non-zero.
    pub target_errors: [BTreeMap<String, String>; 2],
    /// Per side: the system probe a stackbench crate writes, when present.
    pub system: [Option<serde_json::Value>; 2],
    /// The timer floor and noise, measured before the first round (`calibrate.rs`).
    pub calibration: Option<super::calibrate::Calibration>,
    /// Benchmarks whose rounds projected more than `--max-rounds` for a decision: never
    /// measured again, unsure with the projection as the reason (`verdict.rs`, step 6).
    pub stopped: BTreeMap<String, crate::analysis::StoppedEarly>,
    /// The calibration's noise against the rounds' spread, checked after round 2.
    pub calibration_check: Option<crate::analysis::CalibrationCheck>,
    /// When the gate judges (after `--rounds`, then after each extra round up to
    /// `--max-rounds`), so each look spends its share of the error rate (`verdict.rs`,
    /// [`super::verdict::Looks`]); `None`: one look.
    pub looks: Option<super::verdict::Looks>,
    /// Per side: round → the CPU time other processes took while that side ran its bench
    /// targets in that round (`load.rs`); empty where the load cannot be known.
    pub load: [BTreeMap<usize, SideLoad>; 2],
    /// Why the load could not be known (no `/proc/stat`), when it could not.
    pub load_unknown: Option<String>,
}

// The below-floor judgement reads the rounds' samples against the calibration's floor; it
// lives with the samples so the calibration (measured before any round) knows nothing of
// how rounds are collected.
impl Collected {
    /// The ids measured on both sides, not failed and with usable samples, that are below the
    /// floor, with the shorter side's time.
    pub fn below_floor_ids(&self) -> BTreeMap<String, f64> {
        let Some(calibration) = &self.calibration else {
            return BTreeMap::new();
        };
        self.per_round
            .iter()
            .filter(|(id, _)| {
                !self.failures[1].contains_key(*id)
                    && !self.unusable.iter().any(|u| u.contains_key(*id))
            })
            .filter_map(|(id, sides)| Some((id.clone(), calibration.below_floor(sides)?)))
            .collect()
    }

    /// The comparison rows of the below-floor benchmarks: both times, no change, no interval,
    /// status `below floor`, and a note naming the floor.
    pub fn below_floor_rows(&self) -> Vec<BenchComparison> {
        let Some(calibration) = &self.calibration else {
            return Vec::new();
        };
        self.below_floor_ids()
            .into_keys()
            .filter_map(|id| {
                let sides = self.per_round.get(&id)?;
                let time = |i: usize| {
                    let medians: Vec<f64> = sides[i].values().map(|v| crate::stats::median(v)).collect();
                    crate::stats::median(&medians)
                };
                let samples = |i: usize| sides[i].values().map(Vec::len).sum();
                Some(BenchComparison {
                    baseline_ns: time(0),
                    candidate_ns: time(1),
                    change_percent: None,
                    ci95_percent: None,
                    p_value: None,
                    q_value: None,
                    relative_change_percent: None,
                    status: Status::BelowFloor,
                    samples: [samples(0), samples(1)],
                    noise_floor_percent: None,
                    note: Some(format!(
                        "below floor: at or below {} = {} x the {} floor of an empty routine; not judged",
                        super::calibrate::ns(calibration.below_floor_ns()),
                        calibration.floor_multiple,
                        super::calibrate::ns(calibration.floor_ns)
                    )),
                    throughput: None,
                    id,
                })
            })
            .collect()
    }
}

/// What to run in one target for one round.
pub struct RoundSpec<'a> {
    pub round: usize,
    pub target: &'a str,
    /// Criterion's filter (the user's `--filter`, or the anchored ids being re-measured).
    pub filter: Option<&'a str>,
    pub criterion_args: &'a [String],
    /// `--cpus`: empty when not pinned.
    pub cpus: &'a [usize],
}

/// The baseline name round `n` saves.
pub fn baseline_name(round: usize) -> String {
    format!("r{round}")
}

/// Runs one bench target of `side` for one round and collects what it measured.
pub fn run_target(
    side: &SideRun,
    index: usize,
    spec: &RoundSpec<'_>,
    progress: &Progress,
    collected: &mut Collected,
) -> Result<(), GateError> {
    let Some(exe) = side.executables.get(spec.target) else {
        return Ok(());
    };
    let home = side.criterion_root.join(spec.target);
    let log = side
        .logs
        .join(format!("{}-{}-r{}.log", side.name, spec.target, spec.round));
    let mut command = Command::new(exe);
    command.arg("--bench");
    if let Some(filter) = spec.filter {
        command.arg(filter);
    }
    command
        .args(["--save-baseline", &baseline_name(spec.round), "--noplot"])
        .args(spec.criterion_args)
        .current_dir(&side.crate_dir)
        .env("CRITERION_HOME", &home)
        // Rounds time: a bench main that counts when it sees the variable must not.
        .env_remove("STACKBENCH_MEASURE")
        .envs(side.env.iter().map(|(k, v)| (k, v)));
    super::cpus::pin(&mut command, spec.cpus);
    let before = load::snapshot(spec.cpus);
    let status = run_logged(command, &log, &mut |line| {
        if let Some(id) = line.strip_prefix("Benchmarking ") {
            progress.benchmark(id.split(':').next().unwrap_or(id));
        }
    })?;
    match before.and_then(|b| Ok(load::between(&b, &load::snapshot(spec.cpus)?))) {
        Ok(l) => collected.load[index].entry(spec.round).or_default().add(l),
        Err(why) => {
            collected.load_unknown.get_or_insert(why);
        }
    }
    if !status.success() {
        collected.target_errors[index].insert(
            spec.target.to_string(),
            format!("bench target `{}` {status}:\n{}", spec.target, tail(&log)),
        );
    }
    collect(&home, spec, index, collected)
}

/// Reads round `spec.round` from `home`, keeping only what the harness (when the crate has
/// one) says it measured in this run.
fn collect(
    home: &Path,
    spec: &RoundSpec<'_>,
    index: usize,
    collected: &mut Collected,
) -> Result<(), GateError> {
    let baseline = baseline_name(spec.round);
    let read = match CriterionTree::scan(home).and_then(|tree| tree.read(&baseline)) {
        Ok(read) => read,
        // Nothing measured (a target that failed at once, or a filter matching nothing).
        Err(CriterionError::Missing { .. } | CriterionError::Empty { .. })
        | Err(CriterionError::UnknownBaseline { .. }) => return Ok(()),
        Err(e) => {
            return Err(GateError::Read {
                path: home.to_path_buf(),
                detail: e.to_string(),
            });
        }
    };
    let reports: Vec<_> = read_target_reports(home)
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    if collected.system[index].is_none() {
        collected.system[index] = crate::sidecar::read_system_probe(home).and_then(Result::ok);
    }
    for skip in &read.skipped {
        let id = skip
            .id
            .clone()
            .unwrap_or_else(|| skip.path.display().to_string());
        let reason = format!(
            "round {}: {} ({})",
            spec.round,
            skip.reason,
            skip.path.display()
        );
        collected.unusable[index].entry(id).or_insert(reason);
    }
    let measured = measured_only(read.benchmarks, &reports);
    for failure in measured.failed {
        collected.failures[index].insert(failure.id, failure.error);
    }
    for bench in measured.kept {
        let id = bench.id.clone();
        let per_iteration = bench.samples.per_iteration_ns();
        collected
            .target_of
            .insert(id.clone(), spec.target.to_string());
        collected.per_round.entry(id.clone()).or_default()[index].insert(spec.round, per_iteration);
        let mut record = BenchmarkRecord::from(bench);
        // The check before timing ran in every round on the same seeded inputs: the first
        // round that recorded an accuracy set stands for the side.
        record.accuracy = reports.iter().find_map(|r| r.accuracy(&id));
        match collected.records[index].get_mut(&id) {
            Some(existing) => {
                pool(&mut existing.samples, &record.samples);
                if existing.accuracy.is_none() {
                    existing.accuracy = record.accuracy;
                }
            }
            None => {
                collected.records[index].insert(id, record);
            }
        }
    }
    Ok(())
}

/// Appends another round's samples: every round of the gate measured this benchmark.
fn pool(into: &mut SampleFile, more: &SampleFile) {
    into.iters.extend_from_slice(&more.iters);
    into.times.extend_from_slice(&more.times);
}
