//! The signal path of the clock guard: Ctrl-C (SIGINT), SIGTERM (a CI runner cancelling a
//! job) and SIGHUP (a closed terminal) end a bench target without unwinding, so `Drop`
//! never runs; the clocks would stay locked until someone resets them.
//!
//! A signal handler may only do async-signal-safe work, and NVML calls or starting
//! `rocm-smi` are not. So the handler writes the signal number into a pipe; a watcher thread
//! blocked on the pipe restores every registered device, then puts the default action back
//! and raises the signal again, so the process ends as the signal meant it to (exit status
//! and all). The handlers are installed only once a lock is asked for: a run that changes no
//! clock keeps Criterion's and the shell's signal behaviour untouched.

use super::Devices;
use std::sync::{Arc, Mutex, Once, Weak};

/// The signals that end a bench target from outside.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Every clock guard of this process that may hold a lock (weak: a finished guard is gone).
static REGISTERED: Mutex<Vec<Weak<Mutex<Devices>>>> = Mutex::new(Vec::new());
/// The write end of the pipe the handler signals through (-1 until installed).
static PIPE_WRITE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static INSTALL: Once = Once::new();

/// Registers `devices` for the signal path and installs it on first use.
pub(crate) fn register(devices: &Arc<Mutex<Devices>>) {
    let mut registered = match REGISTERED.lock() {
        Ok(r) => r,
        Err(poisoned) => poisoned.into_inner(),
    };
    registered.retain(|w| w.strong_count() > 0);
    registered.push(Arc::downgrade(devices));
    drop(registered);
    INSTALL.call_once(install);
}

/// Restores every registered device still locked; returns how many were restored. What the
/// watcher runs when a signal arrives.
pub fn restore_registered() -> usize {
    let registered: Vec<Arc<Mutex<Devices>>> = match REGISTERED.lock() {
        Ok(r) => r.iter().filter_map(Weak::upgrade).collect(),
        Err(poisoned) => poisoned
            .into_inner()
            .iter()
            .filter_map(Weak::upgrade)
            .collect(),
    };
    registered
        .iter()
        .map(|devices| match devices.lock() {
            Ok(mut d) => d.restore_all(),
            Err(poisoned) => poisoned.into_inner().restore_all(),
        })
        .sum()
}

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = PIPE_WRITE.load(std::sync::atomic::Ordering::SeqCst);
    if fd >= 0 {
        let byte = signal as u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a live local.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Creates the pipe and the watcher, then installs the handlers. A failure leaves the
/// default actions in place and says so: the guard's `Drop` still covers a normal end and
/// a panic.
fn install() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe(2) writes two descriptors into the array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        eprintln!(
            "warning: clocks will not be restored on Ctrl-C: no pipe for the signal path ({})",
            std::io::Error::last_os_error()
        );
        return;
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    let watcher = std::thread::Builder::new()
        .name("stackbench-clock-restore".into())
        .spawn(move || watch(read_fd));
    if let Err(error) = watcher {
        eprintln!("warning: clocks will not be restored on Ctrl-C: {error}");
        return;
    }
    PIPE_WRITE.store(write_fd, std::sync::atomic::Ordering::SeqCst);
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in SIGNALS {
        // SAFETY: the handler only writes one byte to a pipe.
        unsafe {
            libc::signal(signal, handler);
        }
    }
}

/// Waits for a signal number on the pipe, restores, then ends the process the way that
/// signal would have.
fn watch(read_fd: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            let signal = libc::c_int::from(byte);
            let restored = restore_registered();
            eprintln!("stackbench: signal {signal}: GPU clocks restored on {restored} device(s)");
            // SAFETY: resetting the disposition and raising are plain libc calls here,
            // outside any handler.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
            // A signal whose default action does not end the process: nothing more to do.
            return;
        }
        if n == 0 {
            return;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClockController, ClockGuard, ClockPair, LockRefused, LockedClocks};
    use std::path::PathBuf;
    use std::process::Command;

    /// The variable that makes the ignored test below the child of the signal test.
    const CHILD_ENV: &str = "STACKBENCH_TEST_CLOCK_SIGNAL_FILE";

    /// A controller whose state is a file, so the parent sees what the killed child did.
    struct FileClocks(PathBuf);

    impl ClockController for FileClocks {
        fn device(&self) -> String {
            "file".into()
        }
        fn read(&self) -> Result<ClockPair, String> {
            Ok(ClockPair::default())
        }
        fn lock(&mut self) -> Result<LockedClocks, LockRefused> {
            std::fs::write(&self.0, "locked").map_err(|e| LockRefused::Failed(e.to_string()))?;
            Ok(LockedClocks {
                sm_mhz: 1,
                memory_mhz: None,
                method: "file".into(),
            })
        }
        fn restore(&mut self) -> Result<(), String> {
            std::fs::write(&self.0, "restored").map_err(|e| e.to_string())
        }
    }

    #[test]
    #[ignore = "the child of the signal test below; does nothing on its own"]
    fn child_holding_a_lock() {
        let Some(path) = std::env::var_os(CHILD_ENV) else {
            return;
        };
        let _guard = ClockGuard::start(vec![Box::new(FileClocks(path.into()))], true, "");
        // Held until the parent's signal ends the process (no unwinding, no Drop).
        std::thread::sleep(std::time::Duration::from_secs(60));
    }

    #[test]
    fn sigterm_and_sigint_restore_a_held_lock_and_still_end_the_process() {
        use std::os::unix::process::ExitStatusExt;
        for signal in [libc::SIGTERM, libc::SIGINT] {
            let dir = tempfile::tempdir().unwrap();
            let state = dir.path().join("clocks");
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "system::clocks::restore::tests::child_holding_a_lock",
                ])
                .args(["--ignored", "--test-threads", "1"])
                .env(CHILD_ENV, &state)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut waited = 0;
            while std::fs::read_to_string(&state).ok().as_deref() != Some("locked") {
                assert!(waited < 3000, "the child never locked");
                std::thread::sleep(std::time::Duration::from_millis(10));
                waited += 1;
            }
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let status = child.wait().unwrap();
            assert_eq!(std::fs::read_to_string(&state).unwrap(), "restored");
            assert_eq!(
                status.signal(),
                Some(signal),
                "ended by the signal: {status:?}"
            );
        }
    }
}
