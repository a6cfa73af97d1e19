"""A memory cgroup around a timed run: real memory pressure for the out-of-core workloads
(the data set must not fit), on cgroup v1 (the memory controller of these machines)
and v2 (most users' systems). The group is made for one run and removed afterwards, also when
the run fails."""
import contextlib
import dataclasses
import errno
import json
import os
import signal
import subprocess
import time

from . import components

V1, V2 = "v1", "v2"


@dataclasses.dataclass(frozen=True)
class Hierarchy:
    version: str
    root: str     # mount point of the hierarchy that has the memory controller
    parent: str   # cgroup directory under which run groups are made


def discovery():
    """Where the cgroup controllers are, as every specx command finds them
    (`specx doctor --cgroup --json`, src/kernel/cgroup.c): the one implementation, so that the
    harness makes its groups where specx would. Raises OSError with a one-line reason if specx
    cannot say."""
    out = subprocess.run([components.specx_exe(), "doctor", "--cgroup", "--json"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise OSError(out.stderr.strip() or f"specx doctor --cgroup failed ({out.returncode})")
    return json.loads(out.stdout)


def _version(number):
    return V1 if number == 1 else V2


def find():
    """The hierarchy to use (the one with the memory controller, where groups can be made below
    our own or the nearest group above it that can have the controller), or None."""
    found = discovery()
    memory = found["memory"]
    if not memory or not memory["parent"]:
        return None
    return Hierarchy(_version(found["version"]), memory["mount"], memory["parent"])


def own_group():
    """This process's own memory cgroup, or None where no hierarchy has the memory controller."""
    found = discovery()
    memory = found["memory"]
    if not memory:
        return None
    return Group(os.path.normpath(os.path.join(memory["mount"], memory["group"].lstrip("/"))),
                 _version(found["version"]))


def _limit_file(version):
    return "memory.max" if version == V2 else "memory.limit_in_bytes"


@dataclasses.dataclass
class Group:
    path: str
    version: str

    def add(self, pid=0):
        """Moves process PID (0: the caller) into the group; used as a child's preexec_fn."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid or os.getpid()))

    def leaf(self, name):
        """Where processes go inside this group, as systemd puts a scope in a slice: on v2 a
        group that holds processes cannot have groups with controllers below it, so a program
        that makes its own (specx idle's background) finds room only in a group with no
        processes of its own: this one, when its processes are in leaves. On v1, itself."""
        if self.version != V2:
            return self
        path = os.path.join(self.path, name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        return Group(path, self.version)

    def limit(self):
        with open(os.path.join(self.path, _limit_file(self.version))) as f:
            return int(f.read())

    def usage_bytes(self):
        name = "memory.current" if self.version == V2 else "memory.usage_in_bytes"
        with open(os.path.join(self.path, name)) as f:
            return int(f.read())

    def peak_bytes(self):
        """Most memory the group used (None when the kernel does not say)."""
        name = "memory.peak" if self.version == V2 else "memory.max_usage_in_bytes"
        try:
            with open(os.path.join(self.path, name)) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None


    def limit_hits(self):
        """Times the group's usage hit its hard limit (memory.failcnt on v1, the "max" line of
        memory.events on v2), or None when the kernel does not say."""
        try:
            if self.version == V2:
                with open(os.path.join(self.path, "memory.events")) as f:
                    return next((int(line.split()[1]) for line in f
                                 if line.startswith("max ")), None)
            with open(os.path.join(self.path, "memory.failcnt")) as f:
                return int(f.read())
        except (OSError, ValueError):
            return None

    def reclaim_signals(self):
        """What the kernel counted in the group since it was made, for comparing the signals
        that could tell a memory control speculation pushed out pages the program needed
        (docs/design/memory-control.md): refaults and activations of evicted pages (shadow entries:
        the paper's ghost buffer) and, on v2, pages scanned by reclaim. v1 names the group's
        own counters total_*; {} when the kernel does not say."""
        prefix = "" if self.version == V2 else "total_"
        wanted = ("workingset_refault_anon", "workingset_refault_file",
                  "workingset_activate_anon", "workingset_activate_file", "pgscan")
        try:
            with open(os.path.join(self.path, "memory.stat")) as f:
                stat = dict(line.split() for line in f)
        except (OSError, ValueError):
            return {}
        return {name: int(stat[prefix + name]) for name in wanted if prefix + name in stat}

    def oom_kills(self):
        """Processes the group's OOM killer has killed so far (None when the kernel does not
        say): the "oom_kill" line of memory.events (v2) or memory.oom_control (v1)."""
        name = "memory.events" if self.version == V2 else "memory.oom_control"
        try:
            with open(os.path.join(self.path, name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return None


# The machine's own reclaim: pgscan_anon and pgscan_file count every group's reclaim at its
# own limit too, these three only reclaim for the machine (src/kernel/memcg.h says the same).
MACHINE_PGSCAN = ("pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged")


def machine_reclaim():
    """The machine's memory stall time (PSI "some" total, µs) and pages its own reclaim
    scanned (/proc/vmstat) since boot: the signals left where groups have no PSI (v1)."""
    counters = {}
    try:
        with open("/proc/pressure/memory") as f:
            some = f.readline().split()
        counters["psi_some_us"] = int(some[-1].partition("=")[2])
    except (OSError, IndexError, ValueError):
        pass
    with open("/proc/vmstat") as f:
        counters["pgscan"] = sum(int(v) for k, v in (line.split() for line in f)
                                 if k in MACHINE_PGSCAN)
    return counters


def _remove(path, timeout_s=30):
    """Removes the group at PATH once its processes are gone. The timed program has ended when
    this runs, but what it leaves in the group may need a moment to go: a speculative copy
    that dies with it, a process still freeing swapped-out memory. The run is over, so they
    are killed."""
    for entry in os.scandir(path):  # its leaves (Group.leaf), first
        if entry.is_dir(follow_symlinks=False):
            _remove(entry.path, timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.rmdir(path)
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
        with open(os.path.join(path, "cgroup.procs")) as f:
            for pid in map(int, f.read().split()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


@contextlib.contextmanager
def limited(name, limit_bytes, hierarchy=None):
    """A fresh memory cgroup NAME limited to LIMIT_BYTES, removed when the block ends (its
    processes must have ended by then). Raises OSError with a one-line reason when none can
    be made."""
    hierarchy = hierarchy or find()
    if hierarchy is None:
        raise OSError("no cgroup hierarchy with the memory controller is mounted")
    path = os.path.join(hierarchy.parent, name)
    os.mkdir(path)
    try:
        with open(os.path.join(path, _limit_file(hierarchy.version)), "w") as f:
            f.write(str(limit_bytes))
        yield Group(path, hierarchy.version)
    finally:
        _remove(path)
