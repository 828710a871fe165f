//! One step of the search: the gate's own judgement ([`crate::gate::run_gate`]) of one
//! commit against `--good`, with the gate's rounds and its re-measurement of the unsure up
//! to `--max-rounds`, and what that judgement means for the search. Only the benchmarks the
//! search follows count: a step is `regressed` when one of them is degraded, `clean` when
//! each is unchanged or improved, `unsure` when the gate could not decide one, and
//! `skipped` when the commit did not build or one of them was not measured there.

use super::history::Commit;
use super::{BisectError, BisectOptions};
use crate::analysis::{Comparison, Status, UnmeasuredStatus};
use crate::gate::functions::FunctionChange;
use crate::gate::{GateError, GateOptions, JudgeOptions, anchored, run_gate};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// What the gate's judgement of one step means for the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepVerdict {
    Regressed,
    Clean,
    Unsure,
    Skipped,
}

impl StepVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            StepVerdict::Regressed => "regressed",
            StepVerdict::Clean => "clean",
            StepVerdict::Unsure => "unsure",
            StepVerdict::Skipped => "skipped",
        }
    }
}

/// One followed benchmark at one step, as the gate judged it against `--good`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Effect {
    pub id: String,
    /// The gate's status (`degraded`, `unchanged`, ...), or `failed`/`missing`/`new` when it
    /// has no row.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95_percent: Option<[f64; 2]>,
    /// Counting mode, when the gate found it regressed or improved: the functions whose
    /// inclusive instructions per call changed most, the crate's own first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionChange>,
}

/// One probed commit.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    #[serde(flatten)]
    pub commit: Commit,
    /// Its place on the first-parent line: 1 is the child of `--good`, the last is `--bad`.
    pub position: usize,
    pub verdict: StepVerdict,
    /// Why a step is unsure or skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub effects: Vec<Effect>,
    /// Rounds the gate ran (0 when nothing was measured).
    pub rounds_run: usize,
    pub seconds: f64,
    /// The gate's comparison.json and comparison.md of this step, when it wrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<PathBuf>,
    /// `--profile`: the step's regressed and unsure benchmarks profiled on both sides (the
    /// files are under `out`'s `profiles/`), or why each profile is missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<crate::harness::profile::ProfileRecord>,
}

/// Which benchmarks a step looks at: at `--bad`, everything the user's filter matches (to
/// learn what regressed); afterwards, exactly the ids that regressed at `--bad`.
pub enum Follow<'a> {
    Everything,
    Ids(&'a [String]),
}

/// The gate's options for `commit` against `--good`, writing into its own step directory.
fn gate_options(
    options: &BisectOptions,
    good: &Commit,
    commit: &Commit,
    follow: &Follow<'_>,
    out: PathBuf,
) -> GateOptions {
    let filter = match follow {
        Follow::Everything => options.judge.filter.clone(),
        Follow::Ids(ids) => Some(anchored(ids)),
    };
    GateOptions {
        base: Some(good.commit.clone()),
        head: Some(commit.commit.clone()),
        judge: JudgeOptions {
            filter,
            ..options.judge.clone()
        },
        out,
        results: options.out.join("results"),
        // A step's runs are scratch: they stay in the bisect's own directory, never in a
        // shared store.
        store: None,
        base_env: Vec::new(),
        head_env: Vec::new(),
        // An unsure step is skipped and named, never accepted.
        accept_unsure: None,
        // Bisect follows speed: a step is judged on time (or counts) alone.
        accuracy_rules: Default::default(),
    }
}

/// Runs the gate for `commit` (at `position`) against `good`. An error that makes this one
/// commit unjudgeable (its build, a bench target or the followed benchmarks absent there)
/// is a skipped step; anything else (git, the disk, `--good` itself not building, Ctrl-C)
/// ends the bisect.
pub fn probe(
    options: &BisectOptions,
    good: &Commit,
    commit: &Commit,
    position: usize,
    follow: &Follow<'_>,
) -> Result<(Step, Option<Comparison>), BisectError> {
    let started = Instant::now();
    let out = options
        .out
        .join("steps")
        .join(format!("{position:02}-{}", commit.short()));
    let gate = gate_options(options, good, commit, follow, out.clone());
    let mut step = Step {
        commit: commit.clone(),
        position,
        verdict: StepVerdict::Skipped,
        reason: None,
        effects: Vec::new(),
        rounds_run: 0,
        seconds: 0.0,
        out: None,
        profiles: Vec::new(),
    };
    let comparison = match run_gate(&gate) {
        Ok(outcome) => {
            step.rounds_run = outcome.comparison.gate.rounds_run;
            step.out = Some(out);
            step.profiles = outcome.comparison.profiles.clone();
            let ids = match follow {
                Follow::Everything => judged_ids(&outcome.comparison.comparison),
                Follow::Ids(ids) => ids.to_vec(),
            };
            let judged = judge(&outcome.comparison.comparison, &ids, step.rounds_run);
            (step.verdict, step.reason, step.effects) = judged;
            if let Some(counting) = &outcome.comparison.counting {
                attach_functions(&mut step.effects, counting);
            }
            Some(outcome.comparison.comparison)
        }
        Err(error) => {
            step.reason = Some(skip_reason(error, good, commit, follow)?);
            None
        }
    };
    step.seconds = started.elapsed().as_secs_f64();
    Ok((step, comparison))
}

/// Each effect's changed functions, from counting mode's row of the same benchmark.
fn attach_functions(effects: &mut [Effect], counting: &crate::gate::counting::CountingReport) {
    for effect in effects {
        if let Some(row) = counting.benchmarks.iter().find(|r| r.id == effect.id) {
            effect.functions.clone_from(&row.functions);
        }
    }
}

/// Why a gate error only skips this commit, or the error that ends the bisect. At `--bad`
/// (followed: everything) nothing is skipped: a bad that does not build, or a filter that
/// matches nothing there, leaves nothing to search.
fn skip_reason(
    error: GateError,
    good: &Commit,
    commit: &Commit,
    follow: &Follow<'_>,
) -> Result<String, BisectError> {
    let at_bad = matches!(follow, Follow::Everything);
    match error {
        GateError::Build { side, tail, .. } if side == "head" && at_bad => {
            Err(BisectError::BadDoesNotBuild {
                bad: commit.clone(),
                tail,
            })
        }
        GateError::Build { side, tail, .. } if side == "head" => {
            // The compiler's first error says why; cargo's closing "could not compile" only
            // that it failed.
            let errors = || {
                tail.lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("error"))
            };
            let first = errors()
                .find(|l| !l.starts_with("error: could not compile"))
                .or_else(|| errors().next())
                .or_else(|| tail.lines().last())
                .unwrap_or("");
            Ok(format!("does not build: {first}"))
        }
        GateError::Build { tail, .. } => Err(BisectError::GoodDoesNotBuild {
            good: good.clone(),
            tail,
        }),
        e @ (GateError::TargetOnOneSide { .. } | GateError::NoEvidence(_)) if !at_bad => Ok(
            format!("the followed benchmarks cannot be measured here: {e}"),
        ),
        other => Err(other.into()),
    }
}

/// Every id the gate judged, and every one that failed in the head (a benchmark only
/// added or removed between the two is neither).
fn judged_ids(comparison: &Comparison) -> Vec<String> {
    let failed = comparison
        .unmeasured
        .iter()
        .filter(|u| u.status == UnmeasuredStatus::Failed)
        .map(|u| u.id.clone());
    comparison
        .comparisons
        .iter()
        .map(|row| row.id.clone())
        .chain(failed)
        .collect()
}

/// The ids the gate found degraded.
pub fn degraded_ids(comparison: &Comparison) -> Vec<String> {
    comparison
        .comparisons
        .iter()
        .filter(|row| row.status == Status::Degraded)
        .map(|row| row.id.clone())
        .collect()
}

/// The step's verdict over the followed `ids`, why when it is not regressed or clean, and
/// each id's effect.
pub fn judge(
    comparison: &Comparison,
    ids: &[String],
    rounds_run: usize,
) -> (StepVerdict, Option<String>, Vec<Effect>) {
    let mut effects = Vec::new();
    let (mut regressed, mut unsure, mut unmeasured) = (false, Vec::new(), Vec::new());
    for id in ids {
        if let Some(row) = comparison.comparisons.iter().find(|r| &r.id == id) {
            match row.status {
                Status::Degraded => regressed = true,
                Status::Unchanged | Status::Improved => {}
                // Any status that is no verdict on the number (inconclusive, and any added
                // later) leaves the step unsure: the search never guesses.
                other => unsure.push(format!(
                    "`{id}` is {} after {rounds_run} round(s){}",
                    other.as_str(),
                    interval_text(row.ci95_percent)
                )),
            }
            effects.push(Effect {
                id: id.clone(),
                status: row.status.as_str().to_string(),
                change_percent: row.change_percent,
                ci95_percent: row.ci95_percent,
                functions: Vec::new(),
            });
            continue;
        }
        let missing = comparison.unmeasured.iter().find(|u| &u.id == id);
        let status = missing.map_or("missing", |u| u.status.as_str());
        let error = missing.and_then(|u| u.error.as_deref());
        unmeasured.push(match error {
            Some(e) => format!("`{id}` is {status}: {e}"),
            None => format!("`{id}` is {status} in this commit"),
        });
        effects.push(Effect {
            id: id.clone(),
            status: status.to_string(),
            change_percent: None,
            ci95_percent: None,
            functions: Vec::new(),
        });
    }
    let verdict = if regressed {
        (StepVerdict::Regressed, None)
    } else if !unmeasured.is_empty() {
        (StepVerdict::Skipped, Some(unmeasured.join("; ")))
    } else if !unsure.is_empty() {
        (StepVerdict::Unsure, Some(unsure.join("; ")))
    } else {
        (StepVerdict::Clean, None)
    };
    (verdict.0, verdict.1, effects)
}

fn interval_text(ci: Option<[f64; 2]>) -> String {
    ci.map_or(String::new(), |[lo, hi]| {
        format!(" (95 % interval {lo:+.1} % to {hi:+.1} %)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{BenchComparison, HardwareCheck, Judgement, Unmeasured, VerdictRule};

    #[test]
    fn every_step_asks_its_gate_for_the_profile_and_writes_it_under_its_own_out() {
        use crate::harness::profile::{ProfileSettings, Profiler};
        let settings = ProfileSettings {
            tool: Profiler::Perf,
            seconds: 2,
        };
        let judge = JudgeOptions {
            benches: Vec::new(),
            filter: None,
            measure: crate::harness::measure::Measure::Time,
            threshold_percent: 5.0,
            rounds: 2,
            max_rounds: 4,
            criterion_args: Vec::new(),
            cpus: Vec::new(),
            profile: Some(settings),
        };
        let options = BisectOptions {
            good: "good".into(),
            bad: "bad".into(),
            judge: judge.clone(),
            out: PathBuf::from("bisect-out"),
        };
        let commit = |c: &str| Commit {
            commit: c.into(),
            subject: c.into(),
        };
        let step_out = PathBuf::from("bisect-out/steps/03-abc");
        let ids = ["sum".to_string()];
        let gate = gate_options(
            &options,
            &commit("good"),
            &commit("abc"),
            &Follow::Ids(&ids),
            step_out.clone(),
        );
        assert_eq!(gate.judge.profile, Some(settings));
        assert_eq!(gate.out, step_out);
        let none = BisectOptions {
            judge: JudgeOptions {
                profile: None,
                ..judge
            },
            ..options
        };
        let gate = gate_options(
            &none,
            &commit("good"),
            &commit("abc"),
            &Follow::Everything,
            step_out,
        );
        assert_eq!(gate.judge.profile, None);
    }

    fn row(id: &str, status: Status, change: f64) -> BenchComparison {
        BenchComparison {
            id: id.into(),
            baseline_ns: 100.0,
            candidate_ns: 100.0 * (1.0 + change / 100.0),
            change_percent: Some(change),
            ci95_percent: Some([change - 30.0, change + 30.0]),
            p_value: Some(0.5),
            q_value: Some(0.5),
            relative_change_percent: None,
            status,
            samples: [30, 30],
            noise_floor_percent: None,
            note: None,
            throughput: None,
        }
    }

    /// The gate's comparison of one step: `sum` as given, `xor` unchanged, `gone` failed.
    fn comparison(sum: Status, change: f64) -> Comparison {
        Judgement {
            accuracy: Vec::new(),
            accuracy_unmatched: Vec::new(),
            baseline: "base good".into(),
            candidate: "head step".into(),
            rule: VerdictRule::default(),
            hardware: HardwareCheck::default(),
            rows: vec![row("sum", sum, change), row("xor", Status::Unchanged, 1.0)],
            unmeasured: vec![Unmeasured {
                id: "gone".into(),
                status: UnmeasuredStatus::Failed,
                error: Some("injected failure".into()),
            }],
            skipped: Vec::new(),
            systemic: None,
            unusable: Vec::new(),
        }
        .into_comparison(|| "test".into())
        .unwrap()
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_followed_degraded_benchmark_makes_the_step_regressed() {
        let c = comparison(Status::Degraded, 200.0);
        let (verdict, reason, effects) = judge(&c, &ids(&["sum"]), 4);
        assert_eq!((verdict, reason), (StepVerdict::Regressed, None));
        assert_eq!(effects.len(), 1);
        assert_eq!(effects[0].status, "degraded");
        assert_eq!(effects[0].change_percent, Some(200.0));
        assert_eq!(degraded_ids(&c), ["sum"]);
        // Only followed benchmarks count: the same step judged on `xor` alone is clean.
        let (verdict, ..) = judge(&c, &ids(&["xor"]), 4);
        assert_eq!(verdict, StepVerdict::Clean);
    }

    #[test]
    fn an_inconclusive_benchmark_makes_the_step_unsure_saying_why() {
        let c = comparison(Status::Inconclusive, 12.0);
        let (verdict, reason, _) = judge(&c, &ids(&["sum", "xor"]), 10);
        assert_eq!(verdict, StepVerdict::Unsure);
        let reason = reason.unwrap();
        assert!(
            reason.contains("`sum` is inconclusive after 10 round(s)"),
            "{reason}"
        );
        assert!(reason.contains("-18.0 % to +42.0 %"), "{reason}");
    }

    #[test]
    fn a_followed_benchmark_failed_or_absent_skips_the_step_naming_it() {
        let c = comparison(Status::Unchanged, 0.0);
        let (verdict, reason, effects) = judge(&c, &ids(&["sum", "gone", "never"]), 4);
        assert_eq!(verdict, StepVerdict::Skipped);
        let reason = reason.unwrap();
        assert!(
            reason.contains("`gone` is failed: injected failure"),
            "{reason}"
        );
        assert!(
            reason.contains("`never` is missing in this commit"),
            "{reason}"
        );
        assert_eq!(effects.len(), 3);
        // At --bad everything judged is looked at, failures included.
        let mut judged = judged_ids(&c);
        judged.sort();
        assert_eq!(judged, ["gone", "sum", "xor"]);
    }

    #[test]
    fn unchanged_and_improved_are_clean() {
        let c = comparison(Status::Improved, -30.0);
        let (verdict, reason, _) = judge(&c, &ids(&["sum", "xor"]), 4);
        assert_eq!((verdict, reason), (StepVerdict::Clean, None));
    }

    #[test]
    fn the_filter_of_later_steps_matches_exactly_the_followed_ids() {
        let filter = anchored(&ids(&["gemm/f32/1024", "a+b"]));
        let re = regex::Regex::new(&filter).unwrap();
        assert!(re.is_match("gemm/f32/1024") && re.is_match("a+b"));
        assert!(!re.is_match("gemm/f32/10240") && !re.is_match("aab"));
    }
}
