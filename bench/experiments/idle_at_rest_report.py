#!/usr/bin/env python3
"""Markdown table (results.md) and PNG figure (results.png) from idle_at_rest.py's runs file.

    bench/experiments/idle_at_rest_report.py runs.json OUT_DIR "TITLE\""""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", help="idle_at_rest.py's runs file")
    p.add_argument("out_dir", help="where results.md and results.png go")
    p.add_argument("title", help="the table's heading")
    a = p.parse_args()
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = json.load(open(a.runs))
    builds = list(dict.fromkeys(r["build"] for r in rows))
    def col(b, k): return [r[k] for r in rows if r["build"] == b and k in r]
    lines = [f"# {a.title}", "",
             "`specx idle -- sleep 10`: its CPU time and voluntary context switches (wait4 rusage, sleep's own"
             " included); a C spinner pinned to CPU 0 for 5 s beside `taskset -c 0 specx idle -- sleep 8` started"
             " 1.5 s before it: the spinner's `run_delay` (`/proc/PID/schedstat`). Builds alternate within each"
             " round; medians of the rounds, min-max in brackets.", "",
             "| build | CPU of specx idle in 10 s | wakeups | spinner's run_delay in 5 s |", "|---|---|---|---|"]
    for b in builds:
        cpu, wk, rd = col(b, "cpu_s"), col(b, "wakeups"), col(b, "spinner_run_delay_ms")
        c = f"{statistics.median(cpu)*1000:.1f} ms [{min(cpu)*1000:.1f}-{max(cpu)*1000:.1f}]" if cpu else "–"
        w = f"{statistics.median(wk):.0f}" if wk else "–"
        lines.append(f"| {b} | {c} | {w} | {statistics.median(rd):.1f} ms [{min(rd):.1f}-{max(rd):.1f}] |")
    open(f"{a.out_dir}/results.md", "w").write("\n".join(lines) + "\n")
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    for i, b in enumerate(builds):
        cpu, rd = col(b, "cpu_s"), col(b, "spinner_run_delay_ms")
        if cpu: ax[0].scatter([i] * len(cpu), [c * 1000 for c in cpu])
        ax[1].scatter([i] * len(rd), rd)
    for x, t in zip(ax, ["specx idle's CPU in 10 s (ms)", "pinned spinner's run_delay in 5 s (ms)"]):
        x.set_xticks(range(len(builds))); x.set_xticklabels(builds); x.set_title(t, fontsize=9); x.set_ylim(bottom=0)
    fig.tight_layout(); fig.savefig(f"{a.out_dir}/results.png", dpi=120)


if __name__ == "__main__":
    main()
