//! Shared by the component tests: a [`Recorder`] that drives the real suite loop without
//! Criterion (prepare, verify, a couple of timed runs, notes), and interpreter helpers.
#![allow(dead_code)] // each test crate uses a different part

use criterion::Throughput;
use stackbench::backend::{BackendError, SamplingProfile, TimedWorkload};
use stackbench::components::interpreter::{Interpreter, InterpreterError};
use stackbench::components::suite::BenchSink;
use stackbench::workload::{BenchId, Suite};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What happened to one benchmark.
#[derive(Debug)]
pub enum Outcome {
    Measured {
        notes: BTreeMap<String, serde_json::Value>,
        elapsed: Duration,
    },
    Skipped(String),
    Failed(String),
}

/// Records outcomes by full id, running each benchmark for real but briefly.
pub struct Recorder {
    pub outcomes: BTreeMap<String, Outcome>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            outcomes: BTreeMap::new(),
        }
    }

    pub fn get(&self, id: &str) -> &Outcome {
        self.outcomes
            .get(id)
            .unwrap_or_else(|| panic!("no outcome for {id}; have {:?}", self.outcomes.keys()))
    }

    pub fn skipped(&self, id: &str) -> &str {
        match self.get(id) {
            Outcome::Skipped(reason) => reason,
            other => panic!("{id}: expected a skip, got {other:?}"),
        }
    }

    pub fn failed(&self, id: &str) -> &str {
        match self.get(id) {
            Outcome::Failed(error) => error,
            other => panic!("{id}: expected a failure, got {other:?}"),
        }
    }

    pub fn notes(&self, id: &str) -> &BTreeMap<String, serde_json::Value> {
        match self.get(id) {
            Outcome::Measured { notes, .. } => notes,
            other => panic!("{id}: expected a measurement, got {other:?}"),
        }
    }

    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.outcomes.values().filter(|o| pred(o)).count()
    }
}

impl BenchSink for Recorder {
    fn suite(&self) -> Suite {
        Suite::Quick
    }

    fn skip(&mut self, id: &BenchId, reason: String) {
        self.outcomes.insert(id.full(), Outcome::Skipped(reason));
    }

    fn bench<'w, F>(&mut self, id: &BenchId, _: Throughput, _: SamplingProfile, prepare: F)
    where
        F: FnOnce() -> Result<Box<dyn TimedWorkload + 'w>, BackendError>,
    {
        let outcome = match measure(prepare) {
            Ok((notes, elapsed)) => Outcome::Measured { notes, elapsed },
            Err(error) if error.is_skip() => Outcome::Skipped(error.to_string()),
            Err(error) => Outcome::Failed(error.to_string()),
        };
        self.outcomes.insert(id.full(), outcome);
    }
}

type Measured = (BTreeMap<String, serde_json::Value>, Duration);

fn measure<'w>(
    prepare: impl FnOnce() -> Result<Box<dyn TimedWorkload + 'w>, BackendError>,
) -> Result<Measured, BackendError> {
    let mut workload = prepare()?;
    workload.verify()?;
    workload.run(1)?;
    let elapsed = workload.run(3)?;
    Ok((workload.notes(), elapsed))
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixtures_dir() -> PathBuf {
    repo_root().join("tests/fixtures/components")
}

/// An environment with only `PATH` (tests never mutate the process environment).
pub fn env_with_path(path: &str) -> HashMap<String, OsString> {
    HashMap::from([("PATH".to_owned(), OsString::from(path))])
}

/// The bare `python3` on this machine's PATH, or `None` after saying the test skips,
/// unless `STACKBENCH_REQUIRE_COMPONENTS=1` (CI) makes that a failure.
pub fn bare_python() -> Option<Interpreter> {
    let path = std::env::var("PATH").unwrap_or_default();
    match Interpreter::discover_in(&env_with_path(&path)) {
        Ok(python) => Some(python),
        Err(e) => skip_unless_required(&format!("no python3 on PATH ({e})")),
    }
}

/// `None`, saying why the test skips; a failure instead when CI requires the component
/// tests to run (`STACKBENCH_REQUIRE_COMPONENTS=1`).
fn skip_unless_required<T>(why: &str) -> Option<T> {
    let required = std::env::var("STACKBENCH_REQUIRE_COMPONENTS").is_ok_and(|v| v == "1");
    assert!(!required, "STACKBENCH_REQUIRE_COMPONENTS=1 but {why}");
    eprintln!("skipping: {why}");
    None
}

/// A `STACKBENCH_PYTHON`-style lookup naming `python`.
pub fn explicit(python: &Path) -> Result<Interpreter, InterpreterError> {
    let mut env = env_with_path("");
    env.insert(
        "STACKBENCH_PYTHON".to_owned(),
        python.as_os_str().to_owned(),
    );
    Interpreter::discover_in(&env)
}

/// True once `pid` no longer runs (gone, or a zombie waiting for a reaper that is not us).
pub fn process_gone(pid: u32) -> bool {
    for _ in 0..200 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|rest| rest.split_whitespace().next());
                if state == Some("Z") || state == Some("X") {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// The interpreter with the CPU Python stack: `STACKBENCH_PYTHON`, else
/// `.venv-components/bin/python` at the repository root. `None` (the caller says it skips)
/// when neither exists, unless `STACKBENCH_REQUIRE_COMPONENTS=1` (CI) makes that a failure.
pub fn venv_python() -> Option<std::path::PathBuf> {
    let explicit = std::env::var_os("STACKBENCH_PYTHON").filter(|v| !v.is_empty());
    let path = explicit
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv-components/bin/python"));
    if path.exists() {
        return Some(path);
    }
    skip_unless_required(&format!(
        "{} does not exist (run ci/setup_python_env.sh)",
        path.display()
    ))
}

/// Writes an executable interpreter wrapper into `dir`: it runs `python` with `flags`, with
/// `path_first` (fake packages) ahead of whatever `PYTHONPATH` the runner sets, so a fake
/// shadows an installed package without the test touching its own environment.
pub fn python_wrapper(
    dir: &Path,
    python: &Path,
    flags: &str,
    path_first: Option<&Path>,
) -> PathBuf {
    let wrapper = dir.join("python-wrapper");
    let export = path_first
        .map(|p| {
            format!(
                "export PYTHONPATH='{}'\"${{PYTHONPATH:+:$PYTHONPATH}}\"\n",
                p.display()
            )
        })
        .unwrap_or_default();
    write_script(
        &wrapper,
        &format!(
            "#!/bin/sh\n{export}exec '{}' {flags} \"$@\"\n",
            python.display()
        ),
    );
    wrapper
}

/// Writes an executable script without this process ever holding it open for writing.
/// Tests run on many threads: one that forks while the script is open here carries the
/// write handle into its child until that child execs, and executing the script in that
/// window fails with ETXTBSY ("Text file busy"). A `sh` child writes it instead, so no
/// handle of this process can leak.
pub fn write_script(path: &Path, content: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(content.as_bytes())
        .expect("script written to sh");
    let status = child.wait().expect("sh finishes");
    assert!(
        status.success(),
        "writing {} failed: {status}",
        path.display()
    );
}

/// A folder of fake packages under `tests/fixtures/components/fake_packages`.
pub fn fake_packages(name: &str) -> PathBuf {
    fixtures_dir().join("fake_packages").join(name)
}
