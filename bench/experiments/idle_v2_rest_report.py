#!/usr/bin/env python3
"""Markdown table (results.md) and PNG figure (results.png) from idle_v2_rest.py's runs file.

    bench/experiments/idle_v2_rest_report.py runs.json OUT_DIR "TITLE\""""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", help="idle_v2_rest.py's runs file")
    p.add_argument("out_dir", help="where results.md and results.png go")
    p.add_argument("title", help="the table's heading")
    a = p.parse_args()
    runs_path, out_dir, title = a.runs, a.out_dir, a.title
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = json.load(open(runs_path))
    builds = list(dict.fromkeys(r["build"] for r in rows))
    def col(b, k): return [r[k] for r in rows if r["build"] == b and k in r]
    def cell(values, scale=1, fmt=".1f", unit=""):
        if not values:
            return "–"
        v = [x * scale for x in values]
        return f"{statistics.median(v):{fmt}}{unit} [{min(v):{fmt}}-{max(v):{fmt}}]"
    lines = [f"# {title}", "",
             "`specx idle -- sleep 10`: its CPU time and voluntary context switches (wait4 rusage, sleep's own"
             " included) and the bound's samples; a C spinner pinned to CPU 0 for 5 s beside `taskset -c 0"
             " specx idle -- sleep 8` started 1.5 s before it: the spinner's `run_delay`"
             " (`/proc/PID/schedstat`); `specx idle --dirty-max 8M -- sh -c 'sleep 2; dd if=/dev/zero"
             " bs=1M count=128'` to /var/tmp, a writer that starts while the bound rests: the report's"
             " `dirty_peak_bytes`. Builds alternate within each round; medians of the rounds, min-max in"
             " brackets.", "",
             "| build | CPU of specx idle in 10 s | wakeups | samples | spinner's run_delay in 5 s | writer's peak (bound 8 MiB) |",
             "|---|---|---|---|---|---|"]
    for b in builds:
        wk, sm = col(b, "wakeups"), col(b, "dirty_samples")
        lines.append(f"| {b} | {cell(col(b, 'cpu_s'), 1000, unit=' ms')} | "
                     f"{statistics.median(wk):.0f} | {statistics.median(sm):.0f} | "
                     f"{cell(col(b, 'spinner_run_delay_ms'), unit=' ms')} | "
                     f"{cell(col(b, 'peak_mib'), fmt='.0f', unit=' MiB')} |"
                     if wk else f"| {b} | – | – | – | {cell(col(b, 'spinner_run_delay_ms'), unit=' ms')} | – |")
    open(f"{out_dir}/results.md", "w").write("\n".join(lines) + "\n")
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.5))
    for i, b in enumerate(builds):
        for a, k, s in ((ax[0], "cpu_s", 1000), (ax[1], "spinner_run_delay_ms", 1), (ax[2], "peak_mib", 1)):
            v = col(b, k)
            if v:
                a.scatter([i] * len(v), [x * s for x in v])
    for a, t in zip(ax, ["specx idle's CPU in 10 s (ms)", "pinned spinner's run_delay in 5 s (ms)",
                         "writer's dirty peak, bound 8 MiB (MiB)"]):
        a.set_xticks(range(len(builds))); a.set_xticklabels(builds); a.set_title(t, fontsize=9); a.set_ylim(bottom=0)
    fig.tight_layout(); fig.savefig(f"{out_dir}/results.png", dpi=120)


if __name__ == "__main__":
    main()
