"""A Slurm of one node on this machine, for the tests and the benchmark: munged, slurmctld and
one slurmd on localhost, with a gang-scheduled partition of one CPU, so that jobs take turns
and Slurm suspends each out of its turn with the cgroup freezer (proctrack/cgroup). Everything
it makes lives in one temporary directory — the configuration, the munge key, the daemons'
spool and state, their logs — and is stopped and removed when the context ends (normally, on
an error, on SIGTERM), the job groups Slurm made under the cgroup hierarchies too. Nothing of
the machine's own Slurm or munge (/etc/slurm, /etc/munge) is read or changed."""
import contextlib
import dataclasses
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from .unwind import sigterm_unwinds

# The freezer's hierarchy on v1, where proctrack/cgroup makes slurm/uid_U/job_J/step_S.
V1_HIERARCHIES = ("freezer", "memory", "cpuset", "devices", "cpuacct", "cpu")
SLICE_S = 5  # SchedulerTimeSlice: Slurm's smallest


class Unavailable(Exception):
    """No Slurm can be started here; the message is a one-line reason."""


@dataclasses.dataclass
class Cluster:
    dir: pathlib.Path
    env: dict
    partition: str = "gang"

    def run(self, *args, **kw):
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                              timeout=60, **kw)

    def sbatch(self, script, workdir, name="job"):
        """Submits SCRIPT (a shell script's text) to the gang partition; its job id."""
        path = pathlib.Path(workdir) / f"{name}.sh"
        path.write_text("#!/bin/sh\n" + script)
        p = self.run("sbatch", "--parsable", f"--partition={self.partition}", f"--job-name={name}",
                     f"--chdir={workdir}", f"--output={workdir}/{name}.out",
                     f"--error={workdir}/{name}.err", str(path))
        if p.returncode != 0:
            raise RuntimeError(f"sbatch: {p.stderr.strip()}")
        return int(p.stdout.strip().split(";")[0])

    def job(self, job_id):
        """scontrol's fields of the job (JobState, ExitCode, ...), {} once Slurm forgot it."""
        p = self.run("scontrol", "-o", "show", "job", str(job_id))
        return dict(re.findall(r"(\w+)=(\S*)", p.stdout)) if p.returncode == 0 else {}

    def wait_done(self, job_ids, timeout):
        """Waits until every job has ended; their fields."""
        end = time.monotonic() + timeout
        while True:
            jobs = {j: self.job(j) for j in job_ids}
            if all(f.get("JobState") not in (None, "PENDING", "RUNNING", "SUSPENDED",
                                             "COMPLETING", "CONFIGURING") for f in jobs.values()):
                return jobs
            if time.monotonic() > end:
                raise TimeoutError(f"Slurm jobs not done after {timeout} s: {jobs}")
            time.sleep(0.5)


def missing():
    """The programs a cluster needs that are not installed, by Debian package."""
    need = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd",
            "sbatch": "slurm-client"}
    return sorted({pkg for prog, pkg in need.items() if not shutil.which(prog)
                   and not os.path.exists(f"/usr/sbin/{prog}")})


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_cgroup_roots():
    """Where Slurm's proctrack/task plugins make their groups (v1: one per hierarchy, named
    slurm or slurm_NODE)."""
    return [f"/sys/fs/cgroup/{h}/{name}" for h in V1_HIERARCHIES
            if os.path.isdir(f"/sys/fs/cgroup/{h}")
            for name in os.listdir(f"/sys/fs/cgroup/{h}")
            if name == "slurm" or name.startswith("slurm_")]


def _thaw_and_remove(root):
    """Removes ROOT's groups, deepest first, thawing frozen ones so their tasks can die."""
    if not os.path.isdir(root):
        return
    for d, subdirs, _ in os.walk(root, topdown=False):
        state = os.path.join(d, "freezer.state")
        with contextlib.suppress(OSError):
            if os.path.exists(state):
                pathlib.Path(state).write_text("THAWED")
        with contextlib.suppress(OSError):
            for pid in pathlib.Path(d, "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
        for _ in range(100):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def _config(d, host, ports, cpus):
    return f"""\
ClusterName=specx
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
CredType=cred/munge
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/slurmd
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/linear
PreemptType=preempt/none
PreemptMode=GANG
SchedulerTimeSlice={SLICE_S}
ReturnToService=2
MinJobAge=3600
MpiDefault=none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=gang Nodes={host} Default=YES OverSubscribe=FORCE:4 MaxTime=INFINITE State=UP
"""


CGROUP_CONF = """\
CgroupPlugin=cgroup/v1
CgroupMountpoint=/sys/fs/cgroup
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
"""


def _wait(cond, timeout, what, logs=()):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            tail = "".join(f"\n--- {log}:\n" + pathlib.Path(log).read_text()[-2000:]
                           for log in logs if os.path.exists(log))
            raise Unavailable(f"{what} did not come up within {timeout} s{tail}")
        time.sleep(0.2)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def cluster(cpus=1, slurmd_preexec=None):
    """A running one-node Slurm (a Cluster); stopped and removed afterwards. SLURMD_PREEXEC
    runs in slurmd before it starts (e.g. to put it into a memory group, which its jobs then
    share: Slurm limits no job's memory here)."""
    if missing():
        raise Unavailable(f"Slurm is not installed (Debian packages {' '.join(missing())})")
    if not os.path.exists("/sys/fs/cgroup/freezer/tasks"):
        raise Unavailable("no cgroup v1 freezer hierarchy at /sys/fs/cgroup/freezer "
                          "(the harness configures proctrack/cgroup for v1)")
    remove_stale()
    if any(os.path.isdir(r) for r in slurm_cgroup_roots()):
        raise Unavailable("another Slurm's groups exist under /sys/fs/cgroup/*/slurm*")
    d = pathlib.Path(tempfile.mkdtemp(prefix=PREFIX))
    os.chmod(d, 0o755)  # slurmstepd reads the configuration as the job's user
    (d / "owner").write_text(str(os.getpid()))
    procs = []
    try:
        with sigterm_unwinds():
            host = socket.gethostname().split(".")[0]
            (d / "slurm.conf").write_text(_config(d, host, (_free_port(), _free_port()), cpus))
            (d / "cgroup.conf").write_text(CGROUP_CONF)
            for sub in ("ctld", "slurmd"):
                (d / sub).mkdir()
            key = d / "munge.key"
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o400)
            env = dict(os.environ, SLURM_CONF=str(d / "slurm.conf"))
            procs.append(subprocess.Popen(
                ["munged", "--foreground", "--force", f"--socket={d}/munge.socket",
                 f"--key-file={key}", f"--pid-file={d}/munged.pid",
                 f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait(lambda: os.path.exists(f"{d}/munge.socket"), 20, "munged", [f"{d}/munged.log"])
            procs.append(subprocess.Popen(["slurmctld", "-D", "-i"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            procs.append(subprocess.Popen(["slurmd", "-D"], env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, preexec_fn=slurmd_preexec))
            c = Cluster(d, env)

            def node_idle():
                for p in procs:
                    if p.poll() is not None:
                        raise Unavailable(f"{p.args[0]} exited with {p.returncode}: "
                                          + _log_tail(d))
                out = c.run("sinfo", "-h", "-o", "%T").stdout
                return "idle" in out
            _wait(node_idle, 60, "Slurm's node", [f"{d}/slurmctld.log", f"{d}/slurmd.log"])
            yield c
    finally:
        # Jobs first (their groups go with them), then the daemons, then whatever is left.
        if procs and len(procs) == 3 and procs[1].poll() is None:
            subprocess.run(["scancel", "--full", "--partition=gang"], capture_output=True,
                           env=dict(os.environ, SLURM_CONF=str(d / "slurm.conf")), timeout=30)
            time.sleep(1)
        for p in reversed(procs):
            _stop(p)
        for p in _daemons_of(d):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        for root in slurm_cgroup_roots():
            _thaw_and_remove(root)
        shutil.rmtree(d, ignore_errors=True)


PREFIX = "specx-slurm-"


def _daemons_of(d):
    """Our munged (its command line names D) and Slurm's daemons and slurmstepds started with
    D's configuration (SLURM_CONF in their environment)."""
    found = set(_processes_under(d))
    conf = f"SLURM_CONF={d}/slurm.conf".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if conf in pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.add(int(pid))
    return sorted(found)


def remove_stale():
    """What a harness killed outright (SIGKILL: no finally ran) left: its daemons, Slurm's
    groups and its directory, where the harness that made it is gone."""
    tmp = pathlib.Path(tempfile.gettempdir())
    for d in tmp.glob(PREFIX + "*"):
        try:
            owner = int((d / "owner").read_text())
            os.kill(owner, 0)
            continue  # its harness still runs
        except (OSError, ValueError):
            pass
        print(f"specx: removing the Slurm left by a killed run in {d}", flush=True)
        for pid in _daemons_of(d):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for root in slurm_cgroup_roots():
            _thaw_and_remove(root)
        shutil.rmtree(d, ignore_errors=True)


def _log_tail(d):
    return " | ".join(pathlib.Path(log).read_text()[-600:] for log in
                      (f"{d}/slurmctld.log", f"{d}/slurmd.log") if os.path.exists(log))


def _processes_under(d):
    """Processes whose command line names a file in D (our slurmstepds, munged)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        with contextlib.suppress(OSError):
            if str(d) in pathlib.Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                found.append(int(pid))
    return found
