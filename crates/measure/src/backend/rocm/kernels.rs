//! stackbench's own kernels (`backend::gpu::kernels`) compiled by hipRTC for the device's
//! gfx architecture and loaded by name. Missing hipRTC or an arch rocmrc cannot target is
//! a skip; a compile or load error is a failure with hipRTC's log.

use crate::backend::gpu;
use crate::backend::gpu::library::{BuildFailure, Library, LoadedKernels};
use rocmrc::hip::safe::{HipFunction, HipModule};

use super::RocmBackend;

/// hipRTC options for the kernels: the same for the backend and the compile-time
/// benchmark (`rocm::compile`), so the benchmark times what runs.
pub(super) fn compile_options() -> rocmrc::hiprtc::CompileOptions {
    rocmrc::hiprtc::CompileOptions {
        opt_level: Some(3),
        options: vec!["-std=c++17".into()],
        ..Default::default()
    }
}

/// stackbench's kernels compiled by hipRTC for this device, by name.
pub(super) struct RocmKernels {
    pub(super) loaded: LoadedKernels<HipModule, HipFunction>,
}

impl RocmKernels {
    /// Missing hipRTC or an architecture rocmrc cannot target is a skip; a failure to read
    /// the arch, compile or load is a failure with hipRTC's log.
    pub(super) fn compile(dev: &RocmBackend) -> Library<RocmKernels> {
        use rocmrc::hiprtc::GfxVersion;
        // SAFETY: only tries dlopen on rocmrc's candidate names.
        let present = if unsafe { rocmrc::hiprtc::sys::is_rocmlib_present() } {
            Ok(())
        } else {
            Err("hipRTC (libhiprtc.so) was not found".to_owned())
        };
        if let Err(reason) = present {
            return Library::Missing(reason);
        }
        let arch = match dev.ctx.gfx_arch() {
            Ok(arch) => arch,
            Err(e) => return Library::Broken(format!("reading the gfx arch: {e:?}")),
        };
        let gfx: Result<GfxVersion, String> = arch.parse().map_err(|e: String| {
            format!("{e}: rocmrc's hipRTC path knows gfx942, gfx950, gfx110x and gfx120x")
        });
        let supported = gfx.as_ref().map(|_| ()).map_err(String::clone);
        Library::build(Ok(()), supported, || match gfx {
            Ok(gfx) => Self::build(dev, &arch, gfx),
            Err(reason) => Err(BuildFailure::new("hipRTC target", reason)),
        })
    }

    fn build(
        dev: &RocmBackend,
        arch: &str,
        gfx: rocmrc::hiprtc::GfxVersion,
    ) -> Result<RocmKernels, BuildFailure> {
        use rocmrc::hiprtc::{CompileError, compile_hsaco_with_opts};
        let options = compile_options();
        let hsaco = compile_hsaco_with_opts(
            gpu::kernels::source(gpu::kernels::Platform::Hip),
            gfx,
            options,
        )
        .map_err(|e| {
            let message = match &e {
                CompileError::CompileError { hiprtc, log, .. } => {
                    format!("{hiprtc:?}\n{}", log.to_string_lossy())
                }
                other => format!("{other:?}"),
            };
            BuildFailure::new(format!("hipRTC compiling the kernels for {arch}"), message)
        })?;
        let module = dev.ctx.load_module(hsaco).map_err(|e| {
            BuildFailure::new(format!("loading the {arch} module"), format!("{e:?}"))
        })?;
        Ok(RocmKernels {
            loaded: LoadedKernels::load(module, |m, name| m.load_function(name))?,
        })
    }
}
