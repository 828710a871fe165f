//! GPU power, temperature, SM clock and utilisation through NVML, `dlopen`ed at run time
//! like every GPU library (a machine without the driver gets a reason, never a crash).
//! Device 0 is read: the device every single-GPU benchmark runs on.
//!
//! The library is opened here for `backend::cuda::nvml` too (the clock reader at a
//! benchmark's edges): `system` sits below the backends, so the loader lives here.

use std::ffi::{c_int, c_uint, c_void};

type Device = *mut c_void;
type InitFn = unsafe extern "C" fn() -> c_int;
type HandleByIndexFn = unsafe extern "C" fn(c_uint, *mut Device) -> c_int;
type UintFn = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;
type SensorFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
type UtilizationFn = unsafe extern "C" fn(Device, *mut Utilization) -> c_int;

const NVML_SUCCESS: c_int = 0;
const NVML_TEMPERATURE_GPU: c_uint = 0;
const NVML_CLOCK_SM: c_uint = 1;

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// One reading of device 0.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuReading {
    pub power_watts: Option<f64>,
    pub temperature_c: Option<f64>,
    pub clock_mhz: Option<f64>,
    pub utilization_percent: Option<f64>,
}

pub struct NvmlTelemetry {
    _lib: libloading::Library,
    device: Device,
    power: UintFn,
    temperature: SensorFn,
    clock: SensorFn,
    utilization: UtilizationFn,
}

// SAFETY: NVML is thread-safe; the device handle is an opaque token.
unsafe impl Send for NvmlTelemetry {}
unsafe impl Sync for NvmlTelemetry {}

/// Loads the driver's NVML and initialises it: the one place NVML is opened, for this
/// telemetry and for the backend's clock reader (`backend::cuda::nvml`).
pub fn load_initialised() -> Result<libloading::Library, String> {
    // SAFETY: loading the driver's management library runs its initialisers only.
    let lib = unsafe { libloading::Library::new("libnvidia-ml.so.1") }
        .map_err(|e| format!("NVML not loaded (no NVIDIA driver): {e}"))?;
    // SAFETY: nvmlInit_v2 takes no arguments and returns a status.
    let status = unsafe { entry::<InitFn>(&lib, "nvmlInit_v2")?() };
    if status != NVML_SUCCESS {
        return Err(format!("nvmlInit_v2 returned {status}"));
    }
    Ok(lib)
}

/// The entry point `name` of `lib`; the error names it.
///
/// # Safety
/// `T` must be the function-pointer type of NVML's C declaration of `name`.
pub unsafe fn entry<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
    let symbol = format!("{name}\0");
    // SAFETY: the caller vouches for `T`.
    unsafe { lib.get::<T>(symbol.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("NVML: {name}: {e}"))
}

impl NvmlTelemetry {
    /// Loads NVML and opens device 0; the error says why not.
    pub fn open() -> Result<NvmlTelemetry, String> {
        let lib = load_initialised()?;
        // SAFETY: the symbol types match NVML's C declarations.
        unsafe {
            let by_index: HandleByIndexFn = entry(&lib, "nvmlDeviceGetHandleByIndex_v2")?;
            let power: UintFn = entry(&lib, "nvmlDeviceGetPowerUsage")?;
            let temperature: SensorFn = entry(&lib, "nvmlDeviceGetTemperature")?;
            let clock: SensorFn = entry(&lib, "nvmlDeviceGetClockInfo")?;
            let utilization: UtilizationFn = entry(&lib, "nvmlDeviceGetUtilizationRates")?;
            let mut device: Device = std::ptr::null_mut();
            let status = by_index(0, &mut device);
            if status != NVML_SUCCESS {
                return Err(format!("NVML has no device 0 ({status})"));
            }
            Ok(NvmlTelemetry {
                _lib: lib,
                device,
                power,
                temperature,
                clock,
                utilization,
            })
        }
    }

    /// What device 0 reports now; a quantity the driver does not report is `None`.
    pub fn read(&self) -> GpuReading {
        let mut milliwatts: c_uint = 0;
        let mut celsius: c_uint = 0;
        let mut mhz: c_uint = 0;
        let mut rates = Utilization::default();
        // SAFETY: the handle came from NVML; each call writes only its out-parameter.
        unsafe {
            GpuReading {
                power_watts: ((self.power)(self.device, &mut milliwatts) == NVML_SUCCESS)
                    .then(|| milliwatts as f64 / 1000.0),
                temperature_c: ((self.temperature)(
                    self.device,
                    NVML_TEMPERATURE_GPU,
                    &mut celsius,
                ) == NVML_SUCCESS)
                    .then_some(celsius as f64),
                clock_mhz: ((self.clock)(self.device, NVML_CLOCK_SM, &mut mhz) == NVML_SUCCESS)
                    .then_some(mhz as f64),
                utilization_percent: ((self.utilization)(self.device, &mut rates) == NVML_SUCCESS)
                    .then_some(rates.gpu as f64),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn opening_without_a_driver_says_why() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a GPU machine: ci/gpu_tests.sh checks readings there
        }
        let error = super::NvmlTelemetry::open().err().expect("no driver here");
        assert!(error.contains("NVML"), "{error}");
    }
}
