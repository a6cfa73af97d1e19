#!/usr/bin/env python3
"""The dirty bound's rest where the kernel gives no usage thresholds (v2), measured on this
machine's v1 with builds whose usage watch is made to fail (as on v2): the old build (10 ms
clock for good), the new one (rests on the memory control's 50 ms samples), and the new one
as built (v1, the watch). Builds alternate within each round.
(a) `specx idle --json R -- sleep 10`: CPU and voluntary switches (wait4 rusage), dirty_samples;
(b) a spinner pinned to CPU 0 for 5 s beside `taskset -c 0 specx idle -- sleep 8` started
    1.5 s earlier: the spinner's run_delay (/proc/PID/schedstat), as idle_at_rest.py;
(c) `specx idle --dirty-max 8M -- sh -c 'sleep 2; dd ... bs=1M count=128'` (a writer that
    starts while the bound rests): dirty_peak_bytes, holds, elapsed.
idle_v2_rest_report.py makes the table and figure from the runs file.

    bench/experiments/idle_v2_rest.py old-v2=OLD/build/specx,new-v1=build/specx 5 runs.json"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from idle_at_rest import spinner, spinner_delay


def report_of(argv):
    with tempfile.NamedTemporaryFile(suffix=".json") as r:
        p = subprocess.Popen([argv[0], "idle", "--json", r.name, *argv[1:]])
        _, status, ru = os.wait4(p.pid, 0)
        return json.load(open(r.name)), ru


def at_rest(specx):
    rep, ru = report_of([specx, "--", "sleep", "10"])
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "wakeups": ru.ru_nvcsw,
            "dirty_samples": rep["disk"]["dirty_samples"]}


def writer_after_rest(specx):
    target = "/var/tmp/v2rest-dd"
    rep, _ = report_of([specx, "--dirty-max", "8M", "--", "sh", "-c",
                        f"sleep 2; dd if=/dev/zero of={target} bs=1M count=128 status=none"])
    os.unlink(target)
    d = rep["disk"]
    return {"peak_mib": d["dirty_peak_bytes"] / 2**20, "holds": d["dirty_holds"],
            "elapsed_s": rep["elapsed_s"]}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("builds", help="NAME=PATH,... of the specx executables to compare")
    p.add_argument("rounds", type=int)
    p.add_argument("out", help="the runs file (JSON) to write")
    p.add_argument("--spin", help="a built programs/spin.c (default: built here)")
    a = p.parse_args()
    builds = dict(b.split("=", 1) for b in a.builds.split(","))
    rows = []
    with spinner(a.spin) as spin:
        for r in range(a.rounds):
            for name, specx in builds.items():
                subprocess.run(["sync"])
                row = {"round": r, "build": name, **at_rest(specx),
                       "spinner_run_delay_ms": spinner_delay(specx, spin), **writer_after_rest(specx)}
                rows.append(row); print(json.dumps(row), flush=True)
            row = {"round": r, "build": "alone", "spinner_run_delay_ms": spinner_delay(None, spin)}
            rows.append(row); print(json.dumps(row), flush=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    for name in list(builds) + ["alone"]:
        rs = [x for x in rows if x["build"] == name]
        summary = {k: (statistics.median(x[k] for x in rs), min(x[k] for x in rs), max(x[k] for x in rs))
                   for k in rs[0] if k not in ("round", "build")}
        print(name, json.dumps(summary))


if __name__ == "__main__":
    main()
