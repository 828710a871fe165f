//! Counts one Criterion benchmark id of an unchanged bench executable under Callgrind.
//!
//! Criterion picks iteration counts from wall time, so counting a whole benchmarking process
//! would count whatever the clock decided. Its `--test` mode does not: `Routine::test` runs
//! the routine through `bench(m, &[1], …)`, one iteration (Criterion 0.3.0 to 0.8.2, read in
//! their sources). The timing entry points `Bencher::iter`, `iter_custom`, `iter_batched` and
//! `iter_batched_ref` are `#[inline(never)]` (0.3.4 onwards: `criterion::bencher::Bencher`), so
//! Callgrind can switch collection on at their entry and off at their exit
//! (`--collect-atstart=no --toggle-collect=…`): only the measured routine and the few
//! instructions of Criterion's loop around it are counted, whatever the machine is doing.
//!
//! Three things the toggles decide, each checked on real builds (Criterion 0.3.5, 0.5.1 and
//! 0.8.2, Valgrind 3.19):
//! - The toggles name the functions as Callgrind demangles them. Legacy mangling (rustc's
//!   default): `criterion::bencher::Bencher<M>::iter`, matched exactly. Callgrind 3.19 honours
//!   only the first of several wildcard patterns that share the text before their `*`, so
//!   `…Bencher<*>::iter` beside `…Bencher<*>::iter_custom` silently counts nothing for
//!   `iter_custom`. v0 mangling (`-C symbol-mangling-version=v0`) names each instance with its
//!   closure, `<criterion::bencher::Bencher>::iter::<work::benches::{closure#0}>`: matched by
//!   `<criterion::bencher::Bencher>::iter::<*`, one prefix per method (a custom `Measurement`
//!   under v0 is not matched and gives the "nothing was counted" error).
//! - No toggled function calls another: `iter_with_setup` and `iter_with_large_drop` call
//!   `iter_batched` and are not toggled (a toggle on both would switch collection off inside).
//! - `iter_batched` and `iter_batched_ref` run the setup inside the toggled function, so their
//!   count includes one setup call and one drop of its output. Deterministic, so a change in
//!   the routine still shows, diluted by the setup's share.
//!
//! Collection state is per thread in Callgrind: work a routine hands to other threads (a
//! rayon pool, stackbench's own CPU pool) is not counted. Measured: a routine that spawns a
//! thread summing 20 000 numbers counts 6 315 instructions, the same as one summing 1 000.
//! Such a routine starts, wakes or waits for the other threads while counted, so the counter
//! refuses it as not countable when one of [`OTHER_THREAD_MARKERS`] was counted. Callgrind's
//! `--dump-before`/`--dump-after` on the same functions would count every thread (112 889
//! instructions for that routine, ±94 over three runs), but Callgrind 3.19 applies them
//! unreliably when several patterns name overlapping functions (`--dump-after` never fired
//! with `…Bencher<M>::iter*`; with exact names only some of the four fired), so they are not
//! used. Instead the counter sets `STACKBENCH_MEASURE=instructions` in the bench process's
//! environment: stackbench's own bench targets then run their CPU pool and rayon work on the
//! calling thread (`crate::harness::counting`), so their CPU ids are countable.

use super::callgrind_out::{self, CallgrindFileError};
use super::{CostModel, Countability, CountedBenchmark};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::str::FromStr;

/// The panic Criterion raises (every supported version) when a benchmark's closure never
/// calls one of `Bencher`'s timing methods.
const NO_ITER_PANIC: &str = "must call Bencher::iter";

/// Parts of function names whose presence among the counted ones shows the routine
/// starting, waking or waiting for other threads: their work is not counted, so the count
/// would be wrong. A single-threaded routine calls none of them (an uncontended lock does not
/// touch a futex or a condition variable). Seen on real runs: a spawned thread
/// (`pthread_create`, `clone3`, `__futex_abstimed_wait_common` in the join), and stackbench's
/// own CPU pool (`<std::sys::sync::condvar::futex::Condvar>::wait`,
/// `<std::sync::poison::condvar::Condvar>::notify_all`); rayon waits on a condition variable
/// too when called from outside its pool.
/// Both demangled forms appear: std is built with v0 mangling (`<…::Condvar>::wait`), a crate
/// with rustc's default legacy one (`…::Condvar::wait`).
const OTHER_THREAD_MARKERS: [&str; 11] = [
    "pthread_create",
    "clone3",
    "futex_wait",
    "futex_wake",
    "futex_abstimed_wait",
    "pthread_cond_",
    "Condvar>::wait",
    "Condvar>::notify",
    "Condvar::wait",
    "Condvar::notify",
    "thread::park",
];

/// Iterations of the routine in one count: Criterion's `--test` mode runs it once (see the
/// module's first paragraph), so a count, and every function's cost in it, is per call.
/// Per-call figures divide by it, so they stay per call if that ever changes.
pub const ITERATIONS_COUNTED: u64 = 1;

/// Lines of the bench's stderr kept in an error.
const STDERR_TAIL_LINES: usize = 20;

/// Fixed cache geometry for the simulation (32 KiB 8-way L1s, 8 MiB 16-way LL, 64-byte
/// lines). Valgrind otherwise copies the host's caches, so the miss counts and the estimated
/// cycles of the same code would differ between two machines (and Valgrind rewrites some hosts'
/// geometry it cannot simulate, with a warning on every run).
const CACHE_GEOMETRY: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

/// Criterion's `Bencher` timing methods that run the routine, each `#[inline(never)]`.
const TIMING_METHODS: [&str; 4] = ["iter", "iter_custom", "iter_batched", "iter_batched_ref"];

/// `Bencher`'s impl as v0 mangling demangles it (the default `WallTime` measurement elided).
const V0_BENCHER: &str = "<criterion::bencher::Bencher>";

/// The name the bench executable runs under, in a fresh temporary directory: one path length
/// for every executable. Rust copies `argv[0]` (and Criterion its output directory) to the
/// heap before the routine runs, so their lengths shift the heap's layout and with it the
/// instructions of a routine that allocates: up to 204 instructions on a 16 k-instruction
/// routine, measured (BENCHMARKS.md, "Counting mode").
const BENCH_LINK: &str = "bench";

#[derive(Debug, thiserror::Error)]
pub enum CountError {
    #[error(
        "valgrind was not found ({program}): counting mode runs benchmarks under Valgrind's \
         callgrind; install the Debian package `valgrind` (apt-get install valgrind)"
    )]
    ValgrindMissing { program: PathBuf },
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("the bench executable {path} does not exist")]
    BenchExeMissing { path: PathBuf },
    #[error(
        "Criterion {version} is not supported by counting mode (supported: 0.3.4 to 0.8.x; \
         {why})"
    )]
    UnsupportedCriterion { version: String, why: &'static str },
    #[error("'{given}' is not a Criterion version (expected MAJOR.MINOR.PATCH)")]
    BadCriterionVersion { given: String },
    #[error("cannot read the Criterion version from {path}: {reason}")]
    CargoLock { path: PathBuf, reason: String },
    #[error("{id} is not countable: {reason}")]
    NotCountable { id: String, reason: String },
    #[error("{exe} has no benchmark with the id {id} (Criterion's --test ran nothing)")]
    NoSuchBenchmark { id: String, exe: PathBuf },
    #[error(
        "nothing was counted for {id}: the routine did not run through Criterion's Bencher \
         ({detail})"
    )]
    NothingCounted { id: String, detail: String },
    #[error("{id} failed under valgrind ({status}):\n{stderr_tail}")]
    RunFailed {
        id: String,
        status: ExitStatus,
        stderr_tail: String,
    },
    #[error(
        "{id} is not countable: its routine hands work to other threads (Callgrind saw \
         {evidence} while counting), and only the calling thread's instructions are counted"
    )]
    OtherThreads { id: String, evidence: String },
    #[error("{id}: {source}")]
    File {
        id: String,
        source: CallgrindFileError,
    },
}

/// A Criterion version, as `Cargo.lock` records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CriterionVersion {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl fmt::Display for CriterionVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for CriterionVersion {
    type Err = CountError;
    /// `0.5.1`; a pre-release or build suffix (`0.6.0-rc.1`) is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || CountError::BadCriterionVersion {
            given: s.to_owned(),
        };
        let core = s.split(['-', '+']).next().unwrap_or_default();
        let parts: Vec<u64> = core
            .split('.')
            .map(|p| p.parse::<u64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        match parts[..] {
            [major, minor, patch] => Ok(CriterionVersion {
                major,
                minor,
                patch,
            }),
            _ => Err(bad()),
        }
    }
}

impl CriterionVersion {
    /// The one `criterion` package in the `Cargo.lock` at `path`.
    pub fn from_cargo_lock(path: &Path) -> Result<Self, CountError> {
        let lock_error = |reason: String| CountError::CargoLock {
            path: path.to_owned(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| lock_error(e.to_string()))?;
        Self::from_cargo_lock_text(&text).map_err(lock_error)
    }

    /// As [`CriterionVersion::from_cargo_lock`], over the lock file's text.
    pub fn from_cargo_lock_text(text: &str) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Lock {
            #[serde(default)]
            package: Vec<Package>,
        }
        #[derive(serde::Deserialize)]
        struct Package {
            name: String,
            version: String,
        }
        let lock: Lock = toml::from_str(text).map_err(|e| e.to_string())?;
        let versions: Vec<&str> = lock
            .package
            .iter()
            .filter(|p| p.name == "criterion")
            .map(|p| p.version.as_str())
            .collect();
        match versions[..] {
            [one] => one.parse().map_err(|e: CountError| e.to_string()),
            [] => Err("it has no criterion package".to_owned()),
            _ => Err(format!(
                "it has several criterion versions ({}); counting mode needs the one the bench \
                 target links",
                versions.join(", ")
            )),
        }
    }

    /// The demangled path of `Bencher`'s impl in this version, or why it is refused.
    fn bencher_impl(self) -> Result<&'static str, CountError> {
        let refuse = |why| CountError::UnsupportedCriterion {
            version: self.to_string(),
            why,
        };
        match (self.major, self.minor, self.patch) {
            (0, 0..=2, _) => Err(refuse("its Bencher has no fixed one-iteration test mode")),
            (0, 3, 0..=3) => Err(refuse(
                "its Bencher lives in the crate root and is not verified; update to 0.3.4 or later",
            )),
            (0, 3..=8, _) => Ok("criterion::bencher::Bencher<M>"),
            _ => Err(refuse("newer than the last version verified")),
        }
    }
}

/// Counts Criterion benchmark ids under Callgrind. One instance per bench executable's
/// Criterion version; [`InstructionCounter::count`] runs one id per Valgrind process.
#[derive(Clone, Debug)]
pub struct InstructionCounter {
    valgrind: PathBuf,
    toggles: Vec<String>,
    cost_model: CostModel,
    envs: Vec<(OsString, OsString)>,
}

impl InstructionCounter {
    /// A counter for bench executables linking Criterion `criterion`; refuses the versions
    /// whose `Bencher` the toggles do not know.
    pub fn new(criterion: CriterionVersion) -> Result<Self, CountError> {
        let bencher = criterion.bencher_impl()?;
        Ok(InstructionCounter {
            valgrind: PathBuf::from("valgrind"),
            toggles: TIMING_METHODS
                .iter()
                .map(|method| format!("{bencher}::{method}"))
                .chain(
                    TIMING_METHODS
                        .iter()
                        .map(|method| format!("{V0_BENCHER}::{method}::<*")),
                )
                .collect(),
            cost_model: CostModel::GUNGRAUN,
            envs: Vec::new(),
        })
    }

    /// Runs this `valgrind` instead of the one on `PATH`.
    pub fn with_valgrind(mut self, program: impl Into<PathBuf>) -> Self {
        self.valgrind = program.into();
        self
    }

    pub fn with_cost_model(mut self, cost_model: CostModel) -> Self {
        self.cost_model = cost_model;
        self
    }

    /// Sets an environment variable for the bench process (stackbench's knobs, such as
    /// `STACKBENCH_SUITE`, reach its bench targets this way).
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// The functions Callgrind toggles collection on, as it demangles them.
    pub fn toggles(&self) -> &[String] {
        &self.toggles
    }

    /// The Valgrind command that counts `id` of `bench_exe` into `out_file`. Criterion's
    /// filter is an anchored, escaped regex: every supported version takes a regex, while
    /// `--exact` only exists from 0.5. [`InstructionCounter::count`] passes a link of fixed
    /// length as `bench_exe` and sets `CRITERION_HOME` (see [`BENCH_LINK`]).
    pub fn command(&self, bench_exe: &Path, id: &str, out_file: &Path) -> Command {
        let mut command = Command::new(&self.valgrind);
        command
            .args(["--tool=callgrind", "--cache-sim=yes"])
            .args(CACHE_GEOMETRY)
            .arg("--collect-atstart=no")
            .args(self.toggles.iter().map(|t| format!("--toggle-collect={t}")))
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg(bench_exe)
            .args(["--bench", "--test"])
            .arg(format!("^{}$", regex::escape(id)))
            // stackbench's own bench targets read it and run their CPU work on the
            // calling thread, the only one Callgrind counts; other crates ignore it.
            .env(super::MEASURE_ENV, super::Measure::Instructions.name())
            .envs(self.envs.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Counts `id`, or says it is not countable without running it.
    pub fn count_if_countable(
        &self,
        bench_exe: &Path,
        id: &str,
        countability: &Countability,
    ) -> Result<CountedBenchmark, CountError> {
        match countability {
            Countability::Countable => self.count(bench_exe, id),
            Countability::NotCountable { reason } => Err(CountError::NotCountable {
                id: id.to_owned(),
                reason: reason.clone(),
            }),
        }
    }

    /// Counts one iteration of `id`'s routine in `bench_exe`. A run that counted nothing is
    /// an error, never a zero count.
    pub fn count(&self, bench_exe: &Path, id: &str) -> Result<CountedBenchmark, CountError> {
        if !bench_exe.is_file() {
            return Err(CountError::BenchExeMissing {
                path: bench_exe.to_owned(),
            });
        }
        let scratch = Scratch::new(bench_exe).map_err(|source| CountError::Spawn {
            program: bench_exe.to_owned(),
            source,
        })?;
        let output = self
            .command(&scratch.link, id, &scratch.out_file)
            // Also keeps Criterion from writing into the crate's target directory.
            .env("CRITERION_HOME", &scratch.criterion_home)
            .output()
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => CountError::ValgrindMissing {
                    program: self.valgrind.clone(),
                },
                _ => CountError::Spawn {
                    program: self.valgrind.clone(),
                    source,
                },
            })?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        check_run(id, bench_exe, output.status, &stdout, &stderr)?;
        let file =
            callgrind_out::read_file(&scratch.out_file).map_err(|source| CountError::File {
                id: id.to_owned(),
                source,
            })?;
        let counts = file.totals;
        if counts.ir == 0 {
            return Err(CountError::NothingCounted {
                id: id.to_owned(),
                detail: format!(
                    "Callgrind never entered {}; are the bench executable's symbols stripped?",
                    self.toggles.join(", ")
                ),
            });
        }
        if let Some(evidence) = other_thread_evidence(&file.functions) {
            return Err(CountError::OtherThreads {
                id: id.to_owned(),
                evidence: evidence.to_owned(),
            });
        }
        Ok(CountedBenchmark::new(id, counts, self.cost_model)
            .with_function_costs(file.function_costs))
    }
}

/// One count's temporary directory: the fixed-length link to the bench executable,
/// Criterion's output directory and Callgrind's output file. Removed when dropped.
struct Scratch {
    _dir: tempfile::TempDir,
    link: PathBuf,
    criterion_home: PathBuf,
    out_file: PathBuf,
}

impl Scratch {
    fn new(bench_exe: &Path) -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let link = dir.path().join(BENCH_LINK);
        std::os::unix::fs::symlink(std::path::absolute(bench_exe)?, &link)?;
        Ok(Scratch {
            link,
            criterion_home: dir.path().join("criterion"),
            out_file: dir.path().join("callgrind.out"),
            _dir: dir,
        })
    }
}

/// The first counted function that shows the routine working with other threads.
fn other_thread_evidence(functions: &BTreeSet<String>) -> Option<&str> {
    functions
        .iter()
        .find(|name| OTHER_THREAD_MARKERS.iter().any(|m| name.contains(m)))
        .map(String::as_str)
}

/// Turns the bench process's end into an error where it counted nothing usable.
fn check_run(
    id: &str,
    exe: &Path,
    status: ExitStatus,
    stdout: &str,
    stderr: &str,
) -> Result<(), CountError> {
    if stderr.contains(NO_ITER_PANIC) {
        return Err(CountError::NothingCounted {
            id: id.to_owned(),
            detail: "Criterion: the benchmark function never called Bencher::iter or a \
                     related method"
                .to_owned(),
        });
    }
    if !status.success() {
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n");
        return Err(CountError::RunFailed {
            id: id.to_owned(),
            status,
            stderr_tail: tail,
        });
    }
    // Criterion prints `Testing <id>` before each benchmark it tests; the anchored filter
    // lets only `id` through, so no such line means no such benchmark.
    if !stdout.lines().any(|line| line.starts_with("Testing ")) {
        return Err(CountError::NoSuchBenchmark {
            id: id.to_owned(),
            exe: exe.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn version(s: &str) -> CriterionVersion {
        s.parse().unwrap()
    }

    #[test]
    fn versions_parse_and_bad_ones_are_named() {
        assert_eq!(version("0.5.1"), version("0.5.1-rc.2"));
        assert_eq!(version("0.8.2").to_string(), "0.8.2");
        for bad in ["", "0.5", "a.b.c", "0.5.1.2"] {
            let error = bad.parse::<CriterionVersion>().unwrap_err().to_string();
            assert!(error.contains(&format!("'{bad}'")), "{error}");
        }
    }

    #[test]
    fn supported_versions_toggle_exactly_the_four_timing_methods() {
        for v in ["0.3.4", "0.3.6", "0.4.0", "0.5.1", "0.7.0", "0.8.2"] {
            let counter = InstructionCounter::new(version(v)).unwrap();
            assert_eq!(
                counter.toggles(),
                [
                    "criterion::bencher::Bencher<M>::iter",
                    "criterion::bencher::Bencher<M>::iter_custom",
                    "criterion::bencher::Bencher<M>::iter_batched",
                    "criterion::bencher::Bencher<M>::iter_batched_ref",
                    "<criterion::bencher::Bencher>::iter::<*",
                    "<criterion::bencher::Bencher>::iter_custom::<*",
                    "<criterion::bencher::Bencher>::iter_batched::<*",
                    "<criterion::bencher::Bencher>::iter_batched_ref::<*",
                ]
            );
        }
    }

    #[test]
    fn unsupported_versions_are_refused_by_name() {
        for v in ["0.2.11", "0.3.3", "0.9.0", "1.0.0"] {
            let error = InstructionCounter::new(version(v)).unwrap_err().to_string();
            assert!(
                error.contains(&format!("Criterion {v} is not supported")),
                "{error}"
            );
            assert!(error.contains("0.3.4 to 0.8.x"), "{error}");
        }
    }

    #[test]
    fn the_command_filters_one_id_exactly_in_test_mode() {
        let counter = InstructionCounter::new(version("0.5.1")).unwrap();
        let command = counter.command(Path::new("/b/work"), "grp/a+b/1", Path::new("/t/cg.out"));
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let tail = &args[args.len() - 4..];
        assert_eq!(tail, ["/b/work", "--bench", "--test", r"^grp/a\+b/1$"]);
        assert!(args.contains(&"--collect-atstart=no".to_owned()));
        assert!(args.contains(&"--callgrind-out-file=/t/cg.out".to_owned()));
        assert!(args.contains(&"--LL=8388608,16,64".to_owned()));
        let measure = command
            .get_envs()
            .find(|(k, _)| *k == super::super::MEASURE_ENV)
            .and_then(|(_, v)| v);
        assert_eq!(
            measure,
            Some(std::ffi::OsStr::new("instructions")),
            "the counted bench process must know it is counted"
        );
    }

    #[test]
    fn the_lock_file_names_one_criterion_version_or_says_why_not() {
        let lock = |packages: &str| CriterionVersion::from_cargo_lock_text(packages);
        let one = "version = 4\n[[package]]\nname = \"criterion\"\nversion = \"0.3.5\"\n\
                   [[package]]\nname = \"serde\"\nversion = \"1.0.0\"\n";
        assert_eq!(lock(one), Ok(version("0.3.5")));
        assert!(lock("version = 4\n").unwrap_err().contains("no criterion"));
        let two = format!("{one}[[package]]\nname = \"criterion\"\nversion = \"0.5.1\"\n");
        assert!(lock(&two).unwrap_err().contains("0.3.5, 0.5.1"));
        assert!(lock("[[package]]\nname = 3").is_err());
        let missing = CriterionVersion::from_cargo_lock(Path::new("/nonexistent/Cargo.lock"));
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("/nonexistent/Cargo.lock")
        );
    }

    #[test]
    fn a_run_that_counted_nothing_is_an_error_naming_the_id() {
        let ok = ExitStatus::from_raw(0);
        let panicked = ExitStatus::from_raw(101 << 8);
        let exe = Path::new("/b/work");
        let no_iter = check_run(
            "lazy",
            exe,
            panicked,
            "Testing lazy\n",
            "thread 'main' panicked at …:\nBenchmark function must call Bencher::iter or related method.\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            no_iter.contains("nothing was counted for lazy"),
            "{no_iter}"
        );
        assert!(no_iter.contains("did not run through Criterion's Bencher"));

        let failed = check_run(
            "boom",
            exe,
            panicked,
            "Testing boom\n",
            "injected failure\n",
        );
        assert!(failed.unwrap_err().to_string().contains("injected failure"));

        let absent = check_run("typo", exe, ok, "", "").unwrap_err().to_string();
        assert!(absent.contains("no benchmark with the id typo"), "{absent}");

        assert!(check_run("sum", exe, ok, "Testing sum\nSuccess\n", "").is_ok());
    }

    #[test]
    fn work_on_other_threads_is_recognised_by_the_functions_counted() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        // stackbench's own CPU pool, as counted from `memory_bandwidth/cpu/copy/256KiB`.
        let pool = names(&[
            "criterion::bencher::Bencher<M>::iter_custom",
            "<std::sync::poison::condvar::Condvar>::notify_all",
            "<std::sys::sync::condvar::futex::Condvar>::wait",
            "syscall",
        ]);
        assert!(other_thread_evidence(&pool).is_some());
        let spawned = names(&["pthread_create@@GLIBC_2.34", "clone3"]);
        assert!(other_thread_evidence(&spawned).is_some());
        let legacy = names(&["parking_lot::condvar::Condvar::wait_until_internal"]);
        assert!(other_thread_evidence(&legacy).is_some());
        let single = names(&[
            "criterion::bencher::Bencher<M>::iter",
            "<std::time::Instant>::now",
            "pthread_mutex_lock@@GLIBC_2.2.5",
            "malloc",
        ]);
        assert_eq!(other_thread_evidence(&single), None);
    }

    #[test]
    fn a_missing_valgrind_names_the_debian_package() {
        let counter = InstructionCounter::new(version("0.8.2"))
            .unwrap()
            .with_valgrind("/nonexistent/valgrind");
        let exe = std::env::current_exe().unwrap();
        let error = counter.count(&exe, "sum").unwrap_err().to_string();
        assert!(error.contains("/nonexistent/valgrind"), "{error}");
        assert!(error.contains("Debian package `valgrind`"), "{error}");
    }

    #[test]
    fn not_countable_ids_are_an_error_and_never_run() {
        let counter = InstructionCounter::new(version("0.8.2")).unwrap();
        let reason = Countability::NotCountable {
            reason: "the cuda backend runs its routine on a GPU".to_owned(),
        };
        let error = counter
            .count_if_countable(Path::new("/nonexistent"), "gemm/cuda/f16/x", &reason)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("gemm/cuda/f16/x is not countable"),
            "{error}"
        );
        assert!(error.contains("on a GPU"), "{error}");
    }
}
