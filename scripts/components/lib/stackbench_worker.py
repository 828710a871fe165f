"""Shared protocol helper for stackbench component workers.

Every worker (``scripts/components/<name>.py``) is a long-lived process driven by the Rust
runner over JSON lines: one request per line on stdin, one response per line on the
protocol channel. The runner's side is ``crates/measure/src/components/protocol.rs``.

Why it is built this way:

* ``protect_stdout()`` runs before anything heavy is imported: it keeps a private duplicate
  of fd 1 for protocol messages and points fd 1 (and ``sys.stdout``) at stderr, so a
  library that prints -- from Python or from C -- cannot corrupt the channel.
* Timing happens here, inside Python, around the whole loop of ``iters`` calls: the host
  clock (``time.perf_counter_ns``) on CPU, CUDA events plus a synchronize on a GPU. That is
  Criterion's ``iter_custom`` contract, and it keeps the pipe round trip out of the number.
* Per-call times are kept in a bounded reservoir, so latency percentiles (p50/p90/p99)
  come for free from the same runs Criterion times.

This module imports only the standard library, so fake workers in the tests and workers
for absent stacks can use it in a bare interpreter.
"""

import gc
import json
import os
import sys
import time
import traceback

_PROTOCOL = None

# Per-call latencies kept for percentiles: the most recent calls, warm-up included only
# while the measurement has not yet replaced them.
RESERVOIR = 20000


def protect_stdout():
    """Moves the protocol channel off fd 1. Idempotent; returns the channel."""
    global _PROTOCOL
    if _PROTOCOL is None:
        sys.stdout.flush()
        private_fd = os.dup(1)
        os.dup2(2, 1)
        _PROTOCOL = os.fdopen(private_fd, "w", buffering=1, encoding="utf-8")
        sys.stdout = sys.stderr
    return _PROTOCOL


def log(message):
    """Diagnostics go to stderr; the runner keeps its tail for error messages."""
    print(message, file=sys.stderr, flush=True)


class captured_stderr:  # noqa: N801 -- used as a context manager, like contextlib's
    """Captures what native code writes to fd 2 inside the block (ONNX Runtime logs why a
    provider did not start there, from C++), then writes it on to the real stderr so the
    runner's tail still has it. ``.text`` holds it after the block."""

    def __enter__(self):
        import tempfile

        sys.stderr.flush()
        self.text = ""
        self._file = tempfile.TemporaryFile(mode="w+b")
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        sys.stderr.write(self.text)
        sys.stderr.flush()
        return False


class Skip(Exception):
    """The benchmark cannot run here (missing device, backend or package)."""


class Mismatch(Exception):
    """The benchmark ran and its output disagreed with the reference."""


def suite():
    """``quick`` or ``full`` (the runner passes ``STACKBENCH_SUITE`` through)."""
    value = os.environ.get("STACKBENCH_SUITE", "").strip() or "quick"
    return "full" if value == "full" else "quick"


def import_reason(module, error):
    """The precise reason a package is missing, naming this interpreter."""
    return f"{module} is not installed in {sys.executable} (import {module}: {error})"


class ImportFailure(Exception):
    """A package is there but importing it failed (a missing shared library, a version
    conflict, an error inside the package): a broken install is a failure, never a skip."""


def is_absent(module, error):
    """True only when ``error`` says ``module`` itself (or a package it lives in) cannot be
    found. A ``ModuleNotFoundError`` for anything else was raised from inside the package:
    one of its dependencies is missing, which is a broken install."""
    if not isinstance(error, ModuleNotFoundError):
        return False
    missing = getattr(error, "name", None) or ""
    return bool(missing) and (module == missing or module.startswith(missing + "."))


def import_failure(module, error):
    """The ``ImportFailure`` for a present but broken ``module``: the exception, and the
    innermost frames of its traceback (which file raised it)."""
    # importlib's own frozen frames say nothing about the package.
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen")][-3:]
    where = "; ".join(f"{frame.filename}:{frame.lineno}" for frame in frames)
    message = f"{module} is installed in {sys.executable} but importing it failed: {type(error).__name__}: {error}"
    return ImportFailure(message + (f" (raised at {where})" if where else ""))


def import_module(name):
    """(module, None) when ``name`` imports; (None, reason) when it is not installed;
    raises ``ImportFailure`` for every other error."""
    import importlib

    try:
        return importlib.import_module(name), None
    except Exception as error:  # OSError from a missing .so, ImportError, anything a package raises
        if is_absent(name, error):
            return None, import_reason(name, error)
        # The message names the exception and where it was raised; chaining the original
        # traceback too would double what is logged and push the package's own output
        # (printed before it raised) out of the stderr tail the runner keeps.
        raise import_failure(name, error) from None


def import_modules(*names):
    """Imports `names` in order; returns (modules, None), or (None, reason) naming the first
    one that is not installed. A module that is installed but fails to import raises
    ``ImportFailure``."""
    modules = []
    for name in names:
        module, reason = import_module(name)
        if reason:
            return None, reason
        modules.append(module)
    return modules, None


def percentile(sorted_values, fraction):
    """Linear interpolation between closest ranks (numpy's default), on sorted data."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    weight = position - low
    return sorted_values[low] * (1.0 - weight) + sorted_values[high] * weight


def latency_metrics(latencies_ns, prefix="latency"):
    """p50/p90/p99 and the count of observed calls, in nanoseconds."""
    ordered = sorted(latencies_ns)
    if not ordered:
        return {}
    return {
        f"{prefix}_p50_ns": round(percentile(ordered, 0.50)),
        f"{prefix}_p90_ns": round(percentile(ordered, 0.90)),
        f"{prefix}_p99_ns": round(percentile(ordered, 0.99)),
        f"{prefix}_calls_observed": len(ordered),
    }


class HostClock:
    """Marks on the host clock: for CPU work, which is finished when the call returns."""

    name = "perf_counter_ns"

    def prepare(self, count):
        """Nothing to allocate: a host mark is a number."""

    def mark(self):
        return time.perf_counter_ns()

    def synchronize(self):
        pass

    def elapsed_ns(self, start, end):
        return end - start


class CudaClock:
    """Marks as CUDA events on the current stream: recording one does not synchronise, so
    the loop runs as it would in a model; the elapsed times are read after one
    synchronize at the end. The events are created by ``prepare`` before the timed loop:
    creating one is a driver call that would otherwise be inside every timed call."""

    name = "cuda_events"

    def __init__(self, torch):
        self._torch = torch
        self._pool = []
        self._next = 0
        self.created_in_loop = 0

    def prepare(self, count):
        """Creates ``count`` fresh events for the next loop. Fresh, not reused: marks a
        benchmark kept from an earlier run still hold their own recorded events."""
        self._pool = [self._torch.cuda.Event(enable_timing=True) for _ in range(count)]
        self._next = 0

    def mark(self):
        if self._next < len(self._pool):
            event = self._pool[self._next]
            self._next += 1
        else:
            # More marks than prepared (a benchmark that marks inside ``step`` more often
            # than it declared): still correct, and counted so the notes can show it.
            event = self._torch.cuda.Event(enable_timing=True)
            self.created_in_loop += 1
        event.record()
        return event

    def synchronize(self):
        self._torch.cuda.synchronize()

    def elapsed_ns(self, start, end):
        return round(start.elapsed_time(end) * 1e6)


def clock_for(device, torch=None):
    """The clock that times work on ``device`` (``cpu``, ``cuda`` or ``rocm``)."""
    if device in ("cuda", "rocm") and torch is not None:
        return CudaClock(torch)
    return HostClock()


# Above this many calls in one run, CUDA marks are taken only around the whole loop:
# thousands of events per run would cost more than the kernels they time.
MAX_MARKED_CALLS = 4096


class Benchmark:
    """One benchmark set up in a worker. Subclasses build in ``__init__`` (or ``build``),
    check in ``verify`` (raise ``Mismatch``), and do one call's work in ``step``."""

    clock = HostClock()
    # Clock marks ``step`` itself takes per call (tiny GPT marks its first token), so the
    # loop can create their events before timing starts.
    marks_per_step = 0

    def facts(self):
        """Static facts for the notes (compile time, node counts, shapes)."""
        return {}

    def verify(self):
        raise NotImplementedError

    def step(self):
        raise NotImplementedError

    def begin_run(self, iters):
        """Called just before a run's timed loop, outside it: where a benchmark starts what
        must cover exactly the timed calls (a memory sampler, an energy counter)."""

    def end_run(self):
        """Called just after the timed loop and its synchronize, before ``metrics``."""

    # A benchmark may define ``timed_run(iters) -> (total ns, per-call ns list)`` instead
    # of ``step``, when each call needs work outside the timed window (see
    # ``scripts/components/compile.py``).

    def metrics(self, latencies_ns):
        """Extra metrics after a run, from the reservoir of per-call latencies."""
        return latency_metrics(latencies_ns)

    def teardown(self):
        pass


def timed_loop(bench, iters):
    """Runs ``bench.step()`` ``iters`` times; returns (total ns, per-call ns list)."""
    clock = bench.clock
    clock.synchronize()
    mark_each = isinstance(clock, HostClock) or iters <= MAX_MARKED_CALLS
    clock.prepare((iters + 1 if mark_each else 2) + iters * bench.marks_per_step)
    step = bench.step
    if mark_each:
        marks = [clock.mark()]
        append = marks.append
        for _ in range(iters):
            step()
            append(clock.mark())
        clock.synchronize()
        per_call = [clock.elapsed_ns(marks[i], marks[i + 1]) for i in range(iters)]
        return clock.elapsed_ns(marks[0], marks[-1]), per_call
    start = clock.mark()
    for _ in range(iters):
        step()
    end = clock.mark()
    clock.synchronize()
    return clock.elapsed_ns(start, end), []


class Component:
    """A worker's component: subclasses fill ``describe`` and ``make``."""

    name = "component"

    def describe(self):
        """Returns a dict: available, reason, device, facts, benchmarks (see protocol.rs)."""
        raise NotImplementedError

    def make(self, benchmark, parameters):
        """Builds and returns the ``Benchmark`` for one offered id (raise Skip if it
        cannot run here)."""
        raise NotImplementedError


class _Server:
    def __init__(self, component):
        self.component = component
        self.bench = None
        self.latencies = []

    def handle(self, request):
        op = request.get("op")
        if op == "describe":
            return self.component.describe()
        if op == "setup":
            self.teardown()
            self.bench = self.component.make(request["benchmark"], request["parameters"])
            self.latencies = []
            return self.bench.facts()
        if op == "verify":
            self.require_bench().verify()
            return {}
        if op == "run":
            return self.run(int(request["iters"]))
        if op == "teardown":
            self.teardown()
            return {}
        if op == "shutdown":
            self.teardown()
            return {}
        raise ValueError(f"unknown op {op!r}")

    def require_bench(self):
        if self.bench is None:
            raise RuntimeError("no benchmark is set up (send 'setup' first)")
        return self.bench

    def run(self, iters):
        bench = self.require_bench()
        if iters < 1:
            raise ValueError(f"iters must be >= 1, got {iters}")
        bench.begin_run(iters)
        try:
            # A benchmark whose every call needs untimed preparation (a compile benchmark
            # empties its caches before each sample) times its own calls.
            own = getattr(bench, "timed_run", None)
            total_ns, per_call = own(iters) if own else timed_loop(bench, iters)
        finally:
            bench.end_run()
        self.latencies.extend(per_call)
        if len(self.latencies) > RESERVOIR:
            del self.latencies[: len(self.latencies) - RESERVOIR]
        metrics = bench.metrics(self.latencies)
        metrics["timer"] = bench.clock.name
        return {"elapsed_ns": int(total_ns), "iters": iters, "metrics": metrics}

    def teardown(self):
        if self.bench is not None:
            try:
                self.bench.teardown()
            finally:
                self.bench = None
                self.latencies = []
                release_device_cache()


def release_device_cache():
    """Hands the previous benchmark's memory back before the next one is set up, so no
    benchmark runs in the blocks its predecessor left in torch's caching allocator. Found on
    an H100: after the materialised cases of b8_h16_s8192, 14 GiB stayed reserved but
    unallocated and SDPA's math backend then ran out of memory in its setup."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    gc.collect()  # the benchmark's tensors may sit in reference cycles (closures, tracebacks)
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.empty_cache()


def _respond(channel, payload):
    channel.write(json.dumps(payload, default=str) + "\n")
    channel.flush()


def serve(component):
    """Answers requests until stdin closes or ``shutdown`` arrives. The benchmark set up
    last is torn down either way: a runner that closes stdin without ``teardown`` (its
    process ending, a dropped session) still gets its files removed (ONNX Runtime's
    optimised model under /tmp)."""
    channel = protect_stdout()
    server = _Server(component)
    try:
        _answer(channel, server)
    finally:
        try:
            server.teardown()
        except Exception:  # the worker is leaving: say why, never mask the first error
            log(traceback.format_exc())


def _answer(channel, server):
    """The request loop of ``serve``: one response per request line, until EOF or shutdown."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            result = server.handle(request)
            _respond(channel, {"id": request_id, "ok": True, "result": result})
            if request.get("op") == "shutdown":
                return
        except Skip as error:
            _respond(channel, {"id": request_id, "ok": False, "kind": "skip", "error": str(error)})
        except Mismatch as error:
            _respond(channel, {"id": request_id, "ok": False, "kind": "mismatch", "error": str(error)})
        except Exception as error:  # every failure becomes a response; the worker lives on
            if not getattr(error, "stackbench_logged", False):
                log(traceback.format_exc())
            message = f"{type(error).__name__}: {error}"
            _respond(channel, {"id": request_id, "ok": False, "kind": "error", "error": message})


class _Broken(Component):
    """Stands in for a component whose construction raised (a broken import): every
    request, ``describe`` first, fails with that error, so the runner records a failure
    with the message instead of a bare exit status."""

    def __init__(self, error):
        self.error = error

    def describe(self):
        raise self.error

    def make(self, benchmark, parameters):
        raise self.error


def main(make_component):
    """Entry point: protect the channel *before* ``make_component`` imports anything."""
    protect_stdout()
    try:
        component = make_component()
    except Exception as error:  # the traceback goes to stderr, whose tail the runner keeps
        log(traceback.format_exc())
        # Logged once here: the tail the runner keeps should not be a second copy of it.
        error.stackbench_logged = True
        component = _Broken(error)
    serve(component)
