//! Allocation: the cost of allocating and freeing through each stack's allocator, and what
//! the allocator keeps while doing it. Ids `alloc/<allocator>/<pattern>/<size>`:
//! `alloc/cpu/out_of_order/1MiB` is the process's malloc (glibc on Linux) running the
//! `out_of_order` pattern around 1 MiB blocks.
//!
//! A pattern is a fixed program of allocations and frees over numbered slots (one
//! *round*), the same on every allocator, so the host's malloc, `cudaMalloc`, the CUDA
//! stream-ordered pool, `hipMalloc` and torch's caching allocator run identical sequences.
//! A round ends with every block freed, so one Criterion iteration is one round and every
//! iteration does the same work. Random choices (sizes, free order) come from a fixed seed:
//! the same pattern is the same sequence on every machine and every run.
//!
//! Each program names one *probe point*: the op after which the allocator's state is read
//! for the fragmentation figure, chosen where the pattern has left its holes (after the
//! short-lived blocks are freed, before the survivors go). Fragmentation is
//! `1 − largest free block / total free` at that point, where the allocator exposes both.

use super::ids::{BenchId, format_bytes_id};
use super::random::SeededRng;
use super::suite::Suite;

/// The family's name: the ids' first part and the bench target (`benches/alloc.rs`).
pub const FAMILY: &str = super::family::ALLOC.name;

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;
pub const GIB: usize = 1 << 30;

/// Block sizes the full suite sweeps: a page, below and above glibc's default mmap
/// threshold (128 KiB) and its dynamic ceiling (32 MiB on 64-bit), up to 1 GiB.
pub const SIZES: &[usize] = &[4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB, GIB];
/// The quick suite: a page, a heap-sized block and an always-mmapped one.
pub const QUICK_SIZES: &[usize] = &[4 * KIB, MIB, 256 * MIB];

/// Bytes a pattern's base blocks add up to, before the block count is clamped: small sizes
/// get many blocks (so a free list forms), large ones few (so device memory suffices).
pub const LIVE_BYTES: usize = 256 * MIB;
/// Fewest blocks per pattern: holes need neighbours. At 1 GiB the largest pattern
/// (`out_of_order`) holds 2 of its 4 base blocks plus 2 of 1.5 GiB: 5 GiB at its peak.
pub const MIN_BLOCKS: usize = 4;
/// Most blocks per pattern: enough for a free list with many holes, few enough that the
/// untimed probe (one allocator statistics read per op) stays fast.
pub const MAX_BLOCKS: usize = 64;

/// The sizes the suite covers.
pub fn sizes(suite: Suite) -> &'static [usize] {
    match suite {
        Suite::Quick => QUICK_SIZES,
        Suite::Full => SIZES,
    }
}

/// How many base blocks a pattern around `size` uses: [`LIVE_BYTES`] / size, clamped to
/// [`MIN_BLOCKS`]..=[`MAX_BLOCKS`] and even (the patterns pair blocks up).
pub fn blocks(size: usize) -> usize {
    let n = (LIVE_BYTES / size.max(1)).clamp(MIN_BLOCKS, MAX_BLOCKS);
    n & !1
}

/// One allocator call of a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Allocate `bytes` into `slot` (empty before).
    Alloc { slot: usize, bytes: usize },
    /// Free the block in `slot` (full before).
    Free { slot: usize },
}

/// The patterns: how blocks are sized and in which order they are freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocPattern {
    /// Allocate one block of the size and free it, again and again: the temporary buffer
    /// of a loop. Nothing is left behind, so a sound allocator shows no fragmentation.
    Steady,
    /// Blocks of mixed sizes (½, ¾ and 1× the size, seeded) allocated in a row; every
    /// other one is short-lived and freed first, leaving holes of mixed sizes between the
    /// survivors; then the survivors are freed.
    Interleaved,
    /// Blocks of the size in a row; every other one freed (holes of the size); then
    /// blocks of 1.5× the size, which no hole fits; then everything freed in a seeded
    /// shuffled order.
    OutOfOrder,
}

/// A pattern's program: the ops of one round, the slots it uses and where it is probed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub ops: Vec<Op>,
    /// Slots the ops use (`0..slots`).
    pub slots: usize,
    /// The index of the op after which the allocator's state is read.
    pub probe_after: usize,
}

impl AllocPattern {
    pub const ALL: [AllocPattern; 3] = [
        AllocPattern::Steady,
        AllocPattern::Interleaved,
        AllocPattern::OutOfOrder,
    ];

    /// The id's function part.
    pub fn id(self) -> &'static str {
        match self {
            AllocPattern::Steady => "steady",
            AllocPattern::Interleaved => "interleaved",
            AllocPattern::OutOfOrder => "out_of_order",
        }
    }

    pub fn from_id(id: &str) -> Option<AllocPattern> {
        AllocPattern::ALL.into_iter().find(|p| p.id() == id)
    }

    /// The seed of the pattern's random choices: fixed, so a round is the same sequence
    /// everywhere.
    pub fn seed(self) -> u64 {
        match self {
            AllocPattern::Steady => 0xA110_C000,
            AllocPattern::Interleaved => 0xA110_C001,
            AllocPattern::OutOfOrder => 0xA110_C002,
        }
    }

    /// The round of this pattern around blocks of `size` bytes.
    pub fn program(self, size: usize) -> Program {
        let n = blocks(size);
        let mut rng = SeededRng::new(self.seed() ^ size as u64);
        let mut ops = Vec::new();
        let probe_after;
        match self {
            AllocPattern::Steady => {
                for _ in 0..n {
                    ops.push(Op::Alloc {
                        slot: 0,
                        bytes: size,
                    });
                    ops.push(Op::Free { slot: 0 });
                }
                // Mid-round, with the one block live.
                probe_after = n;
            }
            AllocPattern::Interleaved => {
                let choices = [size / 2, size / 2 + size / 4, size];
                for slot in 0..n {
                    let bytes = choices[rng.below(choices.len())];
                    ops.push(Op::Alloc { slot, bytes });
                }
                for slot in (1..n).step_by(2) {
                    ops.push(Op::Free { slot });
                }
                probe_after = ops.len() - 1;
                for slot in (0..n).step_by(2) {
                    ops.push(Op::Free { slot });
                }
            }
            AllocPattern::OutOfOrder => {
                for slot in 0..n {
                    ops.push(Op::Alloc { slot, bytes: size });
                }
                for slot in (0..n).step_by(2) {
                    ops.push(Op::Free { slot });
                }
                let larger = size + size / 2;
                for j in 0..n / 2 {
                    ops.push(Op::Alloc {
                        slot: n + j,
                        bytes: larger,
                    });
                }
                probe_after = ops.len() - 1;
                let mut live: Vec<usize> = (1..n).step_by(2).chain(n..n + n / 2).collect();
                shuffle(&mut live, &mut rng);
                ops.extend(live.into_iter().map(|slot| Op::Free { slot }));
            }
        }
        let slots = match self {
            AllocPattern::Steady => 1,
            AllocPattern::Interleaved => n,
            AllocPattern::OutOfOrder => n + n / 2,
        };
        Program {
            ops,
            slots,
            probe_after,
        }
    }
}

/// Fisher–Yates with the pattern's generator.
fn shuffle(items: &mut [usize], rng: &mut SeededRng) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

impl Program {
    /// Allocator calls per round (allocations and frees): the throughput per iteration, so
    /// Criterion's time per iteration divided by this is the time per call.
    pub fn calls(&self) -> u64 {
        self.ops.len() as u64
    }

    /// The most bytes the program holds at once (what it asked for, before any rounding).
    pub fn peak_requested_bytes(&self) -> u64 {
        let mut live = vec![0usize; self.slots];
        let (mut now, mut peak) = (0u64, 0u64);
        for op in &self.ops {
            match *op {
                Op::Alloc { slot, bytes } => {
                    live[slot] = bytes;
                    now += bytes as u64;
                }
                Op::Free { slot } => now -= std::mem::take(&mut live[slot]) as u64,
            }
            peak = peak.max(now);
        }
        peak
    }

    /// Live blocks and their bytes right after the probe point.
    pub fn live_at_probe(&self) -> (usize, u64) {
        let mut live = vec![0usize; self.slots];
        for op in &self.ops[..=self.probe_after] {
            match *op {
                Op::Alloc { slot, bytes } => live[slot] = bytes,
                Op::Free { slot } => live[slot] = 0,
            }
        }
        let blocks = live.iter().filter(|b| **b > 0).count();
        (blocks, live.iter().map(|b| *b as u64).sum())
    }

    /// Checks that the program is well formed: every alloc into an empty slot, every free
    /// of a full one, every slot empty at the end (so rounds can repeat), the probe inside.
    pub fn check(&self) -> Result<(), String> {
        let mut full = vec![false; self.slots];
        for (i, op) in self.ops.iter().enumerate() {
            let (slot, want_full) = match *op {
                Op::Alloc { slot, .. } => (slot, false),
                Op::Free { slot } => (slot, true),
            };
            let state = full
                .get_mut(slot)
                .ok_or_else(|| format!("op {i}: slot {slot} is outside 0..{}", self.slots))?;
            if *state != want_full {
                return Err(format!(
                    "op {i} ({op:?}): slot {slot} is in the wrong state"
                ));
            }
            *state = !*state;
        }
        if let Some(slot) = full.iter().position(|f| *f) {
            return Err(format!(
                "slot {slot} is still allocated at the end of the round"
            ));
        }
        if self.probe_after >= self.ops.len() {
            return Err(format!(
                "probe point {} is past the round",
                self.probe_after
            ));
        }
        Ok(())
    }
}

/// `alloc/<allocator>/<pattern>/<size>`.
pub fn bench_id(allocator: &str, pattern: AllocPattern, size: usize) -> BenchId {
    BenchId::new(FAMILY, allocator, pattern.id(), format_bytes_id(size))
}

/// `1 − largest free block / total free`; `None` when nothing is free (the figure has no
/// meaning without free memory), an error when the reading is inconsistent.
pub fn fragmentation(
    largest_free_bytes: u64,
    total_free_bytes: u64,
) -> Result<Option<f64>, String> {
    if largest_free_bytes > total_free_bytes {
        return Err(format!(
            "the largest free block ({largest_free_bytes} bytes) exceeds the total free \
             ({total_free_bytes} bytes)"
        ));
    }
    if total_free_bytes == 0 {
        return Ok(None);
    }
    Ok(Some(
        1.0 - largest_free_bytes as f64 / total_free_bytes as f64,
    ))
}

/// One line for the run record's notes on an alloc benchmark (every view lists those): the
/// time per call, reserved against allocated, and fragmentation, or why a figure is absent;
/// `None` when the notes are not an alloc benchmark's (no calls per iteration).
pub fn summary(
    bench_notes: &std::collections::BTreeMap<String, serde_json::Value>,
    median_ns_per_iteration: Option<f64>,
) -> Option<String> {
    use crate::units::{SizeUnit, format_ns, format_size};
    let calls = bench_notes.get(notes::CALLS_PER_ITERATION)?.as_u64()?;
    let number = |key: &str| bench_notes.get(key).and_then(serde_json::Value::as_f64);
    let text = |key: &str| bench_notes.get(key).and_then(serde_json::Value::as_str);
    let bytes = |v: f64| format_size(v, SizeUnit::Bytes);
    let mut parts = Vec::new();
    match median_ns_per_iteration.filter(|t| t.is_finite() && *t > 0.0) {
        Some(ns) if calls > 0 => parts.push(format!(
            "{} per call (median round / {calls} calls)",
            format_ns(ns / calls as f64)
        )),
        _ => parts.push(format!("{calls} calls per round")),
    }
    match (number(notes::PEAK_RESERVED), number(notes::PEAK_ALLOCATED)) {
        (Some(reserved), Some(allocated)) => {
            let requested = number(notes::PEAK_REQUESTED)
                .map(|r| format!(", requested {}", bytes(r)))
                .unwrap_or_default();
            parts.push(format!(
                "peak reserved {} against allocated {}{requested}",
                bytes(reserved),
                bytes(allocated)
            ));
        }
        _ => parts.push(format!(
            "peaks {}",
            text(notes::PEAKS_NOTE).unwrap_or("not recorded")
        )),
    }
    match number(notes::FRAGMENTATION) {
        Some(f) => {
            let of = match (number(notes::LARGEST_FREE), number(notes::TOTAL_FREE)) {
                (Some(largest), Some(total)) => {
                    format!(
                        " (largest free {} of {} free)",
                        bytes(largest),
                        bytes(total)
                    )
                }
                _ => String::new(),
            };
            parts.push(format!("fragmentation {f:.3}{of}"));
        }
        None => parts.push(format!(
            "fragmentation {}",
            text(notes::FRAGMENTATION_NOTE).unwrap_or("not recorded")
        )),
    }
    Some(format!("allocation: {}", parts.join("; ")))
}

/// The note keys every allocator's benchmarks share, so reports read them one way.
pub mod notes {
    /// Allocator calls (allocations + frees) per iteration: time per call = time / this.
    pub const CALLS_PER_ITERATION: &str = "calls_per_iteration";
    /// What the allocator is (`glibc malloc 2.36`, `cuMemAlloc`, `torch CUDACachingAllocator`).
    pub const ALLOCATOR: &str = "allocator";
    /// Most bytes the pattern held at once, as requested.
    pub const PEAK_REQUESTED: &str = "peak_requested_bytes";
    /// Most bytes the allocator counted as handed out (with its headers and rounding).
    pub const PEAK_ALLOCATED: &str = "peak_allocated_bytes";
    /// Most bytes the allocator held from the system (OS or driver) during the round.
    pub const PEAK_RESERVED: &str = "peak_reserved_bytes";
    /// `1 − largest free / total free` at the probe point.
    pub const FRAGMENTATION: &str = "fragmentation";
    pub const LARGEST_FREE: &str = "largest_free_bytes";
    pub const TOTAL_FREE: &str = "total_free_bytes";
    /// Why a figure is absent (not exposed by the allocator, or not meaningful here).
    pub const FRAGMENTATION_NOTE: &str = "fragmentation_note";
    pub const PEAKS_NOTE: &str = "peaks_note";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_is_well_formed_and_repeatable() {
        for pattern in AllocPattern::ALL {
            for &size in SIZES {
                let program = pattern.program(size);
                program
                    .check()
                    .unwrap_or_else(|e| panic!("{pattern:?} {size}: {e}"));
                assert_eq!(program, pattern.program(size), "{pattern:?} is seeded");
                assert!(program.calls() >= 2 * MIN_BLOCKS as u64);
            }
        }
    }

    #[test]
    fn calls_and_peaks_follow_the_pattern_definitions() {
        let size = 4 * KIB;
        let n = blocks(size);
        assert_eq!(n, MAX_BLOCKS);
        let steady = AllocPattern::Steady.program(size);
        assert_eq!(steady.calls(), 2 * n as u64);
        assert_eq!(steady.peak_requested_bytes(), size as u64);
        let ooo = AllocPattern::OutOfOrder.program(size);
        assert_eq!(ooo.calls(), 3 * n as u64);
        // Half the base blocks plus half as many of 1.5x.
        let peak = (n / 2 * size + n / 2 * (size + size / 2)) as u64;
        assert_eq!(ooo.peak_requested_bytes(), peak);
        assert_eq!(ooo.live_at_probe(), (n, peak));
        let inter = AllocPattern::Interleaved.program(size);
        assert_eq!(inter.calls(), 2 * n as u64);
        let (live, _) = inter.live_at_probe();
        assert_eq!(live, n / 2);
        // Mixed sizes really are mixed.
        let mut sizes: Vec<usize> = inter
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Alloc { bytes, .. } => Some(*bytes),
                Op::Free { .. } => None,
            })
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        assert_eq!(sizes, vec![2 * KIB, 3 * KIB, 4 * KIB]);
    }

    #[test]
    fn large_sizes_keep_few_blocks() {
        assert_eq!(blocks(GIB), MIN_BLOCKS);
        assert_eq!(blocks(16 * MIB), 16);
        // The largest peak of any pattern: out_of_order at 1 GiB holds 5 GiB.
        let peak = AllocPattern::ALL
            .iter()
            .map(|p| p.program(GIB).peak_requested_bytes())
            .max()
            .unwrap();
        assert_eq!(peak, 5 * GIB as u64);
    }

    #[test]
    fn a_malformed_program_is_named() {
        let bad = Program {
            ops: vec![Op::Free { slot: 0 }],
            slots: 1,
            probe_after: 0,
        };
        assert!(bad.check().unwrap_err().contains("wrong state"));
        let leak = Program {
            ops: vec![Op::Alloc { slot: 0, bytes: 1 }],
            slots: 1,
            probe_after: 0,
        };
        assert!(leak.check().unwrap_err().contains("still allocated"));
    }

    #[test]
    fn fragmentation_is_one_minus_largest_over_total() {
        assert_eq!(fragmentation(100, 100), Ok(Some(0.0)));
        assert_eq!(fragmentation(25, 100), Ok(Some(0.75)));
        assert_eq!(fragmentation(0, 0), Ok(None));
        assert!(fragmentation(200, 100).unwrap_err().contains("exceeds"));
    }

    #[test]
    fn the_summary_gives_time_per_call_peaks_and_fragmentation_or_why_not() {
        let measured: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "calls_per_iteration": 192,
                "peak_reserved_bytes": 2097152,
                "peak_allocated_bytes": 1048576,
                "peak_requested_bytes": 524288,
                "fragmentation": 0.6121,
                "largest_free_bytes": 81920,
                "total_free_bytes": 204800,
            }))
            .unwrap();
        let line = summary(&measured, Some(19_200.0)).unwrap();
        assert_eq!(
            line,
            "allocation: 100 ns per call (median round / 192 calls); peak reserved 2MiB against \
             allocated 1MiB, requested 512KiB; fragmentation 0.612 (largest free 80KiB of 200KiB free)"
        );
        let absent: std::collections::BTreeMap<String, serde_json::Value> =
            serde_json::from_value(serde_json::json!({
                "calls_per_iteration": 8,
                "peaks_note": "not exposed: no statistics",
                "fragmentation_note": "not measured: every block was mmapped",
            }))
            .unwrap();
        let line = summary(&absent, None).unwrap();
        assert!(line.contains("8 calls per round"), "{line}");
        assert!(line.contains("peaks not exposed: no statistics"), "{line}");
        assert!(
            line.contains("fragmentation not measured: every block was mmapped"),
            "{line}"
        );
        assert_eq!(summary(&std::collections::BTreeMap::new(), Some(1.0)), None);
    }

    #[test]
    fn ids_follow_the_scheme() {
        assert_eq!(
            bench_id("cpu", AllocPattern::OutOfOrder, MIB).full(),
            "alloc/cpu/out_of_order/1MiB"
        );
        assert_eq!(AllocPattern::from_id("steady"), Some(AllocPattern::Steady));
        assert_eq!(AllocPattern::from_id("nope"), None);
    }
}
