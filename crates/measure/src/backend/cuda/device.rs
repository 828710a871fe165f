//! What every CUDA workload shares: device memory as raw pointers on the backend's one
//! stream, event timing with the L2 flushed before each sample (outside the timed window),
//! SM clock readings at the edges of each benchmark, and page-locked host buffers.

use super::CudaBackend;
use super::nvml::ClockWindow;
use crate::backend::gpu::GpuTimer;
use crate::backend::{BackendError, BackendKind};
use cudarc::driver::sys::{CUdeviceptr, CUevent, CUresult, CUstream};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DeviceRepr, result, sys};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

/// Wraps a CUDA library error with what was being done.
pub fn device_error(context: impl Into<String>) -> impl FnOnce(String) -> BackendError {
    let context = context.into();
    move |message| BackendError::Device {
        backend: BackendKind::Cuda,
        context,
        message,
    }
}

/// `Debug` text of any cudarc error, for [`device_error`].
pub fn text<E: std::fmt::Debug>(error: E) -> String {
    format!("{error:?}")
}

/// A device buffer and its raw address, for kernel arguments and library calls. Event
/// tracking is off in the backend's context (one stream), so the address is all we need.
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
    pub ptr: CUdeviceptr,
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Uploads `host` into a new buffer (synchronous: the host data may be dropped after).
    pub fn upload(dev: &CudaBackend, host: &[T]) -> Result<Self, BackendError> {
        let slice = dev
            .stream
            .clone_htod(host)
            .map_err(|e| device_error("upload")(text(e)))?;
        dev.stream
            .synchronize()
            .map_err(|e| device_error("upload")(text(e)))?;
        Ok(Self::wrap(dev, slice))
    }

    /// A buffer of `len` elements, zeroed (kernels under test overwrite it).
    pub fn zeroed(dev: &CudaBackend, len: usize) -> Result<Self, BackendError>
    where
        T: cudarc::driver::ValidAsZeroBits,
    {
        Self::zeroed_on(&dev.stream, len)
    }

    /// As [`Self::zeroed`], on a stream before the backend exists.
    pub fn zeroed_on(stream: &Arc<CudaStream>, len: usize) -> Result<Self, BackendError>
    where
        T: cudarc::driver::ValidAsZeroBits,
    {
        let slice = stream
            .alloc_zeros::<T>(len.max(1))
            .map_err(|e| device_error(format!("allocating {len} elements"))(text(e)))?;
        let ptr = raw_ptr(&slice, stream);
        Ok(DeviceBuffer { slice, ptr })
    }

    fn wrap(dev: &CudaBackend, slice: CudaSlice<T>) -> Self {
        let ptr = raw_ptr(&slice, &dev.stream);
        DeviceBuffer { slice, ptr }
    }

    /// Copies the buffer back (synchronous).
    pub fn download(&self, dev: &CudaBackend) -> Result<Vec<T>, BackendError> {
        dev.stream
            .clone_dtoh(&self.slice)
            .map_err(|e| device_error("download")(text(e)))
    }

    pub fn len(&self) -> usize {
        self.slice.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.slice.num_bytes()
    }
}

/// The device address of a slice. Event tracking is off, so the guard cudarc returns with
/// it has nothing to record and is dropped at once.
fn raw_ptr<T>(slice: &CudaSlice<T>, stream: &Arc<CudaStream>) -> CUdeviceptr {
    let (ptr, _no_sync) = slice.device_ptr(stream);
    ptr
}

/// `cuEventElapsedTime`, by whichever name the installed driver exports. cudarc's 13.0
/// bindings call only the `_v2` entry point, which drivers before 12.8 lack; the driver
/// keeps the original one for older binaries, so either works where it exists.
fn elapsed_ms(start: CUevent, end: CUevent) -> Result<f32, String> {
    type ElapsedFn = unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> CUresult;
    // SAFETY: the driver library is loaded (the backend exists); the type matches the C API.
    let lib = unsafe { sys::culib() };
    let function = unsafe {
        lib.get::<ElapsedFn>(b"cuEventElapsedTime_v2\0")
            .or_else(|_| lib.get::<ElapsedFn>(b"cuEventElapsedTime\0"))
            .map(|f| *f)
            .map_err(|e| e.to_string())?
    };
    let mut ms = 0f32;
    // SAFETY: both events were created by this context and recorded on one stream.
    let status = unsafe { function(&mut ms, start, end) };
    if status == CUresult::CUDA_SUCCESS {
        Ok(ms)
    } else {
        Err(format!("cuEventElapsedTime returned {status:?}"))
    }
}

/// Times one workload on the device: a pair of timing events, the clock window, and the
/// L2 flush that precedes each sample.
pub struct DeviceTimer<'a> {
    dev: &'a CudaBackend,
    start: CudaEvent,
    end: CudaEvent,
    clocks: std::cell::RefCell<ClockWindow>,
    warned: std::cell::Cell<bool>,
    /// Whether `run` flushes L2 before each sample (not for transfers: they never hit L2).
    flush_l2: bool,
}

impl<'a> DeviceTimer<'a> {
    pub fn new(dev: &'a CudaBackend, flush_l2: bool) -> Result<Self, BackendError> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let make = || {
            dev.ctx
                .new_event(flags)
                .map_err(|e| device_error("creating a timing event")(text(e)))
        };
        Ok(DeviceTimer {
            dev,
            start: make()?,
            end: make()?,
            clocks: std::cell::RefCell::new(ClockWindow::default()),
            warned: std::cell::Cell::new(false),
            flush_l2,
        })
    }
}

impl DeviceTimer<'_> {
    /// Says on the terminal, once per benchmark, that the GPU was held below its clock:
    /// the record's notes carry it too, but a reader watching the run should know now.
    fn warn_once_if_throttled(&self) {
        if self.warned.get() {
            return;
        }
        let verdict = self.clocks.borrow().verdict(self.dev.reference_clock);
        if let Some(v) = verdict.filter(|v| v.throttled) {
            self.warned.set(true);
            eprintln!("warning: GPU throttled during this benchmark: {}", v.why);
        }
    }
}

impl GpuTimer for DeviceTimer<'_> {
    /// Flushes L2, then times `iters` calls of `launch` between two events on the stream.
    /// `launch` only enqueues work: nothing synchronises inside the window.
    fn time(
        &self,
        iters: u64,
        launch: &mut dyn FnMut() -> Result<(), BackendError>,
    ) -> Result<Duration, BackendError> {
        let dev = self.dev;
        if self.flush_l2 {
            dev.flush_l2()?;
        }
        let record = |event: &CudaEvent| {
            event
                .record(&dev.stream)
                .map_err(|e| device_error("recording an event")(text(e)))
        };
        record(&self.start)?;
        for _ in 0..iters {
            launch()?;
        }
        record(&self.end)?;
        // The work is queued and running: a clock read now sees the busy clock (a read
        // before the launches saw the idle one). NVML answers from the host in
        // microseconds and does not touch the stream, so the events are unaffected.
        self.clocks.borrow_mut().sample_busy(dev.read_clock());
        self.end
            .synchronize()
            .map_err(|e| device_error("waiting for the timed work")(text(e)))?;
        let ms = elapsed_ms(self.start.cu_event(), self.end.cu_event())
            .map_err(device_error("reading the event timer"))?;
        self.warn_once_if_throttled();
        Ok(Duration::from_secs_f64(ms as f64 / 1e3))
    }

    /// Clock and throttling notes for the benchmark's record.
    fn notes(&self, out: &mut BTreeMap<String, serde_json::Value>) {
        self.clocks.borrow().notes(self.dev.reference_clock, out);
        out.insert("l2_flushed_before_each_sample".into(), self.flush_l2.into());
        out.insert("timing".into(), "CUDA events".into());
    }
}

/// Page-locked host memory from `cuMemHostAlloc` with no flags: cacheable, unlike cudarc's
/// default write-combined pinned memory, which is very slow for the CPU to read.
pub struct PinnedBuffer {
    ptr: *mut u8,
    len: usize,
}

impl PinnedBuffer {
    pub fn new(len: usize) -> Result<Self, BackendError> {
        // SAFETY: allocates `len` bytes; freed in Drop.
        let ptr = unsafe { result::malloc_host(len.max(1), 0) }
            .map_err(|e| device_error(format!("pinning {len} host bytes"))(text(e)))?;
        let ptr = ptr as *mut u8;
        // SAFETY: the allocation holds at least `len` bytes; zeroing makes every later
        // slice view initialised memory.
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        Ok(PinnedBuffer { ptr, len })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the allocation holds `len` initialised bytes (zeroed in `new`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemHostAlloc in `new`. An error here cannot be handled.
        let _ = unsafe { result::free_host(self.ptr as *mut c_void) };
    }
}

/// Raw stream handle for library calls that take one.
pub fn raw_stream(dev: &CudaBackend) -> CUstream {
    dev.stream.cu_stream()
}
