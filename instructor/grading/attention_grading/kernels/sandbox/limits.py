"""Resource limits of a sandboxed kernel: rlimits per process, and a cgroup for the whole sandbox
where the machine lets the grader make one (memory and process count of everything it starts)."""
import functools
import os
import resource
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path


def _limit(default, help):
    return field(default=default, metadata={"help": help})


@dataclass
class Limits:
    """What a kernel and the processes it starts may use: a typed settings object of the standard
    library only (the sandbox code runs in a bare Python too), set in nbgrader_config.py as
    ``c.GuardedExecute.sandbox_limits = {"memory_bytes": ...}``; the settings page (docs/settings.md) is
    made from these fields and their help."""

    memory_bytes: int = _limit(4 << 30, "Address space of each process of a kernel (RLIMIT_AS), in bytes.")
    cpu_seconds: int = _limit(900, "CPU time of each process (RLIMIT_CPU), in seconds; SIGXCPU, then SIGKILL "
                                   "10 s later.")
    file_bytes: int = _limit(64 << 20, "Largest file a kernel may write (RLIMIT_FSIZE), in bytes.")
    open_files: int = _limit(1024, "Open files of each process (RLIMIT_NOFILE).")
    scratch_bytes: int = _limit(256 << 20, "Size of the kernel's writable folder, a tmpfs of its own, in bytes.")
    pid_max: int = _limit(364, "pid_max of the kernel's PID namespace: at most this minus one processes "
                               "(Linux's floor is 301).")
    cgroup_memory_bytes: int = _limit(4 << 30, "Memory of all a kernel's processes together, where the grader "
                                               "may make a cgroup, in bytes.")
    cgroup_processes: int = _limit(128, "Processes of a kernel together, where the grader may make a cgroup.")

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


# Graders run one kernel per core; oversubscribed BLAS threads slow matrix products badly.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Every allocation of 128 KiB or more gets pages of its own and returns them when freed (glibc
# otherwise raises that threshold as large arrays come and go, and keeps freed ones in its heap):
# the memory the grader measures around a call (``meter``) is then what the call allocated.
KERNEL_MALLOC = {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}


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
