//! Writes stackbench's GPU kernel source, as NVRTC and hipRTC receive it, into a folder:
//! `cargo run --example dump_gpu_kernels -- DIR` (used by scripts/gpu/check_kernels.sh to
//! compile both with clang on a machine without a GPU toolkit).

use stackbench::backend::gpu::kernels::{Platform, source};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: dump_gpu_kernels DIR");
        return ExitCode::from(2);
    };
    for (platform, name) in [
        (Platform::Cuda, "kernels.cu"),
        (Platform::Hip, "kernels.hip"),
    ] {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, source(platform)) {
            eprintln!("writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
