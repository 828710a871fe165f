//! A CPU BLAS loaded at run time (OpenBLAS, BLIS/AOCL, oneMKL or whatever CBLAS
//! `libblas.so.3` is), beside the `gemm` crate's own kernels: what the CPU can do with the
//! library a user would call, as the GPU side measures cuBLAS. Nothing is linked at build
//! time, so stackbench builds and runs without a BLAS; where none loads, the BLAS GEMM ids
//! are skipped with what was searched.
//!
//! Search order: `$STACKBENCH_BLAS` (a path or soname) alone when set, else
//! [`SEARCHED`]. `cblas_sgemm`/`cblas_dgemm` are resolved with 32-bit integers, or OpenBLAS's
//! 64-bit-integer builds' names (`scipy_cblas_sgemm64_` in numpy's bundled
//! `libscipy_openblas64_`, `cblas_sgemm64_` in Debian's `libopenblas64`) with 64-bit ones.

use serde::{Deserialize, Serialize};
use std::ffi::{CStr, c_char, c_int};
use std::sync::OnceLock;

/// A path or soname to load instead of searching.
pub const BLAS_ENV: &str = "STACKBENCH_BLAS";

/// The libraries tried in order when [`BLAS_ENV`] is unset.
pub const SEARCHED: &[&str] = &[
    "libopenblas.so.0",
    "libopenblas.so",
    "libblis.so.4",
    "libblis.so",
    "libmkl_rt.so.2",
    "libmkl_rt.so",
    "libblas.so.3",
];

/// How to get one: said in every skip.
pub const INSTALL_HINT: &str =
    "install one (`apt-get install libopenblas0`) or name it in STACKBENCH_BLAS (a path or soname)";

const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;

type Lp64<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);
type Ilp64<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    i64,
    i64,
    i64,
    T,
    *const T,
    i64,
    *const T,
    i64,
    T,
    *mut T,
    i64,
);

/// One resolved `cblas_?gemm`, with the integer width its library was built with.
#[derive(Clone, Copy)]
enum GemmFn<T> {
    Lp64(Lp64<T>),
    Ilp64(Ilp64<T>),
}

/// The symbol names of one integer interface: `<prefix>cblas_sgemm<suffix>`.
struct Naming {
    prefix: &'static str,
    suffix: &'static str,
    ilp64: bool,
}

const NAMINGS: &[Naming] = &[
    Naming {
        prefix: "",
        suffix: "",
        ilp64: false,
    },
    Naming {
        prefix: "scipy_",
        suffix: "64_",
        ilp64: true,
    },
    Naming {
        prefix: "",
        suffix: "64_",
        ilp64: true,
    },
];

/// What the probe and every BLAS id's notes say about the library.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlasInfo {
    /// What was loaded: the [`BLAS_ENV`] value or the [`SEARCHED`] name that loaded.
    pub library: String,
    /// The file the dynamic linker resolved `cblas_sgemm` to, where it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `OpenBLAS`, `BLIS`, `oneMKL`, or `CBLAS` when the library names no vendor.
    pub vendor: String,
    /// The library's own version string (`openblas_get_config`, `bli_info_get_version_str`,
    /// `MKL_Get_Version_String`), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `lp64` (32-bit integers) or `ilp64` (64-bit, OpenBLAS's `64_` names).
    pub integers: String,
    /// The library's thread count as it reports it after stackbench set it; `None` where it
    /// has no call to read or set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

impl BlasInfo {
    /// `OpenBLAS 0.3.21 ... (libopenblas.so.0 at /usr/lib/..., lp64)` for tables and notes.
    pub fn describe(&self) -> String {
        let version = self.version.as_deref().unwrap_or(&self.vendor);
        let path = match self.path.as_deref() {
            Some(p) if p != self.library => format!(" at {p}"),
            _ => String::new(),
        };
        format!("{version} ({}{path}, {})", self.library, self.integers)
    }
}

/// The system probe's view: the BLAS found, or why none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BlasProbe {
    Found(BlasInfo),
    Missing { reason: String },
}

impl BlasProbe {
    /// Loads (once per process) and reports the library, with the thread count the CPU
    /// backend's own kernels use.
    pub fn collect() -> BlasProbe {
        match Blas::shared() {
            Ok(blas) => BlasProbe::Found(blas.info_with_threads(super::threads())),
            Err(reason) => BlasProbe::Missing {
                reason: reason.clone(),
            },
        }
    }

    pub fn describe(&self) -> String {
        match self {
            BlasProbe::Found(info) => info.describe(),
            BlasProbe::Missing { reason } => format!("none: {reason}"),
        }
    }
}

/// A loaded CBLAS.
pub struct Blas {
    library: String,
    path: Option<String>,
    vendor: &'static str,
    version: Option<String>,
    ilp64: bool,
    sgemm: GemmFn<f32>,
    dgemm: GemmFn<f64>,
    threads: Threads,
    /// Kept loaded for the process: the function pointers above point into it.
    _lib: libloading::Library,
}

/// The library's calls to set and read its thread count, where it has them.
enum Threads {
    OpenBlas {
        set: unsafe extern "C" fn(c_int),
        get: Option<unsafe extern "C" fn() -> c_int>,
    },
    Blis {
        set: unsafe extern "C" fn(i64),
        get: Option<unsafe extern "C" fn() -> i64>,
    },
    Mkl {
        set: unsafe extern "C" fn(c_int),
        get: Option<unsafe extern "C" fn() -> c_int>,
    },
    Unknown,
}

/// A symbol of `lib` as a value of type `T` (a function pointer), if it has it.
///
/// SAFETY: the caller names the symbol's true C type as `T`.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
    let name = format!("{name}\0");
    unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
}

/// A C string a library returned, if not null.
///
/// SAFETY: `p` is null or a NUL-terminated string that outlives the call.
unsafe fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| {
        unsafe { CStr::from_ptr(p) }
            .to_string_lossy()
            .trim()
            .to_owned()
    })
}

static SHARED: OnceLock<Result<Blas, String>> = OnceLock::new();

impl Blas {
    /// The process's BLAS, loaded on first use: [`BLAS_ENV`] when set, else the first of
    /// [`SEARCHED`] that loads and has `cblas_sgemm` and `cblas_dgemm`. The error names
    /// everything tried and why each failed.
    pub fn shared() -> Result<&'static Blas, &'static String> {
        SHARED
            .get_or_init(|| Self::search(std::env::var(BLAS_ENV).ok().as_deref()))
            .as_ref()
    }

    fn search(requested: Option<&str>) -> Result<Blas, String> {
        let candidates: Vec<&str> = match requested {
            Some(name) if !name.trim().is_empty() => vec![name.trim()],
            _ => SEARCHED.to_vec(),
        };
        let mut tried = Vec::new();
        for name in &candidates {
            match Self::load(name) {
                Ok(blas) => return Ok(blas),
                Err(why) => tried.push(format!("{name}: {why}")),
            }
        }
        let what = match requested {
            Some(name) if !name.trim().is_empty() => {
                format!("the CPU BLAS {BLAS_ENV}={name} did not load")
            }
            _ => "no CPU BLAS found".to_owned(),
        };
        Err(format!("{what} ({}); {INSTALL_HINT}", tried.join("; ")))
    }

    /// Loads one library by path or soname and resolves its GEMMs and what names it.
    pub fn load(name: &str) -> Result<Blas, String> {
        // SAFETY: loading runs the library's initialisers; a BLAS's only start threads.
        let lib = unsafe { libloading::Library::new(name) }.map_err(|e| {
            // libloading says "dlopen failed" and keeps the loader's reason as the source.
            match std::error::Error::source(&e) {
                Some(why) => format!("{e}: {why}"),
                None => e.to_string(),
            }
        })?;
        // SAFETY (every `symbol` below): the types are the CBLAS and vendor headers' own.
        let (naming, sgemm, dgemm) = NAMINGS
            .iter()
            .find_map(|n| unsafe {
                let s = format!("{}cblas_sgemm{}", n.prefix, n.suffix);
                let d = format!("{}cblas_dgemm{}", n.prefix, n.suffix);
                if n.ilp64 {
                    Some((
                        n,
                        GemmFn::Ilp64(symbol::<Ilp64<f32>>(&lib, &s)?),
                        GemmFn::Ilp64(symbol::<Ilp64<f64>>(&lib, &d)?),
                    ))
                } else {
                    Some((
                        n,
                        GemmFn::Lp64(symbol::<Lp64<f32>>(&lib, &s)?),
                        GemmFn::Lp64(symbol::<Lp64<f64>>(&lib, &d)?),
                    ))
                }
            })
            .ok_or("it has no cblas_sgemm and cblas_dgemm (nor their 64-bit-integer names)")?;
        let openblas = |base: &str| format!("{}{base}{}", naming.prefix, naming.suffix);
        let (vendor, version, threads) = unsafe {
            if let Some(config) = symbol::<unsafe extern "C" fn() -> *const c_char>(
                &lib,
                &openblas("openblas_get_config"),
            ) {
                let threads = match symbol(&lib, &openblas("openblas_set_num_threads")) {
                    Some(set) => Threads::OpenBlas {
                        set,
                        get: symbol(&lib, &openblas("openblas_get_num_threads")),
                    },
                    None => Threads::Unknown,
                };
                ("OpenBLAS", text(config()), threads)
            } else if let Some(version) =
                symbol::<unsafe extern "C" fn() -> *const c_char>(&lib, "bli_info_get_version_str")
            {
                let threads = match symbol(&lib, "bli_thread_set_num_threads") {
                    Some(set) => Threads::Blis {
                        set,
                        get: symbol(&lib, "bli_thread_get_num_threads"),
                    },
                    None => Threads::Unknown,
                };
                let version = text(version()).map(|v| format!("BLIS {v}"));
                ("BLIS", version, threads)
            } else if let Some(version) =
                symbol::<unsafe extern "C" fn(*mut c_char, c_int)>(&lib, "MKL_Get_Version_String")
            {
                let mut buf = [0 as c_char; 256];
                version(buf.as_mut_ptr(), buf.len() as c_int - 1);
                let threads = match symbol(&lib, "MKL_Set_Num_Threads") {
                    Some(set) => Threads::Mkl {
                        set,
                        get: symbol(&lib, "MKL_Get_Max_Threads"),
                    },
                    None => Threads::Unknown,
                };
                ("oneMKL", text(buf.as_ptr()), threads)
            } else {
                ("CBLAS", None, Threads::Unknown)
            }
        };
        let sgemm_name = format!("{}cblas_sgemm{}", naming.prefix, naming.suffix);
        let path = crate::backend::cuda::loader::library_origin(&lib, &sgemm_name)
            .map(|p| p.display().to_string());
        Ok(Blas {
            library: name.to_owned(),
            path,
            vendor,
            version,
            ilp64: naming.ilp64,
            sgemm,
            dgemm,
            threads,
            _lib: lib,
        })
    }

    /// Sets the library's thread count (where it has the call) and reports it as read back.
    pub fn info_with_threads(&self, threads: usize) -> BlasInfo {
        BlasInfo {
            library: self.library.clone(),
            path: self.path.clone(),
            vendor: self.vendor.to_owned(),
            version: self.version.clone(),
            integers: if self.ilp64 { "ilp64" } else { "lp64" }.to_owned(),
            threads: self.set_threads(threads),
        }
    }

    /// Sets the thread count; the count the library then reports (the one set where it
    /// cannot be read back), or `None` where it has no thread call.
    pub fn set_threads(&self, threads: usize) -> Option<usize> {
        let n = threads.clamp(1, c_int::MAX as usize);
        // SAFETY: the vendors' documented thread calls, with a positive count.
        unsafe {
            match self.threads {
                Threads::OpenBlas { set, get } | Threads::Mkl { set, get } => {
                    set(n as c_int);
                    Some(get.map_or(n, |get| get().max(0) as usize))
                }
                Threads::Blis { set, get } => {
                    set(n as i64);
                    Some(get.map_or(n, |get| get().max(0) as usize))
                }
                Threads::Unknown => None,
            }
        }
    }
}

/// An element type with a CBLAS GEMM.
pub trait BlasScalar: Copy + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn gemm_of(blas: &Blas) -> GemmFnOf<Self>;
}

/// The GEMM of one element type (opaque outside this module).
pub struct GemmFnOf<T>(GemmFn<T>);

impl BlasScalar for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn gemm_of(blas: &Blas) -> GemmFnOf<f32> {
        GemmFnOf(blas.sgemm)
    }
}

impl BlasScalar for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn gemm_of(blas: &Blas) -> GemmFnOf<f64> {
        GemmFnOf(blas.dgemm)
    }
}

impl Blas {
    /// Row-major C = A·B (A is m×k, B k×n, C m×n, all dense).
    pub fn gemm<T: BlasScalar>(
        &self,
        (m, n, k): (usize, usize, usize),
        a: &[T],
        b: &[T],
        c: &mut [T],
    ) -> Result<(), String> {
        if a.len() != m * k || b.len() != k * n || c.len() != m * n {
            return Err(format!(
                "operand sizes {}, {}, {} do not match {m}x{n}x{k}",
                a.len(),
                b.len(),
                c.len()
            ));
        }
        let (lda, ldb, ldc) = (k.max(1), n.max(1), n.max(1));
        // SAFETY: the pointers cover the dense row-major operands checked above, with
        // leading dimensions of at least one as CBLAS requires.
        match T::gemm_of(self).0 {
            GemmFn::Lp64(f) => {
                let int = |v: usize| {
                    c_int::try_from(v)
                        .map_err(|_| format!("{v} exceeds this 32-bit-integer BLAS ({m}x{n}x{k})"))
                };
                let (mi, ni, ki) = (int(m)?, int(n)?, int(k)?);
                let (la, lb, lc) = (int(lda)?, int(ldb)?, int(ldc)?);
                unsafe {
                    f(
                        ROW_MAJOR,
                        NO_TRANS,
                        NO_TRANS,
                        mi,
                        ni,
                        ki,
                        T::ONE,
                        a.as_ptr(),
                        la,
                        b.as_ptr(),
                        lb,
                        T::ZERO,
                        c.as_mut_ptr(),
                        lc,
                    )
                }
            }
            GemmFn::Ilp64(f) => unsafe {
                f(
                    ROW_MAJOR,
                    NO_TRANS,
                    NO_TRANS,
                    m as i64,
                    n as i64,
                    k as i64,
                    T::ONE,
                    a.as_ptr(),
                    lda as i64,
                    b.as_ptr(),
                    ldb as i64,
                    T::ZERO,
                    c.as_mut_ptr(),
                    ldc as i64,
                )
            },
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_that_is_not_there_is_an_error_naming_it_and_the_hint() {
        let err = Blas::search(Some("/nonexistent/libnoblas.so"))
            .err()
            .expect("no such library");
        assert!(
            err.contains("STACKBENCH_BLAS=/nonexistent/libnoblas.so")
                && err.contains("apt-get install libopenblas0"),
            "{err}"
        );
        // A library without CBLAS GEMMs is refused, naming why.
        let err = Blas::load("libc.so.6")
            .err()
            .expect("libc has no cblas_sgemm");
        assert!(err.contains("no cblas_sgemm"), "{err}");
    }

    #[test]
    fn the_search_names_every_library_it_tried() {
        // Only meaningful where none of them is installed; otherwise one loads.
        if let Err(err) = Blas::search(None) {
            for name in SEARCHED {
                assert!(err.contains(name), "{name} missing from: {err}");
            }
        }
    }

    /// Where a BLAS is installed: its GEMM matches a plain triple loop, row-major, on a
    /// non-square shape, in both precisions, and it names itself.
    #[test]
    fn an_installed_blas_multiplies_row_major_and_names_itself() {
        let Ok(blas) = Blas::search(None) else {
            eprintln!("SKIPPED: no CPU BLAS installed");
            return;
        };
        let (m, n, k) = (3, 5, 4);
        let a: Vec<f64> = (0..m * k).map(|i| i as f64 - 3.0).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i % 7) as f64 * 0.5).collect();
        let want: Vec<f64> = (0..m * n)
            .map(|ij| (0..k).map(|p| a[ij / n * k + p] * b[p * n + ij % n]).sum())
            .collect();
        let mut c = vec![f64::NAN; m * n];
        blas.gemm((m, n, k), &a, &b, &mut c).unwrap();
        assert_eq!(c, want);
        let (a32, b32): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&x| x as f32).collect(),
            b.iter().map(|&x| x as f32).collect(),
        );
        let mut c32 = vec![f32::NAN; m * n];
        blas.gemm((m, n, k), &a32, &b32, &mut c32).unwrap();
        assert!(c32.iter().zip(&want).all(|(&x, &y)| x as f64 == y));
        assert!(blas.gemm((m, n, k + 1), &a, &b, &mut c).is_err());
        let info = blas.info_with_threads(1);
        assert!(!info.library.is_empty());
        if info.vendor == "OpenBLAS" {
            assert!(
                info.version
                    .as_deref()
                    .is_some_and(|v| v.starts_with("OpenBLAS"))
            );
            assert_eq!(info.threads, Some(1));
        }
    }
}
