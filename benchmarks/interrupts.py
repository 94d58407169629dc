"""How soon the grader stops a cell, in seconds past what it waited for (the timings that
tests/test_kernels.py proves in kind, not in time):
- a cell that sleeps, limit 2 s of the kernel's own time: from the cell's start to its reply;
- a kernel that swallows every interrupt, limit 1 s: from sending the cell until the grader gives
  up on its last outputs (its limit, then nbclient's short wait, ``AFTER_INTERRUPT``);
- a kernel that stopped answering: how long ``kernels.recovery.responsive`` takes to say so.
Each in a sandboxed kernel forked as grading forks them. Not a timed test: it prints the figures.

Usage: python benchmarks/interrupts.py [--repeats 3]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))

SLEEPS = "import time\ntime.sleep(60)"
SWALLOWS_INTERRUPTS = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"
STALLS_LATER_REQUESTS = """\
import signal, time
def _stall(*_):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(120)
get_ipython().events.register("pre_run_cell", _stall)
"""


def clients():
    """(nbclient with the grader's own-time limits, the same with its kernel recovery), whose
    kernels are sandboxed and forked as ``GuardedExecute`` makes them."""
    from nbclient import NotebookClient

    from attention_grading.kernels.kernel_time import OwnTimeLimits
    from attention_grading.kernels.manager import SandboxedKernelManager, SandboxRequest

    class Manager(SandboxedKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            scratch = tempfile.mkdtemp(prefix="attention-bench-interrupt-")
            os.makedirs(os.path.join(scratch, "submission"))
            self.sandbox_request = SandboxRequest(scratch, os.path.join(scratch, "submission"), [str(REPO)])
            self.connection_file = os.path.join(scratch, "connection.json")

    class Client(OwnTimeLimits, NotebookClient):
        time_stretch = 10

    return Manager, Client


def sleeping_cell(folder):
    """Seconds from the sleeping cell's start (its execute_input) to its interrupted reply."""
    import nbformat

    from notebook_tools import execute

    Manager, Client = clients()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SLEEPS)])
    client = Client(nb, timeout=2, kernel_name="python3", kernel_manager_class=Manager, interrupt_on_timeout=True,
                    allow_errors=True, record_timing=True, resources={"metadata": {"path": folder}})
    execute(client)
    timing = nb.cells[0].metadata["execution"]
    start, end = (_instant(timing[k]) for k in ("iopub.execute_input", "shell.execute_reply"))
    return end - start


def swallowed_interrupt(folder):
    """Seconds from sending the cell to the grader giving up on a kernel that swallows interrupts."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError

    from notebook_tools import execute

    Manager, Client = clients()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SWALLOWS_INTERRUPTS)])
    client = Client(nb, timeout=1, iopub_timeout=30, raise_on_iopub_timeout=True, interrupt_on_timeout=True,
                    error_on_timeout={"ename": "CellTimeoutError", "evalue": "", "traceback": []},
                    kernel_name="python3", kernel_manager_class=Manager, resources={"metadata": {"path": folder}})
    sent = []
    client.on_cell_execute = lambda **_: sent.append(time.monotonic())
    try:
        execute(client)
    except CellTimeoutError:
        return time.monotonic() - sent[0]
    raise AssertionError("the kernel that swallows interrupts was not given up on")


def unresponsive(folder):
    """Seconds ``recovery.responsive`` takes to find a kernel that no longer answers."""
    import nbformat

    from attention_grading.kernels.recovery import responsive

    Manager, Client = clients()
    client = Client(nbformat.v4.new_notebook(), timeout=10, interrupt_on_timeout=True, kernel_name="python3",
                    kernel_manager_class=Manager, resources={"metadata": {"path": folder}})
    with client.setup_kernel():
        client.wait_for_reply(client.kc.execute(STALLS_LATER_REQUESTS))
        started = time.monotonic()
        assert responsive(client) is False
        return time.monotonic() - started


def _instant(stamp):
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from attention_grading.kernels.kernel_time import AFTER_INTERRUPT

    rows = [("a sleeping cell, 2 s limit: from its start to its interrupted reply", sleeping_cell, 2),
            (f"a kernel swallowing interrupts, 1 s limit and {AFTER_INTERRUPT} s for outputs: given up after",
             swallowed_interrupt, 1 + AFTER_INTERRUPT),
            ("a kernel that stopped answering, a wait of 3 s: found unresponsive after", unresponsive, 3)]
    with tempfile.TemporaryDirectory(prefix="attention-bench-interrupts-") as folder:
        for label, measure, expected in rows:
            seconds = [measure(folder) for _ in range(args.repeats)]
            print(f"{label}: median {statistics.median(seconds):.2f} s (configured: {expected} s; "
                  f"runs: {', '.join(f'{s:.2f}' for s in seconds)})", flush=True)


if __name__ == "__main__":
    main()
