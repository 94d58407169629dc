"""Grading kernels (attention_grading.kernels.manager): sandboxed, forked from the warm zygote or started
cold, they behave like ordinary kernels.

Real ipykernel processes through jupyter_client: where they run, what they inherit, how they die,
how they are interrupted, and that a lesson executes to the same outputs either way.
"""
import asyncio
import os
import re
import select
import signal

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from attention_grading.kernels import zygote_client
from attention_grading.cells import split_hidden
from attention_grading.kernels.kernel_time import OwnTimeLimits
from attention_grading.kernels.recovery import responsive
from attention_grading.kernels.manager import SandboxedKernelManager, SandboxRequest
from attention_grading.kernels.zygote_client import ForkedProcess
from conftest import ROOT
from notebook_tools import execute


class ForkingKernelManager(SandboxedKernelManager):
    """A kernel manager as GuardedExecute makes one: sandboxed, in a scratch folder of its own."""

    def __init__(self, **kwargs):
        import shutil
        import tempfile
        import weakref

        super().__init__(**kwargs)
        scratch = tempfile.mkdtemp(prefix="attention-kernel-test-")
        weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)   # gone with the manager
        os.makedirs(os.path.join(scratch, "submission"))
        self.sandbox_request = SandboxRequest(scratch, os.path.join(scratch, "submission"), [str(ROOT)])
        self.connection_file = os.path.join(scratch, "connection.json")


class ColdKernelManager(ForkingKernelManager):
    """The same sandbox, the kernel started cold through the launcher."""
    fork_kernels = False


async def _started(cls, cwd, env=None):
    km = cls(kernel_name="python3")
    await km.start_kernel(cwd=str(cwd), env=dict(os.environ) if env is None else env)
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    return km, kc


async def _run(kc, code, timeout=30):
    """(stdout text, error name or None) of ``code``."""
    msg_id = kc.execute(code)
    out, error = [], None
    while True:
        msg = await kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            out.append(content["text"])
        elif kind == "error":
            error = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), error


async def _printed(kc, msg_id, text, timeout=120):
    """Wait until the cell ``msg_id`` has printed ``text``: it is running its code."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        msg = await kc.get_iopub_msg(timeout=max(0.0, deadline - loop.time()))
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and text in msg["content"]["text"]):
            return


def _exit_watch(pid):
    """A pidfd on process ``pid``, opened now; returns ``wait(timeout)``: whether it has exited by
    then (the pidfd becomes readable when it does, reaped by anyone or not)."""
    fd = os.pidfd_open(pid)

    def wait(timeout):
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)
    return wait


async def _stop(km, kc):
    kc.stop_channels()
    await km.shutdown_kernel(now=True)


def test_forked_kernel_runs_where_and_as_asked(tmp_path):
    """Its own folder and environment, its own session, not our child, a fresh numpy seed, no
    grader module loaded, and none of the grader's variables."""
    async def main():
        env = {**os.environ, "ATTENTION_TEST_MARK": "forked", "LANG": "C.UTF-8"}
        probe = ("import os, sys, numpy as np; print(os.getcwd()); print(os.environ.get('ATTENTION_TEST_MARK')); "
                 "print(os.getsid(0) == os.getpid()); print(np.random.random()); "
                 "print(sorted(m for m in sys.modules if m.startswith(('attention_grading', 'attention_reference')))); "
                 "print(os.environ.get('HOME')); print(os.environ.get('LANG'))")
        outputs, pids, scratches = [], [], []
        for _ in range(2):
            km, kc = await _started(ForkingKernelManager, tmp_path, env)
            assert isinstance(km.provisioner.process, ForkedProcess), "the kernel was not forked"
            pids.append(km.provisioner.process.pid)
            scratches.append(km.sandbox_request.scratch)
            outputs.append((await _run(kc, probe))[0].splitlines())
            await _stop(km, kc)
        return outputs, pids, scratches

    outputs, pids, scratches = asyncio.run(main())
    for lines, scratch in zip(outputs, scratches):
        assert lines[0] == os.path.join(scratch, "sandbox", "work")
        assert lines[1] == "None", "a variable of the grader's environment reached the kernel"
        assert lines[2] == "True", "the kernel does not lead its own session (interrupts would miss it)"
        assert lines[4] == "[]", f"the zygote leaked grader modules into the kernel: {lines[4]}"
        assert lines[5] == os.path.join(scratch, "sandbox", "home") and lines[6] == "C.UTF-8"
    assert outputs[0][3] != outputs[1][3], "two forked kernels share numpy's global random state"
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # a child of the zygote, not of the grader


def test_cold_kernels_start_in_the_same_sandbox(tmp_path):
    """With fork_kernels off, the kernel starts through the sandbox launcher: same folder, no
    privileges, Landlock and seccomp."""
    async def main():
        km, kc = await _started(ColdKernelManager, tmp_path)
        assert not isinstance(km.provisioner.process, ForkedProcess)
        out, error = await _run(kc, "import os\nprint(os.getcwd())\nprint(open('/proc/self/status').read())\n"
                                    "try:\n    os.listdir(" + repr(str(ROOT / "instructor")) + ")\n"
                                    "except PermissionError:\n    print('instructor: denied')\n"
                                    "import attention_course\nprint('learner package:', attention_course.__name__)")
        scratch = km.sandbox_request.scratch
        await _stop(km, kc)
        return out, error, scratch

    out, error, scratch = asyncio.run(main())
    assert error is None, out
    assert out.splitlines()[0] == os.path.join(scratch, "sandbox", "work")
    status = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    assert status["CapEff"].strip() == "0000000000000000" and status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2" and "instructor: denied" in out
    assert "learner package: attention_course" in out, "a cold kernel must import the learner package"


@pytest.mark.parametrize("cls", [ForkingKernelManager, ColdKernelManager], ids=["forked", "cold"])
def test_a_folder_handed_in_never_shadows_an_installed_package(tmp_path, cls):
    """Folders handed in beside the notebook under the names of installed packages
    (``attention_course/``, ``numpy/``, ``json.py``) are never imported: the kernel's folder comes
    after everything installed on sys.path. A module of the learner's own still imports."""
    async def main():
        km = cls(kernel_name="python3")
        seed = km.sandbox_request.seed
        for name in ("attention_course", "numpy"):
            os.makedirs(os.path.join(seed, name))
            with open(os.path.join(seed, name, "__init__.py"), "w") as fh:
                fh.write("raise ImportError('the folder handed in was imported')\n")
        with open(os.path.join(seed, "json.py"), "w") as fh:
            fh.write("raise ImportError('the json.py handed in was imported')\n")
        with open(os.path.join(seed, "my_helpers.py"), "w") as fh:
            fh.write("ANSWER = 42\n")
        await km.start_kernel(cwd=str(tmp_path), env=dict(os.environ))
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        out, error = await _run(kc, "import os, sys, importlib\n"
                                    "for name in ('attention_course.capstone', 'numpy', 'json', 'csv'):\n"
                                    "    print(name, importlib.import_module(name).__file__)\n"
                                    "import my_helpers\nprint('helpers', my_helpers.ANSWER)\n"
                                    "print('folder', sys.path.index(os.getcwd()), len(sys.path), '' in sys.path)")
        await _stop(km, kc)
        return out, error

    out, error = asyncio.run(main())
    assert error is None, out
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    for name in ("attention_course.capstone", "numpy", "json"):
        assert "/sandbox/work/" not in lines[name], (name, lines[name])
    assert lines["helpers"] == "42"
    position, length, empty = lines["folder"].split()
    assert int(position) == int(length) - 1 and empty == "False", lines["folder"]


@pytest.mark.parametrize("cls", [ForkingKernelManager, ColdKernelManager], ids=["forked", "cold"])
def test_a_kernel_talks_only_through_the_sockets_its_waiter_bound(tmp_path, cls):
    """Its five channels are UNIX sockets in the grader's scratch folder (jupyter_client's ``ipc``
    transport), bound before the kernel started; the kernel is in a network namespace of its own
    where nothing listens, so no port of this machine is used or needed (jupyter_client#154, a
    port taken between its choice and the bind, cannot happen)."""
    import stat

    async def main():
        km, kc = await _started(cls, tmp_path)
        try:
            out, error = await _run(kc, "print(6 * 7)")
            kernel = km.provisioner.process.pid
            if cls is ColdKernelManager:      # the launcher waits outside; the kernel is its child
                kernel = int(open(f"/proc/{kernel}/task/{kernel}/children").read().split()[0])
            return (out, error, km.transport, km.channel_paths(), km.sandbox_request.scratch,
                    os.readlink(f"/proc/{kernel}/ns/net"), open(f"/proc/{kernel}/net/tcp").read().splitlines(),
                    open(f"/proc/{kernel}/net/dev").read())
        finally:
            await _stop(km, kc)

    out, error, transport, paths, scratch, namespace, tcp, devices = asyncio.run(main())
    assert out.strip() == "42" and error is None
    assert transport == "ipc" and len(paths) == 5
    assert all(p.startswith(os.path.join(scratch, "ch-")) for p in paths)
    assert namespace != os.readlink("/proc/self/ns/net"), "the kernel shares the grader's network"
    assert len(tcp) == 1, f"TCP sockets in the kernel's network namespace: {tcp[1:]}"
    assert [line.split(":")[0].strip() for line in devices.splitlines() if ":" in line] == ["lo"]
    assert not any(os.path.exists(p) and stat.S_ISSOCK(os.stat(p).st_mode) for p in paths), \
        "the channel sockets outlive the kernel"


def test_dead_forked_kernel_is_noticed_and_restart_forks_again(tmp_path):
    """os._exit in the kernel: jupyter_client sees it dead as soon as it has exited; a restart
    gives a working kernel."""
    async def main():
        km, kc = await _started(ForkingKernelManager, tmp_path)
        exited = _exit_watch(km.provisioner.process.pid)
        kc.execute("import os; os._exit(3)")
        assert await asyncio.get_running_loop().run_in_executor(None, exited, 120), "os._exit did not end the kernel"
        dead = not await km.is_alive()          # asked once, right after the exit: no second chance
        await km.restart_kernel(now=True)
        kc.stop_channels()
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        out, _ = await _run(kc, "print(6 * 7)")
        forked = isinstance(km.provisioner.process, ForkedProcess)
        await _stop(km, kc)
        return dead, out, forked

    dead, out, forked = asyncio.run(main())
    assert dead, "jupyter_client still took the kernel for alive after it had exited"
    assert out.strip() == "42" and forked


def test_forked_kernel_is_interrupted_and_killed_as_a_group(tmp_path):
    """An interrupt stops a running cell; shutdown leaves no process behind."""
    async def main():
        km, kc = await _started(ForkingKernelManager, tmp_path)
        # only an interrupt ends it in time
        msg_id = kc.execute("import time; print('asleep', flush=True); time.sleep(3600)")
        await _printed(kc, msg_id, "asleep")      # the interrupt finds the cell running, not yet to start
        await km.interrupt_kernel()
        reply = await kc.get_shell_msg(timeout=300)
        assert reply["parent_header"]["msg_id"] == msg_id
        pid = km.provisioner.process.pid
        await _stop(km, kc)
        return reply["content"], pid

    content, pid = asyncio.run(main())
    assert content["status"] == "error" and content["ename"] == "KeyboardInterrupt"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_other_kernel_commands_start_cold():
    """Only `python -m ipykernel_launcher` is forked; anything else falls back to a cold start."""
    assert zygote_client.zygote_for(["/bin/sh", "-c", "true"]) is None


def test_orphaned_forked_kernels_exit_with_their_zygote(tmp_path):
    """If the zygote goes away, its kernels die with it (parent-death signal): nothing outlives grading."""
    async def main():
        km, kc = await _started(ForkingKernelManager, tmp_path)
        pid = km.provisioner.process.pid
        exited = _exit_watch(pid)
        for z in list(zygote_client._zygotes.values()):
            z.process.send_signal(signal.SIGKILL)
        gone = await asyncio.get_running_loop().run_in_executor(None, exited, 120)
        gone = gone and km.provisioner.process.poll() is not None
        kc.stop_channels()
        if not gone:
            os.kill(pid, signal.SIGKILL)
        await km.shutdown_kernel(now=True)
        zygote_client.close_all()
        return gone

    gone = asyncio.run(main())
    assert gone, "a kernel outlived its zygote (by two minutes)"


TIMING = re.compile(r"\d+(\.\d+)?\s?(ms|s)\b")


def _outputs(nb):
    """What each cell printed or showed: streams joined (their chunking depends on timing),
    timings masked, pictures reduced to their kind."""
    seen = []
    for index, cell in enumerate(nb.cells):
        streams = {}
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                streams[out["name"]] = streams.get(out["name"], "") + TIMING.sub("<time>", out["text"])
            elif out.get("output_type") in ("execute_result", "display_data"):
                data = out.get("data", {})
                seen.append((index, "data", sorted(data), "" if "image/png" in data else data.get("text/plain", "")))
            elif out.get("output_type") == "error":
                seen.append((index, "error", out["ename"]))
        seen += [(index, "stream", name, text) for name, text in sorted(streams.items())]
    return seen


@pytest.mark.parametrize("lesson", ["01_context_vectors"])
def test_a_lesson_runs_to_the_same_outputs_forked_or_cold(lesson, monkeypatch):
    """The solved lesson (its hidden test blocks left out: the grader runs those from outside),
    executed by nbclient in a plain cold kernel and in a sandboxed forked one: same outputs,
    pictures included."""
    path = ROOT / "solutions" / lesson / f"{lesson}.ipynb"
    runs = {}
    for cls in (AsyncKernelManager, ForkingKernelManager):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            cell.source = split_hidden(cell.source)[0]
        execute(NotebookClient(nb, timeout=60, kernel_name="python3", kernel_manager_class=cls,
                               resources={"metadata": {"path": str(path.parent)}}))
        runs[cls.__name__] = _outputs(nb)
    cold, forked = runs["AsyncKernelManager"], runs["ForkingKernelManager"]
    assert any("image/png" in str(o) for o in cold), "the lesson drew no picture"
    assert [o for o in cold if o[1] == "error"] == []
    differing = [(a, b) for a, b in zip(cold, forked) if a != b]
    assert len(cold) == len(forked) and not differing, differing[:3]


def test_a_crashing_cell_raises_dead_kernel_in_nbclient(tmp_path):
    """nbclient running a forked kernel sees a segfault as a dead kernel, as with a cold one (a
    kernel whose death went unnoticed would end in a CellTimeoutError instead, however long the
    machine takes)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import ctypes; ctypes.string_at(0)")])
    client = NotebookClient(nb, timeout=600, kernel_name="python3", kernel_manager_class=ForkingKernelManager,
                            resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(DeadKernelError):
        execute(client)


@pytest.mark.parametrize("cls", [ForkingKernelManager, ColdKernelManager], ids=["forked", "cold"])
def test_the_grader_measures_a_kernels_memory_from_outside(tmp_path, cls):
    """The meter of a kernel's sandbox (its own memory cgroup here) sees what a cell allocates,
    children included; the kernel cannot reset it."""
    from attention_grading.kernels.sandbox.meter import meter_for

    async def main():
        km, kc = await _started(cls, tmp_path)
        try:
            meter = meter_for(km.kernel_pid())
            meter.start()
            # In a child that has ended by the time the grader reads: only a cgroup still counts it.
            allocate = ("if os.fork() == 0:\n    np.ones(60 << 17); os._exit(0)\nos.wait()\n"
                        if type(meter).__name__ == "CgroupMeter" else "kept = np.ones(60 << 17)\n")
            out, error = await _run(kc, "import os, numpy as np\n" + allocate +
                                        "try:\n    open('/proc/self/clear_refs', 'w').write('5')\n"
                                        "except OSError as exc:\n    print(type(exc).__name__)")
            growth = meter.growth()
            meter.close()
            return type(meter).__name__, growth, out
        finally:
            await _stop(km, kc)

    kind, growth, out = asyncio.run(main())
    assert out.strip() == "OSError", out
    assert 55 << 20 <= growth < 200 << 20, (kind, growth)


class OwnTimeClient(OwnTimeLimits, NotebookClient):
    """nbclient as GuardedExecute runs it: interrupted at its limit, counted in the kernel's own time."""
    time_stretch = 10


STARVED_CPU = 0
COMPETITORS = 3
#: A cell that catches every KeyboardInterrupt and loops on (tests/hostile.py's infinite_loop, as a cell).
SWALLOWS_INTERRUPTS = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass"


def _competitors():
    """Busy processes on one CPU, each in a session (and so a scheduling group) of its own, as
    other workers' kernels are: a kernel on that CPU gets about a quarter of it."""
    import subprocess
    import sys

    busy = f"import os\nos.sched_setaffinity(0, {{{STARVED_CPU}}})\nwhile True: pass"
    return [subprocess.Popen([sys.executable, "-c", busy], start_new_session=True) for _ in range(COMPETITORS)]


class PatientOwnTimeClient(OwnTimeClient):
    """Its wall-clock cap (stretch × limit: 80 s for a 2 s limit) lies beyond a 60 s sleep, so
    only the kernel's own-time limit can interrupt such a cell."""
    time_stretch = 40


def test_a_kernel_starved_of_cpu_keeps_its_time_and_a_sleeping_one_is_stopped(tmp_path):
    """With limit 2 s: a cell that needs 1 s of CPU, pinned to a CPU three busy processes share,
    takes longer than 2 s on the wall clock and still ends without an interrupt (the wall clock
    alone would have stopped it); a cell that sleeps 60 s is interrupted all the same, by its
    own-time limit (the wall-clock cap, 80 s, comes after its sleep would have ended). How soon
    after its limit: ``benchmarks/interrupts.py``."""
    work = (f"import os, time\nos.sched_setaffinity(0, {{{STARVED_CPU}}})\n"
            "start = time.process_time()\nwhile time.process_time() - start < 1.0:\n    pass\nprint('done')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(work),
                                         nbformat.v4.new_code_cell("import time\ntime.sleep(60)")])
    client = PatientOwnTimeClient(nb, timeout=2, kernel_name="python3", kernel_manager_class=ForkingKernelManager,
                                  interrupt_on_timeout=True, allow_errors=True, record_timing=True,
                                  resources={"metadata": {"path": str(tmp_path)}})
    competitors = _competitors()
    try:
        execute(client)
    finally:
        for process in competitors:
            process.kill()
            process.wait()
    starved, sleeping = nb.cells
    assert [o.get("text") for o in starved.outputs] == ["done\n"], starved.outputs
    wall = _seconds(starved)
    assert wall > 2, f"the starved cell took {wall:.1f} s: it was not starved, so this test proves nothing"
    assert [o.get("ename") for o in sleeping.outputs] == ["KeyboardInterrupt"], sleeping.outputs


def _seconds(cell):
    from datetime import datetime

    timing = cell.metadata["execution"]
    start, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                  for k in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def test_a_kernel_that_swallows_the_interrupt_is_given_up_on_quickly(tmp_path):
    """Interrupted at its 1 s limit, a kernel that catches every KeyboardInterrupt never says it is
    done: the wait for its last outputs that runs out is nbclient's short one (AFTER_INTERRUPT s,
    as nbclient's error says), not the long one a cell's reply gets (30 s here), and the long one
    is back for the next request. How long that takes: ``benchmarks/interrupts.py``."""
    from nbclient.exceptions import CellTimeoutError

    from attention_grading.kernels.kernel_time import AFTER_INTERRUPT

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SWALLOWS_INTERRUPTS)])
    client = OwnTimeClient(nb, timeout=1, iopub_timeout=30, raise_on_iopub_timeout=True, interrupt_on_timeout=True,
                           error_on_timeout={"ename": "CellTimeoutError", "evalue": "", "traceback": []},
                           kernel_name="python3", kernel_manager_class=ForkingKernelManager,
                           resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellTimeoutError, match=f"after {AFTER_INTERRUPT} seconds") as waited:
        execute(client)
    assert "Timeout waiting for IOPub output" in str(waited.value) and AFTER_INTERRUPT < 30
    assert client.iopub_timeout == 30


def test_a_reply_awaited_outside_a_cell_leaves_the_wait_for_outputs_as_configured(tmp_path):
    """``wait_for_reply`` (the grader's own ``pass``, a restarted kernel's kernel_info) that runs
    out on a kernel stuck in a loop gives None, and the next cell still gets the long wait for its
    outputs: only a cell's own interrupt shortens it."""
    client = OwnTimeClient(nbformat.v4.new_notebook(), timeout=1, iopub_timeout=30, interrupt_on_timeout=True,
                           shell_timeout_interval=1, kernel_name="python3", kernel_manager_class=ForkingKernelManager,
                           resources={"metadata": {"path": str(tmp_path)}})

    async def stuck_then_asked():
        async with client.async_setup_kernel():
            client.kc.execute(SWALLOWS_INTERRUPTS)
            return await client.async_wait_for_reply(client.kc.execute("pass"))

    assert asyncio.run(stuck_then_asked()) is None
    assert client.iopub_timeout == 30


#: Registers a hook that stalls every later request, deaf to interrupts: a kernel that took the
#: interrupt of a cell and then stopped answering.
STALLS_LATER_REQUESTS = """\
import signal, time
def _stall(*_):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(120)
get_ipython().events.register("pre_run_cell", _stall)
"""


def test_a_kernel_that_no_longer_answers_is_found_unresponsive(tmp_path):
    """``recovery.responsive`` (asked after a cell was interrupted): True for a kernel that runs ``pass``,
    False for one that never replies (so the next cell gets a fresh kernel), after a wait of its
    own of a few seconds, not the cell's limit (10 s here); the limit is back afterwards. How long
    it takes: ``benchmarks/interrupts.py``."""
    client = OwnTimeClient(nbformat.v4.new_notebook(), timeout=10, interrupt_on_timeout=True,
                           kernel_name="python3", kernel_manager_class=ForkingKernelManager,
                           resources={"metadata": {"path": str(tmp_path)}})
    waits = []
    limit_of = client._get_timeout
    client._get_timeout = lambda cell: waits.append(limit_of(cell)) or waits[-1]   # the limit each wait had
    with client.setup_kernel():
        assert responsive(client) is True
        client.wait_for_reply(client.kc.execute(STALLS_LATER_REQUESTS))
        del waits[:]
        assert responsive(client) is False
        assert waits and max(waits) <= 5 < client.timeout == 10, waits
