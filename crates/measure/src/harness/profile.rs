//! Profiles on demand: after a benchmark was measured, run it once more under a profiler
//! (Linux `perf`, NVIDIA Nsight Systems `nsys` or Nsight Compute `ncu`, ROCm's `rocprofv3` /
//! `rocprof`) and keep the profile beside the run, so the benchmark that just regressed comes
//! with the evidence of where its time went.
//!
//! The re-run is the bench executable in Criterion's `--profile-time` mode (the routine runs
//! for that many seconds with no analysis and nothing saved), filtered to exactly one id. The
//! profiler writes into a private directory next to the final place; only a profile that is
//! complete is renamed into place, so a reader never sees half a file.
//!
//! A profile is never the measurement: the numbers were already taken when it starts. A
//! missing profiler is `unavailable` with the package to install; a profiler that fails or is
//! refused (`perf_event_paranoid`, NVIDIA's counter permission) is `failed` with its reason.
//! Either is recorded and printed, and neither changes the exit code of the bench, the gate
//! or bisect.

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// `cargo bench`'s switch: `STACKBENCH_PROFILE=perf|nsys|ncu|rocprof`.
pub const PROFILE_ENV: &str = "STACKBENCH_PROFILE";
/// Which measured ids to profile (a regex over the full id); unset: every measured id.
pub const PROFILE_FILTER_ENV: &str = "STACKBENCH_PROFILE_FILTER";
/// Seconds each profiled routine runs (Criterion's `--profile-time`).
pub const PROFILE_TIME_ENV: &str = "STACKBENCH_PROFILE_TIME";
/// Seconds each profiled routine runs when nothing says otherwise.
pub const DEFAULT_PROFILE_TIME_S: u64 = 5;
/// The folder of profiles, under a run's Criterion directory (`<criterion>/stackbench/`)
/// or a gate's `--out`.
pub const PROFILES_DIR: &str = "profiles";
/// How long a profiled run may take beyond its `--profile-time` (setup, the correctness
/// check, the profiler writing its file, ncu's kernel replays) before it is ended.
pub const PROFILE_GRACE: Duration = Duration::from_secs(600);
/// Kernels Nsight Compute profiles per run: each is replayed many times, so a few seconds
/// of GEMM launches unbounded would take hours.
pub const NCU_LAUNCH_COUNT: u32 = 20;

/// A profiler stackbench can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profiler {
    Perf,
    Nsys,
    Ncu,
    Rocprof,
}

/// What a profiler leaves: one file with a known extension, or a directory of files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    File(&'static str),
    Directory(&'static str),
}

impl Profiler {
    pub const ALL: [Profiler; 4] = [
        Profiler::Perf,
        Profiler::Nsys,
        Profiler::Ncu,
        Profiler::Rocprof,
    ];

    /// The name on the command line, in `STACKBENCH_PROFILE` and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Profiler::Perf => "perf",
            Profiler::Nsys => "nsys",
            Profiler::Ncu => "ncu",
            Profiler::Rocprof => "rocprof",
        }
    }

    /// The executables that provide it, preferred first (`rocprofv3` replaces `rocprof`).
    pub fn programs(self) -> &'static [&'static str] {
        match self {
            Profiler::Perf => &["perf"],
            Profiler::Nsys => &["nsys"],
            Profiler::Ncu => &["ncu"],
            Profiler::Rocprof => &["rocprofv3", "rocprof"],
        }
    }

    /// Where to get it, for the message when it is missing.
    pub fn package(self) -> &'static str {
        match self {
            Profiler::Perf => {
                "Linux perf: the Debian package `linux-perf` (Ubuntu: `linux-tools-common` and \
                 `linux-tools-$(uname -r)`; Fedora/RHEL: `perf`)"
            }
            Profiler::Nsys => {
                "NVIDIA Nsight Systems: the package `nsight-systems` (NVIDIA's CUDA repository) \
                 or the CUDA toolkit's `nsys`"
            }
            Profiler::Ncu => {
                "NVIDIA Nsight Compute: the package `nsight-compute` (NVIDIA's CUDA repository) \
                 or the CUDA toolkit's `ncu`"
            }
            Profiler::Rocprof => {
                "ROCm's profiler: the package `rocprofiler-sdk` (rocprofv3) or `rocprofiler` \
                 (rocprof), from AMD's ROCm repository"
            }
        }
    }

    /// What the profiler writes. `rocprofv3` and `rocprof` write several files (traces and
    /// statistics) whose names vary by version, so their profile is a directory.
    pub fn output(self) -> Output {
        match self {
            Profiler::Perf => Output::File("perf.data"),
            Profiler::Nsys => Output::File("nsys-rep"),
            Profiler::Ncu => Output::File("ncu-rep"),
            Profiler::Rocprof => Output::Directory("rocprof"),
        }
    }
}

impl fmt::Display for Profiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A profiler name that is none of [`Profiler::ALL`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown profiler '{given}' (expected one of: perf, nsys, ncu, rocprof)")]
pub struct UnknownProfiler {
    pub given: String,
}

impl FromStr for Profiler {
    type Err = UnknownProfiler;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profiler::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownProfiler {
                given: s.to_owned(),
            })
    }
}

/// What became of one profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProfileOutcome {
    /// The profile is at `path` (a file, or a directory for rocprof).
    Written {
        path: PathBuf,
        bytes: u64,
        /// The profiler's command line, so a reader can run it again.
        command: Vec<String>,
    },
    /// The profiler is not installed: the reason names the package.
    Unavailable { reason: String },
    /// The profiler ran and failed, or was refused; the measurement stands.
    Failed { error: String },
}

/// One benchmark's profile, as the target report, the run, the gate's comparison.json and
/// bisect.json keep it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileRecord {
    pub id: String,
    pub tool: Profiler,
    /// The gate's side (`base` or `head`); absent for a `cargo bench` run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    #[serde(flatten)]
    pub outcome: ProfileOutcome,
}

impl ProfileRecord {
    /// The written profile's path, if there is one.
    pub fn path(&self) -> Option<&Path> {
        match &self.outcome {
            ProfileOutcome::Written { path, .. } => Some(path),
            _ => None,
        }
    }

    /// One line for a terminal, a Markdown list or a log: where the profile is, or why
    /// there is none.
    pub fn line(&self) -> String {
        let side = self
            .side
            .as_deref()
            .map_or(String::new(), |s| format!(" ({s})"));
        match &self.outcome {
            ProfileOutcome::Written { path, bytes, .. } => format!(
                "{} profile of {}{side}: {} ({bytes} bytes)",
                self.tool,
                self.id,
                path.display()
            ),
            ProfileOutcome::Unavailable { reason } => format!(
                "{} profile of {}{side}: unavailable: {reason}",
                self.tool, self.id
            ),
            ProfileOutcome::Failed { error } => format!(
                "{} profile of {}{side}: FAILED: {error}",
                self.tool, self.id
            ),
        }
    }
}

/// What `cargo bench` was asked to profile: the profiler, which measured ids, for how long.
#[derive(Clone, Debug)]
pub struct ProfilePlan {
    pub tool: Profiler,
    pub filter: Option<Regex>,
    pub seconds: u64,
}

impl ProfilePlan {
    /// The plan `STACKBENCH_PROFILE`, `STACKBENCH_PROFILE_FILTER` and
    /// `STACKBENCH_PROFILE_TIME` give; `None` when no profile is asked for. A bad value is
    /// an error naming the variable (the bench exits 2 before anything runs).
    pub fn from_env() -> Result<Option<ProfilePlan>, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self::parse(
            var(PROFILE_ENV).as_deref(),
            var(PROFILE_FILTER_ENV).as_deref(),
            var(PROFILE_TIME_ENV).as_deref(),
        )
    }

    fn parse(
        tool: Option<&str>,
        filter: Option<&str>,
        seconds: Option<&str>,
    ) -> Result<Option<ProfilePlan>, String> {
        let Some(tool) = tool else {
            return match (filter, seconds) {
                (None, None) => Ok(None),
                _ => Err(format!(
                    "{PROFILE_FILTER_ENV} or {PROFILE_TIME_ENV} is set without {PROFILE_ENV}: \
                     name the profiler (perf, nsys, ncu or rocprof)"
                )),
            };
        };
        let tool = tool
            .parse::<Profiler>()
            .map_err(|e| format!("{PROFILE_ENV}: {e}"))?;
        let filter = filter
            .map(|f| {
                Regex::new(f)
                    .map_err(|e| format!("{PROFILE_FILTER_ENV} `{f}` is not a valid regex: {e}"))
            })
            .transpose()?;
        let seconds = seconds
            .map(|s| parse_seconds(s).map_err(|e| format!("{PROFILE_TIME_ENV}: {e}")))
            .transpose()?
            .unwrap_or(DEFAULT_PROFILE_TIME_S);
        Ok(Some(ProfilePlan {
            tool,
            filter,
            seconds,
        }))
    }

    /// Whether the measured id `id` is to be profiled.
    pub fn wants(&self, id: &str) -> bool {
        self.filter.as_ref().is_none_or(|re| re.is_match(id))
    }
}

/// `--profile TOOL` of the gate and bisect, with `--profile-time SECONDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileSettings {
    pub tool: Profiler,
    pub seconds: u64,
}

/// A whole number of seconds, at least 1 (Criterion's `--profile-time` takes seconds).
pub fn parse_seconds(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(s) if s >= 1 => Ok(s),
        _ => Err(format!(
            "`{text}` is not a whole number of seconds of at least 1"
        )),
    }
}

/// Everything one profiled re-run needs.
#[derive(Clone, Debug)]
pub struct ProfileJob<'a> {
    pub tool: Profiler,
    /// The bench executable that measured the id.
    pub bench_exe: &'a Path,
    /// The full benchmark id.
    pub id: &'a str,
    pub seconds: u64,
    /// Where the profile goes (created when missing).
    pub dir: &'a Path,
    /// The file (or directory) name without extension: [`file_stem`] of the id.
    pub stem: &'a str,
    /// The bench's working directory (the crate root); `None`: this process's.
    pub cwd: Option<&'a Path>,
    /// Extra environment of the bench (a gate side's `--base-env`/`--head-env`).
    pub env: &'a [(String, String)],
    /// The `PATH` searched for the profiler; `None`: this process's.
    pub search_path: Option<OsString>,
    pub side: Option<&'a str>,
}

/// The bench's own arguments: Criterion's profile mode for `seconds`, filtered to exactly
/// `id` with an anchored regex (every Criterion version the gate supports takes a regex;
/// `--exact` is 0.5+ only).
pub fn bench_args(id: &str, seconds: u64) -> Vec<OsString> {
    [
        "--bench".to_owned(),
        "--profile-time".to_owned(),
        seconds.to_string(),
        format!("^{}$", regex::escape(id)),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// The profiler's whole command line around `bench` (the executable and its arguments),
/// writing under `scratch` with `stem` as the name. `program` is the profiler executable
/// found on the `PATH` (for rocprof, `rocprofv3` or the older `rocprof`).
pub fn profiler_argv(
    tool: Profiler,
    program: &Path,
    scratch: &Path,
    stem: &str,
    bench: &[OsString],
) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![program.into()];
    let at = |name: &str| OsString::from(scratch.join(name));
    let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
    match tool {
        Profiler::Perf => {
            // Call graphs from frame pointers (`-g`); perf itself falls back from the
            // `cycles` event to `cpu-clock` where a VM exposes no hardware counters.
            argv.extend(words(&["record", "-g", "-o"]));
            argv.push(at(&format!("{stem}.perf.data")));
            argv.push("--".into());
        }
        Profiler::Nsys => {
            argv.extend(words(&[
                "profile",
                "--trace",
                "cuda,nvtx,osrt",
                "--force-overwrite",
                "true",
                "--output",
            ]));
            // nsys adds `.nsys-rep` (older releases `.qdrep`).
            argv.push(at(stem));
        }
        Profiler::Ncu => {
            argv.extend(words(&["--target-processes", "all", "--launch-count"]));
            argv.push(NCU_LAUNCH_COUNT.to_string().into());
            argv.extend(words(&["--force-overwrite", "--export"]));
            // ncu adds `.ncu-rep`.
            argv.push(at(stem));
        }
        Profiler::Rocprof => {
            let is_v3 = program
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rocprofv3"));
            if is_v3 {
                argv.extend(words(&[
                    "--kernel-trace",
                    "--stats",
                    "--output-format",
                    "csv",
                    "-d",
                ]));
                argv.push(scratch.into());
                argv.push("-o".into());
                argv.push(stem.into());
                argv.push("--".into());
            } else {
                argv.extend(words(&["--stats", "--timestamp", "on", "-o"]));
                argv.push(at(&format!("{stem}.csv")));
            }
        }
    }
    argv.extend(bench.iter().cloned());
    argv
}

/// The first of `names` that is an executable file on `path` (a `PATH`-style list).
pub fn find_program(names: &[&str], path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    names.iter().find_map(|name| {
        std::env::split_paths(path).find_map(|dir| {
            let candidate = dir.join(name);
            let meta = std::fs::metadata(&candidate).ok()?;
            (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then_some(candidate)
        })
    })
}

/// A benchmark id as a file name: every character but ASCII letters, digits, `.`, `-` and
/// `_` becomes `_` (`gemm/cpu/f32/512x512x512` → `gemm_cpu_f32_512x512x512`).
pub fn file_stem(id: &str) -> String {
    let stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // No hidden files and no `..`: the stem is always a plain name in the profiles folder.
    stem.trim_start_matches('.').to_owned()
}

/// Distinct file stems for `ids`, in order: two ids that sanitise alike get `_2`, `_3`.
pub fn file_stems(ids: &[String]) -> Vec<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    ids.iter()
        .map(|id| {
            let stem = file_stem(id);
            let n = seen.entry(stem.clone()).or_insert(0);
            *n += 1;
            if *n == 1 { stem } else { format!("{stem}_{n}") }
        })
        .collect()
}

/// Runs one profile and says what became of it (also printed on stderr).
pub fn profile(job: &ProfileJob<'_>) -> ProfileRecord {
    let outcome = match run_profile(job) {
        Ok(written) => written,
        Err(missing_or_failed) => missing_or_failed,
    };
    let record = ProfileRecord {
        id: job.id.to_owned(),
        tool: job.tool,
        side: job.side.map(str::to_owned),
        outcome,
    };
    eprintln!("stackbench: {}", record.line());
    record
}

/// The environment variables a profiled bench must not inherit: a second profile inside the
/// first, counting mode, and the live progress file of the measured run.
const CHILD_ENV_REMOVED: &[&str] = &[
    PROFILE_ENV,
    PROFILE_FILTER_ENV,
    PROFILE_TIME_ENV,
    super::measure::MEASURE_ENV,
    crate::sidecar::progress::PROGRESS_ENV,
];

fn run_profile(job: &ProfileJob<'_>) -> Result<ProfileOutcome, ProfileOutcome> {
    let failed = |error: String| ProfileOutcome::Failed { error };
    let search = job
        .search_path
        .clone()
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let program =
        find_program(job.tool.programs(), &search).ok_or_else(|| ProfileOutcome::Unavailable {
            reason: format!(
                "{} is not installed (no {} on PATH); install {}",
                job.tool,
                job.tool.programs().join(" or "),
                job.tool.package()
            ),
        })?;
    if !job.bench_exe.is_file() {
        return Err(failed(format!(
            "the bench executable {} is gone",
            job.bench_exe.display()
        )));
    }
    // Absolute: the profiler runs in the bench's working directory (a gate side's worktree),
    // where a relative `--out` would point somewhere else.
    let dir = std::path::absolute(job.dir)
        .map_err(|e| failed(format!("cannot resolve {}: {e}", job.dir.display())))?;
    let dir = dir.as_path();
    std::fs::create_dir_all(dir)
        .map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    // In the profiles folder itself, so the final rename never crosses a file system.
    let scratch = tempfile::Builder::new()
        .prefix(".partial-")
        .tempdir_in(dir)
        .map_err(|e| {
            failed(format!(
                "cannot create a scratch folder in {}: {e}",
                dir.display()
            ))
        })?;
    // The profiled bench's own Criterion directory: its target report and system probe must
    // not overwrite the measured run's.
    let criterion_home = tempfile::Builder::new()
        .prefix("stackbench-profile-criterion-")
        .tempdir()
        .map_err(|e| failed(format!("cannot create a scratch Criterion directory: {e}")))?;
    let output_dir = scratch.path().join("out");
    std::fs::create_dir(&output_dir)
        .map_err(|e| failed(format!("cannot create {}: {e}", output_dir.display())))?;
    let mut bench = vec![OsString::from(job.bench_exe)];
    bench.extend(bench_args(job.id, job.seconds));
    let argv = profiler_argv(job.tool, &program, &output_dir, job.stem, &bench);
    let log = scratch.path().join("profiler.log");
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some(cwd) = job.cwd {
        command.current_dir(cwd);
    }
    for key in CHILD_ENV_REMOVED {
        command.env_remove(key);
    }
    command
        .env("CRITERION_HOME", criterion_home.path())
        .envs(job.env.iter().map(|(k, v)| (k, v)));
    let limit = Duration::from_secs(job.seconds) + PROFILE_GRACE;
    let status = run_with_limit(command, &log, limit).map_err(failed)?;
    let said = tail(&log, 12);
    if !status.success() {
        return Err(failed(failure_reason(job.tool, &program, status, &said)));
    }
    let produced = discover(job.tool, &output_dir).map_err(|why| {
        failed(format!(
            "{} exited 0 but {why}; its last lines:\n{said}",
            program.display()
        ))
    })?;
    let final_path = dir.join(final_name(job.tool, job.stem));
    place(&produced, &final_path).map_err(|e| {
        failed(format!(
            "cannot move the profile to {}: {e}",
            final_path.display()
        ))
    })?;
    Ok(ProfileOutcome::Written {
        bytes: bytes_of(&final_path),
        path: final_path,
        // As it would run again: writing where the profile now is, not the scratch folder.
        command: argv
            .iter()
            .map(|a| {
                let arg = a.to_string_lossy();
                arg.replace(&*output_dir.to_string_lossy(), &dir.to_string_lossy())
            })
            .collect(),
    })
}

/// The profile's name in the profiles folder: `<stem>.perf.data`, `<stem>.nsys-rep`,
/// `<stem>.ncu-rep`, or the folder `<stem>.rocprof`.
pub fn final_name(tool: Profiler, stem: &str) -> String {
    match tool.output() {
        Output::File(ext) | Output::Directory(ext) => format!("{stem}.{ext}"),
    }
}

/// Runs `command` with its stdout and stderr in `log`, in its own process group, ended
/// (the whole group) after `limit`.
fn run_with_limit(mut command: Command, log: &Path, limit: Duration) -> Result<ExitStatus, String> {
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if started.elapsed() > limit => {
                if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                    // SAFETY: signalling the process group this function created.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                }
                let _ = child.wait();
                return Err(format!(
                    "{program} ran longer than {} s and was ended",
                    limit.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("cannot wait for {program}: {e}")),
        }
    }
}

/// Why a profiler run failed, from its exit status and last lines: a refused permission is
/// named with the setting that refuses it.
pub fn failure_reason(tool: Profiler, program: &Path, status: ExitStatus, said: &str) -> String {
    let lower = said.to_lowercase();
    if tool == Profiler::Perf && lower.contains("perf_event_paranoid") {
        let setting = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| format!("is {}", s.trim()))
            .unwrap_or_else(|e| format!("cannot be read ({e})"));
        return format!(
            "perf lacks permission: kernel.perf_event_paranoid {setting} \
             (/proc/sys/kernel/perf_event_paranoid), which forbids this process from \
             recording; run as root, grant CAP_PERFMON, or lower it (`sysctl \
             kernel.perf_event_paranoid=1`). perf said:\n{said}"
        );
    }
    if tool == Profiler::Ncu && said.contains("ERR_NVGPUCTRPERM") {
        return format!(
            "ncu lacks permission to read the GPU performance counters (ERR_NVGPUCTRPERM): \
             the driver restricts them to administrators (NVreg_RestrictProfilingToAdminUsers); \
             run as root or lift the restriction. ncu said:\n{said}"
        );
    }
    if lower.contains("permission denied") || lower.contains("operation not permitted") {
        return format!(
            "{} was refused permission ({status}); it said:\n{said}",
            program.display()
        );
    }
    format!("{} {status}; its last lines:\n{said}", program.display())
}

/// The profile the run left under `dir`, or why there is none.
fn discover(tool: Profiler, dir: &Path) -> Result<PathBuf, String> {
    match tool.output() {
        Output::File(ext) => {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| format!("{} cannot be read: {e}", dir.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    name.is_some_and(|n| {
                        n.ends_with(&format!(".{ext}"))
                            || (tool == Profiler::Nsys && n.ends_with(".qdrep"))
                    })
                })
                .filter(|p| p.is_file())
                .collect();
            found.sort();
            let file = found
                .pop()
                .ok_or_else(|| format!("wrote no .{ext} file in {}", dir.display()))?;
            if bytes_of(&file) == 0 {
                return Err(format!("{} is empty", file.display()));
            }
            Ok(file)
        }
        Output::Directory(_) => {
            if bytes_of(dir) == 0 {
                return Err(format!("wrote nothing in {}", dir.display()));
            }
            Ok(dir.to_path_buf())
        }
    }
}

/// Moves a finished profile to `to`, replacing an older one of the same name.
fn place(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.is_dir() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::rename(from, to)
}

/// Bytes of a file, or of every file under a directory.
fn bytes_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::metadata(path) else {
        return 0;
    };
    if meta.is_file() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| bytes_of(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

/// The last `lines` lines of a log (empty when it cannot be read).
fn tail(log: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let _ = file.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The profiles kept in a run's target reports (`RunRecord::targets`, each target report as
/// JSON with its `profiles` map), in id order; entries this version cannot read are left out.
pub fn profiles_in_targets(targets: &[serde_json::Value]) -> Vec<ProfileRecord> {
    let mut out: Vec<ProfileRecord> = targets
        .iter()
        .filter_map(|t| t.get("profiles")?.as_object())
        .flat_map(|m| m.values())
        .filter_map(|v| serde_json::from_value(v.clone()).ok())
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn os(v: &[OsString]) -> Vec<String> {
        v.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused_by_name() {
        for tool in Profiler::ALL {
            assert_eq!(tool.name().parse::<Profiler>(), Ok(tool));
        }
        let err = "vtune".parse::<Profiler>().unwrap_err().to_string();
        assert!(err.contains("vtune") && err.contains("rocprof"), "{err}");
    }

    #[test]
    fn the_plan_comes_from_the_environment_and_bad_values_name_their_variable() {
        assert!(ProfilePlan::parse(None, None, None).unwrap().is_none());
        let plan = ProfilePlan::parse(Some("perf"), Some("^gemm/cpu/"), Some("2"))
            .unwrap()
            .unwrap();
        assert_eq!((plan.tool, plan.seconds), (Profiler::Perf, 2));
        assert!(plan.wants("gemm/cpu/f32/64x64x64"));
        assert!(!plan.wants("memory_bandwidth/cpu/triad/1MiB"));
        let all = ProfilePlan::parse(Some("nsys"), None, None)
            .unwrap()
            .unwrap();
        assert_eq!(all.seconds, DEFAULT_PROFILE_TIME_S);
        assert!(all.wants("anything"));
        let bad = |t, f, s| ProfilePlan::parse(t, f, s).unwrap_err();
        assert!(bad(Some("gprof"), None, None).contains(PROFILE_ENV));
        assert!(bad(Some("perf"), Some("("), None).contains(PROFILE_FILTER_ENV));
        assert!(bad(Some("perf"), None, Some("0")).contains(PROFILE_TIME_ENV));
        assert!(bad(Some("perf"), None, Some("1.5")).contains(PROFILE_TIME_ENV));
        assert!(bad(None, Some("x"), None).contains(PROFILE_ENV));
    }

    #[test]
    fn the_bench_runs_criterions_profile_mode_on_exactly_one_id() {
        let args = os(&bench_args("gemm/cpu/f32/64x64x64", 3));
        assert_eq!(
            args,
            ["--bench", "--profile-time", "3", "^gemm/cpu/f32/64x64x64$"]
        );
        // Regex characters in an id are escaped: `a.b` must not match `aXb`.
        let filter = &os(&bench_args("x/a.b (1)", 1))[3];
        let re = Regex::new(filter).unwrap();
        assert!(re.is_match("x/a.b (1)") && !re.is_match("x/aXb (1)"));
    }

    #[test]
    fn each_profiler_writes_into_the_scratch_folder_under_the_stem() {
        let bench: Vec<OsString> = vec!["/b/gemm-1".into(), "--bench".into()];
        let scratch = Path::new("/p/.partial-x/out");
        let argv = |tool, program: &str| {
            os(&profiler_argv(
                tool,
                Path::new(program),
                scratch,
                "gemm_cpu",
                &bench,
            ))
        };
        assert_eq!(
            argv(Profiler::Perf, "/usr/bin/perf"),
            [
                "/usr/bin/perf",
                "record",
                "-g",
                "-o",
                "/p/.partial-x/out/gemm_cpu.perf.data",
                "--",
                "/b/gemm-1",
                "--bench"
            ]
        );
        let nsys = argv(Profiler::Nsys, "/opt/nsys");
        assert_eq!(&nsys[..2], ["/opt/nsys", "profile"]);
        let at = nsys.iter().position(|a| a == "--output").unwrap();
        assert_eq!(nsys[at + 1], "/p/.partial-x/out/gemm_cpu");
        assert_eq!(&nsys[nsys.len() - 2..], ["/b/gemm-1", "--bench"]);
        let ncu = argv(Profiler::Ncu, "/opt/ncu");
        let joined = ncu.join(" ");
        assert!(
            joined.contains("--target-processes all")
                && joined.contains("--export /p/.partial-x/out/gemm_cpu")
                && joined.contains(&format!("--launch-count {NCU_LAUNCH_COUNT}")),
            "{joined}"
        );
        let v3 = argv(Profiler::Rocprof, "/opt/rocm/bin/rocprofv3").join(" ");
        assert!(
            v3.contains("-d /p/.partial-x/out -o gemm_cpu -- /b/gemm-1 --bench"),
            "{v3}"
        );
        let v1 = argv(Profiler::Rocprof, "/opt/rocm/bin/rocprof").join(" ");
        assert!(
            v1.contains("-o /p/.partial-x/out/gemm_cpu.csv /b/gemm-1 --bench"),
            "{v1}"
        );
    }

    #[test]
    fn ids_become_plain_distinct_file_names() {
        assert_eq!(
            file_stem("gemm/cpu/f32/512x512x512"),
            "gemm_cpu_f32_512x512x512"
        );
        assert_eq!(file_stem("../x y"), "_x_y");
        assert_eq!(
            file_stems(&["a/b".into(), "a_b".into(), "a:b".into()]),
            ["a_b", "a_b_2", "a_b_3"]
        );
    }

    /// A folder on which a fake profiler named `name` runs `script`.
    fn fake(name: &str, script: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn job<'a>(
        tool: Profiler,
        bench: &'a Path,
        dir: &'a Path,
        path: &tempfile::TempDir,
    ) -> ProfileJob<'a> {
        ProfileJob {
            tool,
            bench_exe: bench,
            id: "gemm/cpu/f32/64x64x64",
            seconds: 1,
            dir,
            stem: "gemm_cpu_f32_64x64x64",
            cwd: None,
            env: &[],
            search_path: Some(path.path().as_os_str().to_owned()),
            side: Some("head"),
        }
    }

    #[test]
    fn a_missing_profiler_is_unavailable_naming_its_package() {
        let empty = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        for (tool, package) in [
            (Profiler::Perf, "linux-perf"),
            (Profiler::Nsys, "nsight-systems"),
            (Profiler::Ncu, "nsight-compute"),
            (Profiler::Rocprof, "rocprofiler"),
        ] {
            let record = profile(&job(tool, &exe, out.path(), &empty));
            match &record.outcome {
                ProfileOutcome::Unavailable { reason } => {
                    assert!(reason.contains(package), "{reason}")
                }
                other => panic!("{tool}: {other:?}"),
            }
        }
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_profiler_that_fails_or_is_refused_fails_the_profile_with_its_reason() {
        let out = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let crash = fake("nsys", "echo 'nsys: something broke' >&2; exit 3");
        let record = profile(&job(Profiler::Nsys, &exe, out.path(), &crash));
        match &record.outcome {
            ProfileOutcome::Failed { error } => {
                assert!(
                    error.contains("something broke") && error.contains("exit status: 3"),
                    "{error}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(record.side.as_deref(), Some("head"));
        let paranoid = fake(
            "perf",
            "echo 'Consider tweaking /proc/sys/kernel/perf_event_paranoid' >&2; exit 255",
        );
        let record = profile(&job(Profiler::Perf, &exe, out.path(), &paranoid));
        match &record.outcome {
            ProfileOutcome::Failed { error } => {
                assert!(
                    error.contains("lacks permission")
                        && error.contains("kernel.perf_event_paranoid"),
                    "{error}"
                )
            }
            other => panic!("{other:?}"),
        }
        let counters = fake(
            "ncu",
            "echo '==ERROR== ERR_NVGPUCTRPERM - no access' ; exit 1",
        );
        let record = profile(&job(Profiler::Ncu, &exe, out.path(), &counters));
        assert!(
            matches!(&record.outcome, ProfileOutcome::Failed { error } if error.contains("performance counters")),
            "{record:?}"
        );
        // A profiler that exits 0 without writing its file is a failure too, never a link
        // to nothing.
        let silent = fake("ncu", "exit 0");
        let record = profile(&job(Profiler::Ncu, &exe, out.path(), &silent));
        assert!(
            matches!(&record.outcome, ProfileOutcome::Failed { error } if error.contains(".ncu-rep")),
            "{record:?}"
        );
        // Nothing half-written is left behind.
        let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_fake_profiler_that_writes_its_file_gets_it_renamed_into_place() {
        let out = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        // Writes `<--export value>.ncu-rep` and checks the bench filter came through.
        let ncu = fake(
            "ncu",
            r#"while [ $# -gt 0 ]; do
  case "$1" in --export) shift; stem="$1";; '^gemm/cpu/f32/64x64x64$') seen=1;; esac; shift
done
[ -n "$seen" ] || { echo 'no filter' >&2; exit 9; }
printf 'report' > "$stem.ncu-rep""#,
        );
        let record = profile(&job(Profiler::Ncu, &exe, out.path(), &ncu));
        let path = record.path().expect("written").to_path_buf();
        assert_eq!(path, out.path().join("gemm_cpu_f32_64x64x64.ncu-rep"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "report");
        // The recorded command writes where the profile is, as it would be run again.
        let ProfileOutcome::Written { command, .. } = &record.outcome else {
            unreachable!("written above")
        };
        let export = command.iter().position(|a| a == "--export").unwrap();
        assert_eq!(
            Path::new(&command[export + 1]),
            out.path().join("gemm_cpu_f32_64x64x64")
        );
        let rocprof = fake(
            "rocprofv3",
            r#"while [ $# -gt 0 ]; do case "$1" in -d) shift; d="$1";; esac; shift; done
mkdir -p "$d/host/42" && echo 'Name,Calls' > "$d/host/42/kernel_stats.csv""#,
        );
        let record = profile(&job(Profiler::Rocprof, &exe, out.path(), &rocprof));
        let dir = record.path().expect("written").to_path_buf();
        assert!(dir.join("host/42/kernel_stats.csv").is_file(), "{dir:?}");
        let names: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with(".partial")),
            "{names:?}"
        );
    }

    #[test]
    fn a_relative_profiles_folder_is_resolved_here_not_in_the_benchs_working_directory() {
        let exe = std::env::current_exe().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // Relative to this process's directory (the crate root under cargo test).
        let here = tempfile::tempdir_in(".").unwrap();
        let name = here.path().file_name().unwrap().to_owned();
        let relative = Path::new(&name).join("profiles");
        let ncu = fake(
            "ncu",
            r#"while [ $# -gt 0 ]; do case "$1" in --export) shift; stem="$1";; esac; shift; done
printf 'report' > "$stem.ncu-rep""#,
        );
        let mut job = job(Profiler::Ncu, &exe, &relative, &ncu);
        job.cwd = Some(elsewhere.path());
        let record = profile(&job);
        let path = record.path().expect("written").to_path_buf();
        assert!(path.is_absolute(), "{}", path.display());
        assert!(
            here.path()
                .join("profiles/gemm_cpu_f32_64x64x64.ncu-rep")
                .is_file(),
            "{record:?}"
        );
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn records_round_trip_and_are_found_in_target_reports() {
        let record = ProfileRecord {
            id: "a/b/c/d".into(),
            tool: Profiler::Perf,
            side: None,
            outcome: ProfileOutcome::Failed {
                error: "refused".into(),
            },
        };
        let value = serde_json::to_value(&record).unwrap();
        assert_eq!(value["status"], "failed");
        assert_eq!(value["tool"], "perf");
        let targets = vec![
            serde_json::json!({"target": "gemm", "profiles": {"a/b/c/d": value}}),
            serde_json::json!({"target": "other"}),
        ];
        assert_eq!(profiles_in_targets(&targets), [record]);
    }
}
