//! Host↔device and device↔device copies: what a GPU's links and copy engines sustain.
//! Buffers are 512 MiB (nvbandwidth's size) so a copy is long enough to reach the link's
//! steady rate; pinned and pageable host memory are separate ids because they differ by
//! several times on every PCIe system.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The buffer size every transfer benchmark uses.
pub const TRANSFER_BYTES: usize = 512 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferKind {
    H2dPinned,
    H2dPageable,
    D2hPinned,
    D2hPageable,
    /// One device buffer copied into another (`cuMemcpyDtoD` / `hipMemcpyDtoD`).
    D2d,
}

impl TransferKind {
    pub const ALL: [TransferKind; 5] = [
        TransferKind::H2dPinned,
        TransferKind::H2dPageable,
        TransferKind::D2hPinned,
        TransferKind::D2hPageable,
        TransferKind::D2d,
    ];

    /// The function part of the id (`memory_bandwidth/cuda/h2d_pinned/512MiB`).
    pub fn id(self) -> &'static str {
        match self {
            TransferKind::H2dPinned => "h2d_pinned",
            TransferKind::H2dPageable => "h2d_pageable",
            TransferKind::D2hPinned => "d2h_pinned",
            TransferKind::D2hPageable => "d2h_pageable",
            TransferKind::D2d => "d2d",
        }
    }

    /// Whether the host side is page-locked memory.
    pub fn is_pinned(self) -> bool {
        matches!(self, TransferKind::H2dPinned | TransferKind::D2hPinned)
    }

    /// Bytes declared per copy of `bytes`: the bytes crossing the link for host transfers
    /// (as nvbandwidth reports them); read + written for a device-to-device copy, as STREAM
    /// counts a copy, so it compares with the copy kernel and with a torch tensor copy.
    pub fn bytes(self, bytes: usize) -> u64 {
        match self {
            TransferKind::D2d => 2 * bytes as u64,
            _ => bytes as u64,
        }
    }
}

impl fmt::Display for TransferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// Seeded bytes for a transfer's source: random, so no link or driver can compress them.
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = super::random::SeededRng::new(seed);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Positions a transfer's check compares: both ends and a stride through the middle.
pub fn check_positions(len: usize) -> Vec<usize> {
    let stride = (len / 4099).max(1);
    let mut positions: Vec<usize> = (0..len).step_by(stride).collect();
    positions.extend(len.saturating_sub(64)..len);
    positions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_bytes() {
        assert_eq!(TransferKind::H2dPinned.id(), "h2d_pinned");
        assert_eq!(TransferKind::D2d.bytes(100), 200);
        assert_eq!(TransferKind::D2hPageable.bytes(100), 100);
        assert!(TransferKind::D2hPinned.is_pinned() && !TransferKind::D2d.is_pinned());
    }

    #[test]
    fn random_bytes_are_seeded_and_varied() {
        let a = random_bytes(1, 1001);
        assert_eq!(a.len(), 1001);
        assert_eq!(a, random_bytes(1, 1001));
        assert!(a.iter().filter(|&&b| b == 0).count() < 50);
        let p = check_positions(1 << 20);
        assert!(p.contains(&0) && p.contains(&((1 << 20) - 1)));
    }
}
