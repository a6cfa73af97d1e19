"""Markdown table and PNG figure from idle_at_rest.py's runs.json."""
import json, statistics, sys
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt
runs_path, out_dir, title = sys.argv[1], sys.argv[2], sys.argv[3]
rows = json.load(open(runs_path))
builds = list(dict.fromkeys(r["build"] for r in rows))
def col(b, k): return [r[k] for r in rows if r["build"] == b and k in r]
lines = [f"# {title}", "",
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
open(f"{out_dir}/results.md", "w").write("\n".join(lines) + "\n")
fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
for i, b in enumerate(builds):
    cpu, rd = col(b, "cpu_s"), col(b, "spinner_run_delay_ms")
    if cpu: ax[0].scatter([i] * len(cpu), [c * 1000 for c in cpu])
    ax[1].scatter([i] * len(rd), rd)
for a, t in zip(ax, ["specx idle's CPU in 10 s (ms)", "pinned spinner's run_delay in 5 s (ms)"]):
    a.set_xticks(range(len(builds))); a.set_xticklabels(builds); a.set_title(t, fontsize=9); a.set_ylim(bottom=0)
fig.tight_layout(); fig.savefig(f"{out_dir}/results.png", dpi=120)
