//! Where an installed stackbench finds the parts it runs: the bench executables (one per
//! bench target) and the Python workers beside them.
//!
//! `cargo install --path .` installs the two binaries only. `validate`, `sweep` and the
//! suites need the bench executables too, found in this order:
//! 1. `$STACKBENCH_BENCH_DIR`: a directory of prebuilt executables (a bundle unpacked by
//!    `ci/gpu_tests.sh`, or any other);
//! 2. the checkout the binary was built from, when it is still there (`cargo bench` runs in
//!    it, so a developer's edits are what runs); `$STACKBENCH_CHECKOUT` names another one, and
//!    set empty says there is none;
//! 3. the installation cache, `$STACKBENCH_CACHE_DIR`, else
//!    `$XDG_CACHE_HOME/stackbench/<version>`, else `~/.cache/stackbench/<version>`, which
//!    `stackbench setup` fills from a checkout (building the bench executables once) or from
//!    a release bundle (`ci/gpu_bundle.sh`), with the Python workers under
//!    `scripts/components` beside them (the bench targets look for them above their
//!    executable).
//!
//! Without any of them, a command that runs benchmarks says so, with the command that
//! installs them; `stackbench info` prints where each part comes from.

use crate::files::atomic::{AtomicWriteError, write_atomic};
use crate::harness::cargo_messages::bench_artifact;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Names another checkout than the one the binary was built from (empty: none).
pub const CHECKOUT_ENV: &str = "STACKBENCH_CHECKOUT";
/// Names the installation cache instead of the XDG one.
pub const CACHE_ENV: &str = "STACKBENCH_CACHE_DIR";
/// What `stackbench setup` writes last in the cache: the cache is complete only with it.
pub const MANIFEST: &str = "MANIFEST";

/// Every bench target; a cache or a bundle holds one executable for each.
pub const BENCH_TARGETS: &[&str] = &[
    "gemm",
    "memory_bandwidth",
    "tensor_ops",
    "attention",
    "components",
    "models",
    "alloc",
    "compile",
];

/// Where the bench executables come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchSource {
    /// `$STACKBENCH_BENCH_DIR`.
    Prebuilt(PathBuf),
    /// `cargo bench` in this checkout.
    Checkout(PathBuf),
    /// The installation cache (its `bench/` directory, `scripts/` beside it).
    Cache(PathBuf),
}

impl BenchSource {
    /// The directory of prebuilt executables (one per target, named as it), when they are
    /// prebuilt.
    pub fn prebuilt(&self) -> Option<PathBuf> {
        match self {
            BenchSource::Prebuilt(dir) => Some(dir.clone()),
            BenchSource::Cache(root) => Some(root.join("bench")),
            BenchSource::Checkout(_) => None,
        }
    }

    /// Where the targets run: the checkout (also for `$STACKBENCH_BENCH_DIR`'s executables
    /// when there is one, as before the cache existed), else the directory holding the
    /// executables (the cache's root, so its `scripts/components` is found).
    pub fn working_dir(&self) -> PathBuf {
        match self {
            BenchSource::Prebuilt(dir) => checkout().unwrap_or_else(|| dir.clone()),
            BenchSource::Checkout(dir) => dir.clone(),
            BenchSource::Cache(root) => root.clone(),
        }
    }

    /// One line for `stackbench info`.
    pub fn describe(&self) -> String {
        match self {
            BenchSource::Prebuilt(dir) => {
                format!(
                    "prebuilt in {} (${})",
                    dir.display(),
                    super::runner::BENCH_DIR_ENV
                )
            }
            BenchSource::Checkout(dir) => format!("built by cargo bench in {}", dir.display()),
            BenchSource::Cache(root) => format!(
                "installed in {} ({})",
                root.display(),
                manifest_line(root).unwrap_or_else(|| "no manifest".into())
            ),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PartsError {
    #[error(
        "no bench executables: the checkout this stackbench was built from ({checkout}) is gone \
         and the installation cache {cache} is empty; run `stackbench setup --from CHECKOUT` \
         (builds them once from a stackbench checkout) or `stackbench setup --bundle \
         bundle.tar.xz` (a release bundle from ci/gpu_bundle.sh), or set ${} to a directory of them",
        super::runner::BENCH_DIR_ENV
    )]
    NothingInstalled { checkout: String, cache: PathBuf },
    #[error("no installation cache: set ${CACHE_ENV}, $XDG_CACHE_HOME or $HOME")]
    NoCacheDir,
    #[error("{path} is not a stackbench checkout (no crates/benches/Cargo.toml)")]
    NotACheckout { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} failed: {detail}")]
    Command { what: String, detail: String },
    #[error("{source_name} has no bench executable `{target}` (it must hold one per bench target)")]
    Incomplete { source_name: String, target: String },
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PartsError + '_ {
    move |source| PartsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The checkout this binary was built from: the workspace root, two floors above this
/// crate's own folder (`crates/validate`).
pub fn built_from() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .nth(2)
        .unwrap_or(crate_dir)
        .to_path_buf()
}

/// The checkout to build in: `$STACKBENCH_CHECKOUT` (empty: none), else the one this
/// binary was built from; only one that is still a stackbench checkout.
pub fn checkout() -> Option<PathBuf> {
    let dir = match std::env::var_os(CHECKOUT_ENV) {
        Some(value) if value.is_empty() => return None,
        Some(value) => PathBuf::from(value),
        None => built_from(),
    };
    is_checkout(&dir).then_some(dir)
}

fn is_checkout(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file() && dir.join("crates/benches/Cargo.toml").is_file()
}

/// The installation cache's directory for this version (whether or not it is filled).
pub fn cache_dir() -> Result<PathBuf, PartsError> {
    let version = env!("CARGO_PKG_VERSION");
    let nonempty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(dir) = nonempty(CACHE_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(xdg) = nonempty("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(xdg).join("stackbench").join(version));
    }
    let home = nonempty("HOME").ok_or(PartsError::NoCacheDir)?;
    Ok(PathBuf::from(home)
        .join(".cache")
        .join("stackbench")
        .join(version))
}

/// Whether the cache at `root` is complete: its manifest (written last) and an executable
/// per bench target.
fn cache_is_filled(root: &Path) -> bool {
    root.join(MANIFEST).is_file()
        && BENCH_TARGETS
            .iter()
            .all(|t| root.join("bench").join(t).is_file())
}

/// The manifest's first line (where the cache came from).
fn manifest_line(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(MANIFEST)).ok()?;
    text.lines().next().map(str::to_owned)
}

/// Where the bench executables come from, in the order of the module's documentation.
pub fn locate() -> Result<BenchSource, PartsError> {
    if let Some(dir) = super::runner::prebuilt_dir() {
        return Ok(BenchSource::Prebuilt(dir));
    }
    if let Some(dir) = checkout() {
        return Ok(BenchSource::Checkout(dir));
    }
    let cache = cache_dir()?;
    if cache_is_filled(&cache) {
        return Ok(BenchSource::Cache(cache));
    }
    Err(PartsError::NothingInstalled {
        checkout: match std::env::var_os(CHECKOUT_ENV) {
            Some(v) if v.is_empty() => format!("none: ${CHECKOUT_ENV} is empty"),
            Some(v) => format!("${CHECKOUT_ENV} = {}", PathBuf::from(v).display()),
            None => built_from().display().to_string(),
        },
        cache,
    })
}

/// Where the installation cache's parts come from.
pub enum SetupFrom {
    /// A stackbench checkout: `cargo bench --no-run` there, then its executables.
    Checkout(PathBuf),
    /// A release bundle from `ci/gpu_bundle.sh` (`bundle.tar.xz`, or the unpacked
    /// `bundle/` directory).
    Bundle(PathBuf),
}

/// Fills the installation cache at `cache` from `from`, whole or not at all: the parts go
/// into a staging directory beside it that replaces the cache only when complete, with
/// the manifest written last. Returns the manifest's text.
pub fn setup(from: &SetupFrom, cache: &Path) -> Result<String, PartsError> {
    let parent = cache.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let stage = tempfile::Builder::new()
        .prefix(".stackbench-setup-")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    let bench = stage.path().join("bench");
    std::fs::create_dir_all(&bench).map_err(io(&bench))?;
    let (source_line, scripts) = match from {
        SetupFrom::Checkout(dir) => {
            if !is_checkout(dir) {
                return Err(PartsError::NotACheckout { path: dir.clone() });
            }
            for (target, exe) in build_benches(dir)? {
                copy(&exe, &bench.join(&target))?;
            }
            (
                format!("from checkout {}{}", dir.display(), git_describe(dir)),
                dir.join("scripts/components"),
            )
        }
        SetupFrom::Bundle(path) => {
            let unpacked = unpack(path, stage.path())?;
            for target in BENCH_TARGETS {
                let exe = unpacked.join("bench").join(target);
                if exe.is_file() {
                    copy(&exe, &bench.join(target))?;
                }
            }
            let manifest = std::fs::read_to_string(unpacked.join("MANIFEST")).unwrap_or_default();
            (
                format!(
                    "from bundle {} ({})",
                    path.display(),
                    manifest.lines().next().unwrap_or("no MANIFEST")
                ),
                unpacked.join("scripts/components"),
            )
        }
    };
    for target in BENCH_TARGETS {
        if !bench.join(target).is_file() {
            return Err(PartsError::Incomplete {
                source_name: source_line.clone(),
                target: (*target).to_string(),
            });
        }
    }
    let scripts_line = if scripts.is_dir() {
        copy_tree(&scripts, &stage.path().join("scripts/components"))?;
        "Python workers: scripts/components".to_string()
    } else {
        format!(
            "Python workers: none ({} has none; the components target then skips each worker with that reason)",
            scripts.display()
        )
    };
    let text = format!(
        "{source_line}\nstackbench {}\n{scripts_line}\n",
        env!("CARGO_PKG_VERSION")
    );
    write_atomic(&stage.path().join(MANIFEST), text.as_bytes())?;
    // Swap in: the old cache (if any) moves aside first, so a reader sees one or the other.
    let stage = stage.keep();
    let old = parent.join(format!(
        ".stackbench-old-{}",
        cache
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("cache")
    ));
    if cache.exists() {
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(cache, &old).map_err(io(cache))?;
    }
    std::fs::rename(&stage, cache).map_err(io(cache))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(text)
}

/// `cargo bench --no-run` in `dir`: each bench target's executable.
fn build_benches(dir: &Path) -> Result<Vec<(String, PathBuf)>, PartsError> {
    eprintln!(
        "stackbench setup: building the bench executables in {} (cargo bench --no-run; minutes the first time)",
        dir.display()
    );
    let out = stackbench_measure::system::cargo::command()
        .args(["bench", "--no-run", "--message-format=json"])
        .current_dir(dir)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| PartsError::Command {
            what: format!("cargo bench --no-run in {}", dir.display()),
            detail: format!("{e} (is cargo on PATH?)"),
        })?;
    if !out.status.success() {
        return Err(PartsError::Command {
            what: format!("cargo bench --no-run in {}", dir.display()),
            detail: format!("{} (its errors are above)", out.status),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(bench_artifact)
        .collect())
}

/// The bundle at `path` unpacked under `into`: its `bundle/` directory.
fn unpack(path: &Path, into: &Path) -> Result<PathBuf, PartsError> {
    if path.is_dir() {
        let dir = if path.join("bundle").is_dir() {
            path.join("bundle")
        } else {
            path.to_path_buf()
        };
        return Ok(dir);
    }
    if !path.is_file() {
        return Err(PartsError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such bundle"),
        });
    }
    let dest = into.join("unpacked");
    std::fs::create_dir_all(&dest).map_err(io(&dest))?;
    let out = Command::new("tar")
        .arg("-C")
        .arg(&dest)
        .arg("-xJf")
        .arg(path)
        .output()
        .map_err(|e| PartsError::Command {
            what: format!("tar -xJf {}", path.display()),
            detail: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(PartsError::Command {
            what: format!("unpacking {}", path.display()),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let bundle = dest.join("bundle");
    if !bundle.is_dir() {
        return Err(PartsError::Command {
            what: format!("unpacking {}", path.display()),
            detail: "no bundle/ directory inside: not an archive from ci/gpu_bundle.sh".into(),
        });
    }
    // What the installation cache does not keep.
    let _ = std::fs::remove_dir_all(bundle.join("test"));
    Ok(bundle)
}

fn copy(from: &Path, to: &Path) -> Result<(), PartsError> {
    std::fs::copy(from, to).map_err(io(from))?;
    Ok(())
}

/// Copies the files under `from` to `to`, skipping Python's byte-code caches.
fn copy_tree(from: &Path, to: &Path) -> Result<(), PartsError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let path = entry.path();
        let name = entry.file_name();
        if name == "__pycache__" {
            continue;
        }
        // `metadata` follows links: a linked helper folder is copied as what it points at.
        let meta = std::fs::metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            copy_tree(&path, &to.join(&name))?;
        } else {
            copy(&path, &to.join(&name))?;
        }
    }
    Ok(())
}

/// ` at <commit>` of a git checkout, or nothing.
fn git_describe(dir: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| format!(" at {}", String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_default()
}

/// What `stackbench info` prints about the parts: where each comes from, or what is
/// missing with the command that installs it.
pub fn report() -> Vec<String> {
    let mut lines = Vec::new();
    match locate() {
        Ok(source) => lines.push(format!("bench executables: {}", source.describe())),
        Err(e) => lines.push(format!("bench executables: missing: {e}")),
    }
    match cache_dir() {
        Ok(cache) if cache_is_filled(&cache) => lines.push(format!(
            "installation cache: {} ({})",
            cache.display(),
            manifest_line(&cache).unwrap_or_default()
        )),
        Ok(cache) => lines.push(format!(
            "installation cache: {} (empty; `stackbench setup` fills it)",
            cache.display()
        )),
        Err(e) => lines.push(format!("installation cache: {e}")),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle directory missing a target is refused whole, naming the target, and the
    /// cache is left as it was; a complete one fills the cache with the manifest last.
    #[test]
    fn setup_from_a_bundle_is_whole_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("bundle");
        std::fs::create_dir_all(bundle.join("bench")).unwrap();
        std::fs::create_dir_all(bundle.join("scripts/components/lib")).unwrap();
        std::fs::write(bundle.join("scripts/components/lib/w.py"), "x = 1\n").unwrap();
        std::fs::write(bundle.join("MANIFEST"), "commit abc\n").unwrap();
        for t in &BENCH_TARGETS[1..] {
            std::fs::write(bundle.join("bench").join(t), "#!/bin/sh\n").unwrap();
        }
        let cache = dir.path().join("cache/stackbench/0");
        let error = setup(&SetupFrom::Bundle(bundle.clone()), &cache).unwrap_err();
        assert!(error.to_string().contains("`gemm`"), "{error}");
        assert!(!cache.exists());
        std::fs::write(bundle.join("bench/gemm"), "#!/bin/sh\n").unwrap();
        let manifest = setup(&SetupFrom::Bundle(dir.path().to_path_buf()), &cache).unwrap();
        assert!(manifest.starts_with("from bundle") && manifest.contains("commit abc"));
        assert!(cache_is_filled(&cache));
        assert!(cache.join("scripts/components/lib/w.py").is_file());
        // Again, over the filled cache: replaced whole, nothing left beside it.
        setup(&SetupFrom::Bundle(bundle), &cache).unwrap();
        let beside: Vec<_> = std::fs::read_dir(cache.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, vec![std::ffi::OsString::from("0")]);
        let source = BenchSource::Cache(cache.clone());
        assert_eq!(source.prebuilt(), Some(cache.join("bench")));
        assert_eq!(source.working_dir(), cache);
        assert!(source.describe().contains("from bundle"));
        let not_a_checkout = setup(&SetupFrom::Checkout(dir.path().join("nope")), &cache);
        assert!(matches!(
            not_a_checkout,
            Err(PartsError::NotACheckout { .. })
        ));
        assert!(cache_is_filled(&cache), "a refused setup leaves the cache");
    }

    #[test]
    fn the_bench_targets_are_the_benches_crates() {
        let manifest =
            std::fs::read_to_string(built_from().join("crates/benches/Cargo.toml")).unwrap();
        let mut declared: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.trim().strip_prefix("name = \""))
            .filter_map(|l| l.strip_suffix('"'))
            .filter(|name| *name != "stackbench-benches")
            .collect();
        let mut known = BENCH_TARGETS.to_vec();
        declared.sort_unstable();
        known.sort_unstable();
        assert_eq!(declared, known);
    }
}
