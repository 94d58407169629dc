"""What a sandboxed kernel may see and use: built by the grader, applied by ``enter``.

The kernel reads only what a kernel needs: the Python installation, the course environment
(without any instructor package), the learner package ``attention_course``, system libraries and
a few files of ``/etc``. It writes only its own scratch folder. Nothing of the course (``source/``,
``solutions/``, ``instructor/``, the gradebook, ``submitted/``, ``autograded/``, other learners'
folders) is on the list; a policy that would expose one of them (a read root that contains it)
is refused.
"""
import json
import os
import sys
import sysconfig
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from ...errors import CourseError
from . import seccomp
from ._libc import syscall_numbers
from .limits import Limits

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
             "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/fonts", "/etc/mime.types",
             "/etc/os-release", "/etc/hosts", "/etc/matplotlibrc", "/etc/alternatives")
KERNEL_FILES = ("/proc", "/sys/devices/system/cpu")   # /proc: its own PID namespace's
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Packages that may sit in the course environment but never in a kernel's view.
INSTRUCTOR_PACKAGES = ("attention_grading", "attention_reference")
KEPT_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "NBGRADER_EXECUTION",
                  "JPY_SESSION_NAME", "JPY_PARENT_PID", "MPLBACKEND", "OPENBLAS_NUM_THREADS",
                  "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYDEVD_DISABLE_FILE_VALIDATION")


class SandboxUnavailable(CourseError):
    """The operating system cannot give a kernel the sandbox the course requires."""


@dataclass
class Policy:
    scratch: str                  # the kernel's private folder, made by the grader
    read_only: list               # folders and files it may read (and execute)
    channels: list                # socket paths of its Jupyter channels, bound by its waiter
    env: dict                     # its whole environment
    seed: Optional[str] = None    # a folder whose files it starts with (the submission's files)
    readable: list = field(default_factory=list)   # files of the grader it reads: its connection file
    listable: list = field(default_factory=list)   # folders it may list but not read: import paths
    font_cache: Optional[str] = None   # matplotlib's font list, copied in (a cold kernel reads it)
    account: Optional[list] = None  # [uid, gid] to switch to, or None: uid 0 without capabilities
    devices: list = field(default_factory=lambda: [d for d in DEVICES if os.path.exists(d)])
    limits: Limits = field(default_factory=Limits)
    # What libseccomp knows of this machine, asked in the grader (a kernel's Python may lack it):
    # the seccomp filter's BPF program (hex, ``seccomp.program``) and the numbers of the system
    # calls the sandbox makes (``_libc.syscall_numbers``).
    seccomp_filter: str = ""
    syscalls: dict = field(default_factory=dict)

    @property
    def root(self):
        """The tmpfs the kernel writes in: ``work`` (its folder), ``home``, ``tmp``."""
        return os.path.join(self.scratch, "sandbox")

    @property
    def work(self):
        return os.path.join(self.root, "work")

    @property
    def log(self):
        return os.path.join(self.scratch, "kernel.log")

    def to_json(self):
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        data["limits"] = Limits(**data["limits"])
        return cls(**data)


def sandbox_dirs(root):
    """The per-kernel folders (inside the tmpfs ``root``) its environment points at."""
    return {"HOME": f"{root}/home", "TMPDIR": f"{root}/tmp", "IPYTHONDIR": f"{root}/home/.ipython",
            "MPLCONFIGDIR": f"{root}/home/.config/matplotlib", "XDG_CACHE_HOME": f"{root}/home/.cache",
            "XDG_CONFIG_HOME": f"{root}/home/.config", "XDG_DATA_HOME": f"{root}/home/.local/share",
            "JUPYTER_RUNTIME_DIR": f"{root}/home/.local/share/jupyter/runtime",
            "JUPYTER_CONFIG_DIR": f"{root}/home/.jupyter", "JUPYTER_DATA_DIR": f"{root}/home/.local/share/jupyter"}


def kernel_environment(requested, root, python=sys.executable):
    """The environment of a sandboxed kernel: a few harmless variables of ``requested`` (never
    PYTHONPATH, never a gradebook URL), a PATH to the course environment and the system, and
    private folders for everything a program writes (home, temp, IPython, matplotlib, Jupyter)."""
    env = {k: v for k, v in requested.items() if k in KEPT_VARIABLES}
    env["PATH"] = os.pathsep.join([str(Path(python).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    env.setdefault("LANG", "C.UTF-8")
    env.update(sandbox_dirs(root))
    return env


def _within(real_path, real_folder):
    """Is ``real_path`` ``real_folder`` or inside it? Both are real paths, resolved once by the
    caller: a policy compares hundreds of roots with each protected path, and resolving both names
    at every comparison took a fifth of a second per kernel."""
    return real_path == real_folder or real_path.startswith(real_folder.rstrip(os.sep) + os.sep)


def _site_packages():
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("purelib", "platlib") if k in paths})


def _instructor_packages():
    """Instructor packages installed in the course environment, and the files of their editable
    installs (``__editable__.attention_grading-*.pth`` and its finder): kept out of kernels' view."""
    return [os.path.join(site, name) for site in _site_packages() if os.path.isdir(site)
            for name in os.listdir(site) if any(package in name for package in INSTRUCTOR_PACKAGES)]


def allow_except(root, excluded, split=None):
    """Paths that cover ``root`` minus everything in ``excluded``: ``[root]`` when nothing
    excluded lies inside it, else its entries, split the same way (Landlock only allows). The
    folders split open are added to ``split``: they stay listable (Python lists a folder of its
    import path to find a module in it), nothing in them readable but the entries allowed."""
    return _allow_except(root, [os.path.realpath(e) for e in excluded], split)


def _allow_except(root, excluded, split):
    """``allow_except`` with ``excluded`` already resolved: each entry's real path is found once."""
    real = os.path.realpath(root)
    inside = [e for e in excluded if _within(e, real)]
    if not inside:
        return [root]
    if any(_within(real, e) for e in inside) or not os.path.isdir(root) or os.path.islink(root):
        return []
    if split is not None:
        split.append(root)
    out = []
    for name in sorted(os.listdir(root)):
        out += _allow_except(os.path.join(root, name), inside, split)
    return out


def runtime_roots(protected=(), python=sys.executable, split=None):
    """What a kernel of this Python needs to read, minus ``protected`` paths and any instructor
    package: the Python installation, the course environment, the learner package, system
    libraries and configuration (``python`` is the kernel's interpreter: the grader's). Folders
    split open to leave something out are added to ``split`` (see ``allow_except``)."""
    candidates = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    candidates.update(_site_packages())
    try:
        import attention_course

        candidates.add(os.path.dirname(os.path.realpath(attention_course.__file__)))
    except ImportError:
        pass
    candidates.update(p for p in SYSTEM_ROOTS + ETC_FILES + KERNEL_FILES if os.path.exists(p))
    excluded = [os.path.realpath(p) for p in protected if p] + _instructor_packages()
    roots = set()
    for candidate in candidates:
        roots.update(allow_except(candidate, excluded, split))
    return _outermost(roots)


def _outermost(paths):
    """``paths`` without those inside another (one rule covers them), compared by real path once
    each: a kernel's policy has hundreds of roots (a split-open site-packages), and comparing every
    pair through ``realpath`` took seconds per kernel."""
    # An ancestor's real path is shorter: it comes first. Of two names of one folder, the first
    # in sort order stays, so that a policy does not depend on the order its roots came in.
    real = sorted(((os.path.realpath(p), p) for p in paths), key=lambda pair: (len(pair[0]), pair[1]))
    kept, seen = [], set()
    for resolved, path in real:
        parents = Path(resolved).parents
        if resolved in seen or any(str(parent) in seen for parent in parents):
            continue
        seen.add(resolved)
        kept.append(path)
    return sorted(kept)


def import_folders(read_only):
    """The import-path folder above the learner package when it is not already readable (an
    editable install puts ``src/`` on the path): Python lists it to find the package, so it may be
    listed, nothing in it read."""
    try:
        import attention_course
    except ImportError:
        return []
    parent = os.path.dirname(os.path.dirname(os.path.realpath(attention_course.__file__)))
    on_path = {os.path.realpath(p) for p in sys.path if p}
    if parent in on_path and not any(_within(parent, os.path.realpath(r)) for r in read_only):
        return [parent]
    return []


def matplotlib_font_cache():
    """The grader's matplotlib font list (``fontlist-v*.json``), if it has one."""
    try:
        import matplotlib

        found = sorted(Path(matplotlib.get_cachedir()).glob("fontlist-v*.json"))
    except Exception:
        return None
    return str(found[-1]) if found else None


def check_exposes_nothing(read_only, protected):
    """A last guard: no read root may contain a protected path (the course, the grader)."""
    resolved = [(path, os.path.realpath(path)) for path in protected if path]
    for root in read_only:
        real_root = os.path.realpath(root)
        for path, real in resolved:
            if _within(real, real_root):
                raise SandboxUnavailable(f"a kernel would read {root}, which holds {path}")


def make(scratch, channels, env, seed=None, readable=(), protected=(), account=None, limits=None,
         seccomp_filter=None, syscalls=None):
    """The policy of one kernel (see ``Policy``); ``channels``: the socket paths its waiter binds
    for it (``sandbox.channels``); ``protected`` paths must stay out of its view; ``seccomp_filter``
    and ``syscalls``: what libseccomp made of this machine (None: asked here)."""
    protected = [str(p) for p in protected] + [str(scratch)]
    split = []
    read_only = runtime_roots(protected, split=split)
    check_exposes_nothing(read_only, protected)
    listable = import_folders(read_only) + sorted(set(split))
    return Policy(scratch=str(scratch), read_only=read_only, channels=[str(c) for c in channels], env=env,
                  font_cache=matplotlib_font_cache(),
                  seed=str(seed) if seed else None, readable=[str(p) for p in readable], listable=listable,
                  account=account, limits=limits or Limits(),
                  seccomp_filter=seccomp.program().hex() if seccomp_filter is None else seccomp_filter,
                  syscalls=syscall_numbers() if syscalls is None else dict(syscalls))
