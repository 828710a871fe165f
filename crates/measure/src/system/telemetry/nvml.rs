//! GPU power, temperature, SM clock and utilisation through NVML (the process's one
//! binding, [`crate::system::nvml`]): a machine without the driver gets a reason, never a
//! crash. The device read is the one the benchmark ran on, mapped from CUDA's numbering to
//! NVML's as the clock lock maps it.

use crate::system::nvml::{Clock, Device, open_cuda_device};

/// One reading of a GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuReading {
    pub power_watts: Option<f64>,
    pub temperature_c: Option<f64>,
    pub clock_mhz: Option<f64>,
    pub utilization_percent: Option<f64>,
}

/// The entry points a reading is made of: a driver without one of them has no telemetry,
/// said at open, rather than a quantity that is never read.
pub(crate) const READS: &[&str] = &[
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetUtilizationRates",
];

pub struct NvmlTelemetry {
    device: Device<'static>,
}

impl NvmlTelemetry {
    /// Opens the GPU the CUDA benchmarks of this process run on (see
    /// [`crate::system::nvml::open_cuda_device`]); the error says why not.
    pub fn open() -> Result<NvmlTelemetry, String> {
        let (device, _) = open_cuda_device()?;
        device.nvml().require(READS).map_err(|e| e.to_string())?;
        Ok(NvmlTelemetry { device })
    }

    /// What the device reports now; a quantity the driver does not report is `None`.
    pub fn read(&self) -> GpuReading {
        let d = &self.device;
        GpuReading {
            power_watts: d.power_milliwatts().ok().map(|mw| mw as f64 / 1000.0),
            temperature_c: d.temperature_c().ok().map(f64::from),
            clock_mhz: d.clock_mhz(Clock::Sm).ok().map(f64::from),
            utilization_percent: d.utilization().ok().map(|rates| rates.gpu as f64),
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
