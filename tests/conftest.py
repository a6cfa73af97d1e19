"""Shared fixtures: where the build is, root-only skips, and slowfs mounts. What the tests share
with the benchmark harness (memory groups, swap space, slowfs mounts, busy loops, the programs'
input files) is the package specx_support in bench/, put on the path here."""
import contextlib
import errno
import os
import pathlib
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from specx_support import slowfs  # noqa: E402
from specx_support.busy import loops as cpu_bound  # noqa: E402,F401 (tests import it from here)

BUILD = pathlib.Path(os.environ.get("SPECX_BUILD_DIR", REPO / "build"))
SPECX = BUILD / "specx"
# The harness's modules the tests import ask the specx that started them (`specx bench` says
# which): here, the build's.
os.environ.setdefault("SPECX_EXE", str(SPECX))
# Each test's runs start without what earlier runs of the suite read (specx run's history,
# docs/design/history.md): the tests that are about history ask for it by name.
os.environ.setdefault("SPECX_RUN_HISTORY", "off")
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
    with cpu_bound(BUSY):
        yield


@pytest.fixture(scope="session")
def specx():
    """Path of the built `specx` command."""
    if not SPECX.exists():
        pytest.fail(f"{SPECX} is missing: build first (make build)")
    return str(SPECX)


# An unprivileged user, for the tests that run specx as one (no passwd entry needed).
NOBODY = 65534
# Build directories that hold components (src/common/paths.c searches the same ones).
COMPONENT_DIRS = ["src/run", "src/slowfs", "src/share", "src/idle", "src/doctor", "src/run/runtime",
                  "bench", "bench/programs"]


@pytest.fixture(scope="session")
def unprivileged_build():
    """(build directory, environment) from which NOBODY can run specx and the programs the tests
    build. The build itself where every directory above it lets others through; else (a clone in
    a home directory of mode 0700, as on a machine that never ran the suite) a copy in a
    world-readable temporary directory, whose components specx finds through
    SPECX_LIBEXEC_PATH."""
    probe = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "test", "-x", str(SPECX)]
    if not IS_ROOT or subprocess.run(probe).returncode == 0:
        yield BUILD, {}
        return
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-build-"))
    try:
        top.chmod(0o755)
        copy = top / "build"
        shutil.copytree(BUILD, copy, symlinks=True,
                        ignore=shutil.ignore_patterns("*.p", "meson-*", "*.o"))
        yield copy, {"SPECX_LIBEXEC_PATH": ":".join(str(copy / d) for d in COMPONENT_DIRS)}
    finally:
        shutil.rmtree(top)


@pytest.fixture
def workdir():
    """A scratch directory every user can traverse (tests run programs as other users on the
    mounts they make in it), removed afterwards."""
    d = tempfile.mkdtemp(prefix="specx-test-")
    os.chmod(d, 0o755)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


def run_specx(*args, check=False, timeout=120, input=None, prefix=(), exe=SPECX, **kw):
    """Runs `PREFIX EXE ARGS...` (EXE the built specx unless told; PREFIX: a command that execs what follows, as unshare
    does) and returns the CompletedProcess (text mode). Past TIMEOUT the whole process group
    goes (SIGTERM, then SIGKILL), not `specx` alone: a benchmark killed alone in the v2 VM left
    its spinners and specx idle running, and the tests after it timed out in turn."""
    with subprocess.Popen([*prefix, str(exe), *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=None if input is None else subprocess.PIPE,
                          text=True, start_new_session=True, **kw) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            end_process_group(proc)
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def end_process_group(proc):
    """SIGTERM to PROC's process group (each specx command then removes what it made), and
    SIGKILL to what is left of it after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


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
    with slowfs.mounted(SPECX, str(backing), str(mountpoint), options):
        yield pathlib.Path(mountpoint)


# The kernel's process events connector (linux/cn_proc.h): every fork and exec is reported as
# it happens, so that a new copy is found without scanning /proc.
NETLINK_CONNECTOR, CN_IDX_PROC, CN_VAL_PROC, NLMSG_DONE = 11, 1, 1, 3
PROC_CN_MCAST_LISTEN, PROC_EVENT_FORK, PROC_EVENT_EXEC = 1, 1, 2
EVENT_AT = 16 + 20   # after struct nlmsghdr and struct cn_msg: struct proc_event
EVENT_DATA_AT = EVENT_AT + 16   # its what, cpu and timestamp_ns, then the event's data


def _process_events():
    """A socket on which the kernel reports each fork and exec (root only)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    sock.bind((0, CN_IDX_PROC))
    listen = struct.pack("=IIIIHHI", CN_IDX_PROC, CN_VAL_PROC, 0, 0, 4, 0, PROC_CN_MCAST_LISTEN)
    sock.send(struct.pack("=IHHII", 16 + len(listen), NLMSG_DONE, 0, 0, 0) + listen)
    return sock


def _all_pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _new_processes(events):
    """Pids of the processes forked or exec'd since the last call, as EVENTS reported them
    (every process, if the kernel dropped some of its reports)."""
    pids = []
    while True:
        try:
            data = events.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return pids
        except OSError as e:
            if e.errno != errno.ENOBUFS:
                raise
            return _all_pids()
        what, = struct.unpack_from("=I", data, EVENT_AT)
        if what == PROC_EVENT_FORK:
            _, _, pid, tgid = struct.unpack_from("=IIII", data, EVENT_DATA_AT)
            if pid == tgid:   # a process, not a thread
                pids.append(pid)
        elif what == PROC_EVENT_EXEC:
            pids.append(struct.unpack_from("=I", data, EVENT_DATA_AT)[0])


def _has_in_command_line(pid, marker):
    try:
        return marker in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False   # gone already


def _give_normal_priority(pid):
    """Moves PID's threads that specx runs below normal priority back to normal: a copy at
    SCHED_IDLE, the supervisor's thread (which serves its copy's calls) at nice 19. Raises
    OSError if PID is gone."""
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        with contextlib.suppress(OSError):   # a thread that has just ended
            if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            if os.getpriority(os.PRIO_PROCESS, tid) > 0:
                os.setpriority(os.PRIO_PROCESS, tid, 0)


@contextlib.contextmanager
def copies_get_cpu(marker):
    """A speculative copy runs at SCHED_IDLE (docs/design/read-path.md), and the supervisor that serves
    an outside copy at nice 19; a busy machine may not schedule them for seconds. A test that
    needs a copy to *run* (not to be fast) moves the threads of every process whose command line
    has MARKER back to normal priority while the block runs. The runtime is unchanged; only the
    CPU share it would get from an idle machine is the test's to give (root only).

    A copy lives only until its program's next stall, and one promoted after the program passed
    that stall is judged useless: so the watcher runs at real-time priority and learns of each
    new process from the kernel as it is made, at 5 % of a CPU. One at normal priority that
    reread every command line every 2 ms took half a CPU, and beside busy loops it failed 7 of 80
    runs of two copy tests (SPECX_TEST_BUSY=4) and left the supervisor's copy short of its calls
    in 6 of 16 runs of the probe in test_sandbox (SPECX_TEST_BUSY=2); this one 2 of 80 and 2 of
    16."""
    stop = threading.Event()
    marker = str(marker).encode()
    events = _process_events()   # before the processes it must see are made

    def promote():
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))   # this thread only
        marked = {pid for pid in _all_pids() if _has_in_command_line(pid, marker)}
        while not stop.is_set():
            marked.update(pid for pid in _new_processes(events)
                          if _has_in_command_line(pid, marker))
            for pid in list(marked):
                try:
                    _give_normal_priority(pid)
                except OSError:
                    marked.discard(pid)   # gone
            select.select([events], [], [], 0.002)   # a new process, or 2 ms

    thread = threading.Thread(target=promote, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        events.close()


def wait_for(condition, timeout=30):
    """Polls CONDITION until it holds or TIMEOUT seconds pass (generous: a busy machine is
    slow, and a condition that holds returns at once); its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
