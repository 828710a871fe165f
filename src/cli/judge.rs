//! The options the gate and bisect share: which benchmarks, how each is measured and judged,
//! the profiler, and Criterion's own flags. Declared once here and flattened into both
//! commands, so `analyze-trends gate` and `analyze-trends bisect` cannot drift apart on what
//! `--rounds`, `--threshold` or `--cpus` mean (each bisect step is a gate judgement).

use crate::gate::JudgeOptions;
use crate::harness::measure::Measure;
use clap::Args;

/// Criterion's timing per round when the caller passes none: 1 s warm-up and 1 s of
/// measurement, so four rounds of both sides cost about what one default Criterion run
/// (3 s + 5 s) of both sides costs.
pub const DEFAULT_CRITERION_ARGS: &[&str] = &["--warm-up-time", "1", "--measurement-time", "1"];

/// Which benchmarks run, how they are measured and judged, and what Criterion is told.
#[derive(Args, Debug, Clone)]
pub struct JudgeArgs {
    /// Bench targets to run (repeatable) [default: every bench target]
    #[arg(long = "bench", value_name = "TARGET")]
    pub benches: Vec<String>,
    /// Only benchmarks whose full id matches this regular expression (Criterion's filter)
    #[arg(long)]
    pub filter: Option<String>,
    /// What a benchmark's number is: `time` (Criterion's wall time over ABBA rounds) or
    /// `instructions` (counted once per side under Valgrind's callgrind, judged by a plain
    /// threshold, default 1 %; ids that cannot be counted are listed `not countable` and
    /// timed in rounds with the same threshold) [default: $STACKBENCH_MEASURE, else `[gate]
    /// measure` in stackbench.toml, else time]
    #[arg(long, value_name = "time|instructions", value_parser = parse_measure)]
    pub measure: Option<Measure>,
    /// Smallest slowdown, in percent, that counts as a regression [default:
    /// $STACKBENCH_GATE_THRESHOLD_PERCENT, else `[gate] threshold_percent` in stackbench.toml,
    /// else 5, or 1 with --measure instructions]
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Full rounds (each runs both sides, in ABBA order) [default: $STACKBENCH_GATE_ROUNDS,
    /// else `[gate] rounds` in stackbench.toml, else 4]
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Rounds in all, counting the extra ones that re-measure inconclusive benchmarks
    #[arg(long, default_value_t = 10)]
    pub max_rounds: usize,
    /// Run the bench executables pinned to these CPUs (`1`, `2-3`, `0,4-7`): give the
    /// measurement cores nothing else is scheduled on (docs/measurements/cpu-vm-tooling.md, "Gate quality on this machine")
    #[arg(long, value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Passed to every bench executable (Criterion's own flags) [default: --warm-up-time 1
    /// --measurement-time 1]
    #[arg(last = true, value_name = "CRITERION_ARGS")]
    pub criterion_args: Vec<String>,
}

impl JudgeArgs {
    /// The flags every bench executable gets: the caller's, else [`DEFAULT_CRITERION_ARGS`].
    fn criterion_args(&self) -> Vec<String> {
        if self.criterion_args.is_empty() {
            DEFAULT_CRITERION_ARGS
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            self.criterion_args.clone()
        }
    }

    /// The CPUs to pin to; empty when `--cpus` was not given.
    fn cpu_list(&self) -> Vec<usize> {
        self.cpus.as_ref().map(|c| c.0.clone()).unwrap_or_default()
    }

    /// The options as the gate takes them, with the measure, threshold and rounds each
    /// command resolved from the flag, the environment and the config.
    pub fn options(&self, measure: Measure, threshold_percent: f64, rounds: usize) -> JudgeOptions {
        JudgeOptions {
            measure,
            threshold_percent,
            rounds,
            max_rounds: self.max_rounds,
            filter: self.filter.clone(),
            benches: self.benches.clone(),
            cpus: self.cpu_list(),
            criterion_args: self.criterion_args(),
            profile: self.profile.settings(),
        }
    }
}

fn parse_measure(text: &str) -> Result<Measure, String> {
    text.parse::<Measure>().map_err(|e| e.to_string())
}

/// `--profile TOOL [--profile-time SECONDS]`, shared by the gate and bisect.
#[derive(Args, Debug, Clone)]
pub struct ProfileArgs {
    /// After the verdict, run each regressed or unsure benchmark again under this profiler
    /// on both sides (perf, nsys, ncu or rocprof) and write the profiles under --out's
    /// profiles/<side>/, linked from comparison.json and the comment. A profile that fails
    /// (profiler missing, perf_event_paranoid) is listed with its reason and changes no exit
    /// code
    #[arg(long, value_name = "perf|nsys|ncu|rocprof", value_parser = parse_profiler)]
    pub profile: Option<crate::harness::profile::Profiler>,
    /// Seconds each profiled benchmark runs (Criterion's --profile-time)
    #[arg(long, value_name = "SECONDS", requires = "profile",
          default_value_t = crate::harness::profile::DEFAULT_PROFILE_TIME_S,
          value_parser = parse_profile_time)]
    pub profile_time: u64,
}

impl ProfileArgs {
    pub fn settings(&self) -> Option<crate::harness::profile::ProfileSettings> {
        self.profile
            .map(|tool| crate::harness::profile::ProfileSettings {
                tool,
                seconds: self.profile_time,
            })
    }
}

fn parse_profiler(text: &str) -> Result<crate::harness::profile::Profiler, String> {
    text.parse()
        .map_err(|e: crate::harness::profile::UnknownProfiler| e.to_string())
}

fn parse_profile_time(text: &str) -> Result<u64, String> {
    crate::harness::profile::parse_seconds(text)
}

/// The value of `--cpus` (a newtype, so clap takes it as one value).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

fn parse_cpus(text: &str) -> Result<CpuList, String> {
    crate::gate::cpus::parse_cpu_list(text).map(CpuList)
}
