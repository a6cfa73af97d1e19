"""Memory cgroups for the out-of-core workloads (bench/specx_support/memcg.py): a real group on
this machine's hierarchy (v1 here), and the v2 path on a hierarchy laid out in a directory."""
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


def fake_hierarchy(tmp_path, own="/"):
    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu io memory pids\n")
    (root / "cgroup.subtree_control").write_text("\n")
    mounts = tmp_path / "mounts"
    mounts.write_text(f"cgroup2 {root} cgroup2 rw,relatime 0 0\n")
    own_file = tmp_path / "cgroup"
    own_file.write_text(f"0::{own}\n")
    return root, mounts, own_file


def test_v2_hierarchy_is_found_and_memory_delegated(tmp_path):
    root, mounts, own = fake_hierarchy(tmp_path)
    hierarchy = memcg.find(str(mounts), str(own))
    assert hierarchy == memcg.Hierarchy(memcg.V2, str(root), str(root))
    assert "+memory" in (root / "cgroup.subtree_control").read_text()
    with memcg.limited("run", 64 * MiB, hierarchy) as group:
        assert (root / "run" / "memory.max").read_text() == str(64 * MiB)
        assert group.version == memcg.V2
        # Processes go in a leaf, so that groups with controllers can be made beside them.
        leaf = group.leaf("fg")
        assert leaf.path == str(root / "run" / "fg") and (root / "run" / "fg").is_dir()
        assert group.leaf("fg").path == leaf.path
        (root / "run" / "memory.max").unlink()  # cgroupfs's rmdir takes the files along
    assert not (root / "run").exists()


def test_v1_memory_hierarchy_is_used_below_our_own_group(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup2 /nonexistent cgroup2 rw 0 0\n"
                      f"cgroup {tmp_path}/memory cgroup rw,relatime,memory 0 0\n")
    own = tmp_path / "cgroup"
    own.write_text("4:memory:/jobs/a\n0::/\n")
    hierarchy = memcg.find(str(mounts), str(own))
    assert hierarchy == memcg.Hierarchy(memcg.V1, f"{tmp_path}/memory",
                                        f"{tmp_path}/memory/jobs/a")


def test_machine_reclaim_counts_only_grow():
    first = memcg.machine_reclaim()
    assert first["pgscan"] >= 0
    second = memcg.machine_reclaim()
    assert all(second[k] >= first[k] for k in first)
