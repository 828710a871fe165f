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
        let status = command.status().map_err(|source| RunnerError::Spawn {
            dir: plan.package_dir.to_path_buf(),
            source,
        })?;
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

fn stderr_handle() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    }
}
