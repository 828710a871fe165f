//! stackbench's own kernels (`backend::gpu::kernels`) compiled by NVRTC once per process
//! for the device's architecture, and loaded by name.

use super::CudaBackend;
use crate::backend::gpu::kernels::{Platform, source};
use crate::backend::gpu::library::{BuildFailure, Library, LoadedKernels};
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

/// Every kernel function of the shared source, compiled for this device and loaded by name.
pub struct Kernels {
    loaded: LoadedKernels<CudaModule, CudaFunction>,
    pub arch: &'static str,
}

/// The `--gpu-architecture` for a compute capability. NVRTC wants a `&'static str`.
pub fn arch_for(cc: (i32, i32)) -> &'static str {
    match cc {
        (7, 0) => "sm_70",
        (7, 5) => "sm_75",
        (8, 0) => "sm_80",
        (8, 6) => "sm_86",
        (8, 7) => "sm_87",
        (8, 9) => "sm_89",
        (9, 0) => "sm_90",
        (10, 0) => "sm_100",
        (12, 0) => "sm_120",
        (major, minor) => Box::leak(format!("sm_{major}{minor}").into_boxed_str()),
    }
}

/// NVRTC options for `arch`: the same for the backend and the CI compile
/// (`examples/nvrtc_check.rs`), so CI checks what runs.
pub fn compile_options(arch: &'static str) -> CompileOptions {
    CompileOptions {
        arch: Some(arch),
        options: vec!["--std=c++17".into()],
        ..Default::default()
    }
}

/// Compiles the shared source for `arch` through cudarc's NVRTC; the failure carries
/// NVRTC's log. Needs only NVRTC, no driver or GPU.
pub fn compile_ptx_for(arch: &'static str) -> Result<Ptx, BuildFailure> {
    compile_source_for(source(Platform::Cuda), arch)
}

/// Compiles `source` for `arch` as [`compile_ptx_for`] does (CI also feeds it a broken
/// source, to check that NVRTC's log reaches the failure).
pub fn compile_source_for(source: String, arch: &'static str) -> Result<Ptx, BuildFailure> {
    compile_ptx_with_opts(source, compile_options(arch)).map_err(|e| {
        let message = match &e {
            CompileError::CompileError { nvrtc, log, .. } => {
                format!("{nvrtc:?}\n{}", log.to_string_lossy())
            }
            other => format!("{other:?}"),
        };
        BuildFailure::new(format!("NVRTC compiling the kernels for {arch}"), message)
    })
}

/// The architectures this NVRTC can target, as compute capabilities ×10 (`90` = sm_90).
/// Call only when NVRTC is present.
pub fn nvrtc_supported_archs() -> Result<Vec<i32>, String> {
    use cudarc::nvrtc::sys;
    let mut count = 0;
    // SAFETY: NVRTC is loaded; the out-pointer is valid.
    unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .map_err(|e| format!("nvrtcGetNumSupportedArchs: {e:?}"))?;
    let mut archs = vec![0i32; count.max(0) as usize];
    // SAFETY: `archs` holds the `count` entries NVRTC writes.
    unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .map_err(|e| format!("nvrtcGetSupportedArchs: {e:?}"))?;
    Ok(archs)
}

/// Whether NVRTC can target compute capability `cc`: a device newer than the installed
/// NVRTC is a skip ("this machine cannot run it"), not a compile failure.
pub fn arch_supported(cc: (i32, i32), supported: &[i32]) -> Result<(), String> {
    let wanted = cc.0 * 10 + cc.1;
    if supported.contains(&wanted) {
        return Ok(());
    }
    Err(format!(
        "the installed NVRTC cannot target {} (it supports {})",
        arch_for(cc),
        supported
            .iter()
            .map(|a| format!("sm_{a}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

impl Kernels {
    /// Compiles the source for this device and loads every kernel: missing NVRTC or an
    /// architecture it cannot target is a skip; a compile or load error is a failure.
    pub fn compile(dev: &CudaBackend) -> Library<Kernels> {
        let present = if super::libs::presence().nvrtc {
            Ok(())
        } else {
            Err("NVRTC (libnvrtc.so.12/.13) was not found".to_owned())
        };
        let supported = || -> Result<(), String> {
            // A failing query is no reason to skip: let the compile say what is wrong.
            match nvrtc_supported_archs() {
                Ok(archs) => arch_supported(dev.compute_capability, &archs),
                Err(_) => Ok(()),
            }
        };
        let supported = if present.is_ok() { supported() } else { Ok(()) };
        let arch = arch_for(dev.compute_capability);
        Library::build(present, supported, || {
            let ptx = compile_ptx_for(arch)?;
            let module = dev.ctx.load_module(ptx).map_err(|e| {
                BuildFailure::new(format!("loading the {arch} module"), format!("{e:?}"))
            })?;
            Ok(Kernels {
                loaded: LoadedKernels::load(module, |m, name| m.load_function(name))?,
                arch,
            })
        })
    }

    /// A kernel by name; a name the source does not define is stackbench's bug: a failure.
    pub fn get(&self, name: &str) -> Result<&CudaFunction, crate::backend::BackendError> {
        self.loaded
            .get(crate::backend::BackendKind::Cuda, "NVRTC", name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_are_named_for_nvrtc() {
        assert_eq!(arch_for((9, 0)), "sm_90");
        assert_eq!(arch_for((11, 0)), "sm_110");
    }

    #[test]
    fn an_arch_newer_than_nvrtc_is_a_skip_reason() {
        let nvrtc_12_0 = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90];
        assert!(arch_supported((9, 0), &nvrtc_12_0).is_ok());
        let reason = arch_supported((10, 0), &nvrtc_12_0).unwrap_err();
        assert!(
            reason.contains("sm_100") && reason.contains("sm_90"),
            "{reason}"
        );
    }
}
