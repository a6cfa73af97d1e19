"""`specx bench idle`: does the foreground notice background work? (Eggert 2002, Figs. 12-13
and 17-18, for CPU, disk and memory; issue 14).

Each experiment pairs a foreground (FG) that measures its own throughput with a background
(BG) that counts its own progress, and runs the FG:

  solo          alone
  plain         beside the BG started plainly
  nice          beside the BG under nice -n 19 (the paper's "Nice" baseline)
  nice+ionice   beside the BG under nice -n 19 and ionice -c3 (the POSIX priorities)
  specx-idle    beside the BG under specx idle

and the BG alone, for the capacity it can use. The experiments:

  cpu           FG: one CPU-bound process; BG: one CPU-bound process per CPU
  cpu-bursty    FG: 20 ms of work then 20 ms of sleep, over and over (light load)
  disk          FG: sequential reads of a file on slowfs; BG: reads of another
  memory        FG and BG re-read file sets of 70 % of a memory cgroup they share, on slowfs

FG throughput is reported as a share of solo (medians, and 95 % confidence intervals over
the runs), BG progress as a share of the capacity the FG leaves idle, and for memory the
time from the FG's start to the BG's first give-back. The network experiment waits for
specx idle's network classes (not built yet). Results: results-idle.md, .json and .png."""
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid

from . import components, datasets, memcg, slowfs, subcommand

MIB = 1 << 20
MODES = ("solo", "plain", "nice", "nice+ionice", "specx-idle")
EXPERIMENTS = ("cpu", "cpu-bursty", "disk", "memory")
SCALES = {
    "full": dict(seconds=10, disk_mib=512, memory_mib=192),
    "demo": dict(seconds=4, disk_mib=128, memory_mib=96),
    "test": dict(seconds=1, disk_mib=16, memory_mib=48),
}

# The workers print how much they got done when their time is up or when told to stop
# (SIGTERM). WORK UNITS: CPU loops of 10,000 additions, bytes read.
WORKER = r'''
import os, signal, sys, time
kind, seconds = sys.argv[1], float(sys.argv[2])
paths = sys.argv[3:]
done = 0
stop = time.monotonic() + seconds if seconds > 0 else float("inf")
def finish(*_):
    print(done, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, finish)
if kind != "cpus":
    print("ready", flush=True)
def spin(until):
    global done
    while time.monotonic() < until:
        x = 0
        for i in range(10000):
            x += i
        done += 1
def read_all(path, drop):
    global done
    with open(path, "rb", buffering=0) as f:
        if drop:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        while time.monotonic() < stop:
            block = f.read(128 << 10)
            if not block:
                return
            done += len(block)
if kind == "cpu":
    spin(stop)
elif kind == "bursty":
    while time.monotonic() < stop:
        spin(min(stop, time.monotonic() + 0.02))
        time.sleep(0.02)
elif kind == "cpus":
    children = []
    for _ in range(os.cpu_count()):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, lambda *_: (os.write(w, str(done).encode()), os._exit(0)))
            spin(stop)
            os.write(w, str(done).encode())
            os._exit(0)
        os.close(w)
        children.append((pid, r))
    def gather(*_):
        global done
        for pid, _ in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:  # told already (specx idle tells every process)
                pass
        done = sum(int(os.read(r, 64) or b"0") for _, r in children)
        finish()
    signal.signal(signal.SIGTERM, gather)
    print("ready", flush=True)
    for pid, _ in children:
        os.waitpid(pid, 0)
    gather()
else:  # "read": the files over and over, each pass from the device ("stream") or the cache
    while time.monotonic() < stop:
        for p in paths:
            read_all(p, kind == "stream")
print(done, flush=True)
'''

HELP = """\
Usage: specx bench idle [OPTIONS]

Foreground throughput beside background work run plainly, under nice, under
nice and ionice, and under specx idle (Eggert 2002), for CPU, disk and memory.

Options:
      --experiments LIST  comma-separated: cpu, cpu-bursty, disk, memory (default all)
      --runs N            runs per mode (default 5)
      --scale full|demo|test
                          10 s, 4 s or 1 s per run, with data sized to match
                          (default full)
  -p, --preset NAME       slowfs preset of the disk (default hdd)
      --out DIR           results directory (default ./bench-results/<UTC timestamp>)
      --data-dir DIR      where the files read are kept (default /var/tmp/specx-data)
  -h, --help              show this help

See specx-bench(1).
"""


def parse(argv):
    p = subcommand.parser("idle", HELP)
    p.add_argument("--experiments", default=",".join(EXPERIMENTS))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--scale", choices=tuple(SCALES), default="full")
    p.add_argument("-p", "--preset", default="hdd")
    args = p.parse_args(argv)
    args.experiments = args.experiments.split(",")
    unknown = [e for e in args.experiments if e not in EXPERIMENTS]
    if unknown:
        p.error(f"unknown experiment '{unknown[0]}' (valid: {', '.join(EXPERIMENTS)})")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


# ---- running one pair ----


def worker(kind, seconds, *paths):
    return [sys.executable, "-c", WORKER, kind, str(seconds), *map(str, paths)]


def background_argv(mode, argv, report):
    if mode == "nice":
        return ["nice", "-n", "19", *argv]
    if mode == "nice+ionice":
        return ["nice", "-n", "19", "ionice", "-c3", *argv]
    if mode == "specx-idle":
        return [components.specx_exe(), "idle", "--json", report, "--", *argv]
    return argv


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def stop(proc):
    """Tells a BG worker to stop and returns what it printed it got done."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    lines = out.split()  # its "ready" was read before
    if not lines:
        raise RuntimeError(f"the background printed nothing: {err.strip()[-300:]}")
    return int(lines[-1])


def run_pair(mode, fg, bg, group=None, settle=0.0, out_dir="."):
    """FG alone (mode solo) or beside BG started in MODE; returns the FG's work, the BG's
    progress, the BG's specx idle report (or None) and when the FG started."""
    report = os.path.join(out_dir, f"idle-{uuid.uuid4().hex[:8]}.json")
    add = group.add if group else None
    bg_proc = None
    if mode != "solo":
        bg_proc = subprocess.Popen(background_argv(mode, bg, report), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=add)
        if bg_proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the background did not start: {bg_proc.stderr.read()[-300:]}")
        time.sleep(settle)  # the BG takes what is idle before the FG comes
    try:
        fg_started = time.time()
        fg_proc = subprocess.run(fg, capture_output=True, text=True, preexec_fn=add, timeout=600)
        if fg_proc.returncode != 0:
            raise RuntimeError(f"the foreground failed: {fg_proc.stderr.strip()[-300:]}")
        bg_done = stop(bg_proc) if bg_proc else None
    finally:
        if bg_proc and bg_proc.poll() is None:
            bg_proc.kill()
            bg_proc.wait()
    idle_report = None
    if os.path.exists(report):
        with open(report) as f:
            idle_report = json.load(f)
        os.unlink(report)
    return {"fg": int(fg_proc.stdout.split()[-1]), "bg": bg_done, "idle": idle_report,
            "fg_started": fg_started}


# ---- the experiments ----


def data_file(data_dir, name, mib):
    """A file of MIB MiB of incompressible data in DATA_DIR, made once."""
    path = os.path.join(data_dir, "idle", f"{name}-{mib}m")
    if not os.path.exists(path) or os.path.getsize(path) != mib * MIB:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".new", "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(MIB))
        os.rename(path + ".new", path)
    return path


@contextlib.contextmanager
def experiment_setup(name, scale, args):
    """What experiment NAME runs: (FG argv, BG argv, BG alone argv, the share of capacity the
    FG leaves idle (None where the FG takes all it can: then the BG's progress is compared
    with its progress alone), the memory group they share or None, seconds the BG starts
    ahead, the slowfs mount or None)."""
    t = scale["seconds"]
    if name in ("cpu", "cpu-bursty"):
        fg = worker("cpu" if name == "cpu" else "bursty", t)
        # One CPU of all is the FG's (half of it when bursty): the rest is idle capacity.
        cpus = os.cpu_count()
        idle_share = (cpus - (1 if name == "cpu" else 0.5)) / cpus
        yield fg, worker("cpus", 0), worker("cpus", t), idle_share, None, 0.3, None
        return
    files = [data_file(args.data_dir, n, scale["disk_mib"] if name == "disk"
                       else scale["memory_mib"] * 7 // 10) for n in ("fg", "bg")]
    mountpoint = os.path.join(args.data_dir, f"idle-mnt-{os.getpid()}")
    with slowfs.mounted(os.path.dirname(files[0]), mountpoint, ["-p", args.preset]) as mnt:
        fg_file, bg_file = (os.path.join(mnt, os.path.basename(f)) for f in files)
        if name == "disk":
            yield (worker("stream", t, fg_file), worker("stream", 0, bg_file),
                   worker("stream", t, bg_file), None, None, 0.5, mnt)
            return
        limit = scale["memory_mib"] << 20
        with memcg.limited(f"specx-bench-idle-{os.getpid()}", limit) as group:
            yield (worker("read", t, fg_file), worker("read", 0, bg_file),
                   worker("read", t, bg_file), None, group, 2 * t, mnt)


def run_experiment(name, scale, args, out_dir):
    records = {m: [] for m in MODES}
    with experiment_setup(name, scale, args) as (fg, bg, bg_alone, idle_share, group, settle,
                                                 mnt):
        def one(mode):
            if mnt:
                drop_caches()
            return run_pair(mode, fg, bg, group, settle if mode != "solo" else 0, out_dir)
        alone = []
        for r in range(args.runs):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for mode in order:
                rec = one(mode)
                records[mode].append(rec)
                print(f"[idle {name}] {mode} run {r + 1}: FG {rec['fg']:,}"
                      + (f", BG {rec['bg']:,}" if rec["bg"] is not None else ""), flush=True)
            if mnt:
                drop_caches()
            started = time.monotonic()
            alone.append(int(subprocess.run(bg_alone, capture_output=True, text=True,
                                            preexec_fn=group.add if group else None,
                                            timeout=600).stdout.split()[-1])
                         / (time.monotonic() - started))
    return summarize(name, records, alone, idle_share, scale["seconds"])


# ---- numbers ----


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def confidence95(values):
    """Half-width of the 95 % confidence interval of the mean (t distribution)."""
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}
    if len(values) < 2:
        return None
    return t.get(len(values), 2.0) * statistics.stdev(values) / len(values) ** 0.5


def summarize(name, records, alone, idle_share, seconds):
    solo = median([r["fg"] for r in records["solo"]])
    bg_rate = median(alone)  # BG units per second with the machine to itself
    rows = []
    for mode in MODES:
        recs = records[mode]
        shares = [r["fg"] / solo for r in recs]
        row = {"mode": mode, "runs": len(recs), "fg_share": median(shares),
               "fg_share_ci95": confidence95(shares)}
        if mode != "solo":
            # The BG's work over the FG's seconds, against what the idle capacity allows.
            bg_share = [r["bg"] / seconds / (bg_rate * (idle_share or 1.0)) for r in recs
                        if r["bg"] is not None]
            row["bg_progress"] = median(bg_share)
        if mode == "specx-idle":
            reports = [r["idle"] for r in recs if r["idle"]]
            gb = [r["idle"]["memory"]["first_giveback_at"] - r["fg_started"] for r in recs
                  if r["idle"] and r["idle"]["memory"]["first_giveback_at"]]
            row["memory_giveback_after_fg_start_s"] = median(gb)
            row["memory_shrinks"] = median([r["memory"]["shrinks"] for r in reports])
        rows.append(row)
    return {"experiment": name, "solo_fg": solo, "bg_alone_rate": bg_rate,
            "idle_share": idle_share,
            "bg_progress_of": "the idle capacity" if idle_share else "its progress alone",
            "modes": rows,
            "runs": {m: [{k: v for k, v in r.items() if k != "idle"} |
                         {"idle_memory": (r["idle"] or {}).get("memory")} for r in recs]
                     for m, recs in records.items()}}


def fmt(v, digits=2, pct=False):
    if v is None:
        return "–"
    return f"{100 * v:.0f} %" if pct else f"{v:.{digits}f}"


def bg_cell(row, experiment):
    if row.get("bg_progress") is None:
        return "–"
    basis = "of idle capacity" if experiment["idle_share"] else "of alone"
    return f"{fmt(row['bg_progress'], pct=True)} {basis}"


def markdown(result):
    lines = ["# specx bench idle: foreground throughput beside background work", "",
             f"{result['environment']['runs']} runs per mode, {result['environment']['seconds']} s "
             f"each, medians; ±: 95 % confidence interval of the mean.", "",
             "| experiment | BG run | FG throughput (share of solo) | ± | BG progress "
             "| memory given back after FG start |",
             "|---|---|---|---|---|---|"]
    for e in result["experiments"]:
        for row in e["modes"]:
            lines.append(f"| {e['experiment']} | {row['mode']} | {fmt(row['fg_share'], 3)} | "
                         f"{fmt(row['fg_share_ci95'], 3)} | "
                         f"{bg_cell(row, e)} | "
                         f"{fmt(row.get('memory_giveback_after_fg_start_s'))}"
                         f"{' s' if row.get('memory_giveback_after_fg_start_s') else ''} |")
    lines += ["", "Bars (issue 14): FG ≥ 0.99 of solo for CPU, ≥ 0.97 for disk and memory under "
              "specx idle; BG ≥ 80 % of the idle capacity when the FG is bursty; memory given "
              "back within 0.5 s of the FG's pressure onset.", ""]
    return "\n".join(lines)


def figure(result, out_dir):
    from . import plot
    plt = plot.plt
    exps = result["experiments"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / len(MODES)
    for k, mode in enumerate(MODES):
        xs = [i + k * width for i in range(len(exps))]
        ys = [next(r["fg_share"] for r in e["modes"] if r["mode"] == mode) for e in exps]
        err = [next(r["fg_share_ci95"] or 0 for r in e["modes"] if r["mode"] == mode)
               for e in exps]
        ax.bar(xs, ys, width, yerr=err, capsize=2, label=mode)
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(exps))], [e["experiment"] for e in exps])
    ax.set_ylabel("FG throughput / solo")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=7, ncol=len(MODES), loc="lower center")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "results-idle.png"), dpi=120)
    plt.close(fig)


def save(result, out_dir):
    with open(os.path.join(out_dir, "results-idle.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, "results-idle.md"), "w") as f:
        f.write(markdown(result))
    figure(result, out_dir)
    return ["results-idle.md", "results-idle.json", "results-idle.png"]


def main(argv):
    args = parse(argv)
    if os.geteuid() != 0:
        print("specx bench idle: needs root (cgroups, slowfs, drop_caches)", file=sys.stderr)
        return 1
    out_dir = subcommand.prepare_dirs(args)
    scale = SCALES[args.scale]
    result = {"environment": {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "kernel": os.uname().release, "cpus": os.cpu_count(),
                              "scale": args.scale, "seconds": scale["seconds"],
                              "runs": args.runs, "preset": args.preset},
              "experiments": []}
    try:
        with datasets.locked(args.data_dir):
            for name in args.experiments:
                result["experiments"].append(run_experiment(name, scale, args, out_dir))
    except KeyboardInterrupt:
        print("specx bench idle: interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, OSError) as e:
        print(f"specx bench idle: {e}", file=sys.stderr)
        return 1
    result["environment"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    written = save(result, out_dir)
    print()
    print(markdown(result))
    print(f"Results in {out_dir}: {', '.join(written)}")
    return 0
