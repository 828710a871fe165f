//! The HTML pages: each one is its JSON endpoint's model embedded as
//! `<script type="application/json" id="page-data">` (which a browser never executes, and
//! whose `<`, `>` and `&` are escaped so no text in it can close the element), plus a table
//! of the same data rendered here with every value escaped.
//!
//! Path segments (run ids, benchmark ids) are checked or escaped before they reach a page
//! or a message: a hostile id can only ever be text.

use super::error::{ApiError, PageError, blocking};
use super::models::{self, RunFilter};
use super::{Shared, api};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use axum::routing::get;
use serde::Serialize;
use std::fmt::Write;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(runs_page))
        .route("/runs/{id}", get(run_page))
        .route("/history/{*bench_id}", get(history_page))
        .route("/comparisons", get(comparisons_page))
        .route("/comparisons/{id}", get(comparison_page))
        .route("/hardware", get(hardware_page))
}

type PageResult = Result<Html<String>, PageError>;

/// Run ids are what `record` makes (`20261125T101500123Z-p42-1a2b`) or what a user named a
/// file: letters, digits, `.`, `_`, `-`, starting with a letter or digit. Anything else is
/// refused before it reaches the store, a file name or a page.
pub fn check_run_id(id: &str) -> Result<(), ApiError> {
    match run_id_problem(id) {
        None => Ok(()),
        Some(problem) => Err(ApiError::not_found(format!("no run `{id}`: {problem}"))),
    }
}

/// Why `id` cannot be a run id, if it cannot.
pub fn run_id_problem(id: &str) -> Option<String> {
    let ok = !id.is_empty()
        && id.len() <= 200
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    (!ok).then(|| {
        "a run id holds only letters, digits, `.`, `_` and `-`, and starts with a letter or digit"
            .to_string()
    })
}

/// A comparison from a path segment: a positive id, or `sha256-` and 64 hex digits.
pub fn comparison_id(segment: &str) -> Result<models::ComparisonRef, ApiError> {
    use crate::report::comparison::link::CHECKSUM_PREFIX;
    if let Some(hex) = segment.strip_prefix(CHECKSUM_PREFIX)
        && hex.len() == 64
        && hex
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return Ok(models::ComparisonRef::Checksum(segment.to_string()));
    }
    segment
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .map(models::ComparisonRef::Id)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no comparison `{segment}`: a comparison is a positive id or sha256-<64 hex digits>"
            ))
        })
}

/// Percent-encodes one path segment (everything but RFC 3986's unreserved characters).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON to embed in a `<script type="application/json">`: `<`, `>` and `&` become
/// `\u003c` etc. (still the same JSON to a parser), so `</script>` in a benchmark name
/// cannot end the element; U+2028/2029 are escaped for older parsers.
pub fn json_for_script<T: Serialize>(model: &T) -> String {
    let text = serde_json::to_string(model).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

const NAV: &str = r#"<nav><a href="/">Runs</a> · <a href="/comparisons">Comparisons</a> · <a href="/hardware">Hardware</a></nav>"#;

/// A whole page: the title, the navigation, the model as data and `body` (already escaped).
fn page<T: Serialize>(title: &str, model: &T, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · stackbench</title></head><body>{NAV}<main><h1>{title}</h1>{body}</main>\
         <script type=\"application/json\" id=\"page-data\">{data}</script></body></html>\n",
        title = escape_html(title),
        data = json_for_script(model),
    )
}

/// The page an error answers with.
pub fn error_page(status: u16, title: &str, reason: &str) -> String {
    let model = serde_json::json!({"page": "error", "status": status, "error": reason});
    page(
        &format!("{status} {title}"),
        &model,
        &format!("<p class=\"error\">{}</p>", escape_html(reason)),
    )
}

/// A table of `rows` (cells already escaped HTML) under `headers`.
fn table(headers: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", escape_html(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

fn link(url: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape_html(url), escape_html(text))
}

fn text(value: Option<&str>) -> String {
    escape_html(value.unwrap_or(""))
}

async fn runs_page(
    State(state): State<Shared>,
    query: Result<Query<RunFilter>, QueryRejection>,
) -> PageResult {
    let filter = api::filter_of(query)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::runs_model(&store, filter)).await?;
    let rows = model.runs.iter().map(|r| {
        vec![
            link(&r.url, &r.run.run_id),
            escape_html(&r.run.timestamp),
            text(r.run.label.as_deref()),
            text(r.run.git_revision.as_deref()),
            text(r.run.fingerprint.as_deref()),
            r.run.benchmarks.to_string(),
            r.run.failed.to_string(),
        ]
    });
    let headers = [
        "run",
        "time",
        "label",
        "revision",
        "hardware",
        "benchmarks",
        "failed",
    ];
    Ok(Html(page("Runs", &model, &table(&headers, rows))))
}

async fn run_page(State(state): State<Shared>, Path(id): Path<String>) -> PageResult {
    check_run_id(&id)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::run_model(&store, &id)).await?;
    let rows = model.run.benchmarks.iter().map(|b| {
        let url = model.history_urls.get(&b.id).cloned().unwrap_or_default();
        let median = b
            .estimates
            .as_ref()
            .and_then(|e| e.median.as_ref())
            .map(|m| crate::report::format_ns(m.point_estimate))
            .unwrap_or_default();
        vec![link(&url, &b.id), escape_html(&median)]
    });
    let title = format!("Run {}", model.run.run_id);
    Ok(Html(page(
        &title,
        &model,
        &table(&["benchmark", "median"], rows),
    )))
}

async fn history_page(State(state): State<Shared>, Path(bench_id): Path<String>) -> PageResult {
    let store = state.config.store.clone();
    let model = blocking(move || models::history_model(&store, &bench_id)).await?;
    let rows = model.groups.iter().flat_map(|g| {
        g.points.iter().map(move |p| {
            vec![
                escape_html(&g.hardware),
                link(&p.url, &p.point.run_id),
                escape_html(&p.point.timestamp),
                escape_html(&crate::report::format_ns(p.point.median_ns)),
            ]
        })
    });
    let title = format!("History of {}", model.benchmark);
    let headers = ["hardware", "run", "time", "median"];
    Ok(Html(page(&title, &model, &table(&headers, rows))))
}

async fn comparisons_page(State(state): State<Shared>) -> PageResult {
    let store = state.config.store.clone();
    let model = blocking(move || models::comparisons_model(&store)).await?;
    let rows = model.comparisons.iter().map(|c| {
        vec![
            link(&c.url, &c.comparison.id.to_string()),
            escape_html(&c.comparison.kind),
            escape_html(&c.comparison.baseline),
            escape_html(&c.comparison.candidate),
            escape_html(&c.comparison.verdict),
        ]
    });
    let headers = ["id", "kind", "baseline", "candidate", "verdict"];
    Ok(Html(page("Comparisons", &model, &table(&headers, rows))))
}

async fn comparison_page(State(state): State<Shared>, Path(id): Path<String>) -> PageResult {
    let id = comparison_id(&id)?;
    let store = state.config.store.clone();
    let model = blocking(move || models::comparison_model(&store, &id)).await?;
    let title = format!("Comparison {}", model.record.comparison.id);
    let empty = Vec::new();
    let rows = model
        .comparison
        .get("comparisons")
        .and_then(|v| v.as_array())
        .unwrap_or(&empty)
        .iter()
        .map(|row| {
            let field = |k: &str| match row.get(k) {
                Some(serde_json::Value::String(s)) => escape_html(s),
                Some(serde_json::Value::Null) | None => String::new(),
                Some(other) => escape_html(&other.to_string()),
            };
            vec![field("status"), field("id"), field("change_percent")]
        });
    let headers = ["status", "benchmark", "change %"];
    Ok(Html(page(&title, &model, &table(&headers, rows))))
}

async fn hardware_page(State(state): State<Shared>) -> PageResult {
    let store = state.config.store.clone();
    let model = blocking(move || models::hardware_model(&store)).await?;
    let body = format!(
        "<pre>{}</pre>",
        escape_html(&crate::report::hardware::render(
            &model.report,
            crate::report::hardware::HardwareFormat::Table
        ))
    );
    Ok(Html(page("Hardware", &model, &body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_cannot_leave_the_data_element_or_become_markup() {
        let model = serde_json::json!({"name": "</script><script>alert(1)</script>&"});
        let data = json_for_script(&model);
        assert!(!data.contains('<') && !data.contains('>') && !data.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(back, model);
        assert_eq!(
            escape_html("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
    }

    #[test]
    fn run_ids_are_checked_and_segments_encoded() {
        assert!(check_run_id("20261125T101500123Z-p42-1a2b").is_ok());
        for bad in ["", "../x", ".hidden", "a/b", "a b", "<script>"] {
            assert_eq!(check_run_id(bad).unwrap_err().status, 404, "{bad}");
        }
        assert_eq!(encode_segment("a b/<c>"), "a%20b%2F%3Cc%3E");
        assert_eq!(comparison_id("7").unwrap(), models::ComparisonRef::Id(7));
        let sum = format!("sha256-{}", "ab".repeat(32));
        assert_eq!(
            comparison_id(&sum).unwrap(),
            models::ComparisonRef::Checksum(sum.clone())
        );
        assert!(comparison_id("sha256-../x").is_err());
        assert!(comparison_id("0").is_err() && comparison_id("x").is_err());
    }
}
