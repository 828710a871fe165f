//! A GPU backend states only what differs between vendors (its device, its GEMM library,
//! its copies, its cache and memory sizes); everything both vendors run the same way is
//! filled in once: GPU sampling by the blanket [`Backend`] implementation here, and each
//! family's axes and workloads (STREAM, tensor ops, attention, the transfer list) by that
//! family's module in `family/`, against `GpuBackend`. Before this, CUDA and ROCm each
//! carried the same thirty lines of delegation, and a new shared family meant editing
//! both.

use super::GpuDevice;
use crate::backend::{
    Backend, BackendError, BackendKind, DeviceInfo, Peer, SamplingProfile, TimedWorkload,
};
use crate::workload::alloc::AllocPattern;
use crate::workload::transfer::TransferKind;
use crate::workload::{DType, GemmShape, Suite};

/// What a GPU backend says for itself; [`Backend`] follows from it.
pub trait GpuBackend: GpuDevice + AsGpuDevice {
    /// The device workloads run on.
    fn device_info(&self) -> &DeviceInfo;

    /// Precisions the vendor's BLAS runs GEMM in.
    fn blas_dtypes(&self) -> Vec<DType>;

    /// A GEMM through the vendor's library.
    fn open_gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;

    /// A host↔device or device↔device copy through the vendor's runtime.
    fn open_transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError>;

    /// Last-level (L2) cache bytes, which decide where the bandwidth sweep starts.
    fn l2_bytes(&self) -> usize;

    /// Device memory bytes, which bound the bandwidth sweep.
    fn memory_bytes(&self) -> usize;

    /// Bytes per array of the bandwidth sweep in `suite`: from the caches and memory by
    /// default (`gpu::stream::sizes`); a backend whose device reports no cache sizes, or
    /// is a CPU behind a GPU API (Vulkan's lavapipe), states its own.
    fn gpu_stream_sizes(&self, suite: Suite) -> Vec<usize> {
        super::stream::sizes(suite, self.l2_bytes(), self.memory_bytes())
    }

    /// The buffer size of the host↔device and device↔device copies.
    fn gpu_transfer_bytes(&self) -> usize {
        crate::workload::transfer::TRANSFER_BYTES
    }

    /// GEMM shapes in `suite`: the GPU shapes, the same ids on every vendor, by default.
    fn gpu_gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        crate::workload::gemm::gpu_shapes(suite)
    }

    /// Tensor-op shapes in `suite`: the GPU shapes by default.
    fn gpu_tensor_shapes(&self, suite: Suite) -> Vec<crate::workload::tensor_ops::TensorShape> {
        super::axes::tensor_shapes(suite)
    }

    /// Attention problems in `suite`: the GPU shapes by default.
    fn gpu_attention_shapes(
        &self,
        suite: Suite,
    ) -> Vec<crate::workload::attention::AttentionShape> {
        super::axes::attention_shapes(suite)
    }

    /// Why this backend does not run `family`'s shared kernels (a family's name, e.g.
    /// `tensor_ops`), when it does not: its ids are skipped with this reason before
    /// anything is allocated.
    fn missing_family(&self, family: &str) -> Option<String> {
        let _ = family;
        None
    }

    /// The device allocators the alloc family times (`alloc/<id>/…`).
    fn allocator_ids(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// A pattern through one of [`GpuBackend::allocator_ids`] (see `gpu::alloc`).
    fn open_alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        let _ = size;
        Err(BackendError::unsupported(
            GpuDevice::kind(self),
            format!("alloc {allocator} {}", pattern.id()),
            "not implemented for this backend",
        ))
    }
}

/// A GPU backend as the [`GpuDevice`] the shared kernels take, for code that holds it
/// generically or as `dyn GpuBackend` (a trait object cannot be unsized again); every
/// device gets it from the blanket impl below, so no vendor writes it.
pub trait AsGpuDevice {
    fn as_gpu_device(&self) -> &dyn GpuDevice;
}

impl<T: GpuDevice> AsGpuDevice for T {
    fn as_gpu_device(&self) -> &dyn GpuDevice {
        self
    }
}

impl<T: GpuBackend> Backend for T {
    fn kind(&self) -> BackendKind {
        GpuDevice::kind(self)
    }

    fn device(&self) -> &DeviceInfo {
        self.device_info()
    }

    fn sampling(&self, suite: Suite) -> SamplingProfile {
        SamplingProfile::gpu(suite)
    }

    fn peer(&self) -> Peer<'_> {
        Peer::Gpu(self)
    }
}

/// The host test device as a GPU backend; the families' tests (`family/tests.rs`) check
/// that it gets every shared axis and workload from one place.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::gpu::tests::HostDevice;
    use std::sync::OnceLock;

    pub(crate) const L2_BYTES: usize = 4 << 20;
    pub(crate) const MEMORY_BYTES: usize = 16 << 30;

    /// The host test device as a backend that states only the vendor parts.
    impl GpuBackend for HostDevice {
        fn device_info(&self) -> &DeviceInfo {
            static INFO: OnceLock<DeviceInfo> = OnceLock::new();
            INFO.get_or_init(|| DeviceInfo {
                backend: BackendKind::Cuda,
                name: "host test device".into(),
                properties: Default::default(),
            })
        }
        fn blas_dtypes(&self) -> Vec<DType> {
            vec![DType::F32]
        }
        fn open_gemm(
            &self,
            _shape: GemmShape,
            dtype: DType,
        ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
            Err(BackendError::unsupported(
                BackendKind::Cuda,
                format!("gemm {dtype}"),
                "no BLAS on the host test device",
            ))
        }
        fn open_transfer(
            &self,
            kind: TransferKind,
            _bytes: usize,
        ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
            Err(BackendError::unsupported(
                BackendKind::Cuda,
                format!("transfer {kind}"),
                "no copy engine on the host test device",
            ))
        }
        fn l2_bytes(&self) -> usize {
            L2_BYTES
        }
        fn memory_bytes(&self) -> usize {
            MEMORY_BYTES
        }
    }
}
