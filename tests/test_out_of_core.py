"""The stencil and swap workloads of `specx bench`: the stencil program itself, the
swap space the harness makes and removes (specx_support.swapspace), that the swap workload
really swaps, and both workloads end to end at test scale. No timing is asserted."""
import json
import os
import pathlib
import resource
import shutil
import subprocess
import tempfile
import uuid

import pytest

from conftest import BUILD, run_specx
from specx_support import memcg, swapspace
from specx_support.programs import write_grid

STENCIL = BUILD / "bench" / "programs" / "stencil"
MiB = 1 << 20


def stencil(*args, **kw):
    return subprocess.run([str(STENCIL), *map(str, args)], capture_output=True, text=True, **kw)


def checksum(stdout):
    return stdout.split("checksum ")[1].strip()


def grid(path, n):
    write_grid(path, n, 1)
    return path


# --- the stencil program ------------------------------------------------------------------------

def test_stencil_updates_the_file_and_agrees_with_its_anonymous_run(tmp_path):
    mapped, anonymous = grid(tmp_path / "a.bin", 32), tmp_path / "b.bin"
    shutil.copyfile(mapped, anonymous)
    original = anonymous.read_bytes()
    first = stencil("--cycles", 2, mapped, check=True).stdout
    second = stencil("--cycles", 2, "--anonymous", anonymous, check=True).stdout
    assert first.startswith("32^3 grid, 2 cycles, mapped file, checksum ")
    assert checksum(first) == checksum(second)
    # The mapped run wrote its result back (msync); the anonymous run left the file alone.
    assert mapped.read_bytes() != original and anonymous.read_bytes() == original
    # From the changed grid the next run computes something else: the data matters.
    assert checksum(stencil(mapped, check=True).stdout) != checksum(first)


@pytest.mark.parametrize("args,status,message", [
    (["--cycles", "0", "x"], 2, "--cycles takes a whole number"),
    (["--bogus", "x"], 2, "unknown option '--bogus'"),
    (["/etc/hostname"], 1, "not a grid file"),
    (["--anonymous", "/etc/hostname"], 1, "not a grid file"),
])
def test_stencil_rejects_bad_input_in_one_line(args, status, message):
    proc = stencil(*args)
    assert proc.returncode == status and proc.stderr.startswith("stencil: ")
    assert message in proc.stderr and len(proc.stderr.splitlines()) == 1


# --- swap space: logic ------------------------------------------------------------------------

def test_no_swap_file_on_a_file_system_that_cannot_hold_one(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(swapspace, "zram_available", lambda: False)
    reason = swapspace.unavailable_reason("/dev/shm")
    assert reason and "tmpfs" in reason and "\n" not in reason
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert swapspace.unavailable_reason("/var/tmp") == "making swap space needs root"


def test_file_system_is_that_of_the_longest_mount_above():
    assert swapspace.file_system_of("/proc/self") == "proc"
    assert swapspace.file_system_of("/") == swapspace.file_system_of("/nonexistent/below")


# --- swap space: real (root) --------------------------------------------------------------------

def active_swaps():
    with open("/proc/swaps") as f:
        return [line.split()[0] for line in f.readlines()[1:]]


def skip_without_swap(directory, kinds):
    reason = swapspace.unavailable_reason(directory)
    if reason or ("zram" in kinds and "file" not in kinds and not swapspace.zram_available()):
        pytest.skip(f"no swap space can be made here: {reason or 'no zram'}")


@pytest.mark.root
@pytest.mark.parametrize("kind", ["zram", "file"])
def test_swap_space_is_made_and_removed_even_on_error(kind):
    directory = tempfile.mkdtemp(prefix="specx-swaptest-", dir="/var/tmp")
    skip_without_swap(directory, (kind,))
    try:
        with pytest.raises(RuntimeError):
            with swapspace.enabled(16 * MiB, directory, kinds=(kind,)) as space:
                assert space.kind == kind and space.path in active_swaps()
                made = space
                raise RuntimeError("the run failed")
        assert made.path not in active_swaps()
        assert not os.path.exists(made.path if kind == "file" else f"/sys/block/zram{made.zram_id}")
        assert not os.path.exists(swapspace._record_path(made))
    finally:
        shutil.rmtree(directory)


@pytest.mark.root
def test_swap_space_of_a_killed_harness_is_removed_by_the_next():
    directory = tempfile.mkdtemp(prefix="specx-swaptest-", dir="/var/tmp")
    skip_without_swap(directory, ("file",))
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        space = swapspace._make_file(16 * MiB, directory)
        swapspace._run("mkswap", space.path)
        swapspace._run("swapon", space.path)
        # As if the harness that made it had been killed outright.
        pathlib.Path(swapspace._record_path(space)).write_text(json.dumps(
            {"kind": space.kind, "path": space.path, "zram_id": -1, "pid": dead.pid}))
        swapspace.remove_stale()
        assert space.path not in active_swaps() and not os.path.exists(space.path)
    finally:
        shutil.rmtree(directory)


@pytest.mark.root
def test_anonymous_stencil_swaps_in_a_small_cgroup_and_computes_the_same(tmp_path):
    skip_without_swap("/var/tmp", ("zram", "file"))
    if memcg.find() is None:
        pytest.skip("no cgroup hierarchy with the memory controller on this machine")
    path = grid(tmp_path / "grid.bin", 128)   # 8 MiB of grid in a 4 MiB group
    free = checksum(stencil("--anonymous", path, check=True).stdout)
    with swapspace.enabled(64 * MiB, "/var/tmp"), \
            memcg.limited(f"specx-test-{uuid.uuid4().hex[:8]}", 4 * MiB) as group:
        before = swapspace.swap_counters()
        proc = subprocess.Popen([str(STENCIL), "--anonymous", str(path)], stdout=subprocess.PIPE,
                                text=True, preexec_fn=group.add)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        after = swapspace.swap_counters()
    assert os.waitstatus_to_exitcode(status) == 0
    assert checksum(out) == free
    assert after[1] > before[1] and usage.ru_majflt > 0, (before, after, usage)


# --- end to end (root) ----------------------------------------------------------------------------

FAST = "--slowfs-args=--latency-ms 1 --bandwidth-mbps 400 --bus-mbps 0"


@pytest.mark.root
def test_stencil_and_swap_benches_start_every_run_from_the_same_data(specx):
    data_dir = pathlib.Path(tempfile.mkdtemp(prefix="specx-bench-ooc-", dir="/var/tmp"))
    try:
        wanted = ["cold", "warm"] + (["specx"] if (BUILD / "src" / "run" / "runtime" /
                                                   "libspecx.so").exists() else [])
        out = data_dir / "out"
        proc = run_specx("bench", "stencil", "swap", "--scale", "test", "--runs", "2",
                         "--warm-runs", "1", "--modes", ",".join(wanted), "--no-read-calls",
                         FAST, "--data-dir", data_dir, "--out", out, timeout=300)
        if "specx bench: skipping swap" in proc.stdout:
            pytest.skip(proc.stdout.split("specx bench: skipping swap: ")[1].splitlines()[0])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        results = json.loads((out / "results.json").read_text())
        for w in results["workloads"]:
            logs = [(out / "logs" / r["log"]).read_text() for r in w["runs"]]
            # Every run, in every mode, from the same data: one checksum. (A stencil run that
            # found the grid its predecessor wrote would compute another.)
            sums = {checksum(log.splitlines()[1]) for log in logs}
            assert len(sums) == 1 and len(logs) == 2 * len(wanted) - 1, (w["name"], logs)
            if w["name"] == "swap":
                assert all("swap space " in log for log in logs)
        # The generated grid is untouched and no working copy is left behind.
        stencil_data = data_dir / "stencil-test"
        assert sorted(p.name for p in stencil_data.iterdir()) == [".specx-dataset.json",
                                                                  "grid.orig"]
        assert not [p for p in active_swaps() if "specx-bench-swap" in p]
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)

