//! Ctrl-C during a gate: the flag lives in [`crate::system::interrupt`] (the model sweep
//! uses it too); the gate's loops check it, kill the child's process group, and unwind so
//! every worktree is removed.

pub use crate::system::interrupt::{install, interrupted};
