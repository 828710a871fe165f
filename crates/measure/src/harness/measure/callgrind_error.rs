//! What can be wrong with a Callgrind output file, for both of its readers: the totals
//! ([`super::callgrind_out`]) and each function's costs ([`super::callgrind_functions`]).
//! Below both, so neither imports the other for it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CallgrindFileError {
    #[error("cannot read Callgrind's output {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a Callgrind output file: it has no `events:` line")]
    NoEvents { path: PathBuf },
    #[error("{path} has no `totals:` or `summary:` line: Callgrind did not finish writing it")]
    NoTotals { path: PathBuf },
    #[error(
        "{path} does not record the event {event} (its events: {events}); counting mode runs \
         Callgrind with --cache-sim=yes"
    )]
    MissingEvent {
        path: PathBuf,
        event: &'static str,
        events: String,
    },
    #[error("{path}, line {line}: {why} (the line reads '{text}')")]
    Malformed {
        path: PathBuf,
        line: usize,
        text: String,
        why: String,
    },
    #[error("{path}, line {line}: '{text}' is not a count")]
    BadCount {
        path: PathBuf,
        line: usize,
        text: String,
    },
}
