"""specx idle's own cost at rest, two builds side by side (alternating rounds):
(a) `specx idle -- sleep 10`: its CPU time and voluntary context switches (wait4 rusage,
    which includes sleep's own, ~1 ms and 2 switches);
(b) a spinner pinned to CPU 0 for 5 s beside `taskset -c 0 specx idle -- sleep 8` started
    1.5 s earlier (past its calm second): the spinner's run_delay (/proc/PID/schedstat);
    and the spinner alone."""
import json, os, subprocess, sys, time, statistics

builds = dict(b.split("=", 1) for b in sys.argv[1].split(","))   # name=path,...
rounds = int(sys.argv[2]); out = sys.argv[3]
SPIN = "/tmp/s17/spin"
rows = []

def idle_cost(specx):
    p = subprocess.Popen([specx, "idle", "--", "sleep", "10"])
    _, status, ru = os.wait4(p.pid, 0)
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "wakeups": ru.ru_nvcsw}

def spinner_delay(specx):
    idle = None
    if specx:
        idle = subprocess.Popen(["taskset", "-c", "0", specx, "idle", "--", "sleep", "8"])
        time.sleep(1.5)
    s = subprocess.Popen(["taskset", "-c", "0", SPIN, "5"], stdout=subprocess.PIPE)
    time.sleep(4.9)
    delay = int(open(f"/proc/{s.pid}/schedstat").read().split()[1])
    s.wait()
    if idle:
        idle.wait()
    return delay / 1e6

for r in range(rounds):
    for name, specx in builds.items():
        row = {"round": r, "build": name, **idle_cost(specx), "spinner_run_delay_ms": spinner_delay(specx)}
        rows.append(row); print(json.dumps(row), flush=True)
    row = {"round": r, "build": "alone", "spinner_run_delay_ms": spinner_delay(None)}
    rows.append(row); print(json.dumps(row), flush=True)
json.dump(rows, open(out, "w"), indent=1)
for name in list(builds) + ["alone"]:
    rs = [x for x in rows if x["build"] == name]
    med = lambda k: statistics.median(x[k] for x in rs) if k in rs[0] else None
    print(name, "cpu_s", med("cpu_s"), "wakeups", med("wakeups"), "run_delay_ms", med("spinner_run_delay_ms"),
          "range", min(x["spinner_run_delay_ms"] for x in rs), max(x["spinner_run_delay_ms"] for x in rs))
