//! `analyze-trends gate`: the pull-request gate for any git repository whose crate has
//! Criterion (0.3.3 to 0.8.x, [`criterion_version`]) benches. Base and head are checked
//! out into worktrees under `target/`, built with `cargo bench --no-run` into separate
//! target directories, and measured on this machine in alternating rounds (ABBA…), each
//! saved as its own Criterion baseline. Each benchmark is judged on the round-to-round
//! differences ([`verdict`]); what is still inconclusive is measured again, alone, up to a budget.
//! A side can also be an environment (`--base-env`/`--head-env`) over the same checkout.

pub mod bisect;
mod build;
pub mod calibrate;
pub mod counting;
pub mod cpus;
pub mod criterion_version;
pub mod functions;
mod git;
mod hardware;
mod interrupt;
pub mod load;
mod output;
mod process;
pub mod profile;
mod progress;
mod reuse;
mod rounds;
pub mod sampled;
pub mod verdict;
pub mod writer;

pub use output::{ComparisonDocument, GateComparison, GateInfo, GateRounds, WrittenFiles};

use crate::analysis::VerdictRule;
use crate::harness::measure::Measure;
use rounds::{Collected, RoundSpec, SideRun};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Everything `analyze-trends gate` was asked to do.
#[derive(Clone, Debug)]
pub struct GateOptions {
    pub base: Option<String>,
    pub head: Option<String>,
    /// What is measured, how, and how it is judged.
    pub judge: JudgeOptions,
    pub out: PathBuf,
    pub results: PathBuf,
    /// Where both sides' runs are recorded: `None` is `<results>/stackbench.db`.
    pub store: Option<crate::results::db::StoreUrl>,
    pub base_env: Vec<(String, String)>,
    pub head_env: Vec<(String, String)>,
    /// A maintainer's acceptance of an unsure verdict (`--accept-unsure`); checked against
    /// the head commit before anything is built, recorded with the verdict.
    pub accept_unsure: Option<crate::results::AcceptedUnsure>,
    /// The `[accuracy]` rules of `stackbench.toml`: a head that lost accuracy fails.
    pub accuracy_rules: crate::config::AccuracyRules,
}

/// A filter matching exactly `ids` (Criterion filters by regular expression): what a
/// bisect step follows, and the ids counting mode times instead.
pub fn anchored(ids: &[String]) -> String {
    let escaped: Vec<String> = ids.iter().map(|id| regex::escape(id)).collect();
    format!("^(?:{})$", escaped.join("|"))
}

/// What the gate measures, how, and how it judges the change: the options `gate` and
/// `bisect` share, which bisect hands to the gate of every step as they were given.
/// bisect.json carries them (in this order), but for Criterion's flags and the profiler.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JudgeOptions {
    /// What a benchmark's number is: Criterion's wall time, or instructions counted under
    /// Callgrind (`--measure`, `STACKBENCH_MEASURE`).
    pub measure: crate::harness::measure::Measure,
    pub threshold_percent: f64,
    pub rounds: usize,
    pub max_rounds: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    pub benches: Vec<String>,
    /// CPUs the bench executables are pinned to (`--cpus`); empty: not pinned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    #[serde(skip)]
    pub criterion_args: Vec<String>,
    /// `--profile TOOL`: after the verdict, the regressed and unsure benchmarks are run
    /// again under the profiler on both sides ([`profile`]); `None`: no profiles.
    #[serde(skip)]
    pub profile: Option<crate::harness::profile::ProfileSettings>,
}

impl JudgeOptions {
    /// The first option that cannot be run as given, as the message naming its flag (bad
    /// input: refused before anything is built).
    pub fn check(&self) -> Result<(), String> {
        if self.rounds < 2 {
            return Err(format!(
                "--rounds must be at least 2 (the verdict needs round-to-round differences), not {}",
                self.rounds
            ));
        }
        if !self.cpus.is_empty() {
            cpus::check(&self.cpus)?;
        }
        if self.max_rounds < self.rounds {
            return Err(format!(
                "--max-rounds ({}) must be at least --rounds ({})",
                self.max_rounds, self.rounds
            ));
        }
        if !(self.threshold_percent.is_finite() && self.threshold_percent >= 0.0) {
            return Err(format!(
                "--threshold must be a non-negative number of percent, not {}",
                self.threshold_percent
            ));
        }
        if let Some(filter) = &self.filter {
            regex::Regex::new(filter).map_err(|e| {
                format!("--filter `{filter}` is not a valid regular expression: {e}")
            })?;
        }
        Ok(())
    }
}

/// Why a gate could not give a verdict. Every variant but `Interrupted` is bad input or a
/// broken side (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error("{dir} is not inside a git repository: {detail}")]
    NotARepo { dir: PathBuf, detail: String },
    #[error("no Cargo package at {dir}: {detail}")]
    NotACrate { dir: PathBuf, detail: String },
    #[error("revision `{rev}` does not exist: {detail}")]
    UnknownRev { rev: String, detail: String },
    #[error(
        "the {side} side ({rev}) does not build; the other side is untouched. cargo's last lines:\n{tail}"
    )]
    Build {
        side: String,
        rev: String,
        tail: String,
    },
    #[error(
        "bench target `{target}` exists on the {present} side only ({absent} has: {available})"
    )]
    TargetOnOneSide {
        target: String,
        present: String,
        absent: String,
        available: String,
    },
    #[error("bench target `{target}` exists on neither side; bench targets: {available}")]
    UnknownTarget { target: String, available: String },
    #[error("the crate has no bench target common to both sides (base: {base}; head: {head})")]
    NoBenchTargets { base: String, head: String },
    #[error("--out {path} is not writable: {detail}")]
    OutNotWritable { path: PathBuf, detail: String },
    /// A side's Criterion is one the gate cannot measure (or none): bad input, exit 2.
    #[error("the {side} side cannot be gated ({lock}): {detail}")]
    CriterionVersion {
        side: String,
        lock: PathBuf,
        detail: String,
    },
    #[error("{0}")]
    BadOption(String),
    #[error("git could not {action}: {detail}")]
    Git { action: String, detail: String },
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the Criterion output in {path}: {detail}")]
    Read { path: PathBuf, detail: String },
    #[error("cannot record a side's run: {0}")]
    Results(#[from] crate::results::ResultsError),
    /// The filter or the bench targets measured nothing: no verdict (bad input, exit 2).
    #[error(transparent)]
    NoEvidence(#[from] crate::analysis::NoEvidence),
    #[error("interrupted: worktrees removed; nothing was written to --out or --results")]
    Interrupted,
}

/// What the gate found and where it wrote it.
pub struct GateOutcome {
    pub comparison: GateComparison,
    pub written: WrittenFiles,
}

impl GateOutcome {
    /// Exit 1: a regression, or a benchmark measured in the base failed in the head.
    pub fn failed(&self) -> bool {
        self.comparison.comparison.regression_found()
    }
}

/// The working area of one gate run under the repository's `target/`.
struct Workspace {
    dir: PathBuf,
}

impl Workspace {
    fn side(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Where side `name` (`base`, `head`) is checked out when it names a commit.
    fn worktree(&self, name: &str) -> PathBuf {
        self.side(&format!("worktree-{name}"))
    }
}

/// Runs the whole gate. Installs a Ctrl-C handler for its duration.
pub fn run_gate(options: &GateOptions) -> Result<GateOutcome, GateError> {
    options.judge.check().map_err(GateError::BadOption)?;
    interrupt::install();
    let repo = git::Repo::discover(Path::new("."))?;
    output::check_writable(&options.out)?;
    let work = Workspace {
        dir: repo.root.join("target").join("stackbench-gate"),
    };
    let base_commit = options
        .base
        .as_deref()
        .map(|r| repo.resolve(r))
        .transpose()?;
    let head_commit = options
        .head
        .as_deref()
        .map(|r| repo.resolve(r))
        .transpose()?;
    if let Some(acceptance) = &options.accept_unsure {
        // Before any build: an acceptance for another push must not cost a gate run.
        let head = head_commit
            .clone()
            .or_else(|| crate::system::software::git_state(&repo.root).0);
        acceptance
            .bind(head.as_deref())
            .map_err(|e| GateError::BadOption(e.to_string()))?;
    }
    let measurements = work.dir.join("criterion");
    let _ = std::fs::remove_dir_all(&measurements);
    // Worktrees live until the end of this function, even on an error or Ctrl-C.
    let mut worktrees = Vec::new();
    let mut prepare = |name: &'static str,
                       rev: &Option<String>,
                       commit: &Option<String>,
                       env: &[(String, String)]| {
        let crate_dir = match commit {
            Some(c) => {
                let tree = repo.add_worktree(&work.worktree(name), c)?;
                let dir = tree.path.join(&repo.crate_prefix);
                worktrees.push(tree);
                dir
            }
            None => repo.crate_dir(),
        };
        Ok::<_, GateError>(SideRun {
            name,
            rev: rev.clone().unwrap_or_else(|| "current checkout".into()),
            commit: commit
                .clone()
                .or_else(|| crate::system::software::git_state(&repo.root).0),
            crate_dir,
            executables: Default::default(),
            env: env.to_vec(),
            criterion_root: measurements.join(name),
            logs: work.dir.join("logs"),
        })
    };
    let mut base = prepare("base", &options.base, &base_commit, &options.base_env)?;
    let mut head = prepare("head", &options.head, &head_commit, &options.head_env)?;
    // A committed lock is checked before the build (an unsupported Criterion costs nothing),
    // one cargo writes during the build after it.
    criterion_version::check_sides([&base, &head], criterion_version::Lock::IfPresent)?;
    let tree_of = |commit: &Option<String>| commit.as_deref().map(|c| repo.tree_of(c)).transpose();
    build_sides(
        &work,
        &mut base,
        &mut head,
        base_commit == head_commit && base_commit.is_none(),
        [tree_of(&base_commit)?, tree_of(&head_commit)?],
    )?;
    criterion_version::check_sides([&base, &head], criterion_version::Lock::Required)?;
    let targets = select_targets(&base, &head, &options.judge.benches)?;
    let rule = VerdictRule {
        threshold_percent: options.judge.threshold_percent,
        ..VerdictRule::default()
    };
    let sides = [&base, &head];
    let (mut collected, counted) = match options.judge.measure {
        Measure::Time => (measure(&sides, &targets, options, &rule)?, None),
        Measure::Instructions => {
            let (collected, counted) =
                counting::run(&sides, &targets, options, &rule, |t, o, r| {
                    measure(&sides, t, o, r)
                })?;
            (collected, Some(counted))
        }
    };
    hardware::fill_missing(&mut collected);
    let mut comparison = match counted.as_ref() {
        None => output::judge(&sides, &collected, options, &rule, &targets)?,
        counted => output::judge_with(&sides, &collected, options, &rule, &targets, counted)?,
    };
    if let Some(settings) = options.judge.profile {
        // Before the files are written (they link the profiles) and while the worktrees and
        // their executables still exist.
        let ids = profile::ids_to_profile(&comparison.comparison);
        let target_of = profile::targets(&collected, counted.as_ref());
        comparison.profiles =
            profile::profile_sides(settings, &sides, &ids, &target_of, &options.out);
        comparison.sampled_functions = sampled::from_profiles(
            &comparison.profiles,
            &functions::OwnCrate::at(&sides[1].crate_dir),
        );
    }
    let written = output::write_all(&mut comparison, &collected, &[&base, &head], options)?;
    drop(worktrees);
    Ok(GateOutcome {
        comparison,
        written,
    })
}

/// Builds both sides before anything is measured (a broken side must not cost a round).
/// Both sides on the current checkout share one build: same sources, same binaries. A side
/// checked out from a commit (`trees`: its git tree) whose target directory last built that
/// same tree gets that build back ([`reuse`]).
fn build_sides(
    work: &Workspace,
    base: &mut SideRun,
    head: &mut SideRun,
    same_checkout: bool,
    trees: [Option<String>; 2],
) -> Result<(), GateError> {
    for (side, tree) in [&mut *base, &mut *head].into_iter().zip(trees) {
        if same_checkout && side.name == "head" {
            break;
        }
        let target_dir = work.side(&format!(
            "target-{}",
            if same_checkout { "current" } else { side.name }
        ));
        let log = work
            .dir
            .join("logs")
            .join(format!("build-{}.log", side.name));
        let stamp_error = |e: std::io::Error| GateError::Io {
            path: target_dir.clone(),
            source: e,
        };
        if let Some(tree) = &tree
            && let Some(stamp) = reuse::read(&target_dir).filter(|s| &s.tree == tree)
        {
            match reuse::backdate(&work.worktree(side.name), stamp.started) {
                Ok(_) => eprintln!(
                    "analyze-trends gate: the {} side is the tree its last build was of ({}): \
                     cargo reuses that build",
                    side.name,
                    &tree[..12]
                ),
                // Only a slower build: the content is the tree that was built.
                Err(e) => eprintln!(
                    "analyze-trends gate: the {} side's last build cannot be reused ({e}): \
                     building it again",
                    side.name
                ),
            }
        }
        if tree.is_some() {
            std::fs::create_dir_all(&target_dir).map_err(stamp_error)?;
            reuse::forget(&target_dir).map_err(stamp_error)?;
        }
        let started = std::time::SystemTime::now();
        side.executables = build::build_benches(&build::BuildSpec {
            side: side.name,
            rev: &side.rev,
            crate_dir: &side.crate_dir,
            target_dir: &target_dir,
            env: &side.env,
            log: &log,
        })?;
        if let Some(tree) = tree {
            reuse::remember(&target_dir, &reuse::Stamp { tree, started }).map_err(stamp_error)?;
        }
    }
    if same_checkout {
        head.executables = base.executables.clone();
    }
    Ok(())
}

/// The bench targets to run: `--bench` names must exist on both sides; without them, every
/// target both sides have (one present on one side only is reported by the comparison as
/// new or missing benchmarks, since none of its ids exist on the other side).
fn select_targets(
    base: &SideRun,
    head: &SideRun,
    wanted: &[String],
) -> Result<Vec<String>, GateError> {
    let names = |s: &SideRun| s.executables.keys().cloned().collect::<BTreeSet<_>>();
    let (b, h) = (names(base), names(head));
    let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
    for target in wanted {
        match (b.contains(target), h.contains(target)) {
            (true, true) => {}
            (false, false) => {
                return Err(GateError::UnknownTarget {
                    target: target.clone(),
                    available: list(&b.union(&h).cloned().collect()),
                });
            }
            (present_base, _) => {
                let (present, absent, available) = if present_base {
                    ("base", "head", list(&h))
                } else {
                    ("head", "base", list(&b))
                };
                return Err(GateError::TargetOnOneSide {
                    target: target.clone(),
                    present: present.into(),
                    absent: absent.into(),
                    available,
                });
            }
        }
    }
    let chosen: Vec<String> = if wanted.is_empty() {
        b.union(&h).cloned().collect()
    } else {
        wanted.to_vec()
    };
    if chosen.is_empty() {
        return Err(GateError::NoBenchTargets {
            base: list(&b),
            head: list(&h),
        });
    }
    Ok(chosen)
}

/// The rounds, after the calibration: `--rounds` full ones in ABBA order, then extra rounds
/// of only the inconclusive benchmarks until they are decided or `--max-rounds` is reached
/// (a `below floor` benchmark is never inconclusive: [`output::inconclusive_ids`]). After
/// every round from the second, a benchmark whose rounds show that `--max-rounds` cannot
/// decide it is stopped there (left out of every later round, full or extra) and the
/// calibration is checked against the rounds' spread after round 2 ([`output::after_round`]).
fn measure(
    sides: &[&SideRun; 2],
    targets: &[String],
    options: &GateOptions,
    rule: &VerdictRule,
) -> Result<Collected, GateError> {
    let mut collected = Collected {
        calibration: Some(calibrate::before_rounds(options)),
        looks: Some(verdict::Looks {
            planned_rounds: options.judge.rounds,
            max_rounds: options.judge.max_rounds,
        }),
        ..Collected::default()
    };
    let progress = progress::Progress::new((options.judge.rounds * 2 * targets.len()) as u64);
    let full: Vec<(String, Option<String>)> = targets
        .iter()
        .map(|t| (t.clone(), options.judge.filter.clone()))
        .collect();
    for round in 1..=options.judge.rounds {
        let plan = without_stopped(&collected, &full);
        if plan.is_empty() {
            break;
        }
        run_round(sides, round, &plan, options, &progress, &mut collected)?;
        for line in output::after_round(&mut collected, rule, round, options.judge.max_rounds) {
            progress.note(&line);
        }
    }
    for round in options.judge.rounds + 1..=options.judge.max_rounds {
        let unsure = output::inconclusive_ids(&collected, rule);
        if unsure.is_empty() {
            break;
        }
        let plan = rerun_plan(&collected, &unsure);
        progress.note(&format!(
            "analyze-trends gate: {} inconclusive benchmark(s), measuring them again (round {round} of at most {})",
            unsure.len(),
            options.judge.max_rounds
        ));
        progress.plan_more((plan.len() * 2) as u64);
        run_round(sides, round, &plan, options, &progress, &mut collected)?;
        for line in output::after_round(&mut collected, rule, round, options.judge.max_rounds) {
            progress.note(&line);
        }
    }
    progress.finish();
    Ok(collected)
}

/// A full round's plan without the stopped benchmarks: a target with none keeps the
/// user's filter; one with some measures exactly its other known ids (anchored, as
/// [`rerun_plan`] does: Criterion's regex filter has no negation), and is left out when
/// nothing of it is left.
fn without_stopped(
    collected: &Collected,
    full: &[(String, Option<String>)],
) -> Vec<(String, Option<String>)> {
    let stopped_in = |target: &str| {
        collected
            .stopped
            .keys()
            .any(|id| collected.target_of.get(id).is_some_and(|t| t == target))
    };
    let mut plan = Vec::new();
    for (target, filter) in full {
        if !stopped_in(target) {
            plan.push((target.clone(), filter.clone()));
            continue;
        }
        let rest: Vec<String> = collected
            .target_of
            .iter()
            .filter(|(id, t)| *t == target && !collected.stopped.contains_key(*id))
            .map(|(id, _)| id.clone())
            .collect();
        plan.extend(rerun_plan(collected, &rest));
    }
    plan
}

/// Per target, an anchored filter of exactly the ids to measure again.
fn rerun_plan(collected: &Collected, ids: &[String]) -> Vec<(String, Option<String>)> {
    let mut by_target: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for id in ids {
        if let Some(target) = collected.target_of.get(id) {
            by_target.entry(target).or_default().push(regex::escape(id));
        }
    }
    by_target
        .into_iter()
        .map(|(t, ids)| (t.to_string(), Some(format!("^(?:{})$", ids.join("|")))))
        .collect()
}

fn run_round(
    sides: &[&SideRun; 2],
    round: usize,
    plan: &[(String, Option<String>)],
    options: &GateOptions,
    progress: &progress::Progress,
    collected: &mut Collected,
) -> Result<(), GateError> {
    let order: [usize; 2] = if verdict::base_first(round) {
        [0, 1]
    } else {
        [1, 0]
    };
    let order_text = if order[0] == 0 {
        "base, head"
    } else {
        "head, base"
    };
    progress.round_start(round, order_text);
    for index in order {
        for (target, filter) in plan {
            progress.side(sides[index].name, target);
            let spec = RoundSpec {
                round,
                target,
                filter: filter.as_deref(),
                criterion_args: &options.judge.criterion_args,
                cpus: &options.judge.cpus,
            };
            rounds::run_target(sides[index], index, &spec, progress, collected)?;
            progress.step_done();
        }
    }
    let measured = collected
        .per_round
        .values()
        .filter(|sides| sides[1].contains_key(&round))
        .count();
    progress.round_done(round, order_text, measured);
    Ok(())
}
