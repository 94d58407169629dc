"""Servers on this machine that no sandboxed kernel may reach, for the sandbox's tests
(tests/test_sandbox.py) and the hostile catalogue's (tests/test_hostile_catalogue.py)."""
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path


def peer_process(connection):
    """The pid of the process at the other end of a loopback TCP ``connection`` (None once it has
    closed), from the kernel's socket tables and every process's open files."""
    ours, theirs = connection.getsockname()[1], connection.getpeername()[1]
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote = int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16)
            if local == theirs and remote == ours and fields[9] != "0":
                inode = fields[9]
    if inode is None:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
            except OSError:
                continue
    return None


class Listener:
    """Servers on this machine that no kernel may reach, remembering anything that reached them:
    TCP and UDP on one loopback port, a UNIX stream and a UNIX datagram socket at a pathname and
    at an abstract address (``abstract``: the name after the leading NUL), and a ZeroMQ publisher
    (another kernel's IOPub, for all a subscriber can tell).

    A TCP connection from this machine's own processes (a grader's ZeroMQ client reconnecting to
    a port that was once a kernel's, say) is told from an attack's by where it comes from: only
    a process outside this PID namespace (every kernel has one of its own), or one that cannot be
    found, counts as reaching the listener."""

    def __init__(self):
        import zmq

        self.received, self.ignored = [], []
        self.tcp, self.udp = self._tcp_and_udp()
        self.port = self.tcp.getsockname()[1]
        self.folder = tempfile.mkdtemp(prefix="attention-listener-")
        os.chmod(self.folder, 0o755)
        self.unix_path, self.dgram_path = os.path.join(self.folder, "stream"), os.path.join(self.folder, "datagram")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        self.unix.listen()
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(self.dgram_path)
        for path in (self.unix_path, self.dgram_path):
            os.chmod(path, 0o777)
        self.abstract = f"attention-listener-{os.getpid()}-{self.port}"
        self.abstract_unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract_unix.bind("\0" + self.abstract + "-stream")
        self.abstract_unix.listen()
        self.abstract_dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.abstract_dgram.bind("\0" + self.abstract + "-datagram")
        self.context = zmq.Context()
        self.publisher = self.context.socket(zmq.PUB)
        self.zmq_port = self.publisher.bind_to_random_port("tcp://127.0.0.1")
        self.stopped = threading.Event()
        self.namespace = os.readlink("/proc/self/ns/pid")
        threading.Thread(target=self._accept, args=(self.tcp, True), daemon=True).start()
        for server in (self.unix, self.abstract_unix):
            threading.Thread(target=self._accept, args=(server, False), daemon=True).start()
        for server in (self.udp, self.dgram, self.abstract_dgram):
            threading.Thread(target=self._datagrams, args=(server,), daemon=True).start()
        # zmq sockets are not thread-safe: ``close`` waits for this thread before closing its socket.
        self.publishing = threading.Thread(target=self._publish, daemon=True)
        self.publishing.start()

    @staticmethod
    def _tcp_and_udp(tries=100):
        """A TCP server on a loopback port the system chose, and a UDP socket bound to the same
        number (a separate port space, where another process may hold it: then another pair)."""
        for _ in range(tries):
            tcp = socket.create_server(("127.0.0.1", 0))
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                udp.bind(("127.0.0.1", tcp.getsockname()[1]))
                return tcp, udp
            except OSError:
                tcp.close()
                udp.close()
        raise OSError(f"no loopback port free for both TCP and UDP in {tries} tries")

    def addresses(self):
        """Where the servers listen: ``port`` (TCP and UDP), ``unix_path``, ``dgram_path``, ``zmq_port``,
        and ``abstract`` (``\\0<abstract>-stream`` and ``\\0<abstract>-datagram``)."""
        return {"port": self.port, "unix_path": self.unix_path, "dgram_path": self.dgram_path,
                "zmq_port": self.zmq_port, "abstract": self.abstract}

    def _ours(self, connection):
        pid = peer_process(connection)
        try:
            return pid is not None and os.readlink(f"/proc/{pid}/ns/pid") == self.namespace
        except OSError:
            return False

    def _accept(self, server, tcp):
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            ours = tcp and self._ours(connection)
            connection.settimeout(2)
            try:
                data = connection.recv(100)
            except OSError:
                data = b""
            (self.ignored if ours else self.received).append(("tcp" if tcp else "unix", data))
            connection.close()

    def _datagrams(self, server):
        while True:
            try:
                self.received.append(("datagram", server.recv(100)))
            except OSError:
                return

    def _publish(self):
        while not self.stopped.wait(0.05):
            self.publisher.send(b"another learner's code: def softmax(x): ...")

    def close(self):
        self.stopped.set()
        self.publishing.join()
        for server in (self.tcp, self.udp, self.unix, self.dgram, self.abstract_unix, self.abstract_dgram):
            server.close()
        self.publisher.close(linger=0)
        self.context.term()
        shutil.rmtree(self.folder, ignore_errors=True)
