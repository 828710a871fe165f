//! `--cpus LIST`: the bench executables of both sides run pinned to these CPUs. On a
//! runner where anything else is scheduled beside the benchmark, round-to-round spread is
//! dominated by whoever shares its core (measured on this project's 2-core VM: one
//! benchmark's base median moved between 39 and 62 µs from round to round, and every A/A
//! benchmark ended `inconclusive` after 10 rounds; with a core to itself, 4 rounds settled
//! an 8 % change every time, BENCHMARKS.md "Gate quality"). Pinning the measurement to
//! CPUs the runner keeps free (`isolcpus`, or a cpuset the other jobs avoid) is what
//! pyperf's tuning guide asks for too; this flag makes it one argument.

use std::process::Command;

/// A CPU list as the kernel writes one (`0`, `2-3`, `0,4-7`): sorted, without repeats.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim) {
        let number = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}` in CPU list `{text}` is not a CPU number"))
        };
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from)?, number(to)?);
                if from > to {
                    return Err(format!(
                        "range `{part}` in CPU list `{text}` runs backwards"
                    ));
                }
                cpus.extend(from..=to);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPUs this process may run on.
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Checks `cpus` against the CPUs this process may use, so a typo is bad input (exit 2)
/// before any build, not a bench target that cannot start.
#[cfg(target_os = "linux")]
pub fn check(cpus: &[usize]) -> Result<(), String> {
    let allowed = allowed_cpus().map_err(|e| format!("cannot read this process's CPUs: {e}"))?;
    let outside: Vec<String> = cpus
        .iter()
        .filter(|c| !allowed.contains(c))
        .map(|c| c.to_string())
        .collect();
    if outside.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--cpus: CPU {} not available to this process (it may use {})",
        outside.join(", "),
        allowed
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    ))
}

#[cfg(not(target_os = "linux"))]
pub fn check(_cpus: &[usize]) -> Result<(), String> {
    Err("--cpus needs Linux (sched_setaffinity)".into())
}

/// Makes `command`'s process run only on `cpus` (nothing when `cpus` is empty). The set
/// is applied in the child between fork and exec, so the bench executable and everything
/// it starts inherit it.
#[cfg(target_os = "linux")]
pub fn pin(command: &mut Command, cpus: &[usize]) {
    use std::os::unix::process::CommandExt;
    if cpus.is_empty() {
        return;
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET only writes inside it for cpu < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: the closure only calls sched_setaffinity, which is async-signal-safe, on a
    // set built before the fork.
    unsafe {
        command.pre_exec(move || {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_setaffinity(0, size, &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub fn pin(_command: &mut Command, _cpus: &[usize]) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_the_kernels() {
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("0,4-6, 2").unwrap(), vec![0, 2, 4, 5, 6]);
        assert_eq!(parse_cpu_list("3-3,3").unwrap(), vec![3]);
        for bad in ["", "a", "1-", "3-1", "1,,2", "-1"] {
            let error = parse_cpu_list(bad).unwrap_err();
            assert!(error.contains(&format!("`{bad}`")), "{bad}: {error}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pinned_child_runs_only_on_its_cpus() {
        let allowed = allowed_cpus().unwrap();
        let cpu = *allowed.last().unwrap();
        check(&[cpu]).unwrap();
        let mut command = Command::new("grep");
        command.args(["^Cpus_allowed_list", "/proc/self/status"]);
        pin(&mut command, &[cpu]);
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().last(),
            Some(cpu.to_string().as_str()),
            "{text}"
        );
        let error = check(&[100_000]).unwrap_err();
        assert!(error.contains("CPU 100000 not available"), "{error}");
    }
}
