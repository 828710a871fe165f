//! stackbench's GPU kernels executed on the CPU: the same source NVRTC and hipRTC compile
//! (kernels.rs's `BODY`), built with the host's C++ compiler over a small runtime
//! (`runtime.hpp`) that runs every thread of a block as a fiber with its own stack, with
//! real barriers for `__syncthreads` and warp shuffles emulated through a per-warp
//! exchange between two warp barriers. The block's threads run one at a time between
//! barriers, in thread order or in reverse ([`ThreadOrder`]): a kernel missing a barrier
//! reads a stale value under one of the two, so tests run both.
//!
//! Why: no GPU is available where stackbench is built and tested, and a kernel that only
//! ever compiled can still be wrong (an online softmax that forgets its correction, a
//! reduction that skips a lane). [`EmulatedDevice`] implements [`GpuDevice`], so the shared
//! GPU workloads (STREAM, tensor ops, attention) run through their real launch code and
//! their real `verify()` against the CPU references, at small sizes. What it cannot show:
//! timing, memory-model subtleties beyond barriers, and the vendor compilers' code
//! generation (the NVRTC/ptxas and clang checks cover compilation).
//!
//! The batched GEMM of the standard attention path is cuBLAS/rocBLAS on a GPU; here it is a
//! plain column-major loop with f32 accumulation, written against the same `BatchedGemm`
//! description, so the path's own code (strides, transposes, the softmax kernel) is tested.

use super::kernels::{BODY, MMA_BY_SHUFFLE, kernel_names};
use super::{Arg, BatchedGemm, GpuDevice, GpuTimer, Grid, RawBuffer};
use crate::backend::{BackendError, BackendKind};
use crate::workload::DType;
use std::collections::BTreeMap;
use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The runtime the kernel source is compiled over.
pub const RUNTIME: &str = include_str!("runtime.hpp");

/// The emulated device's "multiprocessors": grid-stride launches size their grids from
/// this, so a small number keeps the OS-thread count of a launch small.
const UNITS: u32 = 2;
/// Host memory the emulated device lets a workload allocate: small sizes only.
const MEMORY_BYTES: u64 = 512 << 20;

type LaunchFn = unsafe extern "C" fn(
    *const c_char,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_int,
    *mut *mut c_void,
    *const c_char,
    c_int,
    *mut c_char,
    c_uint,
) -> c_int;

/// The order in which a block's threads run between two barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadOrder {
    Forward,
    Reverse,
}

impl ThreadOrder {
    pub const BOTH: [ThreadOrder; 2] = [ThreadOrder::Forward, ThreadOrder::Reverse];
}

/// A device whose memory is host memory and whose kernels are stackbench's source compiled
/// for the host.
pub struct EmulatedDevice {
    launch: LaunchFn,
    order: ThreadOrder,
    /// The backend the workloads see: CUDA unless a test poses as ROCm, to run the kernels
    /// the workloads choose there (the SIMT flash kernel in f16 and bf16).
    kind: BackendKind,
    // Keeps the compiled module loaded for as long as `launch` may be called.
    _library: libloading::Library,
    _dir: tempfile::TempDir,
}

/// The C++ translation unit: runtime, the tensor-core multiply by shuffles (the same
/// fragment contract as NVIDIA's `mma.sync`), kernel body, and the name → kernel table.
/// Every name in [`kernel_names`] must resolve to a kernel, so a misspelled name fails to
/// compile.
pub fn translation_unit(body: &str) -> String {
    let mut unit = String::with_capacity(RUNTIME.len() + MMA_BY_SHUFFLE.len() + body.len() + 4096);
    unit.push_str(RUNTIME);
    unit.push_str(MMA_BY_SHUFFLE);
    unit.push_str(body);
    unit.push_str("\nSB_BEGIN_KERNELS\n");
    for name in kernel_names() {
        unit.push_str(&format!("SB_KERNEL({name})\n"));
    }
    unit.push_str("SB_END_KERNELS\n");
    unit
}

/// The host C++ compiler: `$CXX`, else `c++`.
fn compiler() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "c++".to_owned())
}

fn emulator_error(context: &str, message: impl Into<String>) -> BackendError {
    BackendError::Device {
        backend: BackendKind::Cuda,
        context: format!("kernel emulator: {context}"),
        message: message.into(),
    }
}

/// The last `lines` lines of a compiler log: the error is at the end, the rest is context.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn compile(cxx: &str, source: &Path, library: &Path) -> Result<(), BackendError> {
    let output = Command::new(cxx)
        .args(["-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-w"])
        .args(["-x", "c++"])
        .arg(source)
        .arg("-o")
        .arg(library)
        .output();
    match output {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(BackendError::unsupported(
            BackendKind::Cuda,
            "kernel emulator",
            format!("no C++ compiler `{cxx}` on PATH (set CXX)"),
        )),
        Err(e) => Err(emulator_error("running the C++ compiler", e.to_string())),
        Ok(out) if !out.status.success() => Err(emulator_error(
            &format!("compiling {}", source.display()),
            tail(&String::from_utf8_lossy(&out.stderr), 30),
        )),
        Ok(_) => Ok(()),
    }
}

impl EmulatedDevice {
    /// Compiles stackbench's kernel source for the host and loads it.
    pub fn open(order: ThreadOrder) -> Result<Self, BackendError> {
        Self::with_body(BODY, order)
    }

    /// The same with another kernel body: how tests prove that a broken kernel fails its
    /// workload's check when run here.
    pub fn with_body(body: &str, order: ThreadOrder) -> Result<Self, BackendError> {
        let dir = tempfile::tempdir()
            .map_err(|e| emulator_error("temporary directory", e.to_string()))?;
        let source: PathBuf = dir.path().join("kernels_host.cpp");
        let library: PathBuf = dir.path().join("libkernels_host.so");
        std::fs::write(&source, translation_unit(body))
            .map_err(|e| emulator_error(&format!("writing {}", source.display()), e.to_string()))?;
        compile(&compiler(), &source, &library)?;
        // SAFETY: the library is the module just built from our own source; loading it runs
        // only static initialisers of that source.
        let lib = unsafe { libloading::Library::new(&library) }.map_err(|e| {
            emulator_error(&format!("loading {}", library.display()), e.to_string())
        })?;
        // SAFETY: the symbol is defined by SB_BEGIN_KERNELS with exactly `LaunchFn`'s signature.
        let launch = unsafe { lib.get::<LaunchFn>(b"stackbench_emulator_launch\0") }
            .map(|symbol| *symbol)
            .map_err(|e| emulator_error("finding the launch entry point", e.to_string()))?;
        Ok(EmulatedDevice {
            launch,
            order,
            kind: BackendKind::Cuda,
            _library: lib,
            _dir: dir,
        })
    }

    /// The same device reporting `kind` to the workloads, which choose their kernels by it.
    /// The runtime's semantics do not change: AMD's kernels here use 32-lane shuffles too.
    pub fn posing_as(self, kind: BackendKind) -> Self {
        EmulatedDevice { kind, ..self }
    }
}

/// An argument's value in memory, as a kernel parameter is passed (cuLaunchKernel's
/// `void**` convention), and its kind letter for the runtime's signature check.
enum ArgValue {
    U64(u64),
    I32(i32),
    F32(f32),
    F64(f64),
}

fn arg_value(arg: &Arg) -> (ArgValue, u8) {
    match *arg {
        Arg::Ptr(p) => (ArgValue::U64(p), b'p'),
        Arg::U64(v) => (ArgValue::U64(v), b'u'),
        Arg::I32(v) => (ArgValue::I32(v), b'i'),
        Arg::F32(v) => (ArgValue::F32(v), b'f'),
        Arg::F64(v) => (ArgValue::F64(v), b'd'),
    }
}

impl ArgValue {
    fn as_mut_ptr(&mut self) -> *mut c_void {
        match self {
            ArgValue::U64(v) => v as *mut u64 as *mut c_void,
            ArgValue::I32(v) => v as *mut i32 as *mut c_void,
            ArgValue::F32(v) => v as *mut f32 as *mut c_void,
            ArgValue::F64(v) => v as *mut f64 as *mut c_void,
        }
    }
}

/// Host memory with the 16-byte alignment the kernels' paired f64 accesses need.
fn host_buffer(bytes: usize) -> RawBuffer {
    let words: Box<Vec<u128>> = Box::new(vec![0u128; bytes.div_ceil(16).max(1)]);
    let ptr = words.as_ptr() as u64;
    RawBuffer::new(ptr, bytes, words)
}

impl GpuDevice for EmulatedDevice {
    fn kind(&self) -> BackendKind {
        // The runtime gives the kernels CUDA's semantics (32-lane warps, `__shfl_*_sync`);
        // `posing_as` changes only which kernels the workloads pick.
        self.kind
    }
    fn units(&self) -> u32 {
        UNITS
    }
    fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError> {
        Ok(host_buffer(bytes))
    }
    fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError> {
        let buffer = host_buffer(bytes.len());
        // SAFETY: the new buffer holds at least `bytes.len()` bytes and does not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.ptr as *mut u8, bytes.len())
        };
        Ok(buffer)
    }
    fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError> {
        // SAFETY: `ptr` is the start of the buffer's own allocation of at least `bytes` bytes.
        Ok(unsafe { std::slice::from_raw_parts(buffer.ptr as *const u8, buffer.bytes) }.to_vec())
    }
    fn launch(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError> {
        let c_name = CString::new(name).map_err(|e| emulator_error(name, e.to_string()))?;
        let (mut values, tags): (Vec<ArgValue>, Vec<u8>) = args.iter().map(arg_value).unzip();
        let mut pointers: Vec<*mut c_void> = values.iter_mut().map(ArgValue::as_mut_ptr).collect();
        let tags = CString::new(tags).map_err(|e| emulator_error(name, e.to_string()))?;
        let mut err = vec![0u8; 512];
        let (gx, gy, gz) = grid.blocks;
        // SAFETY: every pointer in `pointers` points into `values`, alive for the call; the
        // runtime checks their number and kinds against the kernel before reading them, and
        // pointer arguments are addresses of this device's host buffers.
        let status = unsafe {
            (self.launch)(
                c_name.as_ptr(),
                gx,
                gy,
                gz,
                grid.threads,
                c_int::from(self.order == ThreadOrder::Reverse),
                pointers.as_mut_ptr(),
                tags.as_ptr(),
                args.len() as c_int,
                err.as_mut_ptr() as *mut c_char,
                err.len() as c_uint,
            )
        };
        if status == 0 {
            return Ok(());
        }
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        Err(emulator_error(
            &format!("launching {name}"),
            String::from_utf8_lossy(&err[..end]).into_owned(),
        ))
    }
    fn batched_gemm(&self, gemm: &BatchedGemm) -> Result<(), BackendError> {
        host_batched_gemm(gemm)
    }
    fn synchronize(&self) -> Result<(), BackendError> {
        Ok(())
    }
    fn timer(&self, _flush_cache: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError> {
        Ok(Box::new(HostClock))
    }
    fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
        if bytes > MEMORY_BYTES {
            return Err(BackendError::unsupported(
                BackendKind::Cuda,
                what,
                format!("the kernel emulator takes up to {MEMORY_BYTES} bytes"),
            ));
        }
        Ok(())
    }
    fn free_memory(&self) -> Option<u64> {
        None
    }
}

/// Reads element `i` of a `dtype` matrix as f32.
///
/// # Safety
/// `base` must point to at least `i + 1` elements of `dtype`.
unsafe fn load(dtype: DType, base: u64, i: usize) -> f32 {
    // SAFETY: guaranteed by the caller.
    unsafe {
        match dtype {
            DType::F16 => (*(base as *const half::f16).add(i)).to_f32(),
            DType::Bf16 => (*(base as *const half::bf16).add(i)).to_f32(),
            _ => *(base as *const f32).add(i),
        }
    }
}

/// # Safety
/// `base` must point to at least `i + 1` writable elements of `dtype`.
unsafe fn store(dtype: DType, base: u64, i: usize, v: f32) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        match dtype {
            DType::F16 => *(base as *mut half::f16).add(i) = half::f16::from_f32(v),
            DType::Bf16 => *(base as *mut half::bf16).add(i) = half::bf16::from_f32(v),
            _ => *(base as *mut f32).add(i) = v,
        }
    }
}

/// C = alpha·op(A)·B per batch entry, column-major, f32 accumulation, beta = 0: what the
/// GPU backends ask of cuBLAS/rocBLAS.
fn host_batched_gemm(g: &BatchedGemm) -> Result<(), BackendError> {
    for batch in 0..g.batch {
        let (a, b, c) = (g.stride_a * batch, g.stride_b * batch, g.stride_c * batch);
        for j in 0..g.n {
            for i in 0..g.m {
                let mut acc = 0.0f32;
                for p in 0..g.k {
                    let a_ip = if g.transpose_a {
                        p + i * g.lda
                    } else {
                        i + p * g.lda
                    };
                    // SAFETY: the workload sized every buffer for `batch` matrices at these
                    // strides and leading dimensions, as it would for cuBLAS.
                    acc += unsafe {
                        load(g.dtype, g.a, a + a_ip) * load(g.dtype, g.b, b + p + j * g.ldb)
                    };
                }
                // SAFETY: as above, for C.
                unsafe { store(g.dtype, g.c, c + i + j * g.ldc, g.alpha * acc) };
            }
        }
    }
    Ok(())
}

/// Host time around the launches: the emulator's timings mean nothing for a GPU, so they
/// are labelled as what they are.
struct HostClock;

impl GpuTimer for HostClock {
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        let start = Instant::now();
        for _ in 0..iters {
            launch()?;
        }
        Ok(start.elapsed())
    }

    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
        out.insert(
            "timing".into(),
            "host clock, kernel emulator (not a GPU figure)".into(),
        );
    }
}
