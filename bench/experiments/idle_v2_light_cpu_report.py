#!/usr/bin/env python3
"""Table (results.md), numbers (runs.json) and figure (results.png) of idle_v2_light_cpu.py's
output saved as run.log, all in one directory.

    bench/experiments/idle_v2_light_cpu_report.py [DIR]"""
import argparse
import json
import os
import statistics

MODES = ["solo", "plain", "chrt-idle", "cg-idle", "specx-idle"]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", default=".", help="the directory holding run.log")
    d = p.parse_args().dir
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = {m: [] for m in MODES + ["alone"]}
    for line in open(os.path.join(d, "run.log")):
        w = line.split()
        if w and w[0] in runs and len(w) > 2 and w[1].isdigit():
            if w[0] == "alone":
                runs["alone"].append(float(w[2]))
            else:
                runs[w[0]].append({"fg_mb_s": float(w[3]), "bg_mb_s": float(w[6])})
    solo = statistics.median(r["fg_mb_s"] for r in runs["solo"])
    alone = statistics.median(runs["alone"])
    rows = []
    for m in MODES:
        fg = statistics.median(r["fg_mb_s"] for r in runs[m]) / solo
        bg = statistics.median(r["bg_mb_s"] for r in runs[m]) / alone if m != "solo" else None
        rows.append({"mode": m, "runs": len(runs[m]), "fg_share_of_solo": round(fg, 3),
                     "bg_share_of_alone": None if bg is None else round(bg, 3)})
    json.dump({"runs": runs, "summary": rows}, open(os.path.join(d, "runs.json"), "w"), indent=1)
    with open(os.path.join(d, "results.md"), "w") as f:
        f.write("| BG run | FG throughput (share of solo) | BG progress (share of alone) |\n|---|---|---|\n")
        for r in rows:
            bg = "–" if r["bg_share_of_alone"] is None else f"{r['bg_share_of_alone']:.3f}"
            f.write(f"| {r['mode']} | {r['fg_share_of_solo']:.3f} | {bg} |\n")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = range(len(MODES))
    ax.bar([i - 0.2 for i in x], [r["fg_share_of_solo"] for r in rows], 0.4, label="FG, share of solo")
    ax.bar([i + 0.2 for i in x], [r["bg_share_of_alone"] or 0 for r in rows], 0.4,
           label="BG, share of alone")
    ax.axhline(0.8, color="grey", lw=0.8, ls="--")
    ax.set_xticks(list(x), MODES)
    ax.set_title("memory-light on cgroup v2 (emulated), medians of 3")
    ax.legend(loc="lower left")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "results.png"), dpi=120)


if __name__ == "__main__":
    main()
