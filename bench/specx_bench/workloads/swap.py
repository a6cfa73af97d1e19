"""swap: the stencil kernel over anonymous memory — a swapping application, as the paper's
MGRID, FFTPDE and MATVEC were (Fraser & Chang 2003, §3: data sets that do not fit in memory,
paged to swap). The program reads the grid from the file into anonymous memory (explicit I/O),
then relaxes it there for several cycles inside a memory cgroup far smaller than the grid, so
every cycle swaps the grid out and in again.

Swap space is made for each run and removed afterwards (swapspace.py: a zram device when the
kernel has zram, else a swap file on the data directory's local disk). On zram a page comes
back in microseconds, so the stalls are CPU time (decompression) more than waiting: the
workload shows what speculation costs and gains when swap is fast, not a slow swap disk. Each
run's log records the pages swapped in and out (/proc/vmstat), to show that it swapped."""
import contextlib
import os

from specx_support import swapspace
from specx_support.programs import write_grid

from specx_support import components
from .base import Command, Workload

GRID = "grid.bin"


def swap_dir(root):
    """Where a swap file goes: next to the mount point, on the data directory's disk."""
    return os.path.dirname(os.path.realpath(root))


class Swap(Workload):
    name = "swap"
    paper = "MGRID (swap)"
    description = ("the stencil over anonymous memory larger than the memory cgroup, "
                   "with swap space the harness makes and removes (needs root)")
    version = 1
    scales = {
        "full": {"n": 512, "cycles": 2, "memory_limit_mb": 64},
        "demo": {"n": 256, "cycles": 2, "memory_limit_mb": 16},
        "test": {"n": 32, "cycles": 2, "memory_limit_mb": 64},
    }

    def unavailable(self, data_dir):
        return swapspace.unavailable_reason(data_dir)

    def generate(self, dest, params, progress):
        write_grid(os.path.join(dest, GRID), params["n"], 1, progress)

    @contextlib.contextmanager
    def session(self, root, params, wrap, scratch, log):
        # Room for the whole grid twice over: what does not fit in the cgroup is swapped.
        size = max(2 * params["n"] ** 3 * 4, 64 << 20)
        try:
            with swapspace.enabled(size, swap_dir(root)) as made:
                before = swapspace.swap_counters()
                try:
                    yield
                finally:
                    after = swapspace.swap_counters()
                    with open(log, "a") as f:
                        f.write(f"swap space {made.path} ({made.kind}): "
                                f"{after[0] - before[0]} pages swapped in, "
                                f"{after[1] - before[1]} swapped out (whole machine)\n")
        except swapspace.Unavailable as e:
            raise SystemExit(f"specx bench: swap: {e}") from None

    def command(self, root, params, scratch):
        return Command([components.require("stencil", "the swap workload"), "--anonymous",
                        "--cycles", str(params["cycles"]), os.path.join(root, GRID)])

