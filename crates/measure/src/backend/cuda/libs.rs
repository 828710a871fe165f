//! The CUDA libraries the backend uses, found and checked before cudarc touches them.
//!
//! cudarc panics when it loads a missing library, so every library is probed first and
//! only then used. The crate is built with cudarc's CUDA 13.0 bindings because that makes
//! cudarc try both `lib*.so.13` and `lib*.so.12` (its name list includes the build's major
//! and 12); the calls stackbench makes exist with the same ABI in cuBLAS, cuBLASLt and NVRTC
//! 12.x and 13.x. Before cudarc looks, [`prepare`] loads each library by full path from pip
//! wheels and toolkit directories (see [`super::loader`]) so those installs are found too.

use super::loader::{self, LibrarySpec, Preload};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// cuBLASLt before cuBLAS (cuBLAS links against it), NVRTC's builtins before NVRTC.
const SPECS: [(&str, LibrarySpec); 4] = [
    (
        "cublasLt",
        LibrarySpec {
            stem: "cublasLt",
            majors: &["13", "12"],
        },
    ),
    (
        "cublas",
        LibrarySpec {
            stem: "cublas",
            majors: &["13", "12"],
        },
    ),
    (
        "nvrtc-builtins",
        LibrarySpec {
            stem: "nvrtc-builtins",
            majors: &["13", "12"],
        },
    ),
    (
        "nvrtc",
        LibrarySpec {
            stem: "nvrtc",
            majors: &["13", "12"],
        },
    ),
];

/// What the search found for each library, by name.
#[derive(Clone, Debug, Default)]
pub struct LibrarySearch {
    pub preloads: BTreeMap<&'static str, Preload>,
    pub searched: Vec<PathBuf>,
    /// Why each library's majors were tried in the order they were, by name.
    pub choices: BTreeMap<&'static str, String>,
}

/// The library majors to try for a driver, newest first, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct MajorChoice {
    pub majors: &'static [&'static str],
    pub reason: String,
}

/// The newest library majors the driver can run: a CUDA 13 library (and the PTX NVRTC 13
/// writes) needs a driver whose `cuDriverGetVersion` says 13.0 or newer, so on a 12.x
/// driver only the 12 libraries are tried. `offered` is newest first, so the answer is a
/// tail of it. Without a driver (NVRTC in CI) the newest is tried first.
pub fn choose_majors(offered: &'static [&'static str], driver: Option<(u32, u32)>) -> MajorChoice {
    let Some((major, minor)) = driver else {
        return MajorChoice {
            majors: offered,
            reason: format!(
                "no driver to check against: tried {} newest first",
                offered.join(", ")
            ),
        };
    };
    let first = offered
        .iter()
        .position(|m| m.parse::<u32>().is_ok_and(|m| m <= major))
        .unwrap_or(offered.len());
    let majors = &offered[first..];
    let reason = match (first, majors.first()) {
        (_, None) => format!(
            "the driver supports CUDA {major}.{minor}, older than every major stackbench uses ({})",
            offered.join(", ")
        ),
        (0, Some(m)) => format!("the driver supports CUDA {major}.{minor}: newest major {m} first"),
        (_, Some(m)) => format!(
            "the driver supports CUDA {major}.{minor}: major {m}, not {} (needs a newer driver)",
            offered[..first].join(", ")
        ),
    };
    MajorChoice { majors, reason }
}

/// The driver's CUDA version (major, minor) where the driver library is present.
fn driver_cuda_version() -> Option<(u32, u32)> {
    // SAFETY: only tries dlopen on the driver's names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return None;
    }
    let mut v = 0i32;
    // SAFETY: the driver is present; writes one int.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    (status == cudarc::driver::sys::CUresult::CUDA_SUCCESS && v > 0)
        .then_some(((v / 1000) as u32, ((v % 1000) / 10) as u32))
}

/// Searches the pip and toolkit directories and preloads what it finds, once per process.
pub fn prepare() -> &'static LibrarySearch {
    static SEARCH: OnceLock<LibrarySearch> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let mut searched = loader::cuda_toolkit_dirs();
        // Toolkit directories named by the user's environment come first; pip wheels next
        // (the active virtualenv's before the system's); /usr/local/cuda last.
        let (env_named, defaults): (Vec<PathBuf>, Vec<PathBuf>) = searched
            .drain(..)
            .partition(|d| !d.starts_with("/usr/local/cuda"));
        let searched: Vec<PathBuf> = env_named
            .into_iter()
            .chain(loader::pip_wheel_dirs("nvidia"))
            .chain(defaults)
            .collect();
        let driver = driver_cuda_version();
        let mut choices = BTreeMap::new();
        let mut preloads = BTreeMap::new();
        for (name, spec) in SPECS {
            let choice = choose_majors(spec.majors, driver);
            let spec = LibrarySpec {
                majors: choice.majors,
                ..spec
            };
            preloads.insert(name, loader::preload(spec, &searched));
            choices.insert(name, choice.reason);
        }
        LibrarySearch {
            preloads,
            searched,
            choices,
        }
    })
}

/// Whether cudarc can load each library now (after [`prepare`]).
#[derive(Clone, Copy, Debug)]
pub struct Presence {
    pub driver: bool,
    pub cublas: bool,
    pub cublaslt: bool,
    pub nvrtc: bool,
}

pub fn presence() -> Presence {
    prepare();
    // SAFETY: each only tries dlopen on cudarc's candidate names; nothing is called.
    unsafe {
        Presence {
            driver: cudarc::driver::sys::is_culib_present(),
            cublas: cudarc::cublas::sys::is_culib_present(),
            cublaslt: cudarc::cublaslt::sys::is_culib_present(),
            nvrtc: cudarc::nvrtc::sys::is_culib_present(),
        }
    }
}

/// One library's probe entry: version, the file it was loaded from, and why that major.
fn library_entry(
    version: Option<String>,
    path: Option<PathBuf>,
    choice: Option<&str>,
) -> serde_json::Value {
    let mut entry = serde_json::Map::new();
    if let Some(v) = version {
        entry.insert("version".into(), v.into());
    }
    if let Some(reason) = choice {
        entry.insert("choice".into(), reason.into());
    }
    let path = path.map_or_else(|| "unknown".into(), |p| p.display().to_string());
    entry.insert("path".into(), path.into());
    serde_json::Value::Object(entry)
}

/// Version and file of each library cudarc loaded, for the probe and the run record.
/// Call only for libraries [`presence`] found: cudarc's loaders panic otherwise.
pub fn describe(presence: Presence) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    let search = prepare();
    let mut put = |name: &str, version: Option<String>, path: Option<PathBuf>| {
        let choice = search.choices.get(name).map(String::as_str);
        out.insert(name.to_owned(), library_entry(version, path, choice));
    };
    if presence.driver {
        // SAFETY: the driver library is present (checked above).
        let lib = unsafe { cudarc::driver::sys::culib() };
        put(
            "cuda_driver",
            driver_version(),
            loader::library_origin(lib, "cuInit"),
        );
    }
    if presence.cublas {
        // SAFETY: present (checked above); cublasGetProperty needs no handle.
        let lib = unsafe { cudarc::cublas::sys::culib() };
        put(
            "cublas",
            cublas_version(),
            loader::library_origin(lib, "cublasCreate_v2"),
        );
    }
    if presence.cublaslt {
        // SAFETY: present (checked above).
        let lib = unsafe { cudarc::cublaslt::sys::culib() };
        let version = unsafe { cudarc::cublaslt::sys::cublasLtGetVersion() };
        put(
            "cublasLt",
            Some(format_library_version(version as i64)),
            loader::library_origin(lib, "cublasLtCreate"),
        );
    }
    if presence.nvrtc {
        // SAFETY: present (checked above).
        let lib = unsafe { cudarc::nvrtc::sys::culib() };
        put(
            "nvrtc",
            nvrtc_version(),
            loader::library_origin(lib, "nvrtcVersion"),
        );
    }
    let searched: Vec<serde_json::Value> = search
        .searched
        .iter()
        .map(|d| d.display().to_string().into())
        .collect();
    out.insert("searched_dirs".into(), searched.into());
    out
}

/// `12.4`-style driver API version (what the installed driver supports).
pub fn driver_version() -> Option<String> {
    driver_cuda_version().map(|(major, minor)| format!("{major}.{minor}"))
}

fn cublas_version() -> Option<String> {
    use cudarc::cublas::sys::{cublasGetProperty, cublasStatus_t, libraryPropertyType};
    let mut parts = [0i32; 3];
    let kinds = [
        libraryPropertyType::MAJOR_VERSION,
        libraryPropertyType::MINOR_VERSION,
        libraryPropertyType::PATCH_LEVEL,
    ];
    for (part, kind) in parts.iter_mut().zip(kinds) {
        // SAFETY: writes one int; cuBLAS is present.
        let status = unsafe { cublasGetProperty(kind, part) };
        if status != cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return None;
        }
    }
    Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
}

fn nvrtc_version() -> Option<String> {
    let (mut major, mut minor) = (0i32, 0i32);
    // SAFETY: writes two ints; NVRTC is present.
    let status = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (status == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then(|| format!("{major}.{minor}"))
}

/// cuBLAS-style packed versions: major·10000 + minor·100 + patch (12.x, 13.x).
pub fn format_library_version(v: i64) -> String {
    format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100)
}

/// The sentence the probe gives when the driver library is missing.
pub fn missing_driver_reason() -> String {
    "libcuda.so.1 (the NVIDIA driver's CUDA library) was not found: no NVIDIA driver is \
     installed or it is not on the loader path"
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_versions_read_as_major_minor_patch() {
        assert_eq!(format_library_version(120_805), "12.8.5");
        assert_eq!(format_library_version(130_001), "13.0.1");
    }

    #[test]
    fn the_newest_major_the_driver_supports_is_chosen_and_explained() {
        const OFFERED: &[&str] = &["13", "12"];
        let on_13 = choose_majors(OFFERED, Some((13, 0)));
        assert_eq!(on_13.majors, ["13", "12"]);
        assert!(on_13.reason.contains("13.0") && on_13.reason.contains("major 13"));
        let on_12 = choose_majors(OFFERED, Some((12, 4)));
        assert_eq!(on_12.majors, ["12"]);
        assert!(on_12.reason.contains("not 13"), "{}", on_12.reason);
        let on_14 = choose_majors(OFFERED, Some((14, 1)));
        assert_eq!(on_14.majors, ["13", "12"]);
        let on_11 = choose_majors(OFFERED, Some((11, 8)));
        assert!(on_11.majors.is_empty() && on_11.reason.contains("older than every"));
        let none = choose_majors(OFFERED, None);
        assert_eq!(none.majors, ["13", "12"]);
        assert!(none.reason.contains("no driver"));
    }

    #[test]
    fn probing_presence_never_panics() {
        // On a machine without CUDA every entry is false; with CUDA some are true. Either
        // way the call returns, and describe() only touches what is present.
        let p = presence();
        let described = describe(p);
        assert!(described.contains_key("searched_dirs"));
        assert_eq!(described.contains_key("cublas"), p.cublas);
    }
}
