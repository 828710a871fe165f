//! The ROCm libraries the backend uses (HIP runtime, rocBLAS, hipRTC), found before
//! rocmrc touches them: rocmrc panics when it loads a missing library, so presence is
//! checked first, and the probe reports the file each one was really loaded from.

use crate::backend::cuda::loader::symbol_origin;
use rocmrc::rocblas::sys as rbsys;
use std::collections::BTreeMap;
use std::ffi::c_void;

/// Which ROCm libraries rocmrc can load here.
#[derive(Clone, Copy, Debug)]
pub struct Presence {
    pub hip: bool,
    pub rocblas: bool,
}

pub fn presence() -> Presence {
    // SAFETY: each only tries dlopen on rocmrc's candidate names.
    unsafe {
        Presence {
            hip: rocmrc::hip::sys::is_rocmlib_present(),
            rocblas: rocmrc::rocblas::sys::is_rocmlib_present(),
        }
    }
}

/// The reason given when the HIP runtime is missing.
pub fn missing_hip_reason() -> String {
    format!(
        "libamdhip64.so (the HIP runtime) was not found under {} or on the loader path: \
         ROCm is not installed (set ROCM_PATH if it is elsewhere)",
        std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into())
    )
}

/// Versions and files of the loaded ROCm libraries.
pub(super) fn describe_libraries(presence: Presence) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    let mut version = 0i32;
    // SAFETY: HIP is present; each call writes one int.
    let (runtime, driver) = unsafe {
        let r = rocmrc::hip::sys::hipRuntimeGetVersion(&mut version);
        let runtime = (r == rocmrc::hip::sys::hipError_t::hipSuccess).then_some(version);
        let d = rocmrc::hip::sys::hipDriverGetVersion(&mut version);
        let driver = (d == rocmrc::hip::sys::hipError_t::hipSuccess).then_some(version);
        (runtime, driver)
    };
    // SAFETY: HIP is present; the symbol is used only as an address.
    let hip_path = unsafe {
        rocmrc::hip::sys::rocmlib()
            .get::<*const c_void>(b"hipInit\0")
            .ok()
            .and_then(|s| symbol_origin(*s))
    };
    out.insert(
        "hip".into(),
        serde_json::json!({
            "runtime_version": runtime,
            "driver_version": driver,
            "path": hip_path.map(|p| p.display().to_string()),
        }),
    );
    if presence.rocblas {
        let mut buf = [0 as std::ffi::c_char; 128];
        // SAFETY: rocBLAS is present; the buffer is NUL-terminated by the call or zeroed.
        let text = unsafe {
            rbsys::rocblas_get_version_string(buf.as_mut_ptr(), buf.len());
            std::ffi::CStr::from_ptr(buf.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        // SAFETY: as above.
        let path = unsafe {
            rbsys::rocmlib()
                .get::<*const c_void>(b"rocblas_create_handle\0")
                .ok()
                .and_then(|s| symbol_origin(*s))
        };
        out.insert(
            "rocblas".into(),
            serde_json::json!({"version": text, "path": path.map(|p| p.display().to_string())}),
        );
    }
    out
}
