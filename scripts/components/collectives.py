"""stackbench worker: torch.distributed collectives and multi-rank scaling, launched
through ``torchrun`` with one process per device.

How the multi-rank launch fits the one-worker protocol: the runner starts this script as
usual (its own process group). Unless torch or torchrun is missing -- then it stays a plain
worker that reports why -- it *execs* ``torchrun``, so the process the runner holds (and
whose group it kills) is torchrun's agent. Rank 0 inherits the agent's stdin and stdout
and speaks the protocol; every request is broadcast to the other ranks over a gloo control
group, every rank handles it, and rank 0 answers with all ranks' outcomes combined: the
first rank's failure wins, a run reports the slowest rank's time.

torchrun starts each rank in a *new session*, beyond a kill of the runner's group; so every
rank asks the kernel for SIGKILL when its parent (the agent) dies (``PR_SET_PDEATHSIG``).
A rank that dies makes the agent stop the others and exit; a rank that hangs makes the
runner's timeout kill the agent's group, and with it every rank. Nothing is left behind.

Benchmarks (``components/collectives/<benchmark>/<parameters>``):

* ``<op>/<backend>_<N>r_<bytes>`` for all_reduce, all_gather, reduce_scatter, broadcast,
  all_to_all (sizes as nccl-tests defines them; see lib/collective_ops.py); notes carry
  algbw and busbw (GB/s), every rank's time, and on a GPU NCCL's algorithm for that op
  and size, from a separate probe launch with NCCL's tuning log on (the timed launch runs
  without it: NCCL logs every call).
* ``dp_strong`` / ``dp_weak/<backend>_<k>r_b<B>_s<S>``, ``tp_mlp/<backend>_<k>r_d<D>_t<T>``,
  ``zero_step/<backend>_<N>r_stage<s>_d<D>``: see lib/scaling.py.

Backends: ``nccl`` on CUDA, ``rccl`` on ROCm (torch's ``nccl`` name), ``gloo`` on CPU.
Knobs: ``STACKBENCH_COLLECTIVE_RANKS`` (default: the GPU count, else 2 on CPU),
``STACKBENCH_TORCHRUN`` (default: ``torchrun`` beside the interpreter, else on PATH),
``STACKBENCH_COLLECTIVE_FAULT=<die|hang|corrupt>:<rank>:<op>`` (tests only: make one
rank die, hang or corrupt its result at its first ``op`` request).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [os.path.join(_HERE, "lib")] + [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import json  # noqa: E402
import shutil  # noqa: E402

import stackbench_worker as sw  # noqa: E402
from stackbench_worker import Skip, log  # noqa: E402

RANK_MODE_ENV = "STACKBENCH_COLLECTIVE_RANK_MODE"
AGENT_PID_ENV = "STACKBENCH_COLLECTIVE_AGENT_PID"
PROBE_ENV = "STACKBENCH_COLLECTIVE_NCCL_PROBE"
ALGORITHMS_ENV = "STACKBENCH_COLLECTIVE_NCCL_ALGORITHMS"


class Unavailable(sw.Component):
    """What answers when torchrun cannot be launched: every request says why."""

    name = "collectives"

    def __init__(self, reason):
        self.reason = reason

    def describe(self):
        return {"component": self.name, "available": False, "reason": self.reason, "benchmarks": []}

    def make(self, benchmark, parameters):
        raise Skip(self.reason)


def find_torchrun():
    explicit = os.environ.get("STACKBENCH_TORCHRUN", "").strip()
    if explicit:
        if os.access(explicit, os.X_OK):
            return explicit, None
        return None, f"STACKBENCH_TORCHRUN={explicit!r} is not an executable file"
    beside = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if os.access(beside, os.X_OK):
        return beside, None
    found = shutil.which("torchrun")
    if found:
        return found, None
    return None, f"torchrun is not installed beside {sys.executable} nor on PATH (it comes with torch)"


def rank_count(torch):
    explicit = os.environ.get("STACKBENCH_COLLECTIVE_RANKS", "").strip()
    if explicit:
        if not explicit.isdigit() or int(explicit) < 2:
            return None, f"STACKBENCH_COLLECTIVE_RANKS={explicit!r} is not a whole number >= 2"
        return int(explicit), None
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        if count < 2:
            return None, f"one GPU visible ({torch.cuda.get_device_name(0)}): collectives need >= 2 ranks, one per device"
        return count, None
    return 2, None


def launch():
    """Execs torchrun on this script, or serves the reason it cannot."""
    torch, missing = __import__("torch_common").import_torch()
    torchrun, reason = find_torchrun()
    ranks, bad_ranks = (None, missing) if missing else rank_count(torch)
    reason = missing or reason or bad_ranks
    if reason:
        sw.main(lambda: Unavailable(reason))
        return
    env = dict(os.environ, **{RANK_MODE_ENV: "1", AGENT_PID_ENV: str(os.getpid())})
    argv = [torchrun, "--standalone", f"--nproc-per-node={ranks}", "--max-restarts=0", "--monitor-interval=0.1", os.path.abspath(__file__)]
    if torch.cuda.is_available() and "NCCL_DEBUG" not in os.environ:
        env[ALGORITHMS_ENV] = probe_nccl_algorithms(argv, env)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(torchrun, argv, env)


def probe_nccl_algorithms(argv, env):
    """Runs every collective once in a separate launch with NCCL's tuning log on, and
    returns the file naming the algorithm per op and size (or why there is none). The timed
    launch runs without the log: NCCL writes a line per call, which would be timed too."""
    import subprocess
    import tempfile

    logs = tempfile.mkdtemp(prefix="stackbench-nccl-")
    result = os.path.join(logs, "algorithms.json")
    probe_env = dict(env, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,TUNING", NCCL_DEBUG_FILE=os.path.join(logs, "nccl.%p.log"))
    probe_env.update({PROBE_ENV: result, AGENT_PID_ENV: ""})
    try:
        # Same process group as this launcher: a kill of the group stops the probe too.
        done = subprocess.run(argv, env=probe_env, stdin=subprocess.DEVNULL, stdout=sys.stderr, timeout=900)
        failure = None if done.returncode == 0 else f"the NCCL probe launch exited {done.returncode}"
    except (OSError, subprocess.SubprocessError) as error:
        failure = f"the NCCL probe launch failed: {error}"
    if failure is not None:
        with open(result, "w", encoding="utf-8") as handle:
            json.dump({"error": failure}, handle)
    return result


def die_with_parent():
    """SIGKILL this rank when torchrun's agent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    if libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0) != 0:
        log(f"collectives: prctl(PR_SET_PDEATHSIG) failed with errno {ctypes.get_errno()}")
    agent = os.environ.get(AGENT_PID_ENV)
    if agent and agent.isdigit() and os.getppid() != int(agent):
        os._exit(70)  # the agent is already gone: nobody would reap or stop us


if __name__ == "__main__" and os.environ.get(RANK_MODE_ENV) != "1":
    # No protect_stdout() here: its private channel is not inherited across exec, and rank
    # 0 needs the real fd 1. Only the import of torch runs before the exec.
    launch()
    sys.exit(0)

from rank_server import serve_ranks  # noqa: E402

if __name__ == "__main__":
    die_with_parent()
    sys.exit(serve_ranks(os.environ.get(PROBE_ENV), os.environ.get(ALGORITHMS_ENV)))
