"""A kernel's Jupyter channels without a network: UNIX sockets that the grader's side binds.

A sandboxed kernel has a network namespace of its own and may not create a socket at all
(``seccomp``). Its five channels are jupyter_client's ``ipc`` transport: the waiter (``spawn``,
``launch``), before the sandbox exists, binds and listens on one UNIX socket per channel at the
paths the grader connects to (in the grader's scratch folder, which the kernel cannot see), and
the kernel inherits the listening sockets. In the kernel, ``use_inherited`` makes ZeroMQ take
each one (``ZMQ_USE_FD``) when ipykernel binds that path, instead of making a socket.

This file is also the bootstrap of a cold kernel, ``python -P -c <this file> <sockets> <kernel
arguments>`` (``bootstrap_command``): a kernel cannot read the grading code, so what it runs is
handed over as text. It imports only the standard library at module level.
"""
import json
import os
import socket
import sys

PREFIX = "ipc://"

#: ipykernel's argument that keeps IPython from putting the kernel's folder on ``sys.path`` ahead
#: of site-packages (``InteractiveShellApp.init_path``): ``folder_last`` puts it after them.
IGNORE_CWD = "--IPKernelApp.ignore_cwd=True"


def endpoint(path):
    """The ZeroMQ endpoint of a channel's socket path (what ipykernel binds, the grader connects to)."""
    return PREFIX + path


def listen(paths, backlog=16):
    """Grader side: bind and listen on a UNIX socket at each path (replacing what is there);
    ``{endpoint: file descriptor}``, the descriptors inheritable by the kernel."""
    sockets = {}
    try:
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(path)
                os.chmod(path, 0o600)          # the grader's alone to connect to
                listener.listen(backlog)
            except BaseException:
                listener.close()
                raise
            sockets[endpoint(path)] = listener.detach()
    except BaseException:
        close(sockets)
        raise
    return sockets


def close(sockets):
    for fd in sockets.values():
        try:
            os.close(fd)
        except OSError:
            pass


def use_inherited(sockets):
    """Kernel side, before ipykernel binds: binding one of ``sockets``' endpoints gives ZeroMQ
    the inherited listening socket (``ZMQ_USE_FD``); once each has been used, ``bind`` is
    ZeroMQ's own again."""
    import zmq
    from zmq.sugar.socket import Socket

    original = Socket.bind
    pending = {str(k): int(v) for k, v in sockets.items()}

    def bind(self, address):
        fd = pending.pop(address, None)
        if fd is not None:
            self.setsockopt(zmq.USE_FD, fd)
        if not pending:
            Socket.bind = original
        return original(self, address)

    Socket.bind = bind


def folder_last():
    """Kernel side, before ipykernel starts (with ``IGNORE_CWD``): the kernel's working folder,
    where the files handed in beside the notebook are, goes on ``sys.path`` after everything
    installed, so that a learner's module of their own still imports but a folder named like an
    installed package (``attention_course/``, ``numpy/``) never shadows it."""
    folder = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", folder)]
    sys.path.append(folder)


def bootstrap_source():
    """This file's text, to run with ``python -c`` (read before the sandbox: a kernel cannot)."""
    with open(__file__, encoding="utf-8") as fh:
        return f"{fh.read()}\nmain()\n"


def bootstrap_command(python, source, sockets, kernel_arguments):
    """The command of a cold kernel that takes ``sockets``: ``bootstrap_source()`` run by ``python -P -c``
    (``-P``: its working folder is not put first on ``sys.path``, where a ``json.py`` handed in
    would be imported by this very file; ``folder_last`` puts it last)."""
    return [python, "-P", "-c", source, json.dumps(sockets), *kernel_arguments]


def main():
    """``python -c`` entry: ``argv[1]`` the sockets (JSON), then ipykernel's own arguments."""
    sockets = json.loads(sys.argv.pop(1))
    folder_last()
    if IGNORE_CWD not in sys.argv:
        sys.argv.append(IGNORE_CWD)
    use_inherited(sockets)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
