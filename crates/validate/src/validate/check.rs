//! The constructors of installation checks (yes or no, or a verdict with a warning band),
//! shared by `installation` and `torch_cuda`: kept here, below both, so neither imports the
//! other for them.

use super::{Status, ThresholdCheck, ThresholdKind};
use serde_json::json;

/// A yes/no installation check: passed when `ok`, else failed.
pub fn yes_no(name: &str, expected: &str, actual: String, ok: bool) -> ThresholdCheck {
    let status = if ok { Status::Passed } else { Status::Failed };
    verdict(name, expected, actual, status)
}

/// An installation check with any status (a yes/no check, or one with a warning band).
pub fn verdict(name: &str, expected: &str, actual: String, status: Status) -> ThresholdCheck {
    ThresholdCheck {
        name: name.into(),
        benchmark: None,
        threshold_kind: ThresholdKind::Installation,
        expected: json!(expected),
        actual: json!(actual),
        unit: None,
        warning_at: None,
        failure_at: None,
        margin_percent: None,
        passed: status != Status::Failed,
        status,
        source: "installation check".into(),
        before: None,
        delta_percent: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_passes_and_a_no_fails() {
        let warned = verdict("w", "x", "y".into(), Status::Warning);
        assert!(warned.passed && warned.status == Status::Warning);
        let no = yes_no("n", "x", "y".into(), false);
        assert!(!no.passed && no.status == Status::Failed);
        assert_eq!(no.threshold_kind, ThresholdKind::Installation);
    }
}
