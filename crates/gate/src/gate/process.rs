//! Children of the gate (cargo, bench executables) run in their own process group, so a
//! Ctrl-C reaches only the gate, which then ends the whole group and cleans up; their output
//! is read line by line (progress, cargo's artifact list) and their stderr goes to a log
//! file whose tail becomes the error message when they fail.

use super::GateError;
use super::interrupt::interrupted;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// How many lines of a failed child's output an error quotes.
pub const TAIL_LINES: usize = 25;

/// Runs `command`, passing every line it prints to `on_line` and keeping its stderr in
/// `log` (Criterion reports progress and panics there, cargo its diagnostics); returns the
/// exit status. Ends the child's process group and returns `Interrupted` on Ctrl-C.
pub fn run_logged(
    mut command: Command,
    log: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<ExitStatus, GateError> {
    let io = |source| GateError::Io {
        path: log.to_path_buf(),
        source,
    };
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut log_file = std::fs::File::create(log).map_err(io)?;
    let program = format!("{:?}", command.get_program());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| GateError::Spawn { program, source })?;
    let (tx, rx) = std::sync::mpsc::channel::<(bool, String)>();
    let stdout = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn Read + Send>);
    let stderr = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn Read + Send>);
    let readers = [
        forward(stdout, false, tx.clone()),
        forward(stderr, true, tx),
    ];
    let mut take = |(is_stderr, line): (bool, String)| {
        if is_stderr {
            let _ = writeln!(log_file, "{line}");
        }
        on_line(&line);
    };
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            take(line);
        }
        if interrupted() {
            stop_group(&mut child);
            return Err(GateError::Interrupted);
        }
        match child.try_wait().map_err(io)? {
            Some(status) => break status,
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    for reader in readers {
        let _ = reader.join();
    }
    for line in rx.try_iter() {
        take(line);
    }
    Ok(status)
}

/// Sends each line of `stream` down `tx`, tagged with whether it is stderr.
fn forward(
    stream: Option<Box<dyn Read + Send>>,
    is_stderr: bool,
    tx: std::sync::mpsc::Sender<(bool, String)>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(stream) = stream else { return };
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send((is_stderr, line)).is_err() {
                break;
            }
        }
    })
}

/// How long a bench process has to end after SIGTERM before it is killed: long enough to
/// restore locked GPU clocks (`--lock-clocks` restores on SIGTERM), short enough that a
/// Ctrl-C still ends the gate at once.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// Ends the bench's process group: SIGTERM first, so a bench holding locked GPU clocks
/// restores them (SIGKILL cannot be caught), then SIGKILL for whatever is left after
/// [`TERM_GRACE`].
fn stop_group(child: &mut std::process::Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    let signal = |sig| {
        // SAFETY: signalling a process group we created; failure (already gone) is harmless.
        unsafe {
            libc::kill(-pid, sig);
        }
    };
    signal(libc::SIGTERM);
    let deadline = std::time::Instant::now() + TERM_GRACE;
    while std::time::Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            // The leader is gone; anything else it left in the group goes too.
            signal(libc::SIGKILL);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(libc::SIGKILL);
    let _ = child.wait();
}

/// The last [`TAIL_LINES`] lines of a log, for an error message.
pub fn tail(log: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let _ = file.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}
