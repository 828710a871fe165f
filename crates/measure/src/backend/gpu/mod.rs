//! What the CUDA and ROCm backends share: the workloads that run stackbench's own kernels
//! (STREAM, tensor ops, attention) written once against [`GpuDevice`], a small interface
//! of raw device buffers, kernel launches, event timing and one batched GEMM.
//!
//! Why raw buffers: cudarc and rocmrc each have their own slice and `DeviceRepr` types.
//! The workloads only need an address to pass to a kernel and bytes to move, so a buffer
//! here is its device address plus the vendor slice that owns the memory (type-erased);
//! typed uploads and downloads go through [`Pod`] byte views.

pub mod alloc;
pub mod attention;
pub(crate) mod backend;
pub(crate) mod checked;
pub mod emulator;
pub mod kernels;
pub mod library;
pub(crate) mod open;
pub mod stream;
pub mod tensor_ops;

pub use backend::{AsGpuDevice, GpuBackend};

/// The axes both GPU backends cover: one decision, so NVIDIA and AMD numbers stay comparable.
pub mod axes {
    use crate::workload::attention::{self as attn, AttentionShape};
    use crate::workload::tensor_ops::{self as tops, TensorShape};
    use crate::workload::{DType, Suite};

    pub fn tensor_dtypes() -> Vec<DType> {
        tops::DTYPES.to_vec()
    }

    pub fn tensor_shapes(suite: Suite) -> Vec<TensorShape> {
        if suite.is_full() {
            tops::shapes(tops::GPU_ROWS, true)
        } else {
            // 16384 × 4096: 256 MiB of f32 per tensor, well past any L2.
            tops::shapes(&tops::GPU_ROWS[2..3], false)
        }
    }

    pub fn attention_dtypes() -> Vec<DType> {
        vec![DType::F32, DType::F16, DType::Bf16]
    }

    pub fn attention_shapes(suite: Suite) -> Vec<AttentionShape> {
        attn::shapes(
            attn::GPU_SEQ_LENS,
            &[1024, 4096],
            attn::GPU_HEADS,
            attn::GPU_HEAD_DIM,
            suite.is_full(),
        )
    }
}

use crate::backend::{BackendError, BackendKind};
use crate::workload::DType;
use std::any::Any;
use std::collections::BTreeMap;
use std::time::Duration;

/// Plain data a kernel reads: any bit pattern is a value and there is no padding, so a
/// slice of it may be viewed as bytes and rebuilt from bytes.
///
/// # Safety
/// Implement only for types with no padding and no invalid bit patterns.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
// SAFETY: primitive numbers and the `half` types (transparent u16) satisfy the contract.
unsafe impl Pod for u8 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for f32 {}
unsafe impl Pod for f64 {}
unsafe impl Pod for half::f16 {}
unsafe impl Pod for half::bf16 {}

/// Device memory: its address and the vendor allocation that owns it (freed on drop).
pub struct RawBuffer {
    pub ptr: u64,
    pub bytes: usize,
    _owner: Box<dyn Any>,
}

impl RawBuffer {
    /// Wraps a vendor allocation; `owner` must keep `bytes` bytes at `ptr` alive.
    pub fn new(ptr: u64, bytes: usize, owner: Box<dyn Any>) -> Self {
        RawBuffer {
            ptr,
            bytes,
            _owner: owner,
        }
    }
}

/// Kernel arguments of the types stackbench's kernels take.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Ptr(u64),
    U64(u64),
    I32(i32),
    F32(f32),
    F64(f64),
}

/// A launch shape, vendor-neutral.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub blocks: (u32, u32, u32),
    pub threads: u32,
}

/// One strided-batched GEMM, column-major (the BLAS convention): for each of `batch`
/// problems, C = alpha·op(A)·op(B), all in `dtype` with f32 accumulation.
#[derive(Clone, Copy, Debug)]
pub struct BatchedGemm {
    pub dtype: DType,
    pub transpose_a: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub a: u64,
    pub lda: usize,
    pub stride_a: usize,
    pub b: u64,
    pub ldb: usize,
    pub stride_b: usize,
    pub c: u64,
    pub ldc: usize,
    pub stride_c: usize,
    pub batch: usize,
}

/// Host pointers to the scalars alpha = 1 and beta = 0 of a float GEMM in `dtype`, in its
/// compute type's precision: f64 for f64, f32 for every other precision. They point at
/// statics, so they outlive any call that reads them.
pub(crate) fn unit_scalars(dtype: DType) -> (*const std::ffi::c_void, *const std::ffi::c_void) {
    static F64: [f64; 2] = [1.0, 0.0];
    static F32: [f32; 2] = [1.0, 0.0];
    if dtype == DType::F64 {
        (F64.as_ptr().cast(), F64[1..].as_ptr().cast())
    } else {
        (F32.as_ptr().cast(), F32[1..].as_ptr().cast())
    }
}

/// Times work on a device: events around `iters` enqueued calls, the cache flushed
/// before the start event where asked.
pub trait GpuTimer {
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError>;

    /// Clock, throttling and method notes for the benchmark's record.
    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>);
}

/// What the shared workloads need from a GPU backend.
pub trait GpuDevice {
    fn kind(&self) -> BackendKind;
    /// SMs (NVIDIA) or compute units (AMD): sizes grid-stride launches.
    fn units(&self) -> u32;
    fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError>;
    /// Copies `bytes` to a new buffer and waits for the copy.
    fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError>;
    /// Copies the whole buffer back, after the work queued before it.
    fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError>;
    /// Enqueues kernel `name` from stackbench's compiled source.
    fn launch(&self, name: &str, grid: Grid, args: &[Arg]) -> Result<(), BackendError>;
    fn batched_gemm(&self, gemm: &BatchedGemm) -> Result<(), BackendError>;
    fn synchronize(&self) -> Result<(), BackendError>;
    fn timer(&self, flush_cache: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError>;
    /// A recorded skip when `bytes` more would not fit on the device.
    fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError>;
    /// Free device memory now, when the driver says.
    fn free_memory(&self) -> Option<u64>;
    /// A recorded skip when this device has no kernel `name`, asked before a workload
    /// allocates its tensors (CUDA, ROCm and the emulator compile every kernel of the
    /// source; Vulkan has the ones written in WGSL).
    fn has_kernel(&self, name: &str) -> Result<(), BackendError> {
        let _ = name;
        Ok(())
    }
}

/// Uploads a typed slice.
pub fn upload<T: Pod>(dev: &dyn GpuDevice, values: &[T]) -> Result<RawBuffer, BackendError> {
    // SAFETY: `T: Pod` has no padding, so its memory is initialised bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
    };
    dev.upload_bytes(bytes)
}

/// Downloads a buffer as `T`s.
pub fn download<T: Pod>(dev: &dyn GpuDevice, buffer: &RawBuffer) -> Result<Vec<T>, BackendError> {
    let bytes = dev.download_bytes(buffer)?;
    let len = bytes.len() / std::mem::size_of::<T>();
    let mut out: Vec<T> = Vec::with_capacity(len);
    // SAFETY: `out` has room for `len` values; any bit pattern is a valid `T: Pod`.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            out.as_mut_ptr() as *mut u8,
            len * std::mem::size_of::<T>(),
        );
        out.set_len(len);
    }
    Ok(out)
}

/// A buffer of `len` zeroed `T`s.
pub fn zeroed<T: Pod>(dev: &dyn GpuDevice, len: usize) -> Result<RawBuffer, BackendError> {
    dev.alloc_zeroed(len.max(1) * std::mem::size_of::<T>())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A device whose memory is host memory and which has no kernels: exercises the
    /// typed transfers and how the shared workloads report a device that cannot run them.
    pub struct HostDevice {
        pub(crate) launches: RefCell<Vec<String>>,
    }

    impl HostDevice {
        pub fn new() -> Self {
            HostDevice {
                launches: RefCell::new(Vec::new()),
            }
        }
    }

    impl GpuDevice for HostDevice {
        fn kind(&self) -> BackendKind {
            BackendKind::Cuda
        }
        fn units(&self) -> u32 {
            4
        }
        fn alloc_zeroed(&self, bytes: usize) -> Result<RawBuffer, BackendError> {
            self.upload_bytes(&vec![0u8; bytes])
        }
        fn upload_bytes(&self, bytes: &[u8]) -> Result<RawBuffer, BackendError> {
            let owned: Box<Vec<u8>> = Box::new(bytes.to_vec());
            let ptr = owned.as_ptr() as u64;
            Ok(RawBuffer::new(ptr, bytes.len(), owned))
        }
        fn download_bytes(&self, buffer: &RawBuffer) -> Result<Vec<u8>, BackendError> {
            // SAFETY: `ptr` is the data of the Vec the buffer owns, `bytes` long.
            Ok(
                unsafe { std::slice::from_raw_parts(buffer.ptr as *const u8, buffer.bytes) }
                    .to_vec(),
            )
        }
        fn launch(&self, name: &str, _grid: Grid, _args: &[Arg]) -> Result<(), BackendError> {
            self.launches.borrow_mut().push(name.to_owned());
            Err(BackendError::unsupported(
                BackendKind::Cuda,
                name,
                "host test device has no kernels",
            ))
        }
        fn batched_gemm(&self, _gemm: &BatchedGemm) -> Result<(), BackendError> {
            Err(BackendError::unsupported(
                BackendKind::Cuda,
                "batched gemm",
                "host test device",
            ))
        }
        fn synchronize(&self) -> Result<(), BackendError> {
            Ok(())
        }
        fn timer(&self, _flush: bool) -> Result<Box<dyn GpuTimer + '_>, BackendError> {
            Ok(Box::new(HostTimer))
        }
        fn fits(&self, bytes: u64, what: &str) -> Result<(), BackendError> {
            if bytes > 1 << 30 {
                return Err(BackendError::unsupported(
                    BackendKind::Cuda,
                    what,
                    "too big for the test",
                ));
            }
            Ok(())
        }
        fn free_memory(&self) -> Option<u64> {
            None
        }
    }

    struct HostTimer;

    impl GpuTimer for HostTimer {
        fn time(
            &self,
            iters: u64,
            launch: &mut dyn FnMut() -> Result<(), BackendError>,
        ) -> Result<Duration, BackendError> {
            let start = std::time::Instant::now();
            for _ in 0..iters {
                launch()?;
            }
            Ok(start.elapsed())
        }

        fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
            out.insert("timing".into(), "host".into());
        }
    }

    #[test]
    fn typed_uploads_and_downloads_round_trip() {
        let dev = HostDevice::new();
        let values = [half::bf16::from_f32(1.5), half::bf16::from_f32(-3.0)];
        let buffer = upload(&dev, &values).unwrap();
        assert_eq!(buffer.bytes, 4);
        assert_eq!(download::<half::bf16>(&dev, &buffer).unwrap(), values);
        let z = zeroed::<f64>(&dev, 3).unwrap();
        assert_eq!(download::<f64>(&dev, &z).unwrap(), vec![0.0; 3]);
    }

    #[test]
    fn a_device_without_kernels_is_a_recorded_skip() {
        use crate::workload::tensor_ops::{TensorOp, TensorShape};
        let dev = HostDevice::new();
        let mut w =
            tensor_ops::open(&dev, TensorOp::Add, DType::F32, TensorShape::new(4, 8)).unwrap();
        let err = w.verify().err().unwrap();
        assert!(err.is_skip(), "{err}");
        assert_eq!(dev.launches.borrow().as_slice(), ["add_f32"]);
        let too_big = tensor_ops::open(
            &dev,
            TensorOp::Add,
            DType::F32,
            TensorShape::new(1 << 16, 1 << 14),
        );
        assert!(too_big.err().unwrap().is_skip());
    }
}
