//! The recommendation's views (`stackbench recommend --format table|markdown|json`, `md` for short): one writer
//! per format over [`Recommendation`], so the terminal, Markdown and JSON say the same
//! thing. Every column of the matrix is a hardware fingerprint; a cell shows its pick,
//! "no data", or why nothing qualifies, never a blank.

use crate::analysis::recommend::{Rank, Recommendation, Verdict};
use crate::report::writer::{Format, ReportWriter, WriteError, json_text};

/// The formats `stackbench recommend --format` writes.
pub const RECOMMEND_FORMATS: &[Format] = &[Format::Table, Format::Markdown, Format::Json];

impl ReportWriter for Recommendation {
    fn command(&self) -> &'static str {
        "stackbench recommend"
    }

    fn formats(&self) -> &'static [Format] {
        RECOMMEND_FORMATS
    }

    fn render(&self, format: Format) -> Result<Option<String>, WriteError> {
        let mut text = match format {
            Format::Table => table(self),
            Format::Markdown => markdown(self),
            // JSON carries each row's basis and the notes itself.
            Format::Json => return Ok(Some(json_text(self)?)),
            _ => return Ok(None),
        };
        // People get each row's basis and the notes as lines under the report.
        for line in self.basis_lines() {
            text.push_str(&line);
            text.push('\n');
        }
        Ok(Some(text))
    }
}

/// The SLOs as `ttft_p99<=200ms, tokens_per_s>=1000`, or `none`.
pub fn slo_text(rec: &Recommendation) -> String {
    if rec.slos.is_empty() {
        "none".into()
    } else {
        rec.slos
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `2.1e3 tokens/s`, `812.0 tokens/s per USD per device-hour`: a score with its unit
/// (the sweep page's matrix prints the same text).
pub fn score_text(rec: &Recommendation, verdict: &Verdict) -> String {
    let Verdict::Best { cell, score } = verdict else {
        return verdict.describe();
    };
    let unit = match rec.rank {
        Rank::Throughput => cell.rate_unit.clone(),
        Rank::PerDollar => format!("{} per ({})", cell.rate_unit, rec.price_basis),
        Rank::PerWatt => format!("{} per J", cell.rate_unit.trim_end_matches("/s")),
    };
    format!("{} on {}: {score:.4} {unit}", cell.axes(), cell.device)
}

fn table(rec: &Recommendation) -> String {
    let mut out = format!(
        "Recommendation (SLO: {}; rank: {}; newest sweep per machine)\n\nhardware:\n",
        slo_text(rec),
        rec.rank
    );
    for (i, h) in rec.hardware.iter().enumerate() {
        let price = h.price.map_or("no price".into(), |p| format!("{p}"));
        out.push_str(&format!(
            "  [{}] {} ({}), run {}, price {price}\n",
            i + 1,
            h.fingerprint,
            h.device,
            h.run_id
        ));
    }
    out.push_str("\nmatrix:\n");
    for row in &rec.rows {
        out.push_str(&format!("  {} {}\n", row.model, row.phase));
        for (i, verdict) in row.cells.iter().enumerate() {
            out.push_str(&format!("    [{}] {}\n", i + 1, score_text(rec, verdict)));
        }
        out.push_str(&format!("    best: {}\n", score_text(rec, &row.pick)));
    }
    out
}

fn markdown(rec: &Recommendation) -> String {
    let mut out = format!(
        "## Recommendation\n\nSLO: {}; rank: {}; the newest sweep of each machine.\n\n",
        slo_text(rec),
        rec.rank
    );
    out.push_str("| model | phase |");
    for h in &rec.hardware {
        out.push_str(&format!(" {} ({}) |", h.device, h.fingerprint));
    }
    out.push_str(" best |\n|---|---|");
    out.push_str(&"---|".repeat(rec.hardware.len() + 1));
    out.push('\n');
    for row in &rec.rows {
        out.push_str(&format!("| {} | {} |", row.model, row.phase));
        for verdict in &row.cells {
            out.push_str(&format!(" {} |", verdict.describe().replace('|', "\\|")));
        }
        out.push_str(&format!(
            " {} |\n",
            score_text(rec, &row.pick).replace('|', "\\|")
        ));
    }
    out
}
