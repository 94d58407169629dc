"""Can this machine sandbox a kernel? Answered by trying it once, in a throwaway child."""
import functools
import os
import platform
import shutil
import tempfile

from . import landlock
from .policy import SandboxUnavailable, kernel_environment, make

# For tests of the refusal path only: names features to treat as missing (it can only refuse).
PRETEND_MISSING = "ATTENTION_SANDBOX_PRETEND_MISSING"


def missing():
    """Why kernels cannot be sandboxed here (a list of plain sentences), or [] when they can."""
    reasons = []
    pretend = {p.strip() for p in os.environ.get(PRETEND_MISSING, "").split(",") if p.strip()}
    if platform.system() != "Linux":
        return [f"a Linux kernel (this is {platform.system()})"]
    seccomp = _seccomp_missing("seccomp" in pretend)
    if seccomp:
        reasons.append(seccomp)
        if "seccomp" not in pretend:
            return reasons          # nor any system call number (libseccomp knows them)
    version = 0 if "landlock" in pretend else landlock.abi()
    if version < 4:
        reasons.append(f"Landlock with TCP rules (ABI 4, Linux 6.7+; this kernel offers ABI {version}: "
                       "enable it with lsm=landlock on the kernel command line if it is built in)")
    if "namespaces" in pretend:
        reasons.append("PID and mount namespaces (run grading as root, or enable unprivileged user "
                       "namespaces: sysctl kernel.unprivileged_userns_clone=1)")
    if reasons:
        return reasons
    trial = _trial()
    return [trial] if trial else []


def _seccomp_missing(pretend=False):
    """Why the seccomp filter cannot be built here (libseccomp, this processor), or None."""
    from ._libc import syscall_numbers
    from .seccomp import ARCHITECTURES, program

    why = "pretended" if pretend else None
    if not pretend:
        try:
            program()
            syscall_numbers()
        except (ImportError, OSError, RuntimeError) as exc:     # no libseccomp, or a processor without a filter
            why = f"{exc}"
    if why is None:
        return None
    return (f"a seccomp filter for {platform.machine()} (built by libseccomp, Debian's libseccomp2, for "
            f"{' and '.join(ARCHITECTURES)}: {why})")


@functools.lru_cache(maxsize=1)
def _trial():
    """Start a sandboxed child that does nothing; its error, or None when it started."""
    from .spawn import fork_sandboxed

    scratch = tempfile.mkdtemp(prefix="attention-sandbox-check-")
    try:
        policy = make(scratch, [os.path.join(scratch, "check")],
                      env=kernel_environment({}, os.path.join(scratch, "sandbox")))
        pid, status = fork_sandboxed(policy, lambda report, sockets: (report.ready(), os._exit(0)))
        if status == "ready":
            return None
        return status.removeprefix("error: ") or "a sandboxed process could not start"
    except (OSError, SandboxUnavailable) as exc:
        return f"{exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def require(allow_unsandboxed=False, warn=print):
    """Stop (SandboxUnavailable) unless kernels can be sandboxed; with ``allow_unsandboxed``,
    warn instead. Returns True when kernels will be sandboxed."""
    reasons = missing()
    if not reasons:
        return True
    text = "; ".join(reasons)
    if not allow_unsandboxed:
        raise SandboxUnavailable(
            f"learner code cannot be sandboxed on this machine: missing {text}. Grading stops here; "
            "to grade WITHOUT a sandbox (learner code could then read the hidden tests and change "
            "other learners' grades), pass --unsandboxed to make grade "
            "(or --GuardedExecute.sandbox=False to nbgrader).")
    warn(f"WARNING: grading WITHOUT a sandbox (missing {text}): learner code runs with the grader's "
         "rights and could read the hidden tests or change other learners' grades.")
    return False
