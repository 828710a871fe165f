//! The sampler thread: started before a benchmark's measurement, stopped after it, it
//! reads its source every interval and summarises what it saw.
//!
//! Sources are found once per process (NVML initialisation and the sysfs walk cost
//! milliseconds; a benchmark window should not pay them). CPU benchmarks read RAPL; GPU
//! benchmarks read NVML on NVIDIA and the amdgpu driver's sysfs files on AMD.
//! Power from RAPL is energy over time between readings, and the whole window's average
//! when the benchmark was shorter than one interval, so a short benchmark still has one.

use super::amdgpu::{AmdGpu, AmdSelector, DRM_ROOT};
use super::nvml::{GpuReading, NvmlTelemetry};
use super::rapl::{POWERCAP_ROOT, Rapl, Reading};
use super::{Range, TelemetrySummary};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `0` turns the sampler off.
pub const TELEMETRY_ENV: &str = "STACKBENCH_TELEMETRY";
/// Milliseconds between readings (default 100).
pub const INTERVAL_ENV: &str = "STACKBENCH_TELEMETRY_INTERVAL_MS";

/// Which device a benchmark runs on, so the right source is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cpu,
    NvidiaGpu,
    AmdGpu,
}

enum Source {
    Rapl(&'static Rapl),
    Nvml(&'static NvmlTelemetry),
    Amd(&'static AmdGpu),
    None(String),
}

fn rapl() -> &'static Result<Rapl, String> {
    static RAPL: OnceLock<Result<Rapl, String>> = OnceLock::new();
    RAPL.get_or_init(|| Rapl::discover(Path::new(POWERCAP_ROOT)))
}

fn nvml() -> &'static Result<NvmlTelemetry, String> {
    static NVML: OnceLock<Result<NvmlTelemetry, String>> = OnceLock::new();
    NVML.get_or_init(NvmlTelemetry::open)
}

fn amdgpu() -> &'static Result<AmdGpu, String> {
    static AMDGPU: OnceLock<Result<AmdGpu, String>> = OnceLock::new();
    AMDGPU.get_or_init(|| AmdGpu::discover(Path::new(DRM_ROOT), &AmdSelector::from_env()?))
}

fn source_for(target: Target) -> Source {
    match target {
        Target::Cpu => match rapl() {
            Ok(rapl) => Source::Rapl(rapl),
            Err(reason) => Source::None(reason.clone()),
        },
        Target::NvidiaGpu => match nvml() {
            Ok(nvml) => Source::Nvml(nvml),
            Err(reason) => Source::None(reason.clone()),
        },
        Target::AmdGpu => match amdgpu() {
            Ok(gpu) => Source::Amd(gpu),
            Err(reason) => Source::None(reason.clone()),
        },
    }
}

/// A running sampler; [`Sampler::finish`] stops it and returns the summary.
pub struct Sampler {
    stop: Sender<()>,
    thread: Option<JoinHandle<TelemetrySummary>>,
}

impl Sampler {
    /// Starts sampling for a benchmark on `target`, or `None` when turned off by the env.
    pub fn start_from_env(target: Target) -> Option<Sampler> {
        if std::env::var(TELEMETRY_ENV).is_ok_and(|v| v == "0") {
            return None;
        }
        let interval = std::env::var(INTERVAL_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(Duration::from_millis(100), Duration::from_millis);
        Some(Sampler::start(source_for(target), interval))
    }

    fn start(source: Source, interval: Duration) -> Sampler {
        let (stop, stopped) = channel();
        let thread = std::thread::Builder::new()
            .name("stackbench-telemetry".into())
            .spawn(move || sample(source, interval, stopped))
            .ok();
        Sampler { stop, thread }
    }

    /// Stops the thread and summarises; a sampler that could not start says so.
    pub fn finish(mut self) -> TelemetrySummary {
        let _ = self.stop.send(());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(summary)) => summary,
            _ => TelemetrySummary {
                unavailable: vec!["the telemetry thread could not run".into()],
                ..TelemetrySummary::default()
            },
        }
    }
}

fn sample(source: Source, interval: Duration, stopped: Receiver<()>) -> TelemetrySummary {
    match source {
        Source::Rapl(rapl) => sample_rapl(rapl, interval, &stopped),
        Source::Nvml(nvml) => sample_gpu("nvml", || nvml.read(), interval, &stopped),
        Source::Amd(gpu) => sample_gpu("amdgpu-sysfs", || gpu.read(), interval, &stopped),
        Source::None(reason) => {
            let _ = stopped.recv();
            TelemetrySummary {
                unavailable: vec![reason],
                ..TelemetrySummary::default()
            }
        }
    }
}

/// Waits one interval; false once the sampler was told to stop (or was dropped).
fn tick(stopped: &Receiver<()>, interval: Duration) -> bool {
    matches!(
        stopped.recv_timeout(interval),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
    )
}

fn sample_rapl(rapl: &Rapl, interval: Duration, stopped: &Receiver<()>) -> TelemetrySummary {
    let failed = |reason: String| TelemetrySummary {
        source: "rapl".into(),
        unavailable: vec![reason],
        ..TelemetrySummary::default()
    };
    let (start, first) = match rapl.read() {
        Ok(reading) => (Instant::now(), reading),
        Err(reason) => return failed(reason),
    };
    let mut watts = Vec::new();
    let (mut at, mut last): (Instant, Reading) = (start, first.clone());
    let mut running = true;
    while running {
        running = tick(stopped, interval);
        let Ok(now) = rapl.read() else { break };
        let seconds = at.elapsed().as_secs_f64();
        if seconds > 0.0 {
            watts.push(rapl.joules_between(&last, &now) / seconds);
        }
        (at, last) = (Instant::now(), now);
    }
    let total = start.elapsed().as_secs_f64();
    if watts.is_empty() && total > 0.0 {
        watts.push(rapl.joules_between(&first, &last) / total);
    }
    TelemetrySummary {
        source: "rapl".into(),
        power_watts: Range::of(&watts),
        unavailable: vec!["temperature, clocks and utilisation are not read on CPUs".into()],
        ..TelemetrySummary::default()
    }
}

fn sample_gpu(
    source: &str,
    read: impl Fn() -> GpuReading,
    interval: Duration,
    stopped: &Receiver<()>,
) -> TelemetrySummary {
    let mut readings: Vec<GpuReading> = vec![read()];
    while tick(stopped, interval) {
        readings.push(read());
    }
    readings.push(read());
    let series = |f: fn(&GpuReading) -> Option<f64>| {
        Range::of(&readings.iter().filter_map(f).collect::<Vec<_>>())
    };
    TelemetrySummary {
        source: source.into(),
        power_watts: series(|r| r.power_watts),
        temperature_c: series(|r| r.temperature_c),
        clock_mhz: series(|r| r.clock_mhz),
        utilization_percent: series(|r| r.utilization_percent),
        ..TelemetrySummary::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_without_a_source_gets_the_reason_not_zeros() {
        let sampler = Sampler::start(
            Source::None("no RAPL here".into()),
            Duration::from_millis(5),
        );
        let summary = sampler.finish();
        assert_eq!(summary.unavailable, vec!["no RAPL here".to_owned()]);
        assert!(summary.power_watts.is_none());
    }

    #[test]
    fn rapl_power_is_energy_over_time_even_for_a_short_window() {
        let root = tempfile::tempdir().unwrap();
        let zone = root.path().join("intel-rapl:0");
        std::fs::create_dir_all(&zone).unwrap();
        std::fs::write(zone.join("energy_uj"), "0\n").unwrap();
        std::fs::write(zone.join("max_energy_range_uj"), "1000000000\n").unwrap();
        let rapl: &'static Rapl = Box::leak(Box::new(Rapl::discover(root.path()).unwrap()));
        let sampler = Sampler::start(Source::Rapl(rapl), Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
        // 5 J while the window is open: the one reading at stop gives 5 J / window > 0 W.
        std::fs::write(zone.join("energy_uj"), "5000000\n").unwrap();
        let summary = sampler.finish();
        let power = summary.power_watts.expect("one window-average reading");
        assert_eq!(power.samples, 1);
        assert!(
            power.mean > 5.0 / 10.0 && power.mean < 5.0 / 0.04,
            "{power:?}"
        );
    }
}
