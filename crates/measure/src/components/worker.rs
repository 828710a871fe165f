//! One worker process and everything that can go wrong with it.
//!
//! Why it is built this way:
//! - The worker runs in its own process group (`process_group(0)`), and every kill is a
//!   `SIGKILL` to the whole group: a hung CUDA kernel, a vLLM engine subprocess or a
//!   compiler child would survive a kill of the direct child alone.
//! - The group is killed *before* the leader is reaped, so its id cannot have been reused
//!   by an unrelated process when the signal is sent.
//! - stdout and stderr are drained by reader threads: stdout lines go through a channel so
//!   every call can wait with a timeout; stderr goes into a bounded ring buffer whose tail
//!   is attached to every error, because "exited with status 1" alone explains nothing.
//! - A line on stdout that is not a protocol response (a library that printed) is logged,
//!   a bounded number of times, and skipped: it never kills the run.
//! - `Drop` closes a live worker's stdin and gives it `EXIT_GRACE` to tear down and exit,
//!   then kills the group and reaps it, ignoring every error: it never panics.

use super::config::RunnerConfig;
use super::protocol::{FailureKind, Op, Request, parse_response};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A protocol line longer than this is cut (a library dumping an array must not exhaust
/// memory); real responses are a few KiB.
const MAX_LINE_BYTES: usize = 4 << 20;
/// Characters kept of each stderr line.
const MAX_STDERR_LINE_CHARS: usize = 2000;
/// How long a worker that closed its stdout gets to exit on its own before being killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Errors from a worker, each naming the component and the op concerned, with the tail of
/// the worker's stderr where the worker itself went wrong.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("worker script for {component} not found at {}", script.display())]
    MissingScript { component: String, script: PathBuf },
    #[error("cannot start the {component} worker with {}: {error}", python.display())]
    Spawn {
        component: String,
        python: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("the {component} worker did not answer '{op}' within {:.1} s; its process group was killed{}", timeout.as_secs_f64(), tail_suffix(.stderr_tail))]
    Timeout {
        component: String,
        op: &'static str,
        timeout: Duration,
        stderr_tail: String,
    },
    #[error("the {component} worker exited ({status}) during '{op}'{}{}", stray_suffix(*.stray_lines), tail_suffix(.stderr_tail))]
    Exited {
        component: String,
        op: &'static str,
        status: String,
        stray_lines: usize,
        stderr_tail: String,
    },
    #[error("{component}: '{op}' failed: {message}")]
    Failed {
        component: String,
        op: &'static str,
        kind: FailureKind,
        message: String,
    },
    #[error("{component}: '{op}' returned a result of the wrong shape: {detail}")]
    Protocol {
        component: String,
        op: &'static str,
        detail: String,
    },
    #[error("the {component} worker is no longer running: {reason}")]
    Dead { component: String, reason: String },
}

impl WorkerError {
    /// True when the worker process is gone (or was killed) and cannot answer again.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            WorkerError::Timeout { .. }
                | WorkerError::Exited { .. }
                | WorkerError::Dead { .. }
                | WorkerError::Spawn { .. }
                | WorkerError::MissingScript { .. }
        )
    }

    /// The worker's stderr tail, when the error carries one.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            WorkerError::Timeout { stderr_tail, .. } | WorkerError::Exited { stderr_tail, .. } => {
                Some(stderr_tail)
            }
            _ => None,
        }
    }
}

fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        "; it wrote nothing to stderr".into()
    } else {
        format!("; last lines of its stderr:\n{tail}")
    }
}

fn stray_suffix(stray_lines: usize) -> String {
    if stray_lines == 0 {
        String::new()
    } else {
        format!(" after {stray_lines} non-protocol line(s) on its stdout")
    }
}

/// What the stdout reader thread sees.
enum StdoutEvent {
    Line(String),
    Eof,
}

/// The last lines a worker wrote to stderr.
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    capacity: usize,
}

impl StderrTail {
    fn push(&self, line: String) {
        // A poisoned lock only means a reader thread panicked mid-push; the text is still
        // worth showing.
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() == self.capacity {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn text(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// A running worker process speaking the protocol.
pub struct Worker {
    component: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<StdoutEvent>,
    stderr_tail: Arc<StderrTail>,
    stderr_thread: Option<JoinHandle<()>>,
    next_id: u64,
    stray_lines: usize,
    max_logged_stray_lines: usize,
    /// Set once the process is gone: the reason every later call reports.
    dead: Option<String>,
    reaped: bool,
}

impl Worker {
    /// Starts `python -u <script>` in its own process group: the component's script
    /// (`RunnerConfig::script_for`, which `ComponentSession::start` resolves) or a test's
    /// fake worker.
    pub fn spawn_script(
        python: &Path,
        component: &str,
        script: &Path,
        config: &RunnerConfig,
    ) -> Result<Worker, WorkerError> {
        if !script.is_file() {
            return Err(WorkerError::MissingScript {
                component: component.into(),
                script: script.to_path_buf(),
            });
        }
        let mut child = Command::new(python)
            .arg("-u")
            .arg(script)
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONPATH", python_path_with(&config.helpers_dir))
            .envs(config.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|error| WorkerError::Spawn {
                component: component.into(),
                python: python.to_path_buf(),
                error,
            })?;
        let (sender, lines) = channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || read_stdout(stdout, sender));
        }
        let stderr_tail = Arc::new(StderrTail {
            lines: Mutex::new(VecDeque::new()),
            capacity: config.stderr_tail_lines.max(1),
        });
        let stderr_thread = child.stderr.take().map(|stderr| {
            let tail = Arc::clone(&stderr_tail);
            let echo = config.echo_stderr.then(|| component.to_owned());
            std::thread::spawn(move || read_stderr(stderr, &tail, echo.as_deref()))
        });
        Ok(Worker {
            component: component.into(),
            stdin: child.stdin.take(),
            child,
            lines,
            stderr_tail,
            stderr_thread,
            next_id: 1,
            stray_lines: 0,
            max_logged_stray_lines: config.max_logged_stray_lines,
            dead: None,
            reaped: false,
        })
    }

    pub fn component(&self) -> &str {
        &self.component
    }

    /// The worker's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lines on its stdout that were not protocol responses, so far.
    pub fn stray_lines(&self) -> usize {
        self.stray_lines
    }

    /// Why the worker is gone, if it is.
    pub fn dead_reason(&self) -> Option<&str> {
        self.dead.as_deref()
    }

    /// The current tail of its stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail.text()
    }

    /// Sends one request and waits up to `timeout` for its response. A timeout or an exit
    /// kills the process group, and every later call reports why the worker is gone.
    pub fn call(&mut self, op: Op, timeout: Duration) -> Result<serde_json::Value, WorkerError> {
        if let Some(reason) = &self.dead {
            return Err(WorkerError::Dead {
                component: self.component.clone(),
                reason: reason.clone(),
            });
        }
        let op_name = op.name();
        let id = self.next_id;
        self.next_id += 1;
        let result = match self.send(&Request { id, op }) {
            Ok(()) => self.await_response(id, op_name, timeout),
            // A closed stdin means the worker is gone: report how it ended.
            Err(_) => Err(self.exited(op_name)),
        };
        if let Err(error) = &result
            && error.is_fatal()
        {
            self.dead = Some(error.to_string());
        }
        result
    }

    fn send(&mut self, request: &Request) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin already closed"))?;
        let mut line = serde_json::to_vec(request).map_err(std::io::Error::other)?;
        line.push(b'\n');
        stdin.write_all(&line)?;
        stdin.flush()
    }

    fn await_response(
        &mut self,
        id: u64,
        op: &'static str,
        timeout: Duration,
    ) -> Result<serde_json::Value, WorkerError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(StdoutEvent::Line(line)) => match parse_response(&line) {
                    Some(response) if response.id == id => {
                        return if response.ok {
                            Ok(response.result)
                        } else {
                            Err(WorkerError::Failed {
                                component: self.component.clone(),
                                op,
                                kind: response.kind,
                                message: response
                                    .error
                                    .unwrap_or_else(|| "no message given".into()),
                            })
                        };
                    }
                    Some(stale) => self.log_stray(&format!("response to old request {}", stale.id)),
                    None => self.log_stray(&line),
                },
                Ok(StdoutEvent::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.exited(op));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.kill_and_reap();
                    return Err(WorkerError::Timeout {
                        component: self.component.clone(),
                        op,
                        timeout,
                        stderr_tail: self.final_stderr_tail(),
                    });
                }
            }
        }
    }

    fn log_stray(&mut self, line: &str) {
        self.stray_lines += 1;
        if self.stray_lines <= self.max_logged_stray_lines {
            let shown: String = line.chars().take(200).collect();
            eprintln!(
                "stackbench components/{}: ignoring a non-protocol line on the worker's stdout: {shown:?}",
                self.component
            );
        } else if self.stray_lines == self.max_logged_stray_lines + 1 {
            eprintln!(
                "stackbench components/{}: more non-protocol lines follow; not showing them",
                self.component
            );
        }
    }

    /// The worker closed its stdout: give it a moment to exit, then collect how it ended.
    fn exited(&mut self, op: &'static str) -> WorkerError {
        let started = Instant::now();
        while started.elapsed() < EXIT_GRACE && !self.has_exited() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let status = self.kill_and_reap();
        WorkerError::Exited {
            component: self.component.clone(),
            op,
            status,
            stray_lines: self.stray_lines,
            stderr_tail: self.final_stderr_tail(),
        }
    }

    /// Whether the leader has exited, without reaping it (so its group id stays reserved
    /// until the group is killed).
    fn has_exited(&self) -> bool {
        let pid: libc::id_t = self.child.id();
        // SAFETY: waitid only writes into the zeroed siginfo we own; WNOWAIT leaves the
        // child waitable, so std's Child::wait still reaps it later.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            rc == 0 && info.si_pid() != 0
        }
    }

    /// Kills the whole process group, then reaps the leader; returns how it ended.
    fn kill_and_reap(&mut self) -> String {
        self.stdin = None;
        if self.reaped {
            return "already reaped".into();
        }
        kill_group(self.child.id());
        self.reaped = true;
        match self.child.wait() {
            Ok(status) => status.to_string(),
            Err(error) => format!("status unknown: {error}"),
        }
    }

    /// The stderr tail once the process is gone: waits briefly for the reader to drain.
    fn final_stderr_tail(&mut self) -> String {
        if let Some(handle) = self.stderr_thread.take() {
            let started = Instant::now();
            while !handle.is_finished() && started.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
        self.stderr_tail.text()
    }

    /// Kills the whole group now and returns all the worker wrote to stderr (up to the tail's
    /// bound), drained to its end: for a failure whose message should show what the worker
    /// logged before answering (a traceback).
    pub fn kill_with_stderr_tail(mut self) -> String {
        self.kill_and_reap();
        self.final_stderr_tail()
    }

    /// Asks the worker to exit, then makes sure its whole group is gone.
    /// A worker already gone is only reaped: its death was reported when it happened.
    pub fn shutdown(mut self, timeout: Duration) -> Result<(), WorkerError> {
        if self.dead.is_some() {
            self.kill_and_reap();
            return Ok(());
        }
        let result = self.call(Op::Shutdown, timeout).map(|_| ());
        let started = Instant::now();
        while started.elapsed() < EXIT_GRACE && !self.has_exited() {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_and_reap();
        result
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        // A live worker reads EOF, tears its last benchmark down (removing what it wrote,
        // such as ONNX Runtime's optimised model under /tmp) and exits: it gets the same
        // grace as `shutdown` before its group is killed. A dead one is killed at once.
        if self.dead.is_none() {
            self.stdin = None;
            let started = Instant::now();
            while started.elapsed() < EXIT_GRACE && !self.has_exited() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.kill_and_reap();
    }
}

/// SIGKILL to the process group led by `pid` (workers are started with `process_group(0)`,
/// so their group id is their pid).
fn kill_group(pid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill has no memory effects; a negative pid addresses the group we created.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// `PYTHONPATH` with the helpers folder (`lib/`) first, so workers (and test fixtures living
/// elsewhere) import the shared protocol helper.
fn python_path_with(helpers_dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![helpers_dir.to_path_buf()];
    if let Some(existing) = std::env::var_os("PYTHONPATH") {
        paths.extend(std::env::split_paths(&existing));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| helpers_dir.as_os_str().to_owned())
}

fn read_stdout(stdout: impl Read, sender: Sender<StdoutEvent>) {
    for_each_line(stdout, |line| {
        let line = String::from_utf8_lossy(line).into_owned();
        sender.send(StdoutEvent::Line(line)).is_ok()
    });
    // Where the loop stopped because the reader has gone, this send fails as well: fine.
    let _ = sender.send(StdoutEvent::Eof);
}

fn read_stderr(stderr: impl Read, tail: &StderrTail, echo_as: Option<&str>) {
    for_each_line(stderr, |line| {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end();
        if let Some(component) = echo_as {
            eprintln!("[{component}] {line}");
        }
        tail.push(line.chars().take(MAX_STDERR_LINE_CHARS).collect());
        true
    });
}

/// Hands `each` every line of `stream` (at most [`MAX_LINE_BYTES`] of it) until the stream
/// ends or fails, or `each` returns false: one loop for the worker's stdout and stderr.
fn for_each_line(stream: impl Read, mut each: impl FnMut(&[u8]) -> bool) {
    let mut reader = BufReader::new(stream);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match read_bounded_line(&mut reader, &mut buffer, MAX_LINE_BYTES) {
            Ok(true) if each(&buffer) => {}
            _ => return,
        }
    }
}

/// Reads one line (without its newline) into `buffer`, keeping at most `max` bytes and
/// discarding the rest of an over-long line. `Ok(false)` at end of stream.
pub fn read_bounded_line(
    reader: &mut impl BufRead,
    buffer: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<bool> {
    let mut read_any = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        let room = max.saturating_sub(buffer.len());
        buffer.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let consumed = chunk.len() + usize::from(found_newline);
        reader.consume(consumed);
        if found_newline {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_cut_long_lines_and_keep_the_next() {
        let text = format!("{}\nshort\nlast", "x".repeat(100));
        let mut reader = BufReader::with_capacity(7, text.as_bytes());
        let mut buffer = Vec::new();
        assert!(read_bounded_line(&mut reader, &mut buffer, 10).unwrap());
        assert_eq!(buffer, b"xxxxxxxxxx");
        buffer.clear();
        assert!(read_bounded_line(&mut reader, &mut buffer, 10).unwrap());
        assert_eq!(buffer, b"short");
        buffer.clear();
        assert!(read_bounded_line(&mut reader, &mut buffer, 10).unwrap());
        assert_eq!(buffer, b"last");
        buffer.clear();
        assert!(!read_bounded_line(&mut reader, &mut buffer, 10).unwrap());
    }

    #[test]
    fn stderr_tail_keeps_the_last_lines() {
        let tail = StderrTail {
            lines: Mutex::new(VecDeque::new()),
            capacity: 2,
        };
        for line in ["a", "b", "c"] {
            tail.push(line.into());
        }
        assert_eq!(tail.text(), "b\nc");
    }
}
