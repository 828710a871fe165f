"""The five collectives the ``collectives`` worker measures, each with its nccl-tests
definitions: how many bytes a size means, the bus-bandwidth factor, and a result that can be
checked exactly on every rank.

Why exact integers: every rank fills its input with small whole numbers that depend on the
rank and the position (``pattern``), so sums over 8 or 64 ranks stay exact in float32 and
any rank can compute the expected result of every collective without seeing the others'
data. A wrong chunk order, a missing rank or a stale buffer changes at least one element.

Sizes follow nccl-tests: ``bytes`` is the buffer a user passes for all_reduce and
broadcast, the *gathered* output for all_gather, the *full* input for reduce_scatter, and
the per-rank send buffer for all_to_all. algbw = bytes / time; busbw = algbw x factor.
"""

import re

from stackbench_worker import Mismatch

ELEMENT_BYTES = 4  # float32

# nccl-tests' bus-bandwidth factors (doc/PERFORMANCE.md), as functions of the rank count.
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
OPS = tuple(BUSBW_FACTORS)

QUICK_SIZES = (32 << 10, 1 << 20)
FULL_SIZES = tuple(32 << (10 + i) for i in range(20))  # 32 KiB .. 16 GiB, doubling


def sizes_for(suite_name):
    return FULL_SIZES if suite_name == "full" else QUICK_SIZES


def pattern(torch, rank, start, count, device):
    """Whole numbers in [-8, 8] that depend on the rank and the global element index."""
    index = torch.arange(start, start + count, dtype=torch.int64, device=device)
    return ((index * 7 + rank * 13) % 17 - 8).to(torch.float32)


def summed(torch, world, start, count, device):
    total = pattern(torch, 0, start, count, device)
    for rank in range(1, world):
        total += pattern(torch, rank, start, count, device)
    return total


def buffer_elements(op, size_bytes, world):
    """Elements of (input, output) per rank for one size, or raise ValueError."""
    elements = size_bytes // ELEMENT_BYTES
    if elements % world:
        raise ValueError(f"{op}: {size_bytes} bytes do not split into {world} float32 chunks")
    if op in ("all_reduce", "broadcast"):
        return elements, elements
    if op == "all_gather":
        return elements // world, elements
    if op == "reduce_scatter":
        return elements, elements // world
    return elements, elements  # all_to_all


class Collective:
    """One collective on preallocated buffers: ``reset`` fills the inputs, ``run`` does the
    call, ``check`` compares the output with what this rank must hold."""

    def __init__(self, torch, dist, op, size_bytes, rank, world, device, group=None):
        self.torch, self.dist, self.op = torch, dist, op
        self.rank, self.world, self.device, self.group = rank, world, device, group
        self.size_bytes = size_bytes
        n_in, n_out = buffer_elements(op, size_bytes, world)
        self.input = torch.empty(n_in, dtype=torch.float32, device=device)
        self.output = self.input if op in ("all_reduce", "broadcast") else torch.empty(n_out, dtype=torch.float32, device=device)

    def reset(self):
        n = self.input.numel()
        if self.op == "broadcast" and self.rank != 0:
            self.input.fill_(-100.0)  # anything the root's data cannot be
        else:
            self.input.copy_(pattern(self.torch, self.rank, self.rank * n if self.op == "all_gather" else 0, n, self.device))
        if self.output is not self.input:
            self.output.fill_(-100.0)

    def run(self):
        dist, group = self.dist, self.group
        if self.op == "all_reduce":
            dist.all_reduce(self.input, group=group)
        elif self.op == "broadcast":
            dist.broadcast(self.input, src=0, group=group)
        elif self.op == "all_gather":
            dist.all_gather_into_tensor(self.output, self.input, group=group)
        elif self.op == "reduce_scatter":
            dist.reduce_scatter_tensor(self.output, self.input, group=group)
        else:
            dist.all_to_all_single(self.output, self.input, group=group)

    def expected(self):
        torch, world, device = self.torch, self.world, self.device
        n_out = self.output.numel()
        if self.op == "all_reduce":
            return summed(torch, world, 0, n_out, device)
        if self.op == "broadcast":
            return pattern(torch, 0, 0, n_out, device)
        if self.op == "all_gather":
            return pattern_gathered(torch, world, n_out, device)
        if self.op == "reduce_scatter":
            return summed(torch, world, self.rank * n_out, n_out, device)
        chunk = n_out // world  # all_to_all: chunk j comes from rank j's chunk `rank`
        return torch.cat([pattern(torch, j, self.rank * chunk, chunk, device) for j in range(world)])

    def check(self):
        """Raises ``Mismatch`` naming the first wrong element."""
        want = self.expected()
        wrong = (self.output != want).nonzero()
        if wrong.numel():
            at = int(wrong[0])
            raise Mismatch(
                f"{self.op} of {self.size_bytes} bytes on {self.world} ranks: {wrong.numel()} wrong "
                f"element(s) on rank {self.rank}, first at {at}: got {float(self.output[at])}, expected {float(want[at])}"
            )


def pattern_gathered(torch, world, n_out, device):
    chunk = n_out // world
    return torch.cat([pattern(torch, j, j * chunk, chunk, device) for j in range(world)])


def bandwidth_metrics(op, size_bytes, world, seconds_per_call):
    """algbw and busbw in GB/s (10^9 bytes per second, as nccl-tests prints them)."""
    if seconds_per_call <= 0:
        return {}
    algbw = size_bytes / seconds_per_call / 1e9
    return {"algbw_gbps": algbw, "busbw_gbps": algbw * BUSBW_FACTORS[op](world), "busbw_factor": BUSBW_FACTORS[op](world)}


# NCCL's names in its debug log, and its algorithm and protocol numbers where an older NCCL
# logs numbers (src/include/nccl_common.h order).
NCCL_OP_NAMES = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter", "broadcast": "Broadcast"}
NCCL_ALGOS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")


def _named(value, names):
    if value.isdigit():
        index = int(value)
        return f"{names[index]} (#{index})" if index < len(names) else f"#{index}"
    return value


def nccl_tuning_lines(text):
    """Every ``<Op>: <n> Bytes -> Algo X proto Y`` line of NCCL's log (NCCL_DEBUG_SUBSYS=
    TUNING, written by rank 0 of each communicator) as (op name, bytes, algorithm, protocol);
    names in NCCL >= 2.19, numbers before."""
    found = re.findall(r"\b(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+)", text)
    return [(name, int(nbytes), _named(algo, NCCL_ALGOS), _named(proto, NCCL_PROTOCOLS)) for name, nbytes, algo, proto in found]


def nccl_algorithm_for(lines, op, size, world):
    """``Ring/LL128`` for the last line of ``op`` at ``size`` bytes: NCCL counts either the
    whole buffer or one rank's part depending on the op and version, so both match. None
    when the log has no such line (all_to_all runs as point-to-point sends and has none)."""
    name = NCCL_OP_NAMES.get(op)
    matching = [(a, p) for n, b, a, p in lines if n == name and b in (size, size // world)]
    if not matching:
        return None
    algo, proto = matching[-1]
    return f"{algo}/{proto}"
