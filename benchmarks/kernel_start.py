"""How long until a kernel runs code: started cold (jupyter_client's AsyncKernelManager) or forked
from the warm parent that grading uses (attention_grading.forked_kernels). Not a timed test.

Usage: python benchmarks/kernel_start.py [--repeats 5]
"""
import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))


async def start_to_ready(cls):
    """Seconds from asking for a kernel to its answer to `import numpy` (the lessons' first line)."""
    started = time.perf_counter()
    km = cls(kernel_name="python3")
    await km.start_kernel(env=dict(os.environ))
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    await kc._async_execute_interactive("import numpy, matplotlib.pyplot", output_hook=lambda msg: None)
    seconds = time.perf_counter() - started
    kc.stop_channels()
    await km.shutdown_kernel()
    return seconds


async def main(repeats):
    from jupyter_client.manager import AsyncKernelManager

    from attention_grading.forked_kernels import ForkingKernelManager

    await start_to_ready(ForkingKernelManager)   # starts the warm parent once, as a grader does
    for cls, label in ((AsyncKernelManager, "cold"), (ForkingKernelManager, "forked")):
        times = [await start_to_ready(cls) for _ in range(repeats)]
        print(f"{label:7s} kernel ready with numpy and matplotlib: median {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f}, {repeats} kernels)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    asyncio.run(main(parser.parse_args().repeats))
