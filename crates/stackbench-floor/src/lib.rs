//! The two loops `analyze-trends gate` times before its rounds (stackbench's
//! `src/gate/calibrate.rs`). They live in their own crate because a Rust function cannot
//! ask for its own optimisation level: stackbench's `Cargo.toml` sets `opt-level = 3` for
//! this package in the dev and test profiles (release is 3 already), so a debug
//! `analyze-trends` times the same machine code a release-built Criterion bench runs. Had
//! the empty loop been compiled at opt-level 0, its counter would live in memory and the
//! "floor" would be several times what any benchmark actually pays.
//!
//! Both functions are non-generic and `#[inline(never)]`: a generic or inlined function
//! would be compiled in the calling crate, at the caller's optimisation level.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Criterion's `Bencher::iter` around an empty routine: `iterations` times
/// `black_box(routine())` between two reads of `Instant` (what Criterion's `WallTime`
/// measurement reads). Its time per iteration is the least any `b.iter(..)` benchmark can
/// report on this machine.
#[inline(never)]
pub fn empty_iter_loop(iterations: u64) -> Duration {
    let routine = || ();
    let start = Instant::now();
    for _ in 0..black_box(iterations) {
        // Criterion's loop verbatim, unit argument and all: the point is the same code.
        #[allow(clippy::unit_arg)]
        black_box(routine());
    }
    start.elapsed()
}

/// A fixed amount of serial integer work (`steps` rounds of xorshift64, each depending on
/// the last, so the compiler can neither vectorise nor skip it). Timing it in repeated
/// blocks shows how much the machine, not the code, moves a measurement.
#[inline(never)]
pub fn fixed_work(steps: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15_u64);
    for _ in 0..black_box(steps) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_depends_on_its_length() {
        // Different lengths give different values: the loop is really run.
        assert_ne!(fixed_work(1), fixed_work(2));
        assert_eq!(fixed_work(1000), fixed_work(1000));
    }

    #[test]
    fn the_empty_loop_returns_a_duration() {
        // Only that it runs; its time is the calibration's business.
        let _ = empty_iter_loop(10);
    }
}
