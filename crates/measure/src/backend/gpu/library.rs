//! A vendor library or runtime compiler as a GPU backend holds it: ready, missing from this
//! machine, or present and broken.
//!
//! The difference decides how a benchmark is recorded. "Skipped" means this machine cannot
//! run it: no library, or an architecture or dtype the library does not cover. A library
//! that loads and then fails (`cublasCreate` returns an error, NVRTC rejects stackbench's
//! source, the driver refuses the compiled module) is a defect someone has to fix, so every
//! benchmark that needs it is `failed`, with the error and, for compilers, the tail of the
//! compiler's log. One type carries that decision so the CUDA and ROCm backends cannot
//! drift apart, and it is testable without a GPU.

use crate::backend::{BackendError, BackendKind};

/// Lines of a compiler log kept in a failure: errors come last, and a run record is no place
/// for the whole log.
pub const LOG_TAIL_LINES: usize = 20;

/// A library (or a set of compiled kernels) as the backend holds it.
#[derive(Debug)]
pub enum Library<T> {
    Ready(T),
    /// This machine cannot have it (not installed, unsupported architecture): a skip.
    Missing(String),
    /// Installed, and it failed: a failure of every benchmark that needs it.
    Broken(String),
}

/// Why building something with a library that is present failed: the step and the message
/// (for a compiler, its log).
#[derive(Clone, Debug, PartialEq)]
pub struct BuildFailure {
    pub step: String,
    pub message: String,
}

impl BuildFailure {
    pub fn new(step: impl Into<String>, message: impl Into<String>) -> Self {
        BuildFailure {
            step: step.into(),
            message: message.into(),
        }
    }
}

impl<T> Library<T> {
    /// Builds `T` when the library is `present` and the target is `supported` (each `Err`
    /// is the skip reason, checked in that order); a failed build is `Broken`.
    pub fn build(
        present: Result<(), String>,
        supported: Result<(), String>,
        build: impl FnOnce() -> Result<T, BuildFailure>,
    ) -> Library<T> {
        if let Err(reason) = present.and(supported) {
            return Library::Missing(reason);
        }
        match build() {
            Ok(value) => Library::Ready(value),
            Err(failure) => Library::Broken(format!(
                "{}: {}",
                failure.step,
                log_tail(&failure.message, LOG_TAIL_LINES)
            )),
        }
    }

    /// The library for `what`, or the skip (`Unsupported`) or failure (`Device`) its state
    /// means.
    pub fn get(&self, backend: BackendKind, what: &str) -> Result<&T, BackendError> {
        match self {
            Library::Ready(value) => Ok(value),
            Library::Missing(reason) => Err(BackendError::unsupported(backend, what, reason)),
            Library::Broken(message) => Err(BackendError::Device {
                backend,
                context: what.to_owned(),
                message: message.clone(),
            }),
        }
    }

    pub fn ready(&self) -> Option<&T> {
        match self {
            Library::Ready(value) => Some(value),
            _ => None,
        }
    }
}

/// Every kernel of `kernel_names()` loaded from a compiled module by `load`; a name the
/// module lacks is a build failure (the source and the name list disagree).
pub fn load_kernels<F, E: std::fmt::Debug>(
    mut load: impl FnMut(&str) -> Result<F, E>,
) -> Result<std::collections::HashMap<String, F>, BuildFailure> {
    super::kernels::kernel_names()
        .into_iter()
        .map(|name| match load(&name) {
            Ok(function) => Ok((name, function)),
            Err(e) => Err(BuildFailure::new(
                format!("kernel {name} missing from the module"),
                format!("{e:?}"),
            )),
        })
        .collect()
}

/// Every kernel of the shared source loaded by name from one vendor module, which is held
/// so the functions stay valid: what CUDA (NVRTC) and ROCm (hipRTC) each build.
pub struct LoadedKernels<M, F> {
    _module: std::sync::Arc<M>,
    functions: std::collections::HashMap<String, F>,
}

impl<M, F> LoadedKernels<M, F> {
    /// Loads every kernel of the shared source from `module` through the vendor's `load`.
    pub fn load<E: std::fmt::Debug>(
        module: std::sync::Arc<M>,
        load: impl Fn(&std::sync::Arc<M>, &str) -> Result<F, E>,
    ) -> Result<Self, BuildFailure> {
        let functions = load_kernels(|name| load(&module, name))?;
        Ok(LoadedKernels {
            _module: module,
            functions,
        })
    }

    /// A kernel by name; a name the source does not define is stackbench's bug, so a
    /// failure of `backend`, whose `compiler` built the module.
    pub fn get(
        &self,
        backend: BackendKind,
        compiler: &str,
        name: &str,
    ) -> Result<&F, BackendError> {
        self.functions
            .get(name)
            .ok_or_else(|| BackendError::Device {
                backend,
                context: format!("launching {name}"),
                message: format!("no such kernel in stackbench's {compiler} source"),
            })
    }
}

/// The last `lines` non-empty lines of a compiler log, joined by newlines.
pub fn log_tail(log: &str, lines: usize) -> String {
    let kept: Vec<&str> = log
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    let start = kept.len().saturating_sub(lines);
    let mut tail = kept[start..].join("\n");
    if start > 0 {
        tail = format!("[{start} earlier lines omitted]\n{tail}");
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome<T>(lib: &Library<T>) -> Result<(), BackendError> {
        lib.get(BackendKind::Cuda, "NVRTC kernels").map(|_| ())
    }

    #[test]
    fn a_missing_compiler_or_arch_is_a_skip_and_nothing_is_built() {
        let absent: Library<()> = Library::build(Err("NVRTC not found".into()), Ok(()), || {
            panic!("built without the library")
        });
        assert!(outcome(&absent).unwrap_err().is_skip());
        let arch: Library<()> = Library::build(
            Ok(()),
            Err("NVRTC 12.0 cannot target sm_120".into()),
            || panic!("built for an unsupported arch"),
        );
        let err = outcome(&arch).unwrap_err();
        assert!(err.is_skip() && err.to_string().contains("sm_120"), "{err}");
    }

    #[test]
    fn a_compile_or_load_error_is_a_failure_with_the_log_tail() {
        let log: String = (1..=30)
            .map(|i| format!("kernels.cu({i}): note {i}\n"))
            .chain(["kernels.cu(31): error: identifier \"x\" is undefined\n".to_owned()])
            .collect();
        let compile: Library<()> = Library::build(Ok(()), Ok(()), || {
            Err(BuildFailure::new("NVRTC compile for sm_90", log.clone()))
        });
        let err = outcome(&compile).unwrap_err();
        assert!(!err.is_skip());
        let text = err.to_string();
        assert!(text.contains("identifier \"x\" is undefined"), "{text}");
        assert!(text.contains("NVRTC compile for sm_90"), "{text}");
        assert!(!text.contains("note 5\n") && text.contains("11 earlier lines omitted"));
        let load: Library<()> = Library::build(Ok(()), Ok(()), || {
            Err(BuildFailure::new(
                "cuModuleLoadData",
                "CUDA_ERROR_INVALID_PTX",
            ))
        });
        assert!(!outcome(&load).unwrap_err().is_skip());
    }

    #[test]
    fn a_ready_library_is_returned() {
        let lib = Library::build(Ok(()), Ok(()), || Ok(7));
        assert_eq!(lib.get(BackendKind::Rocm, "x").ok(), Some(&7));
    }

    #[test]
    fn short_logs_are_kept_whole() {
        assert_eq!(log_tail("a\n\nb\n", 20), "a\nb");
    }
}
