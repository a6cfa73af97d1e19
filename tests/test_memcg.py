"""Memory cgroups for the out-of-core workloads (bench/specx_support/memcg.py): a real group on
this machine's hierarchy (v1 here), found by specx's own discovery."""
import os
import subprocess
import sys
import uuid

import pytest

from conftest import BUILD
from specx_support import memcg

MiB = 1 << 20
RECLAIM = os.path.join(BUILD, "tests", "kernel", "memcg-reclaim")


@pytest.mark.root
def test_a_run_group_is_real_enforced_and_removed():
    if memcg.find() is None:
        pytest.skip("no cgroup hierarchy with the memory controller on this machine")
    name = f"specx-test-{uuid.uuid4().hex[:8]}"
    with memcg.limited(name, 32 * MiB) as group:
        assert group.limit() == 32 * MiB
        inside = subprocess.run(["cat", "/proc/self/cgroup"], preexec_fn=group.add,
                                capture_output=True, text=True, check=True).stdout
        assert name in inside
        # 128 MiB of anonymous memory touched in a 32 MiB group: reclaimed to swap if there
        # is any, else the group's OOM killer ends it. Either way the limit holds.
        hog = subprocess.run([sys.executable, "-c",
                              "b = bytearray(128 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
                              "print('done')"],
                             preexec_fn=group.add, capture_output=True, text=True)
        assert hog.returncode == -9 or (group.peak_bytes() or 0) <= 33 * MiB
        # The counters the signals comparison reads are the group's own, from its birth.
        signals = group.reclaim_signals()
        assert signals and all(isinstance(v, int) and v >= 0 for v in signals.values())
        assert "workingset_refault_file" in signals
    assert not os.path.exists(group.path)


@pytest.mark.root
def test_reclaim_takes_bytes_from_a_group_and_gives_its_limit_back(tmp_path):
    """specx_memcg_reclaim (src/kernel/memcg.c), which specx share uses to make room for a
    prefetch: memory.reclaim on v2; on v1 the hard limit lowered for a moment and put back."""
    if memcg.find() is None:
        pytest.skip("no cgroup hierarchy with the memory controller on this machine")
    data = tmp_path / "data"
    with open(data, "wb") as f:   # written back, so that the reader's DONTNEED drops it all
        f.write(os.urandom(32 * MiB))
        os.fsync(f.fileno())
    with memcg.limited(f"specx-test-{uuid.uuid4().hex[:8]}", 256 * MiB) as group:
        # A reader whose 32 MiB of page cache is charged to the group, then waits.
        reader = subprocess.Popen(
            [sys.executable, "-c", "import os, sys\n"
             f"fd = os.open({str(data)!r}, os.O_RDONLY)\n"
             "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
             "while os.read(fd, 1 << 20): pass\n"
             "print('read', flush=True)\nsys.stdin.read()\n"],
            preexec_fn=group.add, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert reader.stdout.readline() == "read\n"
            out = subprocess.run([RECLAIM, str(reader.pid), str(16 * MiB)],
                                 capture_output=True, text=True, timeout=60)
        finally:
            reader.communicate("", timeout=30)
    assert out.returncode == 0, out.stderr
    lines = dict((f[0], (int(f[1]), int(f[2]))) for f in map(str.split, out.stdout.splitlines()))
    before, after = lines["usage"]
    assert before >= 32 * MiB and after <= before - 12 * MiB
    assert lines["limit"] == (256 * MiB, 256 * MiB)


def test_reclaim_probe_refuses_bad_use():
    for argv in ([], ["1"], ["x", "1"], ["1", "2x"]):
        out = subprocess.run([RECLAIM, *argv], capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.startswith("Usage: memcg-reclaim")


def own_memory_path():
    """This process's memory cgroup path as /proc/self/cgroup says it (the v1 line naming the
    memory controller, else the v2 line)."""
    lines = [line.split(":", 2) for line in open("/proc/self/cgroup").read().splitlines()]
    v1 = [path for _, controllers, path in lines if "memory" in controllers.split(",")]
    return v1[0] if v1 else next(path for _, controllers, path in lines if controllers == "")


def test_the_hierarchy_is_specx_own_discovery():
    """memcg asks specx (src/kernel/cgroup.c) where the memory controller is: the group it
    makes runs in is our own on v1, ours or one above it on v2, in the hierarchy's mount."""
    hierarchy = memcg.find()
    if hierarchy is None:
        pytest.skip("no cgroup hierarchy with the memory controller on this machine")
    fstype = "cgroup" if hierarchy.version == memcg.V1 else "cgroup2"
    mounts = [line.split()[:4] for line in open("/proc/self/mounts")]
    assert any(point == hierarchy.root and kind == fstype for _, point, kind, _ in mounts)
    own = os.path.normpath(os.path.join(hierarchy.root, own_memory_path().lstrip("/")))
    if hierarchy.version == memcg.V1:
        assert hierarchy.parent == own
    else:
        assert own == hierarchy.parent or own.startswith(hierarchy.parent + "/")
    assert memcg.own_group() == memcg.Group(own, hierarchy.version)


def test_machine_reclaim_counts_only_grow():
    first = memcg.machine_reclaim()
    assert first["pgscan"] >= 0
    second = memcg.machine_reclaim()
    assert all(second[k] >= first[k] for k in first)
