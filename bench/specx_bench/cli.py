"""Command line of `specx bench`: the paper's experiments (Fraser & Chang 2003, §3–4) on real
programs over slowfs, with results as Markdown, JSON and a PNG chart."""
import argparse
import datetime
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

from specx_support.unwind import sigterm_unwinds

from specx_support import components
from . import datasets, modes, report, runner, validate
from .workloads import WORKLOADS

VALIDATION = "slowfs"
DATA_DIR = datasets.DEFAULT_DATA_DIR
DEMO_NOTE = ("Demo: grep over a smaller tree (1,500 files) to keep it short; "
             "`specx bench grep` runs the full 8,000-file benchmark.")


HELP = """\
Usage: specx bench [OPTIONS] [WORKLOAD...]
       specx bench --demo
       specx bench --list

Run real I/O-bound programs over an emulated slow device (slowfs) in several
modes and report elapsed times like the paper's Table 1 and Fig. 2, as
Markdown, JSON and PNG. Needs root (it drops the page cache and mounts slowfs).

Workloads (default: all; --list says what each one runs):
{names}

Device:
  -p, --preset NAME            slowfs device preset (default paper2003)
      --slowfs-args ARGS       more slowfs options, one string,
                               e.g. --slowfs-args='--latency-ms 1'

Runs:
      --modes LIST             comma-separated modes, in order ({modes};
                               default {default_modes}, less those not built)
      --runs N                 timed runs per workload and mode (default 3, as
                               in the paper; 1 with --demo)
      --warm-runs N            timed runs of the warm-cache modes, which are short
                               and noisy (default 3 x --runs)
      --scale full|demo|test   data set sizes (default full; demo with --demo)
      --no-read-calls          skip the extra traced run that counts read calls
      --demo                   short demonstration: grep on a small tree, 1 run
                               per mode, nothing left behind

Files:
      --out DIR                results directory
                               (default ./bench-results/<UTC timestamp>)
      --data-dir DIR           where data sets are generated and cached
                               (default {data_dir}; with --demo a temporary one)

  -l, --list                   list workloads and modes, then exit
  -h, --help                   show this help

See specx-bench(1).
"""


class Parser(argparse.ArgumentParser):
    """argparse with the conventions of specx's C commands: a hand-laid help in their style and
    one error line prefixed with the command, exit status 2."""

    def format_help(self):
        names = textwrap.fill(", ".join([VALIDATION, *WORKLOADS]), width=78,
                              initial_indent="  ", subsequent_indent="  ")
        return HELP.format(names=names,
                           modes=", ".join(modes.MODES),
                           default_modes=",".join(modes.DEFAULT_MODES), data_dir=DATA_DIR)

    def error(self, message):
        self.exit(2, f"specx bench: {message}; see 'specx bench --help'\n")


def build_parser():
    p = Parser(prog="specx bench", add_help=False)
    p.add_argument("-h", "--help", action="help")
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD")
    p.add_argument("-p", "--preset", default="paper2003", metavar="NAME")
    p.add_argument("--slowfs-args", default="", metavar="ARGS")
    p.add_argument("--runs", type=int, metavar="N")
    p.add_argument("--warm-runs", type=int, metavar="N")
    p.add_argument("--modes", metavar="LIST")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--data-dir", metavar="DIR")
    p.add_argument("--scale", choices=("full", "demo", "test"))
    p.add_argument("--no-read-calls", dest="read_calls", action="store_false")
    p.add_argument("-l", "--list", action="store_true")
    p.add_argument("--demo", action="store_true")
    return p


def print_list():
    workloads = [(VALIDATION, validate.DeviceData.description)] + [
        (w.name, w.description + (f" (paper: {w.paper})" if w.paper else ""))
        for w in WORKLOADS.values()]
    mode_rows = [(m.name, m.description + (f" [not available: needs {m.needs}]"
                                           if m.missing() else ""))
                 for m in modes.MODES.values()]
    width = max(len(name) for name, _ in workloads + mode_rows)
    for title, rows in (("Workloads", workloads), ("Modes", mode_rows)):
        print(f"{title}:")
        for name, text in rows:
            print(f"  {name:<{width}}  {text}")


def fail(message):
    print(f"specx bench: {message}", file=sys.stderr)
    return 2


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def environment(args, cfg):
    with open("/proc/meminfo") as f:
        meminfo = f.readline().split()
    specx = subprocess.run([components.specx_exe(), "--version"], capture_output=True,
                           text=True).stdout.strip()
    return {"started": now(), "command": ["specx", "bench", *sys.argv[1:]],
            "specx": specx, "kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "memory_kb": int(meminfo[1]), "preset": args.preset,
            "slowfs_options": cfg.slowfs_options, "runs": cfg.runs,
            "warm_runs": cfg.warm_runs,
            "modes": [m.name for m in cfg.modes], "scale": cfg.scale, "data_dir": cfg.data_dir}


def select_modes(args):
    if not args.modes:
        return modes.default_modes(), None
    try:
        chosen = modes.parse(args.modes)
    except ValueError as e:
        return None, str(e)
    missing = next((m.missing() for m in chosen if m.missing()), None)
    return chosen, missing


def save(results, out):
    """Writes the results files; returns their names."""
    from . import plot   # matplotlib is slow to import: only when there is something to draw
    # A workload interrupted before its data set was ready has nothing to report.
    results["workloads"] = [w for w in results["workloads"] if "runs" in w]
    for w in results["workloads"]:
        w["summary"] = runner.summarize(w["runs"], results["environment"]["modes"])
    report.write(results, os.path.join(out, "results.md"), os.path.join(out, "results.json"))
    written = ["results.md", "results.json"]
    if results["workloads"] and plot.elapsed_chart(results["workloads"],
                                                   os.path.join(out, "results.png")):
        written.append("results.png")
    if plot.refork_chart(results["workloads"], os.path.join(out, "results-refork.png")):
        written.append("results-refork.png")
    if results.get("validation"):
        plot.validation_chart(results["validation"], os.path.join(out, "results-slowfs.png"))
        written.append("results-slowfs.png")
    return written


def run_all(names, cfg, results):
    """Runs the named workloads, saving results after each; returns True when every run
    succeeded and every device check passed."""
    log_dir = os.path.join(cfg.out_dir, "logs")
    os.makedirs(log_dir, exist_ok=True)
    ok = True
    for name in names:
        if name == VALIDATION:
            results["validation"] = validate.run(cfg)
            ok &= all(c["passed"] for c in results["validation"]["checks"])
        elif skip := WORKLOADS[name].unavailable(cfg.data_dir):
            print(f"specx bench: skipping {name}: {skip}", flush=True)
        else:
            w = {}
            results["workloads"].append(w)
            runner.bench_workload(WORKLOADS[name], cfg, log_dir, w)
            ok &= all(r["ok"] for r in w["runs"])
        save(results, cfg.out_dir)
    return ok


class Usage(Exception):
    """A bad command line: reported in one line, exit status 2."""


def complete(args):
    """Fills in the defaults that depend on --demo and checks the arguments; returns the modes
    and the slowfs options. Raises Usage."""
    if args.demo:
        args.workloads = args.workloads or ["grep"]
    args.scale = args.scale or ("demo" if args.demo else "full")
    args.runs = args.runs if args.runs is not None else (1 if args.demo else 3)
    unknown = [n for n in args.workloads if n != VALIDATION and n not in WORKLOADS]
    if unknown:
        raise Usage(f"unknown workload '{unknown[0]}'; see 'specx bench --list'")
    args.warm_runs = args.warm_runs if args.warm_runs is not None else 3 * args.runs
    for name, value in (("--runs", args.runs), ("--warm-runs", args.warm_runs)):
        if value < 1:
            raise Usage(f"{name} must be at least 1")
    mode_list, problem = select_modes(args)
    if problem:
        raise Usage(problem)
    try:
        extra = shlex.split(args.slowfs_args)
    except ValueError as e:
        raise Usage(f"--slowfs-args: {e}") from None
    return mode_list, ["--preset", args.preset, *extra]


def directories(args):
    """The data and results directories, and those of them that --demo removes again."""
    temporary = []
    if args.demo and not args.out:
        args.out = tempfile.mkdtemp(prefix="specx-bench-demo-out-")
        temporary.append(args.out)
    if args.demo and not args.data_dir:
        args.data_dir = tempfile.mkdtemp(prefix="specx-bench-demo-data-", dir="/var/tmp")
        os.chmod(args.data_dir, 0o755)   # the postgres user must reach data sets
        temporary.append(args.data_dir)
    data_dir = os.path.abspath(args.data_dir or DATA_DIR)
    datasets.check_data_dir(data_dir)
    out = args.out or os.path.join(
        "bench-results", datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    os.makedirs(out, exist_ok=True)
    return data_dir, out, temporary


def main(argv=None):
    with sigterm_unwinds():
        return run_command(sys.argv[1:] if argv is None else argv)


def run_command(argv):
    # The modes measure each run on its own: with a command's history (docs/design/history.md)
    # every run of a workload after the first would start with what the one before it read.
    os.environ.setdefault("SPECX_RUN_HISTORY", "off")
    if argv[:1] == ["share"]:   # an experiment of its own shape: specx bench share --help
        from . import share_bench
        return share_bench.main(argv[1:])
    if argv[:1] == ["idle"]:    # likewise: specx bench idle --help
        from . import idle_bench
        return idle_bench.main(argv[1:])
    if argv[:1] == ["slurm"]:   # likewise: specx bench slurm --help
        from . import slurm_bench
        return slurm_bench.main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.list:
        # A reader that stops early (`| head`) ends the listing quietly, as with C commands.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        print_list()
        return 0
    try:
        mode_list, slowfs_options = complete(args)
    except Usage as e:
        return fail(str(e))
    if os.geteuid() != 0:
        print("specx bench: needs root (it drops the page cache and mounts slowfs); "
              "run it as root", file=sys.stderr)
        return 1
    try:
        data_dir, out, temporary = directories(args)
    except datasets.UnsafeDataDir as e:
        return fail(f"--data-dir {e}")
    cfg = runner.Config(data_dir=data_dir, out_dir=out, scale=args.scale, runs=args.runs,
                        warm_runs=args.warm_runs, modes=mode_list, slowfs_options=slowfs_options,
                        read_calls=args.read_calls)
    results = {"environment": environment(args, cfg), "workloads": [], "validation": None}
    if args.demo:
        results["environment"]["note"] = DEMO_NOTE
        print(DEMO_NOTE, flush=True)
    for m in modes.DEFAULT_MODES:
        if not args.modes and modes.MODES[m].missing():
            print(f"specx bench: {modes.MODES[m].missing()}: not running it", flush=True)
    status = 1
    try:
        with datasets.locked(cfg.data_dir):
            status = 0 if run_all(args.workloads or [VALIDATION, *WORKLOADS], cfg, results) else 1
    except KeyboardInterrupt:
        print("specx bench: interrupted", file=sys.stderr)
        status = 130
    except SystemExit as e:   # a workload or mount that cannot go on says why
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
        status = 1
    finally:
        results["environment"]["finished"] = now()
        written = save(results, out)
        print()
        print(report.markdown(results))
        for path in temporary:
            shutil.rmtree(path, ignore_errors=True)
        if out not in temporary:
            print(f"Results in {out}: {', '.join(written)}; logs in {out}/logs")
    return status
