//! GPU clocks under control: `STACKBENCH_LOCK_CLOCKS=1` (and `analyze-trends gate
//! --lock-clocks`, which sets it for both sides) holds the GPU's SM clock at a fixed rate
//! while a bench target runs, and gives the driver its own clock policy back afterwards,
//! whatever ends the run: its normal end, a panic (the guard's `Drop`), or Ctrl-C / SIGTERM
//! (the signal path in [`restore`]).
//!
//! Why lock: a GPU boosts as far as power and heat allow, so the same kernel runs at
//! different clocks from one run to the next (nvbench locks for that reason). Locked at the
//! default application clock, a slower time means more cycles, not a warmer card.
//!
//! Every GPU run records its clocks whether or not it locked them (SM and memory before and
//! after, the lowest busy SM clock the benchmarks sampled), and says once, on stderr and in
//! the record, why it could not lock ("clocks not locked: <reason>"): permission is the
//! usual one (the driver lets only root change clocks). A target that ran no GPU benchmark
//! records no clocks and says so.
//!
//! The device side sits behind [`ClockController`]: NVML ([`nvml`]) and `rocm-smi` with the
//! amdgpu sysfs files ([`rocm_smi`]); the tests drive the policy and the guard through a
//! fake one.

pub mod nvml;
pub mod restore;
pub mod rocm_smi;

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// `STACKBENCH_LOCK_CLOCKS=1` asks each bench target to lock the clocks of the GPUs it uses.
pub const LOCK_CLOCKS_ENV: &str = "STACKBENCH_LOCK_CLOCKS";

/// Whether `value` (of [`LOCK_CLOCKS_ENV`]) asks for locked clocks: `1`, `true`, `yes`, `on`.
/// Anything else that is set is a usage error, so a typo never silently runs unlocked.
pub fn lock_requested(value: Option<&str>) -> Result<bool, String> {
    crate::system::yes_no(LOCK_CLOCKS_ENV, value)
}

/// SM (graphics) and memory clocks at one moment, MHz; `None` where the device did not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockPair {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
}

/// What a controller set when it locked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockedClocks {
    /// The SM clock held, MHz: the target throttling is judged against.
    pub sm_mhz: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mhz: Option<u32>,
    /// How: `nvmlDeviceSetGpuLockedClocks`, `rocm-smi --setperfdeterminism`, ...
    pub method: String,
}

/// Why a controller did not lock.
#[derive(Clone, Debug, PartialEq)]
pub enum LockRefused {
    /// The driver refused the caller (not root): the usual case on a shared machine.
    NoPermission(String),
    /// This GPU or driver cannot lock clocks this way.
    Unsupported(String),
    Failed(String),
}

impl std::fmt::Display for LockRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockRefused::NoPermission(why) => write!(f, "no permission ({why})"),
            LockRefused::Unsupported(why) => write!(f, "not supported ({why})"),
            LockRefused::Failed(why) => write!(f, "failed ({why})"),
        }
    }
}

/// One GPU's clock control: NVML, rocm-smi, or a fake in the tests.
pub trait ClockController: Send {
    /// The device in words, for the record: `NVIDIA H100 80GB HBM3 (NVML, 00000000:41:00.0)`.
    fn device(&self) -> String;
    /// The clocks now.
    fn read(&self) -> Result<ClockPair, String>;
    /// Holds the SM clock at the policy's target.
    fn lock(&mut self) -> Result<LockedClocks, LockRefused>;
    /// Gives the driver its own clock policy back. Called at most once after a lock.
    fn restore(&mut self) -> Result<(), String>;
}

/// The lock state of one device, as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LockState {
    /// `STACKBENCH_LOCK_CLOCKS` was not set: the driver chose the clocks.
    NotRequested,
    Locked {
        #[serde(flatten)]
        clocks: LockedClocks,
        /// Whether the driver's own policy was given back.
        restored: bool,
        /// Why the restore failed, where it did (then the clocks may still be locked).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restore_error: Option<String>,
    },
    NotLocked {
        reason: String,
    },
}

/// One device's clocks over a bench target's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceClocks {
    pub device: String,
    pub lock: LockState,
    pub before: ClockPair,
    pub after: ClockPair,
    /// The lowest busy SM clock any benchmark of the target sampled, where one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_sm_mhz_during: Option<u32>,
    /// Reads that failed, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// nvbench's rule at the target level, where the clock was locked and a busy clock was
    /// sampled: why the lowest busy SM clock was below 75 % of the locked one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled: Option<String>,
}

/// nvbench's threshold: a busy clock below this fraction of the target is throttled.
pub const THROTTLE_FRACTION: f64 = 0.75;

/// Why the lowest busy clock counts as throttled against a locked clock; `None` when it
/// does not, or when there is no lock or no sample to judge.
pub fn throttled_against_lock(lock: &LockState, min_busy_mhz: Option<u32>) -> Option<String> {
    let LockState::Locked { clocks, .. } = lock else {
        return None;
    };
    let min = min_busy_mhz?;
    ((min as f64) < THROTTLE_FRACTION * clocks.sm_mhz as f64).then(|| {
        format!(
            "lowest busy SM clock {min} MHz < 75 % of the locked {} MHz",
            clocks.sm_mhz
        )
    })
}

/// The clocks a bench target records beside its benchmarks (`gpu_clocks` in the target
/// report, and so in the run record's `targets`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuClocksRecord {
    /// Whether `STACKBENCH_LOCK_CLOCKS` asked for locked clocks.
    pub lock_requested: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceClocks>,
    /// Why there are no clocks (a CPU-only run, no readable GPU), when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_recorded: Option<String>,
}

impl GpuClocksRecord {
    /// The record of a target that ran no GPU benchmark: nothing read, and why.
    pub fn none(lock_requested: bool, why: impl Into<String>) -> GpuClocksRecord {
        GpuClocksRecord {
            lock_requested,
            devices: Vec::new(),
            not_recorded: Some(why.into()),
        }
    }
}

struct DeviceState {
    controller: Box<dyn ClockController>,
    before: ClockPair,
    unread: Vec<String>,
    lock: LockState,
}

/// The devices of one process, shared between the guard and the signal path.
#[derive(Default)]
pub(crate) struct Devices {
    states: Vec<DeviceState>,
}

impl DeviceState {
    /// Reads `controller`'s clocks and, when `lock_requested`, locks them.
    fn read_and_lock(mut controller: Box<dyn ClockController>, lock_requested: bool) -> Self {
        let mut unread = Vec::new();
        let before = controller.read().unwrap_or_else(|why| {
            unread.push(format!("before: {why}"));
            ClockPair::default()
        });
        let lock = if !lock_requested {
            LockState::NotRequested
        } else {
            match controller.lock() {
                Ok(clocks) => LockState::Locked {
                    clocks,
                    restored: false,
                    restore_error: None,
                },
                Err(refused) => LockState::NotLocked {
                    reason: refused.to_string(),
                },
            }
        };
        DeviceState {
            controller,
            before,
            unread,
            lock,
        }
    }
}

impl Devices {
    /// Restores every device still locked; safe to call again (a device is restored once).
    /// Returns how many were restored now.
    pub(crate) fn restore_all(&mut self) -> usize {
        let mut restored = 0;
        for state in &mut self.states {
            if let LockState::Locked {
                restored: done @ false,
                restore_error: error @ None,
                ..
            } = &mut state.lock
            {
                match state.controller.restore() {
                    Ok(()) => *done = true,
                    Err(why) => *error = Some(why),
                }
                restored += 1;
            }
        }
        restored
    }
}

/// Holds the lock on every device of this process: restores them on [`finish`], on `Drop`
/// (a panic unwinding out of the bench target) and on SIGINT/SIGTERM/SIGHUP.
///
/// [`finish`]: ClockGuard::finish
pub struct ClockGuard {
    lock_requested: bool,
    devices: Arc<Mutex<Devices>>,
    /// What the run said once on stderr when it could not lock, for the tests.
    pub said: Option<String>,
}

/// The one line a run prints when `STACKBENCH_LOCK_CLOCKS` asked for locked clocks and not
/// every device could be locked; `None` when all were (or locking was not asked for).
pub fn not_locked_line(lock_requested: bool, reasons: &[(String, String)]) -> Option<String> {
    if !lock_requested || reasons.is_empty() {
        return None;
    }
    let each: Vec<String> = reasons
        .iter()
        .map(|(device, why)| format!("{device}: {why}"))
        .collect();
    Some(format!(
        "clocks not locked: {} (the run goes on at the driver's clocks; BENCHMARKS.md, \
         \"GPU clocks\", says how to allow it)",
        each.join("; ")
    ))
}

impl ClockGuard {
    /// Reads each device's clocks and, when `lock_requested`, locks them. With nothing to
    /// control, `no_device` says why (it becomes the record's reason and, when locking was
    /// asked for, the one line on stderr).
    pub fn start(
        controllers: Vec<Box<dyn ClockController>>,
        lock_requested: bool,
        no_device: &str,
    ) -> ClockGuard {
        let devices = Arc::new(Mutex::new(Devices { states: Vec::new() }));
        // The signal path goes in before the first lock, and the devices stay held while
        // they are locked: a Ctrl-C that lands between a lock and its registration would
        // otherwise end the process with that device still locked. A signal arriving
        // meanwhile waits on the mutex, then restores every device locked so far.
        if lock_requested {
            restore::register(&devices);
        }
        let mut reasons = Vec::new();
        {
            let mut held = match devices.lock() {
                Ok(held) => held,
                Err(poisoned) => poisoned.into_inner(),
            };
            for controller in controllers {
                let state = DeviceState::read_and_lock(controller, lock_requested);
                if let LockState::NotLocked { reason } = &state.lock {
                    reasons.push((state.controller.device(), reason.clone()));
                }
                held.states.push(state);
            }
            if held.states.is_empty() {
                reasons.push(("no GPU".into(), no_device.to_string()));
            }
        }
        let said = not_locked_line(lock_requested, &reasons);
        if let Some(line) = &said {
            eprintln!("{line}");
        }
        ClockGuard {
            lock_requested,
            devices,
            said,
        }
    }

    /// Whether any device is held at a locked clock now.
    pub fn any_locked(&self) -> bool {
        self.with_devices(|d| {
            d.states.iter().any(|s| {
                matches!(
                    s.lock,
                    LockState::Locked {
                        restored: false,
                        restore_error: None,
                        ..
                    }
                )
            })
        })
    }

    fn with_devices<T>(&self, f: impl FnOnce(&mut Devices) -> T) -> T {
        // A panic while the lock was held poisons it; the devices still need restoring.
        let mut devices = match self.devices.lock() {
            Ok(d) => d,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut devices)
    }

    /// Reads the clocks after the run, restores the driver's policy, and returns the record.
    /// `min_sm_mhz_during` is the lowest busy SM clock the benchmarks sampled; `gpu_ran` says
    /// whether any GPU benchmark ran (a CPU-only target records no clocks, and says so).
    pub fn finish(self, min_sm_mhz_during: Option<u32>, gpu_ran: bool) -> GpuClocksRecord {
        let lock_requested = self.lock_requested;
        let devices = self.with_devices(|d| {
            let mut after = Vec::new();
            for state in &mut d.states {
                after.push(state.controller.read());
            }
            d.restore_all();
            d.states
                .iter()
                .zip(after)
                .map(|(s, after)| {
                    let mut unread = s.unread.clone();
                    let after = after.unwrap_or_else(|why| {
                        unread.push(format!("after: {why}"));
                        ClockPair::default()
                    });
                    DeviceClocks {
                        device: s.controller.device(),
                        lock: s.lock.clone(),
                        before: s.before,
                        after,
                        min_sm_mhz_during,
                        unread,
                        throttled: throttled_against_lock(&s.lock, min_sm_mhz_during),
                    }
                })
                .collect::<Vec<_>>()
        });
        if !gpu_ran {
            return GpuClocksRecord::none(
                lock_requested,
                "no GPU clocks recorded: no GPU benchmark ran in this target",
            );
        }
        if devices.is_empty() {
            return GpuClocksRecord::none(
                lock_requested,
                "no GPU clocks recorded: no GPU clock could be read here",
            );
        }
        GpuClocksRecord {
            lock_requested,
            devices,
            not_recorded: None,
        }
    }
}

impl Drop for ClockGuard {
    fn drop(&mut self) {
        // After `finish` this finds nothing locked; on a panic it is the restore.
        self.with_devices(|d| d.restore_all());
    }
}

/// The clock controllers of the GPUs this process's benchmarks use (the CUDA device NVML
/// maps to, the AMD card the ROCm device is), and why each absent one is absent.
pub fn open_controllers() -> (Vec<Box<dyn ClockController>>, String) {
    let mut controllers: Vec<Box<dyn ClockController>> = Vec::new();
    let mut why_none = Vec::new();
    match nvml::NvmlClocks::open_cuda_device() {
        Ok(nvidia) => controllers.push(Box::new(nvidia)),
        Err(why) => why_none.push(why),
    }
    match rocm_smi::RocmSmiClocks::open_rocm_device() {
        Ok(amd) => controllers.push(Box::new(amd)),
        Err(why) => why_none.push(why),
    }
    (controllers, why_none.join("; "))
}

/// Tries the lock once and gives the clocks straight back: how `gate --lock-clocks` says
/// at its start, once, that the clocks cannot be locked (its bench runs' own lines go to
/// their logs). Returns that line, if any.
pub fn check_lock_once() -> Option<String> {
    let (controllers, why_none) = open_controllers();
    let guard = ClockGuard::start(controllers, true, &why_none);
    let said = guard.said.clone();
    drop(guard.finish(None, true));
    said
}

/// What a run record says about its targets' clocks, one line each, without repeats:
/// locked where and how, not locked and why, a restore that failed, or why none were read.
pub fn run_notes<'a>(records: impl IntoIterator<Item = &'a GpuClocksRecord>) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let mut add = |line: String| {
        if !notes.contains(&line) {
            notes.push(line);
        }
    };
    for record in records {
        if let Some(why) = &record.not_recorded {
            add(why.clone());
        }
        for d in &record.devices {
            match &d.lock {
                LockState::NotRequested => {}
                LockState::NotLocked { reason } => {
                    add(format!("clocks not locked: {}: {reason}", d.device))
                }
                LockState::Locked {
                    clocks,
                    restored,
                    restore_error,
                } => {
                    add(format!(
                        "clocks locked on {} at SM {} MHz ({})",
                        d.device, clocks.sm_mhz, clocks.method
                    ));
                    if let Some(why) = &d.throttled {
                        add(format!("throttled on {}: {why}", d.device));
                    }
                    if !restored {
                        let why = restore_error.as_deref().unwrap_or("never tried");
                        add(format!("clocks NOT restored on {}: {why}", d.device));
                    }
                }
            }
        }
    }
    notes
}

/// The target throttling is judged against, nvbench's way: the locked SM clock where this
/// run locked it, else what the device reports (application clock, else maximum).
pub fn throttle_target_mhz(lock: &LockState, reported: Option<u32>) -> Option<u32> {
    match lock {
        LockState::Locked { clocks, .. } => Some(clocks.sm_mhz),
        _ => reported,
    }
}

/// Cycles per iteration: time x SM clock. `ns` per iteration, `mhz` the clock the work ran
/// at (the median busy SM clock sampled during the benchmark).
pub fn cycles_per_iteration(ns: f64, mhz: u32) -> Option<f64> {
    (ns.is_finite() && ns > 0.0 && mhz > 0).then(|| ns * mhz as f64 / 1e3)
}

/// The note the harness adds to a GPU benchmark with a sampled clock (time in cycle space).
pub const CYCLES_NOTE: &str = "sm_cycles_per_iteration";

#[cfg(test)]
pub(crate) mod fake {
    //! A clock controller that keeps its state in shared memory, so a test can see what the
    //! guard did to it after the guard is gone.
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Seen {
        pub locks: u32,
        pub restores: u32,
        pub sm_mhz: u32,
    }

    pub struct FakeClocks {
        pub name: String,
        pub refuse: Option<LockRefused>,
        pub seen: Arc<Mutex<Seen>>,
    }

    impl FakeClocks {
        pub fn new(name: &str, refuse: Option<LockRefused>) -> (FakeClocks, Arc<Mutex<Seen>>) {
            let seen = Arc::new(Mutex::new(Seen {
                sm_mhz: 1980,
                ..Seen::default()
            }));
            let fake = FakeClocks {
                name: name.into(),
                refuse,
                seen: seen.clone(),
            };
            (fake, seen)
        }
    }

    impl ClockController for FakeClocks {
        fn device(&self) -> String {
            self.name.clone()
        }
        fn read(&self) -> Result<ClockPair, String> {
            let seen = self.seen.lock().map_err(|e| e.to_string())?;
            Ok(ClockPair {
                sm_mhz: Some(seen.sm_mhz),
                memory_mhz: Some(2619),
            })
        }
        fn lock(&mut self) -> Result<LockedClocks, LockRefused> {
            if let Some(refused) = &self.refuse {
                return Err(refused.clone());
            }
            let mut seen = self
                .seen
                .lock()
                .map_err(|e| LockRefused::Failed(e.to_string()))?;
            seen.locks += 1;
            seen.sm_mhz = 1755;
            Ok(LockedClocks {
                sm_mhz: 1755,
                memory_mhz: None,
                method: "fake".into(),
            })
        }
        fn restore(&mut self) -> Result<(), String> {
            let mut seen = self.seen.lock().map_err(|e| e.to_string())?;
            seen.restores += 1;
            seen.sm_mhz = 1980;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeClocks;
    use super::*;

    fn boxed(fake: FakeClocks) -> Vec<Box<dyn ClockController>> {
        vec![Box::new(fake)]
    }

    /// The signal path restores every registered guard of the process: tests that lock
    /// take turns, so one test's "signal" never restores another's lock midway.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: Mutex<()> = Mutex::new(());
        SERIAL.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn the_request_is_a_yes_or_no_and_a_typo_is_an_error() {
        assert_eq!(lock_requested(None), Ok(false));
        assert_eq!(lock_requested(Some("")), Ok(false));
        assert_eq!(lock_requested(Some("1")), Ok(true));
        assert_eq!(lock_requested(Some(" yes ")), Ok(true));
        assert_eq!(lock_requested(Some("0")), Ok(false));
        let error = lock_requested(Some("lock")).unwrap_err();
        assert!(error.contains(LOCK_CLOCKS_ENV), "{error}");
    }

    #[test]
    fn a_lock_is_restored_once_at_finish_and_recorded_with_before_and_after() {
        let _serial = one_at_a_time();
        let (fake, seen) = FakeClocks::new("GPU 0", None);
        let guard = ClockGuard::start(boxed(fake), true, "");
        assert!(guard.said.is_none(), "all locked: nothing to say");
        assert!(guard.any_locked());
        assert_eq!(seen.lock().unwrap().sm_mhz, 1755);
        let record = guard.finish(Some(1700), true);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            (seen.locks, seen.restores),
            (1, 1),
            "restored once: {seen:?}"
        );
        let device = &record.devices[0];
        assert_eq!(device.before.sm_mhz, Some(1980));
        // Read before the restore: the clock the run ended at.
        assert_eq!(device.after.sm_mhz, Some(1755));
        assert_eq!(device.min_sm_mhz_during, Some(1700));
        match &device.lock {
            LockState::Locked {
                clocks,
                restored,
                restore_error,
            } => {
                assert_eq!(clocks.sm_mhz, 1755);
                assert!(*restored && restore_error.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(throttle_target_mhz(&device.lock, Some(1980)), Some(1755));
        assert_eq!(device.throttled, None, "1700 MHz is above 75 % of 1755");
        assert!(
            throttled_against_lock(&device.lock, Some(1300))
                .is_some_and(|why| why.contains("1300 MHz < 75 % of the locked 1755 MHz"))
        );
        // Just above 75 % (1316.25 MHz) is not throttled; no lock, nothing to judge against.
        assert_eq!(throttled_against_lock(&device.lock, Some(1317)), None);
        assert_eq!(
            throttled_against_lock(&LockState::NotRequested, Some(1)),
            None
        );
    }

    #[test]
    fn a_panic_while_locked_restores_through_drop() {
        let _serial = one_at_a_time();
        let (fake, seen) = FakeClocks::new("GPU 0", None);
        let result = std::panic::catch_unwind(move || {
            let _guard = ClockGuard::start(boxed(fake), true, "");
            panic!("a benchmark panicked");
        });
        assert!(result.is_err());
        let seen = seen.lock().unwrap().clone();
        assert_eq!((seen.locks, seen.restores, seen.sm_mhz), (1, 1, 1980));
    }

    #[test]
    fn the_signal_path_restores_what_the_guard_holds_and_the_guard_does_not_restore_twice() {
        let _serial = one_at_a_time();
        let (fake, seen) = FakeClocks::new("GPU 0", None);
        let guard = ClockGuard::start(boxed(fake), true, "");
        // What the watcher thread does when SIGINT arrives (before re-raising it).
        assert!(restore::restore_registered() >= 1);
        assert_eq!(seen.lock().unwrap().restores, 1);
        drop(guard);
        assert_eq!(seen.lock().unwrap().restores, 1, "restored once only");
    }

    #[test]
    fn no_permission_is_said_once_and_recorded_and_nothing_is_restored() {
        let _serial = one_at_a_time();
        let refused = LockRefused::NoPermission("NVML: Insufficient Permissions".into());
        let (a, seen_a) = FakeClocks::new("GPU 0", Some(refused.clone()));
        let (b, _) = FakeClocks::new("GPU 1", Some(refused));
        let guard = ClockGuard::start(vec![Box::new(a), Box::new(b)], true, "");
        let said = guard.said.clone().expect("says why");
        assert_eq!(said.matches("clocks not locked").count(), 1, "{said}");
        assert!(
            said.contains("GPU 0: no permission") && said.contains("GPU 1"),
            "{said}"
        );
        let record = guard.finish(None, true);
        assert_eq!(seen_a.lock().unwrap().restores, 0);
        match &record.devices[0].lock {
            LockState::NotLocked { reason } => assert!(reason.contains("no permission")),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            throttle_target_mhz(&record.devices[0].lock, Some(1980)),
            Some(1980)
        );
    }

    #[test]
    fn unrequested_clocks_are_read_not_touched() {
        let (fake, seen) = FakeClocks::new("GPU 0", None);
        let guard = ClockGuard::start(boxed(fake), false, "");
        assert!(guard.said.is_none() && !guard.any_locked());
        let record = guard.finish(None, true);
        assert_eq!(seen.lock().unwrap().locks, 0);
        assert_eq!(record.devices[0].lock, LockState::NotRequested);
        assert_eq!(record.devices[0].before.sm_mhz, Some(1980));
    }

    #[test]
    fn a_cpu_only_target_records_no_clocks_and_says_why() {
        let _serial = one_at_a_time();
        let guard = ClockGuard::start(Vec::new(), true, "NVML not loaded (no NVIDIA driver)");
        let said = guard.said.clone().unwrap();
        assert!(
            said.contains("clocks not locked: no GPU: NVML not loaded"),
            "{said}"
        );
        let record = guard.finish(None, false);
        assert!(record.devices.is_empty());
        assert!(
            record
                .not_recorded
                .unwrap()
                .contains("no GPU benchmark ran")
        );
        // Locking not asked for: nothing said.
        assert!(ClockGuard::start(Vec::new(), false, "none").said.is_none());
    }

    #[test]
    fn run_notes_say_each_state_once() {
        let _serial = one_at_a_time();
        let (a, _) = FakeClocks::new("GPU 0", Some(LockRefused::NoPermission("not root".into())));
        let guard = ClockGuard::start(boxed(a), true, "");
        let refused = guard.finish(None, true);
        let cpu = GpuClocksRecord::none(
            true,
            "no GPU clocks recorded: no GPU benchmark ran in this target",
        );
        let notes = run_notes([&refused, &refused, &cpu]);
        assert_eq!(
            notes,
            vec![
                "clocks not locked: GPU 0: no permission (not root)".to_string(),
                "no GPU clocks recorded: no GPU benchmark ran in this target".to_string(),
            ]
        );
    }

    #[test]
    fn cycles_are_time_times_the_sm_clock() {
        // 2 µs at 1755 MHz = 3510 cycles.
        assert_eq!(cycles_per_iteration(2000.0, 1755), Some(3510.0));
        assert_eq!(cycles_per_iteration(0.0, 1755), None);
        assert_eq!(cycles_per_iteration(f64::NAN, 1755), None);
        assert_eq!(cycles_per_iteration(10.0, 0), None);
    }
}
