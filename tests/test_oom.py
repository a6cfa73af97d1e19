"""The speculative copy lives in the program's memory cgroup. When the group runs out, the
OOM killer must take the copy, never the program: a program that fits its group without
specx must finish the same way with it."""
import os
import subprocess
import sys
import time
import uuid

import pytest

from conftest import BUILD, copies_get_cpu, drop_caches, run_specx, slowfs_mount

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from specx_bench import memcg  # noqa: E402

MiB = 1 << 20
OPVM = BUILD / "tests" / "safety" / "opvm"

# One cold read (the stall that creates the copy), then 48 MiB filled. The copy runs on
# while the program waits for that read and fills its own 48 MiB first: program and copy
# together do not fit the group, the program alone does.
SCRIPT = "pread {data} 0 4096\nfill 48\nsleep 1000\nexit 0\n"


def no_swap(group):
    """Anonymous memory must stay in memory: with swap the group would page, not kill."""
    name = "memory.swap.max" if group.version == "v2" else "memory.swappiness"
    with open(os.path.join(group.path, name), "w") as f:
        f.write("0")


def cold_data_only(script):
    """Only the data read may stall: that is where the copy must start."""
    drop_caches()
    script.read_bytes()
    OPVM.read_bytes()


def run_in_group(limit, *command):
    with memcg.limited(f"specx-test-oom-{uuid.uuid4().hex[:8]}", limit) as group:
        no_swap(group)
        proc = run_specx(*command, preexec_fn=group.add)
        kills = group.oom_kills()
    return proc, kills


@pytest.mark.root
def test_the_oom_killer_takes_the_copy_not_the_program(specx, tmp_path):
    if memcg.find() is None:
        pytest.skip("no cgroup hierarchy with the memory controller on this machine")
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "data").write_bytes(bytes(range(256)) * 64)
    script = tmp_path / "fill.ops"
    with slowfs_mount(tmp_path / "back", tmp_path / "mnt", "--latency-ms", "300") as mnt:
        script.write_text(SCRIPT.format(data=mnt / "data"))
        cold_data_only(script)
        plain, _ = run_in_group(64 * MiB, "run", "--no-spec", "--", OPVM, script)
        cold_data_only(script)
        with copies_get_cpu(script):   # the copy must fill its 48 MiB on a busy machine too
            spec, kills = run_in_group(64 * MiB, "run", "--", OPVM, script)
    assert plain.returncode == 0, plain.stderr
    assert kills, "the group's OOM killer never ran: nothing was tested"
    assert (spec.returncode, spec.stdout, spec.stderr) == (0, plain.stdout, plain.stderr)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def oom_score_adj(pid):
    with open(f"/proc/{pid}/oom_score_adj") as f:
        return int(f.read())


def running(pid):
    """True while PID has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def copy_scores(program):
    """The OOM scores of PROGRAM and of its copy, once the copy has given itself one (its first
    step in the sandbox) or, failing that, as they were last seen while the program ran."""
    scores = None
    while running(program) and scores != (0, 1000):
        copies = children(program)   # without a report, specx run is the program
        try:
            scores = (oom_score_adj(program), oom_score_adj(copies[0])) if copies else scores
        except OSError:
            pass   # the copy ended between the two reads
        time.sleep(0.01)
    return scores


@pytest.mark.root
def test_the_copy_volunteers_as_the_oom_killers_first_victim(specx, tmp_path):
    """The end-to-end test above cannot tell the kernel's choice from ours when the copy is
    the larger process anyway: this one looks at the score the copy gave itself."""
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "data").write_bytes(bytes(range(256)) * 64)
    script = tmp_path / "wait.ops"
    with slowfs_mount(tmp_path / "back", tmp_path / "mnt", "--latency-ms", "300") as mnt:
        script.write_text(f"pread {mnt / 'data'} 0 4096\nsleep 2000\nexit 0\n")
        cold_data_only(script)
        with copies_get_cpu(script):   # the copy must reach its sandbox on a busy machine too
            run = subprocess.Popen([specx, "run", "--", OPVM, script], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            try:
                scores = copy_scores(run.pid)
            finally:
                out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert scores == (0, 1000)
