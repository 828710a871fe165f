//! The calibration the gate runs before its first round, so that what this machine cannot
//! resolve is said at the start and not discovered after ten rounds (issue 17):
//!
//! - **timer resolution**: the smallest non-zero difference between two reads of `Instant`;
//! - **the floor**: the time per iteration of an *empty* routine through Criterion's
//!   `Bencher::iter` loop (`for _ in 0..n { black_box(routine()) }` between two `Instant`
//!   reads), as the slope of a least-squares line over iteration counts `d, 2d, … kd`, the
//!   linear sampling Criterion uses. The loop must be the machine code a release-built
//!   bench runs even in a debug `analyze-trends`, and Rust has no per-function opt-level:
//!   it is therefore written as inline assembly, the instructions rustc emits at opt-level
//!   3 for that loop (x86-64: `dec; jnz`, checked with objdump; AArch64: `subs; b.ne`),
//!   which no optimisation level changes ([`empty_iter_loop`]). A separate crate
//!   optimised through `[profile.dev.package.*]` was tried first and dropped: an
//!   unpublished path dependency makes `cargo package` fail. A
//!   benchmark whose time, on either side, is at most [`FLOOR_MULTIPLE`] × the floor is
//!   `below floor`: listed with the floor, never judged by the time rule (neither a
//!   regression nor a pass) and never measured again in extra rounds. The one exception:
//!   two sides that differ by more than that limit are judged as usual, since no loop
//!   overhead explains such a difference (a 1 ns routine that became 50 ns regressed);
//! - **noise**: a fixed serial integer loop timed in blocks of about 10 ms over about a
//!   second, on the gate's `--cpus` when given (where the bench executables will run). The
//!   noise is half the range of the middle 80 % of the block times, as a percent of their
//!   median: a change smaller than that is within what the machine alone does to a
//!   measurement, so when it exceeds the threshold the gate says so before round 1.
//!
//! The noise figure is a promise about the rounds, and it can be wrong: a fixed loop on an
//! idle machine may show 2 % while the benchmarks' rounds disagree by 35 % (issue 28). After
//! round 2 the gate therefore checks it against the rounds' own spread
//! ([`Calibration::check_against_rounds`]) and says so when the two differ by more than
//! [`CHECK_FACTOR`]×, with what to do, in the terminal at once and in the comment.
//!
//! Why 10 × the floor: the floor is one pass of the loop around the routine, about a cycle.
//! A routine within 10 floors of it is moved 10 % or more by one cycle more or less of that
//! loop (code alignment, a register spill: changes of the compiled loop, not of the routine),
//! which is twice the default 5 % threshold. Below that a time difference says nothing
//! about the routine, and re-measuring it cannot change that.

use super::GateOptions;
use crate::analysis::{BenchComparison, CalibrationCheck, Status};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A benchmark at most this many floors long, on either side, is `below floor`.
pub const FLOOR_MULTIPLE: f64 = 10.0;

/// The calibration's noise and the rounds' spread may differ by this factor, either way,
/// before the gate says so.
pub const CHECK_FACTOR: f64 = 2.0;

/// Iteration counts of the floor's fit: `d, 2d, … FIT_POINTS·d`.
const FIT_POINTS: u64 = 30;
/// Time one pass over the iteration counts may take; the fit takes, per count, the
/// fastest of [`PASSES`] passes (a preemption only ever adds time, and one in an early,
/// short point would tilt the line).
const FIT_BUDGET: Duration = Duration::from_millis(40);
const PASSES: usize = 5;
/// One block of the noise loop: the length of a Criterion sample at the gate's default
/// timing (1 s of measurement, up to 100 samples).
const BLOCK: Duration = Duration::from_millis(10);
/// How long the noise blocks run in all.
const NOISE_TIME: Duration = Duration::from_secs(1);

/// What the calibration found, written into `comparison.json` as `calibration`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Smallest non-zero difference between two `Instant` reads.
    pub timer_resolution_ns: f64,
    /// Time per iteration of an empty routine through Criterion's `iter` loop.
    pub floor_ns: f64,
    /// A benchmark at most `floor_multiple × floor_ns` long is `below floor`.
    pub floor_multiple: f64,
    /// Half the 10–90 % range of the noise blocks' times, in percent of their median.
    pub noise_percent: f64,
    /// How many noise blocks were timed.
    pub blocks: usize,
    /// How long the noise blocks took in all.
    pub seconds: f64,
}

impl Calibration {
    /// The time at or below which a benchmark is `below floor`.
    pub fn below_floor_ns(&self) -> f64 {
        self.floor_ns * self.floor_multiple
    }

    /// When the benchmark with these rounds is below the floor: the shorter side's time
    /// (the median over rounds of each round's median). Both sides must have measured it.
    /// A pair whose times differ by more than the limit itself is judged as usual: that
    /// difference is more loop passes than the loop around the routine can account for,
    /// so it is the routine's (a 1 ns routine that became 50 ns is a regression, not noise).
    pub fn below_floor(&self, sides: &[BTreeMap<usize, Vec<f64>>; 2]) -> Option<f64> {
        let time = |rounds: &BTreeMap<usize, Vec<f64>>| {
            let medians: Vec<f64> = rounds.values().map(|v| crate::stats::median(v)).collect();
            Some(crate::stats::median(&medians)).filter(|t| t.is_finite())
        };
        let (base, head) = (time(&sides[0])?, time(&sides[1])?);
        let (shorter, longer) = (base.min(head), base.max(head));
        let limit = self.below_floor_ns();
        (shorter <= limit && longer - shorter <= limit).then_some(shorter)
    }

    /// One line for stderr before the rounds.
    pub fn describe(&self) -> String {
        format!(
            "timer resolution {}, floor {} per iteration (a benchmark at or below {} = {} x the floor is `below floor`: listed, not judged, not re-measured), noise {:.2} % over {} blocks in {:.1} s",
            ns(self.timer_resolution_ns),
            ns(self.floor_ns),
            ns(self.below_floor_ns()),
            self.floor_multiple,
            self.noise_percent,
            self.blocks,
            self.seconds
        )
    }

    /// The warning when this machine's noise is above the threshold, or `None`.
    pub fn noise_warning(&self, threshold_percent: f64) -> Option<String> {
        (self.noise_percent > threshold_percent).then(|| {
            format!(
                "this machine's noise floor ({:.2} %) is above the threshold ({threshold_percent} %): a change of the threshold's size is within what the machine alone does to a measurement, so expect `inconclusive` results. Pin the measurement to a core nothing else uses (--cpus), or count instructions (--measure instructions)",
                self.noise_percent
            )
        })
    }
}

impl Calibration {
    /// The noise figure against the rounds' spread after `after_round` rounds: `round_sds`
    /// holds, per benchmark judged on both sides, the sample sd of its per-round changes in
    /// percent. The spread is their median (one benchmark made noisy by its own code does
    /// not speak for the machine). `None` without any benchmark.
    ///
    /// The two figures are not the same statistic (the calibration's is a spread of 10 ms
    /// blocks, the rounds' a spread of changes between two sides), but the calibration is
    /// shown as what the machine alone does to a measurement; when the rounds disagree by
    /// more than twice that, it understated the noise the verdict has to live with, and a
    /// user should hear it after round 2, not after `--max-rounds`.
    pub fn check_against_rounds(
        &self,
        round_sds: &[f64],
        after_round: usize,
    ) -> Option<CalibrationCheck> {
        let sds: Vec<f64> = round_sds
            .iter()
            .copied()
            .filter(|s| s.is_finite())
            .collect();
        if sds.is_empty() {
            return None;
        }
        let spread = crate::stats::median(&sds);
        let noise = self.noise_percent;
        let ratio = (noise > 0.0).then(|| spread / noise);
        let understated = ratio.map_or(spread > 0.0, |r| r > CHECK_FACTOR);
        let overstated = ratio.is_some_and(|r| r < 1.0 / CHECK_FACTOR);
        let times = ratio.map_or("far more than".to_string(), |r| format!("{r:.1} x"));
        let warning = if understated {
            Some(format!(
                "the calibration understated this machine's noise: after round {after_round} the rounds disagree by a median sd of {spread:.1} % over {} benchmark(s), {times} the {noise:.2} % measured before round 1. Timing here cannot be trusted to that figure: count instructions (--measure instructions, CPU code only) or pin the benchmarks to a core nothing else uses (--cpus)",
                sds.len()
            ))
        } else if overstated {
            Some(format!(
                "the calibration overstated this machine's noise: after round {after_round} the rounds disagree by a median sd of {spread:.1} % over {} benchmark(s), {times} the {noise:.2} % measured before round 1 (the benchmarks are steadier than the calibration's loop)",
                sds.len()
            ))
        } else {
            None
        };
        Some(CalibrationCheck {
            after_round,
            calibration_noise_percent: noise,
            round_sd_percent: spread,
            benchmarks: sds.len(),
            ratio,
            warning,
        })
    }
}

/// `12.3 ns`, with enough digits for sub-nanosecond floors.
pub(super) fn ns(value: f64) -> String {
    if value < 10.0 {
        format!("{value:.3} ns")
    } else {
        format!("{value:.1} ns")
    }
}

/// Calibrates on the gate's `--cpus` and says on stderr what it found (and whether the
/// noise is above the threshold) before the first round.
pub fn before_rounds(options: &GateOptions) -> Calibration {
    eprintln!("analyze-trends gate: calibrating the timer and this machine's noise (about 1 s)");
    let calibration = on_cpus(&options.judge.cpus);
    eprintln!(
        "analyze-trends gate: calibration: {}",
        calibration.describe()
    );
    if let Some(warning) = calibration.noise_warning(options.judge.threshold_percent) {
        eprintln!("analyze-trends gate: warning: {warning}");
    }
    calibration
}

/// Runs [`calibrate`] on a thread pinned to `cpus` (all allowed CPUs when empty), where
/// the bench executables will run.
fn on_cpus(cpus: &[usize]) -> Calibration {
    let wanted = cpus.to_vec();
    let pinned = std::thread::Builder::new()
        .name("calibrate".into())
        .spawn(move || {
            if let Err(e) = pin_this_thread(&wanted) {
                eprintln!("analyze-trends gate: calibrating unpinned: {e}");
            }
            calibrate()
        });
    match pinned.map(std::thread::JoinHandle::join) {
        Ok(Ok(calibration)) => calibration,
        // No thread (or it panicked, which nothing here should): measure on this one.
        _ => calibrate(),
    }
}

#[cfg(target_os = "linux")]
fn pin_this_thread(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() {
        return Ok(());
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET is given numbers below CPU_SETSIZE only.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is fully initialised above.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_this_thread(_cpus: &[usize]) -> std::io::Result<()> {
    Ok(())
}

/// The three measurements, on the calling thread.
pub fn calibrate() -> Calibration {
    let timer_resolution_ns = timer_resolution_ns();
    let floor_ns = floor_ns();
    let started = Instant::now();
    let blocks = noise_blocks(NOISE_TIME);
    Calibration {
        timer_resolution_ns,
        floor_ns,
        floor_multiple: FLOOR_MULTIPLE,
        noise_percent: spread_percent(&blocks),
        blocks: blocks.len(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The smallest non-zero difference between two `Instant` reads, over up to 1000 tries
/// or 50 ms (a coarse clock must not stall the gate).
fn timer_resolution_ns() -> f64 {
    let started = Instant::now();
    let mut best = Duration::MAX;
    for _ in 0..1000 {
        let first = Instant::now();
        let mut next = Instant::now();
        while next == first {
            next = Instant::now();
        }
        best = best.min(next - first);
        if started.elapsed() > Duration::from_millis(50) {
            break;
        }
    }
    best.as_nanos() as f64
}

/// The floor: the slope of the least-squares line over [`FIT_POINTS`] iteration counts,
/// each timed [`PASSES`] times and represented by its fastest time.
fn floor_ns() -> f64 {
    // Warm up and size: double the count until one loop takes a millisecond.
    let mut n: u64 = 1;
    let per_iteration = loop {
        let took = empty_iter_loop(n);
        if took >= Duration::from_millis(1) || n >= 1 << 40 {
            break took.as_nanos() as f64 / n as f64;
        }
        n *= 2;
    };
    // d + 2d + … + k·d iterations fill one pass's budget.
    let triangle = (FIT_POINTS * (FIT_POINTS + 1) / 2) as f64;
    let step = ((FIT_BUDGET.as_nanos() as f64 / per_iteration.max(1e-3)) / triangle).max(1.0);
    let counts: Vec<u64> = (1..=FIT_POINTS).map(|i| (i as f64 * step) as u64).collect();
    let mut fastest = vec![f64::INFINITY; counts.len()];
    for _ in 0..PASSES {
        for (best, &count) in fastest.iter_mut().zip(&counts) {
            *best = best.min(empty_iter_loop(count).as_nanos() as f64);
        }
    }
    let points: Vec<(f64, f64)> = counts.iter().map(|&c| c as f64).zip(fastest).collect();
    match linear_fit(&points) {
        Some((_, slope)) if slope.is_finite() && slope > 0.0 => slope,
        // No positive slope (a clock too coarse for these counts): the warm-up's ratio.
        _ => per_iteration,
    }
}

/// Criterion's `Bencher::iter` around an empty routine, `iterations` times, between two
/// `Instant` reads (what Criterion's `WallTime` reads). At opt-level 3 rustc compiles
/// `for _ in 0..n { black_box(routine()) }` with `routine = || ()` to a bare count-down
/// loop; here that loop is written out, so a debug build times the same instructions.
fn empty_iter_loop(iterations: u64) -> Duration {
    let iterations = std::hint::black_box(iterations);
    let start = Instant::now();
    count_down(iterations);
    start.elapsed()
}

#[cfg(target_arch = "x86_64")]
fn count_down(n: u64) {
    if n == 0 {
        return; // `dec` from 0 would wrap and run 2^64 times.
    }
    // SAFETY: touches one register and the flags (which asm! assumes clobbered).
    unsafe {
        std::arch::asm!(".p2align 4", "2:", "dec {n}", "jnz 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
}

#[cfg(target_arch = "aarch64")]
fn count_down(n: u64) {
    if n == 0 {
        return; // `subs` from 0 would wrap and run 2^64 times.
    }
    // SAFETY: touches one register and the flags (which asm! assumes clobbered).
    unsafe {
        std::arch::asm!(".p2align 4", "2:", "subs {n}, {n}, #1", "b.ne 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
}

/// Elsewhere the Rust loop itself: optimised in a release build, slower than Criterion's
/// in a debug one (the floor then errs high, so more benchmarks are `below floor`).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn count_down(n: u64) {
    for _ in 0..n {
        std::hint::black_box(());
    }
}

/// A fixed amount of serial integer work (`steps` rounds of xorshift64, each depending on
/// the last, so it can be neither vectorised nor skipped). Only the spread of its times
/// matters, so its speed in a debug build does not.
fn fixed_work(steps: u64) -> u64 {
    let mut x = std::hint::black_box(0x9E37_79B9_7F4A_7C15_u64);
    for _ in 0..std::hint::black_box(steps) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Least-squares line through `points` (x, y): `(intercept, slope)`; `None` when fewer than
/// two points or x does not vary. Unlike Criterion's slope (through the origin) it has an
/// intercept, so the two `Instant` reads around each loop stay out of the per-iteration
/// figure.
pub fn linear_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    if sxx.is_nan() || sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    Some((mean_y - slope * mean_x, slope))
}

/// Times the fixed loop in blocks of about [`BLOCK`] for about `total`; block times in ns.
fn noise_blocks(total: Duration) -> Vec<f64> {
    let time = |steps: u64| {
        let started = Instant::now();
        std::hint::black_box(fixed_work(steps));
        started.elapsed()
    };
    // Size a block: double the work until it takes a millisecond, then scale to BLOCK by
    // the fastest of five timings of that size (one preempted timing must not size every
    // block: on a loaded machine that made blocks a hundredth of the intended length).
    let mut steps: u64 = 1024;
    while time(steps) < Duration::from_millis(1) && steps < 1 << 40 {
        steps *= 2;
    }
    let took = (0..5).map(|_| time(steps)).min().unwrap_or(BLOCK);
    let scale = BLOCK.as_secs_f64() / took.as_secs_f64().max(1e-9);
    let steps = ((steps as f64) * scale).max(1.0) as u64;
    let started = Instant::now();
    let mut blocks = Vec::new();
    // A Ctrl-C ends the blocks early; the first round then sees it and unwinds.
    while (started.elapsed() < total || blocks.len() < 10) && !super::interrupt::interrupted() {
        blocks.push(time(steps).as_nanos() as f64);
    }
    blocks
}

/// Half the range of the middle 80 % (10th to 90th percentile) of `times`, in percent of
/// their median; 0 for fewer than two times. Robust to the odd interrupt (under 10 % of
/// blocks), but not to a neighbour who takes the core for a tenth of the time or more,
/// which is exactly what a gate needs to hear about.
pub fn spread_percent(times: &[f64]) -> f64 {
    if times.len() < 2 {
        return 0.0;
    }
    let q = |p: f64| crate::stats::quantile(times, p);
    let median = q(0.5);
    if median.is_nan() || median <= 0.0 {
        return 0.0;
    }
    (q(0.9) - q(0.1)) / 2.0 / median * 100.0
}

/// The summary note for the below-floor rows, when there are any.
pub fn below_floor_note(rows: &[BenchComparison], calibration: &Calibration) -> Option<String> {
    let n = rows
        .iter()
        .filter(|r| r.status == Status::BelowFloor)
        .count();
    (n > 0).then(|| {
        format!(
            "{n} benchmark(s) below floor (at or below {} = {} x the timer floor of {}): listed, not judged, not re-measured",
            ns(calibration.below_floor_ns()),
            calibration.floor_multiple,
            ns(calibration.floor_ns)
        )
    })
}

/// The calibration as a Markdown section of the gate's comment: the figures, the noise
/// warning, and each below-floor benchmark with its times.
pub fn markdown(
    calibration: &Calibration,
    threshold_percent: f64,
    rows: &[BenchComparison],
) -> String {
    let c = calibration;
    let mut out = format!(
        "\n#### Calibration\n\nTimer resolution {}; floor {} per iteration (an empty routine through Criterion's `iter` loop, a line fitted over {FIT_POINTS} iteration counts); noise {:.2} % (half the 10–90 % range of {} blocks of a fixed loop, {:.1} s). A benchmark at or below {} x the floor = {} is `below floor`: listed, neither a regression nor a pass, not measured again.\n",
        ns(c.timer_resolution_ns),
        ns(c.floor_ns),
        c.noise_percent,
        c.blocks,
        c.seconds,
        c.floor_multiple,
        ns(c.below_floor_ns()),
    );
    if let Some(warning) = c.noise_warning(threshold_percent) {
        out.push_str(&format!("\n> ⚠️ {warning}\n"));
    }
    let below: Vec<&BenchComparison> = rows
        .iter()
        .filter(|r| r.status == Status::BelowFloor)
        .collect();
    if !below.is_empty() {
        out.push_str("\nBelow floor:\n\n");
        for row in below {
            out.push_str(&format!(
                "- `{}`: base {}, head {}\n",
                row.id.replace('`', "'"),
                ns(row.baseline_ns),
                ns(row.candidate_ns)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(floor_ns: f64) -> Calibration {
        Calibration {
            timer_resolution_ns: 20.0,
            floor_ns,
            floor_multiple: FLOOR_MULTIPLE,
            noise_percent: 1.0,
            blocks: 100,
            seconds: 1.0,
        }
    }

    #[test]
    fn the_fit_recovers_a_line_with_an_intercept() {
        // 40 ns of Instant reads plus 0.25 ns per iteration.
        let points: Vec<(f64, f64)> = (1..=30)
            .map(|i| {
                let x = 1000.0 * i as f64;
                (x, 40.0 + 0.25 * x)
            })
            .collect();
        let (intercept, slope) = linear_fit(&points).unwrap();
        assert!((slope - 0.25).abs() < 1e-9, "{slope}");
        assert!((intercept - 40.0).abs() < 1e-6, "{intercept}");
    }

    #[test]
    fn the_fit_is_least_squares_over_scattered_points() {
        // By hand: x̄ = 2.5, ȳ = 5, Sxx = 5, Sxy = 8, so the slope is 8 / 5 = 1.6.
        let points = [(1.0, 3.0), (2.0, 3.0), (3.0, 7.0), (4.0, 7.0)];
        let (_, slope) = linear_fit(&points).unwrap();
        assert!((slope - 1.6).abs() < 1e-12, "{slope}");
    }

    #[test]
    fn the_fit_refuses_what_has_no_slope() {
        assert!(linear_fit(&[]).is_none());
        assert!(linear_fit(&[(5.0, 1.0)]).is_none());
        assert!(linear_fit(&[(5.0, 1.0), (5.0, 3.0)]).is_none());
    }

    #[test]
    fn the_spread_is_half_the_middle_80_percent_over_the_median() {
        // 50..=150 ns: p10 = 60, p50 = 100, p90 = 140 → (140 - 60) / 2 / 100 = 40 %.
        let times: Vec<f64> = (0..=100).map(|i| 50.0 + i as f64).collect();
        let spread = spread_percent(&times);
        assert!((spread - 40.0).abs() < 1e-9, "{spread}");
        let steady = vec![1000.0; 50];
        assert_eq!(spread_percent(&steady), 0.0);
        assert_eq!(spread_percent(&[3.0]), 0.0);
    }

    #[test]
    fn a_benchmark_is_below_floor_when_either_side_is_within_the_multiple() {
        let c = calibration(0.25);
        // The side's time is the median of its round medians: `ns` here.
        let rounds = |ns: f64| {
            BTreeMap::from([
                (1, vec![ns; 10]),
                (2, vec![ns * 1.01; 10]),
                (3, vec![ns * 0.99; 10]),
            ])
        };
        assert_eq!(c.below_floor(&[rounds(1.1), rounds(1.0)]), Some(1.0));
        // Either side: base above the 2.5 ns limit, head at it.
        assert_eq!(c.below_floor(&[rounds(3.0), rounds(2.4)]), Some(2.4));
        assert_eq!(c.below_floor(&[rounds(3.0), rounds(4.0)]), None);
        // A difference larger than the limit is the routine's: judged, in either direction.
        assert_eq!(c.below_floor(&[rounds(1.0), rounds(50.0)]), None);
        assert_eq!(c.below_floor(&[rounds(50.0), rounds(1.0)]), None);
        // Measured on one side only: not this rule's (it is new or missing).
        assert_eq!(c.below_floor(&[rounds(1.0), BTreeMap::new()]), None);
    }

    #[test]
    fn noise_above_the_threshold_is_said_with_the_fixes() {
        let mut c = calibration(0.25);
        c.noise_percent = 7.5;
        let warning = c.noise_warning(5.0).unwrap();
        assert!(
            warning.contains("7.50 %") && warning.contains("--cpus"),
            "{warning}"
        );
        assert!(c.noise_warning(10.0).is_none());
    }

    #[test]
    fn the_rounds_spread_is_checked_against_the_calibration_both_ways() {
        // The machine: 2.42 % at start-up, rounds disagreeing by 35 % and 32 %.
        let mut c = calibration(0.25);
        c.noise_percent = 2.42;
        let check = c.check_against_rounds(&[35.0, 32.0, 3.0], 2).unwrap();
        assert_eq!((check.round_sd_percent, check.benchmarks), (32.0, 3));
        assert!((check.ratio.unwrap() - 32.0 / 2.42).abs() < 1e-9);
        let warning = check.warning.unwrap();
        assert!(
            warning.contains("understated")
                && warning.contains("after round 2")
                && warning.contains("32.0 %")
                && warning.contains("--measure instructions")
                && warning.contains("--cpus"),
            "{warning}"
        );
        // Within 2x either way: nothing to say.
        let fine = c.check_against_rounds(&[4.0, 1.5], 2).unwrap();
        assert_eq!(fine.warning, None, "{fine:?}");
        // Far steadier than the calibration said: said too, without the fixes.
        c.noise_percent = 20.0;
        let over = c.check_against_rounds(&[1.0, 2.0, 3.0], 2).unwrap();
        let warning = over.warning.unwrap();
        assert!(
            warning.contains("overstated") && !warning.contains("--measure"),
            "{warning}"
        );
        // A calibration that saw no noise at all against rounds that disagree.
        c.noise_percent = 0.0;
        let zero = c.check_against_rounds(&[5.0], 2).unwrap();
        assert_eq!(zero.ratio, None);
        assert!(zero.warning.unwrap().contains("far more than"));
        // No benchmark (all below the floor or failed): no check.
        assert!(c.check_against_rounds(&[], 2).is_none());
        assert!(c.check_against_rounds(&[f64::NAN], 2).is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_calibration_thread_is_pinned_to_the_cpus_given() {
        let allowed = crate::gate::cpus::allowed_cpus().unwrap();
        let last = *allowed.last().unwrap();
        let seen = std::thread::spawn(move || {
            pin_this_thread(&[last]).unwrap();
            crate::gate::cpus::allowed_cpus().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, [last]);
        // Nothing asked: the thread keeps every CPU.
        pin_this_thread(&[]).unwrap();
    }

    #[test]
    fn the_empty_loop_ends_for_every_count_and_the_work_is_done() {
        // Zero must not wrap into 2^64 passes; the others only have to return.
        for n in [0, 1, 2, 1000] {
            let _ = empty_iter_loop(n);
        }
        assert_ne!(fixed_work(1), fixed_work(2));
    }

    #[test]
    fn a_calibration_measures_something_positive() {
        // No timing asserted: only that each figure is a usable positive number.
        let c = calibrate();
        // Shown with --nocapture, for a person checking what this machine measures.
        eprintln!("{}", c.describe());
        assert!(c.timer_resolution_ns > 0.0 && c.timer_resolution_ns.is_finite());
        assert!(c.floor_ns > 0.0 && c.floor_ns.is_finite(), "{c:?}");
        assert!(c.noise_percent >= 0.0 && c.blocks >= 10, "{c:?}");
    }
}
