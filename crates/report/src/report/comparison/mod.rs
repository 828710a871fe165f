//! Writers of a [`Comparison`]: `table` for terminals, `markdown` for a PR comment (and
//! `rounds` for the gate's comment, with its per-round figures), `json` for scripts
//! (schema `stackbench.comparison.v1`).

mod json;
pub mod link;
mod markdown;
mod rounds;
mod table;
mod unsure;

pub use markdown::with_dashboard_link;
pub use rounds::{RoundFigure, RoundsView, render_gate_markdown};
pub use unsure::UnsureContext;

use crate::analysis::{BenchComparison, Comparison, InstructionCounts, UnmeasuredStatus};
use crate::report::format::{format_ns, format_percent};
use crate::report::writer::{Format, ReportWriter, WriteError};

/// The formats `analyze-trends compare` and `gate` print a comparison in.
pub const COMPARISON_FORMATS: &[Format] = &[Format::Table, Format::Markdown, Format::Json];

impl ReportWriter for Comparison {
    fn command(&self) -> &'static str {
        "analyze-trends compare"
    }

    fn formats(&self) -> &'static [Format] {
        COMPARISON_FORMATS
    }

    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => table::render(self),
            Format::Markdown => markdown::render(self),
            Format::Json => json::render(self),
            _ => return Ok(None),
        }))
    }
}

/// The cells every human-readable writer shows for one row.
pub(crate) struct Cells {
    pub status: &'static str,
    pub id: String,
    pub baseline: String,
    pub candidate: String,
    pub change: String,
    pub ci: String,
    pub q: String,
    pub rate: String,
}

/// The headers of a table of counted rows (`gate --measure instructions`): base, head and
/// change are instructions, and the fourth column is the row's own A/A tolerance (blank when
/// its A/A counts were identical). The cost model's time estimates are not in this table:
/// the gate's counting section shows them in a column of their own, named as estimates.
pub(crate) const COUNTED_HEADERS: [&str; 4] = [
    "base (instructions)",
    "head (instructions)",
    "change (instructions)",
    "A/A jitter (instructions)",
];

/// One table's rows: the timed ones, or the ones judged on instruction counts.
pub(crate) struct RowGroup<'a> {
    /// True for the counted rows, whose headers are [`COUNTED_HEADERS`].
    pub counted: bool,
    pub rows: Vec<&'a BenchComparison>,
}

/// `rows` split into the timed and the counted ones, each a table of its own (one estimator
/// per table, named in its header); an empty group is left out, so a comparison with one
/// kind of row gives one table.
pub(crate) fn groups<'a>(c: &Comparison, rows: &[&'a BenchComparison]) -> Vec<RowGroup<'a>> {
    let (counted, timed): (Vec<_>, Vec<_>) = rows
        .iter()
        .partition(|r| c.instruction_counts_of(&r.id).is_some());
    [(false, timed), (true, counted)]
        .into_iter()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(counted, rows)| RowGroup { counted, rows })
        .collect()
}

/// A row's cells; a counted row's (`counts`) base and head are its instruction counts.
pub(crate) fn cells(row: &BenchComparison, counts: Option<&InstructionCounts>) -> Cells {
    let rate = row.throughput.as_ref().map_or(String::new(), |t| {
        format!(
            "{:.2} → {:.2} {}{}",
            t.baseline.value,
            t.candidate.value,
            t.candidate.unit,
            t.candidate.peak_note()
        )
    });
    let mut change = format_percent(row.change_percent);
    if let Some(rel) = row.relative_change_percent {
        change.push_str(&format!(" (rel {})", format_percent(Some(rel))));
    }
    let ci = row
        .ci95_percent
        .map_or("n/a".into(), |[lo, hi]| format!("[{lo:+.1}, {hi:+.1}]"));
    let q = row.q_value.map_or("n/a".into(), |q| format!("{q:.2e}"));
    match counts {
        Some(counts) => Cells {
            status: row.status.as_str(),
            id: row.id.clone(),
            baseline: counts.baseline.to_string(),
            candidate: counts.candidate.to_string(),
            change,
            ci: match counts.jitter_tolerance {
                0 => String::new(),
                t => format!("±{t}"),
            },
            q,
            rate,
        },
        None => Cells {
            status: row.status.as_str(),
            id: row.id.clone(),
            baseline: format_ns(row.baseline_ns),
            candidate: format_ns(row.candidate_ns),
            change,
            ci,
            q,
            rate,
        },
    }
}

/// One line saying what the verdict decided and what it stands on, shared by the writers:
/// `CRITICAL: 12 benchmarks judged on 10+10 samples each (min), 1 degraded, 0 failed, ...`.
pub(crate) fn headline(c: &Comparison) -> String {
    let s = &c.summary;
    // An unsure verdict exits 3: the headline says so rather than a mere warning.
    let word = match c.outcome() {
        crate::results::Outcome::Unsure => "UNSURE".to_string(),
        _ => s.overall_status.as_str().to_uppercase(),
    };
    let accuracy = if c.accuracy.is_empty() {
        String::new()
    } else {
        format!(
            ", {} lost accuracy, {} accuracy unjudged",
            s.total_accuracy_lost, s.total_accuracy_unjudged
        )
    };
    format!(
        "{}: {}, {} degraded, {} failed, {} improved, {} unchanged, {} inconclusive, {} missing, {} new, {} skipped{accuracy} (threshold {} %)",
        word,
        c.evidence.describe("benchmark"),
        s.total_degraded,
        s.total_failed,
        s.total_improved,
        s.total_unchanged,
        s.total_inconclusive,
        s.total_missing,
        unmeasured(c, UnmeasuredStatus::New).count(),
        s.total_skipped,
        c.threshold_percent
    )
}

/// The accuracy verdicts as table rows: status, benchmark, baseline, candidate, change.
/// Lost first, then unjudged, within and not gated; by id within.
pub(crate) fn accuracy_rows(c: &Comparison) -> Vec<[String; 5]> {
    use crate::analysis::accuracy::AccuracyStatus;
    let mut verdicts: Vec<_> = c.accuracy.iter().collect();
    verdicts.sort_by_key(|v| (v.status as u8, v.id.clone()));
    let side = |a: &Option<crate::workload::Accuracy>| {
        a.as_ref().map_or("not recorded".to_string(), |a| a.short())
    };
    verdicts
        .into_iter()
        .map(|v| {
            let change = match (v.bits_lost, v.status) {
                (Some(b), _) if b >= 0.0 => format!("{b:.1} bits lost"),
                (Some(b), _) => format!("{:.1} bits gained", -b),
                (None, AccuracyStatus::Lost) => "exact → inexact".into(),
                (None, _) => "—".into(),
            };
            [
                v.status.as_str().to_string(),
                v.id.clone(),
                side(&v.baseline),
                side(&v.candidate),
                change,
            ]
        })
        .collect()
}

/// The unmeasured benchmarks of one status, in order.
pub(crate) fn unmeasured(
    c: &Comparison,
    status: UnmeasuredStatus,
) -> impl Iterator<Item = &crate::analysis::Unmeasured> {
    c.unmeasured.iter().filter(move |u| u.status == status)
}

/// Warnings every writer must show: hardware, systemic shift, notes.
pub(crate) fn warnings(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(shift) = &c.summary.systemic_shift {
        out.push(format!("SYSTEMIC SHIFT: {}", shift.message));
    }
    out.extend(c.summary.notes.iter().cloned());
    out
}
