"""stackbench worker: torch's allocators, on the allocation patterns of the alloc family.

Ids ``alloc/torch_<device>/<pattern>/<size>`` (``crates/measure/src/components/alloc.rs`` builds them from
the device this worker describes). The patterns are not defined here: the runner writes
every program it wants (ops, slots, probe point) to the JSON file ``STACKBENCH_ALLOC_PROGRAMS``
names, from ``crates/model/src/workload/alloc.rs``, so torch runs exactly the sequence the native
allocators run. One op is ``[slot, bytes]``: ``bytes > 0`` allocates a uint8 tensor of that
many bytes into the slot, ``0`` drops the slot's tensor (which frees it).

* CUDA / ROCm: torch's caching allocator (``CUDACachingAllocator``; HIP builds use the same
  one). One untimed round after ``torch.cuda.empty_cache()`` and a peak reset gives
  ``memory_stats``' reserved, allocated and requested peaks, and at the probe point
  ``memory_snapshot`` gives the free (``inactive``) blocks of the reserved segments:
  fragmentation = 1 − largest inactive block / total inactive.
* CPU: torch has no caching allocator for CPU tensors; ``torch.empty`` goes through c10's CPU
  allocator (an aligned malloc per tensor, freed when the last reference goes). It is
  measured and labelled as that, and its figures include torch's tensor construction from
  Python; torch keeps no statistics for it, so peaks and fragmentation say "not exposed".

Timing is the host clock around the calls: the caching allocator's work is host work (no
kernel runs), and on CPU the host clock is the device clock.
"""

import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

from stackbench_worker import Benchmark, Component, HostClock, Mismatch, main  # noqa: E402

PROGRAMS_ENV = "STACKBENCH_ALLOC_PROGRAMS"


class ProgramError(ValueError):
    """The programs file is not what the runner writes."""


def load_programs(path):
    """The programs the runner wrote, keyed by (pattern, size id); every field checked."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        raise ProgramError(f"{PROGRAMS_ENV}={path}: cannot read the programs: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("programs"), list):
        raise ProgramError(f"{path}: expected an object with a 'programs' list")
    programs = {}
    for index, entry in enumerate(document["programs"]):
        where = f"{path}: programs[{index}]"
        if not isinstance(entry, dict):
            raise ProgramError(f"{where} is not an object")
        for key, kind in (("pattern", str), ("size", str), ("slots", int), ("probe_after", int), ("calls", int), ("ops", list)):
            if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
                raise ProgramError(f"{where}: '{key}' is missing or not a {kind.__name__}")
        ops = []
        live = [False] * entry["slots"]
        for number, op in enumerate(entry["ops"]):
            if not (isinstance(op, list) and len(op) == 2 and all(isinstance(v, int) and v >= 0 for v in op)):
                raise ProgramError(f"{where}: op {number} is not [slot, bytes]")
            slot, size = op
            if slot >= entry["slots"] or live[slot] != (size == 0):
                raise ProgramError(f"{where}: op {number} {op} does not fit the slots' state")
            live[slot] = size > 0
            ops.append((slot, size))
        if any(live) or not 0 <= entry["probe_after"] < len(ops) or entry["calls"] != len(ops):
            raise ProgramError(f"{where}: the round leaks a block, or its probe point or call count is wrong")
        programs[(entry["pattern"], entry["size"])] = dict(entry, ops=ops)
    return programs


def fragmentation_from_snapshot(snapshot):
    """(largest inactive block, total inactive bytes) over the caching allocator's segments,
    from ``torch.cuda.memory_snapshot()``. A segment or block without the fields torch
    writes is an error naming it: a figure read from a format this does not know would be
    a wrong figure."""
    if not isinstance(snapshot, list):
        raise ValueError(f"memory_snapshot() returned {type(snapshot).__name__}, not a list of segments")
    largest = total = 0
    for index, segment in enumerate(snapshot):
        blocks = segment.get("blocks") if isinstance(segment, dict) else None
        if not isinstance(blocks, list):
            raise ValueError(f"memory_snapshot segment {index} has no 'blocks' list")
        for number, block in enumerate(blocks):
            if not isinstance(block, dict) or not isinstance(block.get("size"), int) or "state" not in block:
                raise ValueError(f"memory_snapshot segment {index} block {number} lacks 'size' or 'state'")
            state = block["state"]
            if state == "inactive":
                largest = max(largest, block["size"])
                total += block["size"]
            elif state not in ("active_allocated", "active_pending_free"):
                raise ValueError(f"memory_snapshot segment {index} block {number}: unknown state {state!r}")
    return largest, total


class Alloc(Component):
    name = "alloc"

    def __init__(self):
        from torch_common import device_kind, import_torch

        self.torch, self.missing = import_torch()
        self.kind = device_kind(self.torch) if self.torch else "cpu"
        path = os.environ.get(PROGRAMS_ENV, "").strip()
        if not path:
            raise ProgramError(f"{PROGRAMS_ENV} is not set: the runner passes the patterns' programs through it")
        self.programs = load_programs(path)

    def describe(self):
        from torch_common import torch_facts

        benchmarks = [
            {"benchmark": pattern, "parameters": size, "throughput": {"elements": program["calls"]}}
            for (pattern, size), program in self.programs.items()
        ]
        if self.torch is None:
            return {"component": self.name, "available": False, "reason": self.missing, "benchmarks": benchmarks}
        facts = torch_facts(self.torch, self.kind)
        facts["allocator"] = (
            "torch c10 CPU allocator (aligned malloc per tensor, no caching) via torch.empty"
            if self.kind == "cpu"
            else "torch CUDACachingAllocator via torch.empty"
        )
        return {"component": self.name, "available": True, "device": self.kind, "facts": facts, "benchmarks": benchmarks}

    def make(self, benchmark, parameters):
        program = self.programs.get((benchmark, parameters))
        if program is None:
            raise ValueError(f"no program for {benchmark}/{parameters} in {os.environ.get(PROGRAMS_ENV)}")
        return Pattern(self.torch, self.kind, program)


class Pattern(Benchmark):
    clock = HostClock()

    def __init__(self, torch, kind, program):
        self.torch = torch
        self.kind = kind
        self.device = "cpu" if kind == "cpu" else "cuda"
        self.ops = program["ops"]
        self.probe_after = program["probe_after"]
        self.slots = [None] * program["slots"]
        self.observed = {}

    def facts(self):
        return {"calls_per_iteration": len(self.ops)}

    def round(self):
        torch, slots, device, uint8 = self.torch, self.slots, self.device, self.torch.uint8
        for slot, size in self.ops:
            slots[slot] = torch.empty(size, dtype=uint8, device=device) if size else None

    def step(self):
        self.round()

    def verify(self):
        """One untimed round: each tensor has its bytes, no two live ones overlap, both ends
        hold what is written; on a GPU the allocator's figures are read on the way."""
        gpu = self.kind != "cpu"
        if gpu:
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats()
        spans = {}
        for index, (slot, size) in enumerate(self.ops):
            if size:
                tensor = self.torch.empty(size, dtype=self.torch.uint8, device=self.device)
                self.check_block(slot, tensor, size, spans)
                self.slots[slot] = tensor
                spans[slot] = (tensor.data_ptr(), size)
            else:
                self.slots[slot] = None
                spans.pop(slot, None)
            if index == self.probe_after and gpu:
                self.observe_probe()
        if gpu:
            self.observe_peaks()
        else:
            why = "not exposed: torch keeps no statistics for CPU tensors (its memory is the process's malloc: see alloc/cpu)"
            self.observed.update({"peaks_note": why, "fragmentation_note": why})

    def check_block(self, slot, tensor, size, spans):
        if tensor.numel() != size:
            raise Mismatch(f"slot {slot}: asked for {size} bytes, got a tensor of {tensor.numel()}")
        start = tensor.data_ptr()
        for other, (begin, length) in spans.items():
            if start < begin + length and begin < start + size:
                raise Mismatch(f"slot {slot} ({start:#x}, {size} bytes) overlaps live slot {other} ({begin:#x}, {length})")
        tensor[0] = 0xA5
        tensor[-1] = 0x5A
        if int(tensor[0]) != 0xA5 or int(tensor[-1]) != 0x5A:
            raise Mismatch(f"slot {slot}: a written byte did not read back")

    def observe_probe(self):
        largest, total = fragmentation_from_snapshot(self.torch.cuda.memory_snapshot())
        self.observed["largest_free_bytes"] = largest
        self.observed["total_free_bytes"] = total
        if total:
            self.observed["fragmentation"] = 1.0 - largest / total
            self.observed["fragmentation_note"] = (
                "1 - largest inactive block / total inactive over the caching allocator's reserved "
                "segments (torch.cuda.memory_snapshot) at the probe point"
            )
        else:
            self.observed["fragmentation_note"] = (
                "none: the reserved segments held no free (inactive) block at the probe point"
            )

    def observe_peaks(self):
        stats = self.torch.cuda.memory_stats()
        keys = {
            "peak_reserved_bytes": "reserved_bytes.all.peak",
            "peak_allocated_bytes": "allocated_bytes.all.peak",
            "peak_requested_bytes": "requested_bytes.all.peak",
        }
        for note, key in keys.items():
            if key not in stats:
                raise KeyError(f"torch.cuda.memory_stats() has no {key!r}")
            self.observed[note] = int(stats[key])
        self.observed["peaks_note"] = (
            "torch.cuda.memory_stats peaks over one untimed round, after empty_cache() and "
            "reset_peak_memory_stats(); allocated is rounded to the allocator's block sizes"
        )

    def metrics(self, latencies_ns):
        return dict(self.observed)

    def teardown(self):
        self.slots = [None] * len(self.slots)
        if self.kind != "cpu":
            self.torch.cuda.empty_cache()


if __name__ == "__main__":
    main(Alloc)
