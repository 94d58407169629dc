"""A free TCP port on loopback, for the servers the tests start (JupyterLab, PostgreSQL, Dask)."""
import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
