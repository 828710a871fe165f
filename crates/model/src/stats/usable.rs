//! Which samples a statistic may be taken of: the one sample rule of the evidence rule
//! (ARCHITECTURE.md, "Verdicts stand on evidence"). Every path that reads samples applies
//! it: the Criterion reader, `record` and `import` (through the run record), `compare`,
//! the gate, `validate`, `history` (through the store's median) and `show`.
//!
//! It sits here, on the floor of the statistics it protects, so that the Criterion reader
//! below the run record and the verdicts above it call the same function: every statistic
//! downstream takes logs of per-iteration times, so each must be finite and positive, and
//! one bad sample spoils the set (a statistic over the rest would judge a different
//! measurement than the one that was taken).

use serde::{Deserialize, Serialize};
use std::fmt;

/// How every failure for unusable samples starts, so summaries can count them apart from
/// the harness's own errors.
pub const UNUSABLE_SAMPLES: &str = "no usable samples";

/// Why a benchmark's samples cannot carry a verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SampleDefect {
    /// No samples at all.
    Empty,
    /// Iteration counts and times are not in pairs.
    Unpaired { iters: usize, times: usize },
    /// An iteration count that is not a positive, finite number.
    BadIterations {
        index: usize,
        #[serde(deserialize_with = "number_or_nan")]
        #[schemars(with = "Option<f64>")]
        iters: f64,
    },
    /// Every sample time is 0: the timer never advanced (a no-op, or a broken measurement).
    AllZero { samples: usize },
    /// A sample time below zero.
    Negative {
        index: usize,
        #[serde(deserialize_with = "number_or_nan")]
        #[schemars(with = "Option<f64>")]
        value_ns: f64,
    },
    /// One sample time of 0 among others.
    Zero { index: usize },
    /// NaN or infinite.
    NonFinite { index: usize },
    /// Time and iteration count are usable, but their quotient is not a positive, finite
    /// time (it overflows or underflows).
    PerIteration {
        index: usize,
        #[serde(deserialize_with = "number_or_nan")]
        #[schemars(with = "Option<f64>")]
        value_ns: f64,
    },
    /// Only a summary was kept (the history store's median) and it is not a positive,
    /// finite time: the samples behind it were unusable.
    BadMedian {
        #[serde(deserialize_with = "number_or_nan")]
        #[schemars(with = "Option<f64>")]
        median_ns: f64,
    },
    /// A reader below already failed these samples by this rule (the Criterion reader,
    /// `record`, `import`, the store): `reason` is its words, kept in the run record.
    Recorded { reason: String },
    /// The file holding the samples could not be read, or its reader refused the samples
    /// (`reason` says which, in the reader's words).
    Unreadable { path: String, reason: String },
}

/// A defect's number as JSON wrote it: serde_json writes NaN and infinities as `null`, and
/// those are exactly the numbers a defect reports, so a stored defect reads back as NaN.
fn number_or_nan<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

impl fmt::Display for SampleDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleDefect::Empty => write!(f, "no samples"),
            SampleDefect::Unpaired { iters, times } => {
                write!(f, "{iters} iteration counts but {times} times")
            }
            SampleDefect::BadIterations { index, iters } => {
                write!(f, "sample {index}: iteration count {iters} is not positive")
            }
            SampleDefect::AllZero { samples } => {
                write!(f, "all {samples} sample times are 0 (nothing was timed)")
            }
            SampleDefect::Negative { index, value_ns } => write!(
                f,
                "sample {index}: time {value_ns} ns is not a positive number (negative)"
            ),
            SampleDefect::Zero { index } => {
                write!(f, "sample {index}: time 0 ns is not a positive number")
            }
            SampleDefect::NonFinite { index } => {
                write!(f, "sample {index} is not a finite number (NaN or infinite)")
            }
            SampleDefect::PerIteration { index, value_ns } if value_ns.is_finite() => write!(
                f,
                "sample {index}: the per-iteration time ({value_ns} ns) is not positive"
            ),
            SampleDefect::PerIteration { index, .. } => {
                write!(f, "sample {index}: the per-iteration time is not finite")
            }
            SampleDefect::BadMedian { median_ns } => {
                write!(f, "its median ({median_ns} ns) is not a positive time")
            }
            SampleDefect::Recorded { reason } => write!(f, "{reason}"),
            SampleDefect::Unreadable { path, reason } => write!(f, "{reason} ({path})"),
        }
    }
}

/// The rule for one benchmark's samples as Criterion keeps them (per sample, an iteration
/// count and the total time of those iterations, in ns): the number of usable samples, or
/// the first defect.
pub fn usable_timed(iters: &[f64], times_ns: &[f64]) -> Result<usize, SampleDefect> {
    if iters.len() != times_ns.len() {
        return Err(SampleDefect::Unpaired {
            iters: iters.len(),
            times: times_ns.len(),
        });
    }
    usable_samples(times_ns)?;
    for (index, (&n, &t)) in iters.iter().zip(times_ns).enumerate() {
        if !(n.is_finite() && n > 0.0) {
            return Err(SampleDefect::BadIterations { index, iters: n });
        }
        let per_iteration = t / n;
        if !(per_iteration.is_finite() && per_iteration > 0.0) {
            return Err(SampleDefect::PerIteration {
                index,
                value_ns: per_iteration,
            });
        }
    }
    Ok(times_ns.len())
}

/// The rule for a list of times in ns (per sample or per iteration): the number of usable
/// samples, or the first defect.
pub fn usable_samples(times_ns: &[f64]) -> Result<usize, SampleDefect> {
    if times_ns.is_empty() {
        return Err(SampleDefect::Empty);
    }
    if times_ns.iter().all(|t| *t == 0.0) {
        return Err(SampleDefect::AllZero {
            samples: times_ns.len(),
        });
    }
    for (index, &t) in times_ns.iter().enumerate() {
        if !t.is_finite() {
            return Err(SampleDefect::NonFinite { index });
        }
        if t < 0.0 {
            return Err(SampleDefect::Negative { index, value_ns: t });
        }
        if t == 0.0 {
            return Err(SampleDefect::Zero { index });
        }
    }
    Ok(times_ns.len())
}

/// The rule where only a median of `samples` samples was kept (the history store): usable
/// when there were samples and the median is a positive, finite time.
pub fn usable_median(median_ns: f64, samples: usize) -> Result<usize, SampleDefect> {
    if samples == 0 {
        return Err(SampleDefect::Empty);
    }
    if !(median_ns.is_finite() && median_ns > 0.0) {
        return Err(SampleDefect::BadMedian { median_ns });
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_defect_whose_number_json_wrote_as_null_reads_back_as_nan() {
        let defect = SampleDefect::PerIteration {
            index: 3,
            value_ns: f64::INFINITY,
        };
        let text = serde_json::to_string(&defect).expect("a defect serialises");
        assert!(text.contains("null"), "{text}");
        match serde_json::from_str::<SampleDefect>(&text).expect("and reads back") {
            SampleDefect::PerIteration { index, value_ns } => {
                assert_eq!(index, 3);
                assert!(value_ns.is_nan());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_defect_is_named() {
        assert_eq!(usable_samples(&[]), Err(SampleDefect::Empty));
        assert_eq!(
            usable_samples(&[0.0, 0.0]),
            Err(SampleDefect::AllZero { samples: 2 })
        );
        assert_eq!(
            usable_samples(&[1.0, -2.0]),
            Err(SampleDefect::Negative {
                index: 1,
                value_ns: -2.0
            })
        );
        assert_eq!(
            usable_samples(&[1.0, 0.0]),
            Err(SampleDefect::Zero { index: 1 })
        );
        assert_eq!(
            usable_samples(&[f64::NAN]),
            Err(SampleDefect::NonFinite { index: 0 })
        );
        assert_eq!(
            usable_samples(&[1.0, f64::INFINITY]),
            Err(SampleDefect::NonFinite { index: 1 })
        );
        assert_eq!(usable_samples(&[1.0, 2.0, 3.0]), Ok(3));
    }

    #[test]
    fn pairs_of_counts_and_times_follow_the_same_rule() {
        assert_eq!(
            usable_timed(&[1.0], &[1.0, 2.0]),
            Err(SampleDefect::Unpaired { iters: 1, times: 2 })
        );
        assert!(
            usable_timed(&[1.0], &[1.0, 2.0])
                .unwrap_err()
                .to_string()
                .contains("1 iteration")
        );
        assert_eq!(usable_timed(&[], &[]), Err(SampleDefect::Empty));
        assert_eq!(
            usable_timed(&[1.0], &[f64::NAN]),
            Err(SampleDefect::NonFinite { index: 0 })
        );
        assert!(usable_timed(&[1.0], &[0.0]).is_err());
        assert!(matches!(
            usable_timed(&[1.0], &[-3.0]),
            Err(SampleDefect::Negative { .. })
        ));
        assert_eq!(
            usable_timed(&[0.0], &[3.0]),
            Err(SampleDefect::BadIterations {
                index: 0,
                iters: 0.0
            })
        );
        let overflow = usable_timed(&[1e-300, 1.0], &[1e300, 2.0]).unwrap_err();
        assert!(overflow.to_string().contains("not finite"), "{overflow}");
        assert_eq!(usable_timed(&[2.0], &[3.0]), Ok(1));
    }

    #[test]
    fn a_median_alone_is_judged_by_its_sign_and_count() {
        assert_eq!(usable_median(5.0, 10), Ok(10));
        assert_eq!(usable_median(5.0, 0), Err(SampleDefect::Empty));
        assert!(
            usable_median(f64::NAN, 3)
                .unwrap_err()
                .to_string()
                .contains("not a positive time")
        );
    }
}
