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
use crate::system::nvml::{
    Clock, Device, NVML_ERROR_NO_PERMISSION, NVML_ERROR_NOT_SUPPORTED, NvmlError, open_cuda_device,
};
use std::ffi::c_int;

/// Reading is required; each setter is optional (older drivers lack the locked-clock
/// pair), and a missing one is "not supported".
pub(crate) const READS: &[&str] = &["nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo"];

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
    device: Device<'static>,
    name: String,
    locked_by: Option<Method>,
}

impl NvmlClocks {
    /// The GPU this process's CUDA benchmarks run on (`STACKBENCH_CUDA_DEVICE` among those
    /// `CUDA_VISIBLE_DEVICES` leaves, mapped to NVML as the telemetry maps it); the error
    /// says why not.
    pub fn open_cuda_device() -> Result<NvmlClocks, String> {
        let (device, id) = open_cuda_device()?;
        device.nvml().require(READS).map_err(|e| e.to_string())?;
        Ok(NvmlClocks {
            device,
            name: format!("{} (NVML, {})", id.name, id.pci_bus_id),
            locked_by: None,
        })
    }
}

/// A setter's error as the lock sees it: `None` where the driver lacks the entry point
/// (the lock then tries the other way), else the refusal.
fn refused_by(error: NvmlError) -> Option<(LockRefused, Option<c_int>)> {
    match error {
        NvmlError::MissingEntry(_) => None,
        NvmlError::Status { call, status, text } => {
            Some((refusal(status, call, &text), Some(status)))
        }
        other => Some((LockRefused::Failed(other.to_string()), None)),
    }
}

impl ClockController for NvmlClocks {
    fn device(&self) -> String {
        self.name.clone()
    }

    fn read(&self) -> Result<ClockPair, String> {
        let sm = self.device.clock_mhz(Clock::Sm);
        let memory = self.device.clock_mhz(Clock::Memory);
        if let (Err(e), Err(_)) = (&sm, &memory) {
            return Err(e.to_string());
        }
        Ok(ClockPair {
            sm_mhz: sm.ok(),
            memory_mhz: memory.ok(),
        })
    }

    fn lock(&mut self) -> Result<LockedClocks, LockRefused> {
        let d = self.device;
        let default_sm = d.default_applications_clock_mhz(Clock::Sm).ok();
        let default_mem = d.default_applications_clock_mhz(Clock::Memory).ok();
        let max_sm = d.max_clock_mhz(Clock::Sm).ok();
        let sm = target_sm_mhz(default_sm, max_sm).ok_or_else(|| {
            LockRefused::Unsupported("NVML reports neither a default nor a maximum SM clock".into())
        })?;
        let mut refused = LockRefused::Unsupported(
            "this driver's NVML has neither nvmlDeviceSetGpuLockedClocks nor \
             nvmlDeviceSetApplicationsClocks"
                .into(),
        );
        match self.device.set_gpu_locked_clocks(sm, sm) {
            Ok(()) => {
                self.locked_by = Some(Method::LockedClocks);
                return Ok(LockedClocks {
                    sm_mhz: sm,
                    memory_mhz: None,
                    method: "nvmlDeviceSetGpuLockedClocks".into(),
                });
            }
            Err(e) => {
                if let Some((why, status)) = refused_by(e) {
                    // Only "not supported" falls through to application clocks: a refused
                    // permission would be refused there too.
                    if status != Some(NVML_ERROR_NOT_SUPPORTED) {
                        return Err(why);
                    }
                    refused = why;
                }
            }
        }
        if let Some(memory) = default_mem {
            match self.device.set_applications_clocks(memory, sm) {
                Ok(()) => {
                    self.locked_by = Some(Method::ApplicationClocks);
                    return Ok(LockedClocks {
                        sm_mhz: sm,
                        memory_mhz: Some(memory),
                        method: "nvmlDeviceSetApplicationsClocks".into(),
                    });
                }
                Err(e) => {
                    if let Some((why, _)) = refused_by(e) {
                        refused = why;
                    }
                }
            }
        }
        Err(refused)
    }

    fn restore(&mut self) -> Result<(), String> {
        let reset = match self.locked_by.take() {
            None => return Ok(()),
            Some(Method::LockedClocks) => self.device.reset_gpu_locked_clocks(),
            Some(Method::ApplicationClocks) => self.device.reset_applications_clocks(),
        };
        reset.map_err(|e| match e {
            NvmlError::MissingEntry(call) => format!("{call} is missing from this NVML"),
            other => other.to_string(),
        })
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
        // SAFETY: libc has none of NVML's symbol names, so no entry point's type is used.
        let nvml = unsafe { crate::system::nvml::Nvml::resolve(libc) };
        let error = nvml
            .require(READS)
            .expect_err("libc is not NVML")
            .to_string();
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
