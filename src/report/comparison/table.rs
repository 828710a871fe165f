//! The comparison as an aligned terminal table.

use super::{cells, headline, unmeasured, warnings};
use crate::analysis::{Comparison, UnmeasuredStatus};
use std::fmt::Write;

pub fn render(c: &Comparison) -> String {
    let named = c.estimator.map(|e| e.headers());
    let header = [
        "status",
        "benchmark",
        named.as_ref().map_or("baseline", |h| h.baseline),
        named.as_ref().map_or("candidate", |h| h.candidate),
        named.as_ref().map_or("change", |h| h.change),
        named.as_ref().map_or("95% CI", |h| h.ci),
        "q",
        "throughput",
    ];
    let rows: Vec<[String; 8]> = c
        .comparisons
        .iter()
        .map(|r| {
            let c = cells(r);
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
        })
        .collect();
    let widths = column_widths(&header, &rows);
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
    line(&mut out, &header.map(String::from));
    for row in &rows {
        line(&mut out, row);
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

/// The widest cell of each column, in characters.
fn column_widths(header: &[&str; 8], rows: &[[String; 8]]) -> [usize; 8] {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    widths
}
