#!/usr/bin/env python3
"""Side by side: two builds of specx (OLD, e.g. the last release, and NEW), each
`specx bench` run in alternating rounds on the same data, and a table (Markdown, JSON) and
figure of each workload's specx/cold and specx-warm/warm per build, medians over rounds.

    bench/experiments/compare_builds.py OLD_SPECX NEW_SPECX OUT [--rounds N] [--workloads W,...]"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

MODES = "cold,warm,specx,specx-warm"


def run(specx, workloads, out, data_dir):
    subprocess.run([specx, "bench", *workloads, "--scale", "demo", "--runs", "3", "--modes",
                    MODES, "--no-read-calls", "--data-dir", data_dir, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    results = json.loads((pathlib.Path(out) / "results.json").read_text())
    return {w["name"]: {s["mode"]: s["median_s"] for s in w["summary"]}
            for w in results["workloads"]}


def ratios(times):
    return {"specx/cold": times["specx"] / times["cold"],
            "specx-warm/warm": times["specx-warm"] / times["warm"]}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("out")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--workloads", default="grep,xds,sqlite3-index")
    p.add_argument("--data-dir", default="/var/cache/specx-cmp/data")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    workloads = a.workloads.split(",")
    rounds = {"old": [], "new": []}
    for r in range(a.rounds):
        for build in ("old", "new"):
            times = run(getattr(a, build), workloads, out / f"{build}-{r + 1}", a.data_dir)
            rounds[build].append({w: ratios(t) for w, t in times.items()})
            print(f"round {r + 1} {build}: {rounds[build][-1]}", flush=True)
    table = {w: {f: {b: statistics.median(x[w][f] for x in rounds[b]) for b in rounds}
                 for f in ("specx/cold", "specx-warm/warm")} for w in workloads}
    (out / "compare.json").write_text(json.dumps({"rounds": rounds, "medians": table},
                                                 indent=1))
    lines = ["| workload | figure | before | after | after/before |", "|---|---|---|---|---|"]
    for w, figs in table.items():
        for f, v in figs.items():
            lines.append(f"| {w} | {f} | {v['old']:.3f} | {v['new']:.3f} | "
                         f"{v['new'] / v['old']:.3f} |")
    (out / "compare.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{w}\n{f}" for w in table for f in table[w]]
    fig, ax = plt.subplots(figsize=(9, 4))
    xs = range(len(labels))
    for i, build in enumerate(("old", "new")):
        ax.bar([x + (i - 0.5) * 0.38 for x in xs],
               [table[w][f][build] for w in table for f in table[w]], 0.38,
               label="before" if build == "old" else "after")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(list(xs), labels, fontsize=8)
    ax.set_ylabel("time ratio (median of rounds)")
    ax.set_title("specx bench, demo scale: two builds side by side")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=120)


if __name__ == "__main__":
    sys.exit(main())
