"""`specx bench slurm`: the share benchmark's six jobs (share_bench.py) submitted with sbatch to
a real one-node Slurm on this machine (specx_support/slurm.py) whose gang scheduling
time-shares one CPU in slices of 5 s, with the node's memory for jobs tight: slurmd runs in a
memory group of two working sets, which its jobs share. Two modes, each run --runs times:

  slurm        Slurm alone (a specx share --follow-slurm --prefetch none --release none beside
               it only watches: it counts the turns and names the next job, and touches nothing)
  slurm+specx  Slurm with specx share --follow-slurm --release pageout on the node

Results: results-slurm.md, .json and .png."""
import json
import math
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from specx_support import components, memcg, slurm, swapspace

from . import datasets, share_bench, subcommand

MIB = 1 << 20
MODES = {
    "slurm": ["--prefetch", "none", "--release", "none"],
    "slurm+specx": ["--release", "pageout"],
}
# What slurmd and a slurmstepd per job need in the jobs' memory group beyond their working sets:
# measured on slurm-wlm 22.05 here, 2.4 MiB for slurmd alone and 9.8 MiB with six jobs'
# slurmstepds (page cache dropped first, so their binaries' pages are charged too).
DAEMONS_MIB = 12

HELP = """\
Usage: specx bench slurm [OPTIONS]

The share benchmark's six jobs submitted to a one-node Slurm started on this
machine (munged, slurmctld, slurmd; gang scheduling of one CPU, 5 s slices),
their memory two working sets: with Slurm alone, and with specx share
--follow-slurm on the node. Needs root, Slurm and munge installed, and the
cgroup v1 freezer.

Options:
      --runs N            rounds of both modes (default 3)
      --scale full|demo|test
                          the jobs' size, as specx bench share (default demo)
      --time-limit DUR    stop a run that has not ended after DUR (default 10
                          times the jobs' times alone, summed, at least 2m)
      --memory MIB        memory of slurmd and its jobs (default two working sets
                          of the scale, its slack and 12 MiB for the daemons)
      --swap slowfs|zram  the swap device (default slowfs)
  -p, --preset NAME       slowfs preset of the disk (default hdd)
      --out DIR           results directory (default ./bench-results/<UTC timestamp>)
      --data-dir DIR      where the disk's files are kept (default /var/cache/specx/bench)
  -h, --help              show this help

See specx-bench(1).
"""


def parse(argv):
    p = subcommand.parser("slurm", HELP)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scale", choices=tuple(share_bench.SCALES), default="demo")
    p.add_argument("--swap", choices=("slowfs", "zram"), default="slowfs")
    p.add_argument("-p", "--preset", default="hdd")
    p.add_argument("--time-limit", type=share_bench.duration)
    p.add_argument("--memory", type=int, metavar="MIB")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.memory is not None and args.memory < DAEMONS_MIB // 2:
        p.error(f"--memory must be at least {DAEMONS_MIB // 2} (MiB)")
    return args


def watching(pid):
    """The follower has its inotify descriptor, made just before its first look at Slurm's
    tree (a prefetching thread, which the tests wait for, it has not with --prefetch none)."""
    fds = f"/proc/{pid}/fd"
    return any(os.readlink(os.path.join(fds, fd)) == "anon_inode:inotify"
               for fd in os.listdir(fds))


def start_follower(mode, report):
    proc = subprocess.Popen([components.specx_exe(), "share", "--follow-slurm", "--json", report,
                             *MODES[mode]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    end = time.monotonic() + 30
    while not watching(proc.pid):
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            raise RuntimeError(f"specx share --follow-slurm did not start: "
                               f"{proc.communicate()[1].strip()[-300:]}")
        time.sleep(0.05)
    time.sleep(0.5)  # its first look done before the first job is submitted
    return proc


def stop_follower(proc, report):
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode != 128 + signal.SIGTERM or not os.path.exists(report):
        raise RuntimeError(f"specx share --follow-slurm exited {proc.returncode}: "
                           f"{err.strip()[-300:]}")
    with open(report) as f:
        record = json.load(f)
    os.unlink(report)
    return record


def predictions_after_first_rotation(turns):
    """(right, wrong) of the predictions counted in the turns that began once every job had
    had its first."""
    first = {}
    for t in turns:
        first.setdefault(t["job"], t["start_s"])
    after = [t for t in turns if t["counted"] and t["start_s"] > max(first.values(), default=0)]
    right = sum(t["predicted"] == t["job"] for t in after)
    return right, len(after) - right


def run_mode(cluster, mode, job_list, group, out_dir, limit):
    """The jobs submitted at once, MODE's follower beside them: one run's record."""
    share_bench.drop_caches()
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"slurm-{mode}-", dir=out_dir))
    os.chmod(work, 0o755)
    report = os.path.join(out_dir, f"follow-{uuid.uuid4().hex[:8]}.json")
    follower = start_follower(mode, report)
    try:
        faults0 = share_bench.group_stat(group, "pgmajfault")
        t0 = time.monotonic()
        ids = [cluster.sbatch(f"exec {shlex.join(job)}\n", work, f"job{i + 1}")
               for i, job in enumerate(job_list)]
        try:
            done = cluster.wait_done(ids, limit)
        except TimeoutError:
            cluster.run("scancel", *map(str, ids))
            cluster.wait_done(ids, 60)
            done = None
        makespan = time.monotonic() - t0
        faults = share_bench.group_stat(group, "pgmajfault") - faults0
    finally:
        record = stop_follower(follower, report) if follower.poll() is None else None
    if record is None:
        raise RuntimeError("specx share --follow-slurm ended during the run")
    jobs = None if done is None else [
        {"state": done[j]["JobState"], "exit": done[j]["ExitCode"],
         "output": (work / f"job{i + 1}.out").read_text(errors="replace")}
        for i, j in enumerate(ids)]
    right, wrong = predictions_after_first_rotation(record["turns"])
    first_second = [t["major_faults_first_second"] for t in record["turns"]]
    return {"makespan_s": makespan if jobs else None, "stopped_after_s": None if jobs else limit,
            "jobs": jobs, "major_faults": faults,
            "major_faults_first_second": sum(x for x in first_second if x is not None),
            "turns": sum(g["turns"] for g in record["groups"]),
            "predicted_right": right, "predicted_wrong": wrong,
            "prefetched_bytes": sum(g["prefetched_bytes"] for g in record["groups"]),
            "prefetched_unused_bytes": sum(g["prefetched_unused_bytes"]
                                           for g in record["groups"])}


def summarize(records, alone):
    """Per mode, medians over the runs; whether every output was the job's alone, and the
    Slurm states and exit codes of the jobs in each run."""
    out = {}
    for mode, runs in records.items():
        ended = [r for r in runs if r["jobs"]]
        predictions = [r["predicted_right"] / (r["predicted_right"] + r["predicted_wrong"])
                       for r in runs if r["predicted_right"] + r["predicted_wrong"]]
        out[mode] = {
            "makespan_s": share_bench.median([r["makespan_s"] for r in runs])
            if len(ended) == len(runs) else None,
            "stopped_runs": len(runs) - len(ended),
            "major_faults": share_bench.median([r["major_faults"] for r in runs]),
            "major_faults_first_second": share_bench.median([r["major_faults_first_second"]
                                                             for r in runs]),
            "turns": share_bench.median([r["turns"] for r in runs]),
            "predicted_right_share": share_bench.median(predictions),
            "prefetched_mib": share_bench.median([r["prefetched_bytes"] / MIB for r in runs]),
            "prefetched_unused_mib": share_bench.median([r["prefetched_unused_bytes"] / MIB
                                                         for r in runs]),
            "outputs_identical": all(j["output"] == a["output"] for r in ended
                                     for j, a in zip(r["jobs"], alone)) if ended else None,
            "states": sorted({tuple((j["state"], j["exit"]) for j in r["jobs"]) for r in ended}),
        }
    return out


def markdown(result):
    env, summary = result["environment"], result["summary"]
    fmt = share_bench.fmt
    lines = [
        "# specx bench slurm: the share benchmark's jobs under Slurm's gang scheduling", "",
        f"{env['started']} – {env.get('finished', '')}; kernel {env['kernel']}; "
        f"Slurm {env['slurm']}; one node of 1 CPU, slices of {slurm.SLICE_S} s; scale "
        f"`{env['scale']}`: {len(env['jobs'])} jobs of {env['job_mib']} MiB in "
        f"{env['memory_mib']} MiB (slurmd and its jobs); swap: {env['swap']}; {env['runs']} "
        f"run(s) per mode, medians.", "",
        "Alone (memory to spare): " + ", ".join(f"job {i + 1} {a['elapsed_s']:.2f} s"
                                                for i, a in enumerate(result["alone"])) + ".", "",
        "| mode | makespan | vs slurm | major faults | in slices' first second | vs slurm | "
        "turns | next job named right | prefetched | outputs as alone | "
        "Slurm states the same |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = summary.get("slurm", {})
    for mode, m in summary.items():
        vs = (fmt(m["makespan_s"] / base["makespan_s"]) if m["makespan_s"] and
              base.get("makespan_s") else "–")
        first = m["major_faults_first_second"]
        vs_first = (fmt(first / base["major_faults_first_second"]) if first is not None and
                    base.get("major_faults_first_second") else "–")
        same = len(set(m["states"]) | set(base.get("states", []))) == 1
        lines.append(
            f"| {mode} | {fmt(m['makespan_s'])} s{' (' + str(m['stopped_runs']) + ' stopped)' if m['stopped_runs'] else ''} | "
            f"{vs} | {fmt(m['major_faults'], 0)} | {fmt(first, 0)} | {vs_first} | "
            f"{fmt(m['turns'], 0)} | "
            f"{share_bench.fmt_share(m['predicted_right_share'])} | "
            f"{fmt(m['prefetched_mib'], 1)} MiB ({fmt(m['prefetched_unused_mib'], 1)} unused) | "
            f"{ {True: 'yes', False: '**NO**', None: '–'}[m['outputs_identical']]} | "
            f"{'yes' if same else '**NO**'} |")
    lines += ["", "Major faults: of the memory group slurmd and its jobs share. Next job named "
              "right: of the turns that began once every job had had its first (both modes "
              "run the follower; in `slurm` it only watches). In slices' first second: the "
              "major faults of the running job's processes in the first second of each turn, "
              "summed (/proc/PID/stat, as the follower counted them). The CPU share of the "
              "slices is not measured here (specx bench share has it)."]
    return "\n".join(lines) + "\n"


def figure(result, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    summary = result["summary"]
    names = list(summary)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 4))
    ax1.bar(names, [summary[m]["makespan_s"] or 0 for m in names], color="#4477aa")
    ax1.set_ylabel("makespan (s)")
    ax1.set_title("Makespan of the jobs")
    ax2.bar(names, [summary[m]["major_faults"] or 0 for m in names], color="#cc6677")
    ax2.set_ylabel("major page faults")
    ax2.set_title("Major faults")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "results-slurm.png"), dpi=120)
    plt.close(fig)
    return "results-slurm.png"


def save(result, out_dir):
    with open(os.path.join(out_dir, "results-slurm.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, "results-slurm.md"), "w") as f:
        f.write(markdown(result))
    return ["results-slurm.md", "results-slurm.json", figure(result, out_dir)]


def experiment(args, out_dir):
    scale = share_bench.SCALES[args.scale]
    memory = (args.memory or 2 * scale["mib"] + scale["slack"] + DAEMONS_MIB) * MIB
    backing = os.path.join(args.data_dir, "share-disk")
    disk = os.path.join(args.data_dir, ".mnt", "share-disk")
    os.makedirs(backing, exist_ok=True)
    db, script = share_bench.scan_database(backing, scale["mib"], scale["scans"])
    job_list = share_bench.jobs(scale, args.data_dir, disk, db, script)
    env = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "kernel": os.uname().release,
           "scale": args.scale, "job_mib": scale["mib"],
           "memory_mib": memory // MIB, "runs": args.runs, "jobs": job_list}
    result = {"environment": env}
    swap_size = (len(job_list) * scale["mib"] + 64) * MIB
    name = f"specx-bench-slurm-{uuid.uuid4().hex[:8]}"
    with share_bench.devices(args, backing, disk, swap_size) as swap, \
            memcg.limited(name, memory) as group, \
            slurm.cluster(slurmd_preexec=group.add) as cluster:
        env["swap"] = swap
        env["slurm"] = cluster.run("sinfo", "--version").stdout.strip()
        result["alone"] = [share_bench.run_alone(j) for j in job_list]
        limit = args.time_limit or max(share_bench.MIN_TIME_LIMIT_S, math.ceil(
            share_bench.TIME_LIMIT_FACTOR * sum(a["elapsed_s"] for a in result["alone"])))
        env["time_limit_s"] = limit
        modes = list(MODES)
        records = {m: [] for m in modes}
        for r in range(args.runs):
            for mode in modes[r % 2:] + modes[:r % 2]:
                rec = run_mode(cluster, mode, job_list, group, out_dir, limit)
                records[mode].append(rec)
                print(f"[slurm] {mode} run {r + 1}: makespan "
                      f"{share_bench.fmt(rec['makespan_s'])} s, {rec['major_faults']:,} major "
                      f"faults, {rec['prefetched_bytes'] / MIB:.1f} MiB prefetched", flush=True)
        result["runs"] = {m: [r | {"jobs": r["jobs"] and [{k: v for k, v in j.items()
                                                             if k != "output"} for j in r["jobs"]]}
                              for r in rs] for m, rs in records.items()}
        result["summary"] = summarize(records, result["alone"])
    env["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return result


def main(argv):
    args = parse(argv)
    if os.geteuid() != 0:
        print("specx bench slurm: needs root (Slurm's daemons, cgroups, swap space)",
              file=sys.stderr)
        return 1
    out_dir = os.path.abspath(subcommand.prepare_dirs("slurm", args))
    try:
        with datasets.locked(args.data_dir):
            result = experiment(args, out_dir)
    except (slurm.Unavailable, swapspace.Unavailable, RuntimeError, OSError) as e:
        print(f"specx bench slurm: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("specx bench slurm: interrupted", file=sys.stderr)
        return 130
    written = save(result, out_dir)
    print()
    print(markdown(result))
    print(f"Results in {out_dir}: {', '.join(written)}")
    return 0 if all(m["outputs_identical"] is not False
                    for m in result["summary"].values()) else 1
