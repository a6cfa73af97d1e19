"""`specx share` (Suh et al. 2001): jobs run in turns, their outputs and exit
statuses those of the jobs run alone, and nothing left behind however the run ends. Whether
prefetching pays is measured by `specx bench share`, not here."""
import contextlib
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from conftest import SPECX, run_specx, wait_for
from specx_support import memcg, swapspace
from specx_support.jobs import KERNEL_WRITER, SWEEPER

PY = sys.executable


def share_groups():
    """specx share's groups (specx-share-PID) anywhere in the memory and freezer hierarchies."""
    found = []
    for root in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup"):
        if os.path.isdir(root):
            for dirpath, dirnames, _ in os.walk(root):
                found += [os.path.join(dirpath, d) for d in dirnames if d.startswith("specx-share-")]
    return set(found)


def processes_with(marker):
    pids = []
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return pids


def jobs_with(marker):
    """The jobs among processes_with(MARKER): Python running a job's code (unshare, sh and specx
    share itself carry the marker in their arguments too)."""
    jobs = []
    for pid in processes_with(marker):
        try:
            argv0 = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if argv0 == PY.encode():
            jobs.append(pid)
    return jobs


def py(code, *args):
    return [PY, "-c", code, *map(str, args)]


# Prints N numbered lines of a seeded pseudo-random text, allocating a little memory, and exits
# with the status given.
PRINTER = """
import random, sys
random.seed(sys.argv[1])
data = bytearray(4 << 20)
for i in range(int(sys.argv[2])):
    print(i, random.random())
    print("err", i, file=sys.stderr)
sys.exit(int(sys.argv[3]))
"""


def joined(*commands):
    out = []
    for i, cmd in enumerate(commands):
        out += ([":::"] if i else []) + cmd
    return out


# ---- command line ----


@pytest.mark.parametrize("args, message", [
    ([], "no jobs"),
    (["--quantum", "0", "--", "true"], "invalid --quantum '0'"),
    (["--memory", "12Q", "--", "true"], "invalid --memory '12Q'"),
    (["--prefetch", "later", "--", "true"], "invalid --prefetch 'later'"),
    (["--", "true", ":::"], "an empty job"),
    (["--frob"], "invalid option '--frob'"),
    (["--jobs", "/nonexistent/jobs.txt"], "cannot read --jobs"),
])
def test_bad_usage_is_one_line_and_exit_2(specx, args, message):
    before = share_groups()
    proc = run_specx("share", *args)
    assert proc.returncode == 2, proc
    assert proc.stderr.startswith("specx share: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr
    assert share_groups() == before


def test_help_and_version(specx):
    out = run_specx("share", "--help", check=True).stdout
    for option in ("--quantum", "--memory", "--prefetch", "--release", "--scheduler", "--jobs",
                   "--output", "--report", "--json", ":::"):
        assert option in out
    assert run_specx("share", "--version", check=True).stdout.startswith("specx share ")


@pytest.mark.root
def test_an_unwritable_json_path_is_refused_before_any_job_runs(specx, tmp_path):
    marker = tmp_path / "ran"
    proc = run_specx("share", "--json", "/nonexistent/dir/x.json", "--", "touch", marker)
    assert proc.returncode == 2 and "cannot write /nonexistent/dir/x.json" in proc.stderr
    assert not marker.exists()


# ---- what the jobs see ----


@pytest.mark.root
def test_outputs_and_statuses_are_those_of_the_jobs_alone(specx, tmp_path):
    jobs = [py(PRINTER, "a", 300, 0), py(PRINTER, "b", 200, 3), py(PRINTER, "c", 100, 0)]
    alone = [subprocess.run(j, capture_output=True) for j in jobs]
    report = tmp_path / "share.json"
    proc = run_specx("share", "--quantum", "50ms", "--output", tmp_path, "--json", report, "--",
                     *joined(*jobs))
    assert proc.returncode == 3  # the worst of the jobs'
    for n, expected in enumerate(alone, 1):
        assert (tmp_path / f"{n}.out").read_bytes() == expected.stdout
        assert (tmp_path / f"{n}.err").read_bytes() == expected.stderr
    record = json.loads(report.read_text())
    assert [j["exit_code"] for j in record["jobs"]] == [0, 3, 0]
    assert record["exit_code"] == 3


@pytest.mark.root
def test_lines_are_prefixed_with_the_job_number_and_never_mixed(specx):
    jobs = [py(PRINTER, "a", 500, 0), py(PRINTER, "b", 500, 0)]
    proc = run_specx("share", "--quantum", "20ms", "--", *joined(*jobs))
    assert proc.returncode == 0, proc.stderr
    for n, job in enumerate(jobs, 1):
        alone = subprocess.run(job, capture_output=True, text=True).stdout.splitlines()
        mine = [line[len(f"[{n}] "):] for line in proc.stdout.splitlines()
                if line.startswith(f"[{n}] ")]
        assert mine == alone
    assert len(proc.stdout.splitlines()) == 1000


@pytest.mark.root
def test_one_job_runs_at_a_time_in_turns(specx, tmp_path):
    """Each job appends its number to one file as fast as it can: while frozen it cannot, so
    the file is runs of one job's marks, and with several turns each the jobs alternate."""
    log = tmp_path / "log"
    writer = ("import sys, time\nend = time.monotonic() + 1.5\n"
              "with open(sys.argv[1], 'a', buffering=1) as f:\n"
              "    while time.monotonic() < end:\n        f.write(sys.argv[2] + '\\n')\n"
              "        time.sleep(0.002)\n")
    proc = run_specx("share", "--quantum", "100ms", "--json", tmp_path / "r.json", "--report",
                     "--", *joined(py(writer, log, "1"), py(writer, log, "2")))
    assert proc.returncode == 0, proc.stderr
    marks = log.read_text().split()
    runs = [m for i, m in enumerate(marks) if i == 0 or marks[i - 1] != m]
    assert len(runs) >= 3, runs  # they took turns
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["switches"] >= 2
    # A job's monotonic clock runs on while it is frozen: its 1.5 s end in wall time.
    assert all(j["turns"] >= 2 for j in record["jobs"])
    # The turns, one record each, in order, the jobs alternating, each with the CPU time its
    # job used in it (the writer sleeps most of its turn).
    turns = record["turns"]
    assert len(turns) == sum(j["turns"] for j in record["jobs"])
    assert all(a["job"] != b["job"] for a, b in zip(turns, turns[1:]))
    assert all(a["start_s"] + a["seconds"] <= b["start_s"] + 0.001
               for a, b in zip(turns, turns[1:]))
    assert all(0 <= t["cpu_s"] <= t["seconds"] + 0.05 for t in turns)
    assert sum(t["cpu_s"] for t in turns) > 0
    # The table for people says the same.
    assert re.search(r"switches; the jobs were on a CPU for \d+ % of their turns", proc.stderr)
    assert len(re.findall(r"^  [12]   ", proc.stderr, re.M)) == 2, proc.stderr


@pytest.mark.root
def test_a_job_that_ends_leaves_the_rotation(specx, tmp_path):
    report = tmp_path / "r.json"
    proc = run_specx("share", "--quantum", "10s", "--json", report, "--",
                     *joined(["true"], py("print('second')")))
    assert proc.returncode == 0 and proc.stdout == "[2] second\n"
    record = json.loads(report.read_text())
    assert record["makespan_s"] < 10  # job 2 did not wait for job 1's quantum
    assert [j["turns"] for j in record["jobs"]] == [1, 1]


@pytest.mark.root
def test_a_command_that_cannot_run_counts_as_127(specx):
    proc = run_specx("share", "--", *joined(["true"], ["/nonexistent/program"]))
    assert proc.returncode == 127
    assert "[2] specx share: cannot run '/nonexistent/program'" in proc.stderr


# ---- nothing left behind ----


def start_share(*args):
    return subprocess.Popen([str(SPECX), "share", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)



SLEEPER = "import sys, time\nprint('up', flush=True)\ntime.sleep(1000)\n"


@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_ends_every_job_and_leaves_nothing(specx, sig):
    """Ctrl-C with jobs that never end, one running and one frozen."""
    marker = f"specx-test-share-{uuid.uuid4().hex[:8]}"
    before = share_groups()
    share = start_share("--quantum", "200ms", "--", *joined(py(SLEEPER, marker),
                                                             py(SLEEPER, marker)))
    assert wait_for(lambda: len(jobs_with(marker)) == 2)
    time.sleep(0.5)
    share.send_signal(sig)
    out, err = share.communicate(timeout=30)
    assert share.returncode == 128 + sig
    assert processes_with(marker) == []
    assert share_groups() == before


@pytest.mark.root
def test_a_job_killed_by_someone_else_leaves_the_rotation(specx, tmp_path):
    marker = f"specx-test-share-{uuid.uuid4().hex[:8]}"
    before = share_groups()
    share = start_share("--quantum", "100ms", "--", *joined(py(SLEEPER, marker),
                                                             py("import time; time.sleep(1.5)")))
    assert wait_for(lambda: len(jobs_with(marker)) == 1)
    os.kill(jobs_with(marker)[0], signal.SIGKILL)
    out, err = share.communicate(timeout=30)
    assert share.returncode == 128 + signal.SIGKILL  # the worst of the jobs'
    assert processes_with(marker) == []
    assert share_groups() == before


@pytest.mark.root
def test_the_next_run_removes_what_a_killed_run_left(specx):
    """specx share killed outright (SIGKILL) cleans nothing: its jobs get the kernel's
    parent-death signal, but a frozen one dies only once thawed, and the groups stay. The next
    run removes them."""
    marker = f"specx-test-share-{uuid.uuid4().hex[:8]}"
    before = share_groups()
    share = start_share("--quantum", "200ms", "--", *joined(py(SLEEPER, marker),
                                                             py(SLEEPER, marker)))
    assert wait_for(lambda: len(jobs_with(marker)) == 2)
    share.kill()
    share.wait()
    assert share_groups() != before
    proc = run_specx("share", "--", "true")
    assert proc.returncode == 0
    assert "left by a run that was killed" in proc.stderr
    assert share_groups() == before
    assert wait_for(lambda: processes_with(marker) == [])


@pytest.mark.root
def test_a_live_run_is_not_swept_even_where_its_pid_looks_dead(specx):
    """A run in a pid namespace of its own names its groups by a pid no process has here: a run
    started here meanwhile must see by the groups' lock, not the pid, that they are alive, and
    leave its jobs running."""
    marker = f"specx-test-share-{uuid.uuid4().hex[:8]}"
    taken = {g.rsplit("-", 1)[1] for g in share_groups()}
    pid_max = int(pathlib.Path("/proc/sys/kernel/pid_max").read_text())
    pid = next(p for p in iter(lambda: random.randrange(pid_max // 2, pid_max - 1), None)
               if not os.path.exists(f"/proc/{p}") and str(p) not in taken)
    script = f'echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "$0" share "$@"'
    run = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
                            SPECX, "--quantum", "200ms", "--",
                            *joined(py(SLEEPER, marker), py(SLEEPER, marker))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        # The run's own groups, and both jobs started: the run is under way.
        assert wait_for(lambda: any(g.endswith(f"specx-share-{pid}") for g in share_groups())
                        and len(jobs_with(marker)) == 2), run.stderr
        proc = run_specx("share", "--", "true")
        assert proc.returncode == 0 and "left by a run that was killed" not in proc.stderr, \
            proc.stderr
        assert any(g.endswith(f"specx-share-{pid}") for g in share_groups())
        assert run.poll() is None and len(jobs_with(marker)) == 2
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.communicate(timeout=60)
    assert wait_for(lambda: processes_with(marker) == [])


# ---- the benchmark's harness ----


def swaps():
    """The swap areas in use (their use changes with whatever else runs)."""
    with open("/proc/swaps") as f:
        return {line.split()[0] for line in f.read().splitlines()[1:]}


def swaps_of_others():
    """Swap areas another live benchmark made (its record names it and its pid): a stress run
    beside the test may add or remove one at any moment."""
    owned = set()
    for record in pathlib.Path(swapspace.RECORD_DIR).glob("swap-*.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(record.read_text())
            if data["pid"] != os.getpid() and pathlib.Path(f"/proc/{data['pid']}").exists():
                owned.add(data["path"])
    return owned


# ---- memory: no job is ever killed for what its frozen neighbours hold ----


MODES = [(p, r) for p in ("none", "switch", "model") for r in ("none", "cold", "pageout")]


@contextlib.contextmanager
def zram_swap(tmp_path, size):
    """Swap space on a fresh zram device, removed afterwards (skipped where there is none)."""
    try:
        with swapspace.enabled(size, tmp_path, kinds=("zram",)):
            yield
    except swapspace.Unavailable as e:
        pytest.skip(f"no swap space: {e}")


@contextlib.contextmanager
def memory_group(swappiness):
    """A v1 memory group below ours with SWAPPINESS, which groups made in it inherit; yields
    a function that puts the calling process in it (a preexec_fn). Removed afterwards (its
    last process may take a moment to leave on a busy machine)."""
    hierarchy = memcg.find()
    if hierarchy is None or hierarchy.version != memcg.V1:
        pytest.skip("the memory controller is not on cgroup v1 here")
    # No limit of its own ("-1"): only the swappiness its groups inherit matters.
    with memcg.limited(f"specx-test-swappiness-{uuid.uuid4().hex[:8]}", -1, hierarchy) as group:
        pathlib.Path(group.path, "memory.swappiness").write_text(f"{swappiness}\n")
        yield group.add


def shared_sweepers(tmp_path, mib, passes, njobs, memory, quantum, prefetch, release,
                    preexec_fn=None, program=SWEEPER):
    """NJOBS sweepers (PROGRAM) of MIB MiB under specx share: its exit status, its output and
    what each job printed alone."""
    jobs = [py(program, mib, passes, seed) for seed in range(1, njobs + 1)]
    alone = [subprocess.run(job, capture_output=True, text=True, check=True).stdout
             for job in jobs]
    proc = subprocess.Popen([str(SPECX), "share", "--memory", memory, "--quantum", quantum,
                             "--prefetch", prefetch, "--release", release, "--output",
                             tmp_path, "--", *joined(*jobs)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    proc.stdout, proc.stderr = proc.communicate(timeout=300)
    # Its groups are gone (others' runs may come and go beside it).
    assert not any(g.endswith(f"/specx-share-{proc.pid}") for g in share_groups())
    got = [(tmp_path / f"{n}.out").read_text() for n in range(1, njobs + 1)]
    return proc, got, alone


@pytest.mark.root
@pytest.mark.parametrize("prefetch, release", MODES)
def test_frozen_jobs_memory_the_kernel_will_not_swap_gets_no_job_killed(
        specx, tmp_path, prefetch, release):
    """Each job fits in --memory, both together do not, and the group specx share runs in has
    swappiness 0 (which its groups inherit): left as it was, the kernel's reclaim at the limit
    could swap none of the frozen job's memory, and its OOM killer took a job. specx share lets
    a frozen job's group swap and marks its memory cold: every job ends as it does alone.
    Beside two busy loops (SPECX_TEST_BUSY=2) the jobs' turns are short of CPU, which is when
    pages prefetched for a turn are left unmapped in the swap cache."""
    with zram_swap(tmp_path, 256 << 20), memory_group(0) as enter:
        proc, got, alone = shared_sweepers(tmp_path, 32, 30, 2, "48M", "100ms", prefetch,
                                           release, preexec_fn=enter)
    assert proc.returncode == 0, proc.stderr
    assert got == alone




@pytest.mark.root
@pytest.mark.parametrize("prefetch", ["none", "switch"])
def test_a_full_group_fails_no_write_the_kernel_makes_into_a_job(specx, tmp_path, prefetch):
    """Jobs whose memory is written by the kernel (reads into it) in a group kept full: every
    read succeeds and every job ends as it does alone (a group whose OOM killer is off fails
    such a charge with EFAULT instead of making room)."""
    with zram_swap(tmp_path, 256 << 20), memory_group(0) as enter:
        proc, got, alone = shared_sweepers(tmp_path, 32, 4, 2, "48M", "100ms", prefetch,
                                           "none", preexec_fn=enter, program=KERNEL_WRITER)
    assert proc.returncode == 0, proc.stderr
    assert got == alone


@pytest.mark.root
@pytest.mark.parametrize("prefetch, release", MODES)
def test_jobs_several_times_the_memory_in_fast_turns_are_never_killed(
        specx, tmp_path, prefetch, release):
    """Four jobs of 24 MiB in 48 MiB (each fits; they fit together only with swap), turns of
    100 ms, swapping to zram: every job ends as it does alone."""
    with zram_swap(tmp_path, 512 << 20):
        proc, got, alone = shared_sweepers(tmp_path, 24, 30, 4, "48M", "100ms", prefetch,
                                           release)
    assert proc.returncode == 0, proc.stderr
    assert got == alone


# ---- prefetching ----


@pytest.mark.root
def test_a_jobs_evicted_file_pages_are_read_back_in_before_its_turn(specx, tmp_path):
    """The pages of its files a job had in the page cache when its turn ended, evicted since
    (here by the other job, with POSIX_FADV_DONTNEED), are read back in before its next turn."""
    data = tmp_path / "data"
    data.write_bytes(os.urandom(8 << 20))
    # A reader that keeps its file open, as a database does: what a job has open or mapped
    # when its turn ends is what specx share knows of its files.
    reader = ("import hashlib, sys, time\nh = hashlib.sha256()\nf = open(sys.argv[1], 'rb')\n"
              "for i in range(12):\n    f.seek(0)\n    h.update(f.read())\n"
              "    time.sleep(0.1)\nprint(h.hexdigest())\n")
    dropper = ("import os, sys, time\nfor i in range(40):\n"
               "    fd = os.open(sys.argv[1], os.O_RDONLY)\n"
               "    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)\n"
               "    os.close(fd)\n    time.sleep(0.05)\n")
    alone = subprocess.run(py(reader, data), capture_output=True, text=True).stdout
    report = tmp_path / "r.json"
    proc = run_specx("share", "--quantum", "300ms", "--prefetch", "model", "--json", report,
                     "--", *joined(py(reader, data), py(dropper, data)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"[1] {alone}"
    record = json.loads(report.read_text())
    jobs = record["jobs"]
    assert jobs[0]["turns"] >= 2 and jobs[0]["prefetched_file_bytes"] > 0
    # Every prefetch has its record, and they add up to what the jobs were given.
    for job in jobs:
        mine = [p for p in record["prefetches"] if p["job"] == job["job"]]
        assert sum(p["bytes"] for p in mine) == job["prefetched_bytes"]
        assert sum(p["file_bytes"] for p in mine) == job["prefetched_file_bytes"]


def bench_share(tmp_path, *options):
    """`specx bench share` at its smallest scale, swapping to zram (skipped where there is
    none), checked to have succeeded and to have left no swap device or cgroup behind.
    Returns the finished process and the results directory."""
    if not swapspace.zram_available():
        pytest.skip("no zram here: the benchmark's fast swap device cannot be made")
    before_swaps, before_groups = swaps(), share_groups()
    out = tmp_path / "out"
    proc = run_specx("bench", "share", "--scale", "test", "--runs", "1", "--swap", "zram",
                     *options, "--out", out, "--data-dir", tmp_path / "data", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert swaps() - before_swaps - swaps_of_others() == set()
    assert share_groups() == before_groups
    # Its swap record directory goes with its last record, unless another benchmark keeps one.
    records = pathlib.Path(swapspace.RECORD_DIR)
    assert not records.exists() or any(records.glob("swap-*.json"))
    return proc, out


@pytest.mark.root
def test_the_share_benchmark_writes_its_results_and_leaves_nothing(specx, tmp_path):
    """Every file it promises, and every output as the job's alone."""
    _, out = bench_share(tmp_path, "--modes", "all-at-once,none,model")
    for name in ("results-share.md", "results-share.json", "results-share.png"):
        assert (out / name).exists(), name
    summary = json.loads((out / "results-share.json").read_text())["summary"]
    assert set(summary) == {"all-at-once", "none", "model"}
    # A mode whose every run was stopped at the time limit (under emulation "none" can take
    # longer than its 120 s) has no output to compare (None); one at least must have.
    assert all(m["outputs_identical"] is not False for m in summary.values()), \
        json.dumps({mode: m["outputs_differing"] for mode, m in summary.items()})
    assert any(m["outputs_identical"] for m in summary.values()), json.dumps(summary)
    # Prefetched and unused: anonymous pages asked for that the job's next turn never mapped.
    for run in json.loads((out / "results-share.json").read_text())["runs"]["model"]:
        if run["stopped_after_s"] is not None:
            continue
        assert all(0 <= j["prefetched_unused_bytes"] <= j["prefetched_bytes"] for j in run["jobs"])
        # Each run keeps specx share's turns and prefetches, and how much of the turns'
        # time the jobs ran.
        assert len(run["turns"]) == sum(j["turns"] for j in run["jobs"])
        assert sum(p["bytes"] for p in run["prefetches"]) == run["prefetched_bytes"]
        assert 0 < run["turn_cpu_share"] <= 1.1


@pytest.mark.root
def test_a_benchmark_run_past_its_time_limit_is_stopped_and_leaves_nothing(specx, tmp_path):
    """A mode that would thrash for hours is stopped at --time-limit (all-at-once: its jobs
    killed; specx share: sent SIGTERM) and reported as longer than the limit."""
    proc, out = bench_share(tmp_path, "--modes", "all-at-once,model", "--time-limit", "50ms")
    assert proc.stdout.count("stopped after 0.05 s (time limit)") == 2
    summary = json.loads((out / "results-share.json").read_text())["summary"]
    for mode in summary.values():
        assert mode["makespan_s"] is None and mode["makespan_over_s"] == 0.05
        assert mode["stopped_runs"] == 1 and mode["outputs_identical"] is None
    assert "> 0.05 s (stopped)" in (out / "results-share.md").read_text()
    assert not processes_with(str(tmp_path / "data"))


# ---- --follow: someone else's rotation ----


def freezer_root():
    if os.path.exists("/sys/fs/cgroup/freezer/freezer.state") or \
            os.path.isdir("/sys/fs/cgroup/freezer"):
        return "/sys/fs/cgroup/freezer", "freezer.state", ("FROZEN", "THAWED")
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "/sys/fs/cgroup", "cgroup.freeze", ("1", "0")
    return None


@pytest.mark.root
def test_follow_learns_a_rotation_it_does_not_drive(specx, tmp_path):
    """A script freezes and thaws three groups in turn (as Slurm's gang scheduling would);
    specx share --follow only watches, learns who comes after whom, and predicts it."""
    found = freezer_root()
    if found is None:
        pytest.skip("no cgroup freezer here")
    root, state_file, (frozen, thawed) = found
    base = os.path.join(root, f"specx-test-follow-{uuid.uuid4().hex[:8]}")
    os.mkdir(base)
    groups = [os.path.join(base, f"g{i}") for i in range(3)]
    procs = []
    try:
        for g in groups:   # each process joins its group thawed (frozen, it would stop
            os.mkdir(g)    # before its exec, and Popen with it), then the group freezes
            procs.append(subprocess.Popen(py("import time\nwhile True: time.sleep(0.01)"),
                                          preexec_fn=lambda g=g: pathlib.Path(
                                              g, "cgroup.procs").write_text("0")))
            pathlib.Path(g, state_file).write_text(frozen)
        report = tmp_path / "follow.json"
        follower = start_share("--follow", "--json", report, *groups)
        # Watching once its prefetching thread is up (started after it read every group's
        # state): a follower that saw the first thaw from its start would count one turn less
        # (under emulation it took longer than the 0.3 s this once waited).
        assert wait_for(lambda: len(os.listdir(f"/proc/{follower.pid}/task")) >= 2)
        for turn in range(12):   # four rounds of 1, 2, 3
            g = groups[turn % 3]
            pathlib.Path(g, state_file).write_text(thawed)
            time.sleep(0.15)
            pathlib.Path(g, state_file).write_text(frozen)
        time.sleep(0.1)
        follower.terminate()   # before the groups are thawed to be removed: no more turns
        out, err = follower.communicate(timeout=30)
    finally:
        for p in procs:
            p.kill()
        for g in groups:
            with contextlib.suppress(OSError):
                pathlib.Path(g, state_file).write_text(thawed)
        for p in procs:
            p.wait()
        for g in groups:
            wait_for(lambda: rmdir_ok(g))
        wait_for(lambda: rmdir_ok(base))
    assert follower.returncode == 128 + signal.SIGTERM, err
    record = json.loads(report.read_text())
    assert [g["turns"] for g in record["groups"]] == [4, 4, 4]
    assert all(g["prefetched_unused_bytes"] <= g["prefetched_bytes"] for g in record["groups"])
    assert record["predicted_right"] >= 10 and record["predicted_wrong"] == 0, record


def rmdir_ok(path):
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


@pytest.mark.root
def test_the_stress_script_runs_every_mode_and_leaves_no_swap(specx, tmp_path):
    """bench/stress-share at a tiny size: a table, its JSON and figure, no kill, no swap left."""
    swaps_before = {l.split()[0] for l in pathlib.Path("/proc/swaps").read_text().splitlines()[1:]}
    out = tmp_path / "out"
    proc = subprocess.run([str(pathlib.Path(__file__).parent.parent / "bench" / "stress-share"),
                           "--specx", str(SPECX), "--runs", "1", "--baseline-runs", "1",
                           "--jobs", "2", "--mib", "8", "--passes", "2", "--memory", "12M",
                           "--quantum", "100ms", "--swap", "64M", "--busy", "0",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "stress.json").read_text())["summary"]
    assert sorted(s["mode"] for s in summary) == sorted(
        ["all at once"] + [f"{p}-{r}" for p, r in MODES])
    assert all(s["killed"] == 0 and s["wrong"] == 0 for s in summary if s["mode"] != "all at once")
    assert (out / "stress.png").stat().st_size > 0 and "| mode |" in (out / "stress.md").read_text()
    others = swaps_of_others()
    left = [l for l in pathlib.Path("/proc/swaps").read_text().splitlines()[1:]
            if l.split()[0] not in swaps_before | others]
    assert not left
