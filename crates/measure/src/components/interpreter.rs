//! Which Python the components run in. The user's question is "did *my* stack get faster",
//! so the runner uses the environment they run models with: `STACKBENCH_PYTHON` when set,
//! else the active virtualenv, else the active conda env, else `python3` on `PATH`. The
//! chosen path and its version go into every benchmark's notes.
//!
//! An explicit `STACKBENCH_PYTHON` that does not exist is an error, never a silent fall
//! back: measuring a different environment than the one asked for would be a wrong answer.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable naming the interpreter explicitly.
pub const PYTHON_ENV: &str = "STACKBENCH_PYTHON";

/// How long `python --version`-style probing may take (a cold interpreter on a busy disk).
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the interpreter path came from, for messages and the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterpreterSource {
    /// `STACKBENCH_PYTHON`.
    Explicit,
    /// `$VIRTUAL_ENV/bin/python`.
    VirtualEnv,
    /// `$CONDA_PREFIX/bin/python`.
    Conda,
    /// `python3` found on `PATH`.
    Path,
}

impl fmt::Display for InterpreterSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InterpreterSource::Explicit => PYTHON_ENV,
            InterpreterSource::VirtualEnv => "the active virtualenv (VIRTUAL_ENV)",
            InterpreterSource::Conda => "the active conda env (CONDA_PREFIX)",
            InterpreterSource::Path => "python3 on PATH",
        })
    }
}

/// A Python interpreter that answered a version probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    pub path: PathBuf,
    /// `sys.version` up to the first space, e.g. `3.11.7`.
    pub version: String,
    pub source: InterpreterSource,
}

/// Why no interpreter could be used; each names the path or variable concerned.
#[derive(Debug, thiserror::Error)]
pub enum InterpreterError {
    #[error("{PYTHON_ENV}={path} does not exist")]
    ExplicitMissing { path: PathBuf },
    #[error("{PYTHON_ENV}={name} is not a file and no executable of that name is on PATH")]
    ExplicitNotOnPath { name: PathBuf },
    #[error("no python3 found on PATH (set {PYTHON_ENV} to the interpreter of your ML stack)")]
    NotOnPath,
    #[error("cannot start Python at {path} (from {source_kind}): {error}")]
    Spawn {
        path: PathBuf,
        source_kind: InterpreterSource,
        #[source]
        error: std::io::Error,
    },
    #[error("Python at {path} (from {source_kind}) did not answer a version probe: {detail}")]
    Probe {
        path: PathBuf,
        source_kind: InterpreterSource,
        detail: String,
    },
}

/// Environment lookups, injectable so tests never mutate the process environment.
pub trait EnvLookup {
    fn var(&self, name: &str) -> Option<OsString>;
}

/// The real process environment.
pub struct ProcessEnv;

impl EnvLookup for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name).filter(|v| !v.is_empty())
    }
}

impl EnvLookup for HashMap<String, OsString> {
    fn var(&self, name: &str) -> Option<OsString> {
        self.get(name).filter(|v| !v.is_empty()).cloned()
    }
}

impl Interpreter {
    /// Finds and probes the interpreter from the process environment.
    pub fn discover() -> Result<Interpreter, InterpreterError> {
        Interpreter::discover_in(&ProcessEnv)
    }

    /// Finds and probes the interpreter from `env`.
    pub fn discover_in(env: &dyn EnvLookup) -> Result<Interpreter, InterpreterError> {
        let (path, source) = locate(env)?;
        let version = probe_version(&path, &source)?;
        Ok(Interpreter {
            path,
            version,
            source,
        })
    }
}

/// Picks the path by precedence, without running it.
pub fn locate(env: &dyn EnvLookup) -> Result<(PathBuf, InterpreterSource), InterpreterError> {
    let search_path = env.var("PATH").unwrap_or_default();
    let on_path = |name: &Path| {
        std::env::split_paths(&search_path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    };
    if let Some(explicit) = env.var(PYTHON_ENV) {
        let mut path = PathBuf::from(explicit);
        // A bare name (`python3`) is looked up on PATH as a shell would, not taken as a file
        // in the working directory: found on a GPU machine where STACKBENCH_PYTHON=python3
        // skipped every component as "does not exist".
        if path.components().count() == 1 && !path.exists() {
            match on_path(&path) {
                Some(found) => path = found,
                None => return Err(InterpreterError::ExplicitNotOnPath { name: path }),
            }
        }
        if !path.exists() {
            return Err(InterpreterError::ExplicitMissing { path });
        }
        // Absolute, but symlinks kept: a venv's `bin/python` links to the base interpreter,
        // and resolving it would lose the environment the user named.
        let path = std::path::absolute(&path).unwrap_or(path);
        return Ok((path, InterpreterSource::Explicit));
    }
    let candidates = [
        ("VIRTUAL_ENV", InterpreterSource::VirtualEnv),
        ("CONDA_PREFIX", InterpreterSource::Conda),
    ];
    for (variable, source) in candidates {
        if let Some(prefix) = env.var(variable) {
            let path = PathBuf::from(prefix).join("bin").join("python");
            if path.exists() {
                return Ok((path, source));
            }
        }
    }
    on_path(Path::new("python3"))
        .map(|path| (path, InterpreterSource::Path))
        .ok_or(InterpreterError::NotOnPath)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs the interpreter once, bounded by a timeout, and reads its version.
fn probe_version(path: &Path, source: &InterpreterSource) -> Result<String, InterpreterError> {
    let probe_error = |detail: String| InterpreterError::Probe {
        path: path.to_path_buf(),
        source_kind: source.clone(),
        detail,
    };
    let mut child = Command::new(path)
        .args(["-I", "-c", "import sys; print(sys.version.split()[0])"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|error| InterpreterError::Spawn {
            path: path.to_path_buf(),
            source_kind: source.clone(),
            error,
        })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > PROBE_TIMEOUT => {
                // The probe is our own child, in its own group: nothing else is killed.
                let _ = child.kill();
                let _ = child.wait();
                return Err(probe_error(format!(
                    "no answer within {} s",
                    PROBE_TIMEOUT.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => return Err(probe_error(format!("waiting for it failed: {error}"))),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let version = stdout.trim().to_owned();
    let looks_like_version = version
        .split('.')
        .next()
        .is_some_and(|major| major.parse::<u32>().is_ok());
    if !status.success() || !looks_like_version {
        return Err(probe_error(format!(
            "exit {status}, stdout {:?}, stderr {:?}",
            truncate(&stdout, 200),
            truncate(stderr.trim(), 400)
        )));
    }
    Ok(version)
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max_chars).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, OsString> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect()
    }

    #[test]
    fn explicit_path_that_does_not_exist_is_an_error_naming_it() {
        let err = locate(&env(&[
            (PYTHON_ENV, "/no/such/python"),
            ("PATH", "/usr/bin"),
        ]))
        .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("/no/such/python"), "{message}");
        assert!(message.contains(PYTHON_ENV), "{message}");
    }

    #[test]
    fn a_bare_explicit_name_is_looked_up_on_path_and_named_when_absent() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let python = dir.path().join("python3.12");
        std::fs::write(&python, "").unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let search = dir.path().to_string_lossy().into_owned();
        let (path, source) =
            locate(&env(&[(PYTHON_ENV, "python3.12"), ("PATH", &search)])).unwrap();
        assert_eq!(source, InterpreterSource::Explicit);
        assert_eq!(path, python);
        let err = locate(&env(&[(PYTHON_ENV, "python9.99"), ("PATH", &search)])).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("python9.99") && message.contains("PATH"),
            "{message}"
        );
    }

    #[test]
    fn virtualenv_wins_over_path_and_empty_path_finds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/python"), "").unwrap();
        let venv = dir.path().to_string_lossy().into_owned();
        let (path, source) = locate(&env(&[("VIRTUAL_ENV", &venv), ("PATH", "")])).unwrap();
        assert_eq!(source, InterpreterSource::VirtualEnv);
        assert_eq!(path, dir.path().join("bin/python"));
        let err = locate(&env(&[("PATH", "")])).unwrap_err();
        assert!(matches!(err, InterpreterError::NotOnPath), "{err}");
    }
}
