//! Two things for the crate, both into OUT_DIR:
//! - the Cargo.lock this crate is built with, for the counter (the Criterion version the
//!   bench executables link, `harness::counting`): the workspace's lock in a checkout, the
//!   package's own in a packaged crate (`cargo package` includes it), whichever is nearest
//!   above the manifest;
//! - the Vulkan backend's compute shaders, WGSL compiled to SPIR-V by naga (pure Rust, no
//!   Vulkan SDK): a shader that does not parse or validate fails the build, naming the
//!   file, instead of failing at run time on the one machine with a GPU
//!   (docs/DEPENDENCY-NOTES.md says why naga at build time).

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    copy_lock(&manifest, &out_dir);
    compile_shaders(&manifest.join("src/backend/vulkan/shaders"), &out_dir);
}

fn copy_lock(manifest: &Path, out_dir: &Path) {
    let lock = manifest
        .ancestors()
        .map(|dir| dir.join("Cargo.lock"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| panic!("no Cargo.lock in or above {}", manifest.display()));
    println!("cargo:rerun-if-changed={}", lock.display());
    let out = out_dir.join("Cargo.lock");
    std::fs::copy(&lock, &out)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", lock.display(), out.display()));
}

/// The WGSL of `path` with each `// #include <name>` line replaced by `include/<name>.wgsl`
/// (WGSL has no imports: the workgroup reductions live once there). naga's messages then
/// count lines in the pasted source.
fn with_includes(path: &Path, include_dir: &Path) -> String {
    let source =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut out = String::with_capacity(source.len());
    for line in source.lines() {
        match line.trim().strip_prefix("// #include ") {
            Some(name) => {
                let included = include_dir.join(format!("{}.wgsl", name.trim()));
                println!("cargo:rerun-if-changed={}", included.display());
                let text = std::fs::read_to_string(&included).unwrap_or_else(|e| {
                    panic!("{}: including {}: {e}", path.display(), included.display())
                });
                out.push_str(&text);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Every `<name>.wgsl` in `dir` becomes `<name>.spv` in `out_dir` (SPIR-V 1.3, Vulkan 1.1+).
fn compile_shaders(dir: &Path, out_dir: &Path) {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    entries.sort();
    // A shader renamed or removed must not leave its old SPIR-V for `include_bytes!` to find.
    for stale in std::fs::read_dir(out_dir).expect("OUT_DIR is readable") {
        let path = stale.expect("a directory entry").path();
        let source = dir.join(path.with_extension("wgsl").file_name().unwrap_or_default());
        if path.extension().is_some_and(|e| e == "spv") && !source.is_file() {
            std::fs::remove_file(&path)
                .unwrap_or_else(|e| panic!("removing {}: {e}", path.display()));
        }
    }
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let source = with_includes(&path, &dir.join("include"));
        let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| {
            panic!(
                "{}",
                e.emit_to_string_with_path(&source, &path.display().to_string())
            )
        });
        // Push constants ("immediates") carry the scalar arguments; f64 is STREAM's type;
        // f16 pack/unpack in f32 is GLSL.std.450's PackHalf2x16, core in every Vulkan; f16
        // arithmetic is the f16 peak's alone (shaderFloat16, enabled where the device has
        // it). Each module declares only the SPIR-V capabilities it uses, so STREAM's
        // Float64 and the peaks' Float16 and DotProduct never reach another kernel.
        let capabilities = Capabilities::IMMEDIATES
            | Capabilities::FLOAT64
            | Capabilities::SHADER_FLOAT16
            | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
        let info = Validator::new(ValidationFlags::all(), capabilities)
            .validate(&module)
            .unwrap_or_else(|e| {
                panic!(
                    "{}",
                    e.emit_to_string_with_path(&source, &path.display().to_string())
                )
            });
        let options = naga::back::spv::Options {
            lang_version: (1, 3),
            // The kernels index within their buffers by construction (tests check every
            // output); a counter on every loop would be timed with them.
            force_loop_bounding: false,
            zero_initialize_workgroup_memory:
                naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
            ..Default::default()
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, None)
            .unwrap_or_else(|e| panic!("SPIR-V for {}: {e}", path.display()));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let name = path.file_stem().expect("a file name").to_string_lossy();
        let out = out_dir.join(format!("{name}.spv"));
        std::fs::write(&out, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    }
}
