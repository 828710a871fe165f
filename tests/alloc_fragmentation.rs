//! The allocation patterns on the real host allocator (glibc here), each observed in a fresh
//! child process: the same pattern twice gives the same figures, the fragmenting patterns
//! leave a fragmented heap where `steady` leaves almost none, blocks glibc mmaps report no
//! fragmentation with the reason instead of a 0, and the peaks hold together.
//!
//! `harness = false`: the observation must run on the main thread of a fresh process (the
//! main arena, as in the bench), which a libtest test thread is not. So this file's `main`
//! serves the observation when started as the child, and otherwise runs its checks, which
//! start this same executable as the child.

use stackbench::backend::cpu::alloc::{
    Observation, Observer, observe_in_child, serve_observation_request,
};
use stackbench::workload::alloc::{AllocPattern, KIB, MIB};
use std::process::ExitCode;

fn observe(pattern: AllocPattern, size: usize) -> Observation {
    let observer = Observer::this_executable().expect("this test's executable");
    observe_in_child(&observer, pattern, size)
        .unwrap_or_else(|e| panic!("observing {pattern:?} at {size} bytes: {e}"))
}

fn fragmentation(o: &Observation) -> f64 {
    o.fragmentation
        .unwrap_or_else(|| panic!("no fragmentation figure: {:?}", o.fragmentation_note))
}

/// Same pattern, same size, two fresh processes: identical figures, every one of them.
fn the_same_pattern_twice_gives_the_same_figures() {
    for (pattern, size) in [
        (AllocPattern::OutOfOrder, 4 * KIB),
        (AllocPattern::Interleaved, 64 * KIB),
        (AllocPattern::OutOfOrder, MIB),
        (AllocPattern::Steady, 4 * KIB),
    ] {
        let first = observe(pattern, size);
        let second = observe(pattern, size);
        assert_eq!(first, second, "{pattern:?} at {size} bytes");
        eprintln!(
            "  {pattern:?} {size}: fragmentation {:?}, largest free {:?} of {:?}",
            first.fragmentation, first.largest_free_bytes, first.total_free_bytes
        );
    }
}

/// Holes between live blocks are measured as fragmentation; a pattern that leaves none is
/// measured as (almost) none. The thresholds are far from what glibc gives here (printed),
/// so the check fails only if the holes stop being seen, or appear where there are none.
fn fragmenting_patterns_fragment_and_steady_does_not() {
    for size in [4 * KIB, 64 * KIB, MIB] {
        let steady = fragmentation(&observe(AllocPattern::Steady, size));
        let ooo = observe(AllocPattern::OutOfOrder, size);
        let interleaved = fragmentation(&observe(AllocPattern::Interleaved, size));
        let out_of_order = fragmentation(&ooo);
        eprintln!(
            "  {size}: steady {steady:.4}, interleaved {interleaved:.4}, out_of_order {out_of_order:.4}"
        );
        assert!(steady < 0.05, "steady at {size}: {steady}");
        assert!(out_of_order > 0.3, "out_of_order at {size}: {out_of_order}");
        assert!(interleaved > 0.1, "interleaved at {size}: {interleaved}");
        // The holes are at least the half of the base blocks freed first.
        let holes = (stackbench::workload::alloc::blocks(size) / 2 * size) as u64;
        let free = ooo.total_free_bytes.unwrap();
        assert!(
            free >= holes,
            "out_of_order at {size}: {free} free < {holes} of holes"
        );
        let largest = ooo.largest_free_bytes.unwrap();
        assert!(
            largest < free,
            "out_of_order at {size}: the largest block is all the free"
        );
    }
}

/// glibc serves blocks above its mmap threshold (always above 32 MiB) by their own mmap and
/// unmaps them on free: no heap figure belongs to the pattern, and the observation says so.
fn mmapped_blocks_report_no_fragmentation_and_say_why() {
    let o = observe(AllocPattern::OutOfOrder, 256 * MIB);
    assert_eq!(o.fragmentation, None);
    let note = o.fragmentation_note.as_deref().unwrap_or_default();
    assert!(
        note.contains("mmap") && note.contains("not measured"),
        "{note}"
    );
    assert_eq!(
        o.mmapped_blocks_at_probe,
        Some(o.live_blocks_at_probe as u64),
        "{o:?}"
    );
}

/// Reserved holds what is allocated, which holds what the pattern asked for.
fn peaks_hold_together() {
    for (pattern, size) in [
        (AllocPattern::Interleaved, 4 * KIB),
        (AllocPattern::OutOfOrder, 16 * MIB),
        (AllocPattern::Steady, 256 * MIB),
    ] {
        let o = observe(pattern, size);
        let (reserved, allocated) = (
            o.peak_reserved_bytes.unwrap(),
            o.peak_allocated_bytes.unwrap(),
        );
        assert!(reserved >= allocated, "{pattern:?} {size}: {o:?}");
        assert!(
            allocated >= o.peak_requested_bytes,
            "{pattern:?} {size}: {o:?}"
        );
        assert!(
            o.allocator.starts_with("glibc malloc 2."),
            "{}",
            o.allocator
        );
    }
}

const CHECKS: &[(&str, fn())] = &[
    (
        "the_same_pattern_twice_gives_the_same_figures",
        the_same_pattern_twice_gives_the_same_figures,
    ),
    (
        "fragmenting_patterns_fragment_and_steady_does_not",
        fragmenting_patterns_fragment_and_steady_does_not,
    ),
    (
        "mmapped_blocks_report_no_fragmentation_and_say_why",
        mmapped_blocks_report_no_fragmentation_and_say_why,
    ),
    ("peaks_hold_together", peaks_hold_together),
];

fn main() -> ExitCode {
    if let Some(code) = serve_observation_request() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in CHECKS {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    // The GPU bundle runs every test file with `--ignored`: nothing here needs a GPU.
    if args.iter().any(|a| a == "--ignored") {
        println!("alloc_fragmentation: no ignored (GPU) tests; the checks run in the CPU CI");
        return ExitCode::SUCCESS;
    }
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        println!("alloc_fragmentation: skipped, the figures are glibc's and this is not glibc");
        return ExitCode::SUCCESS;
    }
    // libtest's filter and `--skip NAME`, so `cargo test <filter>` treats this file like the
    // others; other libtest flags (--quiet, --nocapture, --test-threads N) change nothing here.
    let (mut filter, mut skips) = (None, Vec::new());
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--skip" => skips.extend(rest.next().cloned()),
            "--test-threads" | "--format" | "--color" => {
                rest.next();
            }
            flag if flag.starts_with('-') => {}
            positional => filter = Some(positional.to_owned()),
        }
    }
    let mut failed = 0;
    let mut ran = 0;
    for (name, check) in CHECKS {
        let filtered_out = filter.as_ref().is_some_and(|f| !name.contains(f.as_str()));
        if filtered_out || skips.iter().any(|s| name.contains(s.as_str())) {
            continue;
        }
        ran += 1;
        eprintln!("test {name} ...");
        match std::panic::catch_unwind(check) {
            Ok(()) => eprintln!("test {name} ... ok"),
            Err(_) => {
                eprintln!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    eprintln!(
        "alloc_fragmentation: {ran} run, {failed} failed, {} filtered out",
        CHECKS.len() - ran
    );
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
