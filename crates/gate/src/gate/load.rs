//! The CPU time other processes took while one side of the gate was being measured.
//!
//! Why: time mode alternates the sides (ABBA) so that a machine that drifts slowly drifts
//! over both. A burst of other work does not: under ABBA the head's runs of rounds 1 and 2
//! are next to each other in time, so one burst of 20 s (a package install, another job on
//! a shared runner) slows the head in both rounds, the two rounds agree, and a docs-only
//! change reads as a regression of 20 to 60 %. That was seen on this project's 2-core VM
//! (docs/explanation/verdicts.md, "Other processes"). The gate therefore accounts for every
//! side's run: the busy CPU time of the machine (or of the `--cpus` it pinned to) from
//! `/proc/stat`, less its own and its children's (`getrusage`), is what others took.
//!
//! A process the benchmark leaves running without waiting for it counts as another
//! process: the gate cannot tell it from any other.

use std::time::{Duration, Instant};

/// The machine's busy CPU time and the gate's own (with its waited-for children) at one
/// instant.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    /// Busy time of the CPUs considered, in seconds.
    busy_s: f64,
    /// This process's and its waited-for children's CPU time, in seconds.
    own_s: f64,
    /// How many CPUs `busy_s` covers.
    cpus: usize,
}

/// What other processes took during one side's run (or several, summed).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SideLoad {
    /// Wall time of the runs, seconds.
    pub wall_s: f64,
    /// CPU time other processes used on the CPUs considered, seconds.
    pub foreign_cpu_s: f64,
    /// The CPUs considered: the `--cpus` the runs were pinned to, or every online CPU.
    pub cpus: usize,
}

impl SideLoad {
    /// Other processes' average load during the runs, in CPUs kept busy.
    pub fn foreign_cpus(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.foreign_cpu_s / self.wall_s
        } else {
            0.0
        }
    }

    /// Adds another run of the same side and round.
    pub fn add(&mut self, more: SideLoad) {
        self.wall_s += more.wall_s;
        self.foreign_cpu_s += more.foreign_cpu_s;
        self.cpus = self.cpus.max(more.cpus);
    }
}

/// Other processes' load on one side, less the other side's, that makes a round
/// unbalanced: a quarter of the CPU time a single-threaded benchmark could have had to
/// itself, i.e. a quarter of the CPUs considered beyond the one it runs on (at least one).
/// Below it, other work falls on the spare CPUs or on both sides alike.
pub const UNBALANCED_SHARE: f64 = 0.25;

/// How much more load `loaded` saw than `other`, in CPUs, when that is at least
/// [`UNBALANCED_SHARE`] of the spare CPUs; `None` when the round was balanced.
pub fn imbalance(loaded: &SideLoad, other: &SideLoad) -> Option<f64> {
    let cpus = loaded.cpus.max(other.cpus);
    let spare = (cpus.saturating_sub(1)).max(1) as f64;
    let excess = loaded.foreign_cpus() - other.foreign_cpus();
    (excess >= UNBALANCED_SHARE * spare).then_some(excess)
}

/// A snapshot now, over `cpus` (empty: every CPU); `Err` says why the load cannot be
/// known here (no `/proc/stat`, an unreadable line, a CPU it does not list).
pub fn snapshot(cpus: &[usize]) -> Result<CpuSnapshot, String> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    let (ticks, counted) = busy_ticks(&text, cpus).map_err(|e| format!("/proc/stat: {e}"))?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return Err("sysconf(_SC_CLK_TCK) gave no tick rate".into());
    }
    Ok(CpuSnapshot {
        at: Instant::now(),
        busy_s: ticks as f64 / hz as f64,
        own_s: (own_cpu(libc::RUSAGE_SELF)? + own_cpu(libc::RUSAGE_CHILDREN)?).as_secs_f64(),
        cpus: counted,
    })
}

/// What others took between `before` and `after` (clamped at zero: the kernel's tick
/// accounting and getrusage's are not taken at the same instant).
pub fn between(before: &CpuSnapshot, after: &CpuSnapshot) -> SideLoad {
    let busy = after.busy_s - before.busy_s;
    let own = after.own_s - before.own_s;
    SideLoad {
        wall_s: after.at.duration_since(before.at).as_secs_f64(),
        foreign_cpu_s: (busy - own).max(0.0),
        cpus: after.cpus,
    }
}

/// CPU time (user + system) of `who`; an error rather than zero, which would count the
/// gate's own work as another process's.
fn own_cpu(who: libc::c_int) -> Result<Duration, String> {
    // SAFETY: getrusage writes one rusage struct, which is plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Err(format!("getrusage: {}", std::io::Error::last_os_error()));
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Ok(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Busy ticks (user, nice, system, irq, softirq and steal; not idle nor iowait) summed over
/// `cpus` from `/proc/stat`'s text, or from its all-CPU line when `cpus` is empty, with the
/// number of CPUs that covers. Guest time is already inside user time and is not added
/// again. Steal counts as busy: a hypervisor that gave the CPU to another guest took it
/// from the benchmark as surely as a local process.
pub fn busy_ticks(text: &str, cpus: &[usize]) -> Result<(u64, usize), String> {
    let mut all = None;
    let mut per_cpu = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(rest) = name.strip_prefix("cpu") else {
            continue;
        };
        let values: Vec<u64> = fields
            .map(|f| {
                f.parse::<u64>()
                    .map_err(|_| format!("`{name}` has a field that is not a count: `{f}`"))
            })
            .collect::<Result<_, _>>()?;
        if values.len() < 4 {
            return Err(format!(
                "`{name}` has {} fields, fewer than the 4 of any kernel",
                values.len()
            ));
        }
        let field = |i: usize| values.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice
        let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
        if rest.is_empty() {
            all = Some(busy);
        } else {
            let index: usize = rest
                .parse()
                .map_err(|_| format!("`{name}` is not a CPU line"))?;
            per_cpu.insert(index, busy);
        }
    }
    if cpus.is_empty() {
        let busy = all.ok_or("no all-CPU `cpu` line")?;
        return Ok((busy, per_cpu.len().max(1)));
    }
    let mut sum = 0;
    for cpu in cpus {
        sum += per_cpu
            .get(cpu)
            .ok_or_else(|| format!("CPU {cpu} has no `cpu{cpu}` line"))?;
    }
    Ok((sum, cpus.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 1000 20 3 2 10 7 0\n\
                        cpu0 60 5 30 500 10 2 1 6 7 0\n\
                        cpu1 40 0 20 500 10 1 1 4 0 0\n\
                        intr 12345 0 0\n\
                        ctxt 999\n";

    #[test]
    fn busy_is_user_nice_system_irq_softirq_and_steal_not_idle_iowait_or_guest_again() {
        // 100 + 5 + 50 + 3 + 2 + 10: idle 1000, iowait 20 and guest 7 left out.
        assert_eq!(busy_ticks(STAT, &[]), Ok((170, 2)));
        assert_eq!(busy_ticks(STAT, &[0]), Ok((104, 1)));
        assert_eq!(busy_ticks(STAT, &[0, 1]), Ok((170, 2)));
    }

    #[test]
    fn an_old_kernels_four_fields_count_and_a_missing_or_broken_line_is_named() {
        assert_eq!(busy_ticks("cpu 1 2 3 4\ncpu0 1 2 3 4\n", &[]), Ok((6, 1)));
        let missing = busy_ticks(STAT, &[3]).unwrap_err();
        assert!(missing.contains("CPU 3 has no `cpu3` line"), "{missing}");
        let broken = busy_ticks("cpu 1 2 x 4\n", &[]).unwrap_err();
        assert!(
            broken.contains("`cpu`") && broken.contains("`x`"),
            "{broken}"
        );
        let short = busy_ticks("cpu 1 2\n", &[]).unwrap_err();
        assert!(short.contains("fewer than the 4"), "{short}");
        let none = busy_ticks("intr 1\n", &[]).unwrap_err();
        assert!(none.contains("no all-CPU"), "{none}");
    }

    fn load(foreign_cpus: f64, cpus: usize) -> SideLoad {
        SideLoad {
            wall_s: 10.0,
            foreign_cpu_s: foreign_cpus * 10.0,
            cpus,
        }
    }

    #[test]
    fn a_round_is_unbalanced_when_one_side_lost_a_quarter_of_the_spare_cpus_more() {
        // Two CPUs: one spare; a quarter of it is the line.
        let excess = imbalance(&load(1.3, 2), &load(0.1, 2)).expect("unbalanced");
        assert!((excess - 1.2).abs() < 1e-9, "{excess}");
        assert_eq!(imbalance(&load(0.3, 2), &load(0.1, 2)), None);
        // The same load the other way round is not this side's imbalance.
        assert_eq!(imbalance(&load(0.1, 2), &load(1.3, 2)), None);
        // Sixteen CPUs: one busy CPU of others is not a quarter of fifteen spare ones.
        assert_eq!(imbalance(&load(1.0, 16), &load(0.0, 16)), None);
        assert!(imbalance(&load(4.0, 16), &load(0.0, 16)).is_some());
        // Pinned to one CPU: that CPU is all there is.
        assert!(imbalance(&load(0.3, 1), &load(0.0, 1)).is_some());
    }

    #[test]
    fn a_snapshot_pair_here_counts_a_busy_child_as_its_own_not_as_others() {
        let before = match snapshot(&[]) {
            Ok(before) => before,
            // Not Linux: the gate says the load is unknown (tested in gate::output).
            Err(_) if !cfg!(target_os = "linux") => return,
            Err(e) => panic!("on Linux the load must be readable: {e}"),
        };
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("running sh");
        assert!(status.success());
        let after = snapshot(&[]).unwrap();
        // The child's loop was waited for, so getrusage counts it as this process's own:
        // it is subtracted from the machine's busy time, not called another's.
        let own = after.own_s - before.own_s;
        assert!(
            own >= 0.05,
            "the child's CPU time was not counted as own: {own} s"
        );
        let l = between(&before, &after);
        assert!(l.wall_s > 0.0 && l.cpus >= 1, "{l:?}");
        assert!(l.foreign_cpu_s >= 0.0, "{l:?}");
    }
}
