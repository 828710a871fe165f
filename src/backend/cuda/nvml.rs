//! SM clock and throttle reasons through NVML, loaded at run time.
//!
//! Why NVML and not `nvidia-smi`: a clock read must sit right at the edges of a benchmark,
//! and NVML answers in microseconds where `nvidia-smi` starts a process (~100 ms) per read.
//! Why not the `nvml-wrapper` crate: five entry points are needed, and binding them here
//! keeps the tree lean; the library is `dlopen`ed like every other GPU library, so a
//! machine without it simply has no clock readings (recorded as such), never a crash.

use std::ffi::{CString, c_char, c_int, c_uint, c_ulonglong, c_void};

type Device = *mut c_void;
type InitFn = unsafe extern "C" fn() -> c_int;
type HandleByPciFn = unsafe extern "C" fn(*const c_char, *mut Device) -> c_int;
type ClockFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
type ReasonsFn = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int;

const NVML_SUCCESS: c_int = 0;
const NVML_CLOCK_SM: c_uint = 1;

/// Throttle-reason bits that mean the clock was held down by power, heat or hardware
/// (NVML's SwPowerCap, HwSlowdown, SwThermalSlowdown, HwThermalSlowdown, HwPowerBrake).
pub const THROTTLE_MASK: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// One device's clock reader.
pub struct Nvml {
    // Keeps the library loaded while the function pointers below are in use.
    _lib: libloading::Library,
    device: Device,
    clock: ClockFn,
    max_clock: ClockFn,
    reasons: Option<ReasonsFn>,
}

// SAFETY: NVML is thread-safe; the device handle is an opaque token.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

/// A reading taken at one edge of a benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockReading {
    pub sm_mhz: u32,
    /// NVML's throttle-reason bit mask, where the driver reports it.
    pub reasons: Option<u64>,
}

impl ClockReading {
    /// Throttled: a power, thermal or hardware slowdown is active, or the clock is below
    /// 75 % of the maximum (nvbench's threshold).
    pub fn is_throttled(&self, max_mhz: u32) -> bool {
        let by_reason = self.reasons.is_some_and(|r| r & THROTTLE_MASK != 0);
        by_reason || (max_mhz > 0 && (self.sm_mhz as f64) < 0.75 * max_mhz as f64)
    }
}

impl Nvml {
    /// Opens NVML for the device at `pci_bus_id` (`00000000:41:00.0`); the error says why not.
    pub fn open(pci_bus_id: &str) -> Result<Nvml, String> {
        // SAFETY: loading the driver's management library runs its initialisers only.
        let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
            .map_err(|e| format!("NVML not loaded: {e}"))?;
        // SAFETY: the symbol types match NVML's C declarations.
        unsafe {
            let init: InitFn = *lib
                .get::<InitFn>(b"nvmlInit_v2\0")
                .map_err(|e| format!("NVML: {e}"))?;
            let by_pci: HandleByPciFn = *lib
                .get::<HandleByPciFn>(b"nvmlDeviceGetHandleByPciBusId_v2\0")
                .map_err(|e| format!("NVML: {e}"))?;
            let clock: ClockFn = *lib
                .get::<ClockFn>(b"nvmlDeviceGetClockInfo\0")
                .map_err(|e| format!("NVML: {e}"))?;
            let max_clock: ClockFn = *lib
                .get::<ClockFn>(b"nvmlDeviceGetMaxClockInfo\0")
                .map_err(|e| format!("NVML: {e}"))?;
            let reasons = lib
                .get::<ReasonsFn>(b"nvmlDeviceGetCurrentClocksEventReasons\0")
                .or_else(|_| lib.get::<ReasonsFn>(b"nvmlDeviceGetCurrentClocksThrottleReasons\0"))
                .ok()
                .map(|s| *s);
            let status = init();
            if status != NVML_SUCCESS {
                return Err(format!("nvmlInit_v2 returned {status}"));
            }
            let id = CString::new(pci_bus_id).map_err(|e| e.to_string())?;
            let mut device: Device = std::ptr::null_mut();
            let status = by_pci(id.as_ptr(), &mut device);
            if status != NVML_SUCCESS {
                return Err(format!("NVML has no device at PCI {pci_bus_id} ({status})"));
            }
            Ok(Nvml {
                _lib: lib,
                device,
                clock,
                max_clock,
                reasons,
            })
        }
    }

    /// The SM clock now, and the throttle reasons.
    pub fn read(&self) -> Option<ClockReading> {
        let mut mhz: c_uint = 0;
        // SAFETY: the device handle came from NVML; writes one uint.
        let status = unsafe { (self.clock)(self.device, NVML_CLOCK_SM, &mut mhz) };
        if status != NVML_SUCCESS {
            return None;
        }
        let reasons = self.reasons.and_then(|f| {
            let mut bits: c_ulonglong = 0;
            // SAFETY: as above; writes one u64.
            (unsafe { f(self.device, &mut bits) } == NVML_SUCCESS).then_some(bits)
        });
        Some(ClockReading {
            sm_mhz: mhz,
            reasons,
        })
    }

    /// The maximum SM clock (boost), MHz.
    pub fn max_sm_mhz(&self) -> Option<u32> {
        let mut mhz: c_uint = 0;
        // SAFETY: as in `read`.
        let status = unsafe { (self.max_clock)(self.device, NVML_CLOCK_SM, &mut mhz) };
        (status == NVML_SUCCESS).then_some(mhz)
    }
}

/// Start and end clock readings of one benchmark, written into its notes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClockWindow {
    pub start: Option<ClockReading>,
    pub end: Option<ClockReading>,
}

impl ClockWindow {
    /// Records a reading: the first one is the start, every later one the end.
    pub fn sample(&mut self, reading: Option<ClockReading>) {
        if self.start.is_none() {
            self.start = reading;
        } else if reading.is_some() {
            self.end = reading;
        }
    }

    pub fn notes(
        &self,
        max_mhz: Option<u32>,
        out: &mut std::collections::BTreeMap<String, serde_json::Value>,
    ) {
        let Some(start) = self.start else {
            out.insert("sm_clock".into(), "not read (NVML unavailable)".into());
            return;
        };
        let end = self.end.unwrap_or(start);
        out.insert("sm_clock_start_mhz".into(), start.sm_mhz.into());
        out.insert("sm_clock_end_mhz".into(), end.sm_mhz.into());
        if let Some(max) = max_mhz {
            out.insert("sm_clock_max_mhz".into(), max.into());
        }
        if let Some(reasons) = end.reasons {
            out.insert(
                "throttle_reasons_end".into(),
                format!("{reasons:#x}").into(),
            );
        }
        let max = max_mhz.unwrap_or(0);
        let throttled = start.is_throttled(max) || end.is_throttled(max);
        out.insert("throttled".into(), throttled.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_is_flagged_by_reason_or_by_clock() {
        let fine = ClockReading {
            sm_mhz: 1980,
            reasons: Some(0x1),
        };
        assert!(!fine.is_throttled(1980));
        let power = ClockReading {
            sm_mhz: 1980,
            reasons: Some(0x4),
        };
        assert!(power.is_throttled(1980));
        let slow = ClockReading {
            sm_mhz: 1000,
            reasons: None,
        };
        assert!(slow.is_throttled(1980));
    }

    #[test]
    fn window_notes_say_when_clocks_are_unknown() {
        let mut notes = std::collections::BTreeMap::new();
        ClockWindow::default().notes(None, &mut notes);
        assert!(notes.contains_key("sm_clock"));
        let mut w = ClockWindow::default();
        w.sample(Some(ClockReading {
            sm_mhz: 1900,
            reasons: Some(0),
        }));
        w.sample(Some(ClockReading {
            sm_mhz: 1100,
            reasons: Some(0),
        }));
        let mut notes = std::collections::BTreeMap::new();
        w.notes(Some(1980), &mut notes);
        assert_eq!(notes["sm_clock_end_mhz"], 1100);
        assert_eq!(notes["throttled"], true);
    }

    #[test]
    fn opening_without_a_driver_is_an_error() {
        // On a machine with an NVIDIA driver this bus id does not exist either.
        assert!(Nvml::open("ffffffff:ff:1f.7").is_err());
    }
}
