"""`specx bench slowfs`: checks that the emulated device behaves like the model it claims,
before any program's numbers are trusted. Four measurements, each with its bar:
  1. serial 4 KiB random reads of a cold file: mean latency within 10 % of the model's;
  2. concurrent readers: throughput that many disks' worth of one reader (≥ 87.5 %), no more;
  3. an IDLE-class reader running flat out slows a regular reader by at most 5 %, while
     with --no-priority the same load slows it visibly (≥ 10 %);
  4. integrity: every file read through slowfs has the checksum of its backing file."""
import concurrent.futures
import hashlib
import os
import random
import threading
import time

from . import datasets, ioprio, runner, slowfs
from .workloads.base import Workload, walk_files

PAGE = 4096
IDLE_READ = 64 * 1024      # one stripe unit: a whole-disk piece per idle request
IDLE_THREADS = 4


class DeviceData(Workload):
    """The check's data set: a file for regular readers, one for idle readers, and small
    files of odd sizes for the integrity check."""
    name = "slowfs"
    description = "device validation: latency, parallelism, priority, integrity"
    version = 1
    scales = {
        "full": {"regular_mib": 64, "idle_mib": 256, "small_files": 24, "serial_reads": 200,
                 "seed": 1},
        "demo": {"regular_mib": 64, "idle_mib": 256, "small_files": 24, "serial_reads": 200,
                 "seed": 1},
        "test": {"regular_mib": 4, "idle_mib": 8, "small_files": 6, "serial_reads": 40,
                 "seed": 1},
    }

    def generate(self, dest, params, progress):
        rng = random.Random(params["seed"])
        for name, mib in (("regular.bin", params["regular_mib"]), ("idle.bin", params["idle_mib"])):
            with open(os.path.join(dest, name), "wb") as f:
                for i in range(mib):
                    f.write(rng.randbytes(1 << 20))
                    progress(i + 1, mib, f"MiB of {name}")
        os.makedirs(os.path.join(dest, "small"))
        for i in range(params["small_files"]):
            with open(os.path.join(dest, "small", f"f{i:03d}"), "wb") as f:
                f.write(rng.randbytes(rng.choice((0, 1, 4095, 4097)) if i < 4
                                      else rng.randint(1, 300_000)))


def predicted_read_s(model, size):
    """The model's time for one SIZE-byte request on an idle device, one disk: access latency,
    then the transfer at the slower of disk and bus (they overlap)."""
    seconds = size / (model["bandwidth_mbps"] * 1e6)
    if model.get("bus_mbps"):
        seconds = max(seconds, size / (model["bus_mbps"] * 1e6))
    return model["latency_ms"] / 1e3 + seconds


def _open_random(path):
    """A descriptor on PATH with readahead off: one request per read, of exactly its size."""
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    return fd


def _offsets(rng, path, size, count):
    """COUNT distinct aligned offsets in PATH, so that no read hits what another brought in."""
    slots = os.path.getsize(path) // size
    return [i * size for i in rng.sample(range(slots), min(count, slots))]


def serial_latency(path, count, rng):
    """Mean seconds per 4 KiB read, one read at a time, over a cold file."""
    fd = _open_random(path)
    try:
        offsets = _offsets(rng, path, PAGE, count)
        started = time.perf_counter()
        for off in offsets:
            os.pread(fd, PAGE, off)
        return (time.perf_counter() - started) / len(offsets)
    finally:
        os.close(fd)


def concurrent_throughput(path, readers, count, rng):
    """Reads per second of READERS threads together doing COUNT 4 KiB reads of a cold file."""
    offsets = _offsets(rng, path, PAGE, count)
    fd = _open_random(path)
    try:
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(readers) as pool:
            list(pool.map(lambda off: os.pread(fd, PAGE, off), offsets))
        return len(offsets) / (time.perf_counter() - started)
    finally:
        os.close(fd)


def latency_under_idle_load(regular, idle, count, rng):
    """Mean serial read latency on REGULAR while IDLE_THREADS threads of I/O class IDLE read
    IDLE flat out."""
    stop = threading.Event()
    errors = []
    idle_offsets = _offsets(rng, idle, IDLE_READ, 1 << 20)

    def idle_reader(k):
        try:
            ioprio.set_idle()
            fd = _open_random(idle)
            try:
                i = k
                while not stop.is_set():
                    os.pread(fd, IDLE_READ, idle_offsets[i % len(idle_offsets)])
                    i += IDLE_THREADS
            finally:
                os.close(fd)
        except OSError as e:
            errors.append(e)

    threads = [threading.Thread(target=idle_reader, args=(k,)) for k in range(IDLE_THREADS)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)   # let the idle load reach every disk first
        return serial_latency(regular, count, rng)
    finally:
        stop.set()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def idle_slowdown(regular, idle, count, rng):
    """How much longer a regular reader's reads take while IDLE-class readers run flat out
    (0.05 = 5 % longer), each measurement on a cold cache."""
    runner.drop_caches()
    alone = serial_latency(regular, count, rng)
    runner.drop_caches()
    return latency_under_idle_load(regular, idle, count, rng) / alone - 1


def mismatched_files(mounted, backing, readers):
    """Relative paths whose content through slowfs differs from the backing file's, and how
    many files were compared. READERS files are read at once, so all disks are busy."""
    relative = [os.path.relpath(p, backing) for p in walk_files(backing)]

    def differs(rel):
        return _digest(os.path.join(backing, rel)) != _digest(os.path.join(mounted, rel))

    with concurrent.futures.ThreadPoolExecutor(readers) as pool:
        bad = [rel for rel, d in zip(relative, pool.map(differs, relative)) if d]
    return bad, len(relative)


def check(name, measured, unit, bar, low=None, high=None, **detail):
    """One check's record: MEASURED passes when it lies within [LOW, HIGH] (either may be
    open). Its result is printed as it is known (a progress line)."""
    passed = (low is None or measured >= low) and (high is None or measured <= high)
    c = {"check": name, "measured": measured, "unit": unit, "bar": bar, "low": low,
         "high": high, "passed": passed, **detail}
    print(f"[slowfs] {name}: {measured} {unit} (bar: {bar}) {'PASS' if passed else 'FAIL'}",
          flush=True)
    return c


def run(cfg):
    """Runs the checks on mounts made with cfg.slowfs_options (and --no-priority for the
    contrast); returns the results."""
    data = DeviceData()
    backing = datasets.ensure(data, cfg.scale, cfg.data_dir)
    params = data.scales[cfg.scale]
    mountpoint = os.path.join(cfg.data_dir, ".mnt", data.name)
    regular, idle = "regular.bin", "idle.bin"
    rng = random.Random(params["seed"])
    n = params["serial_reads"]
    checks = []
    with slowfs.mounted(backing, mountpoint, cfg.slowfs_options):
        device = slowfs.stats(mountpoint)
        if device is None:
            raise SystemExit("specx bench: slowfs gives no statistics (--stats --json): "
                             "cannot know the model to check against")
        model = device["model"]
        reg, idl = os.path.join(mountpoint, regular), os.path.join(mountpoint, idle)

        runner.drop_caches()
        latency = serial_latency(reg, n, rng)
        predicted = predicted_read_s(model, PAGE)
        checks.append(check("serial 4 KiB read latency", round(latency * 1e3, 3), "ms",
                            f"model {predicted * 1e3:.2f} ms ± 10 %", low=predicted * 0.9e3,
                            high=predicted * 1.1e3, predicted=round(predicted * 1e3, 3)))

        disks = model["disks"]
        readers = min(8 * disks, 128)   # enough that every disk nearly always has work
        runner.drop_caches()
        one = 1 / serial_latency(reg, n, rng)
        runner.drop_caches()
        many = concurrent_throughput(reg, readers, n * disks, rng)
        speedup = many / one
        checks.append(check(f"{readers} concurrent readers vs 1", round(speedup, 2), "×",
                            f"{0.875 * disks:.2f}×–{1.1 * disks:.2f}× ({disks} disks)",
                            low=0.875 * disks, high=1.1 * disks))

        slowdown = idle_slowdown(reg, idl, n, rng)
        checks.append(check("IDLE-class reader's slowdown of a regular reader",
                            round(slowdown * 100, 1), "%", "≤ 5 %", high=5.0))

        runner.drop_caches()
        bad, total = mismatched_files(mountpoint, backing, disks)
        checks.append(check("files whose checksum differs through slowfs", len(bad), "files",
                            f"0 of {total}", high=0, files=bad))
        stats = slowfs.stats(mountpoint)

    with slowfs.mounted(backing, mountpoint, [*cfg.slowfs_options, "--no-priority"]):
        slowdown = idle_slowdown(reg, idl, n, rng)
        checks.append(check("same load with --no-priority", round(slowdown * 100, 1), "%",
                            "≥ 10 % (visible)", low=10.0))
    return {"name": data.name, "description": data.description, "scale": cfg.scale,
            "params": params, "device": device, "device_stats": stats, "checks": checks}
