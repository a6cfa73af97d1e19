#!/usr/bin/env python3
"""specx idle's dirty bound with files the command writes and closes, old build against new.

A: the writer alone (its elapsed time, the peak of its unwritten data, its holds): a shell loop
writing 512 files of 512 KiB (256 MiB) on /var/tmp, plain / under the old / the new build
(default bound, 32 MiB), and the same loop and a 128 MiB dd under --isolate (--commit never).
A run is stopped after 60 s. B: a foreground of random 4 KiB O_DIRECT reads of a 1 GiB file
on the same disk for 8 s, alone and beside a loop writing 1 MiB files without end (plain,
old, new): its reads, and the background's files written meanwhile. Builds alternate within
each round; runs.json goes to OUT_DIR, idle_closed_files_report.py tables it.

    bench/experiments/idle_closed_files.py OLD_SPECX NEW_SPECX OUT_DIR [ROUNDS]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

BASE = "/var/tmp/specx-closed-bench"
LOOP = "cd {d} && for i in $(seq 512); do head -c 524288 /dev/zero > f$i; done"
DD = "dd if=/dev/zero of={d}/big bs=1M count=128 iflag=fullblock status=none"
ENDLESS = "cd {d} && i=0; while :; do i=$((i+1)); head -c 1048576 /dev/zero > f$i; done"
FG = r'''
import mmap, os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
size = os.fstat(fd).st_size // 4096
buf = mmap.mmap(-1, 4096)
n, stop = 0, time.monotonic() + float(sys.argv[2])
while time.monotonic() < stop:
    os.preadv(fd, [buf], random.randrange(size) * 4096)
    n += 1
print(n)
'''


def fresh_dir():
    d = os.path.join(BASE, "w")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run(["sync"])
    return d


def writer_run(build, case):
    d = fresh_dir()
    cmd = (DD if case == "dd-isolated" else LOOP).format(d=d)
    report = os.path.join(BASE, "r.json")
    argv = ["sh", "-c", cmd]
    if build != "plain":
        iso = ["--isolate", d, "--commit", "never"] if case.endswith("isolated") else []
        argv = [build, "idle", *iso, "--json", report, "--", *argv]
    started = time.monotonic()
    try:
        subprocess.run(argv, timeout=60, capture_output=True)
        elapsed, stopped = time.monotonic() - started, False
    except subprocess.TimeoutExpired:
        elapsed, stopped = 60.0, True
    disk = {}
    if build != "plain" and not stopped:
        with open(report) as f:
            disk = json.load(f)["disk"]
    if stopped and build != "plain":
        subprocess.run([build, "idle", "--", "true"], capture_output=True)  # sweeps what it left
    return {"elapsed_s": elapsed, "stopped": stopped, "peak_mib": disk.get("dirty_peak_bytes", 0) / 2**20,
            "holds": disk.get("dirty_holds"), "held_s": disk.get("dirty_held_s"),
            "closed_flushed": disk.get("closed_files_flushed")}


def fg_run(build, data):
    d = fresh_dir()
    bg = None
    if build != "solo":
        argv = ["sh", "-c", ENDLESS.format(d=d)]
        if build != "plain":
            argv = [build, "idle", "--", *argv]
        bg = subprocess.Popen(argv, start_new_session=True)
        time.sleep(1)
    before = len(os.listdir(d))
    fg = subprocess.run([sys.executable, "-c", FG, data, "8"], capture_output=True, text=True)
    written = len(os.listdir(d)) - before
    if bg:
        os.killpg(bg.pid, 15)
        bg.wait()
    return {"reads": int(fg.stdout.split()[-1]), "bg_files": written if bg else None}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old", help="the old build's specx")
    p.add_argument("new", help="the new build's specx")
    p.add_argument("out", help="where runs.json goes")
    p.add_argument("rounds", type=int, nargs="?", default=3)
    a = p.parse_args()
    OLD, NEW, OUT, ROUNDS = a.old, a.new, a.out, a.rounds
    os.makedirs(BASE, exist_ok=True)
    data = os.path.join(BASE, "fg-1g")
    if not os.path.exists(data):
        with open(data, "wb") as f:
            for _ in range(1024):
                f.write(os.urandom(1 << 20))
    builds = {"plain": "plain", "old": OLD, "new": NEW}
    runs = {"writer": [], "foreground": []}
    for r in range(ROUNDS):
        for case in ("files", "files-isolated", "dd-isolated"):
            for name in (["plain"] if case == "files" else []) + (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                rec = dict(round=r, case=case, build=name, **writer_run(builds[name], case))
                runs["writer"].append(rec)
                print(rec, flush=True)
        order = ["solo", "plain", "old", "new"]
        for name in order[r % 4:] + order[:r % 4]:
            rec = dict(round=r, build=name, **fg_run({"solo": "solo", **builds}[name], data))
            runs["foreground"].append(rec)
            print(rec, flush=True)
    shutil.rmtree(BASE, ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "runs.json"), "w") as f:
        json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
