"""How long until a kernel runs code: started cold by jupyter_client (no sandbox), started cold in
the grading sandbox (through attention_grading/kernels/sandbox/launch.py), or forked from the warm parent
into the sandbox, as grading does (attention_grading.kernels.manager). Then what two of the sandbox's walls
cost by themselves, in a forked process that makes them as ``sandbox.enter`` does: a network
namespace of its own with its loopback up, and every mount read-only. Not a timed test: it prints
what the sandbox costs per kernel, measured side by side in one run.

Usage: python benchmarks/kernel_start.py [--repeats 5]
"""
import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))


def sandboxed(fork):
    """A kernel manager as GuardedExecute makes one: sandboxed in a scratch folder of its own."""
    from attention_grading.kernels.manager import SandboxedKernelManager, SandboxRequest

    km = SandboxedKernelManager(kernel_name="python3")
    km.fork_kernels = fork
    scratch = tempfile.mkdtemp(prefix="attention-bench-kernel-")
    os.makedirs(os.path.join(scratch, "submission"))
    km.sandbox_request = SandboxRequest(scratch, os.path.join(scratch, "submission"), [str(REPO)])
    km.connection_file = os.path.join(scratch, "connection.json")
    return km


async def start_to_ready(make):
    """Seconds from asking for a kernel to its answer to `import numpy` (the lessons' first line)."""
    started = time.perf_counter()
    km = make()
    await km.start_kernel(env=dict(os.environ))
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    await kc._async_execute_interactive("import numpy, matplotlib.pyplot", output_hook=lambda msg: None)
    seconds = time.perf_counter() - started
    kc.stop_channels()
    await km.shutdown_kernel()
    return seconds


def wall_costs(repeats=100):
    """Median seconds for a forked process to make its mount namespace (as every sandbox does),
    then also its own network namespace with the loopback up, then also every mount read-only;
    until it has exited (Linux tears a network namespace down after the process is gone)."""
    from attention_grading.kernels.sandbox._libc import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS,
                                                         CLONE_NEWUTS, MS_PRIVATE, MS_REC, mount,
                                                         read_only_below, unshare)
    from attention_grading.kernels.sandbox.enter import _loopback_up

    def mounts():
        unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)
        mount(None, "/", None, MS_REC | MS_PRIVATE)

    def network():
        unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)
        _loopback_up()
        mount(None, "/", None, MS_REC | MS_PRIVATE)

    def read_only():
        network()
        read_only_below("/")

    variants = (("namespaces", mounts), ("+ network", network), ("+ read-only", read_only))
    times = {label: [] for label, _ in variants}
    for _ in range(repeats):            # interleaved, so that the machine's load hits all alike
        for label, make in variants:
            started = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                try:
                    make()
                    os._exit(0)
                finally:
                    os._exit(1)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, label
            times[label].append(time.perf_counter() - started)
    medians = {label: statistics.median(values) for label, values in times.items()}
    return medians


async def main(repeats):
    from jupyter_client.manager import AsyncKernelManager

    kinds = (("cold, no sandbox", lambda: AsyncKernelManager(kernel_name="python3")),
             ("cold, sandboxed", lambda: sandboxed(fork=False)),
             ("forked, sandboxed", lambda: sandboxed(fork=True)))
    await start_to_ready(kinds[2][1])   # starts the warm parent once, as a grader does
    times = {label: [] for label, _ in kinds}
    for _ in range(repeats):             # interleaved, so that the machine's load hits all alike
        for label, make in kinds:
            times[label].append(await start_to_ready(make))
    for label, values in times.items():
        print(f"{label:18s} kernel ready with numpy and matplotlib: median {statistics.median(values):.3f} s "
              f"(min {min(values):.3f}, max {max(values):.3f}, {repeats} kernels)")
    base = statistics.median(times["cold, no sandbox"])
    print(f"the sandbox costs {statistics.median(times['cold, sandboxed']) - base:+.3f} s on a cold start; "
          f"forked and sandboxed is {base / statistics.median(times['forked, sandboxed']):.1f}x faster than "
          "cold without a sandbox")
    costs = wall_costs()
    print(f"per kernel: a network namespace with its loopback {1000 * (costs['+ network'] - costs['namespaces']):.2f} ms, "
          f"every mount read-only {1000 * (costs['+ read-only'] - costs['+ network']):.2f} ms "
          f"(a forked process making its namespaces: {1000 * costs['namespaces']:.2f} ms; medians of 100)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    asyncio.run(main(parser.parse_args().repeats))
