//! Cold compiles of stackbench's own kernels through hipRTC (`compile/hiprtc/...`,
//! `workload::compile`): the HIP variant of the shared source, with the backend's options,
//! for a named gfx architecture. hipRTC needs ROCm installed but no GPU; without it every
//! id is a skip naming what is missing.
//!
//! hipRTC compiles through AMD's comgr, which can keep a disk cache of compiled code
//! (`AMD_COMGR_CACHE`, `AMD_COMGR_CACHE_DIR`). So each sample points comgr at a new empty
//! folder: a hit from an empty folder is impossible. Each sample must produce a code object
//! (an ELF file of nonzero size) or the benchmark fails. Unconfirmed on AMD hardware from
//! this machine (no ROCm here): `ci/gpu_tests.sh` runs it where ROCm is.

use super::kernels::compile_options;
use crate::backend::gpu::kernels::{Platform, source};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::BenchId;
use crate::workload::compile::{ColdCompiles, time_compiles};
use rocmrc::hiprtc::{CompileOptions, result};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::path::Path;
use std::time::{Duration, Instant};

/// The variable that points comgr's cache at a folder.
pub const COMGR_CACHE_DIR_ENV: &str = "AMD_COMGR_CACHE_DIR";

/// Why hipRTC cannot be used here; `None` when it can.
pub fn hiprtc_missing_reason() -> Option<String> {
    // SAFETY: only tries dlopen on rocmrc's candidate names.
    if unsafe { rocmrc::hiprtc::sys::is_rocmlib_present() } {
        return None;
    }
    Some(format!(
        "hipRTC (libhiprtc.so, ROCm's hip-runtime-amd package) was not found under {} or on \
         the loader path: ROCm is not installed (set ROCM_PATH if it is elsewhere)",
        std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".into())
    ))
}

/// The flags the backend passes hipRTC (`rocm::kernels::compile_options`), every field
/// named so an option the backend gains cannot be missed, with `arch` as the target and
/// ROCm's include folder as `compile_hsaco_with_opts` adds it.
pub fn backend_flags(arch: &str) -> Vec<String> {
    let CompileOptions {
        opt_level,
        fast_math,
        defines,
        mut include_paths,
        arch: _,
        name: _,
        options,
    } = compile_options();
    let root = std::env::var("ROCM_PATH").unwrap_or_else(|_| "/opt/rocm".to_string());
    let rocm_include = format!("{root}/include");
    if !include_paths.contains(&rocm_include) {
        include_paths.push(rocm_include);
    }
    let mut flags = Vec::new();
    flags.extend(opt_level.map(|l| format!("-O{l}")));
    flags.extend(fast_math.map(|on| if on { "-ffast-math" } else { "-fno-fast-math" }.to_owned()));
    flags.extend(defines.iter().map(|d| format!("-D{d}")));
    flags.extend(include_paths.iter().map(|p| format!("-I{p}")));
    flags.push(format!("--offload-arch={arch}"));
    flags.extend(options);
    flags
}

/// Whether `code` is a code object: an ELF file of nonzero size.
pub fn check_code_object(code: &[u8]) -> Result<(), String> {
    if code.len() < 4 || &code[..4] != b"\x7fELF" {
        return Err(format!(
            "hipRTC returned {} bytes that are not an ELF code object",
            code.len()
        ));
    }
    Ok(())
}

/// One `compile/hiprtc/gpu_kernels/<arch>` benchmark.
pub struct HiprtcCompile {
    id: BenchId,
    source: CString,
    flags: Vec<String>,
    counts: ColdCompiles,
    code_bytes: usize,
    cache_files_written: usize,
    scratch: tempfile::TempDir,
}

impl HiprtcCompile {
    pub fn prepare(id: &BenchId, arch: &str) -> Result<HiprtcCompile, BackendError> {
        if let Some(reason) = hiprtc_missing_reason() {
            return Err(BackendError::unsupported(
                BackendKind::Rocm,
                id.full(),
                reason,
            ));
        }
        let source = CString::new(source(Platform::Hip)).map_err(|e| {
            BackendError::mismatch(id, format!("the kernel source holds a NUL byte: {e}"))
        })?;
        let scratch = tempfile::tempdir()
            .map_err(|e| device(id, "a scratch folder for comgr's caches", e.to_string()))?;
        Ok(HiprtcCompile {
            id: id.clone(),
            source,
            flags: backend_flags(arch),
            counts: ColdCompiles::default(),
            code_bytes: 0,
            cache_files_written: 0,
            scratch,
        })
    }

    fn compile_checked(&mut self) -> Result<Duration, BackendError> {
        self.counts.requested += 1;
        let cache = self
            .scratch
            .path()
            .join(format!("comgr-{}", self.counts.requested));
        std::fs::create_dir(&cache)
            .map_err(|e| device(&self.id, "a fresh comgr cache folder", e.to_string()))?;
        // SAFETY: the bench runs hipRTC on this thread only; no other thread of this
        // process reads the environment through libc while the variable changes (Rust's
        // own readers take std's environment lock).
        unsafe { std::env::set_var(COMGR_CACHE_DIR_ENV, &cache) };
        let started = Instant::now();
        let code = compile_once(&self.source, &self.flags)
            .map_err(|m| device(&self.id, "hipRTC compile", m))?;
        let took = started.elapsed();
        check_code_object(&code).map_err(|why| {
            BackendError::mismatch(&self.id, format!("the sample shows no compile: {why}"))
        })?;
        self.counts.proven += 1;
        self.code_bytes = code.len();
        self.cache_files_written += files_in(&cache);
        let _ = std::fs::remove_dir_all(&cache);
        Ok(took)
    }
}

fn device(id: &BenchId, context: &str, message: String) -> BackendError {
    BackendError::Device {
        backend: BackendKind::Rocm,
        context: format!("{id} {context}"),
        message,
    }
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                let path = e.path();
                if path.is_dir() { files_in(&path) } else { 1 }
            })
            .sum()
    })
}

/// A new program, compiled, its code object read, destroyed: the backend's calls.
fn compile_once(source: &CStr, flags: &[String]) -> Result<Vec<u8>, String> {
    let program =
        result::create_program(source, None).map_err(|e| format!("hiprtcCreateProgram: {e:?}"))?;
    let outcome = match result::compile_program(program, flags) {
        Ok(()) => result::get_hsaco(program)
            .map(|code| code.into_iter().map(|c| c as u8).collect::<Vec<u8>>())
            .map_err(|e| format!("hiprtcGetCode: {e:?}")),
        Err(e) => {
            let log = result::get_program_log(program)
                .map(|l| {
                    let bytes: Vec<u8> = l
                        .into_iter()
                        .map(|c| c as u8)
                        .take_while(|b| *b != 0)
                        .collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                })
                .unwrap_or_default();
            Err(format!("hiprtcCompileProgram: {e:?}\n{log}"))
        }
    };
    let destroyed = result::destroy_program(program);
    let code = outcome?;
    destroyed.map_err(|e| format!("hiprtcDestroyProgram: {e:?}"))?;
    Ok(code)
}

impl TimedWorkload for HiprtcCompile {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.compile_checked().map(|_| ())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        time_compiles(iters, || self.compile_checked())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::from([
            ("compiler".to_owned(), "hiprtc".into()),
            ("hiprtc_flags".to_owned(), self.flags.join(" ").into()),
            ("code_object_bytes".to_owned(), self.code_bytes.into()),
            (
                "cache".to_owned(),
                format!("{COMGR_CACHE_DIR_ENV} points at a new empty folder every sample").into(),
            ),
            (
                "comgr_cache_files_written".to_owned(),
                self.cache_files_written.into(),
            ),
        ]);
        notes.extend(self.counts.notes());
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_backends_for_the_named_arch() {
        let flags = backend_flags("gfx90a");
        assert_eq!(flags.first().map(String::as_str), Some("-O3"));
        assert!(flags.iter().any(|f| f == "--offload-arch=gfx90a"));
        assert!(flags.iter().any(|f| f == "-std=c++17"));
        assert!(
            flags
                .iter()
                .any(|f| f.starts_with("-I") && f.ends_with("/include"))
        );
    }

    #[test]
    fn only_an_elf_code_object_counts_as_a_compile() {
        assert!(check_code_object(b"\x7fELF\x02\x01").is_ok());
        assert!(check_code_object(b"").is_err());
        assert!(check_code_object(b"garbage").is_err());
    }

    #[test]
    fn without_hiprtc_the_benchmark_is_a_skip_naming_rocm() {
        if hiprtc_missing_reason().is_none() {
            return; // ROCm is installed: ci/gpu_tests.sh times it for real.
        }
        let id = crate::workload::compile::hiprtc_id("gfx942");
        let error = HiprtcCompile::prepare(&id, "gfx942").err().expect("a skip");
        assert!(error.is_skip(), "{error}");
        assert!(error.to_string().contains("hipRTC"), "{error}");
    }
}
