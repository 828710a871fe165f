//! placeholder
use super::Availability;
pub fn probe() -> Availability {
    Availability::Unavailable { reason: "x".into() }
}
pub struct CudaBackend;
impl CudaBackend {
    pub fn open() -> Result<Self, String> {
        Err("x".into())
    }
}
impl super::Backend for CudaBackend {
    fn kind(&self) -> super::BackendKind {
        todo!()
    }
    fn device(&self) -> &super::DeviceInfo {
        todo!()
    }
    fn sampling(&self, _s: crate::workload::Suite) -> super::SamplingProfile {
        todo!()
    }
    fn gemm_dtypes(&self) -> Vec<crate::workload::DType> {
        todo!()
    }
    fn gemm_shapes(&self, _s: crate::workload::Suite) -> Vec<crate::workload::GemmShape> {
        todo!()
    }
    fn stream_sizes(&self, _s: crate::workload::Suite) -> Vec<usize> {
        todo!()
    }
}
