"""Start a kernel cold in a sandbox: ``python -I launch.py <policy file> -- <kernel command>``.

jupyter_client runs this instead of the kernel command when kernels are not forked
(``GuardedExecute.fork_kernels = False``). This process stays outside as the waiter: it makes the
namespaces, starts the kernel as PID 1 of its own, forwards a terminate request as a kill, and
exits with the kernel's status. Run as a script, so that the sandbox code is read before the
kernel (which can no longer read it) starts.
"""
import os
import signal
import sys

if __package__ in (None, ""):   # run as a script: import the package this file belongs to
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    __package__ = "attention_grading.sandbox"

from ._libc import PR_SET_PDEATHSIG, prctl  # noqa: E402
from .policy import Policy  # noqa: E402
from .spawn import prepare_namespace, run_inside, wait_and_clean  # noqa: E402


def main(argv):
    policy_file, separator, *command = argv
    if separator != "--" or not command:
        raise SystemExit("usage: launch.py <policy file> -- <kernel command>")
    with open(policy_file) as fh:
        policy = Policy.from_json(fh.read())
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # interrupts are for the kernel (same group)
    cgroups = prepare_namespace(policy)
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(status_r)
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def exec_kernel(status_fd):
            os.write(status_fd, b"ready\n")
            os.close(status_fd)
            os.execv(command[0], command)

        run_inside(policy, cgroups, status_w, exec_kernel)
    os.close(status_w)
    # PID 1 of a namespace ignores SIGTERM unless it handles it: a terminate becomes a kill.
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    with os.fdopen(status_r, "rb") as status:
        line = status.readline().decode(errors="replace").strip()
    if line != "ready":
        sys.stderr.write(f"{line or 'the sandboxed kernel died before it started'}\n")
        with open(policy.log, "a") as log:
            log.write(f"{line}\n")
    return wait_and_clean(pid, cgroups)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
