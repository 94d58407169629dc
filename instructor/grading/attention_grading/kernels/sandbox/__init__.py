"""The operating-system sandbox every graded kernel runs in (see docs/trust.md).

``policy.make`` says what a kernel may read, write, bind and use; ``spawn.fork_sandboxed``
(forked kernels) and ``launch`` (cold kernels) start it as PID 1 of its own namespaces, where
``enter`` applies, in order: mount and IPC namespaces with a private /proc, a tmpfs scratch folder,
resource limits, the privilege drop (``privileges``), Landlock (``landlock``) and seccomp
(``seccomp``). ``support.missing`` says what this machine lacks, by trying it.
"""
from . import account, limits
from .limits import Limits
from .policy import Policy, SandboxUnavailable, kernel_environment, make

__all__ = ["Limits", "Policy", "SandboxUnavailable", "kernel_environment", "make"]
