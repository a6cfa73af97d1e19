"""slowfs mounts for the benchmarks (specx_support.slowfs, with the `specx` that started the
harness) and device statistics snapshots (cumulative counters, so a run's share is a
difference)."""
import contextlib
import json

from specx_support import components
from specx_support import slowfs as mounts


def _say(line):
    print(f"specx bench: {line}", flush=True)


@contextlib.contextmanager
def mounted(backing, mountpoint, options):
    """slowfs over BACKING at MOUNTPOINT with slowfs OPTIONS for the duration of the block;
    a mount that cannot be made ends the bench with its one-line reason."""
    try:
        with mounts.mounted(components.specx_exe(), backing, mountpoint, options,
                            note=_say) as point:
            yield point
    except mounts.MountError as e:
        raise SystemExit(f"specx bench: {e}") from None


def stats(mountpoint):
    """The device's cumulative statistics (`specx slowfs --stats --json`), or None."""
    proc = mounts.run(components.specx_exe(), "--stats", mountpoint, "--json")
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
