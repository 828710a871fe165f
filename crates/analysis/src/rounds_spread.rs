//! What the gate's time-mode rounds showed about their own spread, beside the verdict: the
//! benchmarks whose rounds disagreed so much that `--max-rounds` could not decide them (so
//! they were stopped early and called unsure, with the projection that said so), and the
//! start-up calibration's noise figure checked against the spread the rounds then showed.
//! The gate fills it (`src/gate/verdict.rs`, `src/gate/calibrate.rs`); every writer of a
//! comparison reads it, so the terminal and the comment give the same reasons.

use serde::{Deserialize, Serialize};

/// Sample standard deviation (n − 1) of per-round changes; `None` below two values. The
/// one definition of "the rounds disagree by sd X %" for the gate and its writers.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt())
}

/// The gate's time-mode rounds, as far as they explain an unsure verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoundsSpread {
    /// Benchmarks no longer measured because their rounds' spread projected more rounds
    /// than `--max-rounds` allow; by id.
    #[serde(default)]
    pub stopped: Vec<StoppedEarly>,
    /// The calibration's noise against the rounds' spread after round 2, when both exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_check: Option<CalibrationCheck>,
}

impl RoundsSpread {
    /// The early stop of `id`, if it was stopped.
    pub fn stopped(&self, id: &str) -> Option<&StoppedEarly> {
        self.stopped.iter().find(|s| s.id == id)
    }
}

/// One benchmark stopped early: its rounds so far and the projection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoppedEarly {
    pub id: String,
    /// Rounds both sides had measured when it was stopped.
    pub rounds: usize,
    /// Sample standard deviation of its per-round changes, in percent.
    pub round_sd_percent: f64,
    /// Rounds a decision at the threshold would need in all; `None`: more than
    /// the projection looks at (a million).
    pub rounds_needed: Option<usize>,
    pub max_rounds: usize,
    /// The projection in words, as the unsure section shows it.
    pub reason: String,
}

/// The start-up calibration's noise against what the rounds showed after round 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalibrationCheck {
    /// The round after which the rounds' spread was taken.
    pub after_round: usize,
    /// The calibration's noise figure (percent).
    pub calibration_noise_percent: f64,
    /// The median, over the benchmarks judged on both sides, of the standard deviation of
    /// each one's per-round changes (percent).
    pub round_sd_percent: f64,
    /// How many benchmarks that median is over.
    pub benchmarks: usize,
    /// `round_sd_percent / calibration_noise_percent`; `None` when the calibration saw no
    /// noise at all.
    pub ratio: Option<f64>,
    /// Said when the two differ by more than 2× (either way), with what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}
