//! What the gate's time-mode rounds showed about their own spread, beside the verdict: the
//! benchmarks whose rounds disagreed so much that `--max-rounds` could not decide them (so
//! they were stopped early and called unsure, with the projection that said so), and the
//! start-up calibration's noise figure checked against the spread the rounds then showed.
//! The gate fills it (`crates/gate/src/gate/verdict.rs`, `crates/gate/src/gate/calibrate.rs`); every writer of a
//! comparison reads it, so the terminal and the comment give the same reasons.

use serde::{Deserialize, Serialize};

/// Sample standard deviation (n − 1) of per-round changes; `None` below two values. The
/// one definition of "the rounds disagree by sd X %" for the gate and its writers.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    sample_variance(values).map(f64::sqrt)
}

/// Sample variance (n − 1) of per-round changes; `None` below two values. [`sample_sd`]
/// squared, without the round trip, for the gate's between-round variances.
pub fn sample_variance(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    Some(values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0))
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
    /// The between-round spread pooled across the benchmarks, which each one's own spread
    /// was moderated toward; absent with fewer than three benchmarks of two rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled: Option<PooledSpread>,
    /// The error rate the gate's repeated looks spend: present when `--max-rounds` leaves
    /// room for more than one look at an inconclusive benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialLooks>,
    /// Every round's load of other processes on each side, where the gate could read it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<RoundLoad>,
    /// Changes held as unsure because, in every round they were judged on, the side that
    /// looked slower had run beside more of other processes' work than the other side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_held: Vec<LoadHeld>,
}

/// What other processes took while each side of one round ran (`/proc/stat` less the
/// gate's own CPU time and its children's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RoundLoad {
    pub round: usize,
    /// Other processes' average load during the base's runs, in CPUs kept busy.
    pub base_foreign_cpus: f64,
    /// The same during the head's runs.
    pub head_foreign_cpus: f64,
    /// The CPUs counted: those of `--cpus`, or every online CPU.
    pub cpus: usize,
    /// The side whose runs shared the CPUs with more of other processes' work, when the
    /// difference is at least a quarter of the CPUs spare beside the benchmark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unbalanced_toward: Option<String>,
}

/// A change that followed other processes' load, not the code: `degraded` or `improved`
/// at its look, held as unsure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadHeld {
    pub id: String,
    /// The status the rounds alone would have given.
    pub would_be: String,
    /// The rounds it was judged on; in each, the slower-looking side had more load.
    pub rounds: Vec<usize>,
    /// The smallest excess of that side's load over the other's, over those rounds, in CPUs.
    pub excess_cpus: f64,
    /// The reason in words, as the unsure section shows it.
    pub reason: String,
}

/// The gate judges an inconclusive benchmark again after every extra round, and a test
/// repeated until it rejects rejects more often than its level (optional stopping). The
/// gate therefore splits the rule's error rate over its looks (docs/explanation/verdicts.md,
/// "Looking again"): half to the look after the planned `--rounds`, the other half shared
/// by the looks `--max-rounds` leaves room for. A change must be significant at its look's
/// own level to be `degraded` or `improved`; `unchanged` needs no spending (stopping for it
/// cannot raise the false-alarm rate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SequentialLooks {
    /// `--rounds`: the first look comes after them.
    pub planned_rounds: usize,
    /// `--max-rounds`: the last look.
    pub max_rounds: usize,
    /// The confidence a change needs at the first look (the rule's, with half its error).
    pub first_look_confidence: f64,
    /// The confidence a change needs at each later look.
    pub later_look_confidence: f64,
    /// Benchmarks whose change was significant at the rule's own confidence but not at
    /// their look's, and so stayed inconclusive.
    #[serde(default)]
    pub held: Vec<HeldChange>,
}

/// A change that was significant at the rule's confidence, not at its look's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeldChange {
    pub id: String,
    /// Rounds both sides had measured at that look.
    pub rounds: usize,
    /// The confidence the look needed.
    pub confidence: f64,
    /// The status the rule's own confidence would have given: `degraded` or `improved`.
    pub would_be: String,
}

/// The prior of the gate's moderated between-round variance (empirical Bayes, Smyth 2004;
/// docs/explanation/verdicts.md): the spread the machine gave every benchmark, and how much
/// it weighs against one benchmark's own rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PooledSpread {
    /// The prior standard deviation of one round's change, in percent.
    pub round_sd_percent: f64,
    /// The degrees of freedom the prior is worth; `None`: infinite (the benchmarks' spreads
    /// differ no more than sampling makes them, and every one takes the pooled spread).
    pub prior_df: Option<f64>,
    /// How many benchmarks (two rounds or more each) it was fitted from.
    pub benchmarks: usize,
}

impl RoundsSpread {
    /// The early stop of `id`, if it was stopped.
    pub fn stopped(&self, id: &str) -> Option<&StoppedEarly> {
        self.stopped.iter().find(|s| s.id == id)
    }

    /// The change of `id` held back because it followed other processes' load, if it was.
    pub fn load_held(&self, id: &str) -> Option<&LoadHeld> {
        self.load_held.iter().find(|h| h.id == id)
    }

    /// The change of `id` its look's level held back, if one was.
    pub fn held(&self, id: &str) -> Option<&HeldChange> {
        self.sequential.as_ref()?.held.iter().find(|h| h.id == id)
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
