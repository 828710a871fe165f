//! Cold compiles of stackbench's own kernels through NVRTC (`compile/nvrtc/...`,
//! `workload::compile`). NVRTC needs no GPU or driver, so this runs on any machine with
//! the `nvidia-cuda-nvrtc` wheel (or a CUDA toolkit), CI included.
//!
//! NVRTC keeps no compile cache, in memory or on disk: every sample is a new program
//! (create, compile, read the output, destroy), exactly the calls the backend makes at
//! start-up. The program's output is checked after each compile, outside the timed
//! window: PTX of nonzero size holding every kernel of the source, and with a real
//! architecture (`sm_XX`) a CUBIN of nonzero size too. A sample that shows no compile
//! fails the benchmark; the counts of compiles asked for and shown go into the notes.

use super::kernels::compile_options;
use super::libs;
use crate::backend::gpu::kernels::{Platform, kernel_names, source};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::BenchId;
use crate::workload::compile::{ColdCompiles, NVRTC_PACKAGE, NvrtcOutput, time_compiles};
use cudarc::nvrtc::{CompileOptions, result, sys};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char};
use std::time::{Duration, Instant};

/// Why NVRTC cannot be used here, naming the package that brings it; `None` when it can.
pub fn nvrtc_missing_reason() -> Option<String> {
    if libs::presence().nvrtc {
        return None;
    }
    let searched = libs::prepare()
        .searched
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>();
    Some(format!(
        "NVRTC (libnvrtc.so.13/.12) was not found: install NVIDIA's {NVRTC_PACKAGE} wheel \
         (pip install {NVRTC_PACKAGE}; torch's Linux wheel brings it) in the Python the run \
         uses (STACKBENCH_PYTHON, or an active virtualenv or conda env), or a CUDA toolkit \
         (CUDA_HOME); searched {}",
        if searched.is_empty() {
            "no directory".to_owned()
        } else {
            searched.join(", ")
        }
    ))
}

/// The flags the backend passes NVRTC (`backend::cuda::kernels::compile_options`), with
/// `nvrtc_arch` as the architecture. Built from the backend's own options, every field
/// named, so an option the backend gains cannot be missed here (a new field fails to build).
pub fn backend_flags(sm: &'static str, nvrtc_arch: &str) -> Vec<String> {
    let CompileOptions {
        ftz,
        prec_sqrt,
        prec_div,
        fmad,
        options,
        use_fast_math,
        maxrregcount,
        include_paths,
        arch,
        name: _,
    } = compile_options(sm);
    let mut flags = Vec::new();
    let switches = [
        ("ftz", ftz),
        ("prec-sqrt", prec_sqrt),
        ("prec-div", prec_div),
        ("fmad", fmad),
    ];
    for (flag, value) in switches {
        if let Some(v) = value {
            flags.push(format!("--{flag}={v}"));
        }
    }
    if use_fast_math == Some(true) {
        flags.push("--fmad=true".into());
    }
    if let Some(count) = maxrregcount {
        flags.push(format!("--maxrregcount={count}"));
    }
    flags.extend(include_paths.iter().map(|p| format!("--include-path={p}")));
    if arch.is_some() {
        flags.push(format!("--gpu-architecture={nvrtc_arch}"));
    }
    flags.extend(options);
    flags
}

/// What one compile produced, read after the clock stopped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NvrtcOutputs {
    pub ptx: String,
    pub cubin_bytes: usize,
    pub log: String,
}

/// Whether `out` shows a compile of every kernel: PTX with each `.entry`, and a CUBIN
/// where one was asked for.
pub fn check_outputs(
    out: &NvrtcOutputs,
    kernels: &[String],
    want_cubin: bool,
) -> Result<(), String> {
    if out.ptx.trim().is_empty() {
        return Err("NVRTC returned empty PTX".into());
    }
    let missing: Vec<&str> = kernels
        .iter()
        .filter(|k| !out.ptx.contains(&format!(".entry {k}(")))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "kernels missing from the PTX: {}",
            missing.join(", ")
        ));
    }
    if want_cubin && out.cubin_bytes == 0 {
        return Err("NVRTC returned no CUBIN for a real architecture".into());
    }
    Ok(())
}

/// A C string from NVRTC's NUL-terminated buffer.
fn text(buffer: &[c_char]) -> String {
    if buffer.is_empty() {
        return String::new();
    }
    // SAFETY: NVRTC NUL-terminates the PTX and the log it writes into these buffers.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// One compile as the backend makes it: a new program, compiled, its output read,
/// destroyed. Returns the host time of those calls and what they produced.
pub fn compile_once(
    source: &CStr,
    flags: &[String],
    want_cubin: bool,
) -> Result<(Duration, NvrtcOutputs), String> {
    let started = Instant::now();
    let program =
        result::create_program(source, None).map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: `program` was just created and is destroyed once, below.
    let compiled = unsafe { result::compile_program(program, flags) };
    let outputs = match compiled {
        Ok(()) => read_outputs(program, want_cubin),
        Err(e) => {
            // SAFETY: as above.
            let log = unsafe { result::get_program_log(program) }
                .map(|l| text(&l))
                .unwrap_or_default();
            Err(format!("nvrtcCompileProgram: {e:?}\n{log}"))
        }
    };
    // SAFETY: as above; destroyed exactly once.
    let destroyed = unsafe { result::destroy_program(program) };
    let took = started.elapsed();
    let outputs = outputs?;
    destroyed.map_err(|e| format!("nvrtcDestroyProgram: {e:?}"))?;
    Ok((took, outputs))
}

fn read_outputs(program: sys::nvrtcProgram, want_cubin: bool) -> Result<NvrtcOutputs, String> {
    // SAFETY: `program` is a live, compiled program.
    let ptx = unsafe { result::get_ptx(program) }.map_err(|e| format!("nvrtcGetPTX: {e:?}"))?;
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(program) }
        .map_err(|e| format!("nvrtcGetProgramLog: {e:?}"))?;
    let mut cubin_bytes = 0usize;
    if want_cubin {
        // SAFETY: as above; writes one size. The bytes themselves are not copied: the
        // backend does not read them either.
        unsafe { sys::nvrtcGetCUBINSize(program, &mut cubin_bytes) }
            .result()
            .map_err(|e| format!("nvrtcGetCUBINSize: {e:?}"))?;
    }
    Ok(NvrtcOutputs {
        ptx: text(&ptx),
        cubin_bytes,
        log: text(&log),
    })
}

/// One `compile/nvrtc/<function>/<arch>` benchmark, ready to verify and time.
pub struct NvrtcCompile {
    id: BenchId,
    source: CString,
    flags: Vec<String>,
    want_cubin: bool,
    kernels: Vec<String>,
    counts: ColdCompiles,
    last: NvrtcOutputs,
    library: BTreeMap<String, serde_json::Value>,
}

impl NvrtcCompile {
    /// The benchmark for `output` on `sm` (`sm_90`): a skip without NVRTC (naming the
    /// wheel) or for an architecture this NVRTC cannot target.
    pub fn prepare(
        id: &BenchId,
        output: NvrtcOutput,
        sm: &'static str,
    ) -> Result<NvrtcCompile, BackendError> {
        let skip = |reason: String| BackendError::unsupported(BackendKind::Cuda, id.full(), reason);
        if let Some(reason) = nvrtc_missing_reason() {
            return Err(skip(reason));
        }
        let cc: i32 = sm.trim_start_matches("sm_").parse().map_err(|_| {
            BackendError::mismatch(id, format!("'{sm}' is not an sm_NN architecture"))
        })?;
        if let Ok(supported) = super::kernels::nvrtc_supported_archs()
            && !supported.contains(&cc)
        {
            return Err(skip(
                super::kernels::arch_supported((cc / 10, cc % 10), &supported).unwrap_err(),
            ));
        }
        let source = CString::new(source(Platform::Cuda)).map_err(|e| {
            BackendError::mismatch(id, format!("the kernel source holds a NUL byte: {e}"))
        })?;
        let mut library = libs::describe(libs::presence());
        library.retain(|k, _| k == "nvrtc");
        Ok(NvrtcCompile {
            id: id.clone(),
            source,
            flags: backend_flags(sm, &output.nvrtc_arch(sm)),
            want_cubin: output == NvrtcOutput::Backend,
            kernels: kernel_names(),
            counts: ColdCompiles::default(),
            last: NvrtcOutputs::default(),
            library,
        })
    }

    /// Compiles asked for and shown so far.
    pub fn counts(&self) -> ColdCompiles {
        self.counts
    }

    /// One cold compile, checked: its time, or the failure.
    fn compile_checked(&mut self) -> Result<Duration, BackendError> {
        self.counts.requested += 1;
        let (took, outputs) =
            compile_once(&self.source, &self.flags, self.want_cubin).map_err(|message| {
                BackendError::Device {
                    backend: BackendKind::Cuda,
                    context: format!("{} NVRTC compile", self.id),
                    message,
                }
            })?;
        check_outputs(&outputs, &self.kernels, self.want_cubin).map_err(|why| {
            BackendError::mismatch(&self.id, format!("the sample shows no compile: {why}"))
        })?;
        self.counts.proven += 1;
        self.last = outputs;
        Ok(took)
    }
}

impl TimedWorkload for NvrtcCompile {
    fn verify(&mut self) -> Result<(), BackendError> {
        self.compile_checked().map(|_| ())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        time_compiles(iters, || self.compile_checked())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::from([
            ("compiler".to_owned(), "nvrtc".into()),
            ("nvrtc_flags".to_owned(), self.flags.join(" ").into()),
            ("kernels".to_owned(), self.kernels.len().into()),
            ("ptx_bytes".to_owned(), self.last.ptx.len().into()),
            ("cubin_bytes".to_owned(), self.last.cubin_bytes.into()),
            (
                "cache".to_owned(),
                "none: NVRTC keeps no compile cache; every sample is a new program".into(),
            ),
        ]);
        notes.extend(self.counts.notes());
        notes.extend(self.library.clone());
        if !self.last.log.trim().is_empty() {
            notes.insert("nvrtc_log".into(), self.last.log.trim().into());
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_backends_with_the_arch_swapped() {
        assert_eq!(
            backend_flags("sm_90", "sm_90"),
            vec!["--gpu-architecture=sm_90", "--std=c++17"]
        );
        assert_eq!(
            backend_flags("sm_90", "compute_90"),
            vec!["--gpu-architecture=compute_90", "--std=c++17"]
        );
    }

    #[test]
    fn an_output_without_every_kernel_or_a_cubin_is_no_compile() {
        let kernels = vec!["stream_add".to_owned(), "flash_f16_d64".to_owned()];
        let good = NvrtcOutputs {
            ptx: ".visible .entry stream_add(\n.visible .entry flash_f16_d64(".into(),
            cubin_bytes: 10,
            log: String::new(),
        };
        assert!(check_outputs(&good, &kernels, true).is_ok());
        let no_cubin = NvrtcOutputs {
            cubin_bytes: 0,
            ..good.clone()
        };
        assert!(check_outputs(&no_cubin, &kernels, true).is_err());
        assert!(check_outputs(&no_cubin, &kernels, false).is_ok());
        let partial = NvrtcOutputs {
            ptx: ".visible .entry stream_add(".into(),
            ..good.clone()
        };
        let why = check_outputs(&partial, &kernels, false).unwrap_err();
        assert!(why.contains("flash_f16_d64"), "{why}");
        assert!(check_outputs(&NvrtcOutputs::default(), &kernels, false).is_err());
    }
}
