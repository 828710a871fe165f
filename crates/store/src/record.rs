//! Turns one Criterion baseline (plus stackbench's sidecar files, when present) into a run
//! record. `compare` uses the same path for a Criterion baseline, unsaved, so a baseline
//! and a recorded run are judged identically.

use super::measured::measured_only;
use super::run::{BenchmarkRecord, RunRecord};
use crate::criterion_output::{CriterionError, CriterionTree};
use crate::sidecar::{TargetReport, read_system_probe, read_target_reports};
use crate::time::{format_rfc3339_ms, now_unix_ms};
use std::collections::BTreeMap;
use std::path::Path;

/// A run id that sorts by time and cannot collide between concurrent processes:
/// `20261121T121500123Z-p4242-7f3a`.
pub fn new_run_id(unix_ms: u64) -> String {
    let stamp: String = format_rfc3339_ms(unix_ms)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{stamp}-p{}-{:04x}", std::process::id(), nanos & 0xffff)
}

/// Reads `baseline` under `criterion_dir` into a run (not yet saved).
pub fn run_from_criterion(
    criterion_dir: &Path,
    baseline: &str,
    label: Option<String>,
) -> Result<RunRecord, CriterionError> {
    run_from_tree(&CriterionTree::scan(criterion_dir)?, baseline, label)
}

/// As [`run_from_criterion`], over a tree already scanned.
pub fn run_from_tree(
    tree: &CriterionTree,
    baseline: &str,
    label: Option<String>,
) -> Result<RunRecord, CriterionError> {
    build_run(tree, baseline, label, true)
}

/// A baseline read only for comparing it: without Criterion's estimates and the git state,
/// which the verdict does not use (about a third of the reading on a large tree).
pub fn run_for_comparison(
    tree: &CriterionTree,
    baseline: &str,
) -> Result<RunRecord, CriterionError> {
    build_run(tree, baseline, None, false)
}

fn build_run(
    tree: &CriterionTree,
    baseline: &str,
    label: Option<String>,
    full: bool,
) -> Result<RunRecord, CriterionError> {
    let criterion_dir = tree.root.as_path();
    let read = tree.read_with(baseline, full)?;
    let (system, reports, mut notes) = sidecar_files(criterion_dir);
    // `base` is Criterion's copy of the previous run: the target reports describe the run
    // that wrote every other baseline (`new`, a --save-baseline name), so only those are
    // held to what the reports say was measured.
    let measured = if baseline == "base" {
        measured_only(read.benchmarks, &[])
    } else {
        measured_only(read.benchmarks, &reports)
    };
    notes.extend(measured.notes);
    notes.extend(crate::system::clocks::run_notes(
        reports.iter().filter_map(|r| r.gpu_clocks.as_ref()),
    ));
    let counted = counted_from(&reports);
    let mut targets = Vec::new();
    for report in &reports {
        match serde_json::to_value(report) {
            Ok(v) => targets.push(v),
            Err(e) => notes.push(format!("target report not kept: {e}")),
        }
    }
    let (git_revision, git_dirty) = if full {
        crate::system::software::git_state(Path::new("."))
    } else {
        (None, None)
    };
    let created_unix_ms = now_unix_ms();
    let mut benchmarks: Vec<BenchmarkRecord> = measured
        .kept
        .into_iter()
        .map(BenchmarkRecord::from)
        .collect();
    attach_telemetry(&mut benchmarks, &targets);
    attach_accuracy(&mut benchmarks, &targets);
    Ok(RunRecord {
        label,
        git_revision,
        git_dirty,
        targets,
        notes,
        benchmarks,
        skipped: read.skipped,
        failed: measured.failed,
        counted,
        ..RunRecord::new(created_unix_ms, criterion_dir, baseline, system)
    })
}

/// The counting-mode results of every target report, keyed by id.
fn counted_from(reports: &[TargetReport]) -> BTreeMap<String, serde_json::Value> {
    reports
        .iter()
        .flat_map(|r| r.counted.iter().map(|(id, c)| (id.clone(), c.clone())))
        .collect()
}

/// A counting-mode run: the target reports hold counts and Criterion wrote no timing (its
/// counted children write into scratch directories), so there is no baseline to read.
/// `None` when the reports under `criterion_dir` hold no counts: then a missing baseline is
/// the error it always was.
pub fn counted_run(criterion_dir: &Path, label: Option<String>) -> Option<RunRecord> {
    let (system, reports, mut notes) = sidecar_files(criterion_dir);
    let counted = counted_from(&reports);
    if counted.is_empty() {
        return None;
    }
    let failed = measured_only(Vec::new(), &reports).failed;
    let mut targets = Vec::new();
    for report in &reports {
        match serde_json::to_value(report) {
            Ok(v) => targets.push(v),
            Err(e) => notes.push(format!("target report not kept: {e}")),
        }
    }
    let (git_revision, git_dirty) = crate::system::software::git_state(Path::new("."));
    Some(RunRecord {
        label,
        git_revision,
        git_dirty,
        targets,
        notes,
        failed,
        counted,
        ..RunRecord::new(now_unix_ms(), criterion_dir, "counted", system)
    })
}

/// Lifts each measured benchmark's telemetry note (written by the harness) into its record,
/// adding the energy per iteration where power is known: mean power x median time per
/// iteration. A note this version cannot read is left in the target report, untouched.
fn attach_telemetry(benchmarks: &mut [BenchmarkRecord], targets: &[serde_json::Value]) {
    for bench in benchmarks {
        let note = targets.iter().find_map(|t| {
            t.get("benchmarks")?
                .get(&bench.id)?
                .get("notes")?
                .get(crate::sidecar::TELEMETRY_NOTE)
        });
        let Some(Ok(mut telemetry)) = note.map(|n| {
            serde_json::from_value::<crate::system::telemetry::TelemetrySummary>(n.clone())
        }) else {
            continue;
        };
        let per_iter = bench.samples.per_iteration_ns();
        if let Some(power) = telemetry.power_watts
            && !per_iter.is_empty()
        {
            telemetry.energy_per_iteration_joules =
                Some(power.mean * crate::stats::median(&per_iter) * 1e-9);
        }
        bench.telemetry = Some(telemetry);
    }
}

/// Lifts each measured benchmark's accuracy note (the backend's check before timing) into
/// its record, where the store, the views and the gate read it. A note this version cannot
/// read stays in the target report and the record has no accuracy: the views and the gate
/// then say "not recorded" rather than anything about the result.
fn attach_accuracy(benchmarks: &mut [BenchmarkRecord], targets: &[serde_json::Value]) {
    for bench in benchmarks {
        bench.accuracy = targets.iter().find_map(|t| {
            let note = t
                .get("benchmarks")?
                .get(&bench.id)?
                .get("notes")?
                .get(crate::workload::accuracy::ACCURACY_NOTE)?;
            serde_json::from_value(note.clone()).ok()
        });
    }
}

/// stackbench's sidecar files beside Criterion's output: the system probe and the target
/// reports, with a note for each that is absent or unreadable (a plain Criterion crate has
/// neither, which is fine but worth saying: its hardware cannot be checked).
pub fn sidecar_files(
    criterion_dir: &Path,
) -> (Option<serde_json::Value>, Vec<TargetReport>, Vec<String>) {
    let mut notes = Vec::new();
    let system = match read_system_probe(criterion_dir) {
        Some(Ok(v)) => Some(v),
        Some(Err(e)) => {
            notes.push(format!("system probe unreadable, hardware unknown: {e}"));
            None
        }
        None => {
            notes.push(format!(
                "no system probe in {} (not a stackbench run?): hardware unknown, so comparisons cannot check it",
                criterion_dir.join("stackbench").display()
            ));
            None
        }
    };
    let mut targets = Vec::new();
    for report in read_target_reports(criterion_dir) {
        match report {
            Ok(r) => targets.push(r),
            Err(e) => notes.push(format!("target report unreadable: {e}")),
        }
    }
    (system, targets, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::criterion_output::SampleFile;

    fn bench(id: &str) -> BenchmarkRecord {
        let samples = SampleFile {
            sampling_mode: None,
            iters: vec![2.0, 2.0, 2.0],
            times: vec![2e9, 4e9, 6e9],
        };
        BenchmarkRecord::new(id, "gemm/cpu", samples)
    }

    #[test]
    fn telemetry_notes_become_records_with_energy_per_iteration() {
        let targets = vec![serde_json::json!({"benchmarks": {
            "gemm/cpu/f32/1": {"outcome": "measured", "notes": {"telemetry": {
                "source": "rapl",
                "power_watts": {"min": 90.0, "mean": 100.0, "max": 110.0, "samples": 4}}}},
            "gemm/cpu/f32/2": {"outcome": "measured", "notes": {"telemetry": {
                "source": "", "unavailable": ["RAPL: no powercap driver"]}}},
            "gemm/cpu/f32/3": {"outcome": "measured", "notes": {"telemetry": "garbage"}}
        }})];
        let mut benches = vec![
            bench("gemm/cpu/f32/1"),
            bench("gemm/cpu/f32/2"),
            bench("gemm/cpu/f32/3"),
        ];
        attach_telemetry(&mut benches, &targets);
        let powered = benches[0].telemetry.as_ref().unwrap();
        // 100 W x median 2 s per iteration.
        assert_eq!(powered.energy_per_iteration_joules, Some(200.0));
        let unpowered = benches[1].telemetry.as_ref().unwrap();
        assert_eq!(unpowered.energy_per_iteration_joules, None);
        assert_eq!(unpowered.unavailable, vec!["RAPL: no powercap driver"]);
        assert!(
            benches[2].telemetry.is_none(),
            "an unreadable note is left alone"
        );
    }

    #[test]
    fn accuracy_notes_become_records_and_garbage_stays_out() {
        let accuracy = crate::workload::Accuracy::exact(4, "all of C (2x2)", false);
        let targets = vec![serde_json::json!({"benchmarks": {
            "gemm/cpu/f32/1": {"outcome": "measured", "notes": {"accuracy": accuracy}},
            "gemm/cpu/f32/2": {"outcome": "measured", "notes": {"accuracy": {"max_abs_error": "x"}}},
        }})];
        let mut benches = vec![
            bench("gemm/cpu/f32/1"),
            bench("gemm/cpu/f32/2"),
            bench("gemm/cpu/f32/3"),
        ];
        attach_accuracy(&mut benches, &targets);
        assert_eq!(benches[0].accuracy.as_ref(), Some(&accuracy));
        assert!(benches[1].accuracy.is_none() && benches[2].accuracy.is_none());
    }
}
