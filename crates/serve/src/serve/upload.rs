//! Writes: `POST /api/runs` (a run file exactly as `analyze-trends record` writes it) and
//! `POST /api/comparisons` (a `comparison.json` as `compare` or the gate writes it).
//!
//! Every check that can refuse a write runs before anything is stored, in the order that
//! costs the server least: the token (before the body is read), the content type, the
//! declared length, then the body itself. A run is read by the same function that reads
//! run files ([`load_run`]), so an upload is accepted exactly when `import` of the same
//! file would be, and it goes in as one transaction: nothing is stored on any 4xx.

use super::error::{ApiError, blocking};
use super::models::{comparison_url, find_by_checksum, run_url};
use super::security::authorize;
use super::{Shared, params};
use crate::report::comparison::link::{canonical_json, comparison_checksum};
use crate::results::db::Inserted;
use crate::results::{ComparisonRecord, DbError, ResultsError, RunRecord, RunStore, load_run};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Mutex;

type Answer = Result<(StatusCode, Json<Value>), ApiError>;

/// `POST /api/runs`: 201 when the run is new, 200 when the store already held it (the same
/// id and fingerprint: a retried upload is one run), 409 when the id is taken by a run of
/// other hardware.
pub async fn upload_run(State(state): State<Shared>, request: Request) -> Answer {
    let body = checked_body(&state, request).await?;
    let store = state.config.store.clone();
    blocking(move || store_run(&store, &body)).await
}

/// The body of an authorised JSON write within the size limit.
async fn checked_body(state: &Shared, request: Request) -> Result<Bytes, ApiError> {
    let config = &state.config;
    authorize(config.write_token.as_ref(), request.headers())?;
    check_json_content_type(request.headers())?;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the upload is larger than this server's limit of {} bytes (--max-upload-bytes)",
                config.max_upload_bytes
            ),
        )
    };
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > config.max_upload_bytes as u64) {
        // Refused before a byte of the body is read.
        return Err(too_large());
    }
    match Bytes::from_request(request, state).await {
        Ok(bytes) => Ok(bytes),
        Err(BytesRejection::FailedToBufferBody(
            axum::extract::rejection::FailedToBufferBody::LengthLimitError(_),
        )) => Err(too_large()),
        Err(e) => Err(ApiError::bad_request(format!(
            "cannot read the request body: {}",
            e.body_text()
        ))),
    }
}

/// 415 unless the body is declared JSON (`application/json`, parameters allowed).
fn check_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    match declared.as_deref() {
        Some("application/json") => Ok(()),
        Some(other) => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the upload must be `Content-Type: application/json`, not `{other}`"),
        )),
        None => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the upload has no Content-Type: send `Content-Type: application/json`",
        )),
    }
}

/// Reads the run as `import` reads a run file: through a private temporary file and
/// [`load_run`], so its schema check and sample check are the ones every run passes.
fn parse_run(body: &[u8]) -> Result<RunRecord, ApiError> {
    let bad = |reason: String| ApiError::bad_request(format!("not a valid run file: {reason}"));
    let dir = tempfile::tempdir()
        .map_err(|e| ApiError::internal(format!("cannot stage the upload: {e}")))?;
    let file = dir.path().join("upload.json");
    std::fs::write(&file, body)
        .map_err(|e| ApiError::internal(format!("cannot stage the upload: {e}")))?;
    let run = match load_run(&file) {
        Ok(run) => run,
        Err(ResultsError::Invalid { reason, .. }) => return Err(bad(reason)),
        Err(ResultsError::FutureSchema { schema, .. }) => {
            return Err(bad(format!(
                "run schema `{schema}` is newer than this server understands (stackbench.run.v{}); upgrade the server",
                crate::results::RUN_SCHEMA_VERSION
            )));
        }
        Err(e) => return Err(ApiError::internal(format!("cannot read the upload: {e}"))),
    };
    if let Some(problem) = params::run_id_problem(&run.run_id) {
        return Err(bad(format!("run id `{}`: {problem}", run.run_id)));
    }
    if run.benchmarks.is_empty() && run.failed.is_empty() {
        // As `import` refuses it: a run that measured nothing is no evidence of anything.
        return Err(bad(format!(
            "run {} measured nothing (no benchmark with usable samples, no failure, {} skipped)",
            run.run_id,
            run.skipped.len()
        )));
    }
    Ok(run)
}

fn store_run(store: &RunStore, body: &[u8]) -> Answer {
    let run = parse_run(body)?;
    let mut db = store.database()?;
    let answer = |status: StatusCode, stored: &str| {
        let body = json!({"run_id": run.run_id, "stored": stored, "url": run_url(&run.run_id)});
        Ok((status, Json(body)))
    };
    match db.insert_run(&run) {
        Ok(Inserted::New) => answer(StatusCode::CREATED, "new"),
        Ok(Inserted::AlreadyPresent) => answer(StatusCode::OK, "already present"),
        Err(e @ DbError::Conflict { .. }) => {
            Err(ApiError::new(StatusCode::CONFLICT, e.to_string()))
        }
        Err(e) => Err(ResultsError::from(e).into()),
    }
}

/// `POST /api/comparisons`: 201 with the new id, or 200 with the id of the comparison
/// already stored with the same content (a retried upload is one comparison).
pub async fn upload_comparison(State(state): State<Shared>, request: Request) -> Answer {
    let body = checked_body(&state, request).await?;
    let store = state.config.store.clone();
    blocking(move || store_comparison(&store, &body)).await
}

/// The parts of `comparison.json` the store keeps as columns; the whole document is kept
/// as the comparison's detail.
#[derive(Deserialize)]
struct ComparisonDoc {
    schema: String,
    baseline: String,
    candidate: String,
    threshold_percent: f64,
    hardware: HardwareDoc,
    comparisons: Vec<RowDoc>,
    summary: SummaryDoc,
    #[serde(default)]
    accepted_unsure: Option<Value>,
    #[serde(default)]
    gate: Option<Value>,
}

#[derive(Deserialize)]
struct HardwareDoc {
    #[serde(default)]
    candidate_fingerprint: Option<String>,
}

#[derive(Deserialize)]
struct RowDoc {
    status: String,
}

#[derive(Deserialize)]
struct SummaryDoc {
    #[serde(default)]
    total_improved: u64,
    #[serde(default)]
    total_degraded: u64,
    #[serde(default)]
    total_unchanged: u64,
    #[serde(default)]
    total_inconclusive: u64,
    overall_status: String,
}

const COMPARISON_SCHEMA: &str = "stackbench.comparison.v1";

/// One lock around "is this content stored? if not, store it": two concurrent uploads of
/// the same comparison to this server make one comparison.
static COMPARISON_WRITES: Mutex<()> = Mutex::new(());

/// The verdict as `compare` and the gate store it (see `comparison_record`).
fn verdict_of(doc: &ComparisonDoc) -> &'static str {
    let inconclusive = doc.comparisons.iter().any(|r| r.status == "inconclusive");
    let all_below_floor =
        !doc.comparisons.is_empty() && doc.comparisons.iter().all(|r| r.status == "below floor");
    if doc.summary.overall_status == "critical" {
        "regression"
    } else if (inconclusive || all_below_floor) && doc.accepted_unsure.is_some() {
        "unsure, accepted"
    } else if inconclusive || all_below_floor {
        "unsure"
    } else {
        "clean"
    }
}

fn parse_comparison(body: &[u8]) -> Result<(ComparisonDoc, String, String), ApiError> {
    let bad =
        |reason: String| ApiError::bad_request(format!("not a valid comparison.json: {reason}"));
    let value: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON: {e}")))?;
    let doc: ComparisonDoc =
        serde_json::from_value(value.clone()).map_err(|e| bad(format!("unexpected shape: {e}")))?;
    if doc.schema != COMPARISON_SCHEMA {
        return Err(bad(format!(
            "schema `{}` is not {COMPARISON_SCHEMA}",
            doc.schema
        )));
    }
    if !(doc.threshold_percent.is_finite() && doc.threshold_percent >= 0.0) {
        return Err(bad("threshold_percent must be a non-negative number".into()));
    }
    // Compact, keys sorted: the same comparison uploaded twice is the same text, whatever
    // whitespace its file had, and its digest is the checksum the PR comment links to.
    Ok((doc, canonical_json(&value), comparison_checksum(&value)))
}

fn store_comparison(store: &RunStore, body: &[u8]) -> Answer {
    let (doc, canonical, checksum) = parse_comparison(body)?;
    let _guard = COMPARISON_WRITES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let answer = |status: StatusCode, id: i64, stored: &str| {
        let body = json!({
            "comparison_id": id,
            "checksum": checksum,
            "stored": stored,
            "url": comparison_url(id),
        });
        Ok((status, Json(body)))
    };
    if let Some(existing) = find_by_checksum(store, &checksum)? {
        return answer(StatusCode::OK, existing.id, "already present");
    }
    let db = store.database()?;
    let stored_run = |name: &str| -> Result<Option<String>, ApiError> {
        let held = db.has_run(name).map_err(ResultsError::from)?;
        Ok(held.then(|| name.to_string()))
    };
    let record = ComparisonRecord {
        id: 0,
        created_unix_ms: crate::results::now_unix_ms(),
        kind: if doc.gate.is_some() {
            "gate"
        } else {
            "compare"
        }
        .into(),
        baseline_run_id: stored_run(&doc.baseline)?,
        candidate_run_id: stored_run(&doc.candidate)?,
        baseline: doc.baseline.clone(),
        candidate: doc.candidate.clone(),
        fingerprint: doc.hardware.candidate_fingerprint.clone(),
        threshold_percent: doc.threshold_percent,
        verdict: verdict_of(&doc).into(),
        degraded: doc.summary.total_degraded,
        improved: doc.summary.total_improved,
        unchanged: doc.summary.total_unchanged,
        inconclusive: doc.summary.total_inconclusive,
        detail_json: canonical,
    };
    let id = store.record_comparison(&record)?;
    answer(StatusCode::CREATED, id, "new")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(statuses: &[&str], overall: &str, accepted: bool) -> ComparisonDoc {
        let rows: Vec<Value> = statuses.iter().map(|s| json!({"status": s})).collect();
        let mut value = json!({
            "schema": COMPARISON_SCHEMA, "baseline": "a", "candidate": "b",
            "threshold_percent": 5.0, "hardware": {"different": false},
            "comparisons": rows, "summary": {"overall_status": overall},
        });
        if accepted {
            value["accepted_unsure"] = json!({"by_label": null, "sha": "abcdef1"});
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_uploaded_verdict_is_stored_as_compare_and_the_gate_store_theirs() {
        assert_eq!(
            verdict_of(&doc(&["degraded"], "critical", false)),
            "regression"
        );
        assert_eq!(
            verdict_of(&doc(&["inconclusive"], "warning", false)),
            "unsure"
        );
        assert_eq!(
            verdict_of(&doc(&["inconclusive"], "warning", true)),
            "unsure, accepted"
        );
        // Rows all below the timer floor decided nothing: unsure, never a pass.
        assert_eq!(
            verdict_of(&doc(&["below floor"], "healthy", false)),
            "unsure"
        );
        assert_eq!(
            verdict_of(&doc(&["unchanged", "below floor"], "healthy", false)),
            "clean"
        );
    }
}
