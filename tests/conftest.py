"""Shared fixtures: where the build is, root-only skips, and slowfs mounts."""
import contextlib
import os
import pathlib
import subprocess
import sys
import threading

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("SPECX_BUILD_DIR", REPO / "build"))
SPECX = BUILD / "specx"
IS_ROOT = os.geteuid() == 0
LONG = os.environ.get("SPECX_TEST_LONG") == "1"
# SPECX_TEST_BUSY=N runs the session beside N CPU-bound processes, as on a loaded CI machine.
BUSY = int(os.environ.get("SPECX_TEST_BUSY", "0") or 0)


def pytest_collection_modifyitems(config, items):
    skip_root = pytest.mark.skip(reason="needs root (FUSE mounts, drop_caches, cgroups); run as root")
    skip_long = pytest.mark.skip(reason="long test: run with SPECX_TEST_LONG=1 (make test-long)")
    for item in items:
        if "root" in item.keywords and not IS_ROOT:
            item.add_marker(skip_root)
        if "long" in item.keywords and not LONG:
            item.add_marker(skip_long)


@pytest.fixture(scope="session", autouse=True)
def busy_machine():
    """SPECX_TEST_BUSY=N: N busy loops at normal priority for the whole session, so that a test
    that depends on an idle-priority process getting CPU fails here rather than on CI."""
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(BUSY)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@pytest.fixture(scope="session")
def specx():
    """Path of the built `specx` command."""
    if not SPECX.exists():
        pytest.fail(f"{SPECX} is missing: build first (make build)")
    return str(SPECX)


def run_specx(*args, check=False, timeout=120, **kw):
    """Runs `specx ARGS...` and returns the CompletedProcess (text mode)."""
    return subprocess.run([str(SPECX), *map(str, args)], capture_output=True, text=True,
                          check=check, timeout=timeout, **kw)


def drop_caches():
    """Drops the page cache (root only): what a cold run starts from."""
    os.sync()
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def evict(*paths):
    """Makes PATHS cold again (their pages out of the page cache), leaving the rest of it."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def all_cold_but(*paths):
    """Drops the page cache and reads PATHS back (an opvm script and opvm itself): only the
    data the program reads may stall, which is where its copy must start."""
    drop_caches()
    for path in paths:
        pathlib.Path(path).read_bytes()


def only_files_cold(code, paths):
    """Runs Python's CODE once without arguments, so that the interpreter and the modules it
    imports are in memory, then makes PATHS cold. A cold interpreter stalls first (`-c "import
    os, sys"` alone: 54 stalls, 6 copies), and those copies, which predict nothing, back the
    runtime off by up to 64 stalls or retire it after 8 (policy/backoff.h): whether a copy is
    left for PATHS would depend on the machine's timing (CI once saw no copy by a pool's
    thread)."""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=60)
    evict(*paths)


@contextlib.contextmanager
def slowfs_mount(backing, mountpoint, *options):
    """Mounts slowfs over BACKING at MOUNTPOINT (daemonized) and unmounts it afterwards."""
    os.makedirs(mountpoint, exist_ok=True)
    run_specx("slowfs", "-d", *options, backing, mountpoint, check=True)
    try:
        yield pathlib.Path(mountpoint)
    finally:
        run_specx("slowfs", "--unmount", mountpoint)


def _new_pids_with(marker, seen):
    """Pids of the processes not in SEEN whose command line contains MARKER; every pid looked
    at joins SEEN. A command line is read once, when its process is first seen: a copy has its
    program's from its birth."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or entry in seen:
            continue
        seen.add(entry)
        try:
            if marker in pathlib.Path("/proc", entry, "cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass   # gone already
    return found


@contextlib.contextmanager
def copies_get_cpu(marker):
    """A speculative copy runs at SCHED_IDLE (docs/DESIGN.md §2), which a busy machine may not
    schedule for seconds: a test that needs a copy to *run* (not to be fast) moves every process
    whose command line has MARKER and that is at SCHED_IDLE back to SCHED_OTHER while the block
    runs. The runtime is unchanged; only the CPU share it would get from an idle machine is the
    test's to give (root only). The watcher runs at real-time priority and reads each command
    line once: a copy lives only until its program's next stall, and one promoted after the
    program passed that stall is judged useless. Beside four busy loops (SPECX_TEST_BUSY=4), a
    watcher at normal priority that reread every command line failed 7 of 80 runs of two such
    tests; this one 0 of 80."""
    stop = threading.Event()

    def promote():
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))   # this thread only
        seen, marked = set(), set()
        while not stop.is_set():
            marked.update(_new_pids_with(str(marker).encode(), seen))
            for pid in list(marked):
                try:
                    if os.sched_getscheduler(pid) == os.SCHED_IDLE:
                        os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
                except OSError:
                    marked.discard(pid)   # gone
            stop.wait(0.002)

    thread = threading.Thread(target=promote, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
