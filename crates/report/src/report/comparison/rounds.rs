//! The gate's PR comment: the comparison's Markdown, then how the rounds ran and each
//! benchmark's per-round figures, folded away. The gate hands over a [`RoundsView`] of
//! plain values and its [`RoundFigure`]s, which live here, with the comment that shows
//! them, so this writer needs nothing from the gate.

use super::unsure::UnsureContext;
use crate::analysis::Comparison;
use crate::report::format::format_ns;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One round of one benchmark, as the PR comment and `comparison.json` show it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct RoundFigure {
    pub round: usize,
    /// `base first` or `head first`.
    pub order: &'static str,
    pub base_ns: f64,
    pub head_ns: f64,
    pub change_percent: f64,
    pub ci95_percent: [f64; 2],
    pub p_value: Option<f64>,
}

/// How the gate ran, for the lines below the comparison.
pub struct RoundsView<'a> {
    pub full_rounds: usize,
    pub rounds_run: usize,
    /// Benchmarks measured again after the full rounds because they were inconclusive.
    pub remeasured: &'a [String],
    /// Each side's name and its own environment variables.
    pub env: [(&'a str, &'a BTreeMap<String, String>); 2],
    /// Per benchmark id, its rounds.
    pub benchmarks: Vec<(&'a str, &'a [RoundFigure])>,
    /// The machine's run-to-run noise floor in percent, from the calibration before the
    /// rounds, when one ran; shown with the unsure benchmarks.
    pub noise_percent: Option<f64>,
}

/// The comparison as Markdown, with the gate's rounds below it.
pub fn render_gate_markdown(c: &Comparison, g: &RoundsView<'_>) -> String {
    let unsure = UnsureContext {
        round_changes: g
            .benchmarks
            .iter()
            .map(|(id, rounds)| (*id, rounds.iter().map(|r| r.change_percent).collect()))
            .collect(),
        noise_percent: g.noise_percent,
    };
    let mut out = super::markdown::render_with(c, &unsure);
    // No rounds ran in counting mode when every benchmark was counted.
    if g.rounds_run > 0 {
        let _ = writeln!(
            out,
            "\n<sub>Gate: {} full round(s) in ABBA order on one machine, {} round(s) in all; each benchmark judged on its round-to-round differences.</sub>",
            g.full_rounds, g.rounds_run
        );
    }
    if !g.remeasured.is_empty() {
        let ids: Vec<String> = g.remeasured.iter().map(|id| format!("`{id}`")).collect();
        let _ = writeln!(
            out,
            "\n**Measured again (inconclusive after the full rounds):** {}",
            ids.join(", ")
        );
    }
    for (side, env) in g.env {
        if !env.is_empty() {
            let pairs: Vec<String> = env.iter().map(|(k, v)| format!("`{k}={v}`")).collect();
            let _ = writeln!(out, "\n**{side} environment:** {}", pairs.join(" "));
        }
    }
    if !g.benchmarks.is_empty() {
        out.push_str("\n<details><summary>Per-round figures</summary>\n\n");
        out.push_str("| Benchmark | Round | Order | Base | Head | Change | 95 % CI |\n|---|---:|---|---:|---:|---:|---|\n");
        for (id, rounds) in &g.benchmarks {
            for r in rounds.iter() {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} | {:+.2} % | [{:+.1}, {:+.1}] |",
                    id.replace('|', "\\|"),
                    r.round,
                    r.order,
                    format_ns(r.base_ns),
                    format_ns(r.head_ns),
                    r.change_percent,
                    r.ci95_percent[0],
                    r.ci95_percent[1]
                );
            }
        }
        out.push_str("\n</details>\n");
    }
    out
}
