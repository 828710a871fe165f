//! Runs a suite for `stackbench validate` the way `run_benchmarks.sh` does: one
//! `cargo bench --bench <target>` per target the suite names, with `STACKBENCH_SUITE`
//! and the config passed through the environment (Criterion owns the targets' argv), into
//! a fresh Criterion directory so the run holds only what this validation measured. The
//! targets record their own skips and failures beside Criterion's output.
//!
//! On a machine without a Rust toolchain (a GPU runner given a bundle from
//! `ci/gpu_bundle.sh`), `STACKBENCH_BENCH_DIR` names a directory of prebuilt bench
//! executables, one per target and named as it; each is then run directly, with the
//! arguments cargo would give it (`--bench --noplot [filter]`).

use crate::config::ResolvedSuite;
use crate::criterion_output::CriterionError;
use crate::results::RunRecord;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot start `cargo bench` in {dir}: {source} (is cargo on PATH?)")]
    Spawn {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir} (from ${BENCH_DIR_ENV}) has no bench executable `{target}`: \
         ci/gpu_bundle.sh builds one per target"
    )]
    NoPrebuilt { dir: PathBuf, target: String },
    #[error("cannot start the prebuilt bench {path}: {source}")]
    SpawnPrebuilt {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading what the suite measured in {dir}: {source}")]
    Read {
        dir: PathBuf,
        source: CriterionError,
    },
}

/// What to run and where.
pub struct SuiteRun<'a> {
    pub suite: &'a ResolvedSuite,
    /// The config file the targets must read (absolute), if any.
    pub config: Option<&'a Path>,
    /// Where the targets run: the checkout (`cargo bench` runs there) or the directory of
    /// the prebuilt executables' installation ([`super::parts::BenchSource::working_dir`]).
    pub package_dir: &'a Path,
    /// Prebuilt bench executables to run instead of `cargo bench` ([`prebuilt_dir`]).
    pub prebuilt: Option<&'a Path>,
    /// A fresh directory for Criterion's output.
    pub criterion_dir: &'a Path,
    /// Criterion's filter, narrowing the suite further.
    pub filter: Option<&'a str>,
    /// Extra environment of the targets (a model sweep's plan file, its per-cell timeout).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Run each target in its own process group and pass Ctrl-C on to it as a request
    /// (the caller installed [`crate::system::interrupt`]): the target finishes its
    /// benchmark in flight and records what it has, instead of dying with the terminal's
    /// signal. Without it, targets share the caller's group and its Ctrl-C.
    pub forward_interrupt: bool,
}

/// The environment variable naming a directory of prebuilt bench executables.
pub const BENCH_DIR_ENV: &str = "STACKBENCH_BENCH_DIR";

/// `$STACKBENCH_BENCH_DIR`, when set and not empty.
pub fn prebuilt_dir() -> Option<PathBuf> {
    std::env::var_os(BENCH_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The command that runs `target`: its prebuilt executable, else `cargo bench`.
fn target_command(plan: &SuiteRun, target: &str) -> Result<Command, RunnerError> {
    let Some(dir) = plan.prebuilt else {
        let mut command = stackbench_measure::system::cargo::command();
        command
            .args(["bench", "--quiet", "--bench", target, "--", "--noplot"])
            .current_dir(plan.package_dir);
        return Ok(command);
    };
    let path = dir.join(target);
    if !path.is_file() {
        return Err(RunnerError::NoPrebuilt {
            dir: dir.to_path_buf(),
            target: target.into(),
        });
    }
    let mut command = Command::new(&path);
    // What cargo bench passes a bench executable, then the harness's own flag.
    command
        .args(["--bench", "--noplot"])
        .current_dir(plan.package_dir);
    Ok(command)
}

/// Runs every target of the suite; returns the run (not yet saved) with a note for each
/// target that exited non-zero (its failures are in its outcome record).
pub fn run_suite(plan: &SuiteRun) -> Result<RunRecord, RunnerError> {
    let mut notes = Vec::new();
    for target in &plan.suite.targets {
        eprintln!("==> validate: {target} (suite {})", plan.suite.name);
        let mut command = target_command(plan, target)?;
        command
            .args(plan.filter)
            .env(crate::workload::suite::SUITE_ENV, &plan.suite.name)
            .env("CRITERION_HOME", plan.criterion_dir)
            .env_remove(crate::config::CONFIG_ENV)
            // Criterion's report goes to our stderr: stdout carries only the verdict.
            .stdout(stderr_handle())
            .stdin(Stdio::null());
        if let Some(config) = plan.config {
            command.env(crate::config::CONFIG_ENV, config);
        }
        command.envs(plan.env.iter().map(|(k, v)| (k, v)));
        let spawn = |source| match plan.prebuilt {
            Some(dir) => RunnerError::SpawnPrebuilt {
                path: dir.join(target),
                source,
            },
            None => RunnerError::Spawn {
                dir: plan.package_dir.to_path_buf(),
                source,
            },
        };
        let status = if plan.forward_interrupt {
            run_forwarding_interrupt(command).map_err(spawn)?
        } else {
            command.status().map_err(spawn)?
        };
        if !status.success() {
            notes.push(format!(
                "bench target {target} exited with {status} (its failures are judged below)"
            ));
        }
    }
    let label = Some(format!("validate/{}", plan.suite.name));
    let mut run = match crate::results::run_from_criterion(plan.criterion_dir, "new", label.clone())
    {
        Ok(run) => run,
        // Everything skipped (no GPU, no Python stack) leaves Criterion nothing to write;
        // the skips and the probe are still there and are what the verdict reports.
        Err(CriterionError::Empty { .. } | CriterionError::Missing { .. }) => {
            unmeasured_run(plan.criterion_dir, label)
        }
        Err(source) => {
            return Err(RunnerError::Read {
                dir: plan.criterion_dir.to_path_buf(),
                source,
            });
        }
    };
    run.notes.extend(notes);
    Ok(run)
}

/// A run of a suite that measured nothing: the probe and the targets' outcomes only.
fn unmeasured_run(criterion_dir: &Path, label: Option<String>) -> RunRecord {
    let (system, reports, mut notes) = crate::results::sidecar_files(criterion_dir);
    // No benchmark was measured, but the reports still name what failed and why.
    let failed = crate::results::measured_only(Vec::new(), &reports).failed;
    let targets = reports
        .iter()
        .filter_map(|report| match serde_json::to_value(report) {
            Ok(value) => Some(value),
            Err(e) => {
                notes.push(format!("target report not kept: {e}"));
                None
            }
        })
        .collect();
    let created_unix_ms = crate::results::now_unix_ms();
    RunRecord {
        label,
        targets,
        notes,
        failed,
        ..RunRecord::new(created_unix_ms, criterion_dir, "new", system)
    }
}

/// How long a target's group may outlive the cargo that started it (a cell in flight when
/// Ctrl-C came finishes first; its calls are bounded by the runner's timeouts).
const GROUP_EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(900);

/// Runs `command` in its own process group; on Ctrl-C (the flag) sends SIGINT to the whole
/// group once, then waits until every process of the group is gone (cargo may exit before
/// the bench executable it started, which is still writing its record).
fn run_forwarding_interrupt(mut command: Command) -> std::io::Result<std::process::ExitStatus> {
    use std::os::unix::process::CommandExt;
    let mut child = command.process_group(0).spawn()?;
    let group = libc::pid_t::try_from(child.id()).unwrap_or(0);
    let mut forwarded = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if !forwarded && crate::system::interrupt::interrupted() && group > 1 {
            eprintln!(
                "==> interrupted: the sweep finishes its cell in flight and keeps every finished cell"
            );
            // SAFETY: signalling the process group this function created.
            unsafe { libc::kill(-group, libc::SIGINT) };
            forwarded = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Bounded: a container whose init reaps no orphans would keep a zombie in the group.
    let deadline = std::time::Instant::now() + GROUP_EXIT_WAIT;
    // SAFETY: signal 0 only asks whether any process of our group is left.
    while group > 1 && unsafe { libc::kill(-group, 0) } == 0 {
        if std::time::Instant::now() > deadline {
            eprintln!(
                "==> the bench target's process group is still there after {GROUP_EXIT_WAIT:?}; reading what it wrote"
            );
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(status)
}

fn stderr_handle() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A directory whose `models` executable records its argv and environment.
    fn fake_bench(dir: &Path, record: &Path) {
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" \"$STACKBENCH_SUITE\" \"$CRITERION_HOME\" \"$PWD\" > {}\n",
            record.display()
        );
        let path = dir.join("models");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_prebuilt_bench_runs_directly_with_cargo_benchs_arguments_and_the_suite() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let criterion = dir.path().join("criterion");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&criterion).unwrap();
        let record = dir.path().join("argv");
        fake_bench(&bin, &record);
        let suite = crate::config::Config::default().suite("sweep").unwrap();
        let run = run_suite(&SuiteRun {
            suite: &suite,
            config: None,
            package_dir: dir.path(),
            prebuilt: Some(&bin),
            criterion_dir: &criterion,
            filter: Some("^models/torch/"),
            env: Vec::new(),
            forward_interrupt: false,
        })
        .unwrap();
        let lines: Vec<String> = std::fs::read_to_string(&record)
            .expect("the prebuilt executable ran")
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(lines[0], "--bench --noplot ^models/torch/");
        assert_eq!(lines[1], "sweep");
        assert_eq!(lines[2], criterion.display().to_string());
        assert_eq!(lines[3], dir.path().display().to_string());
        // It measured nothing: the run says so and holds no benchmark.
        assert!(run.benchmarks.is_empty());
    }

    #[test]
    fn a_bundle_without_the_targets_executable_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let suite = crate::config::Config::default().suite("sweep").unwrap();
        let error = run_suite(&SuiteRun {
            suite: &suite,
            config: None,
            package_dir: dir.path(),
            prebuilt: Some(dir.path()),
            criterion_dir: dir.path(),
            filter: None,
            env: Vec::new(),
            forward_interrupt: false,
        })
        .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("no bench executable `models`"), "{text}");
        assert!(text.contains("STACKBENCH_BENCH_DIR"), "{text}");
    }
}
