//! The verdict as a terminal table: one line per check that ran, with what was expected,
//! what was measured, the margin, the kind of threshold and the usable samples it read;
//! then what was skipped or failed and why, and a summary that states the evidence.

use super::{Status, ThresholdCheck, ValidationResult};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};
use std::fmt::Write;

fn number(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Number(n) => n
            .as_f64()
            .map(|v| {
                format!("{v:.4}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
                    .to_owned()
            })
            .unwrap_or_else(|| n.to_string()),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Warning => "WARNING",
        Status::Failed => "FAILED",
    }
}

fn row(check: &ThresholdCheck, samples: usize) -> [String; 7] {
    let unit = check
        .unit
        .as_deref()
        .map(|u| format!(" {u}"))
        .unwrap_or_default();
    let mut margin = check
        .margin_percent
        .map(|m| format!("{m:+.1}%"))
        .unwrap_or_else(|| "-".into());
    if let Some(delta) = check.delta_percent {
        let _ = write!(margin, " (vs before {delta:+.1}%)");
    }
    [
        check.name.clone(),
        format!("{}{unit}", number(&check.expected)),
        format!("{}{unit}", number(&check.actual)),
        margin,
        status_word(check.status).into(),
        serde_json::to_value(check.threshold_kind)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        samples.to_string(),
    ]
}

/// The table, the skips and the overall line.
pub fn to_text(result: &ValidationResult) -> String {
    let header = [
        "check",
        "expected",
        "actual",
        "margin",
        "status",
        "threshold",
        "samples",
    ];
    let samples = |i: usize| result.evidence.ran.get(i).map_or(0, |c| c.samples);
    let rows: Vec<[String; 7]> = result
        .threshold_checks
        .iter()
        .enumerate()
        .map(|(i, check)| row(check, samples(i)))
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count()).min(72);
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", padded.join("  ").trim_end());
    };
    line(&mut out, &header.map(String::from));
    for r in &rows {
        line(&mut out, r);
    }
    for r in result.results.iter().filter(|r| r.outcome != "measured") {
        let reason = r.reason.as_deref().unwrap_or("");
        let word = if r.outcome == "failed" {
            "FAILED"
        } else {
            "skipped"
        };
        let _ = writeln!(out, "{word} {}: {reason}", r.id);
    }
    for note in &result.notes {
        let _ = writeln!(out, "note: {note}");
    }
    if let Some(level) = &result.level {
        let wall = result
            .wall_s
            .map_or("not measured (a stored run)".to_owned(), |w| {
                format!("{w:.1} s")
            });
        let over = if level.over_budget {
            " — OVER BUDGET"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "level {}: wall time {wall}, budget {} s{over}",
            level.level, level.budget_s
        );
    } else if let Some(wall) = result.wall_s {
        let _ = writeln!(out, "wall time {wall:.1} s");
    }
    let _ = writeln!(
        out,
        "\nvalidate ({}): {} — {}",
        result.suite,
        status_word(result.status),
        result.evidence.summary()
    );
    out
}

/// The formats `stackbench validate` prints its verdict in.
pub const VALIDATE_FORMATS: &[Format] = &[Format::Table, Format::Json];

impl ReportWriter for ValidationResult {
    fn command(&self) -> &'static str {
        "stackbench validate"
    }

    fn formats(&self) -> &'static [Format] {
        VALIDATE_FORMATS
    }

    /// JSON is the verdict file's content (schema stackbench.validation.v1).
    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        Ok(Some(match format {
            Format::Table => to_text(self),
            Format::Json => json_text(self)?,
            _ => return Ok(None),
        }))
    }
}
