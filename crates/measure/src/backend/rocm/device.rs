//! One AMD GPU's facts for the probe (attributes, peaks, host link), the error type every
//! HIP call maps into, and the event timer the workloads share.

use crate::backend::gpu::GpuTimer;
use crate::backend::{BackendError, BackendKind, DeviceInfo};
use crate::system::gpu_peaks;
use rocmrc::hip::result as hip;
use rocmrc::hip::safe::HipContext;
use rocmrc::hip::sys::hipDeviceAttribute_t as Attr;
use std::collections::BTreeMap;
use std::time::Duration;

use super::RocmBackend;

pub(super) fn device_info(
    ordinal: i32,
    libraries: &BTreeMap<String, serde_json::Value>,
) -> Result<DeviceInfo, String> {
    let text = |e: rocmrc::hip::result::HipError| format!("device {ordinal}: {e:?}");
    let dev = hip::device::get(ordinal).map_err(text)?;
    let attr = |a: Attr| hip::device::get_attribute(dev, a).map_err(text);
    let name = hip::device::get_name(dev).map_err(text)?;
    let ctx = HipContext::new(ordinal as usize).map_err(text)?;
    let arch = ctx.gfx_arch().unwrap_or_else(|_| "unknown".into());
    let units = attr(Attr::hipDeviceAttributeMultiprocessorCount)?;
    let clock_khz = attr(Attr::hipDeviceAttributeClockRate)?;
    let memory_khz = attr(Attr::hipDeviceAttributeMemoryClockRate)?;
    let bus_bits = attr(Attr::hipDeviceAttributeMemoryBusWidth)?;
    let bandwidth = 2.0 * memory_khz as f64 * 1e3 * bus_bits as f64 / 8.0;
    let pci = format!(
        "{:04x}:{:02x}:{:02x}.0",
        attr(Attr::hipDeviceAttributePciDomainId)?,
        attr(Attr::hipDeviceAttributePciBusId)?,
        attr(Attr::hipDeviceAttributePciDeviceId)?
    );
    let mut p = BTreeMap::new();
    p.insert("ordinal".into(), ordinal.into());
    p.insert("gfx_arch".into(), arch.clone().into());
    p.insert("pci_bus_id".into(), pci.clone().into());
    p.insert("compute_units".into(), units.into());
    p.insert("sm_clock_max_mhz".into(), (clock_khz / 1000).into());
    p.insert("memory_clock_mhz".into(), (memory_khz / 1000).into());
    p.insert("memory_bus_width_bits".into(), bus_bits.into());
    p.insert(
        "l2_bytes".into(),
        attr(Attr::hipDeviceAttributeL2CacheSize)?.into(),
    );
    p.insert(
        "memory_bytes".into(),
        hip::device::total_mem(dev).map_err(text)?.into(),
    );
    p.insert(
        "libraries".into(),
        serde_json::Value::Object(libraries.clone().into_iter().collect()),
    );
    let spec = gpu_peaks::GpuSpec {
        name: name.clone(),
        vendor: gpu_peaks::Vendor::Amd,
        arch,
        units: units as u32,
        clock_mhz: (clock_khz / 1000) as u32,
        measured_bandwidth_bytes_per_s: Some(bandwidth),
        host_link: crate::backend::cuda::host_link(&name, &pci, &mut p),
    };
    p.insert("peaks".into(), gpu_peaks::peaks_json(&spec));
    Ok(DeviceInfo {
        backend: BackendKind::Rocm,
        name,
        properties: p,
    })
}

pub(super) fn device_error(context: impl Into<String>, e: impl std::fmt::Debug) -> BackendError {
    BackendError::Device {
        backend: BackendKind::Rocm,
        context: context.into(),
        message: format!("{e:?}"),
    }
}

/// HIP-event timing for the shared workloads.
pub(super) struct RocmTimer<'a> {
    pub(super) dev: &'a RocmBackend,
    pub(super) flush: bool,
}

impl GpuTimer for RocmTimer<'_> {
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        self.dev.time(self.flush, iters, launch)
    }

    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
        out.insert("timing".into(), "HIP events".into());
        out.insert("cache_flushed_before_each_sample".into(), self.flush.into());
        out.insert(
            "sm_clock".into(),
            "not read on ROCm (no SMI binding yet)".into(),
        );
    }
}
