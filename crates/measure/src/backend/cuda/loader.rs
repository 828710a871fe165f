//! Finding GPU libraries where users actually have them, before cudarc (or rocmrc) loads them.
//!
//! cudarc and rocmrc `dlopen` libraries by file name only, so a cuBLAS that came with a pip
//! wheel (`site-packages/nvidia/cublas/lib`) or sits in a toolkit directory that is not on
//! the loader path is never found, and setting `LD_LIBRARY_PATH` from inside the process is
//! too late (the loader reads it at start-up). What works in-process: `dlopen` the file by
//! its full path first, with `RTLD_GLOBAL`. The dynamic loader matches a later request by
//! file name against the sonames of libraries already loaded, so cudarc's
//! `dlopen("libcublas.so.12")` then returns the library loaded here.
//!
//! After loading, [`symbol_origin`] asks `dladdr` which file a symbol really came from,
//! so the probe reports the library that is in use, not the one we hoped for.

use std::ffi::{CStr, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A library to look for: its stem (`cublas` → `libcublas.so.*`) and the major versions
/// to accept, newest first.
#[derive(Clone, Copy, Debug)]
pub struct LibrarySpec {
    pub stem: &'static str,
    pub majors: &'static [&'static str],
}

impl LibrarySpec {
    /// File names tried in each directory: `lib<stem>.so.<major>` for each major, then the
    /// unversioned development link.
    pub fn file_names(&self) -> Vec<String> {
        self.majors
            .iter()
            .map(|major| format!("lib{}.so.{major}", self.stem))
            .chain(std::iter::once(format!("lib{}.so", self.stem)))
            .collect()
    }
}

/// Handles of libraries loaded here, kept for the life of the process: unloading a library
/// cudarc holds function pointers into would be unsound.
static PRELOADED: Mutex<Vec<libloading::Library>> = Mutex::new(Vec::new());

/// Where a library was found and loaded from, or why not.
#[derive(Clone, Debug, PartialEq)]
pub enum Preload {
    /// Loaded from this file by full path.
    Loaded(PathBuf),
    /// Not in any searched directory: left to the system loader (`LD_LIBRARY_PATH`,
    /// `ldconfig`), which cudarc uses by itself.
    NotInSearchedDirs,
    /// A file was there but `dlopen` refused it (wrong architecture, missing dependency).
    Failed { path: PathBuf, error: String },
}

/// Loads the first file matching `spec` in `dirs` by its full path, with `RTLD_GLOBAL` so
/// later by-name loads resolve to it.
pub fn preload(spec: LibrarySpec, dirs: &[PathBuf]) -> Preload {
    let Some(path) = find_in(spec, dirs) else {
        return Preload::NotInSearchedDirs;
    };
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: loading a vendor library runs its initialisers; these are the libraries the
    // backend is about to load anyway.
    match unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) } {
        Ok(lib) => {
            let mut kept = PRELOADED.lock().unwrap_or_else(|p| p.into_inner());
            kept.push(lib.into());
            Preload::Loaded(path)
        }
        Err(error) => Preload::Failed {
            path,
            error: error.to_string(),
        },
    }
}

/// The first existing file for `spec` in `dirs`, in directory order. Within a directory,
/// majors newest first; for each, the exact name and then names with more version parts
/// (`libnvrtc-builtins.so.12.4` counts as major 12, the newest such file first); the
/// unversioned development link last.
pub fn find_in(spec: LibrarySpec, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().find_map(|dir| {
        spec.majors
            .iter()
            .find_map(|major| {
                let exact = dir.join(format!("lib{}.so.{major}", spec.stem));
                if exact.is_file() {
                    return Some(exact);
                }
                let prefix = format!("lib{}.so.{major}.", spec.stem);
                read_dir_matching(dir, &prefix)
                    .into_iter()
                    .rev()
                    .find(|p| p.is_file())
            })
            .or_else(|| {
                let unversioned = dir.join(format!("lib{}.so", spec.stem));
                unversioned.is_file().then_some(unversioned)
            })
    })
}

/// Directories pip and conda put NVIDIA's wheels' libraries in (`nvidia/<pkg>/lib`, and
/// `nvidia/cu13/lib` for the CUDA 13 wheels), for every Python prefix we can see: the
/// active virtualenv and conda env, the prefix of the interpreter `STACKBENCH_PYTHON` names
/// (the Python the component tier measures, whose torch brought these wheels), the user
/// site, and the system prefixes.
pub fn pip_wheel_dirs(vendor_dir: &str) -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"]
        .iter()
        .filter_map(|var| std::env::var_os(var).map(PathBuf::from))
        .collect();
    prefixes.extend(
        std::env::var_os("STACKBENCH_PYTHON").and_then(|python| python_prefix(Path::new(&python))),
    );
    if let Some(home) = std::env::var_os("HOME") {
        prefixes.push(PathBuf::from(home).join(".local"));
    }
    prefixes.extend(["/usr/local", "/usr", "/opt/conda"].map(PathBuf::from));
    let mut dirs = pip_wheel_dirs_in(&prefixes, vendor_dir);
    // PYTHONPATH entries are site directories too.
    if let Some(paths) = std::env::var_os("PYTHONPATH") {
        let sites: Vec<PathBuf> = std::env::split_paths(&paths).collect();
        dirs.extend(vendor_lib_dirs(&sites, vendor_dir));
    }
    dirs
}

/// The `<site-packages>/<vendor_dir>/<pkg>/lib` directories of the Python prefixes given.
pub fn pip_wheel_dirs_in(prefixes: &[PathBuf], vendor_dir: &str) -> Vec<PathBuf> {
    let mut site_dirs: Vec<PathBuf> = Vec::new();
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            for python in read_dir_matching(&prefix.join(lib), "python3") {
                for packages in ["site-packages", "dist-packages"] {
                    site_dirs.push(python.join(packages));
                }
            }
        }
    }
    vendor_lib_dirs(&site_dirs, vendor_dir)
}

fn vendor_lib_dirs(site_dirs: &[PathBuf], vendor_dir: &str) -> Vec<PathBuf> {
    site_dirs
        .iter()
        .flat_map(|site| read_dir_matching(&site.join(vendor_dir), ""))
        .map(|pkg| pkg.join("lib"))
        .filter(|dir| dir.is_dir())
        .collect()
}

/// The prefix of an interpreter named by path (`<venv>/bin/python` → `<venv>`), without
/// resolving links: a virtualenv's `python` links to the system one, whose prefix holds
/// none of the virtualenv's packages. `None` for a bare command name.
pub fn python_prefix(python: &Path) -> Option<PathBuf> {
    let bin = python.parent().filter(|p| !p.as_os_str().is_empty())?;
    (bin.file_name()? == "bin").then(|| bin.parent().map(Path::to_path_buf))?
}

/// Entries of `dir` whose names start with `prefix`, sorted (newest versions last).
fn read_dir_matching(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Library directories of CUDA toolkits: `$CUDA_HOME`, `$CUDA_PATH`, `$CUDA_ROOT`, then
/// `/usr/local/cuda` and versioned installs, newest first.
pub fn cuda_toolkit_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|var| std::env::var_os(var).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut versioned = read_dir_matching(Path::new("/usr/local"), "cuda-");
    versioned.reverse();
    roots.extend(versioned);
    roots
        .iter()
        .flat_map(|root| {
            [
                "lib64",
                "lib",
                "targets/x86_64-linux/lib",
                "targets/sbsa-linux/lib",
            ]
            .map(|sub| root.join(sub))
        })
        .filter(|dir| dir.is_dir())
        .collect()
}

/// The file the code at `address` was loaded from, by `dladdr`.
///
/// # Safety
/// `address` must point into a loaded shared object (a symbol obtained from it).
pub unsafe fn symbol_origin(address: *const c_void) -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables; a null file name is handled below.
    let found = unsafe { libc::dladdr(address, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

/// Where `library` defines `symbol`, if it does.
pub fn library_origin(library: &libloading::Library, symbol: &str) -> Option<PathBuf> {
    let name = format!("{symbol}\0");
    // SAFETY: the symbol is only used as an address for dladdr, never called.
    unsafe {
        let sym: libloading::Symbol<'_, *const c_void> = library.get(name.as_bytes()).ok()?;
        symbol_origin(*sym)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAKE: LibrarySpec = LibrarySpec {
        stem: "stackbenchfake",
        majors: &["13", "12"],
    };

    #[test]
    fn names_try_newest_major_first() {
        assert_eq!(
            FAKE.file_names(),
            vec![
                "libstackbenchfake.so.13",
                "libstackbenchfake.so.12",
                "libstackbenchfake.so"
            ]
        );
    }

    #[test]
    fn finds_a_wheel_layout_and_reports_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("nvidia/cublas/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libstackbenchfake.so.12"), b"not an ELF file").unwrap();
        let dirs = vec![dir.path().join("empty"), lib.clone()];
        assert_eq!(
            find_in(FAKE, &dirs),
            Some(lib.join("libstackbenchfake.so.12"))
        );
        // A file that is not a library is a reported failure, not a panic.
        match preload(FAKE, &dirs) {
            Preload::Failed { path, .. } => assert_eq!(path, lib.join("libstackbenchfake.so.12")),
            other => panic!("expected a failure, got {other:?}"),
        }
        assert_eq!(preload(FAKE, &[]), Preload::NotInSearchedDirs);
        // Longer version suffixes count as their major, newest first.
        std::fs::write(lib.join("libstackbenchfake.so.13.0"), b"x").unwrap();
        std::fs::write(lib.join("libstackbenchfake.so.13.1"), b"x").unwrap();
        assert_eq!(
            find_in(FAKE, std::slice::from_ref(&lib)),
            Some(lib.join("libstackbenchfake.so.13.1"))
        );
    }

    #[test]
    fn an_interpreter_path_gives_its_prefix_unresolved() {
        assert_eq!(
            python_prefix(Path::new("/w/.venv/bin/python")),
            Some(PathBuf::from("/w/.venv"))
        );
        assert_eq!(python_prefix(Path::new("python3")), None);
        assert_eq!(python_prefix(Path::new("/opt/py/python3")), None);
    }

    #[test]
    fn dladdr_names_the_c_library() {
        // SAFETY: `strlen` is a function in the loaded C library.
        let origin = unsafe { symbol_origin(libc::strlen as *const c_void) }.unwrap();
        assert!(
            origin.to_string_lossy().contains("libc"),
            "{}",
            origin.display()
        );
    }
}
