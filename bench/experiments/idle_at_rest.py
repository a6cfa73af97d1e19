#!/usr/bin/env python3
"""specx idle's own cost at rest, two or more builds side by side (alternating rounds):
(a) `specx idle -- sleep 10`: its CPU time and voluntary context switches (wait4 rusage,
    which includes sleep's own, ~1 ms and 2 switches);
(b) a spinner pinned to CPU 0 for 5 s beside `taskset -c 0 specx idle -- sleep 8` started
    1.5 s earlier (past its calm second): the spinner's run_delay (/proc/PID/schedstat);
    and the spinner alone.

The spinner is programs/spin.c, built into a temporary directory when none is given.
idle_at_rest_report.py makes the table and figure from the runs file.

    bench/experiments/idle_at_rest.py old=OLD/build/specx,new=NEW/build/specx 5 runs.json"""
import argparse
import contextlib
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

SPIN_SOURCE = pathlib.Path(__file__).resolve().parent / "programs" / "spin.c"


def idle_cost(specx):
    p = subprocess.Popen([specx, "idle", "--", "sleep", "10"])
    _, status, ru = os.wait4(p.pid, 0)
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "wakeups": ru.ru_nvcsw}


def spinner_delay(specx, spin):
    idle = None
    if specx:
        idle = subprocess.Popen(["taskset", "-c", "0", specx, "idle", "--", "sleep", "8"])
        time.sleep(1.5)
    s = subprocess.Popen(["taskset", "-c", "0", spin, "5"], stdout=subprocess.PIPE)
    time.sleep(4.9)
    delay = int(open(f"/proc/{s.pid}/schedstat").read().split()[1])
    s.wait()
    if idle:
        idle.wait()
    return delay / 1e6


@contextlib.contextmanager
def spinner(given):
    """GIVEN, or programs/spin.c built (cc -O2) into a directory removed afterwards."""
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="specx-spin-") as d:
        subprocess.run(["cc", "-O2", "-o", f"{d}/spin", str(SPIN_SOURCE)], check=True)
        yield f"{d}/spin"


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
                row = {"round": r, "build": name, **idle_cost(specx),
                       "spinner_run_delay_ms": spinner_delay(specx, spin)}
                rows.append(row); print(json.dumps(row), flush=True)
            row = {"round": r, "build": "alone", "spinner_run_delay_ms": spinner_delay(None, spin)}
            rows.append(row); print(json.dumps(row), flush=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    for name in list(builds) + ["alone"]:
        rs = [x for x in rows if x["build"] == name]
        med = lambda k: statistics.median(x[k] for x in rs) if k in rs[0] else None
        print(name, "cpu_s", med("cpu_s"), "wakeups", med("wakeups"), "run_delay_ms",
              med("spinner_run_delay_ms"), "range", min(x["spinner_run_delay_ms"] for x in rs),
              max(x["spinner_run_delay_ms"] for x in rs))


if __name__ == "__main__":
    main()
