//! Runs a suite for `stackbench validate` the way `run_benchmarks.sh` does: one
//! `cargo bench --bench <target>` per target the suite names, with `STACKBENCH_SUITE`
//! and the config passed through the environment (Criterion owns the targets' argv), into
//! a fresh Criterion directory so the run holds only what this validation measured. The
//! targets record their own skips and failures beside Criterion's output.

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
    /// The stackbench package root (where `cargo bench` runs).
    pub package_dir: &'a Path,
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

/// The package this binary was built from: the bench targets live beside it.
pub fn package_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs every target of the suite; returns the run (not yet saved) with a note for each
/// target that exited non-zero (its failures are in its outcome record).
pub fn run_suite(plan: &SuiteRun) -> Result<RunRecord, RunnerError> {
    let mut notes = Vec::new();
    for target in &plan.suite.targets {
        eprintln!("==> validate: {target} (suite {})", plan.suite.name);
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command
            .args(["bench", "--quiet", "--bench", target, "--", "--noplot"])
            .args(plan.filter)
            .current_dir(plan.package_dir)
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
        let spawn = |source| RunnerError::Spawn {
            dir: plan.package_dir.to_path_buf(),
            source,
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
