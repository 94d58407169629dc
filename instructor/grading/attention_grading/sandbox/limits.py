"""Resource limits of a sandboxed kernel: rlimits per process, and a cgroup for the whole sandbox
where the machine lets the grader make one (memory and process count of everything it starts)."""
import functools
import os
import resource
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Limits:
    """What a kernel and the processes it starts may use (the README states the same figures)."""

    memory_bytes: int = 4 << 30        # address space of each process (RLIMIT_AS)
    cpu_seconds: int = 900             # CPU time of each process (RLIMIT_CPU), then SIGXCPU
    file_bytes: int = 64 << 20         # largest file it may write (RLIMIT_FSIZE)
    open_files: int = 1024             # RLIMIT_NOFILE
    scratch_bytes: int = 256 << 20     # its writable folder is a tmpfs of this size
    pid_max: int = 364                 # of its PID namespace: at most 363 processes (301 is Linux's floor)
    cgroup_memory_bytes: int = 4 << 30  # all its processes together, where a cgroup can be made
    cgroup_processes: int = 128        # all its processes together, where a cgroup can be made

    def as_dict(self):
        return asdict(self)


def apply_rlimits(limits):
    for name, value in ((resource.RLIMIT_AS, limits.memory_bytes),
                        (resource.RLIMIT_CPU, limits.cpu_seconds),
                        (resource.RLIMIT_FSIZE, limits.file_bytes),
                        (resource.RLIMIT_NOFILE, limits.open_files),
                        (resource.RLIMIT_CORE, 0)):
        hard = value + 10 if name == resource.RLIMIT_CPU else value   # SIGXCPU first, then SIGKILL
        resource.setrlimit(name, (value, hard))


def set_pid_max(limit):
    """Cap the process numbers of this PID namespace (Linux 6.14+; needs /proc mounted for it)."""
    with open("/proc/sys/kernel/pid_max", "w") as fh:
        fh.write(f"{limit}\n")


# ------------------------------------------------------------------ cgroups

CGROUP_PREFIX = "attention-kernel-"      # of the cgroups made for a sandbox (``meter`` looks for it)


def cgroup_of(controller, pid="self"):
    """("v1" or "v2", the folder) of process ``pid``'s cgroup for ``controller`` (a v1 controller's
    own hierarchy, or the v2 hierarchy where it has that controller); (None, None) if none."""
    with open(f"/proc/{pid}/cgroup") as fh:
        entries = [line.rstrip("\n").split(":", 2) for line in fh]
    mounts = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, right = line.split(" - ", 1)
            fstype, _, options = right.split()[:3]
            point = left.split()[4]
            if fstype == "cgroup2":
                mounts.setdefault("", point)
            elif fstype == "cgroup":
                for option in options.split(","):
                    mounts.setdefault(option, point)
    for _, controllers, path in entries:
        if controller in controllers.split(",") and controller in mounts:
            return "v1", Path(mounts[controller]) / path.lstrip("/")
    for hierarchy, controllers, path in entries:
        if hierarchy == "0" and "" in mounts:
            base = Path(mounts[""]) / path.lstrip("/")
            available = (base / "cgroup.controllers").read_text().split() if (base / "cgroup.controllers").exists() else []
            if controller in available:
                return "v2", base
    return None, None


class Cgroups:
    """A memory and a pids cgroup for one sandbox, where the grader may make them (v1 or v2)."""

    SETTINGS = {   # controller: {version: {file: value or a function of the limits}}
        "memory": {"v1": {"memory.limit_in_bytes": lambda l: l.cgroup_memory_bytes},
                   "v2": {"memory.max": lambda l: l.cgroup_memory_bytes}},
        "pids": {"v1": {"pids.max": lambda l: l.cgroup_processes},
                 "v2": {"pids.max": lambda l: l.cgroup_processes}},
    }

    def __init__(self, limits):
        self.folders, self.enforced = [], []
        name = f"{CGROUP_PREFIX}{uuid.uuid4().hex[:12]}"
        for controller, versions in self.SETTINGS.items():
            version, parent = cgroup_of(controller)
            if version is None:
                continue
            folder = parent / name
            try:
                if folder not in self.folders:
                    folder.mkdir()
                    self.folders.append(folder)
                for key, value in versions[version].items():
                    (folder / key).write_text(str(value(limits)))
                self.enforced.append(controller)
            except OSError:
                continue

    def join(self):
        """Move the calling process in (before it starts anything)."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text("0")

    def remove(self, attempts=100):
        """Remove the cgroups once their processes are gone (a killed namespace takes a moment)."""
        import time

        for folder in reversed(self.folders):
            for _ in range(attempts):
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


@functools.lru_cache(maxsize=1)
def cgroup_summary():
    """Which cgroup limits this machine lets the grader set (tried once, then removed)."""
    trial = Cgroups(Limits())
    trial.remove()
    return f"cgroup limits on {' and '.join(trial.enforced)}" if trial.enforced else "no cgroup (rlimits only)"
