//! Children of the gate (cargo, bench executables) run in their own process group, so a
//! Ctrl-C reaches only the gate, which then ends the whole group and cleans up; their output
//! is read line by line (progress, cargo's artifact list) and their stderr goes to a log
//! file whose tail becomes the error message when they fail.

use super::GateError;
use super::interrupt::interrupted;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// How many lines of a failed child's output an error quotes.
pub const TAIL_LINES: usize = 25;

/// Runs `command`, sending each stdout line to `on_line` and stderr to `log`; returns the
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
    let stderr = std::fs::File::create(log).map_err(io)?;
    let program = format!("{:?}", command.get_program());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|source| GateError::Spawn { program, source })?;
    let stdout = child.stdout.take();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        if let Some(out) = stdout {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        }
    });
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            on_line(&line);
        }
        if interrupted() {
            kill_group(child.id());
            let _ = child.wait();
            let _ = reader.join();
            return Err(GateError::Interrupted);
        }
        match child.try_wait().map_err(io)? {
            Some(status) => break status,
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let _ = reader.join();
    for line in rx.try_iter() {
        on_line(&line);
    }
    Ok(status)
}

fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: signalling a process group we created; failure (already gone) is harmless.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
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
