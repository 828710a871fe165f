//! `report.json`: the trend model as it is, plus the latest run's telemetry from the view
//! model, so a machine reader sees "not read" and its reason where a person does.

use crate::analysis::trends::TrendReport;
use crate::results::RunRecord;
use crate::view::telemetry::{QUANTITIES, Reading, RunTelemetry, run_telemetry};
use serde_json::{Map, Value, json};

pub fn render(report: &TrendReport, runs: &[RunRecord]) -> String {
    // Plain data with finite numbers; NaN becomes null through serde_json.
    let mut doc = match serde_json::to_value(report) {
        Ok(doc) => doc,
        Err(e) => return format!("{{\"error\": \"{e}\"}}\n"),
    };
    if let (Some(object), Some(latest)) = (doc.as_object_mut(), runs.last()) {
        object.insert("latest_run_telemetry".into(), telemetry(latest));
        object.insert("latest_run_accuracy".into(), accuracy(latest));
    }
    let mut text =
        serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// `{run_id, summary, benchmarks: [{id, accuracy}]}`: each benchmark's accuracy set as the
/// run recorded it; `summary` is the one line standing for a run that recorded none.
fn accuracy(run: &RunRecord) -> Value {
    let benchmarks: Vec<Value> = run
        .benchmarks
        .iter()
        .filter_map(|b| Some(json!({"id": b.id, "accuracy": b.accuracy.as_ref()?})))
        .collect();
    let summary = crate::view::model::accuracy_table(run).err();
    json!({"run_id": run.run_id, "summary": summary, "benchmarks": benchmarks})
}

/// `{run_id, summary, benchmarks: [{id, source, <quantity>: {read} | {not_read}}]}`:
/// `summary` is the one line that stands for a run with nothing to tabulate, else null.
fn telemetry(run: &RunRecord) -> Value {
    let view = run_telemetry(run);
    let benchmarks: Vec<Value> = view
        .rows()
        .iter()
        .map(|row| {
            let mut entry = Map::new();
            entry.insert("id".into(), json!(row.id));
            entry.insert("source".into(), json!(row.source));
            for (name, reading) in QUANTITIES.iter().zip(&row.readings) {
                let value = match reading {
                    Reading::Read(figure) => json!({ "read": figure }),
                    Reading::NotRead { reason } => json!({ "not_read": reason }),
                };
                entry.insert(name.replace('/', "_per_"), value);
            }
            Value::Object(entry)
        })
        .collect();
    let summary = match &view {
        RunTelemetry::Rows(_) => Value::Null,
        other => json!(other.one_line()),
    };
    json!({ "run_id": run.run_id, "summary": summary, "benchmarks": benchmarks })
}
