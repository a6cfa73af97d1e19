"""`specx bench share`: job-speculative prefetching on real jobs (Suh et al. 2001).

Six memory-hungry jobs whose working sets together are more than twice the memory they are
given (four `sweep` jobs over anonymous memory, GNU `sort -S` over a text file, and the sqlite3
shell scanning a table again and again, its database on slowfs: file-backed; memory holds two
working sets) run in each mode:

  all-at-once  every job started at once in the same memory (what users do today)
  none         specx share, the next job's memory left to its page faults
  switch       specx share, the next job's memory prefetched at the switch
  model        specx share, prefetched during the current turn at T - S_PF/B (Eq. 11)
  model-50     model, with half of the prefetches going to a wrong job (--mispredict 0.5)
  model-cold, model-pageout
               model, the job whose turn ended given MADV_COLD or MADV_PAGEOUT (not default)

swapping to a loop device over a file on the same slowfs (one disk's latency; --swap zram
for the fast case). Each job also runs alone, with memory to spare, for its slowdown. With
--sweep the none/model/model-50 modes run again at several memory sizes: the paper's Figs. 1-2,
major faults against memory. Results: results-share.md, .json and .png (and results-share-sweep.png)."""
import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid

from specx_support import memcg, swapspace

from specx_support import components
from . import datasets, slowfs, subcommand
from .resident import drop_caches

MIB = 1 << 20
MODES = {
    "all-at-once": [],
    "none": ["--prefetch", "none"],
    "switch": ["--prefetch", "switch"],
    "model": ["--prefetch", "model"],
    "model-50": ["--prefetch", "model", "--mispredict", "0.5"],
    # The release hints (the paper's related work): not run by default.
    "model-cold": ["--prefetch", "model", "--release", "cold"],
    "model-pageout": ["--prefetch", "model", "--release", "pageout"],
}
DEFAULT_MODES = ("all-at-once", "none", "switch", "model", "model-50")
SWEEP_MODES = ("none", "model", "model-50")
# Per scale: the working set of each job (MiB), passes of each sweep job and scans of the
# sqlite3 job (enough for two or three turns: a job that ends in its first turn is never paged
# back in), the quantum (s), and the memory sizes of the sweep as multiples of one working set.
SCALES = {
    "full": dict(mib=256, passes=4000, scans=120, quantum=8, slack=32, sweep=(1.5, 2, 3, 4)),
    "demo": dict(mib=16, passes=30000, scans=1100, quantum=6, slack=8, sweep=(1.5, 2, 3, 4)),
    "test": dict(mib=16, passes=200, scans=10, quantum=0.3, slack=4, sweep=(2, 4)),
}
# (slack: what the group needs beyond the working sets — the processes' own memory, page
# tables — in MiB.)
# A thrashing mode may take hours: a run is stopped after this many times the jobs' times
# alone, summed (and never before MIN_TIME_LIMIT_S), and reported as longer than that.
TIME_LIMIT_FACTOR = 10
MIN_TIME_LIMIT_S = 120

HELP = """\
Usage: specx bench share [OPTIONS]

Job-speculative prefetching (Suh et al. 2001) on six real memory-hungry jobs
(four over anonymous memory, sort, and sqlite3 scanning a database on slowfs)
whose working sets are over twice the memory given to them, in the modes
all-at-once, none, switch, model and model-50; each job also runs alone.

Options:
      --modes LIST        comma-separated modes (default all-at-once, none, switch,
                          model, model-50; also model-cold, model-pageout)
      --runs N            runs per mode (default 3)
      --scale full|demo|test
                          full: jobs of 256 MiB, quantum 8 s; demo: 16 MiB, about
                          10 s each alone, quantum 6 s; test: 16 MiB, a fraction
                          of a second, quantum 300 ms (default full)
      --quantum DUR       the turn's length instead of the scale's (e.g. 8s, 500ms)
      --time-limit DUR    stop a run that has not ended after DUR and report it as
                          longer (default 10 times the jobs' times alone, summed,
                          at least 2m)
      --swap slowfs|zram  the swap device: a loop device over a file on slowfs
                          (default; a disk's latency) or zram (memory speed)
  -p, --preset NAME       slowfs preset of the disk that holds the database and
                          the swap device's file (default hdd)
      --sweep             also run none, model and model-50 at several memory sizes
                          (the paper's Figs. 1-2)
      --out DIR           results directory (default ./bench-results/<UTC timestamp>)
      --data-dir DIR      where the disk's files (the database, the swap device's
                          file) and sort's input are kept (default /var/cache/specx/bench)
  -h, --help              show this help

See specx-bench(1).
"""


def parse(argv):
    p = subcommand.parser("share", HELP)
    p.add_argument("--modes", default=",".join(DEFAULT_MODES))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scale", choices=tuple(SCALES), default="full")
    p.add_argument("--swap", choices=("slowfs", "zram"), default="slowfs")
    p.add_argument("-p", "--preset", default="hdd")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--quantum", type=duration)
    p.add_argument("--time-limit", type=duration)
    args = p.parse_args(argv)
    args.modes = args.modes.split(",")
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        p.error(f"unknown mode '{unknown[0]}' (valid: {', '.join(MODES)})")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


def duration(text):
    """Seconds in TEXT: a positive number with an optional unit ms, s, m or h."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", text)
    if not match or float(match[1]) <= 0:
        raise ValueError(text)
    return float(match[1]) * {"ms": 1e-3, None: 1, "s": 1, "m": 60, "h": 3600}[match[2]]


# ---- the jobs ----


def sort_input(data_dir, mib):
    """A text file of about MIB MiB of pseudo-random lines for sort, made once."""
    path = os.path.join(data_dir, f"share-sort-{mib}.txt")
    if not os.path.exists(path):
        import random
        rng = random.Random(mib)
        with open(path + ".tmp", "w") as f:
            written = 0
            while written < mib * MIB:
                line = f"{rng.getrandbits(64):016x} {rng.random():.12f} {rng.getrandbits(20)}\n"
                f.write(line)
                written += len(line)
        os.rename(path + ".tmp", path)
    return path


def scan_database(backing, mib, scans):
    """A SQLite database of about MIB MiB (one table of 900-byte rows) and a script of SCANS full
    scans of it, made once in BACKING (the slow disk's files, written there directly)."""
    import random
    import sqlite3
    db = os.path.join(backing, f"share-scan-{mib}.db")
    if not os.path.exists(db):
        with contextlib.closing(sqlite3.connect(db + ".tmp")) as conn:
            conn.execute("create table t (k integer primary key, v blob)")
            rng = random.Random(mib)
            conn.executemany("insert into t values (?, ?)",
                             ((i, rng.randbytes(900)) for i in range(mib * MIB // 1000)))
            conn.commit()
        os.rename(db + ".tmp", db)
    script = os.path.join(backing, f"share-scan-{scans}.sql")
    if not os.path.exists(script):
        with open(script + ".tmp", "w") as f:
            f.write("select count(*), sum(length(v)), total(k) from t;\n" * scans)
        os.rename(script + ".tmp", script)
    return os.path.basename(db), os.path.basename(script)


def jobs(scale, data_dir, disk, db, script):
    """The six jobs: each a command line whose output does not depend on the memory it had.
    DISK is where the slow disk is mounted, DB and SCRIPT the database's files on it."""
    sweep = components.require("sweep", "the share benchmark's jobs")
    sqlite3 = shutil.which("sqlite3")
    if sqlite3 is None:
        raise SystemExit("specx bench share: its file-backed job needs the sqlite3 shell, which "
                         "is not installed")
    mib, passes = scale["mib"], scale["passes"]
    text = sort_input(data_dir, mib * 2 // 3)
    return [
        [sweep, str(mib), str(passes), "1"],
        [sweep, str(mib), str(passes), "2"],
        [sweep, str(mib), str(passes), "3"],
        [sweep, str(mib), str(passes), "4"],
        # sort keeps its whole input in a buffer of the working set's size, sorting in memory.
        ["sh", "-c", f"sort -S {mib}M {shlex.quote(text)} | md5sum"],
        # Keeps its database open and scans it through the page cache (its own cache is 2 MiB):
        # a working set of file pages, which a turn of the others evicts.
        ["sh", "-c", f"{sqlite3} -readonly {shlex.quote(os.path.join(disk, db))} "
                     f"< {shlex.quote(os.path.join(disk, script))} | md5sum"],
    ]


# ---- one run ----


def run_alone(job):
    """A job with memory to spare: the time it needs, and its output."""
    drop_caches()
    t0 = time.monotonic()
    proc = subprocess.run(job, capture_output=True)
    return {"elapsed_s": time.monotonic() - t0, "output": proc.stdout.decode(errors="replace"),
            "exit": proc.returncode}


def group_stat(group, key):
    with open(os.path.join(group.path, "memory.stat")) as f:
        fields = dict(line.split() for line in f)
    return int(fields.get(f"total_{key}", fields.get(key, 0)))


def stopped(limit, major_faults, traced=None):
    """The record of a run stopped at its time limit: its makespan is only known to be longer,
    its faults are those until then (and TRACED, specx share's turns and prefetches)."""
    return {"makespan_s": None, "stopped_after_s": limit, "jobs": None,
            "major_faults": major_faults, "major_faults_first_second": None,
            "prefetched_bytes": 0, "prefetched_file_bytes": 0, "prefetched_unused_bytes": 0,
            "switches": None, "turn_cpu_share": None} | (traced or {})


def trace(record):
    """specx share's turns and prefetches, one record each, and the share of the turns' time
    the jobs spent on a CPU (the rest they waited: for their pages, or for the device)."""
    turns = record["turns"]
    seconds = sum(t["seconds"] for t in turns)
    return {"turn_cpu_share": sum(t["cpu_s"] for t in turns) / seconds if seconds else None,
            "turns": turns, "prefetches": record["prefetches"]}


def run_all_at_once(job_list, memory, limit):
    """Every job started at once in one group of MEMORY bytes."""
    drop_caches()
    name = f"specx-bench-share-{uuid.uuid4().hex[:8]}"
    with memcg.limited(name, memory) as group:
        t0 = time.monotonic()
        procs = [subprocess.Popen(j, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  preexec_fn=group.add) for j in job_list]
        outs, ends = [], []
        try:
            for p in procs:
                left = max(0.0, t0 + limit - time.monotonic())
                outs.append(p.communicate(timeout=left)[0].decode(errors="replace"))
                ends.append(time.monotonic() - t0)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            return stopped(limit, group_stat(group, "pgmajfault"))
        faults = group_stat(group, "pgmajfault")
    return {"makespan_s": max(ends), "stopped_after_s": None, "jobs": [
        {"wall_s": e, "output": o, "exit": p.returncode} for e, o, p in zip(ends, outs, procs)],
        "major_faults": faults, "major_faults_first_second": None, "prefetched_bytes": 0,
        "prefetched_file_bytes": 0, "prefetched_unused_bytes": 0, "switches": 0,
        "turn_cpu_share": None}


def run_shared(job_list, memory, mode, quantum, limit, out_dir):
    """The jobs under specx share in MODE."""
    drop_caches()
    report = os.path.join(out_dir, f"share-{uuid.uuid4().hex[:8]}.json")
    outputs = os.path.join(out_dir, f"share-out-{uuid.uuid4().hex[:8]}")
    os.makedirs(outputs)
    cmd = [components.specx_exe(), "share", "--memory", str(memory),
           "--quantum", f"{round(quantum * 1000)}ms",
           "--output", outputs, "--json", report, *MODES[mode], "--"]
    for i, j in enumerate(job_list):
        cmd += ([":::"] if i else []) + j
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=limit)
    except (KeyboardInterrupt, subprocess.TimeoutExpired) as e:
        proc.send_signal(signal.SIGTERM)   # specx share ends its jobs and removes its groups
        proc.communicate()
        if isinstance(e, KeyboardInterrupt):
            raise
        if not os.path.exists(report):     # written on SIGTERM too: the faults until then
            if proc.returncode == -signal.SIGTERM:
                # Ended by it before it could block it: before it made a group or a job
                # (a limit shorter than its start, as under emulation).
                shutil.rmtree(outputs)
                return stopped(limit, 0)
            raise RuntimeError(f"specx share wrote no report when stopped "
                               f"(exit {proc.returncode})")
        with open(report) as f:
            record = json.load(f)
        os.unlink(report)
        shutil.rmtree(outputs)
        return stopped(limit, sum(j["major_faults"] for j in record["jobs"]), trace(record))
    makespan = time.monotonic() - t0
    if proc.returncode != 0 or not os.path.exists(report):
        raise RuntimeError(f"specx share exited {proc.returncode}: {err.strip()[-300:]}")
    with open(report) as f:
        record = json.load(f)
    os.unlink(report)
    jobs_out = []
    for j in record["jobs"]:
        with open(os.path.join(outputs, f"{j['job']}.out")) as f:
            jobs_out.append({"wall_s": j["wall_s"], "output": f.read(), "exit": j["exit_code"],
                             "major_faults": j["major_faults"], "turns": j["turns"],
                             "major_faults_first_second": j["major_faults_first_second"],
                             "prefetched_bytes": j["prefetched_bytes"],
                             "prefetched_file_bytes": j["prefetched_file_bytes"],
                             "prefetched_unused_bytes": j["prefetched_unused_bytes"]})
    shutil.rmtree(outputs)
    return {"makespan_s": makespan, "stopped_after_s": None, "jobs": jobs_out,
            "switches": record["switches"],
            "major_faults": sum(j["major_faults"] for j in jobs_out),
            "major_faults_first_second": sum(j["major_faults_first_second"] for j in jobs_out),
            "prefetched_bytes": sum(j["prefetched_bytes"] for j in jobs_out),
            "prefetched_file_bytes": sum(j["prefetched_file_bytes"] for j in jobs_out),
            "prefetched_unused_bytes": sum(j["prefetched_unused_bytes"] for j in jobs_out)
            } | trace(record)


def run_mode(mode, job_list, memory, plan, out_dir):
    if mode == "all-at-once":
        return run_all_at_once(job_list, memory, plan["time_limit_s"])
    return run_shared(job_list, memory, mode, plan["quantum_s"], plan["time_limit_s"], out_dir)


# ---- the slow disk and the swap device ----


@contextlib.contextmanager
def devices(args, backing, mountpoint, swap_size):
    """The slow disk (slowfs over BACKING at MOUNTPOINT: the database, and the swap device's
    file unless --swap zram) and the swap space. Yields what the swap is."""
    # Swapping writes as much as it reads: writes cost the disk's time too.
    with slowfs.mounted(backing, mountpoint, ["--preset", args.preset, "--model-writes"]):
        if args.swap == "zram":
            with swapspace.enabled(swap_size, args.data_dir, kinds=("zram",)) as space:
                yield f"zram ({space.path})"
        else:
            with swapspace.enabled(swap_size, mountpoint, kinds=("loop",)) as space:
                yield (f"loop device {space.path} over a file on the same slowfs "
                       f"--preset {args.preset}")


# ---- results ----


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(records, alone):
    """Per mode: medians over runs of the makespan (a run stopped at its time limit counts as
    longer than any that ended; if it is the median, the makespan is only known to exceed the
    limit: makespan_over_s), faults (those of a stopped run until it stopped), prefetched bytes
    and each job's slowdown against running alone; whether every output of a run that ended was
    the job's output alone (None if none ended), and the jobs whose output was not."""
    out = {}
    for mode, runs in records.items():
        ended = [r for r in runs if r["stopped_after_s"] is None]
        differ = differing(ended, alone)
        makespan = statistics.median([r["makespan_s"] if r in ended else math.inf for r in runs])
        out[mode] = {
            "makespan_s": makespan if makespan != math.inf else None,
            "makespan_over_s": None if makespan != math.inf else
            min(r["stopped_after_s"] for r in runs if r not in ended),
            "stopped_runs": len(runs) - len(ended),
            "major_faults": median([r["major_faults"] for r in runs]),
            "major_faults_first_second": median([r["major_faults_first_second"] for r in runs]),
            "prefetched_mib": median([r["prefetched_bytes"] / MIB for r in runs]),
            "prefetched_file_mib": median([r["prefetched_file_bytes"] / MIB for r in runs]),
            "prefetched_unused_mib": median([r["prefetched_unused_bytes"] / MIB for r in runs]),
            "switches": median([r["switches"] for r in runs]),
            "turn_cpu_share": median([r["turn_cpu_share"] for r in runs]),
            "slowdown": [median([r["jobs"][i]["wall_s"] / a["elapsed_s"] for r in ended])
                         for i, a in enumerate(alone)],
            "outputs_identical": not differ if ended else None,
            "outputs_differing": differ,
        }
    return out


def differing(ended, alone):
    """The jobs (numbered from 1) whose output or exit status in a run of ENDED was not the
    one they had alone, each with its exit status there and alone."""
    return [{"job": i + 1, "exit": r["jobs"][i]["exit"], "exit_alone": a["exit"],
             "output_same": r["jobs"][i]["output"] == a["output"]}
            for r in ended for i, a in enumerate(alone)
            if (r["jobs"][i]["output"], r["jobs"][i]["exit"]) != (a["output"], a["exit"])]


def ratio(summary, a, b, key="makespan_s"):
    """A / B of KEY as (value, relation): relation "=", or "<" / ">" where B or A is only known
    to exceed its time limit; None where neither is known."""
    if a not in summary or b not in summary:
        return None
    over = key == "makespan_s"
    x, y = summary[a][key], summary[b][key]
    if x is not None and y:
        return x / y, "="
    if over and x is not None and summary[b]["makespan_over_s"]:
        return x / summary[b]["makespan_over_s"], "<"
    if over and y and summary[a]["makespan_over_s"]:
        return summary[a]["makespan_over_s"] / y, ">"
    return None


def bars(summary):
    """The issue's bars that this run's modes can speak to: (figure, measured, bar, result).
    Every bar is an upper bound: a ratio known only to be below a value passes if that value
    does, one known only to be above a value fails if that value does, else is unknown."""
    rows = []
    def add(figure, measured, bar):
        if measured is None:
            return
        value, relation = measured
        if relation == ">":
            result = "FAIL" if value > bar else "unknown"
        else:
            result = "PASS" if value <= bar else "FAIL"
        rows.append((figure, measured, f"<= {bar}", result))
    add("major faults in turns' first second, model / none",
        ratio(summary, "model", "none", "major_faults_first_second"), 0.1)
    add("makespan model / none", ratio(summary, "model", "none"), 0.75)
    add("makespan model / switch", ratio(summary, "model", "switch"), 1.0)
    add("makespan model-50 / none", ratio(summary, "model-50", "none"), 1.0)
    add("makespan model / all-at-once", ratio(summary, "model", "all-at-once"), 0.5)
    return rows


def fmt(v, digits=2):
    return "–" if v is None else f"{v:,.{digits}f}"


def fmt_share(v):
    return "–" if v is None else f"{100 * v:.0f} %"


def fmt_ratio(measured):
    if measured is None:
        return "–"
    value, relation = measured
    return fmt(value) if relation == "=" else f"{relation} {fmt(value)}"


def fmt_makespan(m):
    if m["makespan_s"] is None:
        return f"> {m['makespan_over_s']:g} s (stopped)"
    stopped_note = f" ({m['stopped_runs']} stopped)" if m["stopped_runs"] else ""
    return f"{fmt(m['makespan_s'])} s{stopped_note}"


def fmt_faults(m, key="major_faults"):
    """Faults of a mode with stopped runs are those until the stop: a lower bound."""
    return ("≥ " if m["stopped_runs"] and m[key] is not None else "") + fmt(m[key], 0)


def markdown(result):
    env, summary = result["environment"], result["summary"]
    lines = [
        "# specx bench share: job-speculative prefetching (Suh et al. 2001)", "",
        f"{env['started']} – {env.get('finished', '')}; kernel {env['kernel']}; {env['cpus']} CPUs; "
        f"scale `{env['scale']}`: {len(env['jobs'])} jobs of {env['job_mib']} MiB each in {env['memory_mib']} MiB "
        f"(2 working sets), quantum {fmt(env['quantum_s'], 3)} s; swap: {env['swap']}; "
        f"{env['runs']} run(s) per mode, medians; a run not ended after "
        f"{env['time_limit_s']:g} s was stopped.", "",
        "Jobs: " + "; ".join(f"{i + 1}. `{' '.join(os.path.basename(a) if k == 0 else a for k, a in enumerate(j))}`"
                            for i, j in enumerate(env["jobs"])) + ".", "",
        "Alone (memory to spare): " + ", ".join(f"job {i + 1} {a['elapsed_s']:.2f} s"
                                                for i, a in enumerate(result["alone"])) + ".", "",
        "| mode | makespan | vs none | major faults | in turns' first second | prefetched | "
        "switches | CPU in turns | slowdown per job | outputs as alone |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, m in summary.items():
        identical = {True: "yes", False: "**NO**", None: "– (none ended)"}[m["outputs_identical"]]
        if m["outputs_differing"]:
            identical += " (" + ", ".join(
                f"job {d['job']}: exit {d['exit']}" + ("" if d["output_same"] else ", output")
                for d in m["outputs_differing"]) + ")"
        lines.append(
            f"| {mode} | {fmt_makespan(m)} | {fmt_ratio(ratio(summary, mode, 'none'))} | "
            f"{fmt_faults(m)} | {fmt_faults(m, 'major_faults_first_second')} | "
            f"{fmt(m['prefetched_mib'], 1)} MiB ({fmt(m['prefetched_file_mib'], 1)} of files, "
            f"{fmt(m['prefetched_unused_mib'], 1)} unused) | "
            f"{fmt(m['switches'], 0)} | {fmt_share(m['turn_cpu_share'])} | "
            f"{', '.join(fmt(x) for x in m['slowdown'])} | {identical} |")
    lines += ["", "Slowdown: a job's wall time (from the start of the run to its end, turns of "
              "the others included) over its time alone. Major faults: of the jobs' memory "
              "groups (all-at-once: of the one group); in turns' first second: summed over "
              "every turn (specx share only). CPU in turns: the share of the turns' time "
              "the running job spent on a CPU; the rest it waited, on its pages or the "
              "device (specx share only).", "", "## Bars", ""]
    rows = bars(summary)
    lines += ["| figure | measured | bar | result |", "|---|---|---|---|"] if rows else \
        ["None applies to this run's modes (they compare model with none, switch and "
         "all-at-once)."]
    lines += [f"| {f} | {fmt_ratio(v)} | {b} | {result} |" for f, v, b, result in rows]
    if result.get("sweep"):
        lines += ["", "## Major faults against memory (the paper's Figs. 1-2)", "",
                  "| memory | " + " | ".join(SWEEP_MODES) + " |",
                  "|---|" + "---|" * len(SWEEP_MODES)]
        for point in result["sweep"]:
            lines.append(f"| {point['memory_mib']} MiB | " + " | ".join(
                f"{fmt_faults(point['modes'][m])} ({fmt_makespan(point['modes'][m])})"
                if m in point["modes"] else "–" for m in SWEEP_MODES) + " |")
    return "\n".join(lines) + "\n"


def figures(result, out_dir):
    """The makespan per mode, and with --sweep the paper's Figs. 1-2 as major faults against
    memory. Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    summary = result["summary"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(summary)
    # A mode whose median run was stopped at the time limit: a hatched bar up to the limit.
    bars_ = ax1.bar(names, [summary[m]["makespan_s"] or summary[m]["makespan_over_s"]
                            for m in names], color="#4477aa")
    for bar, m in zip(bars_, names):
        if summary[m]["makespan_s"] is None:
            bar.set_hatch("//")
            bar.set_facecolor("white")
            ax1.annotate("stopped", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                         ha="center", va="bottom", fontsize=8)
    ax1.set_ylabel("makespan (s)")
    ax1.set_title("Makespan of the jobs")
    ax2.bar(names, [summary[m]["major_faults"] or 0 for m in names], color="#cc6677")
    ax2.set_ylabel("major page faults")
    ax2.set_title("Major faults")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "results-share.png"), dpi=120)
    plt.close(fig)
    written.append("results-share.png")
    if result.get("sweep"):
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode, style in zip(SWEEP_MODES, ("o-", "s-", "^--")):
            points = [(p["memory_mib"], p["modes"][mode]) for p in result["sweep"]
                      if mode in p["modes"]]
            ax.plot([x for x, _ in points], [m["major_faults"] for _, m in points], style,
                    label={"none": "no prefetching", "model": "prefetching",
                           "model-50": "prefetching, 50 % mispredicted"}[mode])
            # A run stopped at the time limit counted its faults until then: at least that.
            for x, m in points:
                if m["stopped_runs"]:
                    ax.annotate("≥ (stopped)", (x, m["major_faults"]), textcoords="offset points",
                                xytext=(6, 4), fontsize=8)
        ax.set_yscale("log")
        ax.set_xlabel("memory (MiB)")
        ax.set_ylabel("major page faults (all jobs)")
        ax.set_title("Faults against memory (cf. Suh et al. Figs. 1-2)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "results-share-sweep.png"), dpi=120)
        plt.close(fig)
        written.append("results-share-sweep.png")
    return written


def save(result, out_dir):
    with open(os.path.join(out_dir, "results-share.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, "results-share.md"), "w") as f:
        f.write(markdown(result))
    return ["results-share.md", "results-share.json", *figures(result, out_dir)]


# ---- the experiment ----


def run_modes(modes, job_list, memory, plan, runs, out_dir, label=""):
    """Every mode RUNS times, the order rotated per round so that no mode always goes first."""
    records = {m: [] for m in modes}
    for r in range(runs):
        order = modes[r % len(modes):] + modes[:r % len(modes)]
        for mode in order:
            rec = run_mode(mode, job_list, memory, plan, out_dir)
            records[mode].append(rec)
            makespan = (f"stopped after {rec['stopped_after_s']:g} s (time limit)"
                        if rec["makespan_s"] is None else f"makespan {rec['makespan_s']:.2f} s")
            print(f"[share{label}] {mode} run {r + 1}: {makespan}, "
                  f"{rec['major_faults']:,} major faults, "
                  f"{rec['prefetched_bytes'] / MIB:.1f} MiB prefetched", flush=True)
    return records


def without_outputs(record):
    """A run's record for the JSON results: the jobs' outputs are compared, not kept."""
    jobs_ = record["jobs"] and [{k: v for k, v in j.items() if k != "output"}
                                for j in record["jobs"]]
    return record | {"jobs": jobs_}


def experiment(args, out_dir):
    scale = SCALES[args.scale]
    memory = (2 * scale["mib"] + scale["slack"]) * MIB
    backing = os.path.join(args.data_dir, "share-disk")
    disk = os.path.join(args.data_dir, ".mnt", "share-disk")
    os.makedirs(backing, exist_ok=True)
    db, script = scan_database(backing, scale["mib"], scale["scans"])
    job_list = jobs(scale, args.data_dir, disk, db, script)
    env = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "kernel": os.uname().release,
           "cpus": os.cpu_count(), "scale": args.scale, "job_mib": scale["mib"],
           "memory_mib": memory // MIB, "quantum_s": args.quantum or scale["quantum"],
           "runs": args.runs, "modes": args.modes, "jobs": job_list}
    result = {"environment": env}
    swap_size = (len(job_list) * scale["mib"] + 64) * MIB
    with devices(args, backing, disk, swap_size) as swap:
        env["swap"] = swap
        result["alone"] = [run_alone(j) for j in job_list]
        for i, a in enumerate(result["alone"]):
            print(f"[share] job {i + 1} alone: {a['elapsed_s']:.2f} s", flush=True)
        env["time_limit_s"] = args.time_limit or max(MIN_TIME_LIMIT_S, math.ceil(
            TIME_LIMIT_FACTOR * sum(a["elapsed_s"] for a in result["alone"])))
        plan = {"quantum_s": env["quantum_s"], "time_limit_s": env["time_limit_s"]}
        records = run_modes(args.modes, job_list, memory, plan, args.runs, out_dir)
        result["runs"] = {m: [without_outputs(r) for r in rs] for m, rs in records.items()}
        result["summary"] = summarize(records, result["alone"])
        if args.sweep:
            result["sweep"] = []
            for factor in scale["sweep"]:
                mem = int((factor * scale["mib"] + scale["slack"]) * MIB)
                recs = run_modes(list(SWEEP_MODES), job_list, mem, plan, 1, out_dir,
                                 label=f" {mem // MIB} MiB")
                result["sweep"].append({"memory_mib": mem // MIB,
                                        "modes": summarize(recs, result["alone"])})
    env["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return result


def main(argv):
    args = parse(argv)
    if os.geteuid() != 0:
        print("specx bench share: needs root (cgroups, swap space, drop_caches)", file=sys.stderr)
        return 1
    out_dir = subcommand.prepare_dirs("share", args)
    try:
        with datasets.locked(args.data_dir):
            result = experiment(args, out_dir)
    except swapspace.Unavailable as e:
        print(f"specx bench share: no swap space: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("specx bench share: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"specx bench share: {e}", file=sys.stderr)
        return 1
    written = save(result, out_dir)
    print()
    print(markdown(result))
    print(f"Results in {out_dir}: {', '.join(written)}")
    return 0 if all(m["outputs_identical"] is not False
                    for m in result["summary"].values()) else 1
