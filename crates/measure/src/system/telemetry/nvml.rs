//! GPU power, temperature, SM clock and utilisation through NVML, `dlopen`ed at run time
//! like every GPU library (a machine without the driver gets a reason, never a crash).
//!
//! The device read is the one the benchmark ran on: CUDA device `STACKBENCH_CUDA_DEVICE`
//! (default 0) among those `CUDA_VISIBLE_DEVICES` lets CUDA see. NVML ignores that variable
//! and numbers every GPU by PCI bus, so NVML index 0 is not CUDA device 0 on a machine
//! where the variable is set (by Slurm, for instance). [`nvml_index_for`] maps one to the
//! other by PCI bus order or by UUID, never by assuming the indices agree.
//!
//! The library is opened here for `backend::cuda::nvml` too (the clock reader at a
//! benchmark's edges): `system` sits below the backends, so the loader lives here.

use std::ffi::{c_int, c_uint, c_void};

pub(crate) type Device = *mut c_void;
type InitFn = unsafe extern "C" fn() -> c_int;
pub(crate) type HandleByIndexFn = unsafe extern "C" fn(c_uint, *mut Device) -> c_int;
type CountFn = unsafe extern "C" fn(*mut c_uint) -> c_int;
type TextFn = unsafe extern "C" fn(Device, *mut std::ffi::c_char, c_uint) -> c_int;
type PciInfoFn = unsafe extern "C" fn(Device, *mut PciInfo) -> c_int;
type UintFn = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;
type SensorFn = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
type UtilizationFn = unsafe extern "C" fn(Device, *mut Utilization) -> c_int;

const NVML_SUCCESS: c_int = 0;
const NVML_TEMPERATURE_GPU: c_uint = 0;
const NVML_CLOCK_SM: c_uint = 1;

/// `nvmlPciInfo_t` (nvml.h, `nvmlDeviceGetPciInfo_v3`).
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [std::ffi::c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [std::ffi::c_char; 32],
}

/// The variable choosing the CUDA device stackbench's CUDA backend opens (the same one
/// `backend::cuda::DEVICE_ENV` names; `system` sits below the backends).
pub const CUDA_DEVICE_ENV: &str = "STACKBENCH_CUDA_DEVICE";

/// What NVML says about one of its devices, in NVML's index order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlDeviceId {
    /// `00000000:41:00.0`.
    pub pci_bus_id: String,
    /// `GPU-5f4b0f0e-...`.
    pub uuid: String,
    pub name: String,
}

/// A PCI bus id in one spelling: lower case, the domain as 8 hex digits (CUDA and NVML
/// write `00000000:41:00.0`, sysfs and HIP `0000:41:00.0`).
pub fn normalise_pci_bus_id(id: &str) -> String {
    let lower = id.trim().to_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if rest.contains(':') => {
            let domain =
                u32::from_str_radix(domain, 16).map_or(domain.to_owned(), |d| format!("{d:08x}"));
            format!("{domain}:{rest}")
        }
        _ => lower,
    }
}

/// The NVML index of the device CUDA calls `ordinal`, given `CUDA_VISIBLE_DEVICES`
/// (`visible`, unset = every GPU), `CUDA_DEVICE_ORDER` (`order`) and NVML's devices.
///
/// A visible entry `GPU-<uuid prefix>` names a device by UUID, as CUDA accepts it. A
/// number is an index into CUDA's own enumeration: in PCI bus order under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`, and "fastest first" otherwise, which CUDA leaves
/// unspecified among equals. Among identical GPUs that is PCI order in practice; among
/// different ones it cannot be told from here, so the error says how to make it certain.
pub fn nvml_index_for(
    ordinal: usize,
    visible: Option<&str>,
    order: Option<&str>,
    devices: &[NvmlDeviceId],
) -> Result<usize, String> {
    let mut by_pci: Vec<usize> = (0..devices.len()).collect();
    by_pci.sort_by_key(|&i| normalise_pci_bus_id(&devices[i].pci_bus_id));
    let pci_order_holds = order.is_some_and(|o| o.trim() == "PCI_BUS_ID")
        || devices.iter().all(|d| d.name == devices[0].name);
    let by_number = |k: usize| -> Result<usize, String> {
        if !pci_order_holds {
            return Err(format!(
                "cannot tell which GPU CUDA numbers {k} among different models: set \
                 CUDA_DEVICE_ORDER=PCI_BUS_ID or name the GPU by UUID in CUDA_VISIBLE_DEVICES"
            ));
        }
        by_pci
            .get(k)
            .copied()
            .ok_or_else(|| format!("NVML sees {} GPUs, none numbered {k}", devices.len()))
    };
    let Some(visible) = visible.filter(|v| !v.trim().is_empty()) else {
        return by_number(ordinal);
    };
    let entry = visible
        .split(',')
        .map(str::trim)
        .nth(ordinal)
        .ok_or_else(|| format!("CUDA_VISIBLE_DEVICES={visible} has no device {ordinal}"))?;
    if entry.to_lowercase().starts_with("mig-") {
        return Err(format!(
            "CUDA device {ordinal} is a MIG instance ({entry}): NVML's GPU readings would be \
             the whole GPU's"
        ));
    }
    if entry.to_lowercase().starts_with("gpu-") {
        let wanted = entry.to_lowercase();
        let matches: Vec<usize> = (0..devices.len())
            .filter(|&i| devices[i].uuid.to_lowercase().starts_with(&wanted))
            .collect();
        return match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!("no GPU with UUID {entry}")),
            _ => Err(format!("UUID prefix {entry} matches several GPUs")),
        };
    }
    let k = entry.parse::<usize>().map_err(|_| {
        format!("CUDA_VISIBLE_DEVICES entry {entry:?} is neither a number nor a UUID")
    })?;
    by_number(k)
}

/// The NVML string `read` writes into a buffer, up to its NUL.
fn c_text(buffer: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[repr(C)]
#[derive(Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

/// One reading of a GPU.
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
    /// Loads NVML and opens the GPU the CUDA benchmarks of this process run on (see the
    /// module note); the error says why not.
    pub fn open() -> Result<NvmlTelemetry, String> {
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
        // SAFETY: the symbol types match NVML's C declarations.
        unsafe {
            let by_index: HandleByIndexFn = entry(&lib, "nvmlDeviceGetHandleByIndex_v2")?;
            let power: UintFn = entry(&lib, "nvmlDeviceGetPowerUsage")?;
            let temperature: SensorFn = entry(&lib, "nvmlDeviceGetTemperature")?;
            let clock: SensorFn = entry(&lib, "nvmlDeviceGetClockInfo")?;
            let utilization: UtilizationFn = entry(&lib, "nvmlDeviceGetUtilizationRates")?;
            let devices = list_devices(&lib, by_index)?;
            let index = nvml_index_for(ordinal, visible.as_deref(), order.as_deref(), &devices)
                .map_err(|why| format!("NVML: which GPU CUDA device {ordinal} is: {why}"))?;
            let mut device: Device = std::ptr::null_mut();
            let status = by_index(index as c_uint, &mut device);
            if status != NVML_SUCCESS {
                return Err(format!("NVML has no device {index} ({status})"));
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

    /// What the device reports now; a quantity the driver does not report is `None`.
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

/// Every device NVML sees, in its index order, with what the mapping needs.
///
/// # Safety
/// `by_index` must be `nvmlDeviceGetHandleByIndex_v2` from `lib`, and NVML initialised.
pub(crate) unsafe fn list_devices(
    lib: &libloading::Library,
    by_index: HandleByIndexFn,
) -> Result<Vec<NvmlDeviceId>, String> {
    // SAFETY: the symbol types match NVML's C declarations; each call writes only its
    // out-parameters, within the lengths given.
    unsafe {
        let count: CountFn = entry(lib, "nvmlDeviceGetCount_v2")?;
        let uuid: TextFn = entry(lib, "nvmlDeviceGetUUID")?;
        let name: TextFn = entry(lib, "nvmlDeviceGetName")?;
        let pci: PciInfoFn = entry(lib, "nvmlDeviceGetPciInfo_v3")?;
        let mut n: c_uint = 0;
        let status = count(&mut n);
        if status != NVML_SUCCESS {
            return Err(format!("nvmlDeviceGetCount_v2 returned {status}"));
        }
        (0..n)
            .map(|i| {
                let mut device: Device = std::ptr::null_mut();
                let status = by_index(i, &mut device);
                if status != NVML_SUCCESS {
                    return Err(format!("NVML has no device {i} ({status})"));
                }
                let mut uuid_text = [0 as std::ffi::c_char; 96];
                let mut name_text = [0 as std::ffi::c_char; 96];
                let mut info: PciInfo = std::mem::zeroed();
                let ok = uuid(device, uuid_text.as_mut_ptr(), 96) == NVML_SUCCESS
                    && name(device, name_text.as_mut_ptr(), 96) == NVML_SUCCESS
                    && pci(device, &mut info) == NVML_SUCCESS;
                if !ok {
                    return Err(format!("NVML could not describe device {i}"));
                }
                Ok(NvmlDeviceId {
                    pci_bus_id: c_text(&info.bus_id),
                    uuid: c_text(&uuid_text),
                    name: c_text(&name_text),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(pci: &str, uuid: &str, name: &str) -> NvmlDeviceId {
        NvmlDeviceId {
            pci_bus_id: pci.into(),
            uuid: uuid.into(),
            name: name.into(),
        }
    }

    /// NVML lists by PCI bus; these are given out of order to show the mapping sorts.
    fn four_h100s() -> Vec<NvmlDeviceId> {
        vec![
            gpu(
                "00000000:C1:00.0",
                "GPU-cccc0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:18:00.0",
                "GPU-aaaa0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:41:00.0",
                "GPU-bbbb0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
            gpu(
                "00000000:E1:00.0",
                "GPU-dddd0000-1111",
                "NVIDIA H100 80GB HBM3",
            ),
        ]
    }

    #[test]
    fn cuda_devices_map_to_nvml_by_pci_order_and_by_uuid_not_by_index() {
        let gpus = four_h100s();
        // No CUDA_VISIBLE_DEVICES: CUDA device 0 is the lowest PCI bus, NVML's entry 1 here.
        assert_eq!(nvml_index_for(0, None, None, &gpus), Ok(1));
        assert_eq!(nvml_index_for(2, None, Some("PCI_BUS_ID"), &gpus), Ok(0));
        // Slurm gave this job GPUs 2 and 3: CUDA device 0 is the third by PCI bus.
        assert_eq!(nvml_index_for(0, Some("2,3"), None, &gpus), Ok(0));
        assert_eq!(nvml_index_for(1, Some("2,3"), None, &gpus), Ok(3));
        // By UUID, including the prefix CUDA accepts.
        assert_eq!(
            nvml_index_for(0, Some("GPU-dddd0000-1111"), None, &gpus),
            Ok(3)
        );
        assert_eq!(
            nvml_index_for(1, Some("GPU-aaaa,GPU-bbbb"), None, &gpus),
            Ok(2)
        );
    }

    #[test]
    fn a_device_that_cannot_be_told_apart_is_an_error_never_index_0() {
        let gpus = four_h100s();
        assert!(nvml_index_for(0, Some("GPU-ffff"), None, &gpus).is_err());
        assert!(nvml_index_for(2, Some("0,1"), None, &gpus).is_err());
        assert!(
            nvml_index_for(0, Some("MIG-1234"), None, &gpus)
                .unwrap_err()
                .contains("MIG")
        );
        assert!(nvml_index_for(0, Some("x"), None, &gpus).is_err());
        // Two models: "fastest first" decides CUDA's numbers, unknowable here...
        let mixed = vec![
            gpu("00000000:18:00.0", "GPU-a", "NVIDIA L4"),
            gpu("00000000:41:00.0", "GPU-b", "NVIDIA H100 80GB HBM3"),
        ];
        let error = nvml_index_for(0, None, None, &mixed).unwrap_err();
        assert!(error.contains("CUDA_DEVICE_ORDER=PCI_BUS_ID"), "{error}");
        // ...unless the order is set or the GPU is named.
        assert_eq!(nvml_index_for(0, None, Some("PCI_BUS_ID"), &mixed), Ok(0));
        assert_eq!(nvml_index_for(0, Some("GPU-b"), None, &mixed), Ok(1));
    }

    #[test]
    fn pci_bus_ids_compare_in_one_spelling() {
        assert_eq!(normalise_pci_bus_id("0000:41:00.0"), "00000000:41:00.0");
        assert_eq!(normalise_pci_bus_id("00000000:C1:00.0"), "00000000:c1:00.0");
    }

    #[test]
    fn the_device_variable_is_the_backends() {
        assert_eq!(CUDA_DEVICE_ENV, crate::backend::cuda::DEVICE_ENV);
    }

    #[test]
    fn opening_without_a_driver_says_why() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a GPU machine: ci/gpu_tests.sh checks readings there
        }
        let error = super::NvmlTelemetry::open().err().expect("no driver here");
        assert!(error.contains("NVML"), "{error}");
    }
}
