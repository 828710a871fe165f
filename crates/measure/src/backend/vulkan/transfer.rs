//! Host↔device and device↔device copies on Vulkan (`vkCmdCopyBuffer`), timed with
//! timestamps: the host side is driver-allocated host-visible memory, Vulkan's pinned
//! memory. Vulkan copies only between its own buffers, so there is no pageable copy to
//! time (that would be a host `memcpy` into such a buffer first): those ids are skips.

use super::context::Memory;
use super::{VulkanBackend, VulkanTimer};
use crate::backend::gpu::{GpuTimer, RawBuffer};
use crate::backend::{BackendError, BackendKind, TimedWorkload};
use crate::workload::transfer::{TransferKind, random_bytes};
use crate::workload::{BenchId, family, ids::format_bytes_id};
use std::collections::BTreeMap;
use std::time::Duration;

const SEED: u64 = 0x7A5F_E200;

pub struct VulkanTransfer<'a> {
    dev: &'a VulkanBackend,
    kind: TransferKind,
    bytes: usize,
    src: RawBuffer,
    dst: RawBuffer,
    timer: VulkanTimer<'a>,
}

impl<'a> VulkanTransfer<'a> {
    pub fn new(
        dev: &'a VulkanBackend,
        kind: TransferKind,
        bytes: usize,
    ) -> Result<Self, BackendError> {
        let (from, to) = match kind {
            TransferKind::H2dPinned => (Memory::Host, Memory::Device),
            TransferKind::D2hPinned => (Memory::Device, Memory::Host),
            TransferKind::D2d => (Memory::Device, Memory::Device),
            TransferKind::H2dPageable | TransferKind::D2hPageable => {
                return Err(BackendError::unsupported(
                    BackendKind::Vulkan,
                    format!("transfer {kind}"),
                    "Vulkan copies only between its own buffers (host-visible memory is its \
                     pinned memory); a pageable copy would be a host memcpy first",
                ));
            }
        };
        Ok(VulkanTransfer {
            dev,
            kind,
            bytes,
            src: dev.buffer(bytes, from)?,
            dst: dev.buffer(bytes, to)?,
            // Copies do not go through the cache the flush empties.
            timer: VulkanTimer::new(dev, false),
        })
    }

    fn launch(&self) -> Result<(), BackendError> {
        self.dev
            .context()
            .copy(self.src.ptr, self.dst.ptr, self.bytes as u64)
    }

    /// Writes `data` into `buffer` through a host-visible buffer when it is device memory.
    fn write(&self, buffer: &RawBuffer, memory: Memory, data: &[u8]) -> Result<(), BackendError> {
        let ctx = self.dev.context();
        match memory {
            Memory::Host => ctx.with_mapped(buffer.ptr, |m| m[..data.len()].copy_from_slice(data)),
            Memory::Device => {
                let staging = self.dev.buffer(data.len(), Memory::Host)?;
                ctx.with_mapped(staging.ptr, |m| m[..data.len()].copy_from_slice(data))?;
                ctx.copy(staging.ptr, buffer.ptr, data.len() as u64)?;
                ctx.synchronize()
            }
        }
    }

    fn read(&self, buffer: &RawBuffer, memory: Memory) -> Result<Vec<u8>, BackendError> {
        let ctx = self.dev.context();
        match memory {
            Memory::Host => ctx.with_mapped(buffer.ptr, |m| m[..self.bytes].to_vec()),
            Memory::Device => {
                let staging = self.dev.buffer(self.bytes, Memory::Host)?;
                ctx.copy(buffer.ptr, staging.ptr, self.bytes as u64)?;
                ctx.synchronize()?;
                ctx.with_mapped(staging.ptr, |m| m[..self.bytes].to_vec())
            }
        }
    }

    fn sides(&self) -> (Memory, Memory) {
        match self.kind {
            TransferKind::H2dPinned => (Memory::Host, Memory::Device),
            TransferKind::D2hPinned => (Memory::Device, Memory::Host),
            _ => (Memory::Device, Memory::Device),
        }
    }
}

impl TimedWorkload for VulkanTransfer<'_> {
    /// Random bytes into the source, one copy, and every byte of the destination compared.
    fn verify(&mut self) -> Result<(), BackendError> {
        let (from, to) = self.sides();
        let data = random_bytes(SEED, self.bytes);
        self.write(&self.src, from, &data)?;
        self.launch()?;
        self.dev.context().synchronize()?;
        let got = self.read(&self.dst, to)?;
        if let Some(at) = got.iter().zip(&data).position(|(g, w)| g != w) {
            let id = BenchId::new(
                family::MEMORY_BANDWIDTH.name,
                "vulkan",
                self.kind.id(),
                format_bytes_id(self.bytes),
            );
            return Err(BackendError::mismatch(
                &id,
                format!(
                    "byte {at} is {} after the copy, expected {}",
                    got[at], data[at]
                ),
            ));
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<Duration, BackendError> {
        self.timer.time(iters, &mut || self.launch())
    }

    fn notes(&self) -> BTreeMap<String, serde_json::Value> {
        let mut notes = BTreeMap::new();
        notes.insert("copy".into(), "vkCmdCopyBuffer".into());
        notes.insert(
            "host_memory".into(),
            "driver-allocated HOST_VISIBLE | HOST_COHERENT (cached where offered)".into(),
        );
        self.timer.notes(&mut notes);
        notes
    }
}
