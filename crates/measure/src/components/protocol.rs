//! The JSON-lines protocol between the runner and a component worker. One request per
//! line on the worker's stdin, one response per line on its protocol channel (the worker
//! moves that channel off fd 1 before importing anything, so a library that prints cannot
//! corrupt it; the runner still tolerates stray lines).
//!
//! Requests carry an increasing `id`; the response to it repeats the id and has either
//! `"ok": true` with a `result`, or `"ok": false` with an `error` message and a `kind`
//! (`error`, `skip` for "cannot run here", `mismatch` for a wrong result).
//!
//! | op | request fields | result |
//! |---|---|---|
//! | `describe` | – | [`Description`] |
//! | `setup` | `benchmark`, `parameters` | facts about the built benchmark (JSON object) |
//! | `verify` | – | `{}` once the output matched the reference |
//! | `run` | `iters` | [`RunResult`] |
//! | `teardown` | – | `{}` |
//! | `shutdown` | – | `{}`, then the worker exits |

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the runner asks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    Describe,
    Setup {
        benchmark: String,
        parameters: String,
    },
    Verify,
    Run {
        iters: u64,
    },
    Teardown,
    Shutdown,
}

impl Op {
    /// The op's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Describe => "describe",
            Op::Setup { .. } => "setup",
            Op::Verify => "verify",
            Op::Run { .. } => "run",
            Op::Teardown => "teardown",
            Op::Shutdown => "shutdown",
        }
    }
}

/// One request line.
#[derive(Clone, Debug, Serialize)]
pub struct Request {
    pub id: u64,
    #[serde(flatten)]
    pub op: Op,
}

/// Why a call did not succeed, as the worker classifies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureKind {
    /// Something broke: a bug, a library error.
    #[default]
    Error,
    /// The benchmark cannot run here (missing device, backend or package).
    Skip,
    /// It ran and its output disagreed with the reference.
    Mismatch,
}

/// One response line. Unknown fields are ignored so newer workers stay readable.
#[derive(Clone, Debug, Deserialize)]
pub struct Response {
    pub id: u64,
    pub ok: bool,
    #[serde(default)]
    pub result: serde_json::Value,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub kind: FailureKind,
}

/// Parses one line from the worker: `None` when it is not a protocol response (a library
/// printed to the channel), so the caller can log it and read on.
pub fn parse_response(line: &str) -> Option<Response> {
    let trimmed = line.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    serde_json::from_str(trimmed).ok()
}

/// `describe`'s result.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Description {
    pub component: String,
    pub available: bool,
    /// Why the component cannot run here, when `available` is false.
    #[serde(default)]
    pub reason: Option<String>,
    /// `cpu`, `cuda` or `rocm`: where the component's benchmarks run.
    #[serde(default = "default_device")]
    pub device: String,
    /// Package versions, device names and the like, copied into every benchmark's notes.
    #[serde(default)]
    pub facts: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub benchmarks: Vec<BenchmarkSpec>,
}

fn default_device() -> String {
    "cpu".into()
}

/// One benchmark a worker offers.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct BenchmarkSpec {
    /// Criterion's function id, e.g. `matmul`.
    pub benchmark: String,
    /// Criterion's value, e.g. `f32_1024x1024x1024`.
    pub parameters: String,
    #[serde(default)]
    pub throughput: Option<ThroughputSpec>,
    /// Set when this benchmark cannot run here, with the reason.
    #[serde(default)]
    pub skip: Option<String>,
}

/// Work per call, so Criterion prints a rate (FLOP/s as elements/s, tokens/s, bytes/s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThroughputSpec {
    Elements(u64),
    Bytes(u64),
}

/// `run`'s result.
#[derive(Clone, Debug, Deserialize)]
pub struct RunResult {
    /// Total for all `iters` calls, measured inside the worker with device synchronisation.
    pub elapsed_ns: u64,
    #[serde(default)]
    pub iters: Option<u64>,
    /// Extra metrics: latency percentiles, tokens/s, peak memory (see the component docs).
    #[serde(default)]
    pub metrics: BTreeMap<String, serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_flat_json_lines() {
        let line = serde_json::to_string(&Request {
            id: 7,
            op: Op::Setup {
                benchmark: "matmul".into(),
                parameters: "f32_256".into(),
            },
        })
        .unwrap();
        assert_eq!(
            line,
            r#"{"id":7,"op":"setup","benchmark":"matmul","parameters":"f32_256"}"#
        );
        let run = serde_json::to_string(&Request {
            id: 8,
            op: Op::Run { iters: 3 },
        })
        .unwrap();
        assert_eq!(run, r#"{"id":8,"op":"run","iters":3}"#);
    }

    #[test]
    fn stray_lines_are_not_responses() {
        assert!(parse_response("hello from a library").is_none());
        assert!(parse_response("{not json").is_none());
        assert!(parse_response(r#"{"no_id": true}"#).is_none());
        let r = parse_response(r#"{"id":3,"ok":false,"error":"no GPU","kind":"skip"}"#).unwrap();
        assert_eq!((r.id, r.ok, r.kind), (3, false, FailureKind::Skip));
        assert_eq!(r.error.as_deref(), Some("no GPU"));
    }
}
