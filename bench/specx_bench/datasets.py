"""The workloads' data sets: generated once, deterministically, and cached on the local disk
under the data directory, where they serve as slowfs's backing directories. A stamp file
records which generator (workload, version, parameters) made a data set; a different stamp
means the cached copy is stale and is generated again."""
import contextlib
import fcntl
import json
import os
import shutil
import stat
import sys
import time

STAMP = ".specx-dataset.json"
# Root's: the benchmark runs as root, and a directory in world-writable /var/tmp could be made
# first by another user (check_data_dir refuses it then).
DEFAULT_DATA_DIR = "/var/cache/specx/bench"


class UnsafeDataDir(RuntimeError):
    """A data directory another user could change under the benchmark."""


def check_data_dir(data_dir):
    """Makes DATA_DIR if needed and checks that nobody but this user (and root) can change it
    or what leads to it: the benchmark, as root, writes data sets, a lock and swap files there
    and mounts over it, so a directory another user may write could have any of them swapped
    for a link to a file of root's. Each directory above it must belong to root or this user
    and, if others may write it, be sticky (as /var/tmp is: they cannot rename ours away)."""
    me = os.geteuid()
    target = os.path.realpath(data_dir)
    path = target
    while path != "/":   # what exists above it, before anything is made there
        path = os.path.dirname(path)
        if not os.path.lexists(path):
            continue
        st = os.lstat(path)
        open_to_others = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
        if st.st_uid not in (0, me) or open_to_others:
            raise UnsafeDataDir(f"{data_dir}: {path} can be changed by another user "
                                f"(owner {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")
    os.makedirs(target, mode=0o755, exist_ok=True)
    st = os.lstat(target)
    if st.st_uid != me or st.st_mode & 0o022:
        raise UnsafeDataDir(f"{data_dir}: must belong to uid {me} and be writable by it alone "
                            f"(owner {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})")


@contextlib.contextmanager
def locked(data_dir):
    """Holds DATA_DIR for this process: data sets and their mount points there are shared, so
    a second `specx bench` on the same directory waits instead of unmounting our mounts as
    stale or generating the same data set at the same time."""
    check_data_dir(data_dir)
    fd = os.open(os.path.join(data_dir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with open(fd, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            print(f"specx bench: waiting for another specx bench (pid {holder}) that uses "
                  f"{data_dir}", flush=True)
            fcntl.flock(f, fcntl.LOCK_EX)
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield


def data_name(workload):
    """The data set's name: a workload's own, or the one it shares with another (`dataset`)."""
    return workload.dataset or workload.name


# Parameters of how a data set is run, not of what it holds: workloads that differ only in
# them (the sphinx sweep, the -contended variants) share one data set.
RUN_ONLY = ("memory_limit_mb", "contender_mb", "contender_period_ms")


def stamp(workload, params):
    """What made a data set."""
    shaping = {k: v for k, v in params.items() if k not in RUN_ONLY}
    return {"workload": data_name(workload), "version": workload.version, "params": shaping,
            "inputs": workload.generator_inputs()}


def read_stamp(path):
    try:
        with open(os.path.join(path, STAMP)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def is_current(path, want):
    return read_stamp(path) == want


def ensure(workload, scale, data_dir):
    """Path of WORKLOAD's data set at SCALE, generating it first when missing or stale."""
    params = workload.scales[scale]
    want = stamp(workload, params)
    path = os.path.join(data_dir, f"{data_name(workload)}-{scale}")
    if is_current(path, want):
        return path
    if os.path.exists(path):
        print(f"[{workload.name}] cached data set {path} was made by another generator "
              "version: generating it again", flush=True)
        shutil.rmtree(path)
    # Generate next to the final place and rename: an interrupted generation leaves no data
    # set that looks complete.
    partial = path + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    print(f"[{workload.name}] generating data set in {path}", flush=True)
    started = time.perf_counter()
    workload.generate(partial, params, Progress(workload.name))
    with open(os.path.join(partial, STAMP), "w") as f:
        json.dump(want, f, indent=1)
    os.rename(partial, path)
    print(f"[{workload.name}] data set ready: {human_bytes(size(path))} in "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return path


def size(path):
    """Bytes of file data under PATH (the stamp not counted)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            if name != STAMP:
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def human_bytes(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


class Progress:
    """Progress of a long generation: on a terminal, one line updated a few times a second;
    in a log, a line every 10 seconds."""

    def __init__(self, name):
        self.name = name
        self.tty = sys.stdout.isatty()
        self.last = time.monotonic()

    def __call__(self, done, total, what):
        now = time.monotonic()
        if done < total and now - self.last < (0.5 if self.tty else 10):
            return
        self.last = now
        line = f"[{self.name}] {what}: {done:,}/{total:,}"
        if self.tty:
            print("\r" + line, end="\n" if done >= total else "", flush=True)
        else:
            print(line, flush=True)
