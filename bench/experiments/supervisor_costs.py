#!/usr/bin/env python3
"""What an out-of-process supervisor costs: the kernel primitives measured for specx run's
supervisor, before it was built. The C programs are in programs/supervisor/ (their headers
say what each does); this drives them in a work directory, as the figures of the
supervisor-costs results' REPORT.txt were made:

    supervisor_costs.py build                       compile into DIR, make data.bin (64 MiB)
                                                    and data.bin.0-7
    supervisor_costs.py interleave REPS PASSES CPULIST|none MODE...
                                                    round-robin over sup's MODEs, REPS rounds of
                                                    "sup MODE ./reader data.bin PASSES"; median,
                                                    min, max ns per pread and sup CPU per run
    supervisor_costs.py sampler REPS PASSES NTHREADS
                                                    "sampler 0" against "sampler 1000" around
                                                    "reader data.bin PASSES NTHREADS"
    supervisor_costs.py kill MODE                   SIGKILL the supervisor 0.5 s into a long run
                                                    and report what happened to its target
                                                    (run it under DIR/reap to see the target end)
    DIR/clonebench MIB REPS [hugepage] [cloneptrace]   (run in DIR) a clone injected with
                                                    ptrace into a stopped target

Raw lines go to DIR/raw_*.txt as before. Needs a C compiler with static glibc; `kill` and
`clonebench` need ptrace rights over their children (root, or Yama ptrace_scope 0)."""
import argparse
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import time

SOURCES = pathlib.Path(__file__).resolve().parent / "programs" / "supervisor"
STATIC = ("reader", "busy")   # the targets a preload runtime cannot see


def build(d):
    d.mkdir(parents=True, exist_ok=True)
    for src in sorted(SOURCES.glob("*.c")):
        flags = ["-static"] if src.stem in STATIC else []
        subprocess.run(["cc", "-O2", "-pthread", *flags, "-o", str(d / src.stem), str(src)],
                       check=True)
    data = d / "data.bin"
    if not data.exists():
        with open(data, "wb") as f:
            for _ in range(64):
                f.write(os.urandom(1 << 20))
    for i in range(8):
        if not (d / f"data.bin.{i}").exists():
            shutil.copyfile(data, d / f"data.bin.{i}")


def warm(d, *names):
    for name in names:
        (d / name).read_bytes()


def field(line, name):
    m = re.search(rf"\b{name}=([0-9.]+)", line)
    return float(m.group(1)) if m else None


def run_line(d, argv):
    proc = subprocess.run(argv, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return proc.stdout.replace("\n", " ")


def spread(values):
    return statistics.median(values), min(values), max(values)


def interleave(d, reps, passes, pin, modes):
    prefix = [] if pin == "none" else ["taskset", "-c", pin]
    warm(d, "data.bin")
    lines = []
    for _ in range(reps):
        for m in modes:
            argv = [*prefix, "./sup", m, "./reader", "data.bin", str(passes)]
            lines.append(f"{m} {run_line(d, argv)}")
    (d / f"raw_il_{pin}_{'_'.join(modes)}_p{passes}.txt").write_text("\n".join(lines) + "\n")
    for m in modes:
        mine = [line for line in lines if line.startswith(m + " ")]
        ns = [field(line, "ns_per_pread") for line in mine]
        cpu = [field(line, "sup_cpu_ms") for line in mine]
        events = sorted({field(line, "events") for line in mine} - {None})
        print(f"{m:9s} pin={pin:4s} n={len(ns)} passes={passes} ns/pread median=%8.1f "
              f"min=%8.1f max=%8.1f  sup_cpu_ms/run median=%7.1f events/run=%s"
              % (*spread(ns), statistics.median(cpu), " ".join(f"{e:.0f}" for e in events)))


def sampler(d, reps, passes, nthreads):
    warm(d, "data.bin", *(f"data.bin.{i}" for i in range(8)))
    lines = []
    for _ in range(reps):
        for period in (0, 1000):
            out = run_line(d, ["./sampler", str(period), "./reader", "data.bin", str(passes),
                               str(nthreads)])
            lines.append(f"P{period} {out}")
    (d / f"raw_sampler_p{passes}_t{nthreads}.txt").write_text("\n".join(lines) + "\n")
    for period in (0, 1000):
        mine = [line for line in lines if line.startswith(f"P{period} ")]
        g = lambda name: [v for v in (field(line, name) for line in mine) if v is not None]
        elapsed = [v / 1e6 for v in g("elapsed_ns")]
        med = lambda name: statistics.median(g(name)) if g(name) else float("nan")
        print(f"threads={nthreads} passes={passes} period_us={period:<4d} n={len(elapsed)} "
              "reader_elapsed_ms median=%7.1f (min %7.1f max %7.1f) ns/pread=%6.1f | sampler "
              "cpu_ms_per_s median=%6.2f us_per_tick=%6.2f ticks=%s late=%s"
              % (*spread(elapsed), med("ns_per_pread"), med("cpu_ms_per_s"),
                 med("us_per_tick"), med("ticks"), med("late")))


def proc_state(pid):
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[:2]   # state, ppid


def tracer(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return " ".join(line.replace("\t", " ") for line in status.splitlines()
                    if line.startswith(("TracerPid", "Seccomp:")))


def kill(d, mode):
    out = d / f"kill_{mode}.out"
    with open(out, "w") as f:
        sup = subprocess.Popen(["./sup", mode, "./reader", "data.bin", "50"], cwd=d,
                               stdout=f, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    target = int(re.search(r"target pid=(\d+)", out.read_text()).group(1))
    print(f"supervisor={sup.pid} target={target}; before kill: "
          f"state={proc_state(target)[0]} {tracer(target)}")
    sup.kill()
    sup.wait()
    for t in (0.1, 1):
        time.sleep(t)
        try:
            state, ppid = proc_state(target)
            wchan = pathlib.Path(f"/proc/{target}/wchan").read_text()
            print(f"after +{t}s: target alive, state={state} ppid={ppid} wchan={wchan} "
                  f"{tracer(target)}")
        except OSError:
            print(f"after +{t}s: target gone")
    print("--- output file:")
    print(out.read_text(), end="")
    try:
        if proc_state(target)[0] != "Z":
            print(f"killing leftover target {target}")
            os.kill(target, signal.SIGKILL)
    except OSError:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=pathlib.Path, default=pathlib.Path("/tmp/supcost"),
                   help="the work directory (default: /tmp/supcost)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    il = sub.add_parser("interleave")
    il.add_argument("reps", type=int)
    il.add_argument("passes", type=int)
    il.add_argument("pin", help="a taskset CPU list, or none")
    il.add_argument("modes", nargs="+")
    sa = sub.add_parser("sampler")
    sa.add_argument("reps", type=int)
    sa.add_argument("passes", type=int)
    sa.add_argument("nthreads", type=int)
    ki = sub.add_parser("kill")
    ki.add_argument("mode")
    a = p.parse_args()
    if a.command == "build":
        build(a.dir)
    elif a.command == "interleave":
        interleave(a.dir, a.reps, a.passes, a.pin, a.modes)
    elif a.command == "sampler":
        sampler(a.dir, a.reps, a.passes, a.nthreads)
    else:
        kill(a.dir, a.mode)


if __name__ == "__main__":
    main()
