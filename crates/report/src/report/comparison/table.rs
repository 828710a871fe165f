//! The comparison as an aligned terminal table.

use super::{COUNTED_HEADERS, cells, groups, headline, unmeasured, warnings};
use crate::analysis::{BenchComparison, Comparison, UnmeasuredStatus};
use std::fmt::Write;

pub fn render(c: &Comparison) -> String {
    let all: Vec<&BenchComparison> = c.comparisons.iter().collect();
    // One table per estimator, each with its own header (timed rows, then counted ones).
    let mut tables: Vec<([String; 8], Vec<[String; 8]>)> = groups(c, &all)
        .into_iter()
        .map(|g| {
            let rows = g.rows.iter().map(|r| row(c, r)).collect();
            (header(c, g.counted), rows)
        })
        .collect();
    if tables.is_empty() {
        tables.push((header(c, false), Vec::new()));
    }
    let widths = column_widths(&tables);
    let mut out = String::new();
    let _ = writeln!(out, "{} -> {}", c.baseline, c.candidate);
    for w in warnings(c) {
        let _ = writeln!(out, "warning: {w}");
    }
    let line = |out: &mut String, cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell}{}", " ".repeat(w - cell.chars().count())))
            .collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    for f in unmeasured(c, UnmeasuredStatus::Failed) {
        let error = f.error.as_deref().unwrap_or("no error recorded");
        let _ = writeln!(out, "FAILED {}: {error}", f.id);
    }
    for (header, rows) in &tables {
        line(&mut out, header);
        for row in rows {
            line(&mut out, row);
        }
    }
    let accuracy = super::accuracy_rows(c);
    if !accuracy.is_empty() {
        let _ = writeln!(
            out,
            "accuracy (error against a float64 reference; ε = the dtype's machine epsilon):"
        );
        for [status, id, base, cand, change] in &accuracy {
            let _ = writeln!(out, "  {status:<10} {id}: {base} -> {cand} ({change})");
        }
    }
    for status in [UnmeasuredStatus::Missing, UnmeasuredStatus::New] {
        let ids: Vec<&str> = unmeasured(c, status).map(|u| u.id.as_str()).collect();
        if !ids.is_empty() {
            let _ = writeln!(out, "{}: {}", status.as_str(), ids.join(", "));
        }
    }
    for s in &c.skipped {
        let _ = writeln!(out, "skipped ({}): {}: {}", s.side, s.path, s.reason);
    }
    for l in super::unsure::lines(c) {
        let _ = writeln!(out, "{l}");
    }
    let _ = writeln!(out, "{}", headline(c));
    out
}

/// The header of a table of timed rows (named by the comparison's estimator) or of counted
/// ones ([`COUNTED_HEADERS`]).
fn header(c: &Comparison, counted: bool) -> [String; 8] {
    let named = c.estimator.map(|e| e.headers());
    let [baseline, candidate, change, ci] = if counted {
        COUNTED_HEADERS
    } else {
        [
            named.as_ref().map_or("baseline", |h| h.baseline),
            named.as_ref().map_or("candidate", |h| h.candidate),
            named.as_ref().map_or("change", |h| h.change),
            named.as_ref().map_or("95% CI", |h| h.ci),
        ]
    };
    [
        "status",
        "benchmark",
        baseline,
        candidate,
        change,
        ci,
        "q",
        "throughput",
    ]
    .map(String::from)
}

fn row(c: &Comparison, r: &BenchComparison) -> [String; 8] {
    let c = cells(r, c.instruction_counts_of(&r.id));
    [
        c.status.into(),
        c.id,
        c.baseline,
        c.candidate,
        c.change,
        c.ci,
        c.q,
        c.rate,
    ]
}

/// The widest cell of each column over every table, in characters.
fn column_widths(tables: &[([String; 8], Vec<[String; 8]>)]) -> [usize; 8] {
    let mut widths = [0; 8];
    for (header, rows) in tables {
        for row in std::iter::once(header).chain(rows) {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    widths
}
