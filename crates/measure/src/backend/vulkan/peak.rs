//! Measured peaks on the Vulkan device, vkpeak-style, for `stackbench info --measure`:
//! Vulkan reports neither clocks nor unit counts, so a GPU without a datasheet row (or a
//! CPU driver) gets its "% of peak" from these. Compute peaks in f32 and f16 (FMA chains,
//! `shaders/peak.wgsl`, which makes both) and int8 (packed dot products,
//! `peak_int8.wgsl`), and the STREAM copy's bandwidth, all timed with timestamps and all
//! checked: thread 0's chains against the host's, the copy against STREAM's check. A device
//! without shaderFloat16 or the integer dot product keeps its other peaks and a note.

use super::{VulkanBackend, VulkanTimer};
use crate::backend::gpu::{
    Arg, GpuDevice, GpuTimer, Grid, RawBuffer, download, stream::GpuStreamKernel, zeroed,
};
use crate::backend::{BackendKind, TimedWorkload};
use crate::system::peak::{Peak, PeakMetric};
use crate::workload::{DType, StreamKernel, Suite};
use half::f16;
use std::time::Duration;

/// Steps per chain per round and chains per thread, as the shaders have them.
const STEPS_PER_ROUND: u64 = 16;
const CHAINS: u64 = 8;
/// The FMA shaders' constants: x = x·M + ADD, chains seeded at 0.0, 0.1, ... for thread 0.
const M: f32 = 0.999;
const ADD: f32 = 1.0e-3;
/// `peak_int8.wgsl`'s constants: the four signed byte weights, and the seed multiplier.
const WEIGHTS: u32 = 0x5bc3_27e9;
const GOLDEN: u32 = 0x9e37_79b9;
/// Time one measurement should take at least: a submission costs milliseconds on some
/// drivers (about 20 ms on lavapipe here), which a short run would count as compute.
const MIN_TIME: Duration = Duration::from_millis(100);

/// One vkpeak-style kernel: what it measures and how its thread 0 is checked.
struct PeakKernel {
    kernel: &'static str,
    dtype: DType,
    metric: PeakMetric,
    /// Operations per chain step: 2 for an FMA, 8 for a 4×int8 dot product plus its add.
    ops_per_step: u64,
    what: &'static str,
    /// Thread 0's 32-bit result against the host's replay of its chains after `rounds`.
    check: fn(u32, u32) -> Result<(), String>,
}

const KERNELS: [PeakKernel; 3] = [
    PeakKernel {
        kernel: "peak_fma_f32",
        dtype: DType::F32,
        metric: PeakMetric::FlopsPerSecond,
        ops_per_step: 2,
        what: "8 independent f32 FMA chains per thread",
        check: check_f32,
    },
    PeakKernel {
        kernel: "peak_fma_f16",
        dtype: DType::F16,
        metric: PeakMetric::FlopsPerSecond,
        ops_per_step: 2,
        what: "8 independent f16 FMA chains per thread as two vec4<f16> (shaderFloat16)",
        check: check_f16,
    },
    PeakKernel {
        kernel: "peak_dot_i8",
        dtype: DType::Int8,
        metric: PeakMetric::IntOpsPerSecond,
        ops_per_step: 8,
        what: "8 dependent chains per thread of packed 4x int8 dot products \
               (dot4I8Packed, OpSDot; 8 ops each)",
        check: check_int8,
    },
];

/// The measured compute peaks and copy bandwidth of the Vulkan device, and why any of them
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
    for peak in &KERNELS {
        match chain_peak(&vk, peak) {
            Ok((rate, threads)) => peaks.push(Peak {
                backend: BackendKind::Vulkan,
                device: device.clone(),
                metric: peak.metric,
                dtype: Some(peak.dtype),
                theoretical: None,
                measured: Some(rate),
                source: format!(
                    "measured: {}, {threads} threads, timestamp queries (vkpeak-style; \
                     Vulkan reports no clock for a theoretical figure)",
                    peak.what
                ),
            }),
            Err(why) => notes.push(format!("Vulkan {} peak not measured: {why}", peak.dtype)),
        }
    }
    // The copy is f64 STREAM: a device without shaderFloat64 (Intel Arc) keeps its compute
    // peaks and this note.
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

/// Operations per second of one peak kernel, and the threads it ran: rounds grow fourfold
/// until one launch takes `MIN_TIME`, then thread 0 is checked.
fn chain_peak(vk: &VulkanBackend, peak: &PeakKernel) -> Result<(f64, u64), String> {
    let groups: u32 = if vk.is_cpu_driver() { 64 } else { 4096 };
    let threads = groups as u64 * 256;
    let out = zeroed::<u32>(vk, threads as usize).map_err(|e| e.to_string())?;
    let timer = VulkanTimer::new(vk, false);
    let grid = Grid {
        blocks: (groups, 1, 1),
        threads: 256,
    };
    let mut rounds: u32 = 256;
    loop {
        let args = [Arg::Ptr(out.ptr), Arg::I32(rounds as i32), Arg::I32(0)];
        let elapsed = timer
            .time(1, &mut || vk.launch(peak.kernel, grid, &args))
            .map_err(|e| e.to_string())?;
        if elapsed >= MIN_TIME || rounds >= 1 << 20 {
            (peak.check)(first_word(vk, &out)?, rounds)?;
            let ops = threads * rounds as u64 * STEPS_PER_ROUND * CHAINS * peak.ops_per_step;
            return Ok((ops as f64 / elapsed.as_secs_f64(), threads));
        }
        rounds *= 4;
    }
}

fn first_word(vk: &VulkanBackend, out: &RawBuffer) -> Result<u32, String> {
    let words = download::<u32>(vk, out).map_err(|e| e.to_string())?;
    words
        .first()
        .copied()
        .ok_or_else(|| "the peak kernel's output is empty".to_owned())
}

/// The FMA chains of thread 0 after `rounds`, each step `fma` in the host's arithmetic.
fn fma_chains(rounds: u32, seeds: impl Iterator<Item = f32>, fma: impl Fn(f32) -> f32) -> f64 {
    let mut chains: Vec<f32> = seeds.collect();
    for _ in 0..rounds as u64 * STEPS_PER_ROUND {
        for x in chains.iter_mut() {
            *x = fma(*x);
        }
    }
    chains.iter().map(|&x| x as f64).sum()
}

fn within(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance * want.abs().max(1.0)
}

/// Thread 0's f32 sum against the same chains on the host (within rounding: a driver may
/// or may not fuse the FMA): proof the kernel ran its rounds.
fn check_f32(word: u32, rounds: u32) -> Result<(), String> {
    let got = f32::from_bits(word) as f64;
    let want = fma_chains(rounds, (0..CHAINS).map(|c| c as f32 * 0.1), |x| {
        x.mul_add(M, ADD)
    });
    if within(got, want, 1e-3) {
        Ok(())
    } else {
        Err(format!(
            "the f32 FMA peak kernel's result is {got}, expected {want} after {rounds} rounds"
        ))
    }
}

/// Thread 0's sum against the host's chains in each evaluation Vulkan allows a driver:
/// SPIR-V's `Fma` need not be fused, and f16 arithmetic may be carried out at higher
/// precision. So the chains are replayed fused in f16, unfused in f16 (the product rounded
/// to f16, then the sum: lavapipe here) and in f32 from the same f16 constants, and the
/// kernel's sum must be within 0.5 % of one of them. They settle 3 % or more apart (6.0,
/// 6.2 and 8.1 after 256 rounds), and a kernel that did not run leaves 0.0.
fn check_f16(word: u32, rounds: u32) -> Result<(), String> {
    let got = f32::from_bits(word) as f64;
    let h = |x: f32| f16::from_f32(x).to_f32();
    let seeds = || (0..CHAINS).map(move |c| h(c as f32 * 0.1));
    let (m, add) = (h(M), h(ADD));
    let replays = [
        (
            "fused f16",
            fma_chains(rounds, seeds(), |x| h(x.mul_add(m, add))),
        ),
        (
            "unfused f16",
            fma_chains(rounds, seeds(), |x| h(h(x * m) + add)),
        ),
        ("f32", fma_chains(rounds, seeds(), |x| x.mul_add(m, add))),
    ];
    if replays.iter().any(|(_, want)| within(got, *want, 5e-3)) {
        return Ok(());
    }
    let expected: Vec<String> = replays
        .iter()
        .map(|(how, want)| format!("{want} ({how})"))
        .collect();
    Err(format!(
        "the f16 FMA peak kernel's result is {got}, expected one of {} after {rounds} rounds",
        expected.join(", ")
    ))
}

/// One step of `peak_int8.wgsl`'s chains: the signed-byte dot product with the weights,
/// plus the chain's own value, wrapping as WGSL's i32 does.
fn int8_step(v: u32) -> u32 {
    let bytes = |w: u32| w.to_le_bytes().map(|b| b as i8 as i32);
    let dot: i32 = bytes(v)
        .iter()
        .zip(bytes(WEIGHTS))
        .map(|(a, b)| a * b)
        .sum();
    dot.wrapping_add(v as i32) as u32
}

/// Thread 0's xor of its eight chains, replayed exactly on the host.
fn check_int8(word: u32, rounds: u32) -> Result<(), String> {
    let mut want = 0;
    for chain in 0..CHAINS as u32 {
        let mut v = chain.wrapping_mul(GOLDEN);
        for _ in 0..rounds as u64 * STEPS_PER_ROUND {
            v = int8_step(v);
        }
        want ^= v;
    }
    if word == want {
        Ok(())
    } else {
        Err(format!(
            "the int8 dot-product peak kernel's result is {word:#010x}, expected {want:#010x} \
             after {rounds} rounds"
        ))
    }
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
