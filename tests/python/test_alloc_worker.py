"""The torch allocation worker's readers and the alloc record checker, without a GPU:
the programs file the runner writes is read strictly (a malformed one names what is
wrong), torch's memory snapshot gives the largest and total inactive blocks (an unknown
block state or a missing field is an error, never a figure), and the checker fails each
defect it exists for and passes a record with none."""

import copy
import json
import os
import re
import tempfile
import unittest

import helpers

alloc = helpers.load_worker("alloc")
check = helpers.load_worker("check_alloc_run")

PROGRAM = {
    "pattern": "out_of_order",
    "size": "4KiB",
    "slots": 3,
    "probe_after": 3,
    "calls": 6,
    "ops": [[0, 4096], [1, 4096], [0, 0], [2, 6144], [1, 0], [2, 0]],
}


def write(document):
    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(document, handle)
    handle.close()
    return handle.name


class Programs(unittest.TestCase):
    def load(self, *programs):
        path = write({"programs": list(programs)})
        self.addCleanup(os.unlink, path)
        return alloc.load_programs(path)

    def test_a_program_the_runner_writes_is_read(self):
        programs = self.load(PROGRAM)
        program = programs[("out_of_order", "4KiB")]
        self.assertEqual(program["ops"][3], (2, 6144))
        self.assertEqual(program["probe_after"], 3)

    def test_malformed_programs_are_errors_naming_the_fault(self):
        leak = dict(PROGRAM, ops=PROGRAM["ops"][:-1], calls=5)
        double_free = dict(PROGRAM, ops=[[0, 4096], [0, 0], [0, 0]], calls=3, probe_after=0)
        cases = {
            "leaks a block": leak,
            "does not fit the slots": double_free,
            "'slots' is missing": {k: v for k, v in PROGRAM.items() if k != "slots"},
            "not [slot, bytes]": dict(PROGRAM, ops=[[0, -1]] + PROGRAM["ops"][1:]),
            "call count": dict(PROGRAM, calls=7),
        }
        for fault, program in cases.items():
            with self.subTest(fault=fault):
                with self.assertRaisesRegex(alloc.ProgramError, re.escape(fault)):
                    self.load(program)
        with self.assertRaisesRegex(alloc.ProgramError, "cannot read"):
            alloc.load_programs("/nonexistent/programs.json")


class Snapshot(unittest.TestCase):
    SEGMENTS = [
        {"total_size": 2097152, "blocks": [
            {"size": 4096, "state": "active_allocated"},
            {"size": 8192, "state": "inactive"},
            {"size": 4096, "state": "active_allocated"},
            {"size": 2080768, "state": "inactive"},
        ]},
        {"total_size": 20971520, "blocks": [{"size": 20971520, "state": "active_pending_free"}]},
    ]

    def test_free_blocks_are_the_inactive_ones(self):
        largest, total = alloc.fragmentation_from_snapshot(self.SEGMENTS)
        self.assertEqual((largest, total), (2080768, 2088960))

    def test_a_snapshot_in_an_unknown_form_is_an_error(self):
        odd_state = copy.deepcopy(self.SEGMENTS)
        odd_state[0]["blocks"][1]["state"] = "free"
        no_size = copy.deepcopy(self.SEGMENTS)
        del no_size[1]["blocks"][0]["size"]
        for snapshot, fault in ((odd_state, "unknown state 'free'"), (no_size, "lacks 'size'"),
                                ([{"segment": 1}], "no 'blocks' list"), ({}, "not a list")):
            with self.subTest(fault=fault):
                with self.assertRaisesRegex(ValueError, fault):
                    alloc.fragmentation_from_snapshot(snapshot)


def record(**entries):
    return {"benchmarks": entries}


GLIBC = {
    "calls_per_iteration": 192,
    "allocator": "glibc malloc 2.36",
    "peak_requested_bytes": 327680,
    "peak_allocated_bytes": 400000,
    "peak_reserved_bytes": 500000,
    "fragmentation": 0.61,
    "largest_free_bytes": 83552,
    "total_free_bytes": 215424,
}


def measured(notes):
    return {"outcome": "measured", "notes": notes}


class Checker(unittest.TestCase):
    def test_a_sound_cpu_record_passes(self):
        report = record(**{"alloc/cpu/out_of_order/4KiB": measured(GLIBC)})
        self.assertEqual(check.problems_in(report, "cpu", False), [])

    def test_each_defect_is_named(self):
        cases = {
            "failed": {"outcome": "failed", "error": "boom"},
            "calls_per_iteration": measured({k: v for k, v in GLIBC.items() if k != "calls_per_iteration"}),
            "not in [0, 1)": measured(dict(GLIBC, fragmentation=1.0)),
            "free blocks it stands on": measured({k: v for k, v in GLIBC.items() if k != "largest_free_bytes"}),
            "neither a fragmentation": measured({k: v for k, v in GLIBC.items() if k != "fragmentation"}),
            "peaks out of order": measured(dict(GLIBC, peak_reserved_bytes=1)),
            "neither peaks": measured({k: v for k, v in GLIBC.items() if k != "peak_reserved_bytes"}),
        }
        for fault, entry in cases.items():
            with self.subTest(fault=fault):
                report = record(**{"alloc/cpu/out_of_order/4KiB": entry, "alloc/cpu/steady/4KiB": measured(GLIBC)})
                problems = "\n".join(check.problems_in(report, "cpu", False))
                self.assertIn(fault, problems)

    def test_a_gpu_record_needs_every_allocator_of_the_vendor_and_torch_when_asked(self):
        raw = dict(GLIBC, allocator="cuMemAlloc_v2 / cuMemFree_v2", peak_reserved_bytes=0)
        del raw["fragmentation"]
        raw["fragmentation_note"] = "not exposed"
        report = record(**{
            "alloc/cuda/steady/4KiB": measured(raw),
            "alloc/cuda_async/steady/4KiB": {"outcome": "skipped", "reason": "no pools"},
        })
        problems = "\n".join(check.problems_in(report, "cuda", True))
        self.assertIn("alloc/cuda_async: nothing measured (skipped: alloc/cuda_async/steady/4KiB: no pools)", problems)
        self.assertIn("alloc/torch_cuda: nothing measured", problems)
        # The raw allocator's reserve is the device's: no ordering is demanded of it.
        self.assertNotIn("peaks out of order", problems)


if __name__ == "__main__":
    unittest.main()
