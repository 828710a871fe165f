//! Measured peaks on the Vulkan device, vkpeak-style, for `stackbench info --measure`:
//! Vulkan reports neither clocks nor unit counts, so a GPU without a datasheet row (or a
//! CPU driver) gets its "% of peak" from these. f32 FMA throughput (`shaders/peak.wgsl`)
//! and the STREAM copy's bandwidth, both timed with timestamps and both checked: the FMA
//! chains' sum against the host's, the copy against STREAM's check. f16 and int8 peaks
//! are not measured yet (no shaderFloat16 / int8 dot-product kernel).

use super::{VulkanBackend, VulkanTimer};
use crate::backend::gpu::{
    Arg, GpuDevice, GpuTimer, Grid, download, stream::GpuStreamKernel, zeroed,
};
use crate::backend::{BackendKind, TimedWorkload};
use crate::system::peak::{Peak, PeakMetric};
use crate::workload::{DType, StreamKernel, Suite};
use std::time::Duration;

/// FMAs per chain per round and chains per thread, as the shader has them.
const FMAS_PER_ROUND: u64 = 16;
const CHAINS: u64 = 8;
/// The shader's constants: x = x·M + ADD, chains seeded at 0.0, 0.1, ... for thread 0.
const M: f32 = 0.999;
const ADD: f32 = 1.0e-3;
/// Time one FMA measurement should take at least: a submission costs milliseconds on some
/// drivers (about 20 ms on lavapipe here), which a short run would count as compute.
const MIN_TIME: Duration = Duration::from_millis(100);

/// The measured f32 FMA peak and copy bandwidth of the Vulkan device, and why any of them
/// is missing.
pub fn measured_peaks() -> (Vec<Peak>, Vec<String>) {
    let vk = match VulkanBackend::open() {
        Ok(vk) => vk,
        Err(why) => {
            return (
                Vec::new(),
                vec![format!("Vulkan peaks not measured: {why}")],
            );
        }
    };
    let device = vk.info.name.clone();
    let mut peaks = Vec::new();
    let mut notes = Vec::new();
    match fma_peak(&vk) {
        Ok((flops, threads)) => peaks.push(Peak {
            backend: BackendKind::Vulkan,
            device: device.clone(),
            metric: PeakMetric::FlopsPerSecond,
            dtype: Some(DType::F32),
            theoretical: None,
            measured: Some(flops),
            source: format!(
                "measured: {CHAINS} independent f32 FMA chains per thread, {threads} threads, \
                 timestamp queries (vkpeak-style; Vulkan reports no clock for a theoretical \
                 figure)"
            ),
        }),
        Err(why) => notes.push(format!("Vulkan f32 FMA peak not measured: {why}")),
    }
    // The copy is f64 STREAM: a device without shaderFloat64 (Intel Arc) keeps its FMA peak
    // and this note.
    let copy = vk
        .gpu_stream_sizes_for_peak()
        .ok_or_else(|| "no STREAM size fits this device".to_owned())
        .and_then(|bytes| Ok((bytes, copy_bandwidth(&vk, bytes)?)));
    match copy {
        Ok((bytes, measured)) => peaks.push(Peak {
            backend: BackendKind::Vulkan,
            device,
            metric: PeakMetric::BytesPerSecond,
            dtype: None,
            theoretical: None,
            measured: Some(measured),
            source: format!(
                "measured: the STREAM copy kernel over {} MiB arrays",
                bytes >> 20
            ),
        }),
        Err(why) => notes.push(format!("Vulkan copy bandwidth not measured: {why}")),
    }
    (peaks, notes)
}

/// f32 FLOP/s of the FMA kernel, and the threads it ran.
fn fma_peak(vk: &VulkanBackend) -> Result<(f64, u64), String> {
    let groups: u32 = if vk.is_cpu_driver() { 64 } else { 4096 };
    let threads = groups as u64 * 256;
    let out = zeroed::<f32>(vk, threads as usize).map_err(|e| e.to_string())?;
    let timer = VulkanTimer::new(vk, false);
    let grid = Grid {
        blocks: (groups, 1, 1),
        threads: 256,
    };
    let mut rounds: u32 = 256;
    loop {
        let args = [Arg::Ptr(out.ptr), Arg::I32(rounds as i32), Arg::I32(0)];
        let elapsed = timer
            .time(1, &mut || vk.launch("peak_fma_f32", grid, &args))
            .map_err(|e| e.to_string())?;
        if elapsed >= MIN_TIME || rounds >= 1 << 20 {
            check_chains(vk, &out, rounds)?;
            let flops = threads * rounds as u64 * FMAS_PER_ROUND * CHAINS * 2;
            return Ok((flops as f64 / elapsed.as_secs_f64(), threads));
        }
        rounds *= 4;
    }
}

/// Thread 0's sum against the same chains on the host (within rounding: a driver may or
/// may not fuse the FMA): proof the kernel ran every round.
fn check_chains(
    vk: &VulkanBackend,
    out: &crate::backend::gpu::RawBuffer,
    rounds: u32,
) -> Result<(), String> {
    let got = download::<f32>(vk, out).map_err(|e| e.to_string())?[0] as f64;
    let mut chains: Vec<f32> = (0..CHAINS).map(|c| c as f32 * 0.1).collect();
    for _ in 0..rounds as u64 * FMAS_PER_ROUND {
        for x in chains.iter_mut() {
            *x = x.mul_add(M, ADD);
        }
    }
    let want: f64 = chains.iter().map(|&x| x as f64).sum();
    if (got - want).abs() > 1e-3 * want.abs().max(1.0) {
        return Err(format!(
            "the FMA peak kernel's result is {got}, expected {want} after {rounds} rounds"
        ));
    }
    Ok(())
}

/// Bytes per second of the STREAM copy (checked first), the best of three runs of four.
fn copy_bandwidth(vk: &VulkanBackend, bytes: usize) -> Result<f64, String> {
    let mut copy =
        GpuStreamKernel::new(vk, StreamKernel::Copy, bytes / 8).map_err(|e| e.to_string())?;
    copy.verify().map_err(|e| e.to_string())?;
    let moved = StreamKernel::Copy.bytes(bytes / 8, 8) as f64 * 4.0;
    let mut best: f64 = 0.0;
    for _ in 0..3 {
        let t = copy.run(4).map_err(|e| e.to_string())?;
        best = best.max(moved / t.as_secs_f64());
    }
    Ok(best)
}

impl VulkanBackend {
    /// The quick suite's STREAM size on this device, which the bandwidth peak uses.
    fn gpu_stream_sizes_for_peak(&self) -> Option<usize> {
        use crate::backend::gpu::GpuBackend;
        self.gpu_stream_sizes(Suite::Quick).first().copied()
    }
}
