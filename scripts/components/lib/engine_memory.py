"""Device memory of an inference engine that runs in other processes.

vLLM's V1 engine core runs in a child process, so this process's torch allocator
(``torch.cuda.max_memory_allocated``) sees about none of the engine's memory. What the
device holds for the engine is read instead, by one of two methods, and the note says
which:

* NVML per process: the memory NVML reports for this process and every descendant (the
  engine core and its workers). Exact, but NVML reports host pids: inside a container with
  its own pid namespace no pid matches, and then
* the drop in the device's free memory (``torch.cuda.mem_get_info``) since before the
  engine started: device-wide, so another process allocating meanwhile is counted too.

The peak is the largest of the samples taken (after engine start and after each timed
run): vLLM reserves its KV cache up front, so the engine's footprint is flat while it runs.

Imports only the standard library; torch and pynvml are passed in or imported lazily.
"""

import os

NVML_METHOD = "nvml per-process used memory of this process and its children (max of samples after each run)"
FREE_METHOD = (
    "torch.cuda.mem_get_info: drop in the device's free memory since before the engine started "
    "(max of samples after each run; device-wide, so other processes count too)"
)


def descendants(pid):
    """Every process below ``pid``, from /proc/<pid>/task/*/children (Linux)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as children:
                    kids = [int(p) for p in children.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def load_nvml():
    """The initialised pynvml module, or None where it is missing or NVML cannot start."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 -- any NVML failure means: use the other method
        return None


def nvml_handle(nvml, torch):
    """The NVML handle of torch's current device, found by PCI bus id (NVML and CUDA
    number devices differently under CUDA_VISIBLE_DEVICES)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    bus_id = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    return nvml.nvmlDeviceGetHandleByPciBusId(bus_id)


class EngineMemory:
    """Created before the engine starts (the free-memory baseline); ``sample()`` after."""

    def __init__(self, torch, nvml=None, children=descendants):
        self.torch = torch
        self.children = children
        self.free_before = torch.cuda.mem_get_info()[0]
        self.nvml = nvml if nvml is not None else load_nvml()
        self.handle = None
        if self.nvml is not None:
            try:
                self.handle = nvml_handle(self.nvml, torch)
            except Exception:  # noqa: BLE001 -- no handle: the free-memory method
                self.handle = None
        self.peak = 0
        self.method = None

    def engine_bytes_nvml(self):
        """Bytes NVML attributes to this process tree, or None when none of its pids is
        among the device's processes (a pid namespace)."""
        if self.handle is None:
            return None
        pids = {os.getpid(), *self.children(os.getpid())}
        processes = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.handle)
        ours = [p.usedGpuMemory for p in processes if p.pid in pids and p.usedGpuMemory is not None]
        return sum(ours) if ours else None

    def sample(self):
        """Takes a sample; returns (peak bytes so far, method)."""
        used = self.engine_bytes_nvml()
        method = NVML_METHOD
        if used is None:
            used = max(0, self.free_before - self.torch.cuda.mem_get_info()[0])
            method = FREE_METHOD
        if self.method not in (None, method):
            # One record must not mix the two methods' numbers.
            self.peak = 0
        self.method = method
        self.peak = max(self.peak, used)
        return self.peak, self.method
