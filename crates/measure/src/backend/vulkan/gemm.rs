//! GEMM on Vulkan: stackbench's own tiled WGSL kernel (`shaders/gemm.wgsl`, 64×64 blocks
//! through workgroup memory, 4×4 per thread), C = A·B row-major, in f32 or f16 (f16
//! storage, f32 accumulation: the `torch.matmul` contract), checked against the f64 product
//! of the stored inputs, as the CUDA and ROCm GEMMs are, before it is timed.

use super::{VulkanBackend, VulkanTimer};
use crate::backend::gpu::checked::{check_float_gemm, close_notes};
use crate::backend::gpu::{Arg, GpuDevice, GpuTimer, Grid, RawBuffer, download, upload, zeroed};
use crate::backend::{BackendError, BackendKind, TimedWorkload, keep_accuracy};
use crate::workload::gemm::bench_id as gemm_id;
use crate::workload::random::normal_f64;
use crate::workload::{Accuracy, DType, GemmShape};
use half::f16;
use std::collections::BTreeMap;
use std::time::Duration;

const SEED_A: u64 = 0x0B0C_A00A;
const SEED_B: u64 = 0x0B0C_A00B;
/// The kernel's block of C and its step over K.
const TILE: usize = 64;
const TILE_K: usize = 16;
const LIBRARY: &str = "stackbench's tiled WGSL GEMM (64x64 blocks, 4x4 per thread)";

pub struct VulkanGemm<'a> {
    dev: &'a VulkanBackend,
    shape: GemmShape,
    dtype: DType,
    a_dev: RawBuffer,
    b_dev: RawBuffer,
    c_dev: RawBuffer,
    /// A and B as the kernel reads them, for the one check (taken by it: large shapes
    /// hold gigabytes of them).
    inputs: Option<(Vec<f64>, Vec<f64>)>,
    timer: VulkanTimer<'a>,
    accuracy: Option<Accuracy>,
}

impl<'a> VulkanGemm<'a> {
    pub fn new(
        dev: &'a VulkanBackend,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Self, BackendError> {
        let GemmShape { m, n, k } = shape;
        let what = || format!("gemm {dtype} {shape}");
        if !matches!(dtype, DType::F32 | DType::F16) {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                what(),
                "the Vulkan GEMM runs f32 and f16",
            ));
        }
        if m % TILE != 0 || n % TILE != 0 || k % TILE_K != 0 {
            return Err(BackendError::unsupported(
                BackendKind::Vulkan,
                what(),
                format!("the tiled kernel needs M and N multiples of {TILE} and K of {TILE_K}"),
            ));
        }
        let element = if dtype == DType::F16 { 2 } else { 4 };
        dev.fits(((m * k + k * n + m * n) * element) as u64, &what())?;
        let a64 = normal_f64(SEED_A, m * k);
        let b64 = normal_f64(SEED_B, k * n);
        let (a_dev, a) = upload_as(dev, &a64, dtype)?;
        let (b_dev, b) = upload_as(dev, &b64, dtype)?;
        let c_dev = if dtype == DType::F16 {
            zeroed::<f16>(dev, m * n)?
        } else {
            zeroed::<f32>(dev, m * n)?
        };
        Ok(VulkanGemm {
            dev,
            shape,
            dtype,
            a_dev,
            b_dev,
            c_dev,
            inputs: Some((a, b)),
            timer: VulkanTimer::new(dev, true),
            accuracy: None,
        })
    }

    fn launch(&self) -> Result<(), BackendError> {
        let GemmShape { m, n, k } = self.shape;
        let grid = Grid {
            blocks: ((n / TILE) as u32, (m / TILE) as u32, 1),
            threads: 256,
        };
        let packed_f16 = usize::from(self.dtype == DType::F16);
        let dims = [m, n, k, packed_f16].map(|d| Arg::I32(d as i32));
        let args = [
            Arg::Ptr(self.a_dev.ptr),
            Arg::Ptr(self.b_dev.ptr),
            Arg::Ptr(self.c_dev.ptr),
            dims[0],
            dims[1],
            dims[2],
            dims[3],
        ];
        self.dev.launch("gemm", grid, &args)
    }

    fn result(&self) -> Result<Vec<f64>, BackendError> {
        Ok(if self.dtype == DType::F16 {
            download::<f16>(self.dev, &self.c_dev)?
                .into_iter()
                .map(f16::to_f64)
                .collect()
        } else {
            download::<f32>(self.dev, &self.c_dev)?
                .into_iter()
                .map(f64::from)
                .collect()
        })
    }
}

/// Rounds f64 inputs to the storage type, uploads them, and returns the rounded values.
fn upload_as(
    dev: &VulkanBackend,
    values: &[f64],
    dtype: DType,
) -> Result<(RawBuffer, Vec<f64>), BackendError> {
    if dtype == DType::F16 {
        let stored: Vec<f16> = values.iter().map(|&v| f16::from_f64(v)).collect();
        let rounded = stored.iter().map(|v| v.to_f64()).collect();
        Ok((upload(dev, &stored)?, rounded))
    } else {
        let stored: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        let rounded = stored.iter().map(|&v| v as f64).collect();
        Ok((upload(dev, &stored)?, rounded))
    }
}

impl TimedWorkload for VulkanGemm<'_> {
    fn verify(&mut self) -> Result<(), BackendError> {
        let (shape, dtype) = (self.shape, self.dtype);
        let id = gemm_id("vulkan", dtype, shape);
        let (a, b) = self.inputs.take().ok_or_else(|| {
            BackendError::mismatch(&id, "checked once already: its inputs were released")
        })?;
        self.launch()?;
        self.dev.synchronize()?;
        let c = self.result()?;
        let checked = check_float_gemm(shape, dtype, [&a, &b, &c], SEED_A ^ SEED_B);
        keep_accuracy(&mut self.accuracy, &id, checked)
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let path = if self.dtype == DType::F16 {
            "f16 storage, f32 arithmetic and accumulation (unpack2x16float); no \
             shaderFloat16, no cooperative matrices"
        } else {
            "f32 FMA, no cooperative matrices"
        };
        let mut notes: BTreeMap<String, serde_json::Value> = [("library", LIBRARY), ("path", path)]
            .into_iter()
            .map(|(key, text)| (key.to_owned(), text.into()))
            .collect();
        close_notes(&mut notes, self.accuracy.as_ref(), &self.timer);
        notes
    }
}
