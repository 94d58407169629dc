"""A warm parent for grading kernels: imports the heavy libraries once, then forks a kernel per notebook.

Started by ``forked_kernels.Zygote`` as ``python -m attention_grading.zygote <fd>``, with the
environment the kernels would get. Each request (one JSON line on the socket ``fd``) names a
kernel's arguments, environment and working directory; the zygote forks, the child becomes
``python -m ipykernel_launcher <arguments>`` in a new session, and the zygote answers with the
child's pid. A real ipykernel runs in every child: only the imports are shared, copy-on-write.

Imported here: only the standard library, ipykernel and the scientific stack. Nothing of the
course or of the grader is imported, so a kernel starts with the same modules it would have
after a cold start, minus the time.
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


def preload():
    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # an optional library missing is a slower kernel, not a broken one
            pass
    if "matplotlib.font_manager" in sys.modules:
        sys.modules["matplotlib.font_manager"].fontManager  # noqa: B018  (builds the font list once)


def become_kernel(request, channel, ready_fd):
    """In the forked child: turn into ``python -m ipykernel_launcher`` as the request says.

    ``ready_fd`` is written once the kernel has bound its sockets, so that the grader connects
    to listening ports (a client that connects too early waits for ZeroMQ's reconnect timer).
    """
    try:
        os.close(channel.detach())
        os.setsid()  # its own process group: the grader interrupts and kills it as a group
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        cwd = request["cwd"]
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(request["env"])
        if sys.path and sys.path[0] == _STARTUP_PATH0:
            del sys.path[0]  # as ipykernel_launcher does; the kernel adds its own directory back
        import ipykernel_launcher

        sys.argv = [ipykernel_launcher.__file__, *request["argv"]]
        if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS
            sys.modules["numpy"].random.seed()
        from ipykernel.kernelapp import IPKernelApp

        app = IPKernelApp.instance()       # what launch_new_instance does, with a signal between
        app.initialize(request["argv"])
        os.write(ready_fd, b"1")
        os.close(ready_fd)
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
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            become_kernel(request, channel, ready_w)
        os.close(ready_w)
        with os.fdopen(ready_r, "rb") as ready:
            bound = ready.read(1) == b"1"   # b"" if the child died first
        channel.sendall((json.dumps({"pid": pid, "bound": bound}) + "\n").encode())


def _zygote_requests():
    fd = int(sys.argv[1])
    preload()
    serve(fd)


if __name__ == "__main__":
    _zygote_requests()
