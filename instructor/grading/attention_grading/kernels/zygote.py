"""A warm parent for grading kernels: imports the heavy libraries once, then forks a kernel per notebook.

Started by ``zygote_client.Zygote`` as ``python zygote.py <fd>``. Each request (one JSON line on the
socket ``fd``) names a kernel's arguments, environment and working directory, and the sandbox
policy it must run under. The zygote forks the kernel into its sandbox (``sandbox.spawn``: its
channel sockets bound by the waiter, PID 1 of fresh namespaces, limits, no privileges, Landlock,
seccomp), where the child becomes ``python -m ipykernel_launcher <arguments>`` on the inherited
sockets (``sandbox.channels``); the zygote answers with the kernel's pid and whether it started.
A real ipykernel runs in every child: only the imports are shared, copy-on-write.

Imported before the first fork: the standard library, ipykernel, the scientific stack and the
sandbox code; nothing of the course, the reference or the hidden tests.
"""
import importlib
import json
import os
import signal
import socket
import sys
import threading

# Same default ipykernel sets at start-up, set before matplotlib reads it, so that forked
# kernels draw inline exactly like cold ones.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "IPython.core.completer",
    "numpy",
    "matplotlib",
    "matplotlib.pyplot",
    "matplotlib.font_manager",
    "scipy.special",
)


_STARTUP_PATH0 = sys.path[0] if sys.path else None
_GRADING_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # instructor/grading


def preload():
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # an optional library missing is a slower kernel, not a broken one
            pass
    if "matplotlib.font_manager" in sys.modules:
        sys.modules["matplotlib.font_manager"].fontManager  # noqa: B018  (builds the font list once)


def become_kernel(request, report, sockets=None):
    """In the forked child (already in its sandbox, or set up by ``plain_child``): become
    ``python -m ipykernel_launcher`` as the request says, on the inherited channel ``sockets``
    (``{endpoint: fd}``; none without a sandbox: it binds its own); ``report`` says ``ready``
    once the kernel is initialised."""
    try:
        os.setsid()  # its own process group: the grader interrupts and kills it as a group
        for signum in (signal.SIGCHLD, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        # PID 1 of a namespace ignores a signal it does not handle: end on a terminate request.
        signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if sys.path and sys.path[0] == _STARTUP_PATH0:
            del sys.path[0]  # as ipykernel_launcher does
        sys.path[:] = [p for p in sys.path if p != _GRADING_DIR]
        _forget_cached_folders()
        import ipykernel_launcher

        from attention_grading.kernels.sandbox.channels import IGNORE_CWD, folder_last

        folder_last()    # the kernel's folder after every installed package, never ahead of one
        argv = [*request["argv"], *([IGNORE_CWD] if IGNORE_CWD not in request["argv"] else [])]
        sys.argv = [ipykernel_launcher.__file__, *argv]
        if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS
            sys.modules["numpy"].random.seed()
        if sockets:
            from attention_grading.kernels.sandbox.channels import use_inherited

            use_inherited(sockets)
        for name in [m for m in sys.modules if m.startswith(("attention_grading", "__zygote"))]:
            del sys.modules[name]
        from ipykernel.kernelapp import IPKernelApp

        app = IPKernelApp.instance()       # what launch_new_instance does, with a signal between
        app.initialize(argv)
        report.ready()
        app.start()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) else 1)


def _forget_cached_folders():
    """matplotlib caches its config and cache folders: the kernel's own (in its environment)
    must be used, not the zygote's."""
    matplotlib = sys.modules.get("matplotlib")
    for name in ("get_configdir", "get_cachedir"):
        getattr(getattr(matplotlib, name, None), "cache_clear", lambda: None)()


def plain_child(request, report):
    """Without a sandbox (the instructor turned it off): a forked kernel as before."""
    prctl_pdeathsig()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    become_kernel(request, report)


def prctl_pdeathsig():
    from attention_grading.kernels.sandbox._libc import PR_SET_PDEATHSIG, prctl

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(request, channel):
    """Fork one kernel for ``request``; (pid, status line)."""
    from attention_grading.kernels.sandbox.forking import fork_reporting
    from attention_grading.kernels.sandbox.policy import Policy
    from attention_grading.kernels.sandbox.spawn import fork_sandboxed

    if request.get("policy"):
        policy = Policy.from_json(request["policy"])
        return fork_sandboxed(policy, lambda report, sockets: become_kernel(request, report, sockets),
                              close=[channel.fileno()])
    return fork_reporting(lambda report: plain_child(request, report), close=[channel.fileno()])


def serve(fd):
    channel = socket.socket(fileno=fd)
    reader = channel.makefile("r", encoding="utf-8")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader's Ctrl-C is the grader's business
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
    assert threading.active_count() == 1, "forking needs a single-threaded parent"
    channel.sendall(b'{"ready": true}\n')
    for line in reader:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            pid, status = spawn(request, channel)
        except Exception as exc:      # the grader hears why, and starts this kernel cold
            pid, status = 0, f"error: {type(exc).__name__}: {exc}"
        channel.sendall((json.dumps({"pid": pid, "status": status}) + "\n").encode())


def _zygote_requests():
    fd = int(sys.argv[1])
    # The sandbox code, found from this file (the zygote runs as a script, not a package).
    sys.path.append(_GRADING_DIR)
    import attention_grading.kernels.sandbox.channels  # noqa: F401
    import attention_grading.kernels.sandbox.spawn  # noqa: F401
    preload()
    serve(fd)


if __name__ == "__main__":
    _zygote_requests()
