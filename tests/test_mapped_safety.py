"""Differential safety tests for memory that others see (paper §4.1.1 and
§5.2): a program that writes through a MAP_SHARED file mapping and msyncs, shares memory with
a child (MAP_SHARED|MAP_ANONYMOUS across fork, POSIX shared memory) and mprotects regions,
between reads that stall on a cold file of a slowfs mount, must be indistinguishable with and
without `specx run` — stdout, stderr, exit status and every file — under both copy-on-write
designs (`--cow basic`: the speculative copy is a plain fork; `--cow one-way`: the fast
refork leaves the program's large private memory out of the copy, which pulls pages on first
touch). Every case also forks a child at the end that must see all of the program's private
memory: the regions a fast refork left out belong to the program's own forks again.

The program is tests/safety/memshare.c; the runs, the cold cache and the comparison are
tests/test_safety.py's (run_once, assert_same), on a mount of its own with one larger file."""
import json
import random

import pytest

from conftest import BUILD, copies_get_cpu
from test_safety import assert_same, env  # noqa: F401 (env is the fixture assert_same needs)

MEMSHARE = BUILD / "tests" / "safety" / "memshare"
# 16 steps, each 512 KiB further on (tests/safety/memshare.c), in sub/, which test_safety's
# make_cold evicts before every run.
DATA = "sub/mapped-data.bin"
DATA_BYTES = 16 * 512 * 1024 + 4096
COW = ["basic", "one-way"]

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def data(env):  # noqa: F811 (the imported fixture)
    if not MEMSHARE.exists():
        pytest.fail(f"{MEMSHARE} is missing: build first (make build)")
    (env["top"] / "backing" / DATA).write_bytes(random.Random(4).randbytes(DATA_BYTES))
    return str(env["mnt"] / DATA)


@pytest.mark.parametrize("cow", COW)
@pytest.mark.parametrize("mode", ["mapfile", "shmanon", "posixshm", "mprotect"])
def test_shared_memory_writes_are_the_programs_alone(env, data, mode, cow):  # noqa: F811
    # assert_same also checks that speculative copies were made (spec_created > 0): each
    # step's read stalls, so a copy runs ahead through the writes that follow it.
    with copies_get_cpu(MEMSHARE):   # the copies must run into the writes, busy machine or not
        plain, _ = assert_same(env, [str(MEMSHARE), mode, data], options=("--cow", cow))
    assert plain.returncode == 0, plain.stderr
    # The setting took effect: one-way copies were made by the fast refork and pulled pages of
    # the program's large private memory on first touch (they ran into the step's writes).
    total = json.loads((env["top"] / "stats.json").read_text())["total"]
    if cow == "one-way":
        assert total["refork_fast"] > 0 and total["lazy_pulled"] > 0, total
    else:
        assert total["refork_fast"] == 0, total
    assert plain.stdout.count(" step ") >= 16 and "forked child ended well" in plain.stdout
    if mode == "mprotect":
        # The program's own protection holds: every fence traps, every write fault is its own.
        assert "OPEN" not in plain.stdout and "write faults 16," in plain.stdout
    if mode == "mapfile":
        assert plain.files["mapped.out"][0] == "file"


@pytest.mark.parametrize("mode", ["mapfile", "shmanon", "posixshm", "mprotect"])
def test_shared_memory_writes_are_the_programs_alone_through_the_supervisor(env, data, mode):  # noqa: F811
    """The same through the supervisor (--backend=trace), which makes its copy's shared
    mappings private from outside before sealing it (/proc/self/map_files; root)."""
    with copies_get_cpu(MEMSHARE):
        plain, _ = assert_same(env, [str(MEMSHARE), mode, data], options=("--backend=trace",))
    assert plain.returncode == 0, plain.stderr
    supervisor = json.loads((env["top"] / "stats.json").read_text())["supervisor"]
    # Copies were made (assert_same) and none refused for the shared memory; on a busy machine
    # some stalls pass without one (the thread not back from its read in time: not_made).
    assert supervisor["shared_memory"] == 0, supervisor
