//! NVIDIA clock control through NVML, `dlopen`ed at run time like every GPU library: a
//! machine without the driver, or a driver without one of these entry points, gets a reason
//! and runs unlocked, never a crash.
//!
//! The policy: hold the SM clock at the device's default application clock (its base
//! clock, what nvbench locks to) with `nvmlDeviceSetGpuLockedClocks(target, target)` (Volta
//! and later); where the driver says that is not supported, set the default application
//! clocks (memory and SM) with `nvmlDeviceSetApplicationsClocks`. The restore undoes the one
//! that was used (`nvmlDeviceResetGpuLockedClocks`, `nvmlDeviceResetApplicationsClocks`):
//! the driver's own policy comes back, which is what an unlocked machine runs at.
//! Both setters need root unless an administrator lifted that (`nvidia-smi -acp
//! UNRESTRICTED` for application clocks); NVML's "no permission" is the usual refusal.

use super::{ClockController, ClockPair, LockRefused, LockedClocks};
use crate::system::telemetry::nvml::{
    CUDA_DEVICE_ENV, Device, HandleByIndexFn, entry, list_devices, load_initialised, nvml_index_for,
};
use std::ffi::{c_char, c_int, c_uint};

type ClockFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
type SetPairFn = unsafe extern "C" fn(Device, c_uint, c_uint) -> c_int;
type ResetFn = unsafe extern "C" fn(Device) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

const NVML_SUCCESS: c_int = 0;
const NVML_ERROR_NOT_SUPPORTED: c_int = 3;
const NVML_ERROR_NO_PERMISSION: c_int = 4;
const NVML_CLOCK_SM: c_uint = 1;
const NVML_CLOCK_MEM: c_uint = 2;

/// The entry points clock control uses. Reading is required; each setter is optional
/// (older drivers lack the locked-clock pair), and a missing one is "not supported".
#[derive(Clone, Copy)]
struct Entries {
    clock: ClockFn,
    max_clock: ClockFn,
    default_app_clock: Option<ClockFn>,
    set_locked: Option<SetPairFn>,
    reset_locked: Option<ResetFn>,
    set_app: Option<SetPairFn>,
    reset_app: Option<ResetFn>,
    error_string: Option<ErrorStringFn>,
}

impl Entries {
    /// Resolves the entry points in `lib`; the error names the first required one missing.
    fn resolve(lib: &libloading::Library) -> Result<Entries, String> {
        // SAFETY: each type matches NVML's C declaration of the symbol it is read as.
        unsafe {
            Ok(Entries {
                clock: entry(lib, "nvmlDeviceGetClockInfo")?,
                max_clock: entry(lib, "nvmlDeviceGetMaxClockInfo")?,
                default_app_clock: entry(lib, "nvmlDeviceGetDefaultApplicationsClock").ok(),
                set_locked: entry(lib, "nvmlDeviceSetGpuLockedClocks").ok(),
                reset_locked: entry(lib, "nvmlDeviceResetGpuLockedClocks").ok(),
                set_app: entry(lib, "nvmlDeviceSetApplicationsClocks").ok(),
                reset_app: entry(lib, "nvmlDeviceResetApplicationsClocks").ok(),
                error_string: entry(lib, "nvmlErrorString").ok(),
            })
        }
    }
}

/// Which setter held the clock, so the restore undoes that one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    LockedClocks,
    ApplicationClocks,
}

/// The clock to hold: the default application SM clock, else (a driver that does not say)
/// the maximum, which is then the throttling target too.
pub fn target_sm_mhz(default_app_sm: Option<u32>, max_sm: Option<u32>) -> Option<u32> {
    default_app_sm
        .filter(|m| *m > 0)
        .or(max_sm.filter(|m| *m > 0))
}

/// NVML's refusal in the guard's terms: permission, support, or anything else.
pub fn refusal(status: c_int, call: &str, text: &str) -> LockRefused {
    let why = format!("{call} returned {status}: {text}");
    match status {
        NVML_ERROR_NO_PERMISSION => LockRefused::NoPermission(why),
        NVML_ERROR_NOT_SUPPORTED => LockRefused::Unsupported(why),
        _ => LockRefused::Failed(why),
    }
}

/// One NVIDIA GPU's clocks.
pub struct NvmlClocks {
    // Keeps the library loaded while the function pointers are in use.
    _lib: libloading::Library,
    device: Device,
    name: String,
    entries: Entries,
    locked_by: Option<Method>,
}

// SAFETY: NVML is thread-safe; the device handle is an opaque token.
unsafe impl Send for NvmlClocks {}

impl NvmlClocks {
    /// The GPU this process's CUDA benchmarks run on (`STACKBENCH_CUDA_DEVICE` among those
    /// `CUDA_VISIBLE_DEVICES` leaves, mapped to NVML as the telemetry maps it); the error
    /// says why not.
    pub fn open_cuda_device() -> Result<NvmlClocks, String> {
        let ordinal = match std::env::var(CUDA_DEVICE_ENV) {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{CUDA_DEVICE_ENV}={v} is not a device number"))?,
            Err(_) => 0,
        };
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        let order = std::env::var("CUDA_DEVICE_ORDER").ok();
        let lib = load_initialised()?;
        let entries = Entries::resolve(&lib)?;
        // SAFETY: the symbol types match NVML's C declarations; NVML is initialised.
        unsafe {
            let by_index: HandleByIndexFn = entry(&lib, "nvmlDeviceGetHandleByIndex_v2")?;
            let devices = list_devices(&lib, by_index)?;
            let index = nvml_index_for(ordinal, visible.as_deref(), order.as_deref(), &devices)
                .map_err(|why| format!("NVML: which GPU CUDA device {ordinal} is: {why}"))?;
            let mut device: Device = std::ptr::null_mut();
            let status = by_index(index as c_uint, &mut device);
            if status != NVML_SUCCESS {
                return Err(format!("NVML has no device {index} ({status})"));
            }
            let id = &devices[index];
            Ok(NvmlClocks {
                _lib: lib,
                device,
                name: format!("{} (NVML, {})", id.name, id.pci_bus_id),
                entries,
                locked_by: None,
            })
        }
    }

    fn clock(&self, f: ClockFn, kind: c_uint) -> Result<u32, c_int> {
        let mut mhz: c_uint = 0;
        // SAFETY: the handle came from NVML; writes one uint.
        let status = unsafe { f(self.device, kind, &mut mhz) };
        if status == NVML_SUCCESS {
            Ok(mhz)
        } else {
            Err(status)
        }
    }

    fn text(&self, status: c_int) -> String {
        let Some(f) = self.entries.error_string else {
            return String::new();
        };
        // SAFETY: nvmlErrorString returns a static NUL-terminated string (or null).
        unsafe {
            let p = f(status);
            if p.is_null() {
                return String::new();
            }
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }

    fn set(&self, f: SetPairFn, a: u32, b: u32) -> c_int {
        // SAFETY: the handle came from NVML; two MHz values by value.
        unsafe { f(self.device, a, b) }
    }
}

impl ClockController for NvmlClocks {
    fn device(&self) -> String {
        self.name.clone()
    }

    fn read(&self) -> Result<ClockPair, String> {
        let sm = self.clock(self.entries.clock, NVML_CLOCK_SM);
        let memory = self.clock(self.entries.clock, NVML_CLOCK_MEM);
        if let (Err(a), Err(_)) = (sm, memory) {
            return Err(format!(
                "nvmlDeviceGetClockInfo returned {a}: {}",
                self.text(a)
            ));
        }
        Ok(ClockPair {
            sm_mhz: sm.ok(),
            memory_mhz: memory.ok(),
        })
    }

    fn lock(&mut self) -> Result<LockedClocks, LockRefused> {
        let e = self.entries;
        let default_sm = e
            .default_app_clock
            .and_then(|f| self.clock(f, NVML_CLOCK_SM).ok());
        let default_mem = e
            .default_app_clock
            .and_then(|f| self.clock(f, NVML_CLOCK_MEM).ok());
        let max_sm = self.clock(e.max_clock, NVML_CLOCK_SM).ok();
        let sm = target_sm_mhz(default_sm, max_sm).ok_or_else(|| {
            LockRefused::Unsupported("NVML reports neither a default nor a maximum SM clock".into())
        })?;
        let mut refused = LockRefused::Unsupported(
            "this driver's NVML has neither nvmlDeviceSetGpuLockedClocks nor \
             nvmlDeviceSetApplicationsClocks"
                .into(),
        );
        if let Some(set) = e.set_locked {
            let status = self.set(set, sm, sm);
            if status == NVML_SUCCESS {
                self.locked_by = Some(Method::LockedClocks);
                return Ok(LockedClocks {
                    sm_mhz: sm,
                    memory_mhz: None,
                    method: "nvmlDeviceSetGpuLockedClocks".into(),
                });
            }
            refused = refusal(status, "nvmlDeviceSetGpuLockedClocks", &self.text(status));
            // Only "not supported" falls through to application clocks: a refused permission
            // would be refused there too.
            if status != NVML_ERROR_NOT_SUPPORTED {
                return Err(refused);
            }
        }
        if let (Some(set), Some(memory)) = (e.set_app, default_mem) {
            let status = self.set(set, memory, sm);
            if status == NVML_SUCCESS {
                self.locked_by = Some(Method::ApplicationClocks);
                return Ok(LockedClocks {
                    sm_mhz: sm,
                    memory_mhz: Some(memory),
                    method: "nvmlDeviceSetApplicationsClocks".into(),
                });
            }
            refused = refusal(
                status,
                "nvmlDeviceSetApplicationsClocks",
                &self.text(status),
            );
        }
        Err(refused)
    }

    fn restore(&mut self) -> Result<(), String> {
        let (reset, call) = match self.locked_by.take() {
            None => return Ok(()),
            Some(Method::LockedClocks) => {
                (self.entries.reset_locked, "nvmlDeviceResetGpuLockedClocks")
            }
            Some(Method::ApplicationClocks) => {
                (self.entries.reset_app, "nvmlDeviceResetApplicationsClocks")
            }
        };
        let reset = reset.ok_or_else(|| format!("{call} is missing from this NVML"))?;
        // SAFETY: the handle came from NVML.
        let status = unsafe { reset(self.device) };
        if status == NVML_SUCCESS {
            Ok(())
        } else {
            Err(format!("{call} returned {status}: {}", self.text(status)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_default_application_clock_else_the_maximum() {
        assert_eq!(target_sm_mhz(Some(1755), Some(1980)), Some(1755));
        assert_eq!(target_sm_mhz(None, Some(1980)), Some(1980));
        assert_eq!(target_sm_mhz(Some(0), Some(1980)), Some(1980));
        assert_eq!(target_sm_mhz(None, None), None);
    }

    #[test]
    fn nvml_refusals_are_told_apart() {
        assert!(matches!(
            refusal(4, "nvmlDeviceSetGpuLockedClocks", "Insufficient Permissions"),
            LockRefused::NoPermission(why) if why.contains("Insufficient Permissions")
        ));
        assert!(matches!(refusal(3, "x", ""), LockRefused::Unsupported(_)));
        assert!(matches!(refusal(999, "x", ""), LockRefused::Failed(_)));
    }

    #[test]
    fn a_library_without_the_entry_points_is_an_error_naming_the_symbol() {
        // libc is loaded in every process and has no NVML symbol: the resolver must say
        // which one is missing instead of crashing on a null pointer.
        // SAFETY: loading the C library already mapped into this process runs nothing new.
        let libc = unsafe { libloading::Library::new("libc.so.6") }.expect("libc loads");
        let error = Entries::resolve(&libc).err().expect("libc is not NVML");
        assert!(error.contains("nvmlDeviceGetClockInfo"), "{error}");
    }

    #[test]
    fn opening_without_a_driver_says_why() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a GPU machine: ci/gpu_tests.sh locks and restores there
        }
        let error = NvmlClocks::open_cuda_device()
            .err()
            .expect("no driver here");
        assert!(error.contains("NVML"), "{error}");
    }
}
