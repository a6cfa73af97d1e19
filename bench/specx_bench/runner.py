"""Running a workload: cold or warm page cache, one timed process, its resource usage and the
device's share, repeated per mode and run."""
import contextlib
import dataclasses
import os
import pwd
import shutil
import statistics
import subprocess
import tempfile
import time

from specx_support import memcg

from specx_support import components
from . import datasets, modes, readcalls, resident, slowfs
from .resident import drop_caches


@dataclasses.dataclass
class Config:
    data_dir: str
    out_dir: str
    scale: str
    runs: int
    modes: list
    slowfs_options: list
    read_calls: bool = True
    # Warm-cache modes take well under a second on most workloads and vary by several per
    # cent from run to run: a 3 % bar needs more of them than of the cold modes.
    warm_runs: int = 0

    def runs_of(self, mode):
        warm = mode.prepare == modes.TOUCH_DATA and self.warm_runs
        return self.warm_runs if warm else self.runs


def run_command(cmd, log_path, group=None):
    """Runs CMD with output to LOG_PATH, in memory cgroup GROUP if given; returns (exit
    status, elapsed seconds, rusage)."""
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(cmd.argv)}\n".encode())
        log.flush()
        started = time.perf_counter()
        proc = subprocess.Popen(cmd.argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, cwd=cmd.cwd, user=cmd.user,
                                group=_group_of(cmd.user), extra_groups=[] if cmd.user else None,
                                preexec_fn=group.add if group else None)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, elapsed, usage


def _scratch_base():
    """Where programs write their outputs and specx run its reports: memory (/dev/shm) when
    there is one. On the root disk, creating a file costs a few tenths of a millisecond and
    write-back comes at random moments: noise of the same size as the 3 % warm-cache bar."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def make_scratch(name):
    """A new directory for the runs of workload NAME to write in (_scratch_base), the
    harness's alone to write: the programs it runs as root write there (a build, a clone, ld's
    output), and a local user who could plant or rename a name in it could point them
    anywhere. A server's own user may pass through it, to its socket and report
    (_report_for)."""
    scratch = tempfile.mkdtemp(prefix=f"specx-bench-{name}-", dir=_scratch_base())
    os.chmod(scratch, 0o711)
    return scratch


def _group_of(user):
    return pwd.getpwnam(user).pw_gid if user else None


def _report_for(path, user):
    """An empty report file at PATH that USER may write: a server wrapped by specx run writes
    its report as its own user, and the scratch directory is root's alone."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        os.fchown(fd, pwd.getpwnam(user).pw_uid, _group_of(user))
    finally:
        os.close(fd)


@contextlib.contextmanager
def memory_limit(params, tag):
    """The memory cgroup a run of an out-of-core workload runs in (its scale's
    memory_limit_mb), or None."""
    limit_mb = params.get("memory_limit_mb")
    with contextlib.ExitStack() as stack:
        try:
            group = stack.enter_context(memcg.limited(f"specx-bench-{tag}-{os.getpid()}",
                                                      limit_mb << 20)) if limit_mb else None
        except OSError as e:
            raise SystemExit(f"specx bench: cannot limit the memory of {tag}: {e}") from None
        yield group


@contextlib.contextmanager
def contender(params, group):
    """The second, independent memory-hungry process of a -contended workload (its scale's
    contender_mb and contender_period_ms), in GROUP beside the timed program, or nothing."""
    mib = params.get("contender_mb")
    if not mib or group is None:
        yield
        return
    proc = subprocess.Popen([components.require("hog", "the contended workloads"), str(mib),
                             str(params.get("contender_period_ms", 1000))],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            preexec_fn=group.add)
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def forget_history(cmd):
    """Removes the history `specx run` keeps of CMD (none kept is no error): the bench's
    histories are its own, made and removed around each run."""
    subprocess.run([components.specx_exe(), "history", "forget", "--", *cmd.argv],
                   cwd=cmd.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, user=cmd.user, group=_group_of(cmd.user),
                   extra_groups=[] if cmd.user else None)


@contextlib.contextmanager
def first_run_history(workload, mode, root, params, scratch, log):
    """For a mode with a first run (modes.Mode.first_run): CMD run once, cold and untimed, so
    that the timed run in the block has its history; the history is forgotten afterwards.
    Yields None without a first run, else {"ok": whether it succeeded, "exit_status",
    "history": what its report says it recorded}."""
    if mode.first_run is None:
        yield None
        return
    report = log[:-len(".log")] + ".first.report"
    cmd = workload.command(root, params, scratch)
    of = workload.other_command(root, params, scratch) if mode.first_run_other else cmd
    first = dataclasses.replace(of, argv=mode.first_command(of.argv, report))
    forget_history(cmd)
    forget_history(of)
    try:
        with memory_limit(params, f"first-{os.getpid()}") as group:
            status, _, _ = run_command(first, log, group)
        drop_caches()
        yield {"ok": status in of.ok_codes, "exit_status": status,
               "history": (modes.read_report(report) or {}).get("history")}
    finally:
        forget_history(cmd)
        forget_history(of)


def run_once(workload, mode, index, mountpoint, params, scratch, log_dir):
    """One timed run of WORKLOAD in MODE; returns its record."""
    tag = f"{workload.name}-{mode.name}-{index + 1}"
    log = os.path.join(log_dir, tag + ".log")
    report = os.path.join(scratch, tag + ".report")

    def wrap(argv):
        return mode.command(argv, report)

    if mode.first_run is not None and workload.server:
        raise SystemExit(f"specx bench: mode {mode.name} runs a program twice; "
                         f"{workload.name} is a server workload")
    if mode.first_run_other and workload.other_command(mountpoint, params, scratch) is None:
        raise SystemExit(f"specx bench: mode {mode.name} needs a workload with other inputs "
                         f"to run first; {workload.name} has none")
    if workload.server:
        _report_for(report, workload.server)
    if mode.prepare == modes.DROP_CACHES:
        drop_caches()
    warm = mode.prepare == modes.TOUCH_DATA
    with workload.session(mountpoint, params, wrap if workload.server else list, scratch, log), \
            resident.pinned(workload.touch_paths(mountpoint, params) if warm else []), \
            first_run_history(workload, mode, mountpoint, params, scratch,
                              log) as first:
        cmd = workload.command(mountpoint, params, scratch)
        if not workload.server:
            cmd = dataclasses.replace(cmd, argv=wrap(cmd.argv))
        before = slowfs.stats(mountpoint)
        with memory_limit(params, tag) as group, contender(params, group):
            machine_before = memcg.machine_reclaim()
            status, elapsed, usage = run_command(cmd, log, group)
            memory = {"limit_bytes": group.limit(), "peak_bytes": group.peak_bytes(),
                      "limit_hits": group.limit_hits(), "oom_kills": group.oom_kills(),
                      "reclaim": group.reclaim_signals(),
                      "machine": {k: v - machine_before[k]
                                  for k, v in memcg.machine_reclaim().items()
                                  if k in machine_before}} if group else None
        after = slowfs.stats(mountpoint)
    record = {
        "workload": workload.name, "mode": mode.name, "run": index + 1,
        "elapsed_s": round(elapsed, 4), "exit_status": status,
        "ok": status in cmd.ok_codes and (first is None or first["ok"]),
        "user_s": round(usage.ru_utime, 4), "sys_s": round(usage.ru_stime, 4),
        "major_faults": usage.ru_majflt, "max_rss_kb": usage.ru_maxrss,
        "device": slowfs.stats_diff(before, after), "memory_cgroup": memory,
        "log": os.path.basename(log),
        "report": None, "stalls": None, "stall_s": None,
        "first_run_history": first["history"] if first else None,
        "first_run_exit_status": first["exit_status"] if first else None,
    }
    if os.path.exists(report):
        # Keep what the wrapper reported next to the run's log; JSON reports go in the record.
        record["report_file"] = os.path.basename(report)
        shutil.move(report, os.path.join(log_dir, record["report_file"]))
        record["report"] = modes.read_report(os.path.join(log_dir, record["report_file"]))
        record["stalls"], record["stall_s"] = modes.stalls(record["report"])
    return record


def progress_line(r):
    dev = r.get("device") or {}
    parts = [f"[{r['workload']}] {r['mode']} run {r['run']}: {r['elapsed_s']:.2f} s"]
    if dev:
        parts.append(f"{dev.get('requests', 0):,} device requests, "
                     f"{datasets.human_bytes(dev.get('bytes', 0))}")
    if r.get("stall_s") is not None:
        parts.append(f"{r['stalls']:,} I/O stalls, {r['stall_s']:.2f} s")
    if r.get("first_run_exit_status") not in (None, r["exit_status"]) and not r["ok"]:
        parts.append(f"FAILED (the first run's exit status {r['first_run_exit_status']}, "
                     f"see {r['log']})")
    elif not r["ok"]:
        parts.append(f"FAILED (exit status {r['exit_status']}, see {r['log']})")
    return " — ".join(parts)


def round_order(modes, i):
    """The modes of round I, each round starting one mode later: a mode's place in a round
    must not decide its numbers (measured: at full scale the third run of each round of
    stencil made 20 % more device requests, whatever its mode)."""
    shift = i % len(modes) if modes else 0
    return modes[shift:] + modes[:shift]


def bench_workload(workload, cfg, log_dir, result):
    """Prepares WORKLOAD's data set, mounts it, runs every mode cfg.runs_of(mode) times (interleaved
    and rotated, so that drift in the machine's state spreads over all modes) and counts read
    calls.
    Fills RESULT as it goes, so that an interrupted benchmark keeps the runs it made."""
    backing = datasets.ensure(workload, cfg.scale, cfg.data_dir)
    params = workload.scales[cfg.scale]
    mountpoint = os.path.join(cfg.data_dir, ".mnt", workload.name)
    scratch = make_scratch(workload.name)
    result.update({"name": workload.name, "paper": workload.paper,
                   "description": workload.description, "scale": cfg.scale, "params": params,
                   "dataset": {"path": backing, "bytes": datasets.size(backing),
                               "generator_version": workload.version},
                   "tools": workload.tool_versions(), "runs": []})
    try:
        with slowfs.mounted(backing, mountpoint, cfg.slowfs_options):
            result["device"] = slowfs.stats(mountpoint)
            for i in range(max(cfg.runs_of(m) for m in cfg.modes)):
                for mode in round_order([m for m in cfg.modes if i < cfg.runs_of(m)], i):
                    r = run_once(workload, mode, i, mountpoint, params, scratch, log_dir)
                    result["runs"].append(r)
                    print(progress_line(r), flush=True)
            if cfg.read_calls:
                result["read_calls"] = readcalls.count(
                    lambda mode: run_once(workload, mode, 0, mountpoint, params, scratch,
                                          log_dir), log_dir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def device_floor(device):
    """The least time the device needed for a run's requests: its busiest disk's busy time
    (slowfs statistics). A run cannot end sooner, however well its reads are overlapped."""
    busy = [d.get("busy_s") for d in device.get("disks") or [] if d.get("busy_s") is not None]
    return max(busy) if busy else None


def summarize(runs, mode_names):
    """Per mode: runs, median/min/max elapsed, ratios of medians to `cold`, `warm` and
    `nospec`, median stall time and device requests (successful runs only)."""
    rows = []
    for name in mode_names:
        ok = [r for r in runs if r["mode"] == name and r["ok"]]
        failed = sum(1 for r in runs if r["mode"] == name and not r["ok"])
        times = [r["elapsed_s"] for r in ok]
        stall_counts = [r["stalls"] for r in ok if r.get("stalls") is not None]
        stalls = [r["stall_s"] for r in ok if r.get("stall_s") is not None]
        requests = [r["device"]["requests"] for r in ok if r.get("device")]
        floors = [device_floor(r["device"]) for r in ok if r.get("device")]
        floors = [f for f in floors if f is not None]
        rows.append({
            "mode": name, "runs": len(ok), "failed": failed,
            "median_s": statistics.median(times) if times else None,
            "min_s": min(times) if times else None, "max_s": max(times) if times else None,
            "stalls": int(statistics.median(stall_counts)) if stall_counts else None,
            "stall_s": statistics.median(stalls) if stalls else None,
            "device_requests": int(statistics.median(requests)) if requests else None,
            "device_floor_s": statistics.median(floors) if floors else None,
        })
    for base in ("cold", "warm", "nospec"):
        median = next((r["median_s"] for r in rows if r["mode"] == base), None)
        for row in rows:
            row["vs_" + base] = (row["median_s"] / median
                                 if median and row["median_s"] is not None else None)
    return rows
