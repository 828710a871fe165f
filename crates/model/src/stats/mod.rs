//! Statistics: robust summaries, significance tests, confidence intervals, trend fits and
//! change points. Pure functions over slices, property-tested.
//!
//! Written here rather than taken from a crate: statrs (already a dependency, used for the
//! normal distribution) has no Hodges-Lehmann estimator, no Moses interval, no
//! Benjamini-Hochberg, no trigamma nor empirical-Bayes variance moderation and no
//! change-point detection, and the gate needs these fast enough
//! for 10,000 benchmarks.

mod changepoint;
mod fdr;
mod moderated;
mod rank;
mod summary;
mod usable;

pub use changepoint::{
    ChangePoint, MAX_SERIES as MAX_CHANGEPOINT_SERIES, detect_change_points, theil_sen_slope,
};
pub use fdr::benjamini_hochberg;
pub use moderated::{MIN_VARIANCES_FOR_PRIOR, VariancePrior, fit_variance_prior, trigamma};
pub use rank::{ShiftEstimate, TwoSample, hodges_lehmann_shift, mann_whitney_p};
pub use summary::{mad, median, median_of_sorted, quantile};
pub use usable::{SampleDefect, UNUSABLE_SAMPLES, usable_median, usable_samples, usable_timed};
