//! stackbench's own kernels (`backend::gpu::kernels`) compiled by NVRTC once per process
//! for the device's architecture, and loaded by name.

use super::CudaBackend;
use crate::backend::gpu::kernels::{Platform, kernel_names, source};
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
use std::collections::HashMap;
use std::sync::Arc;

/// Every kernel function of the shared source, compiled for this device and loaded by name.
pub struct Kernels {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
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

impl Kernels {
    /// Compiles the source for this device and loads every kernel; the error is why the
    /// kernel families are skipped.
    pub fn compile(dev: &CudaBackend) -> Result<Kernels, String> {
        if !super::libs::presence().nvrtc {
            return Err("NVRTC (libnvrtc.so.12/.13) was not found".into());
        }
        let arch = arch_for(dev.compute_capability);
        let options = CompileOptions {
            arch: Some(arch),
            options: vec!["--std=c++17".into()],
            ..Default::default()
        };
        let ptx = compile_ptx_with_opts(source(Platform::Cuda), options)
            .map_err(|e| format!("NVRTC could not compile the kernels for {arch}: {e:?}"))?;
        let module = dev
            .ctx
            .load_module(ptx)
            .map_err(|e| format!("loading the compiled kernels: {e:?}"))?;
        let mut functions = HashMap::new();
        for name in kernel_names() {
            let function = module
                .load_function(&name)
                .map_err(|e| format!("kernel {name} missing from the module: {e:?}"))?;
            functions.insert(name, function);
        }
        Ok(Kernels {
            _module: module,
            functions,
            arch,
        })
    }

    pub fn get(&self, name: &str) -> Result<&CudaFunction, crate::backend::BackendError> {
        self.functions.get(name).ok_or_else(|| {
            crate::backend::BackendError::unsupported(
                crate::backend::BackendKind::Cuda,
                name,
                "no such kernel in stackbench's NVRTC source",
            )
        })
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
}
