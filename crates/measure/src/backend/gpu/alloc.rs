//! The device allocators (`cuMemAlloc`, the CUDA stream-ordered pool, `hipMalloc`) timed on
//! the allocation patterns, written once against [`DeviceAllocator`], so NVIDIA and AMD
//! run the same rounds, checks and notes.
//!
//! An allocation call is host work that ends when the call returns (`cuMemAlloc`,
//! `hipMalloc` synchronise with the device as they need), so rounds are timed with the host
//! clock; a stream-ordered allocator's work can trail its calls, so [`DeviceAllocator::settle`]
//! (a stream synchronize) runs inside the timed window after the last round.
//!
//! What the figures are: the driver exposes the device's used memory (`total − free`),
//! read after every call of one untimed round, which gives the peak the round reserved
//! from the device; allocated is what the pattern asked for (the raw allocators keep no
//! count of their own). A pool that reports its high-water marks (`cuMemPoolGetAttribute`)
//! gives reserved and used from itself. None of these allocators exposes its free blocks,
//! so fragmentation is absent with that reason, never a 0.

use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::BenchId;
use crate::workload::alloc::{self, AllocPattern, Op, Program, notes};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// High-water marks a pool reports about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolPeaks {
    pub reserved_bytes: u64,
    pub used_bytes: u64,
}

/// One device allocator.
pub trait DeviceAllocator {
    fn backend(&self) -> BackendKind;
    /// The id's second part (`cuda`, `cuda_async`, `rocm`).
    fn id(&self) -> &'static str;
    /// What the allocator is, for the notes (`cuMemAlloc_v2 / cuMemFree_v2`).
    fn describe(&self) -> String;
    /// Allocates `bytes` of device memory.
    fn alloc(&self, bytes: usize) -> Result<u64, String>;
    /// Frees a block from [`DeviceAllocator::alloc`].
    fn free(&self, ptr: u64) -> Result<(), String>;
    /// Waits for work the calls left behind (a stream synchronize); timed.
    fn settle(&self) -> Result<(), String> {
        Ok(())
    }
    /// The device's (free, total) memory.
    fn memory(&self) -> Result<(u64, u64), String>;
    /// Writes `value` to the byte at `ptr + offset` and reads it back.
    fn roundtrip_byte(&self, ptr: u64, offset: usize, value: u8) -> Result<u8, String>;
    /// Resets a pool's high-water marks; `false` when the allocator keeps none.
    fn reset_pool_peaks(&self) -> Result<bool, String> {
        Ok(false)
    }
    fn pool_peaks(&self) -> Result<Option<PoolPeaks>, String> {
        Ok(None)
    }
    /// Facts about the allocator's settings worth keeping (a pool's release threshold).
    fn facts(&self) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
}

/// Headroom kept free beyond a pattern's peak, so the benchmark never starves the device.
const HEADROOM_BYTES: u64 = 512 << 20;

/// A pattern on a device allocator.
pub struct DeviceAllocWorkload<A: DeviceAllocator> {
    allocator: A,
    id: BenchId,
    program: Program,
    ptrs: Vec<u64>,
    observed: BTreeMap<String, Value>,
}

impl<A: DeviceAllocator> DeviceAllocWorkload<A> {
    /// Prepares the pattern; a device without room for its peak skips it with the figures.
    pub fn new(allocator: A, pattern: AllocPattern, size: usize) -> Result<Self, BackendError> {
        let id = alloc::bench_id(allocator.id(), pattern, size);
        let program = pattern.program(size);
        program
            .check()
            .map_err(|detail| BackendError::mismatch(&id, detail))?;
        let (free, _) = allocator
            .memory()
            .map_err(|m| device_error(&allocator, &id, "reading free memory", m))?;
        let needed = program.peak_requested_bytes() + HEADROOM_BYTES;
        if needed > free {
            return Err(BackendError::unsupported(
                allocator.backend(),
                id.full(),
                format!(
                    "the pattern holds up to {} bytes at once (+{HEADROOM_BYTES} headroom); \
                     the device has {free} free",
                    program.peak_requested_bytes()
                ),
            ));
        }
        let ptrs = vec![0; program.slots];
        Ok(DeviceAllocWorkload {
            allocator,
            id,
            program,
            ptrs,
            observed: BTreeMap::new(),
        })
    }

    fn error(&self, context: &str, message: String) -> BackendError {
        device_error(&self.allocator, &self.id, context, message)
    }

    #[inline(always)]
    fn apply(&mut self, op: Op) -> Result<(), String> {
        match op {
            Op::Alloc { slot, bytes } => {
                let ptr = self.allocator.alloc(bytes)?;
                if ptr == 0 {
                    return Err(format!("allocating {bytes} bytes returned a null pointer"));
                }
                self.ptrs[slot] = ptr;
            }
            Op::Free { slot } => {
                let ptr = std::mem::take(&mut self.ptrs[slot]);
                self.allocator.free(ptr)?;
            }
        }
        Ok(())
    }

    /// Frees whatever a failed round left; errors here are secondary to the one reported.
    fn release(&mut self) {
        for slot in 0..self.ptrs.len() {
            let ptr = std::mem::take(&mut self.ptrs[slot]);
            if ptr != 0 {
                let _ = self.allocator.free(ptr);
            }
        }
        let _ = self.allocator.settle();
    }

    /// One untimed round, every block checked (non-null, disjoint from the live ones,
    /// writable at both ends), the device's used memory read after every call.
    fn checked_round(&mut self) -> Result<(), String> {
        let (free_before, total) = self.allocator.memory()?;
        let used_before = total.saturating_sub(free_before);
        let pool_peaks = self.allocator.reset_pool_peaks()?;
        let mut sizes = vec![0usize; self.program.slots];
        let mut peak_used = 0u64;
        for op in self.program.ops.clone() {
            self.apply(op)?;
            if let Op::Alloc { slot, bytes } = op {
                sizes[slot] = bytes;
                self.check_block(slot, &sizes)?;
            }
            self.allocator.settle()?;
            let (free, total) = self.allocator.memory()?;
            peak_used = peak_used.max(total.saturating_sub(free).saturating_sub(used_before));
        }
        let observed = &mut self.observed;
        observed.insert(
            notes::PEAK_REQUESTED.into(),
            self.program.peak_requested_bytes().into(),
        );
        observed.insert(
            notes::PEAK_ALLOCATED.into(),
            self.program.peak_requested_bytes().into(),
        );
        observed.insert("peak_device_used_bytes".into(), peak_used.into());
        let peaks_note = match self.allocator.pool_peaks()? {
            Some(p) if pool_peaks => {
                observed.insert(notes::PEAK_RESERVED.into(), p.reserved_bytes.into());
                observed.insert(notes::PEAK_ALLOCATED.into(), p.used_bytes.into());
                "reserved and allocated are the pool's own high-water marks over one untimed \
                 round (reset before it); peak_device_used_bytes is the device's used memory \
                 (total - free) above its level before the round"
            }
            _ => {
                observed.insert(notes::PEAK_RESERVED.into(), peak_used.into());
                "reserved is the device's used memory (total - free, read after every call of \
                 one untimed round) above its level before it; allocated is what the pattern \
                 requested: this allocator keeps no count of its own"
            }
        };
        observed.insert(notes::PEAKS_NOTE.into(), peaks_note.into());
        observed.insert(
            notes::FRAGMENTATION_NOTE.into(),
            format!(
                "not exposed: {} reports no free blocks (only device-wide free memory), so \
                 largest free block / total free cannot be read",
                self.allocator.describe()
            )
            .into(),
        );
        Ok(())
    }

    fn check_block(&self, slot: usize, sizes: &[usize]) -> Result<(), String> {
        let (ptr, bytes) = (self.ptrs[slot], sizes[slot] as u64);
        for (other, &p) in self.ptrs.iter().enumerate() {
            let len = sizes[other] as u64;
            if other != slot && p != 0 && ptr < p + len && p < ptr + bytes {
                return Err(format!(
                    "block {slot} ({ptr:#x}, {bytes} bytes) overlaps live block {other} ({p:#x}, \
                     {len} bytes)"
                ));
            }
        }
        for (offset, value) in [(0, 0xA5u8), (sizes[slot] - 1, 0x5A)] {
            let read = self.allocator.roundtrip_byte(ptr, offset, value)?;
            if read != value {
                return Err(format!(
                    "block {slot}: wrote {value:#x} at byte {offset}, read back {read:#x}"
                ));
            }
        }
        Ok(())
    }
}

fn device_error<A: DeviceAllocator>(
    allocator: &A,
    id: &BenchId,
    context: &str,
    message: String,
) -> BackendError {
    BackendError::Device {
        backend: allocator.backend(),
        context: format!("{id} {context}"),
        message,
    }
}

impl<A: DeviceAllocator> TimedWorkload for DeviceAllocWorkload<A> {
    fn verify(&mut self) -> Result<(), BackendError> {
        let result = self.checked_round();
        if let Err(message) = result {
            self.release();
            // A block that read back wrong is a wrong result; anything else the device's.
            return Err(
                if message.contains("overlaps") || message.contains("read back") {
                    BackendError::mismatch(&self.id, message)
                } else {
                    self.error("verify", message)
                },
            );
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        let start = Instant::now();
        for _ in 0..iters {
            for i in 0..self.program.ops.len() {
                let op = self.program.ops[i];
                if let Err(message) = self.apply(op) {
                    self.release();
                    return Err(self.error("run", message));
                }
            }
        }
        if let Err(message) = self.allocator.settle() {
            return Err(self.error("run", message));
        }
        Ok(start.elapsed())
    }

    fn notes(&self) -> BTreeMap<String, Value> {
        let mut out = self.observed.clone();
        out.extend(self.allocator.facts());
        out.insert(notes::ALLOCATOR.into(), self.allocator.describe().into());
        out.insert(
            notes::CALLS_PER_ITERATION.into(),
            self.program.calls().into(),
        );
        out.insert("device".into(), self.allocator.backend().id().into());
        out.insert(
            "timed".into(),
            "host clock around the calls (plus one settle after the last round)".into(),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::alloc::{KIB, MIB};
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A device of host memory: the workload's rounds, checks and figures, on the CPU.
    struct HostDevice {
        total: u64,
        live: RefCell<HashMap<u64, Vec<u8>>>,
        /// Hand out this pointer for the second allocation, to test the overlap check.
        alias_second: bool,
        calls: RefCell<u64>,
    }

    impl HostDevice {
        fn new(total: u64) -> HostDevice {
            HostDevice {
                total,
                live: RefCell::new(HashMap::new()),
                alias_second: false,
                calls: RefCell::new(0),
            }
        }
    }

    impl DeviceAllocator for HostDevice {
        fn backend(&self) -> BackendKind {
            BackendKind::Cuda
        }
        fn id(&self) -> &'static str {
            "cuda"
        }
        fn describe(&self) -> String {
            "host memory posing as a device".into()
        }
        fn alloc(&self, bytes: usize) -> Result<u64, String> {
            *self.calls.borrow_mut() += 1;
            let block = vec![0u8; bytes];
            let mut ptr = block.as_ptr() as u64;
            let mut live = self.live.borrow_mut();
            if self.alias_second && live.len() == 1 {
                ptr = *live.keys().next().unwrap();
                live.insert(ptr ^ 1, block); // kept alive under another key
                return Ok(ptr);
            }
            live.insert(ptr, block);
            Ok(ptr)
        }
        fn free(&self, ptr: u64) -> Result<(), String> {
            *self.calls.borrow_mut() += 1;
            self.live
                .borrow_mut()
                .remove(&ptr)
                .map(|_| ())
                .ok_or_else(|| format!("free of unknown pointer {ptr:#x}"))
        }
        fn memory(&self) -> Result<(u64, u64), String> {
            let used: u64 = self.live.borrow().values().map(|b| b.len() as u64).sum();
            Ok((self.total - used, self.total))
        }
        fn roundtrip_byte(&self, ptr: u64, offset: usize, value: u8) -> Result<u8, String> {
            let mut live = self.live.borrow_mut();
            let block = live.get_mut(&ptr).ok_or("no such block")?;
            block[offset] = value;
            Ok(block[offset])
        }
    }

    #[test]
    fn rounds_are_checked_timed_and_described() {
        let device = HostDevice::new(8 << 30);
        let mut workload =
            DeviceAllocWorkload::new(device, AllocPattern::OutOfOrder, 64 * KIB).unwrap();
        workload.verify().unwrap();
        let after_verify = *workload.allocator.calls.borrow();
        workload.run(2).unwrap();
        let calls = workload.program.calls();
        assert_eq!(*workload.allocator.calls.borrow(), after_verify + 2 * calls);
        assert!(
            workload.allocator.live.borrow().is_empty(),
            "rounds free all"
        );
        let notes = workload.notes();
        assert_eq!(notes[notes::CALLS_PER_ITERATION], calls);
        let peak = AllocPattern::OutOfOrder
            .program(64 * KIB)
            .peak_requested_bytes();
        assert_eq!(notes[notes::PEAK_REQUESTED], peak);
        // The fake device's used memory is exactly what is live: reserved = requested.
        assert_eq!(notes[notes::PEAK_RESERVED], peak);
        assert!(!notes.contains_key(notes::FRAGMENTATION));
        assert!(
            notes[notes::FRAGMENTATION_NOTE]
                .as_str()
                .unwrap()
                .contains("not exposed")
        );
    }

    #[test]
    fn a_device_without_room_skips_with_the_figures() {
        let device = HostDevice::new(MIB as u64);
        let error = DeviceAllocWorkload::new(device, AllocPattern::Steady, 256 * MIB)
            .err()
            .unwrap();
        assert!(error.is_skip(), "{error}");
        assert!(error.to_string().contains("free"), "{error}");
    }

    #[test]
    fn overlapping_blocks_are_a_wrong_result() {
        let mut device = HostDevice::new(8 << 30);
        device.alias_second = true;
        let mut workload =
            DeviceAllocWorkload::new(device, AllocPattern::Interleaved, 4 * KIB).unwrap();
        let error = workload.verify().unwrap_err();
        assert!(matches!(error, BackendError::Mismatch { .. }), "{error}");
        assert!(error.to_string().contains("overlaps"), "{error}");
    }
}
