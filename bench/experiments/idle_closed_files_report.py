#!/usr/bin/env python3
"""Tables (results.md) and figure (results.png) of idle_closed_files.py's runs.json, in the
same directory.

    bench/experiments/idle_closed_files_report.py OUT_DIR"""
import argparse
import json
import os
import statistics

med = statistics.median


def cell(values, fmt):
    return f"{fmt.format(med(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", help="the directory holding runs.json")
    OUT = p.parse_args().out_dir
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = json.load(open(os.path.join(OUT, "runs.json")))
    lines = ["# specx idle: files written and closed, old build against new", "",
             "Made by idle_closed_files.py, tabled by idle_closed_files_report.py; medians of the rounds, "
             "min-max in brackets. A run stopped at 60 s counts 60 s.", "",
             "## The writer alone", "",
             "| case | build | elapsed | stopped at 60 s | peak unwritten (MiB) | holds | held (s) | closed files written back |",
             "|---|---|---|---|---|---|---|---|"]
    cases = ["files", "files-isolated", "dd-isolated"]
    for case in cases:
        for build in ("plain", "old", "new"):
            rs = [r for r in runs["writer"] if r["case"] == case and r["build"] == build]
            if not rs:
                continue
            done = [r for r in rs if not r["stopped"]]
            stat = lambda k, f: cell([r[k] for r in done], f) if done and build != "plain" else "–"
            lines.append(f"| {case} | {build} | {cell([r['elapsed_s'] for r in rs], '{:.2f}')} s | "
                         f"{len(rs) - len(done)} of {len(rs)} | {stat('peak_mib', '{:.0f}')} | "
                         f"{stat('holds', '{:.0f}')} | {stat('held_s', '{:.2f}')} | "
                         f"{stat('closed_flushed', '{:.0f}')} |")
    solo = {r["round"]: r["reads"] for r in runs["foreground"] if r["build"] == "solo"}
    lines += ["", "## A foreground reading beside an endless writer of 1 MiB files", "",
              "| background | foreground reads, share of solo | background files written in 8 s |",
              "|---|---|---|"]
    shares = {}
    for build in ("solo", "plain", "old", "new"):
        rs = [r for r in runs["foreground"] if r["build"] == build]
        shares[build] = [r["reads"] / solo[r["round"]] for r in rs]
        files = cell([r["bg_files"] for r in rs], "{:.0f}") if build != "solo" else "–"
        lines.append(f"| {build} | {cell(shares[build], '{:.2f}')} | {files} |")
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.25
    for i, build in enumerate(("plain", "old", "new")):
        xs, ys = [], []
        for j, case in enumerate(cases):
            rs = [r["elapsed_s"] for r in runs["writer"] if r["case"] == case and r["build"] == build]
            if rs:
                xs.append(j + (i - 1) * width)
                ys.append(med(rs))
        a.bar(xs, ys, width, label=build)
    a.set_xticks(range(len(cases)), cases)
    a.set_yscale("log")
    a.set_ylabel("writer's elapsed time, s (60: stopped)")
    a.legend()
    builds = ["plain", "old", "new"]
    b.bar(builds, [med(shares[x]) for x in builds])
    b.set_ylabel("foreground reads, share of solo")
    b.set_ylim(0, 1.1)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "results.png"), dpi=100)


if __name__ == "__main__":
    main()
