"""The memory control of `specx run` (issue 10; Fraser & Chang 2003 §6.1; docs/DESIGN.md §6.4):
what it guarantees whatever the timing. Its arithmetic is unit-tested (test_runtime_memory_control);
whether it stops speculation that does harm is measured by `specx bench` (the sphinx sweep)."""
import contextlib
import json
import os
import subprocess
import sys
import uuid

import pytest

from conftest import BUILD, copies_get_cpu, drop_caches, run_specx, slowfs_mount
from test_run import write_chain

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from specx_bench import memcg  # noqa: E402

CHASE = BUILD / "bench" / "programs" / "chase"


@contextlib.contextmanager
def roomy_group():
    """A memory cgroup the program cannot fill (1 GiB), or none where there is no memory
    controller: either way its limit is never hit."""
    if memcg.find() is None:
        yield None
        return
    with memcg.limited(f"specx-test-memctl-{uuid.uuid4().hex[:8]}", 1 << 30) as group:
        yield group


def chase_on_slowfs(tmp_path, options):
    """A pointer chaser long enough for several intervals (600 dependent stalls of 2 ms), in
    a roomy memory cgroup."""
    backing = tmp_path / "backing"
    backing.mkdir()
    write_chain(backing / "chain.bin", 4096, 7)
    chase = [str(CHASE), "--hops", "600"]
    plain = subprocess.run([*chase, backing / "chain.bin"], capture_output=True, text=True,
                           check=True).stdout
    json_file = tmp_path / "report.json"
    with slowfs_mount(backing, tmp_path / "mnt", "--latency-ms", "2") as mnt, \
            roomy_group() as group:
        drop_caches()
        with copies_get_cpu(mnt / "chain.bin"):
            proc = run_specx("run", "--report", "--json", json_file, *options, "--", *chase,
                             mnt / "chain.bin", preexec_fn=group.add if group else None)
    assert proc.returncode == 0 and proc.stdout == plain
    return proc, json.loads(json_file.read_text())


@pytest.mark.root
def test_without_memory_pressure_speculation_is_never_stopped(specx, tmp_path):
    """A memory cgroup whose limit is never hit: no page of the program can have been pushed
    out by speculation, so the control counts no added stall and never stops it, however
    little it removes."""
    proc, report = chase_on_slowfs(tmp_path, [])
    total = report["total"]
    assert report["memory_control"] is True
    assert total["memctl_intervals"] >= 1, total
    assert (total["memctl_added"], total["memctl_disabled"]) == (0, 0), total
    assert "memory control (paper 6.1)" in proc.stderr


@pytest.mark.root
def test_no_memory_control_ends_no_interval(specx, tmp_path):
    proc, report = chase_on_slowfs(tmp_path, ["--no-memory-control"])
    assert report["memory_control"] is False
    assert report["total"]["memctl_intervals"] == 0
    assert "off (--no-memory-control)" in proc.stderr


def test_no_memory_control_is_an_option(specx):
    out = run_specx("run", "--help", check=True).stdout
    assert "--no-memory-control" in out
