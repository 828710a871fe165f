//! The entry to Callgrind's output file. The verdict needs the totals only, so this reads the
//! header's `events:` line (which names the columns) and the `totals:` lines (or, where a
//! writer left them out, `summary:`); the per-function costs that name the function that
//! changed are [`super::callgrind_functions`]' reading of the same text. Tolerant where the format varies (trailing
//! zero columns are omitted, several parts each carry their own totals), strict where a
//! number would be wrong (a missing event, a malformed count).

use super::CallgrindCounts;
use super::callgrind_functions::{FunctionCosts, parse_functions};
use std::collections::BTreeSet;
use std::path::Path;

/// The events counting mode reads, in the order of [`CallgrindCounts`]'s fields.
const EVENTS: [&str; 9] = [
    "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
];

pub use super::callgrind_error::CallgrindFileError;

/// What counting mode reads from one Callgrind output file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallgrindFile {
    pub totals: CallgrindCounts,
    /// The functions that have costs or calls in the file (while collection was on), as
    /// Callgrind demangled them.
    pub functions: BTreeSet<String>,
    /// Each function's instructions, self and inclusive (the gate names the functions that
    /// changed most with them), or why the body could not be read: the totals, and so the
    /// verdict, do not depend on it.
    pub function_costs: Result<FunctionCosts, String>,
}

/// Reads the Callgrind output file at `path`.
pub fn read_file(path: &Path) -> Result<CallgrindFile, CallgrindFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| CallgrindFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(CallgrindFile {
        totals: parse_totals(&text, path)?,
        functions: function_names(&text),
        function_costs: parse_functions(&text, path).map_err(|e| e.to_string()),
    })
}

/// Reads the totals of the Callgrind output file at `path`.
pub fn read_totals(path: &Path) -> Result<CallgrindCounts, CallgrindFileError> {
    read_file(path).map(|file| file.totals)
}

/// The function names of `fn=` and `cfn=` lines. With name compression (Callgrind's
/// default) a name is written once as `fn=(12) name` and later as `fn=(12)`; without it,
/// `fn=name`.
pub fn function_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            line.strip_prefix("fn=")
                .or_else(|| line.strip_prefix("cfn="))
        })
        .filter_map(|spec| {
            let name = match spec.strip_prefix('(') {
                Some(rest) => rest.split_once(')').map(|(_, name)| name)?,
                None => spec,
            };
            let name = name.trim();
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// Parses the totals out of Callgrind's output `text`; `path` only names it in errors.
pub fn parse_totals(text: &str, path: &Path) -> Result<CallgrindCounts, CallgrindFileError> {
    let mut events: Option<Vec<&str>> = None;
    let mut totals: Option<Vec<u64>> = None;
    let mut summary: Option<Vec<u64>> = None;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        if let Some(rest) = line.strip_prefix("events:") {
            events = Some(rest.split_whitespace().collect());
        } else if let Some(rest) = line.strip_prefix("totals:") {
            // One `totals:` per part; the parts' costs do not overlap, so they add up.
            let row = parse_row(rest, path, line_no)?;
            totals = Some(add_rows(totals.take().unwrap_or_default(), row));
        } else if let Some(rest) = line.strip_prefix("summary:") {
            summary = Some(parse_row(rest, path, line_no)?);
        }
    }
    let events = events.ok_or_else(|| CallgrindFileError::NoEvents {
        path: path.to_owned(),
    })?;
    let row = totals
        .or(summary)
        .ok_or_else(|| CallgrindFileError::NoTotals {
            path: path.to_owned(),
        })?;
    counts_from_row(&events, &row, path)
}

fn parse_row(rest: &str, path: &Path, line: usize) -> Result<Vec<u64>, CallgrindFileError> {
    rest.split_whitespace()
        .map(|field| {
            field
                .parse::<u64>()
                .map_err(|_| CallgrindFileError::BadCount {
                    path: path.to_owned(),
                    line,
                    text: field.to_owned(),
                })
        })
        .collect()
}

fn add_rows(mut sum: Vec<u64>, row: Vec<u64>) -> Vec<u64> {
    if sum.len() < row.len() {
        sum.resize(row.len(), 0);
    }
    for (total, value) in sum.iter_mut().zip(row) {
        *total = total.saturating_add(value);
    }
    sum
}

/// Maps a totals row onto the named events. Callgrind omits trailing zero columns, so a
/// short row is zero-padded; an event the header does not name at all is an error.
fn counts_from_row(
    events: &[&str],
    row: &[u64],
    path: &Path,
) -> Result<CallgrindCounts, CallgrindFileError> {
    let mut values = [0u64; EVENTS.len()];
    for (slot, event) in values.iter_mut().zip(EVENTS) {
        let column = events.iter().position(|e| *e == event).ok_or_else(|| {
            CallgrindFileError::MissingEvent {
                path: path.to_owned(),
                event,
                events: events.join(" "),
            }
        })?;
        *slot = row.get(column).copied().unwrap_or(0);
    }
    let [ir, dr, dw, i1mr, d1mr, d1mw, ilmr, dlmr, dlmw] = values;
    Ok(CallgrindCounts {
        ir,
        dr,
        dw,
        i1mr,
        d1mr,
        d1mw,
        ilmr,
        dlmr,
        dlmw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 2206\n\
        cmd:  ./work --bench --test sum\npart: 1\n\npositions: line\n\
        events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n";

    fn parse(text: &str) -> Result<CallgrindCounts, CallgrindFileError> {
        parse_totals(text, Path::new("callgrind.out.test"))
    }

    #[test]
    fn reads_a_real_files_totals_with_trailing_zero_columns_omitted() {
        let text = format!(
            "{HEADER}fl=(1) ???\nfn=(1520) criterion::bencher::Bencher<M>::iter\n0 10 2\n\n\
             summary: 100284 20079 20056 13 3 0 13\n\n\ntotals: 100284 20079 20056 13 3 0 13\n"
        );
        let counts = parse(&text).unwrap();
        assert_eq!(counts.ir, 100_284);
        assert_eq!((counts.dr, counts.dw), (20_079, 20_056));
        assert_eq!((counts.i1mr, counts.d1mr, counts.d1mw), (13, 3, 0));
        assert_eq!((counts.ilmr, counts.dlmr, counts.dlmw), (13, 0, 0));
    }

    #[test]
    fn events_are_found_by_name_not_by_position() {
        let text =
            "events: Dr Ir Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc\ntotals: 7 9 1 0 0 0 0 0 0 4\n";
        let counts = parse(text).unwrap();
        assert_eq!((counts.ir, counts.dr, counts.dw), (9, 7, 1));
    }

    #[test]
    fn several_parts_add_up_and_summary_is_the_fallback() {
        let parts = "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\ntotals: 10 1\ntotals: 5 2 3\n";
        assert_eq!(parse(parts).unwrap().ir, 15);
        assert_eq!(parse(parts).unwrap().dw, 3);
        let summary_only = "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 42\n";
        assert_eq!(parse(summary_only).unwrap().ir, 42);
    }

    #[test]
    fn a_zero_total_parses_as_zero_for_the_caller_to_judge() {
        let text = format!("{HEADER}totals: 0\n");
        assert_eq!(parse(&text).unwrap(), CallgrindCounts::default());
    }

    #[test]
    fn unhappy_paths_name_the_file_and_what_is_missing() {
        let missing = read_totals(Path::new("/nonexistent/callgrind.out")).unwrap_err();
        assert!(
            matches!(missing, CallgrindFileError::Read { .. }),
            "{missing}"
        );
        assert!(missing.to_string().contains("/nonexistent/callgrind.out"));

        let no_events = parse("totals: 5\n").unwrap_err();
        assert!(matches!(no_events, CallgrindFileError::NoEvents { .. }));

        let no_totals = parse(HEADER).unwrap_err();
        assert!(matches!(no_totals, CallgrindFileError::NoTotals { .. }));

        let no_cache = parse("events: Ir\ntotals: 5\n").unwrap_err().to_string();
        assert!(
            no_cache.contains("Dr") && no_cache.contains("--cache-sim=yes"),
            "{no_cache}"
        );

        let bad = parse("events: Ir Dr\ntotals: 5 x7\n")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("line 2") && bad.contains("'x7'"), "{bad}");
    }

    #[test]
    fn function_names_are_read_with_and_without_name_compression() {
        let text = "fn=(1) criterion::bencher::Bencher<M>::iter\n0 3\ncfn=(2) pthread_create@@GLIBC_2.34\n\
                    calls=1 0\n0 9\nfn=(1)\ncfn=(2)\nfn=plain::name\nfn=(3)\nfn=\n";
        let names: Vec<String> = function_names(text).into_iter().collect();
        assert_eq!(
            names,
            [
                "criterion::bencher::Bencher<M>::iter",
                "plain::name",
                "pthread_create@@GLIBC_2.34"
            ]
        );
    }

    #[test]
    fn empty_and_garbage_input_is_an_error_not_a_panic() {
        for text in ["", "\n\n", "events:\ntotals:\n", "\u{0}\u{1}garbage"] {
            let _ = parse(text);
        }
        assert!(parse("events:\ntotals:\n").is_err());
    }
}
