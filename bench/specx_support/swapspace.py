"""Swap space for the `swap` workload (a program whose I/O is swapping). The harness
makes its own swap space for each run and removes it when the run ends — normally, on an error,
on Ctrl-C or SIGTERM — so that the machine is left as it was and every run starts with nothing
swapped (the paper flushed swap-backed pages before each run, §3).

Preferred: a fresh zram device (hot_add), which needs no disk and is removed without a trace.
Else: a swap file on a local disk (not FUSE, tmpfs, a network or copy-on-write file system,
where the kernel cannot swap). A record of what was made is kept in RECORD_DIR, so that space
left behind by a harness that was killed outright is removed by the next one."""
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess

from .unwind import sigterm_unwinds

ZRAM_CONTROL = "/sys/class/zram-control"
RECORD_DIR = "/run/specx-bench"
# Swap files work only on file systems whose blocks the kernel can address directly.
SWAP_FILE_SYSTEMS = {"ext2", "ext3", "ext4", "xfs"}
# Our space comes first when the machine has swap of its own (priorities go up to 32767).
PRIORITY = "32000"


class Unavailable(Exception):
    """No swap space can be made here; the message is a one-line reason."""


@dataclasses.dataclass
class Space:
    kind: str         # "zram", "file" or "loop" (a loop device over a file, e.g. on slowfs)
    path: str         # the block device or the swap file
    zram_id: int = -1
    backing: str = "" # "loop": the file behind the device


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _run(*argv):
    """Runs a util-linux tool; raises Unavailable with its own message when it fails."""
    try:
        proc = subprocess.run([_which(argv[0]) or argv[0], *argv[1:]], capture_output=True,
                              text=True)
    except OSError as e:
        raise Unavailable(f"cannot run {argv[0]}: {e.strerror}") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise Unavailable(f"{' '.join(argv)}: {detail}")


def zram_available():
    """True when zram devices can be added; tries to load the module first."""
    if not os.path.isdir(ZRAM_CONTROL) and _which("modprobe"):
        subprocess.run([_which("modprobe"), "zram"], capture_output=True, check=False)
    return os.path.isdir(ZRAM_CONTROL)


def _which(name):
    """Path of the tool NAME or None; the system directories count even when not on PATH."""
    return shutil.which(name, path=os.pathsep.join(
        [os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))


def file_system_of(path):
    """Type of the file system holding PATH (the longest mount point above it)."""
    path = os.path.realpath(path)
    best, fstype = "", None
    with open("/proc/self/mounts") as f:
        for line in f:
            point, kind = line.split()[1:3]
            point = point.encode().decode("unicode_escape")
            if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                    len(point) >= len(best):
                best, fstype = point, kind
    return fstype


def unavailable_reason(directory):
    """None when swap space can be made (zram, or a swap file in DIRECTORY), else why not."""
    if os.geteuid() != 0:
        return "making swap space needs root"
    if not (_which("mkswap") and _which("swapon") and _which("swapoff")):
        return "mkswap, swapon and swapoff (util-linux) are needed"
    if zram_available():
        return None
    fstype = file_system_of(directory)
    if fstype not in SWAP_FILE_SYSTEMS:
        return (f"no zram here, and {directory} is on {fstype}, where the kernel cannot "
                f"swap to a file (needs one of {', '.join(sorted(SWAP_FILE_SYSTEMS))})")
    return None


def _make_zram(size_bytes):
    with open(os.path.join(ZRAM_CONTROL, "hot_add")) as f:
        zram_id = int(f.read())
    space = Space("zram", f"/dev/zram{zram_id}", zram_id)
    _record(space)
    _write(f"/sys/block/zram{zram_id}/disksize", str(size_bytes))
    return space


def _make_file(size_bytes, directory):
    space = Space("file", os.path.join(directory, f"specx-bench-swap-{os.getpid()}"))
    _record(space)
    _write_zeros(space.path, size_bytes)
    return space


def _make_loop(size_bytes, directory):
    """A loop device over a file in DIRECTORY: swap with the latency of whatever holds the file
    (slowfs: a disk's). The kernel cannot swap to a file on FUSE, but it can to a loop device
    over one; its reads then pay slowfs's model, which is the point."""
    backing = os.path.join(directory, f"specx-bench-swap-{os.getpid()}")
    _write_zeros(backing, size_bytes)
    # Direct I/O: the loop device then keeps no page cache of its own for the file. With it
    # buffered, swapping in from a memory cgroup at its limit deadlocked: the loop worker's
    # page-cache pages are charged to the group it swaps for (docs/design/share.md).
    proc = subprocess.run([_which("losetup") or "losetup", "--find", "--show", "--direct-io=on",
                           backing], capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(backing)
        raise Unavailable(f"losetup: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")
    space = Space("loop", proc.stdout.strip(), backing=backing)
    _record(space)
    _schedule(space.path)
    return space


def _schedule(device):
    """An elevator on the loop device: it has none of its own, so 4 KiB swap reads reached the
    file one by one (81,444 requests of 5.7 KiB on average, 12 ms each on slowfs, in one run).
    mq-deadline merges neighbours; BFQ would too, but it serves the idle I/O class (specx
    share's prefetches) only after the device has idled, which starved them behind the
    running job's faults (a switch run took over 7 minutes against 63 s without prefetching)."""
    queue = f"/sys/block/{os.path.basename(device)}/queue"
    with contextlib.suppress(OSError):
        _write(f"{queue}/scheduler", "mq-deadline")
    # Writeback throttling held swap-out writes (specx share's page-outs) back for as long as
    # reads were pending: the prefetcher waited in rq_qos_wait for minutes; the device's own
    # model queues writes and reads (slowfs --model-writes) without it.
    with contextlib.suppress(OSError):
        _write(f"{queue}/wbt_lat_usec", "0")
    # A disk, as slowfs's presets are: the kernel then hands out swap slots from one cluster
    # at a time instead of one per CPU, so that pages written together sit together and come
    # back in large reads (a job's slots came in runs of 16 pages on average without it, 62
    # with it, in one specx share run).
    with contextlib.suppress(OSError):
        _write(f"{queue}/rotational", "1")


def _write_zeros(path, size_bytes):
    # Written out, not fallocated: swapon refuses files with unwritten extents on some
    # file systems, and a file with holes on all of them.
    # A new file, never one found there (a link would aim the zeros and mkswap elsewhere).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        block = bytes(1 << 20)
        for _ in range(-(-size_bytes // len(block))):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)


def _record_path(space):
    return os.path.join(RECORD_DIR, f"swap-{os.path.basename(space.path)}.json")


def _record(space):
    os.makedirs(RECORD_DIR, exist_ok=True)
    _write(_record_path(space), json.dumps({**dataclasses.asdict(space), "pid": os.getpid()}))


def _active(path):
    with open("/proc/swaps") as f:
        return any(line.split()[0] == path for line in f.readlines()[1:])


def remove(space):
    """Takes SPACE out of use and deletes it; safe on a half-made space."""
    if _active(space.path):
        # Pages still swapped out come back into memory first; the run has ended, so few do.
        subprocess.run([_which("swapoff") or "swapoff", space.path], capture_output=True,
                       check=False)
    if space.kind == "zram":
        if os.path.exists(f"/sys/block/zram{space.zram_id}"):
            with contextlib.suppress(OSError):
                _write(f"/sys/block/zram{space.zram_id}/reset", "1")
            with contextlib.suppress(OSError):
                _write(os.path.join(ZRAM_CONTROL, "hot_remove"), str(space.zram_id))
    elif space.kind == "loop":
        subprocess.run([_which("losetup") or "losetup", "--detach", space.path],
                       capture_output=True, check=False)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(space.backing)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(space.path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_record_path(space))
    # The directory goes with its last record (another harness's keeps it).
    with contextlib.suppress(OSError):
        os.rmdir(RECORD_DIR)


def remove_stale():
    """Removes swap space recorded by harnesses that no longer run (killed with SIGKILL)."""
    if not os.path.isdir(RECORD_DIR):
        return
    for name in os.listdir(RECORD_DIR):
        if not (name.startswith("swap-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(RECORD_DIR, name)) as f:
                rec = json.load(f)
            os.kill(rec["pid"], 0)
            continue   # its harness still runs
        except ProcessLookupError:
            pass
        except (OSError, ValueError, KeyError):
            continue
        print(f"specx bench: removing swap space {rec['path']} left by pid {rec['pid']}",
              flush=True)
        remove(Space(rec["kind"], rec["path"], rec.get("zram_id", -1), rec.get("backing", "")))


@contextlib.contextmanager
def enabled(size_bytes, directory, kinds=("zram", "file")):
    """Swap space of SIZE_BYTES in use for the block: zram when possible, else a swap file in
    DIRECTORY (KINDS restricts the choice); kinds ("loop",): a loop device over a file in
    DIRECTORY (a slowfs mount). Raises Unavailable with a one-line reason."""
    remove_stale()
    loop = kinds == ("loop",)
    reason = (None if os.geteuid() == 0 else "making swap space needs root") if loop \
        else unavailable_reason(directory)
    if reason:
        raise Unavailable(reason)
    use_zram = "zram" in kinds and zram_available()
    if not use_zram and "file" not in kinds and not loop:
        raise Unavailable("zram is not available here")
    space = None
    with sigterm_unwinds():
        try:
            try:
                space = _make_loop(size_bytes, directory) if loop else \
                    _make_zram(size_bytes) if use_zram else _make_file(size_bytes, directory)
            except OSError as e:
                raise Unavailable(f"cannot make swap space: {e.strerror or e}") from None
            _run("mkswap", space.path)
            _run("swapon", "--priority", PRIORITY, space.path)
            yield space
        finally:
            if space:
                remove(space)


def swap_counters():
    """(pages swapped in, pages swapped out) since boot, from /proc/vmstat."""
    found = {}
    with open("/proc/vmstat") as f:
        for line in f:
            key, value = line.split()
            if key in ("pswpin", "pswpout"):
                found[key] = int(value)
    return found.get("pswpin", 0), found.get("pswpout", 0)
