#!/usr/bin/env python3
"""Where does the BG lose progress in memory-light on v2? Runs the bench's memory-light pair
(bench/specx_bench/idle_bench.py, full scale) with the BG plain, under chrt --idle (SCHED_IDLE
only), in a leaf with cpu.idle=1 only, and under specx idle; plus the BG alone. Prints BG
progress as a share of alone, FG share of solo; idle_v2_light_cpu_report.py makes the table
and figure from that output saved as run.log. Needs root and cgroup v2 (specx bench idle's
setup); SPECX_EXE names the specx to run.

    bench/experiments/idle_v2_light_cpu.py [RUNS [MODE,...]] > run.log"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import types

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from specx_bench import idle_bench as ib  # noqa: E402

ALL_MODES = "solo,plain,chrt-idle,cg-idle,specx-idle"
orig = ib.background_argv


def background_argv(mode, setup, report):
    if mode == "chrt-idle":
        return [*setup["wrap"], "chrt", "--idle", "0", *setup["bg"]]
    if mode == "cg-idle":
        return [*setup["wrap"], *setup["bg"]]
    return orig(mode, setup, report)


def cpu_idle(group, on):
    leaf = group.leaf("bg")
    sub = os.path.join(group.path, "cgroup.subtree_control")
    if on and "cpu" not in open(sub).read().split():
        with open(sub, "w") as f:
            f.write("+cpu")
    path = os.path.join(leaf.path, "cpu.idle")
    if os.path.exists(path):
        with open(path, "w") as f:
            f.write("1" if on else "0")
    elif on:
        raise SystemExit(f"no {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", type=int, nargs="?", default=3)
    p.add_argument("modes", nargs="?", default=ALL_MODES)
    p.add_argument("--data-dir", default="/var/tmp/specx-data")
    p.add_argument("--out", default="/var/tmp/light-v2", help="the pairs' own records")
    a = p.parse_args()
    RUNS, MODES = a.runs, a.modes.split(",")
    ib.background_argv = background_argv
    args = types.SimpleNamespace(data_dir=a.data_dir, preset="hdd")
    scale = ib.SCALES["full"]
    out = a.out; os.makedirs(out, exist_ok=True)
    res = {m: [] for m in MODES}; alone = []
    with ib.experiment_setup("memory-light", scale, args) as setup:
        g = setup["group"]
        for r in range(RUNS):
            for m in MODES[r % len(MODES):] + MODES[:r % len(MODES)]:
                ib.drop_caches()
                if m == "cg-idle": cpu_idle(g, True)
                try:
                    rec = ib.run_pair(m, setup, out)
                finally:
                    if m == "cg-idle": cpu_idle(g, False)
                res[m].append(rec)
                print(m, r, f"fg {rec['fg_rate']/1e6:.1f} MB/s", f"bg {(rec['bg_rate'] or 0)/1e6:.1f} MB/s", flush=True)
            ib.drop_caches()
            rate = int(subprocess.run([*setup["wrap"], *setup["bg_alone"]], capture_output=True, text=True,
                                   preexec_fn=g.leaf("bg").add, timeout=600).stdout.split()[-1]) / scale["seconds"]
            alone.append(rate); print("alone", r, f"{rate/1e6:.1f} MB/s", flush=True)
    solo = statistics.median(x["fg_rate"] for x in res.get("solo", [])) if "solo" in res else None
    A = statistics.median(alone)
    for m in MODES:
        fg = statistics.median(x["fg_rate"] for x in res[m])
        line = f"{m:12s} FG {fg/solo if solo else float('nan'):.3f} of solo"
        if m != "solo":
            line += f"  BG {statistics.median(x['bg_rate'] for x in res[m])/A:.3f} of alone"
        print(line)


if __name__ == "__main__":
    main()
