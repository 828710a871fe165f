//! The comparison as Markdown for a pull-request comment: the verdict and warnings first,
//! every non-unchanged benchmark in a table, unchanged ones folded away.

use super::unsure::UnsureContext;
use super::{cells, headline, unmeasured, warnings};
use crate::analysis::{Comparison, Status, UnmeasuredStatus};
use std::fmt::Write;

/// Under a comparison with counted rows: what their columns are.
const COUNTED_NOTE: &str = "Counted rows (`--measure instructions`): base, head and change are \
     instructions of one iteration under Callgrind; A/A jitter is the tolerance the \
     benchmark's own base, counted twice, gave (blank: identical). The cost model's time \
     estimates are in the counting section, never in these columns.";

/// GitHub comments are limited to 65,536 characters: fold at most this many unchanged rows.
const MAX_UNCHANGED_ROWS: usize = 300;

/// Outside code spans `<` and `>` would start HTML.
fn escape(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Inside a code span only `|` needs escaping (GitHub splits table cells on it even there);
/// entities would show literally.
fn code(text: &str) -> String {
    format!("`{}`", text.replace('`', "'").replace('|', "\\|"))
}

/// `rows` as Markdown tables: one for the timed rows, headed by the comparison's estimator,
/// and one for the counted rows, headed by [`super::COUNTED_HEADERS`].
fn table(out: &mut String, c: &Comparison, rows: &[&crate::analysis::BenchComparison]) {
    for (i, group) in super::groups(c, rows).into_iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let headers = if group.counted {
            Some(super::COUNTED_HEADERS)
        } else {
            c.estimator
                .map(|e| e.headers())
                .map(|h| [h.baseline, h.candidate, h.change, h.ci])
        };
        match headers {
            None => out.push_str(
                "| Status | Benchmark | Baseline | Candidate | Change | 95 % CI | q | Throughput |\n",
            ),
            Some([baseline, candidate, change, ci]) => {
                let _ = writeln!(
                    out,
                    "| Status | Benchmark | {baseline} | {candidate} | {change} | {ci} | q | Throughput |"
                );
            }
        }
        out.push_str("|---|---|---:|---:|---:|---|---:|---|\n");
        for row in group.rows {
            let cells = cells(row, c.instruction_counts_of(&row.id));
            let icon = match row.status {
                Status::Degraded => "🔴",
                Status::Improved => "🟢",
                Status::Inconclusive => "🟡",
                Status::Unchanged => "⚪",
                Status::BelowFloor => "⚫",
            };
            let _ = writeln!(
                out,
                "| {icon} {} | {} | {} | {} | {} | {} | {} | {} |",
                cells.status,
                code(&cells.id),
                cells.baseline,
                cells.candidate,
                cells.change,
                cells.ci,
                cells.q,
                escape(&cells.rate)
            );
        }
    }
}

pub fn render(c: &Comparison) -> String {
    render_with(c, &UnsureContext::default())
}

/// As [`render`], with what the gate knows about its unsure benchmarks (their rounds, the
/// noise floor it calibrated).
pub fn render_with(c: &Comparison, unsure: &UnsureContext<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Benchmark comparison: {} → {}\n\n**{}**\n",
        code(&c.baseline),
        code(&c.candidate),
        headline(c)
    );
    for w in warnings(c) {
        let _ = writeln!(out, "> ⚠️ {}\n", escape(&w));
    }
    let failed: Vec<_> = unmeasured(c, UnmeasuredStatus::Failed).collect();
    if !failed.is_empty() {
        out.push_str(
            "**Failed** (failed in the candidate, or no usable samples; this fails the gate):\n\n",
        );
        for f in failed {
            let error = f.error.as_deref().unwrap_or("no error recorded");
            let (first, rest) = error.split_once('\n').unwrap_or((error, ""));
            let _ = writeln!(out, "- 🔴 {}: {}", code(&f.id), escape(first));
            if !rest.is_empty() {
                // A bench target's output tail: kept verbatim in a fenced block.
                let _ = writeln!(out, "\n  ```text");
                for line in rest.lines() {
                    let _ = writeln!(out, "  {}", line.replace("```", "'''"));
                }
                let _ = writeln!(out, "  ```");
            }
        }

        out.push('\n');
    }
    let (changed, unchanged): (Vec<_>, Vec<_>) = c
        .comparisons
        .iter()
        .partition(|r| r.status != Status::Unchanged);
    if !changed.is_empty() {
        table(&mut out, c, &changed);
    }
    // Below the changed rows, so a regression's table comes first.
    let section = super::unsure::markdown(c, unsure, code, escape);
    if !section.is_empty() {
        if !changed.is_empty() {
            out.push('\n');
        }
        out.push_str(section.trim_end());
        out.push('\n');
    }
    if !unchanged.is_empty() {
        let _ = writeln!(
            out,
            "\n<details><summary>{} unchanged</summary>\n",
            unchanged.len()
        );
        table(
            &mut out,
            c,
            &unchanged[..unchanged.len().min(MAX_UNCHANGED_ROWS)],
        );
        if unchanged.len() > MAX_UNCHANGED_ROWS {
            let _ = writeln!(out, "\n… and {} more", unchanged.len() - MAX_UNCHANGED_ROWS);
        }
        out.push_str("\n</details>\n");
    }
    let accuracy = super::accuracy_rows(c);
    if !accuracy.is_empty() {
        out.push_str(
            "\n**Accuracy** (error against a float64 reference on the same inputs; ε = the dtype's machine epsilon; judged by `[accuracy]` rules):\n\n| accuracy | benchmark | baseline | candidate | change |\n|---|---|---|---|---|\n",
        );
        for [status, id, base, cand, change] in &accuracy {
            let mark = match status.as_str() {
                "lost" => "🔴 lost",
                "unjudged" => "🟡 unjudged",
                other => other,
            };
            let _ = writeln!(
                out,
                "| {mark} | {} | {} | {} | {} |",
                code(id),
                escape(base),
                escape(cand),
                escape(change)
            );
        }
    }
    for (title, status) in [
        ("Missing from the candidate", UnmeasuredStatus::Missing),
        ("New", UnmeasuredStatus::New),
    ] {
        let ids: Vec<String> = unmeasured(c, status).map(|u| code(&u.id)).collect();
        if !ids.is_empty() {
            let _ = writeln!(out, "\n**{title}:** {}", ids.join(", "));
        }
    }
    if !c.skipped.is_empty() {
        out.push_str("\n**Skipped (unreadable):**\n");
        for s in &c.skipped {
            let _ = writeln!(out, "- {} {}: {}", s.side, code(&s.path), escape(&s.reason));
        }
    }
    if let Some(estimator) = c.estimator {
        let _ = writeln!(out, "\n<sub>{}</sub>", estimator.describe());
    }
    if !c.instruction_counts.is_empty() {
        let _ = writeln!(out, "\n<sub>{COUNTED_NOTE}</sub>");
    }
    let _ = writeln!(
        out,
        "\n<sub>Verdict: Hodges-Lehmann shift of log times, Moses 95 % CI, Mann-Whitney U with Benjamini-Hochberg q < {}; degraded = change > {} % and significant.</sub>",
        c.rule.fdr_q, c.threshold_percent
    );
    out
}

/// `markdown` (a comparison's comment) with a link to the comparison's page on the
/// dashboard (`url`, see [`super::link`]) right under the verdict, where a reviewer looks
/// first. `url` is a plain http(s) URL (checked by [`super::link::server_url`]).
pub fn with_dashboard_link(markdown: &str, url: &str) -> String {
    let line = format!("📈 [Charts and history of this comparison on the dashboard]({url})\n\n");
    // After the headline paragraph (`**verdict**`), else at the top.
    let at = markdown
        .find("\n**")
        .and_then(|start| {
            let rest = &markdown[start + 1..];
            rest.find("\n\n").map(|end| start + 1 + end + 2)
        })
        .unwrap_or(0);
    format!("{}{line}{}", &markdown[..at], &markdown[at..])
}
