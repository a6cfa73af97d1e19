"""stencil: a multigrid-like relaxation of a 3-D grid in an mmapped file that the program
updates in place — the paper's MGRID and FFTPDE (Fraser & Chang 2003, §5: "looping array
accesses whose stride length and bounds vary dynamically", large page tables, a write to every
page). It runs in a memory cgroup far smaller than the grid (memcg.py), so its dirty pages are
written back and its reads fault again at every level: real memory pressure.

The program writes its data set, and every run must start from the same data on a cold cache.
So the data set holds the grid as generated (grid.orig, never opened by a run) and each run
gets a fresh working copy, grid.bin, made in the backing directory before the run (outside the
timed part), dropped from the page cache on both sides of slowfs, and removed afterwards (see
working_copy). A run that is interrupted therefore never leaves a changed data set behind."""
import contextlib
import os
import shutil

from specx_support.programs import write_grid

from specx_support import components
from .base import Command, Workload

PRISTINE = "grid.orig"
WORKING = "grid.bin"


def backing_of(mountpoint):
    """The backing directory of the slowfs mount at MOUNTPOINT (slowfs names it as the mount's
    source); raises SystemExit when the mount does not say."""
    point = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            after = fields[fields.index("-") + 1:]
            if fields[4].encode().decode("unicode_escape") == point and \
                    after[0] == "fuse.specx-slowfs":
                source = after[1].encode().decode("unicode_escape")
                if os.path.isdir(source):
                    return source
    raise SystemExit(f"specx bench: cannot tell the backing directory of {mountpoint}, "
                     "so the grid cannot be restored between runs")


def _drop_cached(path):
    """Evicts PATH's clean pages from the page cache (the file system's, or slowfs's when PATH
    is seen through the mount)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _flush_through(path):
    """Writes back what a killed run left dirty in slowfs's page cache, so that it cannot land
    on the next working copy."""
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def working_copy(mountpoint):
    """A fresh copy of the generated grid for one run, cold on both sides of slowfs."""
    backing = backing_of(mountpoint)
    work, seen = os.path.join(backing, WORKING), os.path.join(mountpoint, WORKING)
    _flush_through(seen)
    try:
        shutil.copyfile(os.path.join(backing, PRISTINE), work)
        fd = os.open(work, os.O_RDONLY)
        try:
            os.fsync(fd)   # clean pages only: the advice below evicts clean pages
        finally:
            os.close(fd)
        for path in (work, os.path.join(backing, PRISTINE), seen):
            _drop_cached(path)
        yield
    finally:
        _flush_through(seen)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(work)


class Stencil(Workload):
    name = "stencil"
    paper = "MGRID"
    description = ("multigrid-like relaxation of a 3-D grid in an mmapped file it writes, "
                   "larger than the memory cgroup")
    version = 1
    scales = {
        "full": {"n": 512, "cycles": 1, "memory_limit_mb": 64},
        "demo": {"n": 256, "cycles": 1, "memory_limit_mb": 16},
        "test": {"n": 32, "cycles": 1, "memory_limit_mb": 64},
    }

    def generate(self, dest, params, progress):
        write_grid(os.path.join(dest, PRISTINE), params["n"], 1, progress)

    def touch_paths(self, root, params):
        return [os.path.join(root, WORKING)]

    @contextlib.contextmanager
    def session(self, root, params, wrap, scratch, log):
        with working_copy(root):
            yield

    def command(self, root, params, scratch):
        return Command([components.require("stencil", "the stencil workload"),
                        "--cycles", str(params["cycles"]), os.path.join(root, WORKING)])
