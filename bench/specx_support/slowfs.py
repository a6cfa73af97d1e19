"""slowfs mounts: mounted with `specx slowfs -d`, always unmounted, and a mount left dead by
an earlier run that was killed outright cleared before a new one is made."""
import contextlib
import os
import subprocess


class MountError(Exception):
    """slowfs could not be mounted; the message is a one-line reason."""


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


def run(specx, *args):
    """`SPECX slowfs ARGS...`, its output captured (text)."""
    return subprocess.run([str(specx), "slowfs", *map(str, args)], capture_output=True,
                          text=True)


def unmount(specx, path):
    """Unmounts PATH however it can: slowfs's own way first, then lazily."""
    if not is_mounted(path):
        return
    run(specx, "--unmount", path)
    if is_mounted(path):
        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True)
    if is_mounted(path):
        subprocess.run(["umount", "-l", path], capture_output=True)


def clean_stale(specx, path, note=lambda line: None):
    """Removes a mount left at PATH by an earlier run that crashed, and says so through NOTE.
    A run killed outright leaves its mount point dead ("Transport endpoint is not connected"):
    it is no directory any more as far as stat can tell, so only the mount table is asked."""
    if is_mounted(path):
        note(f"{path} is still mounted from an earlier run; unmounting it")
        unmount(specx, path)


@contextlib.contextmanager
def mounted(specx, backing, mountpoint, options, note=lambda line: None):
    """slowfs over BACKING at MOUNTPOINT with slowfs OPTIONS for the duration of the block
    (the mount point is removed afterwards when empty). Raises MountError when it cannot be
    mounted; NOTE hears of a stale mount cleared first."""
    clean_stale(specx, mountpoint, note)
    os.makedirs(mountpoint, exist_ok=True)
    proc = run(specx, "-d", *options, backing, mountpoint)
    if proc.returncode != 0:
        unmount(specx, mountpoint)
        detail = proc.stderr.strip().splitlines()
        raise MountError(f"cannot mount slowfs on {mountpoint}: "
                         f"{detail[-1] if detail else 'exit status %d' % proc.returncode}")
    try:
        yield mountpoint
    finally:
        unmount(specx, mountpoint)
        with contextlib.suppress(OSError):
            os.rmdir(mountpoint)
