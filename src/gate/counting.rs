//! The gate in counting mode (`--measure instructions`): each benchmark id both sides list is
//! counted once per side under Callgrind ([`InstructionCounter`]) and judged by
//! [`CountingRule`], a plain threshold on the change in instructions: no rounds, no
//! statistics, since the same code gives the same count on a loaded machine as on a quiet
//! one. Counts are deterministic, so the ids run in parallel over the allowed cores with no
//! interleaving of the sides. An id that cannot be counted (a GPU or Python-worker routine,
//! work on other threads, a routine Callgrind never saw) is listed `not countable` with the
//! reason and judged by time instead, through the gate's ordinary rounds over those ids
//! only: never a pass by default.

use super::functions::{FunctionChange, OwnCrate, counted_changes, render_counted};
use super::rounds::{Collected, SideRun};
use super::{GateError, GateOptions};
use crate::analysis::{BenchComparison, Status, Unmeasured, UnmeasuredStatus, VerdictRule};
use crate::harness::measure::callgrind_functions::FunctionCosts;
use crate::harness::measure::instructions::{CountError, CriterionVersion, InstructionCounter};
use crate::harness::measure::verdict::{CountVerdict, CountingRule};
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CountedRow {
    pub id: String,
    pub target: String,
    pub base: SideCount,
    pub head: SideCount,
    /// `(head − base) / base` of `ir`, in percent.
    pub change_percent: f64,
    pub verdict: CountVerdict,
    /// Regressed and improved only: the functions whose inclusive instructions per call
    /// changed most, the crate's own first (`super::functions`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionChange>,
    /// Why `functions` is empty for a regressed or improved benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions_unavailable: Option<String>,
}

/// An id that could not be counted, with why; it was judged by time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NotCountable {
    pub id: String,
    pub target: String,
    pub reason: String,
}

/// comparison.json's `counting`: the rule, the model, every count and every id that was
/// timed instead.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CountingReport {
    pub measure: Measure,
    /// The threshold on the change in instructions, in percent.
    pub threshold_percent: f64,
    /// What two counts of the same code may differ by: `max(relative·base, instructions)`.
    pub jitter_tolerance: crate::harness::measure::verdict::JitterTolerance,
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
    /// The counted benchmarks as rows of the shared comparison model: the status from the
    /// counting verdict, the times the cost model's estimates (the note says so), one count
    /// per side as the evidence.
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
                    "counted: {} → {} instructions ({}); times are cost-model estimates",
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
    let counting_rule = CountingRule::new(options.threshold_percent / 100.0)
        .map_err(|e| GateError::BadOption(format!("--threshold in counting mode: {e}")))?;
    let counters = [counter(sides[0])?, counter(sides[1])?];
    let mut unmeasured = Vec::new();
    let listed = [
        list_sides_ids(sides[0], targets, options, &mut unmeasured)?,
        list_sides_ids(sides[1], targets, options, &mut unmeasured)?,
    ];
    let (both, one_side) = pair_ids(&listed);
    unmeasured.extend(one_side);
    let counts = count_all(&counters.each_ref().map(|c| &c.1), &both)?;
    let (mut benchmarks, not_countable) =
        judge_counts(&both, counts, &counting_rule, &mut unmeasured);
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
        jitter_tolerance: counting_rule.tolerance,
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
        match list_ids(exe, side, options.filter.as_deref())? {
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

type CountResult = Result<CountedBenchmark, CountError>;

/// Counts every pair on both sides, the jobs shared out over the allowed cores (`--cpus`,
/// else every CPU this process may use). Ids the id rule already calls not countable are
/// not run.
fn count_all(
    counters: &[&InstructionCounter; 2],
    pairs: &[Pair],
) -> Result<Vec<[CountResult; 2]>, GateError> {
    let jobs: Vec<(usize, usize)> = (0..pairs.len()).flat_map(|p| [(p, 0), (p, 1)]).collect();
    let workers = super::cpus::allowed_cpus()
        .map(|c| c.len())
        .unwrap_or(1)
        .clamp(1, jobs.len().max(1));
    eprintln!(
        "analyze-trends gate: counting {} benchmark(s) on both sides under Callgrind, {workers} at a time",
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
                    let Some(&(p, side)) = jobs.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        break;
                    };
                    let pair = &pairs[p];
                    let result = match stackbench_countability(&pair.id) {
                        Countability::Countable => counters[side].count(&pair.exes[side], &pair.id),
                        Countability::NotCountable { reason } => Err(CountError::NotCountable {
                            id: pair.id.clone(),
                            reason,
                        }),
                    };
                    if let Ok(mut map) = results.lock() {
                        map.insert((p, side), result);
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
            let mut take = |side| {
                map.remove(&(p, side))
                    .ok_or_else(|| GateError::BadOption(format!("{} was not counted", pairs[p].id)))
            };
            Ok([take(0)?, take(1)?])
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
/// go into `unmeasured` as failed (never a pass).
fn judge_counts(
    pairs: &[Pair],
    counts: Vec<[CountResult; 2]>,
    rule: &CountingRule,
    unmeasured: &mut Vec<Unmeasured>,
) -> (Vec<CountedRow>, Vec<NotCountable>) {
    let mut rows = Vec::new();
    let mut not_countable = Vec::new();
    for (pair, [base, head]) in pairs.iter().zip(counts) {
        let failed = |side: &str, error: &CountError| Unmeasured {
            id: pair.id.clone(),
            status: UnmeasuredStatus::Failed,
            error: Some(format!("counting on the {side} side: {error}")),
        };
        let reason = [&base, &head]
            .into_iter()
            .find_map(|r| r.as_ref().err().and_then(not_countable_reason));
        if let Some(reason) = reason {
            not_countable.push(NotCountable {
                id: pair.id.clone(),
                target: pair.target.clone(),
                reason,
            });
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
        match rule.judge(&pair.id, base.counts.ir, head.counts.ir) {
            Ok(verdict) => rows.push(CountedRow {
                id: pair.id.clone(),
                target: pair.target.clone(),
                base: SideCount::from(&base),
                head: SideCount::from(&head),
                change_percent: verdict.change() * 100.0,
                verdict,
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
    let ids: Vec<String> = not_countable.iter().map(|n| regex::escape(&n.id)).collect();
    let timed = GateOptions {
        filter: Some(format!("^(?:{})$", ids.join("|"))),
        ..options.clone()
    };
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
    let tolerance = &report.jitter_tolerance;
    let model = &report.cost_model;
    format!(
        "Verdict on instructions (Ir) under Callgrind, one iteration per benchmark: a change \
         above {:.2} % fails; jitter tolerance max({:.1} %, {} instructions). Cycles and times \
         are estimates of a cost model (L1 hit {} cycle, LL hit {}, RAM {}; {:.1} GHz \
         nominal clock), never the verdict. Criterion: base {}, head {}. Any rounds above \
         timed only the ids listed as not countable.\n\n",
        report.threshold_percent,
        tolerance.relative * 100.0,
        tolerance.instructions,
        model.l1_hit_cycles,
        model.ll_hit_cycles,
        model.ram_cycles,
        model.nominal_clock_hz / 1e9,
        report.criterion[0],
        report.criterion[1],
    )
}

const COUNT_HEADER: [&str; 9] = [
    "benchmark",
    "Ir base",
    "Ir head",
    "change",
    "verdict",
    "est. cycles base → head",
    "L1 misses base → head",
    "LL misses base → head",
    "est. time base → head",
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
            jitter_tolerance: crate::harness::measure::verdict::JitterTolerance::MEASURED,
            cost_model: CostModel::GUNGRAUN,
            criterion: ["0.8.2".into(), "0.8.2".into()],
            benchmarks: vec![CountedRow {
                id: "grp/a|b".into(),
                target: "work".into(),
                base: side(100_000),
                head: side(102_000),
                change_percent: 2.0,
                verdict: CountVerdict::Regressed { change: 0.02 },
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
        assert!(md.contains("max(0.1 %, 256 instructions)"), "{md}");
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
        assert!(render(&empty, true).contains("No benchmark was counted."));
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
        let pairs = [pair("sum"), pair("threads"), pair("crash")];
        let counts = vec![
            [counted(100_000), counted(102_000)],
            [counted(1_000), threads()],
            [counted(1_000), crashed()],
        ];
        let mut unmeasured = Vec::new();
        let (rows, not) = judge_counts(&pairs, counts, &CountingRule::default(), &mut unmeasured);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].verdict.fails());
        assert!((rows[0].change_percent - 2.0).abs() < 1e-9);
        assert_eq!(not.len(), 1);
        assert!(not[0].reason.contains("other threads"), "{}", not[0].reason);
        assert_eq!(unmeasured.len(), 1);
        assert_eq!(unmeasured[0].status, UnmeasuredStatus::Failed);
        let error = unmeasured[0].error.as_deref().unwrap_or_default();
        assert!(error.contains("head side"), "{error}");
    }
}
