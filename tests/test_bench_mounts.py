"""slowfs mounts as the benchmark harness and the tests make them (specx_support.slowfs): a
run killed outright (SIGKILL, a lost session) leaves a dead FUSE mount behind; the next run
must clear it instead of failing."""
import json
import os
import signal
import time

import pytest

from conftest import run_specx
from specx_support import slowfs


def kill_daemon(mountpoint):
    stats = json.loads(run_specx("slowfs", "--stats", mountpoint, "--json", check=True).stdout)
    os.kill(stats["pid"], signal.SIGKILL)
    # Dead as a killed run leaves it: not even stat answers once the kernel's cached
    # attributes of the mount's root expire.
    for _ in range(100):
        try:
            os.stat(mountpoint)
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError("the mount still answers stat after its daemon was killed")


@pytest.mark.root
def test_a_dead_mount_left_by_a_killed_run_is_cleared(specx, tmp_path):
    backing, mnt = tmp_path / "back", tmp_path / "mnt"
    backing.mkdir()
    (backing / "f").write_text("data\n")
    mnt.mkdir()
    run_specx("slowfs", "-d", "--latency-ms", "0", backing, mnt, check=True)
    try:
        kill_daemon(mnt)
        assert slowfs.is_mounted(mnt)
        stale = []
        with slowfs.mounted(specx, str(backing), str(mnt), ["--latency-ms", "0"],
                            note=stale.append) as point:
            assert (mnt / "f").read_text() == "data\n" and point == str(mnt)
        assert not slowfs.is_mounted(mnt)
        assert stale == [f"{mnt} is still mounted from an earlier run; unmounting it"]
    finally:
        slowfs.unmount(specx, str(mnt))
