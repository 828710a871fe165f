"""The protocol server of the ``collectives`` worker, run by every torchrun rank.

Rank 0 reads each request from stdin and broadcasts it over a gloo control group; every
rank handles it and the outcomes are all-gathered back to rank 0, which combines them into
one response: the first failing rank's error (named), else rank 0's result, with a run's
time being the slowest rank's. When the control exchange itself fails a peer is gone and
the group is broken: the rank exits at once, so the runner sees the worker die and torchrun
(or the runner's timeout) stops the rest.

Timing per sample (one ``run`` request): a barrier on the measured group, then each
participating rank times its own loop -- CUDA events on a GPU, the host clock on CPU
(after the barrier, and gloo calls are synchronous) -- and the slowest rank's time is
reported, as nccl-tests does.
"""

import json
import os
import re
import statistics
import sys
import time
import traceback

import collective_ops as ops
import scaling
from stackbench_worker import CudaClock, HostClock, Mismatch, Skip, import_reason, log, protect_stdout, suite

FAULT_ENV = "STACKBENCH_COLLECTIVE_FAULT"
PARAMETERS = re.compile(r"([a-z]+)_(\d+)r_(.+)")
MEMORY_FRACTION = 0.7  # of free memory per rank a size may need (buffers + the check)


class Context:
    """What a benchmark needs to know about where it runs."""

    def __init__(self, torch, dist, rank, world, device, group, deepspeed=None, deepspeed_reason=None):
        self.torch, self.dist, self.rank, self.world = torch, dist, rank, world
        self.device, self.group = device, group
        self.deepspeed, self.deepspeed_reason = deepspeed, deepspeed_reason


class Fault:
    """The test-only fault of ``STACKBENCH_COLLECTIVE_FAULT`` (``kind:rank:op``), fired once."""

    def __init__(self, rank):
        spec = os.environ.get(FAULT_ENV, "").split(":")
        self.kind, self.op = None, None
        if len(spec) == 3 and spec[1].isdigit() and int(spec[1]) == rank:
            self.kind, self.op = spec[0], spec[2]

    def fire(self, op):
        """Dies or hangs here; returns True when the result should be corrupted."""
        if self.kind is None or op != self.op:
            return False
        kind, self.kind = self.kind, None
        log(f"collectives: injecting '{kind}' at '{op}' ({FAULT_ENV})")
        if kind == "die":
            os._exit(17)
        if kind == "hang":
            while True:
                time.sleep(3600)
        return kind == "corrupt"


class CollectiveBench:
    """One collective at one size, on every rank."""

    def __init__(self, ctx, op, size_bytes):
        self.ctx, self.op, self.size_bytes = ctx, op, size_bytes
        self.work = ops.Collective(ctx.torch, ctx.dist, op, size_bytes, ctx.rank, ctx.world, ctx.device)

    def facts(self):
        return {"op": self.op, "bytes": self.size_bytes, "ranks": self.ctx.world, "dtype": "float32"}

    def verify(self, corrupt=False):
        self.work.reset()
        self.work.run()
        if corrupt:
            self.work.output[0] += 1.0
        self.work.check()
        return {}

    def step(self):
        self.work.run()

    def metrics(self, seconds_per_call, server):
        return ops.bandwidth_metrics(self.op, self.size_bytes, self.ctx.world, seconds_per_call)


class ScalingBench:
    """A scaling row: wraps a lib/scaling.py workload run by the first ``k`` ranks."""

    def __init__(self, workload, kind, k, key):
        self.workload, self.kind, self.k, self.key = workload, kind, k, key

    def facts(self):
        return dict(self.workload.facts(), ranks=self.k)

    def verify(self, corrupt=False):
        if corrupt:
            raise Mismatch(f"{self.kind} on rank {self.workload.ctx.rank}: result corrupted on purpose ({FAULT_ENV})")
        self.workload.verify()
        return {}

    def step(self):
        self.workload.step()

    def metrics(self, seconds_per_call, server):
        times = server.step_ns.setdefault(self.key, {}).setdefault(self.k, [])
        times.append(seconds_per_call * 1e9)
        one = server.step_ns[self.key].get(1)
        out = {"step_ns_median": statistics.median(times)}
        if self.k > 1 and self.kind != "zero_step":
            value = scaling.efficiency("weak" if self.kind == "dp_weak" else "strong", self.k, one and statistics.median(one), out["step_ns_median"])
            out["scaling_efficiency_target"] = scaling.EFFICIENCY_TARGET
            if value is None:
                out["scaling_efficiency"] = "n/a: the 1-rank row was not measured in this session"
            else:
                out["scaling_efficiency"] = value
                out["scaling_meets_target"] = value >= scaling.EFFICIENCY_TARGET
        return out


class RankServer:
    def __init__(self, torch, dist, algorithms):
        self.torch, self.dist = torch, dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.gpu = torch.cuda.is_available()
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.gpu else torch.device("cpu")
        self.backend = ("rccl" if getattr(torch.version, "hip", None) else "nccl") if self.gpu else "gloo"
        self.control = dist.new_group(backend="gloo") if self.gpu else dist.group.WORLD
        self.groups = {}
        self.bench, self.participating, self.algorithm = None, False, None
        self.step_ns = {}
        self.fault = Fault(self.rank)
        self.algorithms = algorithms  # "<op>/<bytes>" -> NCCL's algorithm, from the probe

    # -- describe -------------------------------------------------------------------------

    def describe(self):
        from torch_common import device_kind, torch_facts

        kind = device_kind(self.torch)
        facts = torch_facts(self.torch, kind)
        facts.update(ranks=self.world, backend=self.backend, torch_backend=self.dist.get_backend(), launcher="torchrun")
        if self.gpu:
            facts["interconnect"] = interconnect_topology(self.backend)
        return {"component": "collectives", "available": True, "device": kind, "facts": facts, "benchmarks": self.offered()}

    def offered(self):
        n, b = self.world, self.backend
        rows = []
        for op in ops.OPS:
            for size in ops.sizes_for(suite()):
                rows.append({"benchmark": op, "parameters": f"{b}_{n}r_{size}", "throughput": {"bytes": size}, "skip": self.size_skip(op, size)})
        for k in rank_steps(n):
            rows.append({"benchmark": "dp_strong", "parameters": f"{b}_{k}r_b{scaling.DP_BATCH}_s{scaling.SEQ}", "throughput": {"elements": scaling.DP_BATCH * scaling.SEQ}})
        for k in rank_steps(n):
            rows.append({"benchmark": "dp_weak", "parameters": f"{b}_{k}r_b{scaling.DP_BATCH}_s{scaling.SEQ}", "throughput": {"elements": k * scaling.DP_BATCH * scaling.SEQ}})
        for k in rank_steps(n):
            rows.append({"benchmark": "tp_mlp", "parameters": f"{b}_{k}r_d{scaling.TP_D}_t{scaling.TP_TOKENS}", "throughput": {"elements": scaling.TP_TOKENS}})
        zero_skip = self.zero_skip()
        for stage in range(4):
            rows.append({"benchmark": "zero_step", "parameters": f"{b}_{n}r_stage{stage}_d{scaling.ZERO_D}", "throughput": {"elements": n * scaling.ZERO_TOKENS}, "skip": zero_skip})
        return rows

    def size_skip(self, op, size):
        """A size that would not fit in memory is skipped with the numbers that say so."""
        n_in, n_out = ops.buffer_elements(op, size, self.world)
        need = 4 * (n_in + 2 * n_out)  # input, output, the expected output while checking
        free = free_memory_per_rank(self.torch, self.gpu, self.world)
        if free is not None and need > MEMORY_FRACTION * free:
            return f"{op} of {size} bytes needs about {need / 2**30:.2f} GiB per rank; {free / 2**30:.2f} GiB free per rank"
        return None

    def zero_skip(self):
        if not self.gpu:
            return "DeepSpeed ZeRO rows need a CUDA or ROCm GPU per rank; torch.cuda.is_available() is False"
        try:
            import deepspeed  # noqa: F401
        except Exception as error:
            return import_reason("deepspeed", error)
        return None

    # -- setup ----------------------------------------------------------------------------

    def group_of(self, k):
        """The sub-group of the first k ranks; created on every rank, as torch requires."""
        if k == self.world:
            return None
        if k not in self.groups:
            self.groups[k] = self.dist.new_group(list(range(k)))
        return self.groups[k]

    def setup(self, benchmark, parameters):
        self.teardown()
        self.algorithm = None
        match = PARAMETERS.fullmatch(parameters)
        if match is None or match.group(1) != self.backend:
            raise ValueError(f"collectives parameters {parameters!r} are not {self.backend}_<ranks>r_<rest>")
        k, rest = int(match.group(2)), match.group(3)
        group = self.group_of(k)
        self.participating = self.rank < k
        if not self.participating:
            return {}
        ctx = Context(self.torch, self.dist, self.rank, k, self.device, group)
        self.bench = self.make(ctx, benchmark, k, rest)
        return self.bench.facts()

    def make(self, ctx, benchmark, k, rest):
        if benchmark in ops.OPS:
            return CollectiveBench(ctx, benchmark, int(rest))
        key = (benchmark, rest)
        if benchmark in ("dp_strong", "dp_weak"):
            return ScalingBench(scaling.DataParallelStep(ctx, k, scaling.DP_BATCH, benchmark == "dp_weak"), benchmark, k, key)
        if benchmark == "tp_mlp":
            return ScalingBench(scaling.TensorParallelMlp(ctx, k), benchmark, k, key)
        if benchmark == "zero_step":
            reason = self.zero_skip()
            if reason:
                raise Skip(reason)
            import deepspeed

            ctx.deepspeed = deepspeed
            stage = int(rest.split("_")[0].removeprefix("stage"))
            return ScalingBench(scaling.ZeroStep(ctx, stage), benchmark, k, key)
        raise ValueError(f"collectives does not offer {benchmark!r}")

    # -- verify and run -------------------------------------------------------------------

    def verify(self, corrupt):
        if not self.participating:
            return {}
        result = self.require().verify(corrupt)
        op = getattr(self.bench, "op", None)
        if self.gpu and op is not None:
            # Into every run's metrics (verify's result is not kept).
            self.algorithm = algorithm_note(self.algorithms, op, self.bench.size_bytes)
        return result

    def run(self, iters):
        if not self.participating:
            return {"elapsed_ns": None}
        # The measured group's barrier (the whole world when group is None, and then every
        # rank participates): no rank starts its clock while another is still behind.
        self.dist.barrier(group=self.bench_group())
        bench = self.require()
        clock = CudaClock(self.torch) if self.gpu else HostClock()
        clock.synchronize()
        start = clock.mark()
        for _ in range(iters):
            bench.step()
        end = clock.mark()
        clock.synchronize()
        result = {"elapsed_ns": int(clock.elapsed_ns(start, end))}
        rank_metrics = getattr(getattr(bench, "workload", None), "rank_metrics", None)
        if rank_metrics is not None:
            result.update(rank_metrics())
        return result

    def bench_group(self):
        bench = self.bench
        if bench is None:
            return None
        ctx = bench.ctx if hasattr(bench, "ctx") else bench.workload.ctx
        return ctx.group

    def require(self):
        if self.bench is None:
            raise RuntimeError("no benchmark is set up (send 'setup' first)")
        return self.bench

    def teardown(self):
        bench, self.bench = self.bench, None
        teardown = getattr(getattr(bench, "workload", None), "teardown", None)
        if teardown is not None:
            teardown()

    def local(self, request):
        """This rank's outcome of one request, as a picklable dict."""
        op = request.get("op")
        try:
            corrupt = self.fault.fire(op)
            if op == "describe":
                result = self.describe() if self.rank == 0 else {}
                result["pid"] = os.getpid()
            elif op == "setup":
                result = self.setup(request["benchmark"], request["parameters"])
            elif op == "verify":
                result = self.verify(corrupt)
            elif op == "run":
                result = self.run(int(request["iters"]))
            elif op in ("teardown", "shutdown"):
                self.teardown()
                result = {}
            else:
                raise ValueError(f"unknown op {op!r}")
            return {"ok": True, "result": result}
        except Skip as error:
            return {"ok": False, "kind": "skip", "error": str(error)}
        except Mismatch as error:
            return {"ok": False, "kind": "mismatch", "error": str(error)}
        except Exception as error:
            log(traceback.format_exc())
            return {"ok": False, "kind": "error", "error": f"{type(error).__name__}: {error}"}

    # -- combining the ranks' outcomes on rank 0 ------------------------------------------

    def combine(self, request, outcomes):
        failed = [(rank, o) for rank, o in enumerate(outcomes) if not o["ok"]]
        if failed:
            rank, outcome = failed[0]
            return {"ok": False, "kind": outcome["kind"], "error": f"rank {rank} of {self.world}: {outcome['error']}"}
        results = [o["result"] for o in outcomes]
        op = request.get("op")
        try:
            if op == "describe":
                return {"ok": True, "result": with_pids(results)}
            if op == "run":
                return {"ok": True, "result": self.combine_run(results, int(request["iters"]))}
        except Exception as error:  # a malformed rank result is an error response, not a dead rank 0
            log(traceback.format_exc())
            return {"ok": False, "kind": "error", "error": f"combining the ranks' results: {type(error).__name__}: {error}"}
        return {"ok": True, "result": results[0]}

    def combine_run(self, results, iters):
        times = [r["elapsed_ns"] for r in results if r.get("elapsed_ns") is not None]
        slowest = max(times)
        metrics = {"rank_elapsed_ns": times, "slowest_rank": times.index(slowest), "timer": "cuda_events" if self.gpu else "perf_counter_ns after a barrier"}
        memory = [r["peak_memory_bytes"] for r in results if "peak_memory_bytes" in r]
        if memory:
            metrics.update(peak_memory_bytes_per_rank=memory, peak_memory_bytes=max(memory))
        metrics.update(self.require().metrics(slowest / 1e9 / iters, self))
        if self.algorithm is not None:
            metrics["nccl_algorithm"] = self.algorithm
            if "nvls" in self.algorithm.lower():
                metrics["busbw_note"] = "NVLS (in-switch reduction): busbw is not wire bandwidth"
        return {"elapsed_ns": slowest, "iters": iters, "metrics": metrics}


def with_pids(results):
    description = dict(results[0])
    description.pop("pid", None)
    description.setdefault("facts", {})["rank_pids"] = [r["pid"] for r in results]
    return description


def interconnect_topology(backend):
    """The GPU link matrix as the vendor tool prints it (NVLink ``NV#``/``PIX``/``SYS``;
    xGMI/PCIe on AMD), or why it could not be read: busbw means little without it."""
    import shutil
    import subprocess

    tool = ["rocm-smi", "--showtopotype"] if backend == "rccl" else ["nvidia-smi", "topo", "-m"]
    if shutil.which(tool[0]) is None:
        return f"unknown: {tool[0]} is not on PATH"
    try:
        done = subprocess.run(tool, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"unknown: {' '.join(tool)} failed: {error}"
    if done.returncode != 0:
        return f"unknown: {' '.join(tool)} exited {done.returncode}: {done.stderr.strip()[:200]}"
    return done.stdout.strip()[:4000]


def rank_steps(n):
    """1, 2, 4, ... up to n, and n itself."""
    steps, k = [], 1
    while k < n:
        steps.append(k)
        k *= 2
    return steps + [n]


def free_memory_per_rank(torch, gpu, world):
    if gpu:
        return torch.cuda.mem_get_info()[0]
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // world
    except (OSError, ValueError, IndexError):
        return None
    return None


def exchange(server, request):
    """Every rank: agree on the request, handle it, gather the outcomes (rank 0 combines)."""
    dist = server.dist
    try:
        box = [request]
        dist.broadcast_object_list(box, src=0, group=server.control)
        request = box[0]
        outcome = server.local(request)
        outcomes = [None] * server.world
        dist.all_gather_object(outcomes, outcome, group=server.control)
    except Exception as error:
        log(f"collectives rank {server.rank}: the control exchange failed ({type(error).__name__}: {error}); a peer is gone, exiting")
        sys.stderr.flush()
        os._exit(1)
    return request, outcomes


def algorithm_note(algorithms, op, size):
    if "error" in algorithms:
        return f"not recorded: {algorithms['error']}"
    return algorithms.get(f"{op}/{size}") or "not named in NCCL's debug log"


def load_algorithms(path):
    if not path:
        return {"error": "NCCL_DEBUG was set by the user, so no probe launch ran"}
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        return {"error": f"the NCCL probe's result {path} is unreadable: {error}"}


def probe_algorithms(server, result_path):
    """The probe launch (NCCL's tuning log on): every collective once per size, then rank 0
    reads its own log and writes the algorithm per op and size."""
    torch, dist = server.torch, server.dist
    for op in ops.NCCL_OP_NAMES:
        for size in ops.sizes_for(suite()):
            if server.size_skip(op, size) is None:
                work = ops.Collective(torch, dist, op, size, server.rank, server.world, server.device)
                work.reset()
                work.run()
                torch.cuda.synchronize()
                del work
    dist.barrier()
    if server.rank != 0:
        return
    log_path = os.path.join(os.path.dirname(result_path), f"nccl.{os.getpid()}.log")
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = ops.nccl_tuning_lines(handle.read())
    except OSError as error:
        lines, found = [], {"error": f"NCCL's log {log_path} is unreadable: {error}"}
    else:
        found = {f"{op}/{size}": ops.nccl_algorithm_for(lines, op, size, server.world) for op in ops.NCCL_OP_NAMES for size in ops.sizes_for(suite())}
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(found, handle)


def serve_ranks(probe_path, algorithms_path):
    channel = protect_stdout()
    import torch
    import torch.distributed as dist

    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    server = RankServer(torch, dist, load_algorithms(algorithms_path) if torch.cuda.is_available() else {})
    if probe_path:
        probe_algorithms(server, probe_path)
    elif server.rank == 0:
        serve_rank0(server, channel)
    else:
        while True:
            request, _ = exchange(server, None)
            if request.get("op") == "shutdown":
                break
    dist.destroy_process_group()
    return 0


def serve_rank0(server, channel):
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            respond(channel, {"id": None, "ok": False, "kind": "error", "error": f"not a JSON request: {error}"})
            continue
        request, outcomes = exchange(server, request)
        response = server.combine(request, outcomes)
        response["id"] = request.get("id")
        respond(channel, response)
        if request.get("op") == "shutdown":
            return
    exchange(server, {"op": "shutdown"})  # stdin closed: the others must stop too


def respond(channel, payload):
    channel.write(json.dumps(payload, default=str) + "\n")
    channel.flush()
