//! SM clock and throttle reasons at the edges of a benchmark, through the process's one
//! NVML binding ([`crate::system::nvml`]); a machine without it simply has no clock
//! readings (recorded as such), never a crash.
//!
//! Why NVML and not `nvidia-smi`: a clock read must sit right at the edges of a benchmark,
//! and NVML answers in microseconds where `nvidia-smi` starts a process (~100 ms) per read.

use crate::system::nvml::{Clock, Device, nvml};

/// Throttle-reason bits that mean the clock was held down by power, heat or hardware
/// (NVML's SwPowerCap, HwSlowdown, SwThermalSlowdown, HwThermalSlowdown, HwPowerBrake).
pub const THROTTLE_MASK: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// What a clock reader cannot do without; the application clock and the throttle reasons
/// are read where the driver has them.
pub(crate) const READS: &[&str] = &[
    "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
];

/// One device's clock reader.
pub struct ClockReader {
    device: Device<'static>,
}

/// A reading taken at one edge of a benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    pub sm_mhz: u32,
    /// NVML's throttle-reason bit mask, where the driver reports it.
    pub reasons: Option<u64>,
}

impl ClockReader {
    /// Opens NVML for the device at `pci_bus_id` (`00000000:41:00.0`); the error says why not.
    pub fn open(pci_bus_id: &str) -> Result<ClockReader, String> {
        let nvml = nvml().map_err(|e| e.to_string())?;
        nvml.require(READS).map_err(|e| e.to_string())?;
        let device = nvml
            .device_by_pci_bus_id(pci_bus_id)
            .map_err(|e| format!("NVML has no device at PCI {pci_bus_id} ({e})"))?;
        Ok(ClockReader { device })
    }

    /// The SM clock now, and the throttle reasons.
    pub fn read(&self) -> Option<ClockReading> {
        let sm_mhz = self.device.clock_mhz(Clock::Sm).ok()?;
        Some(ClockReading {
            sm_mhz,
            reasons: self.device.clock_event_reasons().ok(),
        })
    }

    /// The clock throttling is judged against: the application SM clock where NVML
    /// reports it, else the maximum.
    pub fn reference_clock(&self) -> Option<ReferenceClock> {
        match self.device.applications_clock_mhz(Clock::Sm) {
            Ok(mhz) if mhz > 0 => Some(ReferenceClock {
                mhz,
                kind: "application clock",
            }),
            _ => self.max_sm_mhz().map(|mhz| ReferenceClock {
                mhz,
                kind: "maximum clock",
            }),
        }
    }

    /// The maximum SM clock (boost), MHz.
    pub fn max_sm_mhz(&self) -> Option<u32> {
        self.device.max_clock_mhz(Clock::Sm).ok()
    }
}

/// The clock throttling is judged against: the application clock (what the driver runs
/// busy kernels at unless something holds it down), else the maximum boost clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceClock {
    pub mhz: u32,
    pub kind: &'static str,
}

/// Timed calls whose clock samples are dropped: the GPU ramps its clock up from idle over
/// the first calls after `verify`, and that ramp is not throttling.
pub const WARM_UP_CALLS: u32 = 3;
/// nvbench's rule: a busy clock below 75 % of the reference is throttled.
pub const THROTTLE_CLOCK_FRACTION: f64 = 0.75;

/// Clock readings taken while the timed work runs (after it is enqueued, before the wait),
/// written into the benchmark's notes.
#[derive(Clone, Debug, Default)]
pub struct ClockWindow {
    calls: u32,
    busy: Vec<ClockReading>,
}

/// What the busy samples say.
#[derive(Clone, Debug, PartialEq)]
pub struct ThrottleVerdict {
    pub throttled: bool,
    pub median_mhz: u32,
    pub min_mhz: u32,
    /// NVML throttle reasons seen in any busy sample (OR of the bits).
    pub reasons: u64,
    pub why: String,
}

/// Throttled when NVML reports a power, thermal or hardware slowdown in any busy sample,
/// or the median busy clock is below 75 % of the reference (the median, so one sample
/// that caught a kernel boundary does not decide). `None` without samples.
pub fn throttle_verdict(
    busy: &[ClockReading],
    reference: Option<ReferenceClock>,
) -> Option<ThrottleVerdict> {
    let mut mhz: Vec<u32> = busy.iter().map(|r| r.sm_mhz).collect();
    mhz.sort_unstable();
    let median_mhz = *mhz.get(mhz.len() / 2)?;
    let reasons = busy.iter().filter_map(|r| r.reasons).fold(0, |a, b| a | b);
    let by_reason = reasons & THROTTLE_MASK != 0;
    let by_clock =
        reference.is_some_and(|r| (median_mhz as f64) < THROTTLE_CLOCK_FRACTION * r.mhz as f64);
    let why = match (by_reason, by_clock, reference) {
        (true, _, _) => format!("NVML throttle reasons {:#x}", reasons & THROTTLE_MASK),
        (false, true, Some(r)) => {
            format!(
                "median busy SM clock {median_mhz} MHz < 75 % of the {} {} MHz",
                r.kind, r.mhz
            )
        }
        _ => String::new(),
    };
    Some(ThrottleVerdict {
        throttled: by_reason || by_clock,
        median_mhz,
        min_mhz: mhz[0],
        reasons,
        why,
    })
}

impl ClockWindow {
    /// Records a reading taken while one timed call's work runs; the first
    /// [`WARM_UP_CALLS`] calls are counted but not kept.
    pub fn sample_busy(&mut self, reading: Option<ClockReading>) {
        self.calls += 1;
        if self.calls > WARM_UP_CALLS
            && let Some(r) = reading
        {
            self.busy.push(r);
        }
    }

    pub fn verdict(&self, reference: Option<ReferenceClock>) -> Option<ThrottleVerdict> {
        throttle_verdict(&self.busy, reference)
    }

    pub fn notes(
        &self,
        reference: Option<ReferenceClock>,
        out: &mut std::collections::BTreeMap<String, serde_json::Value>,
    ) {
        let Some(v) = self.verdict(reference) else {
            let why = if self.calls > WARM_UP_CALLS {
                "not read (NVML unavailable)"
            } else {
                "not read (too few timed calls after warm-up)"
            };
            out.insert("sm_clock".into(), why.into());
            return;
        };
        out.insert("sm_clock_busy_median_mhz".into(), v.median_mhz.into());
        out.insert("sm_clock_busy_min_mhz".into(), v.min_mhz.into());
        out.insert("sm_clock_busy_samples".into(), self.busy.len().into());
        if let Some(r) = reference {
            out.insert("sm_clock_reference_mhz".into(), r.mhz.into());
            out.insert("sm_clock_reference".into(), r.kind.into());
        }
        out.insert(
            "throttle_reasons_seen".into(),
            format!("{:#x}", v.reasons).into(),
        );
        out.insert("throttled".into(), v.throttled.into());
        if v.throttled {
            out.insert("throttled_because".into(), v.why.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_the_clock_reader_requires_is_in_nvmls_table() {
        assert_eq!(crate::system::nvml::not_in_table(READS), Vec::<&str>::new());
    }

    fn at(mhz: u32, reasons: u64) -> ClockReading {
        ClockReading {
            sm_mhz: mhz,
            reasons: Some(reasons),
        }
    }

    const APP: Option<ReferenceClock> = Some(ReferenceClock {
        mhz: 1980,
        kind: "application clock",
    });

    #[test]
    fn throttling_is_flagged_by_reason_bits_or_a_slow_median_busy_clock() {
        // GPU idle bit (0x1) and application-clock setting (0x2) are not throttling.
        let fine = [at(1980, 0x1), at(1755, 0x2), at(1980, 0)];
        assert!(!throttle_verdict(&fine, APP).unwrap().throttled);
        // A power cap in any busy sample is.
        let power = [at(1980, 0), at(1980, 0x4), at(1980, 0)];
        let v = throttle_verdict(&power, APP).unwrap();
        assert!(v.throttled && v.why.contains("0x4"), "{v:?}");
        // One slow sample (a kernel boundary) is not; a slow median is.
        let one_dip = [at(1980, 0), at(900, 0), at(1950, 0)];
        assert!(!throttle_verdict(&one_dip, APP).unwrap().throttled);
        let slow = [at(1400, 0), at(1450, 0), at(1980, 0)];
        let v = throttle_verdict(&slow, APP).unwrap();
        assert!(v.throttled && v.why.contains("1450 MHz"), "{v:?}");
        // 75 % exactly is not below 75 %.
        assert!(!throttle_verdict(&[at(1485, 0)], APP).unwrap().throttled);
        assert!(throttle_verdict(&[], APP).is_none());
        // Without a reference only the reason bits can flag.
        assert!(!throttle_verdict(&slow, None).unwrap().throttled);
    }

    #[test]
    fn the_idle_clock_before_warm_up_never_flags() {
        // The old rule read the clock right after verify, idle at 345 MHz: "throttled".
        let mut w = ClockWindow::default();
        w.sample_busy(Some(at(345, 0x1)));
        w.sample_busy(Some(at(900, 0)));
        w.sample_busy(Some(at(1600, 0)));
        let mut notes = std::collections::BTreeMap::new();
        w.notes(APP, &mut notes);
        assert_eq!(
            notes["sm_clock"],
            "not read (too few timed calls after warm-up)"
        );
        for _ in 0..10 {
            w.sample_busy(Some(at(1980, 0)));
        }
        let mut notes = std::collections::BTreeMap::new();
        w.notes(APP, &mut notes);
        assert_eq!(notes["throttled"], false);
        assert_eq!(notes["sm_clock_busy_min_mhz"], 1980);
        assert_eq!(notes["sm_clock_busy_samples"], 10);
    }

    #[test]
    fn window_notes_say_when_clocks_are_unknown() {
        let mut w = ClockWindow::default();
        for _ in 0..5 {
            w.sample_busy(None);
        }
        let mut notes = std::collections::BTreeMap::new();
        w.notes(APP, &mut notes);
        assert_eq!(notes["sm_clock"], "not read (NVML unavailable)");
        assert!(!notes.contains_key("throttled"));
    }

    #[test]
    fn opening_without_a_driver_is_an_error() {
        // On a machine with an NVIDIA driver this bus id does not exist either.
        assert!(ClockReader::open("ffffffff:ff:1f.7").is_err());
    }
}
