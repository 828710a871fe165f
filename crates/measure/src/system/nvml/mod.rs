//! The one binding to NVML (`libnvidia-ml.so.1`, NVIDIA's management library): loaded once
//! per process at run time, shared by the telemetry sampler, clock locking and the CUDA
//! backend's clock reader at a benchmark's edges. A machine without the driver gets the
//! reason once, as a value, and every user records it; nothing here panics.
//!
//! Why our own module and not the `nvml-wrapper` crate (0.13, which also loads at run time
//! and returns errors): it covers every call made here, but it reads throttle reasons only
//! through the deprecated `nvmlDeviceGetCurrentClocksThrottleReasons` and drops the bits its
//! bitflags do not know, where the benchmark notes record the raw mask and prefer
//! `nvmlDeviceGetCurrentClocksEventReasons`; its errors drop NVML's status number and
//! `nvmlErrorString` text, which a refused clock lock records. And it brings about 28,000
//! lines of bindings and wrapper, and `darling` through its derive macro, for the
//! twenty-odd entry points used here. `docs/DEPENDENCY-NOTES.md` says the same.
//!
//! `system` sits below the backends, so the binding lives here. Each entry point is looked
//! up when the library loads and kept as an `Option`: a driver that lacks one (older drivers
//! have no locked clocks) makes that call an error naming it, and each user says at open
//! which ones it cannot do without ([`Nvml::require`]).

mod cuda_device;

pub use cuda_device::{
    CUDA_DEVICE_ENV, NvmlDeviceId, normalise_pci_bus_id, nvml_index_for, open_cuda_device,
};

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_ulonglong, c_void};
use std::sync::OnceLock;

/// The file the driver installs; the unversioned name exists only with development files.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

type Handle = *mut c_void;
type InitFn = unsafe extern "C" fn() -> c_int;
type CountFn = unsafe extern "C" fn(*mut c_uint) -> c_int;
type HandleByIndexFn = unsafe extern "C" fn(c_uint, *mut Handle) -> c_int;
type HandleByPciFn = unsafe extern "C" fn(*const c_char, *mut Handle) -> c_int;
type TextFn = unsafe extern "C" fn(Handle, *mut c_char, c_uint) -> c_int;
type PciInfoFn = unsafe extern "C" fn(Handle, *mut PciInfo) -> c_int;
type UintFn = unsafe extern "C" fn(Handle, *mut c_uint) -> c_int;
type SensorFn = unsafe extern "C" fn(Handle, c_uint, *mut c_uint) -> c_int;
type UtilizationFn = unsafe extern "C" fn(Handle, *mut Utilization) -> c_int;
type ReasonsFn = unsafe extern "C" fn(Handle, *mut c_ulonglong) -> c_int;
type SetPairFn = unsafe extern "C" fn(Handle, c_uint, c_uint) -> c_int;
type ResetFn = unsafe extern "C" fn(Handle) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

pub const NVML_SUCCESS: c_int = 0;
pub const NVML_ERROR_NOT_SUPPORTED: c_int = 3;
pub const NVML_ERROR_NO_PERMISSION: c_int = 4;
const NVML_TEMPERATURE_GPU: c_uint = 0;
/// Long enough for any UUID or name NVML writes (its own limits are 80 and 96).
const TEXT_BYTES: usize = 96;

/// NVML's `nvmlClockType_t`, the two stackbench reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Sm,
    Memory,
}

impl Clock {
    fn code(self) -> c_uint {
        match self {
            Clock::Sm => 1,
            Clock::Memory => 2,
        }
    }
}

/// `nvmlPciInfo_t` (nvml.h, `nvmlDeviceGetPciInfo_v3`).
#[repr(C)]
struct PciInfo {
    bus_id_legacy: [c_char; 16],
    domain: c_uint,
    bus: c_uint,
    device: c_uint,
    pci_device_id: c_uint,
    pci_sub_system_id: c_uint,
    bus_id: [c_char; 32],
}

/// `nvmlUtilization_t`: percent of the last sample period the GPU and its memory were busy.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Utilization {
    pub gpu: c_uint,
    pub memory: c_uint,
}

/// Why an NVML call gave no answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NvmlError {
    /// The library could not be opened or initialised: no driver, or a broken one.
    #[error("NVML not loaded (no NVIDIA driver): {0}")]
    NotLoaded(String),
    /// This driver's NVML lacks the entry point.
    #[error("NVML: {0}: not in this driver's {LIBRARY}")]
    MissingEntry(&'static str),
    /// The call ran and NVML refused; `text` is `nvmlErrorString`'s, where there is one.
    #[error("{call} returned {status}: {text}")]
    Status {
        call: &'static str,
        status: c_int,
        text: String,
    },
}

impl NvmlError {
    /// NVML's status code, for a call that ran.
    pub fn status(&self) -> Option<c_int> {
        match self {
            NvmlError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// One entry point, kept with its name so a missing one can be named.
#[derive(Clone, Copy)]
struct Entry<F> {
    name: &'static str,
    f: Option<F>,
}

impl<F: Copy> Entry<F> {
    fn get(&self) -> Result<F, NvmlError> {
        self.f.ok_or(NvmlError::MissingEntry(self.name))
    }
}

/// Declares the entry-point table once: its fields, the symbol each is read from, and the
/// lookup by name [`Nvml::require`] uses, so a name and its field cannot drift apart.
macro_rules! entries {
    ($($field:ident: $ty:ty = $name:literal,)*) => {
        #[derive(Clone, Copy)]
        struct Entries {
            $($field: Entry<$ty>,)*
        }

        impl Entries {
            /// # Safety
            /// Each field's type must match NVML's C declaration of its symbol.
            unsafe fn resolve(lib: &libloading::Library) -> Entries {
                Entries {
                    $($field: Entry {
                        name: $name,
                        // SAFETY: the caller vouches for the table's types.
                        f: unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }
                            .ok()
                            .map(|s| *s),
                    },)*
                }
            }

            /// Whether the entry point `name` was found; `None` for a name not in the table.
            fn present(&self, name: &str) -> Option<bool> {
                match name {
                    $($name => Some(self.$field.f.is_some()),)*
                    _ => None,
                }
            }
        }
    };
}

entries! {
    init: InitFn = "nvmlInit_v2",
    error_string: ErrorStringFn = "nvmlErrorString",
    count: CountFn = "nvmlDeviceGetCount_v2",
    by_index: HandleByIndexFn = "nvmlDeviceGetHandleByIndex_v2",
    by_pci: HandleByPciFn = "nvmlDeviceGetHandleByPciBusId_v2",
    uuid: TextFn = "nvmlDeviceGetUUID",
    name: TextFn = "nvmlDeviceGetName",
    pci_info: PciInfoFn = "nvmlDeviceGetPciInfo_v3",
    power: UintFn = "nvmlDeviceGetPowerUsage",
    temperature: SensorFn = "nvmlDeviceGetTemperature",
    utilization: UtilizationFn = "nvmlDeviceGetUtilizationRates",
    clock: SensorFn = "nvmlDeviceGetClockInfo",
    max_clock: SensorFn = "nvmlDeviceGetMaxClockInfo",
    app_clock: SensorFn = "nvmlDeviceGetApplicationsClock",
    default_app_clock: SensorFn = "nvmlDeviceGetDefaultApplicationsClock",
    event_reasons: ReasonsFn = "nvmlDeviceGetCurrentClocksEventReasons",
    throttle_reasons: ReasonsFn = "nvmlDeviceGetCurrentClocksThrottleReasons",
    set_locked: SetPairFn = "nvmlDeviceSetGpuLockedClocks",
    reset_locked: ResetFn = "nvmlDeviceResetGpuLockedClocks",
    set_app: SetPairFn = "nvmlDeviceSetApplicationsClocks",
    reset_app: ResetFn = "nvmlDeviceResetApplicationsClocks",
}

/// The loaded, initialised library and its entry points.
pub struct Nvml {
    // Keeps the library mapped while the entry points are in use; the process-wide copy
    // lives in a static and is never unloaded (nor shut down: NVML's own exit handles it).
    _lib: libloading::Library,
    entries: Entries,
}

// SAFETY: NVML is thread-safe; the table holds plain function pointers.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

/// The process's NVML, loaded and initialised on first use; later calls get the same one, or
/// the same reason it could not be loaded.
pub fn nvml() -> Result<&'static Nvml, NvmlError> {
    static NVML: OnceLock<Result<Nvml, NvmlError>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::load(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

impl Nvml {
    /// Opens `library` and initialises NVML in it. [`nvml`] is the way in; this is separate
    /// so a test can name a library that is not there.
    pub fn load(library: &str) -> Result<Nvml, NvmlError> {
        // SAFETY: loading the driver's management library runs its initialisers only.
        let lib = unsafe { libloading::Library::new(library) }
            .map_err(|e| NvmlError::NotLoaded(format!("cannot open {library}: {e}")))?;
        // SAFETY: the table's types are NVML's C declarations.
        let nvml = unsafe { Nvml::resolve(lib) };
        let init = nvml.entries.init.get()?;
        // SAFETY: nvmlInit_v2 takes no arguments and returns a status.
        let status = unsafe { init() };
        nvml.check("nvmlInit_v2", status)?;
        Ok(nvml)
    }

    /// Looks the entry points up without initialising anything.
    ///
    /// # Safety
    /// `lib` must be NVML, or a library whose symbols of NVML's names have NVML's types.
    pub(crate) unsafe fn resolve(lib: libloading::Library) -> Nvml {
        // SAFETY: passed on to the caller.
        let entries = unsafe { Entries::resolve(&lib) };
        Nvml { _lib: lib, entries }
    }

    /// Fails naming the first of `names` this driver's NVML lacks: a user that cannot work
    /// without them refuses at open, with the reason, instead of reading nothing later.
    pub fn require(&self, names: &[&'static str]) -> Result<(), NvmlError> {
        for name in names {
            // A name not in the table counts as missing; a test holds every user's list
            // to the table, so that means a typo, caught there.
            if self.entries.present(name) != Some(true) {
                return Err(NvmlError::MissingEntry(name));
            }
        }
        Ok(())
    }

    /// NVML's words for `status`, or nothing where the driver cannot say.
    pub fn error_text(&self, status: c_int) -> String {
        let Some(f) = self.entries.error_string.f else {
            return String::new();
        };
        // SAFETY: nvmlErrorString returns a static NUL-terminated string (or null).
        unsafe {
            let p = f(status);
            if p.is_null() {
                return String::new();
            }
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }

    fn check(&self, call: &'static str, status: c_int) -> Result<(), NvmlError> {
        if status == NVML_SUCCESS {
            return Ok(());
        }
        Err(NvmlError::Status {
            call,
            status,
            text: self.error_text(status),
        })
    }

    /// How many GPUs NVML sees (all of them: it ignores `CUDA_VISIBLE_DEVICES`).
    pub fn device_count(&self) -> Result<u32, NvmlError> {
        let f = self.entries.count.get()?;
        let mut n: c_uint = 0;
        // SAFETY: writes one uint.
        self.check("nvmlDeviceGetCount_v2", unsafe { f(&mut n) })?;
        Ok(n)
    }

    /// NVML's device `index`, in its own (PCI bus) order.
    pub fn device_by_index(&self, index: u32) -> Result<Device<'_>, NvmlError> {
        let f = self.entries.by_index.get()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: writes one handle.
        self.check("nvmlDeviceGetHandleByIndex_v2", unsafe {
            f(index, &mut handle)
        })?;
        Ok(Device { nvml: self, handle })
    }

    /// The device at `pci_bus_id` (`00000000:41:00.0`).
    pub fn device_by_pci_bus_id(&self, pci_bus_id: &str) -> Result<Device<'_>, NvmlError> {
        let f = self.entries.by_pci.get()?;
        let id = CString::new(pci_bus_id).map_err(|_| NvmlError::Status {
            call: "nvmlDeviceGetHandleByPciBusId_v2",
            status: 2, // NVML_ERROR_INVALID_ARGUMENT: a NUL inside cannot be passed
            text: format!("PCI bus id {pci_bus_id:?} holds a NUL"),
        })?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string in, one handle out.
        self.check("nvmlDeviceGetHandleByPciBusId_v2", unsafe {
            f(id.as_ptr(), &mut handle)
        })?;
        Ok(Device { nvml: self, handle })
    }

    /// Every device NVML sees, in its index order, with what the CUDA mapping needs.
    pub fn devices(&self) -> Result<Vec<NvmlDeviceId>, NvmlError> {
        (0..self.device_count()?)
            .map(|i| self.device_by_index(i)?.id())
            .collect()
    }
}

/// One GPU as NVML knows it. Reads take `&self`: NVML is thread-safe.
#[derive(Clone, Copy)]
pub struct Device<'a> {
    nvml: &'a Nvml,
    handle: Handle,
}

// SAFETY: NVML is thread-safe; the handle is an opaque token valid while NVML is loaded.
unsafe impl Send for Device<'_> {}
unsafe impl Sync for Device<'_> {}

impl<'a> Device<'a> {
    pub fn nvml(&self) -> &'a Nvml {
        self.nvml
    }

    fn text(&self, entry: Entry<TextFn>) -> Result<String, NvmlError> {
        let f = entry.get()?;
        let mut buffer = [0 as c_char; TEXT_BYTES];
        // SAFETY: writes at most `TEXT_BYTES` bytes, NUL included.
        self.nvml.check(entry.name, unsafe {
            f(self.handle, buffer.as_mut_ptr(), TEXT_BYTES as c_uint)
        })?;
        Ok(c_text(&buffer))
    }

    /// `GPU-5f4b0f0e-...`.
    pub fn uuid(&self) -> Result<String, NvmlError> {
        self.text(self.nvml.entries.uuid)
    }

    /// `NVIDIA H100 80GB HBM3`.
    pub fn name(&self) -> Result<String, NvmlError> {
        self.text(self.nvml.entries.name)
    }

    /// `00000000:41:00.0`.
    pub fn pci_bus_id(&self) -> Result<String, NvmlError> {
        let f = self.nvml.entries.pci_info.get()?;
        // SAFETY: a plain C struct of integers and chars: all zeroes is a valid value.
        let mut info: PciInfo = unsafe { std::mem::zeroed() };
        // SAFETY: writes one struct.
        self.nvml.check("nvmlDeviceGetPciInfo_v3", unsafe {
            f(self.handle, &mut info)
        })?;
        Ok(c_text(&info.bus_id))
    }

    /// What the CUDA mapping needs to tell this device from the others.
    pub fn id(&self) -> Result<NvmlDeviceId, NvmlError> {
        Ok(NvmlDeviceId {
            pci_bus_id: self.pci_bus_id()?,
            uuid: self.uuid()?,
            name: self.name()?,
        })
    }

    fn uint(&self, entry: Entry<UintFn>) -> Result<u32, NvmlError> {
        let f = entry.get()?;
        let mut value: c_uint = 0;
        // SAFETY: writes one uint.
        self.nvml
            .check(entry.name, unsafe { f(self.handle, &mut value) })?;
        Ok(value)
    }

    fn sensor(&self, entry: Entry<SensorFn>, which: c_uint) -> Result<u32, NvmlError> {
        let f = entry.get()?;
        let mut value: c_uint = 0;
        // SAFETY: writes one uint.
        self.nvml
            .check(entry.name, unsafe { f(self.handle, which, &mut value) })?;
        Ok(value)
    }

    /// Board power draw, milliwatts.
    pub fn power_milliwatts(&self) -> Result<u32, NvmlError> {
        self.uint(self.nvml.entries.power)
    }

    /// The GPU die's temperature, °C.
    pub fn temperature_c(&self) -> Result<u32, NvmlError> {
        self.sensor(self.nvml.entries.temperature, NVML_TEMPERATURE_GPU)
    }

    pub fn utilization(&self) -> Result<Utilization, NvmlError> {
        let entry = self.nvml.entries.utilization;
        let f = entry.get()?;
        let mut rates = Utilization::default();
        // SAFETY: writes one struct.
        self.nvml
            .check(entry.name, unsafe { f(self.handle, &mut rates) })?;
        Ok(rates)
    }

    /// The clock now, MHz.
    pub fn clock_mhz(&self, clock: Clock) -> Result<u32, NvmlError> {
        self.sensor(self.nvml.entries.clock, clock.code())
    }

    /// The highest clock the device runs at (boost), MHz.
    pub fn max_clock_mhz(&self, clock: Clock) -> Result<u32, NvmlError> {
        self.sensor(self.nvml.entries.max_clock, clock.code())
    }

    /// The application clock now set, MHz.
    pub fn applications_clock_mhz(&self, clock: Clock) -> Result<u32, NvmlError> {
        self.sensor(self.nvml.entries.app_clock, clock.code())
    }

    /// The application clock the device boots with (its base clock), MHz.
    pub fn default_applications_clock_mhz(&self, clock: Clock) -> Result<u32, NvmlError> {
        self.sensor(self.nvml.entries.default_app_clock, clock.code())
    }

    /// Why the clocks are where they are, NVML's raw bit mask (bits it may add later kept).
    /// Through `nvmlDeviceGetCurrentClocksEventReasons` where the driver has it (12.2 on),
    /// else its older name `...ThrottleReasons`.
    pub fn clock_event_reasons(&self) -> Result<u64, NvmlError> {
        let e = self.nvml.entries;
        let entry = if e.event_reasons.f.is_some() {
            e.event_reasons
        } else {
            e.throttle_reasons
        };
        let f = entry.get()?;
        let mut bits: c_ulonglong = 0;
        // SAFETY: writes one u64.
        self.nvml
            .check(entry.name, unsafe { f(self.handle, &mut bits) })?;
        Ok(bits)
    }

    fn set_pair(&mut self, entry: Entry<SetPairFn>, a: u32, b: u32) -> Result<(), NvmlError> {
        let f = entry.get()?;
        // SAFETY: two MHz values by value.
        self.nvml.check(entry.name, unsafe { f(self.handle, a, b) })
    }

    fn reset(&mut self, entry: Entry<ResetFn>) -> Result<(), NvmlError> {
        let f = entry.get()?;
        // SAFETY: the handle alone.
        self.nvml.check(entry.name, unsafe { f(self.handle) })
    }

    /// Holds the SM clock within `[min_mhz, max_mhz]` (Volta and later; needs root).
    pub fn set_gpu_locked_clocks(&mut self, min_mhz: u32, max_mhz: u32) -> Result<(), NvmlError> {
        self.set_pair(self.nvml.entries.set_locked, min_mhz, max_mhz)
    }

    pub fn reset_gpu_locked_clocks(&mut self) -> Result<(), NvmlError> {
        self.reset(self.nvml.entries.reset_locked)
    }

    /// Sets the application clocks, memory first as NVML takes them.
    pub fn set_applications_clocks(
        &mut self,
        memory_mhz: u32,
        sm_mhz: u32,
    ) -> Result<(), NvmlError> {
        self.set_pair(self.nvml.entries.set_app, memory_mhz, sm_mhz)
    }

    pub fn reset_applications_clocks(&mut self) -> Result<(), NvmlError> {
        self.reset(self.nvml.entries.reset_app)
    }
}

/// The string NVML wrote into a buffer, up to its NUL (all of it where there is none).
fn c_text(buffer: &[c_char]) -> String {
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether `name` is an entry point of the table (resolved against libc, so every one is
/// absent): a user's list of required calls is held to the table by this, since `require`
/// would take a typo for a driver that lacks the call. Returns the names not in the table.
#[cfg(test)]
pub(crate) fn not_in_table<'a>(names: &[&'a str]) -> Vec<&'a str> {
    // SAFETY: libc has none of NVML's names, so no entry point is ever called.
    let nvml = unsafe { Nvml::resolve(libloading::Library::new("libc.so.6").expect("libc loads")) };
    names
        .iter()
        .copied()
        .filter(|name| nvml.entries.present(name) != Some(false))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &[u8]) -> Vec<c_char> {
        s.iter().map(|b| *b as c_char).collect()
    }

    #[test]
    fn a_missing_library_is_a_reason_naming_it() {
        let error = Nvml::load("libnvidia-ml-absent.so.1")
            .err()
            .expect("no such library");
        assert!(matches!(error, NvmlError::NotLoaded(_)), "{error:?}");
        let said = error.to_string();
        assert!(
            said.starts_with("NVML not loaded (no NVIDIA driver)"),
            "{said}"
        );
        assert!(said.contains("libnvidia-ml-absent.so.1"), "{said}");
    }

    #[test]
    fn without_a_driver_every_user_gets_the_same_reason() {
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return; // a GPU machine: ci/gpu_tests.sh reads NVML there
        }
        let first = nvml().err().expect("no driver here");
        assert!(first.to_string().contains(LIBRARY), "{first}");
        assert_eq!(nvml().err(), Some(first));
    }

    #[test]
    fn a_library_that_is_not_nvml_is_refused_naming_the_entry_point() {
        // libc is mapped into every process and has no NVML symbol: loading must name the
        // missing entry point instead of calling through a null pointer.
        let error = Nvml::load("libc.so.6").err().expect("libc is not NVML");
        assert_eq!(error, NvmlError::MissingEntry("nvmlInit_v2"));
        assert!(error.to_string().contains(LIBRARY), "{error}");
    }

    #[test]
    fn require_names_the_first_missing_entry_point() {
        // SAFETY: libc has none of NVML's symbol names, so no type is ever used.
        let nvml =
            unsafe { Nvml::resolve(libloading::Library::new("libc.so.6").expect("libc loads")) };
        assert_eq!(nvml.require(&[]), Ok(()));
        assert_eq!(
            nvml.require(&["nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo"]),
            Err(NvmlError::MissingEntry("nvmlDeviceGetPowerUsage"))
        );
        // Without nvmlErrorString a refusal still carries its number.
        assert_eq!(nvml.error_text(NVML_ERROR_NO_PERMISSION), "");
        let refused = nvml.check("nvmlDeviceSetGpuLockedClocks", NVML_ERROR_NO_PERMISSION);
        let error = refused.expect_err("4 is not success");
        assert_eq!(error.status(), Some(NVML_ERROR_NO_PERMISSION));
        assert_eq!(
            error.to_string(),
            "nvmlDeviceSetGpuLockedClocks returned 4: "
        );
        assert_eq!(nvml.check("nvmlInit_v2", NVML_SUCCESS), Ok(()));
    }

    #[test]
    fn every_entry_point_in_the_table_can_be_required_by_name() {
        // SAFETY: as above.
        let nvml =
            unsafe { Nvml::resolve(libloading::Library::new("libc.so.6").expect("libc loads")) };
        for name in [
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceSetGpuLockedClocks",
            "nvmlDeviceResetApplicationsClocks",
        ] {
            assert_eq!(nvml.entries.present(name), Some(false), "{name}");
        }
        assert_eq!(nvml.entries.present("nvmlNoSuchCall"), None);
        // What the two users on this floor require at open is all in the table (the CUDA
        // backend's clock reader checks its own list with `not_in_table`).
        let required = [
            crate::system::telemetry::nvml::READS,
            crate::system::clocks::nvml::READS,
        ]
        .concat();
        assert_eq!(not_in_table(&required), Vec::<&str>::new());
    }

    #[test]
    fn nvml_strings_end_at_their_nul_or_the_buffer() {
        assert_eq!(c_text(&chars(b"NVIDIA L4\0garbage")), "NVIDIA L4");
        assert_eq!(c_text(&chars(b"GPU-abc")), "GPU-abc");
        assert_eq!(c_text(&chars(b"\0")), "");
    }

    #[test]
    fn clock_kinds_are_nvmls_numbers() {
        // nvml.h: NVML_CLOCK_GRAPHICS 0, NVML_CLOCK_SM 1, NVML_CLOCK_MEM 2.
        assert_eq!(Clock::Sm.code(), 1);
        assert_eq!(Clock::Memory.code(), 2);
    }

    #[test]
    fn the_pci_info_struct_has_nvmls_layout() {
        // nvmlPciInfo_t v3: 16 legacy id chars, five uints, 32 id chars.
        assert_eq!(std::mem::size_of::<PciInfo>(), 16 + 5 * 4 + 32);
        assert_eq!(std::mem::offset_of!(PciInfo, bus_id), 36);
    }
}
