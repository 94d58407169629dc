"""Start a kernel cold in a sandbox: ``python -I launch.py <policy file> -- <python> -m ipykernel_launcher ...``.

jupyter_client runs this instead of the kernel command when kernels are not forked
(``GuardedExecute.fork_kernels = False``). This process stays outside as the waiter: it binds the
kernel's channel sockets, makes the namespaces, starts the kernel as PID 1 of its own (as
``python -c <channels' bootstrap>``, which hands ipykernel the inherited sockets), forwards a
terminate request as a kill, and exits with the kernel's status. Run as a script, so that the
sandbox code is read before the kernel (which can no longer read it) starts.
"""
import os
import signal
import sys

if __package__ in (None, ""):   # run as a script: import the package this file belongs to
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    __package__ = "attention_grading.kernels.sandbox"

from . import channels  # noqa: E402
from ._libc import PR_SET_PDEATHSIG, prctl  # noqa: E402
from .policy import Policy  # noqa: E402
from .spawn import prepare_namespace, start_inside, wait_and_clean  # noqa: E402

KERNEL_MODULE = ["-m", "ipykernel_launcher"]


def main(argv):
    policy_file, separator, *command = argv
    if separator != "--" or command[1:3] != KERNEL_MODULE:
        raise SystemExit("usage: launch.py <policy file> -- <python> -m ipykernel_launcher <arguments>")
    with open(policy_file) as fh:
        policy = Policy.from_json(fh.read())
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # interrupts are for the kernel (same group)
    bootstrap = channels.bootstrap_source()
    prepared = prepare_namespace(policy)

    def exec_kernel(report, sockets):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for fd in sockets.values():
            os.set_inheritable(fd, True)
        kernel = channels.bootstrap_command(command[0], bootstrap, sockets, command[3:])
        report.ready()
        os.execv(kernel[0], kernel)

    pid, line = start_inside(policy, prepared, exec_kernel)
    prepared.release()
    # PID 1 of a namespace ignores SIGTERM unless it handles it: a terminate becomes a kill.
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    if line != "ready":
        sys.stderr.write(f"{line or 'the sandboxed kernel died before it started'}\n")
        with open(policy.log, "a") as log:
            log.write(f"{line}\n")
    return wait_and_clean(pid, prepared)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
