"""specx share --follow-slurm: the jobs of a node's Slurm, suspended and resumed in turns by
its gang scheduling, followed as slurmd makes and removes their groups. First on a group tree
of cgroup v2's shape that the test makes and rotates itself (no Slurm needed), then on a real
Slurm started on this machine (bench/specx_support/slurm.py): munged, slurmctld and one
slurmd, a gang-scheduled partition of one CPU, jobs submitted with sbatch."""
import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import SPECX, run_specx, wait_for
from specx_support import slurm, swapspace
from specx_support.jobs import SWEEPER


def follower(*args):
    return subprocess.Popen([str(SPECX), "share", "--follow-slurm", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)



def prefetch_thread_up(proc):
    """The follower has found the jobs there were and started its prefetching thread."""
    return wait_for(lambda: len(os.listdir(f"/proc/{proc.pid}/task")) >= 2)


# ---- the command line ----


@pytest.mark.parametrize("args, message", [
    (["g1"], "--follow-slurm finds its jobs"),
    (["--follow", "g1"], "--follow-slurm finds its jobs"),
    (["--jobs", "/dev/null"], "--follow-slurm finds its jobs"),
])
def test_follow_slurm_takes_no_jobs(args, message):
    p = subprocess.run([str(SPECX), "share", "--follow-slurm", *args], capture_output=True,
                       text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_slurm_root_others_may_write_is_refused(tmp_path):
    """What a job group lists is acted on (its processes' memory prefetched, paged out): a
    tree that another user can write could name any process. Such a root is refused."""
    root = tmp_path / "slurm"
    root.mkdir()
    (root / "cgroup.freeze").write_text("0")
    os.chmod(root, 0o777)
    p = subprocess.run([str(SPECX), "share", f"--follow-slurm={root}"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "may be written by others than root" in p.stderr, p.stderr
    os.chmod(root, 0o755)
    (root / "cgroup.freeze").unlink()
    p = subprocess.run([str(SPECX), "share", f"--follow-slurm={root}"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and "no group of the v1 freezer nor of cgroup v2" in p.stderr


# ---- cgroup v2's shape, rotated by the test ----


class FakeV2Job:
    """slurmstepd.scope/job_J of cgroup v2: step_batch/slurm holds slurmstepd (here a sleeper
    that never stops), step_batch/user the task (a busy loop). Suspended by 'freezing' (writing
    user/cgroup.freeze as slurmstepd does; nothing freezes here) or, BY_SIGNAL, with SIGSTOP."""

    def __init__(self, root, job_id, by_signal):
        self.dir = root / f"job_{job_id}"
        self.by_signal = by_signal
        self.task = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        self.stepd = subprocess.Popen(["sleep", "600"])
        self.task.send_signal(signal.SIGSTOP)
        # Stopped before its group shows it: a task seen running would be a turn.
        assert wait_for(lambda: pathlib.Path(f"/proc/{self.task.pid}/stat").read_text()
                        .rsplit(")", 1)[1].split()[0] == "T")
        for sub, pid in (("slurm", self.stepd.pid), ("user", self.task.pid)):
            d = self.dir / "step_batch" / sub
            d.mkdir(parents=True)
            (d / "cgroup.procs").write_text(f"{pid}\n")
            (d / "cgroup.freeze").write_text("0")
        self.suspend()

    def suspend(self):
        if not self.by_signal:
            (self.dir / "step_batch/user/cgroup.freeze").write_text("1")
        self.task.send_signal(signal.SIGSTOP)  # both ways: the task must not run meanwhile

    def resume(self):
        (self.dir / "step_batch/user/cgroup.freeze").write_text("0")
        self.task.send_signal(signal.SIGCONT)

    def end(self):
        for p in (self.task, self.stepd):
            p.kill()
            p.wait()
        for d, subdirs, files in os.walk(self.dir, topdown=False):
            for f in files:
                os.unlink(os.path.join(d, f))
            os.rmdir(d)


def test_jobs_found_as_they_come_and_go_in_a_v2_tree(tmp_path):
    """Jobs appear after the follower started (inotify), one is suspended with SIGSTOP instead
    of the freezer, slurmstepd's own group keeps running beside the task, and a job leaves in
    the middle: every turn is seen, and after the first rotation every next job is named
    right."""
    root = tmp_path / "slurmstepd.scope"
    root.mkdir(mode=0o755)
    (root / "cgroup.freeze").write_text("0")
    report = tmp_path / "follow.json"
    proc = subprocess.Popen([str(SPECX), "share", f"--follow-slurm={root}", "--json", report,
                             "--prefetch", "switch", "--release", "cold"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jobs = []
    try:
        assert prefetch_thread_up(proc)
        jobs = [FakeV2Job(root, j, by_signal=(j == 3)) for j in (1, 2, 3)]
        time.sleep(0.3)  # found (inotify), each suspended before its first turn
        for turn in range(12):  # four rounds of 1, 2, 3
            job = jobs[turn % 3]
            job.resume()
            time.sleep(0.2)
            job.suspend()
        jobs[1].end()  # job 2 leaves; the rotation goes on with 1 and 3
        time.sleep(0.3)
        for turn in range(4):
            job = jobs[(0, 2)[turn % 2]]
            job.resume()
            time.sleep(0.2)
            job.suspend()
        time.sleep(0.1)
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for j in jobs:
            if j.dir.exists():
                j.end()
    assert proc.returncode == 128 + signal.SIGTERM, err
    record = json.loads(report.read_text())
    turns = {pathlib.Path(g["group"]).name: g["turns"] for g in record["groups"]}
    assert turns == {"job_1": 6, "job_2": 4, "job_3": 6}, record
    # Not counted: each job's first turn (no one's to predict). Counted: the 7 other turns of
    # the three-job rotation and the 4 after job 2 left; the first of those may be missed
    # (job 2 predicted, gone).
    assert record["predicted_wrong"] <= 1 and record["predicted_right"] >= 10, record


# ---- a real Slurm ----


@contextlib.contextmanager
def running_slurm():
    try:
        with slurm.cluster() as c:
            yield c
    except slurm.Unavailable as e:
        pytest.skip(f"no Slurm here: {e}")


# Each job a sweeper of MIB MiB that uses CPU_S of CPU: more than two of Slurm's 5 s slices.
JOBS_MIB, JOBS_PASSES, JOBS_CPU_S = 48, 100, 11


def sweeper_args(seed):
    return f"{JOBS_MIB} {JOBS_PASSES} {seed} {JOBS_CPU_S}"


def submit_all(cluster, workdir):
    """A job that fails at once, then three sweepers; their ids (in the order of outcome)."""
    failing = cluster.sbatch("echo failing; exit 3\n", workdir, "fails")
    ids = []
    for seed in (1, 2, 3):
        script = (pathlib.Path(workdir) / f"sweep{seed}.py")
        script.write_text(SWEEPER)
        ids.append(cluster.sbatch(f"exec {sys.executable} {script} {sweeper_args(seed)}\n",
                                  workdir, f"sweep{seed}"))
    return ids + [failing]


def outcome(cluster, ids, workdir):
    """Each job's state, exit code and output, once all have ended."""
    done = cluster.wait_done(ids, timeout=240)
    names = ["sweep1", "sweep2", "sweep3", "fails"]
    return {name: (done[j]["JobState"], done[j]["ExitCode"],
                   (pathlib.Path(workdir) / f"{name}.out").read_text())
            for name, j in zip(names, ids)}


def slurm_leftovers(cluster_dir):
    left = [r for r in slurm.slurm_cgroup_roots()]
    if os.path.exists(cluster_dir):
        left.append(str(cluster_dir))
    for name in ("munged", "slurmctld", "slurmd", "slurmstepd"):
        p = subprocess.run(["pgrep", "-f", f"{name}.*{cluster_dir}|{cluster_dir}.*{name}"],
                           capture_output=True, text=True)
        left += [f"{name} {pid}" for pid in p.stdout.split()]
    return left


@pytest.mark.root
@pytest.mark.slow
def test_slurm_jobs_the_same_with_the_follower_and_predicted(tmp_path):
    """Slurm alone, then Slurm with two followers on the node: one that runs to the end and
    reports, one killed with SIGKILL in the middle of the run (prefetching and paging out). The
    jobs' outputs are each job's alone, their states and exit codes the same both times, no job
    is left frozen or stopped, and after the first rotation the next job is named right."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    # Alone: each by itself (at once: what one prints does not depend on the others).
    procs = {f"sweep{seed}": subprocess.Popen([sys.executable, "-c", SWEEPER,
                                               *sweeper_args(seed).split()],
                                              stdout=subprocess.PIPE, text=True)
             for seed in (1, 2, 3)}
    alone = {name: p.communicate()[0] for name, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values())
    alone["fails"] = "failing\n"
    report = tmp_path / "follow.json"
    followers = []
    try:
        with swapspace.enabled(256 << 20, tmp_path, kinds=("zram",)), running_slurm() as c:
            cluster_dir = c.dir
            runs = {}
            for mode in ("alone", "followed"):
                work = pathlib.Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=tmp_path))
                os.chmod(work, 0o755)
                if mode == "followed":
                    followers = [follower("--json", report, "--release", "pageout"),
                                 follower("--release", "pageout", "--prefetch", "switch")]
                    assert all(prefetch_thread_up(f) for f in followers)
                ids = submit_all(c, work)
                if mode == "followed":
                    time.sleep(2 * slurm.SLICE_S + 2)  # a rotation under way
                    followers[1].kill()
                runs[mode] = outcome(c, ids, work)
            followers[0].terminate()
            out, err = followers[0].communicate(timeout=30)
            followers[1].wait()
    except swapspace.Unavailable as e:
        pytest.skip(f"no swap space: {e}")
    finally:
        for f in followers:
            if f.poll() is None:
                f.kill()
                f.wait()
    assert runs["alone"] == runs["followed"], runs
    for name, (state, code, output) in runs["followed"].items():
        assert output == alone[name], name
        assert (state, code) == (("FAILED", "3:0") if name == "fails" else ("COMPLETED", "0:0"))
    assert followers[0].returncode == 128 + signal.SIGTERM, err
    assert followers[1].returncode == -signal.SIGKILL
    record = json.loads(report.read_text())
    sweeps = [g for g in record["groups"] if g["turns"] >= 2]
    assert len(sweeps) == 3, json.dumps(record)   # each sweeper had two turns at least
    assert sum(g["prefetched_bytes"] for g in record["groups"]) > 0, record
    assert any(t["major_faults_first_second"] is not None for t in record["turns"]), record
    # After the first rotation (once every job has had its first turn), the next job named
    # right in most turns. The bar (90 %) is the benchmark's to show: on a busy
    # machine Slurm started the jobs' first turns within 50 ms of each other, in any order,
    # and the follower named 7 of the next 9 right while it learned the rotation anew.
    first_turns = {}
    for t in record["turns"]:
        first_turns.setdefault(t["job"], t["start_s"])
    rotated = max(first_turns.values())
    after = [t for t in record["turns"] if t["counted"] and t["start_s"] > rotated]
    right = sum(t["predicted"] == t["job"] for t in after)
    assert len(after) >= 3 and right >= 0.75 * len(after), json.dumps(record)
    assert slurm_leftovers(cluster_dir) == []


def test_a_slurm_left_by_a_harness_killed_outright_is_removed_by_the_next(tmp_path):
    """A harness killed with SIGKILL runs no finally: its daemons and directory stay. The
    next harness removes them, where the harness that made them is gone, and leaves alone
    those of a harness that still runs."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = pathlib.Path(tempfile.mkdtemp(prefix=slurm.PREFIX))
    live = pathlib.Path(tempfile.mkdtemp(prefix=slurm.PREFIX))
    (stale / "owner").write_text(str(dead.pid))
    (live / "owner").write_text(str(os.getpid()))
    # A daemon of each: munged names its directory on its command line.
    daemons = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                                 f"{d}/munged"]) for d in (stale, live)]
    try:
        slurm.remove_stale()
        assert daemons[0].wait(timeout=10) == -signal.SIGKILL
        assert not stale.exists()
        assert daemons[1].poll() is None and live.exists()
    finally:
        for p in daemons:
            p.kill()
            p.wait()
        for d in (stale, live):
            subprocess.run(["rm", "-rf", d])


# ---- specx bench slurm ----


@pytest.mark.root
@pytest.mark.long
def test_bench_slurm_runs_both_modes_and_leaves_nothing(tmp_path):
    """specx bench slurm at its smallest scale: both modes run on the one-node Slurm, the
    outputs are the jobs' alone, the table, JSON and figure are written, and no Slurm daemon,
    group or directory, memory group or swap space is left."""
    if slurm.missing():
        pytest.skip(f"no Slurm here: Debian packages {' '.join(slurm.missing())} missing")
    if not swapspace.zram_available():
        pytest.skip("no zram here: the benchmark's fast swap device cannot be made")
    out = tmp_path / "out"
    proc = run_specx("bench", "slurm", "--scale", "test", "--runs", "1", "--swap", "zram",
                     "--out", out, "--data-dir", tmp_path / "data", timeout=600)
    if "cgroup v1 freezer" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    summary = json.loads((out / "results-slurm.json").read_text())["summary"]
    assert set(summary) == {"slurm", "slurm+specx"}
    assert all(m["outputs_identical"] and m["stopped_runs"] == 0 for m in summary.values())
    assert (out / "results-slurm.md").exists() and (out / "results-slurm.png").exists()
    assert slurm.slurm_cgroup_roots() == []
    assert not list(pathlib.Path(tempfile.gettempdir()).glob(slurm.PREFIX + "*"))
