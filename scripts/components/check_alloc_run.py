"""Checks the alloc target's record (``<criterion dir>/stackbench/targets/alloc.json``) for
what its notes must hold, on the device the run had; exits 1 naming each problem.

* nothing failed;
* every measured id carries ``calls_per_iteration`` and its allocator, and either its
  peaks or a ``peaks_note`` saying why not, and either a fragmentation in [0, 1) with its
  free-block figures or a ``fragmentation_note`` saying why not (never a bare 0);
* reserved >= allocated >= requested where all three are given (not for the raw device
  allocators, whose reserved is the device's used memory);
* ``cpu``: at least one fragmentation figure was measured (glibc exposes its bins);
* ``cuda`` / ``rocm`` (ci/gpu_tests.sh): every native device allocator of that vendor
  (``cuda`` and ``cuda_async``, or ``rocm``) was measured, not skipped, and, when a torch
  was asked for (``--torch``), torch's caching allocator on that device too, with its
  reserved/allocated peaks and the snapshot's free blocks.

Usage: python check_alloc_run.py <alloc.json> <cpu|cuda|rocm> [--torch]
"""

import json
import sys

NATIVE = {"cpu": ("cpu",), "cuda": ("cuda", "cuda_async"), "rocm": ("rocm",)}


def problems_in(report, device, torch):
    problems = []
    entries = report.get("benchmarks", {})
    measured = {}
    for bench_id, entry in entries.items():
        if entry.get("outcome") == "failed":
            problems.append(f"{bench_id} failed: {entry.get('error')}")
        elif entry.get("outcome") == "measured":
            measured[bench_id] = entry.get("notes", {})
    for bench_id, notes in measured.items():
        # A raw device allocator keeps no reserve of its own: its "reserved" is the rise of
        # the device's used memory, which the driver's own pages can keep below the request.
        ordered = not bench_id.startswith(("alloc/cuda/", "alloc/rocm/"))
        problems.extend(f"{bench_id}: {p}" for p in note_problems(notes, ordered))
    allocators = NATIVE[device] + ((f"torch_{device}",) if torch else ())
    for allocator in allocators:
        mine = [i for i in measured if i.startswith(f"alloc/{allocator}/")]
        skipped = [f"{i}: {e.get('reason')}" for i, e in entries.items() if i.startswith(f"alloc/{allocator}/") and e.get("outcome") == "skipped"]
        if not mine:
            problems.append(f"alloc/{allocator}: nothing measured" + (f" (skipped: {skipped[0]})" if skipped else ""))
    if device == "cpu" and not any("fragmentation" in measured[i] for i in measured if i.startswith("alloc/cpu/")):
        problems.append("alloc/cpu: no fragmentation figure was measured on glibc")
    if torch and device != "cpu":
        ids = [i for i in measured if i.startswith(f"alloc/torch_{device}/")]
        if ids and not any("peak_reserved_bytes" in measured[i] for i in ids):
            problems.append(f"alloc/torch_{device}: no memory_stats peaks in the notes")
    return problems


def note_problems(notes, ordered=True):
    problems = []
    if not isinstance(notes.get("calls_per_iteration"), int) or notes["calls_per_iteration"] < 2:
        problems.append("no calls_per_iteration")
    if not notes.get("allocator"):
        problems.append("no allocator named")
    if "peak_reserved_bytes" not in notes and not notes.get("peaks_note"):
        problems.append("neither peaks nor a peaks_note saying why not")
    fragmentation = notes.get("fragmentation")
    if fragmentation is None:
        if not notes.get("fragmentation_note"):
            problems.append("neither a fragmentation figure nor a note saying why not")
    elif not (isinstance(fragmentation, (int, float)) and 0.0 <= fragmentation < 1.0):
        problems.append(f"fragmentation {fragmentation!r} is not in [0, 1)")
    elif not (notes.get("total_free_bytes", 0) > 0 and 0 < notes.get("largest_free_bytes", 0) <= notes["total_free_bytes"]):
        problems.append("a fragmentation figure without the free blocks it stands on")
    reserved, allocated, requested = (notes.get(k) for k in ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes"))
    if ordered and None not in (reserved, allocated, requested) and not reserved >= allocated >= requested:
        problems.append(f"peaks out of order: reserved {reserved}, allocated {allocated}, requested {requested}")
    return problems


def main(argv):
    if len(argv) < 3 or argv[2] not in NATIVE:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"check_alloc_run: {argv[1]}: {error}", file=sys.stderr)
        return 2
    problems = problems_in(report, argv[2], "--torch" in argv[3:])
    for problem in problems:
        print(f"check_alloc_run: {problem}")
    if not problems:
        print(f"check_alloc_run: {len(report.get('benchmarks', {}))} alloc ids hold up on {argv[2]}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
