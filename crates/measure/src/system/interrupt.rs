//! Ctrl-C as a request, not an exit: the handler only raises a flag; the loops that wait on
//! children check it and unwind, so nothing is left half-written. The gate kills its
//! children's process groups and removes its worktrees; a model sweep stops after the cell
//! in flight and records every finished cell. A second Ctrl-C falls back to the default
//! (immediate exit).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    // Only async-signal-safe work here: a store, then the default action for the next one.
    INTERRUPTED.store(true, Ordering::SeqCst);
    // SAFETY: resetting a signal disposition is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Installs the handler for SIGINT and SIGTERM (a CI runner cancelling a job sends TERM).
pub fn install() {
    let handler = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic and resets the disposition.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
