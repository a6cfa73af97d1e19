"""`specx bench idle`: does the foreground notice background work? (Eggert 2002, Figs. 12-13
and 17-18, for CPU, disk, memory and network).

Each experiment pairs a foreground (FG) that measures its own throughput with a background
(BG) that counts its own progress, and runs the FG:

  solo          alone
  plain         beside the BG started plainly
  nice          beside the BG under nice -n 19 (the paper's "Nice" baseline)
  nice+ionice   beside the BG under nice -n 19 and ionice -c3 (the POSIX priorities)
  specx-idle    beside the BG under specx idle

and the BG alone, for the capacity it can use. The experiments:

  cpu           FG: one CPU-bound process; BG: one CPU-bound process per CPU
  cpu-bursty    FG: 20 ms of work then 180 ms of sleep, over and over: the paper's light load
                (§4.2.3: the FG active 10 % of the time)
  disk          FG: sequential reads of a file on slowfs; BG: reads of another
  disk-bursty   FG: 20 ms of those reads, then 180 ms of rest, over and over
  memory        FG and BG re-read working sets of 55 % of a memory cgroup they share (read
                once from slowfs first)
  memory-light  FG: re-reads a working set of 10 % in bursts (light load): the BG's fits
  network       FG and BG send bulk TCP from one network namespace to another through a
                third that forwards at a fixed rate (the bottleneck); specx idle shapes at
                99 % of that rate, so that the queue forms where it can order the packets
  network-bursty  FG: 20 ms of sending, then 180 ms of rest, over and over
  network-recv  FG and BG receive bulk TCP through the same bottleneck the other way: specx
                idle clamps the BG's receive window while the FG receives (the receive side)
  cpu-floor     the CPU-bound FG pinned to one CPU, measured in alternating slices of one
                run: BG stopped / BG on the other CPUs only (pinned-apart: what any use of
                the idle CPUs costs the FG on this machine, the floor under the cpu bar) /
                BG stopped / BG under specx idle; each BG slice against the stopped slices
                on either side, which cancels the machine's drift between runs

FG throughput is reported as a share of solo (medians, and 95 % confidence intervals over
the runs), BG progress as a share of the capacity the FG leaves idle (the paper's §2.1:
capacity less the FG's use, measured: one less the FG's solo rate over the BG's rate alone,
both counting the same units of the same resource), and for memory the
time from the FG's start to the BG's first give-back. Results: results-idle.md, .json and
.png."""
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

from specx_support import memcg

from specx_support import components
from . import datasets, slowfs, subcommand
from .resident import drop_caches

MIB = 1 << 20
TBF_BURST = "64kb"
MODES = ("solo", "plain", "nice", "nice+ionice", "specx-idle")
EXPERIMENTS = ("cpu", "cpu-bursty", "disk", "disk-bursty", "memory", "memory-light", "network",
               "network-bursty", "network-recv", "cpu-floor")
# floor_cycles: cycles of cpu-floor's four slices.
SCALES = {
    "full": dict(seconds=10, disk_mib=512, memory_mib=192, net_mbit=100, floor_cycles=200),
    "demo": dict(seconds=4, disk_mib=128, memory_mib=96, net_mbit=50, floor_cycles=60),
    "test": dict(seconds=1, disk_mib=16, memory_mib=64, net_mbit=20, floor_cycles=10),
}
# cpu-floor: a slice, and the time each BG is given to stop or start before one is counted.
SLICE_S, SWITCH_S = 0.1, 0.02

# The workers print how much they got done when their time is up or when told to stop
# (SIGTERM). WORK UNITS: CPU loops of 10,000 additions, bytes read, bytes acknowledged. A
# bursty worker is active BURST seconds, then rests REST seconds, over and over.
WORKER = r'''
import mmap, os, signal, struct, sys, time
BURST, REST = 0.02, 0.18
kind, seconds = sys.argv[1], float(sys.argv[2])
args = sys.argv[3:]
stop = time.monotonic() + seconds if seconds > 0 else float("inf")
# Work done, in slots one per process (the "cpus" kind forks), shared so that the parent can
# tell the sum at any moment: on SIGUSR1 (and go on), on SIGTERM (and end), and at the end.
slots = mmap.mmap(-1, 8 * (os.cpu_count() + 1))
me = 0
children = []
def add(n):
    struct.pack_into("Q", slots, 8 * me, struct.unpack_from("Q", slots, 8 * me)[0] + n)
progress = lambda: sum(struct.unpack_from(f"{os.cpu_count() + 1}Q", slots))
def say(*_):
    print(progress(), flush=True)
def finish(*_):
    say()
    for pid in children:  # they hold our output open
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os._exit(0)
def spin(until):
    while time.monotonic() < until:
        x = 0
        for i in range(10000):
            x += i
        add(1)
burst_end = time.monotonic() + BURST
def pause_if_burst_over():  # the bursty kinds: after BURST seconds of work, REST of sleep
    global burst_end
    if time.monotonic() > burst_end:
        time.sleep(REST)
        burst_end = time.monotonic() + BURST
def read_all(path, drop, bursty):
    with open(path, "rb", buffering=0) as f:
        if drop:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        while time.monotonic() < stop:
            block = f.read(128 << 10)
            if not block:
                return
            add(len(block))
            if bursty:
                pause_if_burst_over()
if kind == "cpus":  # one spinning process per CPU
    for me in range(1, os.cpu_count() + 1):
        pid = os.fork()
        if pid == 0:
            import ctypes  # PR_SET_PDEATHSIG: gone with the parent, however it ends
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)
            signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
            spin(stop)
            os._exit(0)
        children.append(pid)
    me = 0
if kind.startswith("send"):  # bulk TCP to args[0]:args[1]; progress is what the peer acknowledged
    import socket
    sock = socket.socket()
    if len(args) > 2:  # a send buffer of args[2] bytes: what is left of a burst drains fast
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(args[2]))
    sock.connect((args[0], int(args[1])))
    progress = lambda: struct.unpack_from(
        "Q", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 120)[0]
if kind == "recv":  # bulk TCP from args[0]:args[1] (a source); progress is what arrived
    import socket
    sock = socket.create_connection((args[0], int(args[1])))
signal.signal(signal.SIGUSR1, say)
signal.signal(signal.SIGTERM, finish)
print("ready", os.getpid(), flush=True)
if kind == "cpu":
    spin(stop)
elif kind == "bursty":
    while time.monotonic() < stop:
        spin(min(stop, time.monotonic() + BURST))
        time.sleep(REST)
elif kind == "cpus":
    while time.monotonic() < stop:
        time.sleep(min(1.0, stop - time.monotonic()))
elif kind.startswith("send"):
    block = b"x" * 65536
    while time.monotonic() < stop:
        sock.send(block)
        if kind == "send-bursty":
            pause_if_burst_over()
elif kind == "recv":
    while time.monotonic() < stop:
        data = sock.recv(1 << 20)
        if not data:
            break
        add(len(data))
elif kind == "source":  # sends to each connection until it goes
    import socket, threading
    def feed(conn):
        block = b"x" * 65536
        try:
            while True:
                conn.sendall(block)
        except OSError:
            conn.close()
    server = socket.create_server(("0.0.0.0", int(args[0])))
    print("listening", flush=True)
    while True:
        threading.Thread(target=feed, args=(server.accept()[0],), daemon=True).start()
elif kind == "sink":  # takes whatever each connection sends
    import socket, threading
    def serve(conn):
        while conn.recv(1 << 20):
            pass
        conn.close()
    server = socket.create_server(("0.0.0.0", int(args[0])))
    print("listening", flush=True)
    while True:
        threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()
elif kind.startswith("reread"):  # a working set read once, then again and again from memory
    for p in args:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    stop = time.monotonic() + seconds if seconds > 0 else float("inf")
    print("warm", flush=True)
    while time.monotonic() < stop:
        for p in args:
            read_all(p, False, kind.endswith("bursty"))
else:  # "stream": the files over and over, each pass from the device (dropped first)
    while time.monotonic() < stop:
        for p in args:
            read_all(p, True, kind.endswith("bursty"))
finish()
'''

HELP = """\
Usage: specx bench idle [OPTIONS]

Foreground throughput beside background work run plainly, under nice, under
nice and ionice, and under specx idle (Eggert 2002), for CPU, disk, memory and
network.

Options:
      --experiments LIST  comma-separated: cpu, cpu-bursty, disk, disk-bursty, memory,
                          memory-light, network, network-bursty, network-recv,
                          cpu-floor (default all)
      --runs N            runs per mode (default 5)
      --scale full|demo|test
                          10 s, 4 s or 1 s per run, with data sized to match
                          (default full)
  -p, --preset NAME       slowfs preset of the disk (default hdd)
      --out DIR           results directory (default ./bench-results/<UTC timestamp>)
      --data-dir DIR      where the files read are kept (default /var/cache/specx/bench)
  -h, --help              show this help

See specx-bench(1).
"""


def parse(argv):
    p = subcommand.parser("idle", HELP)
    p.add_argument("--experiments", default=",".join(EXPERIMENTS))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--scale", choices=tuple(SCALES), default="full")
    p.add_argument("-p", "--preset", default="hdd")
    args = p.parse_args(argv)
    args.experiments = args.experiments.split(",")
    unknown = [e for e in args.experiments if e not in EXPERIMENTS]
    if unknown:
        p.error(f"unknown experiment '{unknown[0]}' (valid: {', '.join(EXPERIMENTS)})")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    return args


# ---- running one pair ----


def worker(kind, seconds, *paths):
    return [sys.executable, "-c", WORKER, kind, str(seconds), *map(str, paths)]


def background_argv(mode, setup, report):
    argv = setup["bg"]
    if mode == "nice":
        argv = ["nice", "-n", "19", *argv]
    elif mode == "nice+ionice":
        argv = ["nice", "-n", "19", "ionice", "-c3", *argv]
    elif mode == "specx-idle":
        argv = [components.specx_exe(), "idle", "--json", report, *setup["idle_args"], "--",
                *argv]
    return [*setup["wrap"], *argv]


def progress_of(proc, pid, sig):
    """Asks the BG worker PID (started as PROC) how much it got done: SIGUSR1 and it goes on,
    SIGTERM and it ends."""
    os.kill(pid, sig)
    line = proc.stdout.readline().strip()
    if not line:
        raise RuntimeError(f"the background said nothing: {proc.stderr.read().strip()[-300:]}")
    return int(line)


def start_background(mode, setup, report):
    """The BG in MODE, once it is ready; returns it and its worker's pid."""
    group = setup["group"]
    return start_worker(background_argv(mode, setup, report),
                        group.leaf("bg").add if group else None)


def start_worker(argv, preexec=None):
    """A worker (ARGV) in a session of its own, once it is ready; returns it and its pid."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=preexec)
    words = proc.stdout.readline().split()
    if len(words) != 2 or words[0] != "ready":
        proc.kill()
        raise RuntimeError(f"a worker did not start: {proc.stderr.read()[-300:]}")
    return proc, int(words[1])


@contextlib.contextmanager
def pressure_onset(group):
    """While the block runs, when the shared GROUP first hit its limit (wall clock; None if
    it did not): the FG's pressure onset, which the BG's give-back is timed from. Sampled
    every 2 ms in a thread."""
    found = {"at": None}
    if group is None:
        yield found
        return
    stop = threading.Event()
    baseline = group.limit_hits() or 0

    def watch():
        while not stop.wait(0.002):
            if (group.limit_hits() or 0) > baseline:
                found["at"] = time.time()
                return
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        stop.set()
        thread.join()


def run_pair(mode, setup, out_dir):
    """SETUP's FG alone (mode solo) or beside its BG started in MODE; returns the FG's work,
    the BG's progress while the FG ran and its rate then, the BG's specx idle report (or
    None) and when the FG started."""
    report = os.path.join(out_dir, f"idle-{uuid.uuid4().hex[:8]}.json")
    group = setup["group"]
    bg, bg_pid = start_background(mode, setup, report) if mode != "solo" else (None, 0)
    try:
        if bg:
            if setup["warm"] and bg.stdout.readline().strip() != "warm":
                raise RuntimeError("the background did not warm up")
            time.sleep(setup["settle"])  # the BG takes what is idle before the FG comes
            before = progress_of(bg, bg_pid, signal.SIGUSR1)
        fg_started, started = time.time(), time.monotonic()
        with pressure_onset(group) as onset:
            fg = subprocess.run([*setup["wrap"], *setup["fg"]], capture_output=True, text=True,
                                preexec_fn=group.leaf("fg").add if group else None,
                                timeout=600)
        fg_seconds = time.monotonic() - started
        if fg.returncode != 0:
            raise RuntimeError(f"the foreground failed: {fg.stderr.strip()[-300:]}")
        bg_done = progress_of(bg, bg_pid, signal.SIGTERM) - before if bg else None
        if bg:
            bg.communicate(timeout=60)
    finally:
        if bg and bg.poll() is None:
            os.killpg(bg.pid, signal.SIGKILL)  # the BG and whatever it started
            bg.wait()
    idle_report = None
    if os.path.exists(report):
        with open(report) as f:
            idle_report = json.load(f)
        os.unlink(report)
    fg_done = int(fg.stdout.split()[-1])
    return {"fg": fg_done, "fg_rate": fg_done / fg_seconds, "bg": bg_done,
            "bg_rate": bg_done / fg_seconds if bg else None, "idle": idle_report,
            "fg_started": fg_started, "pressure_onset": onset["at"]}


# ---- the experiments ----


def data_file(data_dir, name, mib):
    """A file of MIB MiB of incompressible data in DATA_DIR, made once."""
    path = os.path.join(data_dir, "idle", f"{name}-{mib}m")
    if not os.path.exists(path) or os.path.getsize(path) != mib * MIB:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".new", "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(MIB))
        os.rename(path + ".new", path)
    return path


def setup_of(fg, bg, bg_alone, leaves_idle=False, group=None, settle=0.5, mnt=None, wrap=(),
             idle_args=(), warm=False):
    """What an experiment runs: the FG, the BG and the BG alone (argv), whether the FG leaves
    capacity idle (then the BG's progress is compared with that capacity, measured; else with
    its progress alone), the memory group they share, seconds the BG starts ahead, the
    slowfs mount (caches are dropped before each run), a prefix for every command, options for
    specx idle, and whether the BG says "warm" once it holds its working set (then the FG
    starts only after that)."""
    return dict(fg=fg, bg=bg, bg_alone=bg_alone, leaves_idle=leaves_idle, group=group,
                settle=settle, mnt=mnt, wrap=list(wrap), idle_args=list(idle_args), warm=warm)


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@contextlib.contextmanager
def bottleneck(mbit):
    """Three network namespaces: A (the senders and receivers) — R (forwards between A and B
    at MBIT Mbit/s each way, a TBF: the bottleneck) — B (sinks on ports 5001 and 5002,
    sources on 5003 and 5004). Removed afterwards. Yields A's name."""
    tag = f"{os.getpid() % 100000}"
    a, r, b = (f"specx-idle-{tag}{x}" for x in "arb")
    try:
        for ns in (a, r, b):
            ip("netns", "add", ns)
        ip("link", "add", f"sxia{tag}", "netns", a, "type", "veth", "peer", "name", f"sxir{tag}",
           "netns", r)
        ip("link", "add", f"sxis{tag}", "netns", r, "type", "veth", "peer", "name", f"sxib{tag}",
           "netns", b)
        for ns, dev, addr in ((a, f"sxia{tag}", "10.204.0.1/24"), (r, f"sxir{tag}", "10.204.0.2/24"),
                              (r, f"sxis{tag}", "10.204.1.1/24"), (b, f"sxib{tag}", "10.204.1.2/24")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
        ip("-n", a, "route", "add", "default", "via", "10.204.0.2")
        ip("-n", b, "route", "add", "default", "via", "10.204.1.1")
        subprocess.run(["ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
                       check=True, timeout=10)
        for dev in (f"sxis{tag}", f"sxir{tag}"):
            subprocess.run(["ip", "netns", "exec", r, "tc", "qdisc", "add", "dev", dev, "root",
                            "tbf", "rate", f"{mbit}mbit", "burst", TBF_BURST, "latency", "20ms"],
                           check=True, timeout=10)
        servers = [subprocess.Popen(["nsenter", f"--net=/run/netns/{b}", *worker(kind, 0, port)],
                                    stdout=subprocess.PIPE, text=True)
                   for kind, port in (("sink", 5001), ("sink", 5002), ("source", 5003),
                                      ("source", 5004))]
        try:
            for server in servers:
                server.stdout.readline()
            yield a
        finally:
            for server in servers:
                server.kill()
                server.wait()
    finally:
        for ns in (a, r, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@contextlib.contextmanager
def experiment_setup(name, scale, args):
    t = scale["seconds"]
    if name in ("cpu", "cpu-bursty"):
        # The FG takes one CPU (a tenth of one when bursty): the rest is idle capacity.
        fg = worker("cpu" if name == "cpu" else "bursty", t)
        yield setup_of(fg, worker("cpus", 0), worker("cpus", t), leaves_idle=True, settle=0.3)
        return
    if name.startswith("network"):
        mbit = scale["net_mbit"]
        bursty = name == "network-bursty"
        with bottleneck(mbit) as a:
            if name == "network-recv":
                yield setup_of(worker("recv", t, "10.204.1.2", 5003),
                               worker("recv", 0, "10.204.1.2", 5004),
                               worker("recv", t, "10.204.1.2", 5004),
                               wrap=["nsenter", f"--net=/run/netns/{a}"],
                               idle_args=["--net-rate", str(mbit * 990000)])
                return
            # 99 %: a little below the bottleneck, so that the queue forms in specx idle's
            # qdisc, where the FG's packets go first, rather than at the bottleneck.
            # Bursty, the FG's send buffer holds what the bottleneck carries in one burst, so
            # that the FG is active on the wire (not only in its own code) 10 % of the time.
            fg = (worker("send-bursty", t, "10.204.1.2", 5001, mbit * 1_000_000 // 8 // 50)
                  if bursty else worker("send", t, "10.204.1.2", 5001))
            yield setup_of(fg,
                           worker("send", 0, "10.204.1.2", 5002),
                           worker("send", t, "10.204.1.2", 5002),
                           leaves_idle=bursty, wrap=["nsenter", f"--net=/run/netns/{a}"],
                           idle_args=["--net-rate", str(mbit * 990000)])
        return
    disk = name.startswith("disk")
    # For memory: working sets of 55 % of the group each, so that one fits beside the two
    # workers' own memory (about 10 MiB each) and specx idle's, and two do not. Under a light
    # load the FG's is 10 %, re-read in bursts: then the BG's fits in the memory it leaves.
    light = name == "memory-light"
    fg_percent = 10 if light else 55
    files = [data_file(args.data_dir, n, scale["disk_mib"] if disk
                       else scale["memory_mib"] * percent // 100)
             for n, percent in (("fg", fg_percent), ("bg", 55))]
    mountpoint = os.path.join(args.data_dir, f"idle-mnt-{os.getpid()}")
    with slowfs.mounted(os.path.dirname(files[0]), mountpoint, ["-p", args.preset]) as mnt:
        fg_file, bg_file = (os.path.join(mnt, os.path.basename(f)) for f in files)
        if disk:
            bursty = name == "disk-bursty"
            yield setup_of(worker("stream-bursty" if bursty else "stream", t, fg_file),
                           worker("stream", 0, bg_file), worker("stream", t, bg_file),
                           leaves_idle=bursty, mnt=mnt)
            return
        limit = scale["memory_mib"] << 20
        with memcg.limited(f"specx-bench-idle-{os.getpid()}", limit) as group:
            # Each reads its working set once (not counted), then re-reads it: from memory if
            # it kept it, from the device if the other pushed it out.
            yield setup_of(worker("reread-bursty" if light else "reread", t, fg_file),
                           worker("reread", 0, bg_file),
                           worker("reread", t, bg_file), group=group, mnt=mnt, warm=True)


def run_experiment(name, scale, args, out_dir):
    if name == "cpu-floor":
        return cpu_floor(scale, out_dir)
    records = {m: [] for m in MODES}
    with experiment_setup(name, scale, args) as setup:
        group = setup["group"]

        def one(mode):
            if setup["mnt"]:
                drop_caches()
            return run_pair(mode, setup, out_dir)
        alone = []
        for r in range(args.runs):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for mode in order:
                rec = one(mode)
                records[mode].append(rec)
                print(f"[idle {name}] {mode} run {r + 1}: FG {rec['fg']:,}"
                      + (f", BG {rec['bg']:,}" if rec["bg"] is not None else ""), flush=True)
            if setup["mnt"]:
                drop_caches()
            # The worker stops itself after the scale's seconds, counted from its start.
            alone.append(int(subprocess.run([*setup["wrap"], *setup["bg_alone"]],
                                            capture_output=True, text=True,
                                            preexec_fn=group.leaf("bg").add if group else None,
                                            timeout=600).stdout.split()[-1])
                         / scale["seconds"])
    return summarize(name, records, alone, setup["leaves_idle"])


# ---- the CPU floor ----


def floor_sequence(cycles):
    """cpu-floor's slices: every BG slice between two with the BGs stopped."""
    return [None] + ["pinned-apart", None, "specx-idle", None] * cycles


def switch_to(bgs, running):
    """Only the BG named RUNNING (or none) goes on; the others are stopped, whole (the specx
    idle BG with specx idle itself: a stopped slice has none of its samples either)."""
    for name, (proc, _) in bgs.items():
        os.killpg(proc.pid, signal.SIGCONT if name == running else signal.SIGSTOP)


def slice_shares(rates):
    """RATES: (state, FG rate) per slice of floor_sequence(). Each BG slice's rate as a share
    of the mean of the stopped slices before and after it."""
    shares = {}
    for i in range(1, len(rates) - 1):
        state, rate = rates[i]
        if state is not None:
            shares.setdefault(state, []).append(
                rate / ((rates[i - 1][1] + rates[i + 1][1]) / 2))
    return shares


def cpu_floor(scale, out_dir):
    """What the cpu bar stands on (FG >= 0.99 of solo): the FG pinned to CPU 0, and
    in turn no BG, a BG pinned to the other CPUs (plain: it never takes the FG's CPU, so what
    it costs the FG is the machine's — caches, memory, the host's cores and clocks — and no
    priority can remove it short of leaving those CPUs idle), and the BG under specx idle,
    which may run anywhere. Slices of one run, not runs: this VM's CPU speed moves by up to
    20 % from one half second to the next (seen), which separate 10 s runs cannot tell from a
    1 % cost."""
    cpus = os.cpu_count()
    if cpus < 2:
        return {"experiment": "cpu-floor", "skipped": "one CPU: no idle CPU to measure beside",
                "solo_fg": None, "bg_alone_rate": None, "idle_share": None, "modes": []}
    report = os.path.join(out_dir, f"idle-{uuid.uuid4().hex[:8]}.json")
    idle_argv = [components.specx_exe(), "idle", "--json", report, "--", *worker("cpus", 0)]
    apart_argv = ["taskset", "-c", f"1-{cpus - 1}", *worker("cpus", 0)]
    started = []
    try:
        fg, fg_pid = start_worker(worker("cpu", 0), lambda: os.sched_setaffinity(0, {0}))
        started.append(fg)
        bgs = {}
        for name, argv in (("pinned-apart", apart_argv), ("specx-idle", idle_argv)):
            bgs[name] = start_worker(argv)
            started.append(bgs[name][0])
            # Stopped until its slice: the next BG, at idle priority, starts only on a CPU
            # nobody wants (26 s here beside this one running, minutes in an emulated guest).
            switch_to(bgs, None)
        rates = []
        for state in floor_sequence(scale["floor_cycles"]):
            switch_to(bgs, state)
            time.sleep(SWITCH_S)
            t0, done0 = time.monotonic(), progress_of(fg, fg_pid, signal.SIGUSR1)
            time.sleep(SLICE_S)
            done1, t1 = progress_of(fg, fg_pid, signal.SIGUSR1), time.monotonic()
            rates.append((state, (done1 - done0) / (t1 - t0)))
        switch_to(bgs, None)
        for proc, pid in bgs.values():
            os.killpg(proc.pid, signal.SIGCONT)
            progress_of(proc, pid, signal.SIGTERM)
            proc.communicate(timeout=60)
        progress_of(fg, fg_pid, signal.SIGTERM)
        fg.communicate(timeout=60)
    finally:
        for proc in started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if os.path.exists(report):
            os.unlink(report)
    shares = slice_shares(rates)
    rows = [{"mode": "solo", "runs": len([r for r in rates if r[0] is None]), "fg_share": 1.0,
             "fg_share_ci95": None}]
    rows += [{"mode": m, "runs": len(shares[m]), "fg_share": median(shares[m]),
              "fg_share_ci95": confidence95(shares[m])} for m in ("pinned-apart", "specx-idle")]
    print(f"[idle cpu-floor] FG beside a BG pinned apart {rows[1]['fg_share']:.3f}, "
          f"beside one under specx idle {rows[2]['fg_share']:.3f}", flush=True)
    return {"experiment": "cpu-floor", "solo_fg": None, "bg_alone_rate": None,
            "idle_share": None, "slice_s": SLICE_S, "modes": rows,
            "slices": [{"bg": state, "fg_rate": rate} for state, rate in rates]}


# ---- numbers ----


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def confidence95(values):
    """Half-width of the 95 % confidence interval of the mean (t distribution)."""
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}
    if len(values) < 2:
        return None
    return t.get(len(values), 2.0) * statistics.stdev(values) / len(values) ** 0.5


def idle_capacity_share(records, bg_rate):
    """The share of the resource the FG leaves idle (Eggert §2.1: capacity less active
    capacity): one less the FG's solo rate over the BG's rate alone, which takes it all."""
    return max(0.0, 1.0 - median([r["fg_rate"] for r in records["solo"]]) / bg_rate)


def summarize(name, records, alone, leaves_idle):
    solo = median([r["fg"] for r in records["solo"]])
    bg_rate = median(alone)  # BG units per second with the machine to itself
    idle_share = idle_capacity_share(records, bg_rate) if leaves_idle else None
    rows = []
    for mode in MODES:
        recs = records[mode]
        shares = [r["fg"] / solo for r in recs]
        row = {"mode": mode, "runs": len(recs), "fg_share": median(shares),
               "fg_share_ci95": confidence95(shares)}
        if mode != "solo":
            # The BG's rate while the FG ran, against what the idle capacity allows it.
            bg_share = [r["bg_rate"] / (bg_rate * (idle_share or 1.0)) for r in recs
                        if r["bg_rate"] is not None]
            row["bg_progress"] = median(bg_share)
        if mode == "specx-idle":
            reports = [r["idle"] for r in recs if r["idle"]]
            gb = [r["idle"]["memory"]["first_giveback_at"] - r["fg_started"] for r in recs
                  if r["idle"] and r["idle"]["memory"]["first_giveback_at"]]
            row["memory_giveback_after_fg_start_s"] = median(gb)
            onset = [r["idle"]["memory"]["first_giveback_at"] - r["pressure_onset"]
                     for r in recs if r["idle"] and r["idle"]["memory"]["first_giveback_at"]
                     and r.get("pressure_onset")]
            row["memory_giveback_after_onset_s"] = median(onset)
            row["memory_shrinks"] = median([r["memory"]["shrinks"] for r in reports])
        rows.append(row)
    return {"experiment": name, "solo_fg": solo, "bg_alone_rate": bg_rate,
            "idle_share": idle_share,
            "bg_progress_of": "the idle capacity" if idle_share else "its progress alone",
            "modes": rows,
            "runs": {m: [{k: v for k, v in r.items() if k != "idle"} |
                         {"idle_memory": (r["idle"] or {}).get("memory")} for r in recs]
                     for m, recs in records.items()}}


def fmt(v, digits=2, pct=False):
    if v is None:
        return "–"
    return f"{100 * v:.0f} %" if pct else f"{v:.{digits}f}"


def seconds_cell(value):
    return "–" if value is None else f"{value:.3f} s"


def bg_cell(row, experiment):
    if row.get("bg_progress") is None:
        return "–"
    basis = "of idle capacity" if experiment["idle_share"] else "of alone"
    return f"{fmt(row['bg_progress'], pct=True)} {basis}"


def markdown(result):
    lines = ["# specx bench idle: foreground throughput beside background work", "",
             f"{result['environment']['runs']} runs per mode, {result['environment']['seconds']} s "
             f"each, medians; ±: 95 % confidence interval of the mean.", "",
             "| experiment | BG run | FG throughput (share of solo) | ± | BG progress "
             "| memory given back after FG start | … after its first stall |",
             "|---|---|---|---|---|---|---|"]
    for e in result["experiments"]:
        for row in e["modes"]:
            lines.append(f"| {e['experiment']} | {row['mode']} | {fmt(row['fg_share'], 3)} | "
                         f"{fmt(row['fg_share_ci95'], 3)} | "
                         f"{bg_cell(row, e)} | "
                         f"{seconds_cell(row.get('memory_giveback_after_fg_start_s'))} | "
                         f"{seconds_cell(row.get('memory_giveback_after_onset_s'))} |")
    for e in result["experiments"]:
        if e.get("skipped"):
            lines.append(f"| {e['experiment']} | – | skipped: {e['skipped']} | | | | |")
    measured = [f"{e['experiment']} {fmt(e['idle_share'], pct=True)}"
                for e in result["experiments"] if e["idle_share"] is not None]
    if measured:
        lines += ["", "Idle capacity the FG leaves (measured: one less its solo rate over the "
                  "BG's alone): " + ", ".join(measured) + "."]
    if any(e["experiment"] == "cpu-floor" and not e.get("skipped")
           for e in result["experiments"]):
        lines += ["", f"cpu-floor: one run of {SLICE_S} s slices, the FG pinned to one CPU; each "
                  "BG slice against the slices with the BGs stopped on either side (\"solo\"; "
                  "its runs column counts slices). pinned-apart: a plain BG on the other CPUs "
                  "only, never on the FG's: what any use of the idle CPUs costs the FG on this "
                  "machine."]
    lines += ["", "Bars: FG ≥ 0.99 of solo for CPU, ≥ 0.97 for disk and memory under "
              "specx idle; BG ≥ 80 % of the idle capacity when the FG is bursty; memory given "
              "back within 0.5 s of the FG's pressure onset.", ""]
    return "\n".join(lines)


def figure(result, out_dir):
    from . import plot
    plt = plot.plt
    exps = result["experiments"]
    fig, (fg_ax, bg_ax) = plt.subplots(2, 1, figsize=(9, 5.6), sharex=True)
    modes = [m for m in (*MODES, "pinned-apart")
             if any(r["mode"] == m for e in exps for r in e["modes"])]
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        xs = [i + k * width for i in range(len(exps))]
        # An experiment without MODE (cpu-floor has three) gets no bar there.
        rows = [next((r for r in e["modes"] if r["mode"] == mode), {}) for e in exps]
        fg_ax.bar(xs, [r.get("fg_share") or 0 for r in rows], width,
                  yerr=[r.get("fg_share_ci95") or 0 for r in rows], capsize=2, label=mode)
        # The BG panel: its progress (of the idle capacity where the FG leaves some).
        bg_ax.bar(xs, [r.get("bg_progress") or 0 for r in rows], width, label=mode)
    fg_ax.axhline(1.0, color="black", linewidth=0.5)
    fg_ax.set_ylabel("FG throughput / solo")
    top = max([1.0] + [(r["fg_share"] or 0) + (r["fg_share_ci95"] or 0)
                       for e in exps for r in e["modes"]])
    fg_ax.set_ylim(0, max(1.1, top + 0.05))
    fg_ax.legend(fontsize=7, ncol=len(modes), loc="lower center", bbox_to_anchor=(0.5, 1.0),
                 frameon=False)
    bg_ax.axhline(0.8, color="black", linewidth=0.5, linestyle="--")
    bg_ax.set_ylabel("BG progress\n(of idle capacity,\nor of alone)")
    bg_ax.set_xticks([i + 0.4 - width / 2 for i in range(len(exps))],
                     [e["experiment"] for e in exps], fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "results-idle.png"), dpi=120)
    plt.close(fig)


def save(result, out_dir):
    with open(os.path.join(out_dir, "results-idle.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, "results-idle.md"), "w") as f:
        f.write(markdown(result))
    figure(result, out_dir)
    return ["results-idle.md", "results-idle.json", "results-idle.png"]


def main(argv):
    args = parse(argv)
    if os.geteuid() != 0:
        print("specx bench idle: needs root (cgroups, slowfs, drop_caches)", file=sys.stderr)
        return 1
    out_dir = subcommand.prepare_dirs("idle", args)
    scale = SCALES[args.scale]
    result = {"environment": {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                              "kernel": os.uname().release, "cpus": os.cpu_count(),
                              "scale": args.scale, "seconds": scale["seconds"],
                              "runs": args.runs, "preset": args.preset},
              "experiments": []}
    try:
        with datasets.locked(args.data_dir):
            for name in args.experiments:
                result["experiments"].append(run_experiment(name, scale, args, out_dir))
    except KeyboardInterrupt:
        print("specx bench idle: interrupted", file=sys.stderr)
        return 130
    except (RuntimeError, OSError) as e:
        print(f"specx bench idle: {e}", file=sys.stderr)
        return 1
    result["environment"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    written = save(result, out_dir)
    print()
    print(markdown(result))
    print(f"Results in {out_dir}: {', '.join(written)}")
    return 0
