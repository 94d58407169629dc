"""The memory a sandbox takes while it works, measured by the grader from outside the sandbox.

Points that depend on a measurement (lesson 08: memory that grows like T, not T²) are decided on a
figure the kernel cannot touch: in a fresh kernel, the grader starts the meter before the learner's
answer cells run (``kernels.measurement``) and reads it when each measured call's result comes back
(``hidden.conversation.Conversation``), counting the growth over what the sandbox held at the start (never
reset in between, so each reading is the most taken since the start). Every process of the sandbox
counts, children included. Nothing of it is in the kernel's reach: its cgroup's files are outside
its view, and its ``/proc`` is read-only (``/proc/self/clear_refs`` cannot be written).

- cgroup v2: ``memory.peak``, reset for this reader by writing to it (Linux 6.12+), and
  ``memory.current``;
- cgroup v1: ``memory.max_usage_in_bytes`` (reset by writing 0) and ``memory.usage_in_bytes``;
- no cgroup (the grader could not make one): the resident sets of the sandbox's processes (the
  kernel is PID 1 of its namespace: every process in it descends from it), ``clear_refs`` 5 to
  reset each peak (``VmHWM``), ``VmRSS`` as the baseline. A child that ends before the call
  returns is not counted there (docs/trust.md, residual risks).
"""
import os

from .limits import CGROUP_PREFIX, cgroup_of


class CgroupMeter:
    """Peak memory of one cgroup (v1 or v2) since ``start``."""

    FILES = {"v1": ("memory.max_usage_in_bytes", "memory.usage_in_bytes"),
             "v2": ("memory.peak", "memory.current")}

    def __init__(self, version, folder):
        self.version, self.folder = version, folder
        peak, current = self.FILES[version]
        self._current = os.path.join(folder, current)
        self._peak = os.open(os.path.join(folder, peak), os.O_RDWR)   # a v2 reset is per open file
        self.base = None

    def _read(self, path):
        with open(path) as fh:
            return int(fh.read().split()[0])

    def start(self):
        os.pwrite(self._peak, b"0\n" if self.version == "v1" else b"reset\n", 0)
        self.base = self._read(self._current)

    def growth(self):
        peak = int(os.pread(self._peak, 64, 0).split()[0])
        return max(peak - self.base, 0) if self.base is not None else None

    def close(self):
        os.close(self._peak)


class ProcessMeter:
    """Peak resident memory of process ``pid`` and its descendants since ``start``."""

    def __init__(self, pid):
        self.pid, self.base = pid, None

    def processes(self):
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as fh:
                        todo += [int(child) for child in fh.read().split()]
            except OSError:
                continue
        return found

    @staticmethod
    def _status(pid, field):
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith(field + ":"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def start(self):
        for pid in self.processes():
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as fh:
                    fh.write("5")
            except OSError:
                pass
        self.base = sum(self._status(pid, "VmRSS") for pid in self.processes())

    def growth(self):
        if self.base is None:
            return None
        return max(sum(self._status(pid, "VmHWM") for pid in self.processes()) - self.base, 0)

    def close(self):
        pass


def meter_for(pid, cgroups=True):
    """A meter of the sandbox whose first process is ``pid``: the memory cgroup made for the
    sandbox where there is one whose peak can be reset, else its processes' (``cgroups=False``:
    always its processes')."""
    if cgroups:
        try:
            version, folder = cgroup_of("memory", pid)
            if version is not None and folder.name.startswith(CGROUP_PREFIX):
                meter = CgroupMeter(version, str(folder))
                try:
                    meter.start()          # proves the reset works (a v2 peak needs Linux 6.12+)
                    return meter
                except OSError:
                    meter.close()
        except OSError:
            pass
    return ProcessMeter(pid)
