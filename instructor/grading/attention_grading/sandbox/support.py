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
    if platform.machine() != "x86_64" or "seccomp" in pretend:
        reasons.append(f"seccomp system call numbers for {platform.machine()} (the filter knows x86_64)")
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
