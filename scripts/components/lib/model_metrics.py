"""Memory and energy over the timed calls of a model-sweep cell (scripts/components/models.py).

Both cover exactly the timed window: the worker's ``begin_run`` starts them just before a
run's loop and ``end_run`` stops them just after it (and after its synchronize), so neither
the pipe round trip nor a model build is counted. They accumulate over every run of a
cell: the notes describe the whole measurement, like the latency reservoir.

Memory, by the device the cell ran on (the note ``memory_method`` says which):

* ``cpu_rss_sampled``: the process's resident set (``/proc/self/statm``) read by a
  background thread every ``SAMPLE_INTERVAL_S`` and once at each end of the window; the
  average is theirs, the peak the kernel's own high-water mark (``VmHWM``, reset at the
  window's start through ``/proc/self/clear_refs``), which misses no spike; where Linux
  refuses the reset, the peak of the samples. The interval is coarse on purpose: the
  thread takes the GIL for each read: at 2 ms it slowed a tiny GPT-2's decode loop by
  9 % (best of 15 runs on a 2-core machine), at 20 ms by 2 %.
* ``mps_driver_allocated_sampled``: ``torch.mps.driver_allocated_memory`` sampled (peak
  and average of the samples).
* ``cuda_max_memory_allocated`` / ``rocm_max_memory_allocated``: torch's caching allocator
  high-water mark (weights included), the average from the same thread sampling
  ``memory_allocated``. Memory an engine holds outside torch's allocator is not in it.

Energy (the note ``energy_method``, or ``energy_unavailable`` with the reason; a number is
never made up):

* ``rapl:<zone>``: the Linux powercap RAPL counters (``energy_uj``) of every package
  zone, summed; they count the whole package, other processes included.
* ``nvml_total_energy``: NVML's ``nvmlDeviceGetTotalEnergyConsumption`` (mJ) of the GPU.

Imports only the standard library; torch and pynvml are passed in or imported lazily.
"""

import glob
import os
import threading

POWERCAP = "/sys/class/powercap"


SAMPLE_INTERVAL_S = 0.02


def read_rss_bytes(statm="/proc/self/statm"):
    """Resident set of this process in bytes (statm's second field is in pages)."""
    with open(statm, encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Sampler:
    """Reads ``read()`` every ``interval_s`` on a thread between ``start`` and ``stop``;
    keeps the peak, the sum and the count over every window since it was made."""

    def __init__(self, read, interval_s=SAMPLE_INTERVAL_S):
        self.read = read
        self.interval_s = interval_s
        self.peak = 0
        self.total = 0
        self.count = 0
        self._stop = None
        self._thread = None

    def _take(self):
        value = self.read()
        self.peak = max(self.peak, value)
        self.total += value
        self.count += 1

    def _loop(self, stop):
        while not stop.wait(self.interval_s):
            self._take()

    def start(self):
        self._take()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(self._stop,), daemon=True)
        self._thread.start()

    def stop(self):
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._take()

    def summary(self):
        """(peak bytes, average bytes), or (None, None) before any window."""
        if not self.count:
            return None, None
        return self.peak, round(self.total / self.count)


def memory_sampler(device, torch=None):
    """(sampler, method) for the device a cell runs on."""
    if device in ("cuda", "rocm"):
        return AllocatorSampler(torch, device), f"{device}_max_memory_allocated"
    if device == "mps":
        # Apple's unified memory: what the Metal driver holds for this process, which the
        # resident set does not show.
        return Sampler(torch.mps.driver_allocated_memory), "mps_driver_allocated_sampled"
    return RssSampler(), "cpu_rss_sampled"


def read_status_bytes(field, status="/proc/self/status"):
    with open(status, encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"{field} missing from {status}")


class RssSampler(Sampler):
    """The process's resident set: sampled for the average, the kernel's high-water mark
    (reset at each window's start) for the peak where Linux allows the reset."""

    def __init__(self, interval_s=SAMPLE_INTERVAL_S):
        super().__init__(read_rss_bytes, interval_s)
        self.peak_source = "samples"

    def start(self):
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
                clear.write("5")
            self._hwm = True
        except OSError:
            self._hwm = False
        super().start()

    def stop(self):
        super().stop()
        if self._hwm:
            try:
                self.peak = max(self.peak, read_status_bytes("VmHWM"))
                self.peak_source = "VmHWM"
            except OSError:
                pass


class AllocatorSampler(Sampler):
    """torch's allocator on a GPU: the peak is its own high-water mark (which sees every
    allocation, however short), the average the sampled ``memory_allocated``."""

    def __init__(self, torch, device):
        super().__init__(torch.cuda.memory_allocated)
        self.torch = torch
        self.device = device
        # The high-water mark restarts at what is allocated now (the cell's model): an
        # earlier cell's peak must not become this one's.
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def summary(self):
        if not self.count:
            return None, None
        peak = max(self.peak, self.torch.cuda.max_memory_allocated())
        return peak, round(self.total / self.count)


def wrapped_delta(before, after, wrap):
    """Counter difference allowing for one wrap-around at ``wrap`` (RAPL's
    ``max_energy_range_uj``)."""
    return after - before if after >= before else after + wrap - before


class RaplEnergy:
    """The RAPL package zones (``intel-rapl:<n>``, whose name starts with ``package``;
    AMD's are exposed under the same driver name)."""

    def __init__(self, root=POWERCAP):
        self.zones = []
        self.reason = None
        if not os.path.isdir(root):
            self.reason = f"{root} does not exist (no RAPL powercap interface on this machine or in this container)"
            return
        candidates = sorted(glob.glob(os.path.join(root, "intel-rapl:*")))
        unreadable = []
        for zone in candidates:
            if zone.count(":") != 1:  # intel-rapl:0:1 is a sub-zone of package 0
                continue
            try:
                with open(os.path.join(zone, "name"), encoding="ascii") as handle:
                    name = handle.read().strip()
                with open(os.path.join(zone, "max_energy_range_uj"), encoding="ascii") as handle:
                    wrap = int(handle.read())
                self._read(zone)
            except (OSError, ValueError) as error:
                unreadable.append(f"{zone}: {error}")
                continue
            if name.startswith("package"):
                self.zones.append((zone, name, wrap))
        if not self.zones:
            detail = "; ".join(unreadable) if unreadable else f"no intel-rapl:<n> package zone under {root}"
            self.reason = f"RAPL energy counters are not readable: {detail}"

    @staticmethod
    def _read(zone):
        with open(os.path.join(zone, "energy_uj"), encoding="ascii") as handle:
            return int(handle.read())

    @property
    def method(self):
        return "rapl:" + "+".join(name for _, name, _ in self.zones)

    def read(self):
        return [self._read(zone) for zone, _, _ in self.zones]

    def joules(self, before, after):
        return sum(wrapped_delta(b, a, wrap) for b, a, (_, _, wrap) in zip(before, after, self.zones, strict=True)) / 1e6


class NvmlEnergy:
    """NVML's total energy of the GPU torch uses (millijoules since the driver loaded)."""

    method = "nvml_total_energy"

    def __init__(self, torch):
        self.reason = None
        self.handle = None
        try:
            from engine_memory import load_nvml, nvml_handle

            self.nvml = load_nvml()
            if self.nvml is None:
                self.reason = "pynvml is not installed or NVML did not start (nvmlInit failed)"
                return
            self.handle = nvml_handle(self.nvml, torch)
            self.read()
        except Exception as error:  # noqa: BLE001 -- an absent counter is a reason, not a failure
            self.handle = None
            self.reason = f"NVML total energy is not readable on this GPU: {type(error).__name__}: {error}"

    def read(self):
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)

    def joules(self, before, after):
        return (after - before) / 1e3


class EnergyMeter:
    """Energy over the timed windows, or the reason there is none."""

    def __init__(self, device, torch=None, rapl_root=POWERCAP):
        if device == "cpu":
            self.counter = RaplEnergy(rapl_root)
        elif device == "cuda":
            self.counter = NvmlEnergy(torch)
        else:
            self.counter = None
        self.reason = (
            self.counter.reason if self.counter is not None else f"no energy counter is read on device {device}"
        )
        self.joules = 0.0
        self._before = None

    def start(self):
        if self.reason is None:
            self._before = self.counter.read()

    def stop(self):
        if self.reason is None and self._before is not None:
            self.joules += self.counter.joules(self._before, self.counter.read())
            self._before = None

    def metrics(self, work_units, unit):
        """``energy_j_per_<unit>`` and ``energy_method``, or ``energy_unavailable``."""
        if self.reason is not None:
            return {"energy_unavailable": self.reason}
        if self.joules <= 0 or work_units <= 0:
            return {"energy_unavailable": f"{self.counter.method} did not advance over the timed calls (too short a window for its update rate)"}
        return {f"energy_j_per_{unit}": self.joules / work_units, "energy_method": self.counter.method}
