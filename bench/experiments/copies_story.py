#!/usr/bin/env python3
"""What specx run's copies did on a program, cold: one run per workload of `specx bench` (its
full-scale data set, which must exist: run the workload in `specx bench` once first) on slowfs
paper2003, under `specx run -v --json` with the history off, and per program the stalls, the
copies made, how each ended (from -v), their predictions and the prefetches used. Counts, not
times: one run each. Needs root (mount, drop_caches).

    bench/experiments/copies_story.py OUT.json WORKLOAD... [--specx PATH] [--data-dir DIR]"""
import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from specx_bench.workloads import WORKLOADS  # noqa: E402


def drop_caches():
    subprocess.run(["sync"], check=True)
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def endings(stderr):
    """How the copies ended, from the runtime's -v lines."""
    ends = collections.Counter()
    for line in stderr.splitlines():
        if "ended:" in line:
            ends[line.split("ended:", 1)[1].strip()] += 1
        if "no more copies" in line:
            ends["retired after dry copies"] += 1
    return dict(ends)


def story(report, stderr):
    total = report["total"]
    worst = sorted(report["processes"], key=lambda p: -p["stall_ns"])[:3]
    return {
        "elapsed_s": report["elapsed_s"], "mechanism": report["mechanism"],
        "supervisor": report.get("supervisor"), "stalls": total["stalls"],
        "stall_s": total["stall_ns"] / 1e9, "processes": total["processes"],
        "copies": total["spec_created"], "dry": total["spec_dry"],
        "stuck_ended": total["spec_stuck_ended"], "predictions": total["spec_predictions"],
        "prefetches": total["spec_prefetches"], "used": total["spec_used"],
        "major_faults": total["majflt"], "flags": total["flags"], "ended": endings(stderr),
        "most_stalled": [{"argv0": p["argv0"], "stalls": p["stalls"],
                          "stall_s": p["stall_ns"] / 1e9, "copies": p["spec_created"],
                          "dry": p["spec_dry"], "flags": p["flags"]} for p in worst],
    }


def run_one(specx, workload, data_dir, mountpoint):
    params = workload.scales["full"]
    data = pathlib.Path(data_dir) / f"{workload.name}-full"
    if not data.is_dir():
        sys.exit(f"copies_story: no data set {data}: run `specx bench {workload.name}` first")
    subprocess.run([specx, "slowfs", "-p", "paper2003", "-d", str(data), mountpoint],
                   check=True)
    scratch = tempfile.mkdtemp(prefix="specx-copies-story-")
    try:
        cmd = workload.command(mountpoint, params, scratch)
        report = os.path.join(scratch, "report.json")
        drop_caches()
        proc = subprocess.run([specx, "run", "-v", "--json", report, "--", *cmd.argv],
                              cwd=cmd.cwd or scratch, capture_output=True, text=True,
                              env=dict(os.environ, SPECX_RUN_HISTORY="off"))
        return story(json.loads(pathlib.Path(report).read_text()), proc.stderr)
    finally:
        subprocess.run([specx, "slowfs", "--unmount", mountpoint], check=False)
        subprocess.run(["rm", "-rf", scratch], check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("workloads", nargs="+", choices=sorted(WORKLOADS))
    ap.add_argument("--specx", default=str(HERE.parent.parent / "build" / "specx"))
    ap.add_argument("--data-dir", default="/var/cache/specx/bench")
    args = ap.parse_args()
    mountpoint = tempfile.mkdtemp(prefix="specx-copies-story-mnt-")
    try:
        result = {}
        for name in args.workloads:
            result[name] = run_one(args.specx, WORKLOADS[name], args.data_dir, mountpoint)
            print(name, json.dumps(result[name]), flush=True)
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    finally:
        os.rmdir(mountpoint)


if __name__ == "__main__":
    main()
