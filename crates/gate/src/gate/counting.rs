//! The gate in counting mode (`--measure instructions`): each benchmark id both sides list is
//! counted once per side under Callgrind ([`InstructionCounter`]) and judged by
//! [`CountingRule`], a plain threshold on the change in instructions: no rounds, no
//! statistics, since the same code gives the same count on a loaded machine as on a quiet
//! one. Counts are deterministic, so the ids run in parallel over the allowed cores with no
//! interleaving of the sides.
//!
//! What jitter remains is measured, not assumed: each id's base is counted a second time,
//! perturbed ([`AaPerturbation`]: the executable at another path, a larger environment), and
//! that A/A pair sets the id's own tolerance (0 when identical), at the cost of one extra
//! count of one side. An id whose A/A counts differ by more than the threshold, or that
//! cannot be counted at all (a GPU or Python-worker routine, work on other threads, a routine
//! Callgrind never saw), is listed `not countable` with the reason and judged by time instead,
//! through the gate's ordinary rounds over those ids only: never a pass by default.

use super::functions::{FunctionChange, OwnCrate, counted_changes, render_counted};
use super::rounds::{Collected, SideRun};
use super::{GateError, GateOptions};
use crate::analysis::{
    BenchComparison, InstructionCounts, Status, Unmeasured, UnmeasuredStatus, VerdictRule,
};
use crate::harness::measure::callgrind_functions::FunctionCosts;
use crate::harness::measure::instructions::{CountError, CriterionVersion, InstructionCounter};
use crate::harness::measure::verdict::{
    AaCount, AaOutcome, CountVerdict, CountingRule, JitterCalibration, JitterTolerance,
};
use crate::harness::measure::{
    CallgrindCounts, CostModel, Countability, CountedBenchmark, Measure, stackbench_countability,
};
use crate::report::format::format_ns;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The Callgrind figures of one side of one counted benchmark, as comparison.json shows them.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SideCount {
    /// Instructions executed: the figure the verdict stands on.
    pub ir: u64,
    pub estimated_cycles: u64,
    pub l1_misses: u64,
    pub ll_misses: u64,
    /// Estimated cycles at the cost model's nominal clock: an estimate, not a measurement.
    pub estimated_time_ns: f64,
    /// Callgrind's raw events, so a reader can redo the estimates.
    pub counts: CallgrindCounts,
    /// Each function's costs in the same count, for [`CountedRow::functions`]; not written.
    #[serde(skip)]
    pub function_costs: Result<FunctionCosts, String>,
}

impl From<&CountedBenchmark> for SideCount {
    fn from(c: &CountedBenchmark) -> Self {
        SideCount {
            ir: c.counts.ir,
            estimated_cycles: c.estimated_cycles,
            l1_misses: c.counts.l1_misses(),
            ll_misses: c.counts.ll_misses(),
            estimated_time_ns: c.estimated_time_ns,
            counts: c.counts,
            function_costs: c.function_costs.clone(),
        }
    }
}

/// One benchmark counted on both sides.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CountedRow {
    pub id: String,
    pub target: String,
    pub base: SideCount,
    pub head: SideCount,
    /// `(head − base) / base` of `ir`, in percent.
    pub change_percent: f64,
    pub verdict: CountVerdict,
    /// What this id's own A/A counts allowed (`counting.calibration`); 0 when identical.
    #[serde(default)]
    pub jitter_tolerance_instructions: u64,
    /// Regressed and improved only: the functions whose inclusive instructions per call
    /// changed most, the crate's own first (`super::functions`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionChange>,
    /// Why `functions` is empty for a regressed or improved benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions_unavailable: Option<String>,
}

/// An id that could not be counted, with why; it was judged by time.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NotCountable {
    pub id: String,
    pub target: String,
    pub reason: String,
}

/// comparison.json's `counting`: the rule, the model, every count and every id that was
/// timed instead.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CountingReport {
    pub measure: Measure,
    /// The threshold on the change in instructions, in percent.
    pub threshold_percent: f64,
    /// Each id's jitter, measured: its base counted twice, the second time perturbed.
    #[serde(default)]
    pub calibration: JitterCalibration,
    pub cost_model: CostModel,
    /// The Criterion version each side's Cargo.lock names (base, head).
    pub criterion: [String; 2],
    pub benchmarks: Vec<CountedRow>,
    pub not_countable: Vec<NotCountable>,
}

/// What counting found, before the verdict is assembled with any timed ids.
#[derive(Debug)]
pub struct Counted {
    pub report: CountingReport,
    /// Failed, missing and new ids (and bench targets that could not list their ids).
    pub unmeasured: Vec<Unmeasured>,
}

impl Counted {
    /// The counts each counted row's change is of, for the comparison's
    /// `instruction_counts`: the writers show them as the row's base and head.
    pub fn instruction_counts(&self) -> Vec<InstructionCounts> {
        self.report
            .benchmarks
            .iter()
            .map(|b| InstructionCounts {
                id: b.id.clone(),
                baseline: b.base.ir,
                candidate: b.head.ir,
                jitter_tolerance: b.jitter_tolerance_instructions,
            })
            .collect()
    }

    /// The counted benchmarks as rows of the shared comparison model: the status from the
    /// counting verdict, the change of the counts ([`Counted::instruction_counts`]), the
    /// times the cost model's estimates (which the writers show apart, named as such), one
    /// count per side as the evidence.
    pub fn rows(&self) -> Vec<BenchComparison> {
        self.report
            .benchmarks
            .iter()
            .map(|b| BenchComparison {
                id: b.id.clone(),
                baseline_ns: b.base.estimated_time_ns,
                candidate_ns: b.head.estimated_time_ns,
                change_percent: Some(b.change_percent),
                ci95_percent: None,
                p_value: None,
                q_value: None,
                relative_change_percent: None,
                status: match b.verdict {
                    CountVerdict::Regressed { .. } => Status::Degraded,
                    CountVerdict::Improved { .. } => Status::Improved,
                    _ => Status::Unchanged,
                },
                samples: [1, 1],
                noise_floor_percent: None,
                note: Some(format!(
                    "counted: {} → {} instructions ({}); the times are cost-model estimates, \
                     not what the change is of",
                    b.base.ir,
                    b.head.ir,
                    verdict_name(&b.verdict)
                )),
                throughput: None,
            })
            .collect()
    }
}

fn verdict_name(v: &CountVerdict) -> &'static str {
    match v {
        CountVerdict::Identical => "identical",
        CountVerdict::WithinJitter { .. } => "within jitter",
        CountVerdict::BelowThreshold { .. } => "below threshold",
        CountVerdict::Regressed { .. } => "regressed",
        CountVerdict::Improved { .. } => "improved",
    }
}

/// Counts every id of `targets` on both sides, then times the ids that are not countable
/// through `time_rounds` (the gate's own rounds, given those ids only as an anchored
/// filter). Returns what the rounds collected (empty when every id was counted) and the
/// counts.
pub fn run(
    sides: &[&SideRun; 2],
    targets: &[String],
    options: &GateOptions,
    rule: &VerdictRule,
    time_rounds: impl FnOnce(&[String], &GateOptions, &VerdictRule) -> Result<Collected, GateError>,
) -> Result<(Collected, Counted), GateError> {
    let counting_rule = CountingRule::new(options.judge.threshold_percent / 100.0)
        .map_err(|e| GateError::BadOption(format!("--threshold in counting mode: {e}")))?;
    let counters = [counter(sides[0])?, counter(sides[1])?];
    let mut unmeasured = Vec::new();
    let listed = [
        list_sides_ids(sides[0], targets, options, &mut unmeasured)?,
        list_sides_ids(sides[1], targets, options, &mut unmeasured)?,
    ];
    let (both, one_side) = pair_ids(&listed);
    unmeasured.extend(one_side);
    let perturbation = AaPerturbation::prepare(&both, &counters[0].1)?;
    let counts = count_all(
        &[&counters[0].1, &counters[1].1, &perturbation.counter],
        &both,
        &perturbation,
    )?;
    drop(perturbation);
    let mut calibration = JitterCalibration::new(AaPerturbation::description());
    let (mut benchmarks, not_countable) = judge_counts(
        &both,
        counts,
        &counting_rule,
        &mut calibration,
        &mut unmeasured,
    );
    name_changed_functions(&mut benchmarks, &OwnCrate::at(&sides[1].crate_dir));
    let collected = if not_countable.is_empty() {
        Collected::default()
    } else {
        let (timed_targets, timed_options) = timed_plan(&not_countable, options);
        eprintln!(
            "analyze-trends gate: {} benchmark(s) are not countable; timing them in rounds: {}",
            not_countable.len(),
            not_countable
                .iter()
                .map(|n| n.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        time_rounds(&timed_targets, &timed_options, rule)?
    };
    let report = CountingReport {
        measure: Measure::Instructions,
        threshold_percent: counting_rule.threshold * 100.0,
        calibration,
        cost_model: CostModel::GUNGRAUN,
        criterion: counters.map(|c| c.0.to_string()),
        benchmarks,
        not_countable,
    };
    Ok((collected, Counted { report, unmeasured }))
}

/// The Criterion version a side locks, and a counter for it. Bad input (exit 2) when the
/// lock file is missing or names a version the counter does not know.
fn counter(side: &SideRun) -> Result<(CriterionVersion, InstructionCounter), GateError> {
    let refuse = |e: CountError| {
        GateError::BadOption(format!(
            "counting mode on the {} side ({}): {e}",
            side.name, side.rev
        ))
    };
    let lock = find_cargo_lock(&side.crate_dir).ok_or_else(|| {
        GateError::BadOption(format!(
            "counting mode needs the Criterion version from Cargo.lock, and none is at or \
             above {} (the {} side)",
            side.crate_dir.display(),
            side.name
        ))
    })?;
    let version = CriterionVersion::from_cargo_lock(&lock).map_err(refuse)?;
    let counter = InstructionCounter::new(version).map_err(refuse)?;
    let counter = side
        .env
        .iter()
        .fold(counter, |c, (k, v)| c.with_env(k, v))
        .with_env("STACKBENCH_MEASURE", Measure::Instructions.name());
    Ok((version, counter))
}

/// The `Cargo.lock` of the crate in `dir`: its own, or its workspace's above it.
fn find_cargo_lock(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .map(|d| d.join("Cargo.lock"))
        .find(|p| p.is_file())
}

/// Benchmark id → bench target, for one side; a target whose listing fails is recorded as a
/// failed bench target.
fn list_sides_ids(
    side: &SideRun,
    targets: &[String],
    options: &GateOptions,
    unmeasured: &mut Vec<Unmeasured>,
) -> Result<BTreeMap<String, (String, PathBuf)>, GateError> {
    let mut ids = BTreeMap::new();
    for target in targets {
        let Some(exe) = side.executables.get(target) else {
            continue;
        };
        match list_ids(exe, side, options.judge.filter.as_deref())? {
            Ok(listed) => {
                for id in listed {
                    ids.insert(id, (target.clone(), exe.clone()));
                }
            }
            Err(error) => unmeasured.push(Unmeasured {
                id: format!("{target} (bench target)"),
                status: UnmeasuredStatus::Failed,
                error: Some(format!(
                    "the {} side could not list its ids: {error}",
                    side.name
                )),
            }),
        }
    }
    Ok(ids)
}

/// The ids `exe --bench --list [filter]` prints (`<id>: benchmark` from Criterion 0.5,
/// `<id>: bench` before), or why the listing failed.
fn list_ids(
    exe: &Path,
    side: &SideRun,
    filter: Option<&str>,
) -> Result<Result<Vec<String>, String>, GateError> {
    let mut command = Command::new(exe);
    command.args(["--bench", "--list"]);
    if let Some(filter) = filter {
        command.arg(filter);
    }
    let output = command
        .current_dir(&side.crate_dir)
        // A plain listing: a bench main that reads the variable (stackbench's own) must not
        // start counting here.
        .env_remove("STACKBENCH_MEASURE")
        .envs(side.env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|source| GateError::Spawn {
            program: exe.display().to_string(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Ok(Err(format!("{} {}:\n{tail}", exe.display(), output.status)));
    }
    Ok(Ok(parse_list(&String::from_utf8_lossy(&output.stdout))))
}

fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| {
            line.strip_suffix(": benchmark")
                .or_else(|| line.strip_suffix(": bench"))
        })
        .map(str::to_owned)
        .collect()
}

/// One id both sides list: its target and each side's executable.
struct Pair {
    id: String,
    target: String,
    exes: [PathBuf; 2],
}

/// The ids both sides list, and the ones only one side does (missing from the head, or
/// new in it).
fn pair_ids(listed: &[BTreeMap<String, (String, PathBuf)>; 2]) -> (Vec<Pair>, Vec<Unmeasured>) {
    let mut both = Vec::new();
    let mut one_side = Vec::new();
    for (id, (target, base_exe)) in &listed[0] {
        match listed[1].get(id) {
            Some((_, head_exe)) => both.push(Pair {
                id: id.clone(),
                target: target.clone(),
                exes: [base_exe.clone(), head_exe.clone()],
            }),
            None => one_side.push(Unmeasured {
                id: id.clone(),
                status: UnmeasuredStatus::Missing,
                error: None,
            }),
        }
    }
    for id in listed[1].keys().filter(|id| !listed[0].contains_key(*id)) {
        one_side.push(Unmeasured {
            id: id.clone(),
            status: UnmeasuredStatus::New,
            error: None,
        });
    }
    (both, one_side)
}

/// The variable the A/A count of the base adds to its environment…
pub const AA_PADDING_ENV: &str = "STACKBENCH_AA_PADDING";
/// …and the length of its value. Not a multiple of 8 or 16, so the stack's start, which the
/// environment's size moves, moves by an amount no alignment absorbs.
pub const AA_PADDING_BYTES: usize = 777;

/// The second count of the base (the A/A calibration) changes what the counter does not
/// normalise. The counter runs every executable through a link of one length (`argv[0]`,
/// which Rust copies to the heap) and sets `CRITERION_HOME`, for both sides alike, and so for
/// this count too. What else once moved the heap is changed here: the executable's real path
/// (a hard link, or a copy where the file system refuses one, in a directory of another name:
/// the loader and `/proc/self/exe` see it) and the environment's size ([`AA_PADDING_BYTES`]
/// more in [`AA_PADDING_ENV`], which moves the stack's start).
struct AaPerturbation {
    /// Each base executable → its perturbed path. The directories go when this is dropped.
    exes: BTreeMap<PathBuf, PathBuf>,
    _dirs: Vec<tempfile::TempDir>,
    counter: InstructionCounter,
}

impl AaPerturbation {
    /// Links (or copies) every base executable of `pairs` into a directory of its own beside
    /// it, and makes the counter with the padded environment.
    fn prepare(pairs: &[Pair], base_counter: &InstructionCounter) -> Result<Self, GateError> {
        let mut exes = BTreeMap::new();
        let mut dirs = Vec::new();
        for exe in pairs.iter().map(|p| &p.exes[0]) {
            if exes.contains_key(exe) {
                continue;
            }
            let parent = exe.parent().unwrap_or(Path::new("."));
            let io = |path: &Path| {
                let path = path.to_owned();
                move |source| GateError::Io { path, source }
            };
            let dir = tempfile::Builder::new()
                .prefix("stackbench-aa-calibration-")
                .tempdir_in(parent)
                .map_err(io(parent))?;
            let copy = dir
                .path()
                .join(exe.file_name().unwrap_or(std::ffi::OsStr::new("bench")));
            if std::fs::hard_link(exe, &copy).is_err() {
                std::fs::copy(exe, &copy).map_err(io(exe))?;
            }
            exes.insert(exe.clone(), copy);
            dirs.push(dir);
        }
        Ok(AaPerturbation {
            exes,
            _dirs: dirs,
            counter: base_counter
                .clone()
                .with_env(AA_PADDING_ENV, "x".repeat(AA_PADDING_BYTES)),
        })
    }

    /// The perturbed path of `base_exe`.
    fn exe<'a>(&'a self, base_exe: &'a Path) -> &'a Path {
        self.exes.get(base_exe).map_or(base_exe, PathBuf::as_path)
    }

    /// The perturbation in words, for comparison.json and the comment.
    fn description() -> String {
        format!(
            "the base counted again from a hard link (or copy) of its executable in another \
             directory, with {AA_PADDING_BYTES} bytes more environment ({AA_PADDING_ENV}); \
             the link of fixed length the counter runs every executable through, and \
             CRITERION_HOME, are as for every count"
        )
    }
}

type CountResult = Result<CountedBenchmark, CountError>;

/// The counts of one pair: base, head, and the base again under [`AaPerturbation`].
const COUNTS_PER_PAIR: usize = 3;

/// Counts every pair on both sides and its base once more perturbed, the jobs shared out
/// over the allowed cores (`--cpus`, else every CPU this process may use). Ids the id rule
/// already calls not countable are not run.
fn count_all(
    counters: &[&InstructionCounter; COUNTS_PER_PAIR],
    pairs: &[Pair],
    perturbation: &AaPerturbation,
) -> Result<Vec<[CountResult; COUNTS_PER_PAIR]>, GateError> {
    let jobs: Vec<(usize, usize)> = (0..pairs.len())
        .flat_map(|p| (0..COUNTS_PER_PAIR).map(move |slot| (p, slot)))
        .collect();
    let workers = super::cpus::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or(1)
        .clamp(1, jobs.len().max(1));
    eprintln!(
        "analyze-trends gate: counting {} benchmark(s) on both sides under Callgrind, and each \
         base again perturbed (A/A), {workers} at a time",
        pairs.len()
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<BTreeMap<(usize, usize), CountResult>> = Mutex::default();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    if super::interrupt::interrupted() {
                        break;
                    }
                    let Some(&(p, slot)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        break;
                    };
                    let pair = &pairs[p];
                    let exe = match slot {
                        2 => perturbation.exe(&pair.exes[0]),
                        side => &pair.exes[side],
                    };
                    let result = match stackbench_countability(&pair.id) {
                        Countability::Countable => counters[slot].count(exe, &pair.id),
                        Countability::NotCountable { reason } => Err(CountError::NotCountable {
                            id: pair.id.clone(),
                            reason,
                        }),
                    };
                    if let Ok(mut map) = results.lock() {
                        map.insert((p, slot), result);
                    }
                }
            });
        }
    });
    if super::interrupt::interrupted() {
        return Err(GateError::Interrupted);
    }
    let mut map = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (0..pairs.len())
        .map(|p| {
            let mut take = |slot| {
                map.remove(&(p, slot))
                    .ok_or_else(|| GateError::BadOption(format!("{} was not counted", pairs[p].id)))
            };
            Ok([take(0)?, take(1)?, take(2)?])
        })
        .collect()
}

/// Whether a count error means the id cannot be counted (so it is timed), rather than a
/// failure of the benchmark. Valgrind missing or a broken executable are failures.
fn not_countable_reason(error: &CountError) -> Option<String> {
    match error {
        CountError::NotCountable { reason, .. } => Some(reason.clone()),
        CountError::OtherThreads { evidence, .. } => Some(format!(
            "its routine hands work to other threads (Callgrind saw {evidence} while \
             counting), and only the calling thread's instructions are counted"
        )),
        CountError::NothingCounted { detail, .. } => Some(format!(
            "nothing was counted: the routine did not run through Criterion's Bencher \
             ({detail})"
        )),
        _ => None,
    }
}

/// The counting verdict of every pair, or why it is not countable; failures of either side
/// go into `unmeasured` as failed (never a pass). Each pair's A/A counts go into
/// `calibration` and set its tolerance.
fn judge_counts(
    pairs: &[Pair],
    counts: Vec<[CountResult; COUNTS_PER_PAIR]>,
    rule: &CountingRule,
    calibration: &mut JitterCalibration,
    unmeasured: &mut Vec<Unmeasured>,
) -> (Vec<CountedRow>, Vec<NotCountable>) {
    let mut rows = Vec::new();
    let mut not_countable = Vec::new();
    for (pair, [base, head, again]) in pairs.iter().zip(counts) {
        let failed = |side: &str, error: &CountError| Unmeasured {
            id: pair.id.clone(),
            status: UnmeasuredStatus::Failed,
            error: Some(format!("counting on the {side} side: {error}")),
        };
        let not = |reason: String| NotCountable {
            id: pair.id.clone(),
            target: pair.target.clone(),
            reason,
        };
        let reason = [&base, &head]
            .into_iter()
            .find_map(|r| r.as_ref().err().and_then(not_countable_reason));
        if let Some(reason) = reason {
            not_countable.push(not(reason));
            continue;
        }
        let (base, head) = match (base, head) {
            (Ok(b), Ok(h)) => (b, h),
            (Err(e), _) => {
                unmeasured.push(failed("base", &e));
                continue;
            }
            (_, Err(e)) => {
                unmeasured.push(failed("head", &e));
                continue;
            }
        };
        let tolerance = match calibrate(pair, &base, again, rule, calibration) {
            Ok(tolerance) => tolerance,
            Err(reason) => {
                not_countable.push(not(reason));
                continue;
            }
        };
        match rule.judge(&pair.id, base.counts.ir, head.counts.ir, tolerance) {
            Ok(verdict) => rows.push(CountedRow {
                id: pair.id.clone(),
                target: pair.target.clone(),
                base: SideCount::from(&base),
                head: SideCount::from(&head),
                change_percent: verdict.change() * 100.0,
                verdict,
                jitter_tolerance_instructions: tolerance.instructions,
                functions: Vec::new(),
                functions_unavailable: None,
            }),
            Err(e) => unmeasured.push(Unmeasured {
                id: pair.id.clone(),
                status: UnmeasuredStatus::Failed,
                error: Some(e.to_string()),
            }),
        }
    }
    (rows, not_countable)
}

/// One pair's A/A calibration: its base count and the perturbed one again, recorded in
/// `calibration`. The tolerance they give, or why the id is not countable (they differ by
/// more than the threshold, or the second count failed).
fn calibrate(
    pair: &Pair,
    base: &CountedBenchmark,
    again: CountResult,
    rule: &CountingRule,
    calibration: &mut JitterCalibration,
) -> Result<JitterTolerance, String> {
    let again = again.map_err(|e| {
        format!("its second count of the base (the A/A calibration) did not succeed: {e}")
    })?;
    let (first_ir, again_ir) = (base.counts.ir, again.counts.ir);
    let outcome = rule.calibrate(first_ir, again_ir);
    let tolerance = match outcome {
        AaOutcome::Countable(tolerance) => tolerance,
        AaOutcome::NotCountable { .. } => JitterTolerance::NONE,
    };
    calibration.benchmarks.push(AaCount {
        id: pair.id.clone(),
        first_ir,
        again_ir,
        tolerance_instructions: tolerance.instructions,
        countable: matches!(outcome, AaOutcome::Countable(_)),
    });
    match outcome {
        AaOutcome::Countable(tolerance) => Ok(tolerance),
        AaOutcome::NotCountable { change, .. } => Err(format!(
            "its own count is not reproducible: the base counted {first_ir} then {again_ir} \
             instructions ({:.2} % apart) when counted again perturbed (A/A), more than the \
             {:.2} % threshold",
            change * 100.0,
            rule.threshold * 100.0
        )),
    }
}

/// Fills each regressed or improved row's [`CountedRow::functions`] from both sides'
/// per-function costs, or says why they are unknown.
fn name_changed_functions(rows: &mut [CountedRow], own: &OwnCrate) {
    let changed = |r: &&mut CountedRow| {
        matches!(
            r.verdict,
            CountVerdict::Regressed { .. } | CountVerdict::Improved { .. }
        )
    };
    for row in rows.iter_mut().filter(changed) {
        match (&row.base.function_costs, &row.head.function_costs) {
            (Ok(base), Ok(head)) => {
                row.functions = counted_changes(base, head, [row.base.ir, row.head.ir], own);
            }
            (Err(e), _) => row.functions_unavailable = Some(format!("base side: {e}")),
            (_, Err(e)) => row.functions_unavailable = Some(format!("head side: {e}")),
        }
    }
}

/// The bench targets holding not-countable ids, and the options that time exactly those ids
/// (an anchored filter of them, the user's filter already applied by the listing).
fn timed_plan(not_countable: &[NotCountable], options: &GateOptions) -> (Vec<String>, GateOptions) {
    let mut targets: Vec<String> = not_countable.iter().map(|n| n.target.clone()).collect();
    targets.sort();
    targets.dedup();
    let ids: Vec<String> = not_countable.iter().map(|n| n.id.clone()).collect();
    let mut timed = options.clone();
    timed.judge.filter = Some(super::anchored(&ids));
    (targets, timed)
}

/// The counting section of the PR comment (`markdown`) and of the terminal table: the rule
/// and the cost model, the counts, and the ids that were timed instead.
pub fn render(report: &CountingReport, markdown: bool) -> String {
    let heading = if markdown { "### " } else { "" };
    let mut out = format!("\n{heading}Counting mode (--measure instructions)\n\n");
    out.push_str(&rule_paragraph(report));
    let rows: Vec<[String; 9]> = report
        .benchmarks
        .iter()
        .map(|b| count_row(b, markdown))
        .collect();
    if rows.is_empty() {
        out.push_str("No benchmark was counted.\n");
    } else if markdown {
        out.push_str(&format!("| {} |\n", COUNT_HEADER.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(COUNT_HEADER.len())));
        for row in &rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
    } else {
        out.push_str(&aligned(rows));
    }
    out.push_str(&calibration_paragraph(&report.calibration, markdown));
    out.push_str(&functions_section(report, markdown));
    if !report.not_countable.is_empty() {
        out.push_str(&format!(
            "\n{heading}Not countable (judged by time in rounds instead)\n\n"
        ));
        for n in &report.not_countable {
            out.push_str(&format!("- `{}`: not countable: {}\n", n.id, n.reason));
        }
    }
    out
}

/// The functions that changed most in each regressed or improved benchmark.
fn functions_section(report: &CountingReport, markdown: bool) -> String {
    let changed: Vec<&CountedRow> = report
        .benchmarks
        .iter()
        .filter(|b| !b.functions.is_empty() || b.functions_unavailable.is_some())
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut out = if markdown {
        String::from("\n#### Functions that changed most (Callgrind, counted)\n")
    } else {
        String::from("\nFunctions that changed most (Callgrind, counted):\n")
    };
    for row in changed {
        match &row.functions_unavailable {
            Some(why) => out.push_str(&format!("\n`{}`: functions unknown: {why}\n", row.id)),
            None => out.push_str(&render_counted(&row.id, &row.functions, markdown)),
        }
    }
    out
}

/// The rule, the tolerance and the cost model, in words.
fn rule_paragraph(report: &CountingReport) -> String {
    let model = &report.cost_model;
    format!(
        "Verdict on instructions (Ir) under Callgrind, one iteration per benchmark: a change \
         above {:.2} % fails, unless it is within the benchmark's own jitter, measured (A/A, \
         below). Cycles and times are estimates of a cost model (L1 hit {} cycle, LL hit {}, \
         RAM {}; {:.1} GHz nominal clock), shown in their own columns, never the verdict. \
         Criterion: base {}, head {}. Any rounds above timed only the ids listed as not \
         countable.\n\n",
        report.threshold_percent,
        model.l1_hit_cycles,
        model.ll_hit_cycles,
        model.ram_cycles,
        model.nominal_clock_hz / 1e9,
        report.criterion[0],
        report.criterion[1],
    )
}

/// The A/A calibration: how it was done, and each benchmark whose two base counts differed
/// (the others' tolerance is 0).
fn calibration_paragraph(calibration: &JitterCalibration, markdown: bool) -> String {
    let mut out = format!(
        "\nA/A calibration: {}. Identical counts give a tolerance of 0; a difference gives \
         the difference plus {:.0} % of it (at least {} instructions); a difference above the \
         threshold makes the benchmark not countable.\n",
        calibration.perturbation,
        calibration.margin_fraction * 100.0,
        calibration.margin_min_instructions
    );
    let jittery: Vec<_> = calibration.jittery().collect();
    if jittery.is_empty() {
        out.push_str(&format!(
            "All {} benchmark(s) counted identically twice: tolerance 0.\n",
            calibration.benchmarks.len()
        ));
        return out;
    }
    out.push_str(&format!(
        "{} of {} benchmark(s) counted differently twice:\n\n",
        jittery.len(),
        calibration.benchmarks.len()
    ));
    for b in jittery {
        let id = if markdown {
            format!("`{}`", b.id.replace('`', "'"))
        } else {
            b.id.clone()
        };
        let then = if b.countable {
            format!("tolerance {} instructions", b.tolerance_instructions)
        } else {
            "more than the threshold: not countable, timed".to_owned()
        };
        out.push_str(&format!(
            "- {id}: {} then {} instructions: {then}\n",
            b.first_ir, b.again_ir
        ));
    }
    out
}

const COUNT_HEADER: [&str; 9] = [
    "benchmark",
    "Ir base",
    "Ir head",
    "change (Ir)",
    "verdict",
    "cost-model est. cycles base → head",
    "L1 misses base → head",
    "LL misses base → head",
    "cost-model est. time base → head",
];

fn count_row(b: &CountedRow, markdown: bool) -> [String; 9] {
    let pair = |base: String, head: String| format!("{base} → {head}");
    [
        if markdown {
            format!("`{}`", b.id.replace('|', "\\|"))
        } else {
            b.id.clone()
        },
        b.base.ir.to_string(),
        b.head.ir.to_string(),
        format!("{:+.2} %", b.change_percent),
        verdict_name(&b.verdict).to_owned(),
        pair(
            b.base.estimated_cycles.to_string(),
            b.head.estimated_cycles.to_string(),
        ),
        pair(b.base.l1_misses.to_string(), b.head.l1_misses.to_string()),
        pair(b.base.ll_misses.to_string(), b.head.ll_misses.to_string()),
        pair(
            format_ns(b.base.estimated_time_ns),
            format_ns(b.head.estimated_time_ns),
        ),
    ]
}

/// The header and `rows` as left-aligned text columns.
fn aligned(rows: Vec<[String; 9]>) -> String {
    let all: Vec<[String; 9]> = std::iter::once(COUNT_HEADER.map(String::from))
        .chain(rows)
        .collect();
    let mut widths = [0usize; 9];
    for row in &all {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &all {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_criterion_list_formats_are_read_and_other_lines_ignored() {
        let out = "Gnuplot not found\nsum/20000: benchmark\ngrp/a b: bench\n\nxor: benchmark\n";
        assert_eq!(parse_list(out), ["sum/20000", "grp/a b", "xor"]);
    }

    fn report() -> CountingReport {
        let side = |ir| {
            SideCount::from(&CountedBenchmark::new(
                "x",
                CallgrindCounts {
                    ir,
                    ..Default::default()
                },
                CostModel::GUNGRAUN,
            ))
        };
        CountingReport {
            measure: Measure::Instructions,
            threshold_percent: 1.0,
            calibration: JitterCalibration {
                benchmarks: vec![
                    AaCount {
                        id: "grp/a|b".into(),
                        first_ir: 100_000,
                        again_ir: 100_000,
                        tolerance_instructions: 0,
                        countable: true,
                    },
                    AaCount {
                        id: "env/size".into(),
                        first_ir: 25_000,
                        again_ir: 25_020,
                        tolerance_instructions: 24,
                        countable: true,
                    },
                ],
                ..JitterCalibration::new("the base counted again perturbed")
            },
            cost_model: CostModel::GUNGRAUN,
            criterion: ["0.8.2".into(), "0.8.2".into()],
            benchmarks: vec![CountedRow {
                id: "grp/a|b".into(),
                target: "work".into(),
                base: side(100_000),
                head: side(102_000),
                change_percent: 2.0,
                verdict: CountVerdict::Regressed { change: 0.02 },
                jitter_tolerance_instructions: 0,
                functions: vec![FunctionChange {
                    function: "work::checksum".into(),
                    own: true,
                    ..FunctionChange::between(700, 738)
                }],
                functions_unavailable: None,
            }],
            not_countable: vec![NotCountable {
                id: "threads".into(),
                target: "work".into(),
                reason: "its routine hands work to other threads".into(),
            }],
        }
    }

    #[test]
    fn the_counting_section_shows_counts_rule_model_and_what_was_timed() {
        let md = render(&report(), true);
        assert!(md.contains("### Counting mode"), "{md}");
        assert!(md.contains("a change above 1.00 % fails"), "{md}");
        assert!(md.contains("own jitter, measured (A/A"), "{md}");
        assert!(
            md.contains("A/A calibration: the base counted again perturbed."),
            "{md}"
        );
        // Only the benchmark whose A/A counts differed is listed, with its tolerance.
        assert!(
            md.contains("1 of 2 benchmark(s) counted differently twice"),
            "{md}"
        );
        assert!(
            md.contains("- `env/size`: 25000 then 25020 instructions: tolerance 24"),
            "{md}"
        );
        assert!(!md.contains("- `grp/a|b`: 100000 then"), "{md}");
        assert!(md.contains("cost-model est. time base → head"), "{md}");
        assert!(md.contains("RAM 35; 3.0 GHz"), "{md}");
        assert!(
            md.contains("| `grp/a\\|b` | 100000 | 102000 | +2.00 % | regressed |"),
            "{md}"
        );
        assert!(
            md.contains("- `threads`: not countable: its routine"),
            "{md}"
        );
        assert!(
            md.contains("#### Functions that changed most (Callgrind, counted)"),
            "{md}"
        );
        assert!(
            md.contains("| `work::checksum` (own) | 700 | 738 | +38 (+5.4 %) |"),
            "{md}"
        );
        let text = render(&report(), false);
        assert!(
            text.contains("    work::checksum [own]: 700 → 738 (+38 (+5.4 %))"),
            "{text}"
        );
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("    ") && !l.contains("per call"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        // Columns line up: the Ir column starts at the same place in the header and the row.
        assert_eq!(lines[0].find("Ir base"), lines[1].find("100000"), "{text}");
        let mut empty = report();
        empty.benchmarks.clear();
        empty.calibration.benchmarks.truncate(1);
        let empty = render(&empty, true);
        assert!(empty.contains("No benchmark was counted."), "{empty}");
        assert!(
            empty.contains("All 1 benchmark(s) counted identically twice: tolerance 0."),
            "{empty}"
        );
    }

    #[test]
    fn ids_on_one_side_only_are_missing_or_new() {
        let side = |ids: &[&str]| {
            ids.iter()
                .map(|id| (id.to_string(), ("work".to_string(), PathBuf::from("/x"))))
                .collect::<BTreeMap<_, _>>()
        };
        let (both, one) = pair_ids(&[side(&["a", "gone"]), side(&["a", "fresh"])]);
        assert_eq!(
            both.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["a"]
        );
        let statuses: Vec<(&str, UnmeasuredStatus)> =
            one.iter().map(|u| (u.id.as_str(), u.status)).collect();
        assert_eq!(
            statuses,
            [
                ("gone", UnmeasuredStatus::Missing),
                ("fresh", UnmeasuredStatus::New)
            ]
        );
    }

    #[test]
    fn threads_and_gpu_ids_are_not_countable_and_a_crash_is_a_failure() {
        let pair = |id: &str| Pair {
            id: id.into(),
            target: "work".into(),
            exes: [PathBuf::from("/b"), PathBuf::from("/h")],
        };
        let counted = |ir| {
            Ok(CountedBenchmark::new(
                "x",
                CallgrindCounts {
                    ir,
                    ..Default::default()
                },
                CostModel::GUNGRAUN,
            ))
        };
        let threads = || {
            Err(CountError::OtherThreads {
                id: "threads".into(),
                evidence: "clone3".into(),
            })
        };
        let crashed = || {
            Err(CountError::NoSuchBenchmark {
                id: "crash".into(),
                exe: PathBuf::from("/h"),
            })
        };
        let pairs = [
            pair("sum"),
            pair("threads"),
            pair("crash"),
            pair("jittery"),
            pair("unreproducible"),
        ];
        let counts = vec![
            [counted(100_000), counted(102_000), counted(100_000)],
            [counted(1_000), threads(), counted(1_000)],
            [counted(1_000), crashed(), counted(1_000)],
            // A/A 10 apart on 25 000 (0.04 %): tolerance 14, and a head 12 off is within it.
            [counted(25_000), counted(25_012), counted(25_010)],
            // A/A 5 % apart: not countable, whatever the head counted.
            [counted(2_000), counted(2_000), counted(2_100)],
        ];
        let mut unmeasured = Vec::new();
        let mut calibration = JitterCalibration::default();
        let (rows, not) = judge_counts(
            &pairs,
            counts,
            &CountingRule::default(),
            &mut calibration,
            &mut unmeasured,
        );
        let verdicts: Vec<(&str, CountVerdict, u64)> = rows
            .iter()
            .map(|r| (r.id.as_str(), r.verdict, r.jitter_tolerance_instructions))
            .collect();
        assert_eq!(verdicts.len(), 2, "{verdicts:?}");
        assert!(verdicts[0].1.fails() && verdicts[0].2 == 0, "{verdicts:?}");
        assert!((rows[0].change_percent - 2.0).abs() < 1e-9);
        assert!(
            matches!(
                verdicts[1],
                ("jittery", CountVerdict::WithinJitter { .. }, 14)
            ),
            "{verdicts:?}"
        );
        assert_eq!(not.len(), 2);
        assert!(not[0].reason.contains("other threads"), "{}", not[0].reason);
        assert_eq!(not[1].id, "unreproducible");
        assert!(
            not[1]
                .reason
                .contains("counted 2000 then 2100 instructions (5.00 % apart)"),
            "{}",
            not[1].reason
        );
        let aa: Vec<(&str, u64, bool)> = calibration
            .benchmarks
            .iter()
            .map(|b| (b.id.as_str(), b.tolerance_instructions, b.countable))
            .collect();
        assert_eq!(
            aa,
            [
                ("sum", 0, true),
                ("jittery", 14, true),
                ("unreproducible", 0, false)
            ]
        );
        assert_eq!(unmeasured.len(), 1);
        assert_eq!(unmeasured[0].status, UnmeasuredStatus::Failed);
        let error = unmeasured[0].error.as_deref().unwrap_or_default();
        assert!(error.contains("head side"), "{error}");
    }
}
