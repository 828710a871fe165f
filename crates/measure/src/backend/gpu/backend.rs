//! A GPU backend states only what differs between vendors (its device, its GEMM library,
//! its copies, its cache and memory sizes); everything both vendors run the same way
//! (the axes, STREAM, tensor ops, attention, the transfer list, GPU sampling) is filled in
//! once here by a blanket [`Backend`] implementation. Before this, CUDA and ROCm each
//! carried the same thirty lines of delegation, and a new shared family meant editing
//! both.

use super::{GpuDevice, attention, axes, stream, tensor_ops};
use crate::backend::{
    Backend, BackendError, BackendKind, DeviceInfo, SamplingProfile, TimedWorkload,
};
use crate::workload::alloc::AllocPattern;
use crate::workload::attention::{AttentionKernel, AttentionShape};
use crate::workload::tensor_ops::{TensorOp, TensorShape};
use crate::workload::transfer::{TRANSFER_BYTES, TransferKind};
use crate::workload::{DType, GemmShape, StreamKernel, Suite};

/// What a GPU backend says for itself; [`Backend`] follows from it.
pub trait GpuBackend: GpuDevice {
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

    fn gemm_dtypes(&self) -> Vec<DType> {
        self.blas_dtypes()
    }

    fn gemm_shapes(&self, suite: Suite) -> Vec<GemmShape> {
        crate::workload::gemm::gpu_shapes(suite)
    }

    fn gemm(
        &self,
        shape: GemmShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_gemm(shape, dtype)
    }

    fn stream_sizes(&self, suite: Suite) -> Vec<usize> {
        stream::sizes(suite, self.l2_bytes(), self.memory_bytes())
    }

    fn stream(
        &self,
        kernel: StreamKernel,
        bytes_per_array: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        // The arrays are f64: eight bytes an element.
        Ok(Box::new(stream::GpuStreamKernel::new(
            self,
            kernel,
            bytes_per_array / 8,
        )?))
    }

    fn transfers(&self, _suite: Suite) -> Vec<(TransferKind, usize)> {
        TransferKind::ALL
            .into_iter()
            .map(|k| (k, TRANSFER_BYTES))
            .collect()
    }

    fn transfer(
        &self,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_transfer(kind, bytes)
    }

    fn tensor_dtypes(&self) -> Vec<DType> {
        axes::tensor_dtypes()
    }

    fn tensor_shapes(&self, suite: Suite) -> Vec<TensorShape> {
        axes::tensor_shapes(suite)
    }

    fn tensor_op(
        &self,
        op: TensorOp,
        dtype: DType,
        shape: TensorShape,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        tensor_ops::open(self, op, dtype, shape)
    }

    fn attention_dtypes(&self) -> Vec<DType> {
        axes::attention_dtypes()
    }

    fn attention_shapes(&self, suite: Suite) -> Vec<AttentionShape> {
        axes::attention_shapes(suite)
    }

    fn attention(
        &self,
        kernel: AttentionKernel,
        shape: AttentionShape,
        dtype: DType,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        attention::open(self, kernel, shape, dtype)
    }

    fn allocators(&self) -> Vec<&'static str> {
        self.allocator_ids()
    }

    fn alloc(
        &self,
        allocator: &str,
        pattern: AllocPattern,
        size: usize,
    ) -> Result<Box<dyn TimedWorkload + '_>, BackendError> {
        self.open_alloc(allocator, pattern, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::gpu::tests::HostDevice;
    use std::sync::OnceLock;

    const L2_BYTES: usize = 4 << 20;
    const MEMORY_BYTES: usize = 16 << 30;

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

    #[test]
    fn a_gpu_backend_gets_the_shared_axes_and_workloads_from_one_place() {
        let dev = HostDevice::new();
        let backend: &dyn Backend = &dev;
        assert_eq!(backend.kind(), BackendKind::Cuda);
        assert_eq!(backend.device().name, "host test device");
        assert_eq!(backend.gemm_dtypes(), vec![DType::F32]);
        assert_eq!(
            backend.sampling(Suite::Quick),
            SamplingProfile::gpu(Suite::Quick)
        );
        assert_eq!(
            backend.gemm_shapes(Suite::Quick),
            crate::workload::gemm::gpu_shapes(Suite::Quick)
        );
        assert_eq!(
            backend.stream_sizes(Suite::Full),
            stream::sizes(Suite::Full, L2_BYTES, MEMORY_BYTES)
        );
        assert_eq!(
            backend.transfers(Suite::Quick).len(),
            TransferKind::ALL.len()
        );
        assert_eq!(backend.tensor_dtypes(), axes::tensor_dtypes());
        assert_eq!(backend.attention_dtypes(), axes::attention_dtypes());
        assert_eq!(
            backend.attention_shapes(Suite::Quick),
            axes::attention_shapes(Suite::Quick)
        );
        // The vendor's own parts answer through the backend.
        let gemm = backend.gemm(GemmShape::square(64), DType::F32);
        assert!(gemm.err().is_some_and(|e| e.is_skip()));
        // Tensor ops and attention reach the shared kernels: the device sees their launches.
        let mut op = backend
            .tensor_op(TensorOp::Add, DType::F32, TensorShape::new(4, 8))
            .unwrap();
        assert!(op.verify().err().is_some_and(|e| e.is_skip()));
        let shape = AttentionShape::new(1, 1, 16, 64, false);
        if let Ok(mut attn) = backend.attention(AttentionKernel::Flash, shape, DType::F32) {
            assert!(attn.verify().is_err());
        }
        let launches = dev.launches.borrow();
        assert_eq!(launches.first().map(String::as_str), Some("add_f32"));
    }
}
