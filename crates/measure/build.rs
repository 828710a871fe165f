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

/// One SPIR-V module a shader source makes: its file stem and the values its `$name`s take.
struct Variant {
    stem: String,
    values: Vec<(String, String)>,
}

/// The modules a shader makes: one per `// #variant <stem> name=value …` line, so an f32
/// kernel and its 16-bit twin are one source (`peak.wgsl` makes `peak.spv` and
/// `peak_f16.spv`); the file's own stem, with no values, where it declares none.
fn variants(path: &Path, source: &str) -> Vec<Variant> {
    let declared: Vec<Variant> = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix("// #variant "))
        .map(|spec| {
            let (stem, values) = named_values(path, spec);
            Variant {
                stem: stem.to_string(),
                values,
            }
        })
        .collect();
    if !declared.is_empty() {
        return declared;
    }
    let stem = path.file_stem().expect("a file name").to_string_lossy();
    vec![Variant {
        stem: stem.into_owned(),
        values: Vec::new(),
    }]
}

/// `<name> a=1 b=2` (a variant's or an include's line) as the name and its values.
fn named_values<'s>(path: &Path, spec: &'s str) -> (&'s str, Vec<(String, String)>) {
    let mut words = spec.split_whitespace();
    let name = words
        .next()
        .unwrap_or_else(|| panic!("{}: `{spec}` names nothing", path.display()));
    let values = words
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => (key.to_string(), value.to_string()),
            None => panic!("{}: {name}: `{pair}` is not name=value", path.display()),
        })
        .collect();
    (name, values)
}

/// The WGSL of `source` (read from `path`) for one variant: `// #if name=value` …
/// `// #else` … `// #endif` sections kept where the variant's value matches, each `$name`
/// replaced by its value, and each `// #include <name>` line replaced by
/// `include/<name>.wgsl`, preprocessed the same way (WGSL has no imports: the workgroup
/// reductions and the kernels' shared bodies live once there); `// #include <name> a=1`
/// gives the included text more values, or others (a set of entry points written once,
/// included once per element type). naga's messages then count lines in this text, which
/// they quote.
fn preprocess(
    path: &Path,
    source: &str,
    values: &[(String, String)],
    include_dir: &Path,
) -> String {
    let mut out = String::with_capacity(source.len());
    // One entry per open `#if`: whether its current branch is kept.
    let mut kept: Vec<bool> = Vec::new();
    for line in source.lines() {
        let directive = line.trim();
        if let Some(test) = directive.strip_prefix("// #if ") {
            let (name, value) = test
                .split_once('=')
                .unwrap_or_else(|| panic!("{}: `{directive}` is not name=value", path.display()));
            let actual = lookup(path, values, name.trim());
            kept.push(actual == value.trim());
            continue;
        }
        if directive == "// #else" || directive == "// #endif" {
            let top = kept
                .pop()
                .unwrap_or_else(|| panic!("{}: `{directive}` without `// #if`", path.display()));
            if directive == "// #else" {
                kept.push(!top);
            }
            continue;
        }
        if kept.contains(&false) || directive.starts_with("// #variant ") {
            continue;
        }
        let line = substitute(path, line, values);
        match line.trim().strip_prefix("// #include ") {
            Some(spec) => {
                let (name, given) = named_values(path, spec);
                let included = include_dir.join(format!("{name}.wgsl"));
                println!("cargo:rerun-if-changed={}", included.display());
                let text = std::fs::read_to_string(&included).unwrap_or_else(|e| {
                    panic!("{}: including {}: {e}", path.display(), included.display())
                });
                // The include's own values come first, so they win over the module's.
                let inner: Vec<(String, String)> =
                    given.into_iter().chain(values.to_vec()).collect();
                out.push_str(&preprocess(&included, &text, &inner, include_dir));
            }
            None => out.push_str(&line),
        }
        out.push('\n');
    }
    assert!(
        kept.is_empty(),
        "{}: a `// #if` has no `// #endif`",
        path.display()
    );
    out
}

/// The value a variant gives `name`; a name it does not give fails the build.
fn lookup<'v>(path: &Path, values: &'v [(String, String)], name: &str) -> &'v str {
    values
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.as_str())
        .unwrap_or_else(|| panic!("{}: `${name}` has no value in this variant", path.display()))
}

/// `line` with each `$name` (letters, digits, `_`), or `${name}` where more of an
/// identifier follows (`flash_${dt}_d64`), replaced by the variant's value.
fn substitute(path: &Path, line: &str, values: &[(String, String)]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, next) = match after.strip_prefix('{') {
            Some(braced) => braced
                .split_once('}')
                .unwrap_or_else(|| panic!("{}: `${{` without `}}`", path.display())),
            None => {
                let len = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                after.split_at(len)
            }
        };
        out.push_str(lookup(path, values, name));
        rest = next;
    }
    out.push_str(rest);
    out
}

/// Every `<name>.wgsl` in `dir` becomes `<name>.spv` in `out_dir` (SPIR-V 1.3, Vulkan 1.1+),
/// or one `<stem>.spv` per variant it declares.
fn compile_shaders(dir: &Path, out_dir: &Path) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    entries.sort();
    let mut modules = Vec::new();
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for variant in variants(&path, &source) {
            let wgsl = preprocess(&path, &source, &variant.values, &dir.join("include"));
            modules.push((variant.stem, path.clone(), wgsl));
        }
    }
    // A shader renamed or removed must not leave its old SPIR-V for `include_bytes!` to find.
    for stale in std::fs::read_dir(out_dir).expect("OUT_DIR is readable") {
        let path = stale.expect("a directory entry").path();
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let built = modules.iter().any(|(name, _, _)| *name == stem);
        if path.extension().is_some_and(|e| e == "spv") && !built {
            std::fs::remove_file(&path)
                .unwrap_or_else(|e| panic!("removing {}: {e}", path.display()));
        }
    }
    for (stem, path, source) in modules {
        let out = out_dir.join(format!("{stem}.spv"));
        std::fs::write(&out, spirv(&path, &source))
            .unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
    }
}

/// The SPIR-V of one preprocessed module; a module naga cannot parse or validate fails the
/// build, naming its source file.
fn spirv(path: &Path, source: &str) -> Vec<u8> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| {
        panic!(
            "{}",
            e.emit_to_string_with_path(source, &path.display().to_string())
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
                e.emit_to_string_with_path(source, &path.display().to_string())
            )
        });
    let options = naga::back::spv::Options {
        lang_version: (1, 3),
        // The kernels index within their buffers by construction (tests check every
        // output); a counter on every loop would be timed with them.
        force_loop_bounding: false,
        zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
        ..Default::default()
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, None)
        .unwrap_or_else(|e| panic!("SPIR-V for {}: {e}", path.display()));
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
