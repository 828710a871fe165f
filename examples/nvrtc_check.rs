//! Compiles every CUDA kernel through the backend's own NVRTC path (cudarc, the same source
//! and options as `backend::cuda::kernels`) for each architecture CI covers, then assembles
//! each PTX with `ptxas -v` and records registers, spills and shared memory per kernel.
//! No GPU or driver is needed: NVRTC and ptxas come from pip wheels.
//!
//! `cargo run --example nvrtc_check -- OUT_DIR PTXAS [sm_80 sm_90 sm_100]`
//!
//! Writes `OUT_DIR/kernels.<arch>.ptx`, `OUT_DIR/ptxas.<arch>.log` and `OUT_DIR/ptxas.md`
//! (the table BENCHMARKS.md carries). It also compiles a broken source through the same
//! path and checks that the backend records it as a failure carrying NVRTC's log. Exit 0: every kernel compiled, assembled, and no
//! bandwidth-bound or tensor-core attention kernel spills; 1: a compile, assembly or spill failure; 2: bad usage or
//! NVRTC not found.

use anyhow::{Context, Result, bail};
use stackbench::backend::BackendKind;
use stackbench::backend::cuda::kernels::{compile_ptx_for, compile_source_for};
use stackbench::backend::cuda::libs;
use stackbench::backend::cuda::ptxas::{self, KernelResources};
use stackbench::backend::gpu::kernels::kernel_names;
use stackbench::backend::gpu::library::Library;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The architectures CI compiles for: Ampere, Hopper, Blackwell.
const DEFAULT_ARCHS: [&str; 3] = ["sm_80", "sm_90", "sm_100"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, ptxas_bin, archs @ ..] = &args[..] else {
        eprintln!("usage: nvrtc_check OUT_DIR PTXAS [ARCH...]");
        return ExitCode::from(2);
    };
    let archs: Vec<&'static str> = if archs.is_empty() {
        DEFAULT_ARCHS.to_vec()
    } else {
        archs
            .iter()
            .map(|a| &*Box::leak(a.clone().into_boxed_str()))
            .collect()
    };
    let presence = libs::presence();
    if !presence.nvrtc {
        eprintln!(
            "nvrtc_check: NVRTC (libnvrtc.so.12/.13) not found in {:?} or on the loader path",
            libs::prepare().searched
        );
        return ExitCode::from(2);
    }
    let nvrtc = libs::describe(presence).remove("nvrtc");
    println!(
        "nvrtc_check: NVRTC {}",
        nvrtc.map_or("?".into(), |v| v.to_string())
    );
    match run(Path::new(out), Path::new(ptxas_bin), &archs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvrtc_check: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(out: &Path, ptxas_bin: &Path, archs: &[&'static str]) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut table = Vec::new();
    for &arch in archs {
        let ptx = compile_ptx_for(arch)
            .map_err(|f| anyhow::anyhow!("{}:\n{}", f.step, f.message))?
            .to_src();
        let missing: Vec<String> = kernel_names()
            .into_iter()
            .filter(|name| !ptx.contains(&format!(".entry {name}(")))
            .collect();
        if !missing.is_empty() {
            bail!(
                "{arch}: kernels missing from the PTX: {}",
                missing.join(", ")
            );
        }
        let ptx_path = out.join(format!("kernels.{arch}.ptx"));
        std::fs::write(&ptx_path, &ptx)
            .with_context(|| format!("writing {}", ptx_path.display()))?;
        let resources = assemble(ptxas_bin, &ptx_path, arch, out)?;
        println!(
            "nvrtc_check: {arch}: {} kernels compiled and assembled",
            resources.len()
        );
        table.extend(resources);
    }
    failure_path_reports_the_log(archs[0])?;
    let markdown = ptxas::markdown_table(&table);
    std::fs::write(out.join("ptxas.md"), &markdown)?;
    print!("{markdown}");
    let spills = ptxas::forbidden_spills(&table);
    if !spills.is_empty() {
        bail!(
            "bandwidth-bound or register-tiled kernels spill registers: {}",
            spills.join(", ")
        );
    }
    Ok(())
}

/// A source NVRTC rejects must come out of the backend's classification as a failure (not
/// a skip) carrying NVRTC's own diagnostic, checked with the real compiler.
fn failure_path_reports_the_log(arch: &'static str) -> Result<()> {
    let broken = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }";
    let kernels = Library::build(Ok(()), Ok(()), || compile_source_for(broken.into(), arch));
    match kernels.get(BackendKind::Cuda, "NVRTC kernels") {
        Ok(_) => bail!("NVRTC accepted a source with an undeclared identifier"),
        Err(e) if e.is_skip() => bail!("a compile error was classified as a skip: {e}"),
        Err(e) if !e.to_string().contains("undeclared_name") => {
            bail!("the failure lacks NVRTC's log: {e}")
        }
        Err(e) => {
            let first = e
                .to_string()
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | ");
            println!("nvrtc_check: a compile error is a failure with NVRTC's log: {first}");
            Ok(())
        }
    }
}

/// `ptxas -v` on one PTX file: the per-kernel resources, or the assembler's output on error.
fn assemble(ptxas_bin: &Path, ptx: &Path, arch: &str, out: &Path) -> Result<Vec<KernelResources>> {
    let cubin: PathBuf = out.join(format!("kernels.{arch}.cubin"));
    let output = std::process::Command::new(ptxas_bin)
        .args(["-v", "-O3", &format!("-arch={arch}")])
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .with_context(|| format!("running {}", ptxas_bin.display()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::write(out.join(format!("ptxas.{arch}.log")), &log)?;
    if !output.status.success() {
        bail!("ptxas failed for {arch} ({}):\n{log}", output.status);
    }
    let resources = ptxas::parse_verbose(&log);
    let names: Vec<String> = resources.iter().map(|r| r.kernel.clone()).collect();
    let unreported: Vec<String> = kernel_names()
        .into_iter()
        .filter(|k| !names.contains(k))
        .collect();
    if !unreported.is_empty() {
        bail!(
            "{arch}: ptxas reported nothing for {}:\n{log}",
            unreported.join(", ")
        );
    }
    Ok(resources)
}
