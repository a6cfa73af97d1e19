"""slowfs mounts for the benchmarks: mounted with `specx slowfs -d`, always unmounted, and
device statistics snapshots (cumulative counters, so a run's share is a difference)."""
import contextlib
import json
import os
import subprocess

from . import components


def is_mounted(path):
    """True when PATH is a mount point (per /proc/self/mountinfo)."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            # Field 5 is the mount point, with spaces etc. escaped as octal.
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path:
                return True
    return False


def _specx(*args):
    return subprocess.run([components.specx_exe(), "slowfs", *args], capture_output=True,
                          text=True)


def unmount(path):
    """Unmounts PATH however it can: slowfs's own way first, then lazily."""
    if not is_mounted(path):
        return
    _specx("--unmount", path)
    if is_mounted(path):
        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True)
    if is_mounted(path):
        subprocess.run(["umount", "-l", path], capture_output=True)


def clean_stale(path):
    """Removes a mount left at PATH by an earlier run that crashed. A run killed outright
    leaves its mount point dead ("Transport endpoint is not connected"): it is no directory
    any more as far as stat can tell, so only the mount table is asked."""
    if is_mounted(path):
        print(f"specx bench: {path} is still mounted from an earlier run; unmounting it",
              flush=True)
        unmount(path)


@contextlib.contextmanager
def mounted(backing, mountpoint, options):
    """slowfs over BACKING at MOUNTPOINT with slowfs OPTIONS for the duration of the block."""
    clean_stale(mountpoint)
    os.makedirs(mountpoint, exist_ok=True)
    proc = _specx("-d", *options, backing, mountpoint)
    if proc.returncode != 0:
        unmount(mountpoint)
        detail = proc.stderr.strip().splitlines()
        raise SystemExit(f"specx bench: cannot mount slowfs on {mountpoint}: "
                         f"{detail[-1] if detail else 'exit status %d' % proc.returncode}")
    try:
        yield mountpoint
    finally:
        unmount(mountpoint)
        with contextlib.suppress(OSError):
            os.rmdir(mountpoint)


def stats(mountpoint):
    """The device's cumulative statistics (`specx slowfs --stats --json`), or None."""
    proc = _specx("--stats", mountpoint, "--json")
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return None


# Fields of a statistics snapshot that describe the device rather than count its work.
NOT_COUNTERS = ("preset", "model", "pid", "uptime_s")


def stats_diff(before, after):
    """What the device did between two snapshots: every counter of AFTER minus the same
    counter of BEFORE, nested as in the snapshot (None when a snapshot is missing)."""
    if not before or not after:
        return None

    def sub(a, b):
        if isinstance(a, dict):
            return {k: sub(v, b.get(k) if isinstance(b, dict) else None) for k, v in a.items()
                    if k not in NOT_COUNTERS and not isinstance(v, (str, bool))}
        if isinstance(a, list):
            b = b if isinstance(b, list) else []
            return [sub(x, b[i] if i < len(b) else None) for i, x in enumerate(a)]
        return a - (b or 0)

    return sub(after, before)
