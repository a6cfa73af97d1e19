"""specx slowfs on a real FUSE mount: data integrity, write-through, ownership, statistics,
I/O classes, bad input and unmounting. The device runs with 1 ms latency so the tests stay
quick; no test asserts on timing (the benchmark `specx bench slowfs` measures the device)."""
import contextlib
import hashlib
import json
import mmap
import os
import pathlib
import pwd
import random
import signal
import subprocess
import threading
import time

import pytest

from conftest import run_specx, slowfs_mount, wait_for

pytestmark = pytest.mark.root

FAST = ("--latency-ms", "1")


def mount_points():
    """Mount points currently in this mount namespace, decoded from /proc/self/mountinfo."""
    points = set()
    for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
        field = line.split()[4]
        points.add(field.encode().decode("unicode_escape"))
    return points


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def make_tree(root):
    """A tree with the shapes that matter: empty files, files ending mid-stripe, files
    spanning several stripe units and disks, nested directories, a symlink."""
    rng = random.Random(7)
    sizes = [0, 1, 4095, 4096, 65535, 65536, 65537, 200_000, 1_000_003]
    for d in range(4):
        sub = root / f"d{d}" / "nested"
        sub.mkdir(parents=True)
        for i, size in enumerate(sizes):
            (sub / f"f{i}.bin").write_bytes(rng.randbytes(size))
    (root / "link").symlink_to("d0/nested/f7.bin")
    return root


@pytest.fixture
def mounted(workdir):
    backing = make_tree(workdir / "backing")
    with slowfs_mount(backing, workdir / "mnt", *FAST) as mnt:
        yield backing, mnt


def stats(mnt):
    return json.loads(run_specx("slowfs", "--stats", mnt, "--json", check=True).stdout)


def test_every_file_reads_back_identical(mounted):
    backing, mnt = mounted
    files = [p for p in backing.rglob("*") if p.is_file() and not p.is_symlink()]
    assert len(files) == 36
    for p in files:
        assert sha256(mnt / p.relative_to(backing)) == sha256(p), p
    assert os.readlink(mnt / "link") == "d0/nested/f7.bin"
    assert sha256(mnt / "link") == sha256(backing / "d0/nested/f7.bin")


def test_large_directory_lists_completely(mounted):
    """Thousands of entries take many readdir calls, each resuming at the kernel's offset."""
    backing, mnt = mounted
    big = backing / "big"
    big.mkdir()
    names = {f"entry-with-a-long-name-{i:05d}" for i in range(3000)}
    for name in names:
        (big / name).touch()
    assert set(os.listdir(mnt / "big")) == names
    with os.scandir(mnt / "big") as it:  # READDIRPLUS answers carry each entry's inode
        inodes = {e.name: e.inode() for e in it}
    assert all(inodes[n] == os.stat(big / n).st_ino for n in list(names)[:100])


def test_writes_reach_the_backing_directory(mounted):
    backing, mnt = mounted
    data = os.urandom(300_000)
    with open(mnt / "new.bin", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    assert (backing / "new.bin").read_bytes() == data
    with open(mnt / "new.bin", "ab") as f:
        f.write(b"tail")
    os.truncate(mnt / "new.bin", 100_004)
    assert (backing / "new.bin").read_bytes() == data[:100_000] + data[100_000:100_004]
    with open(mnt / "new.bin", "r+b") as f:  # overwrite in the middle
        f.seek(5000)
        f.write(b"X" * 10)
        os.fdatasync(f.fileno())
    expect = bytearray(data[:100_004])
    expect[5000:5010] = b"X" * 10
    assert (backing / "new.bin").read_bytes() == expect
    assert (mnt / "new.bin").read_bytes() == expect

    (mnt / "dir").mkdir()
    os.rename(mnt / "new.bin", mnt / "dir" / "moved.bin")
    assert not (backing / "new.bin").exists()
    assert (backing / "dir" / "moved.bin").read_bytes() == expect
    os.link(mnt / "dir" / "moved.bin", mnt / "hard")
    assert os.stat(backing / "hard").st_ino == os.stat(backing / "dir" / "moved.bin").st_ino
    os.symlink("dir/moved.bin", mnt / "sym")
    assert os.readlink(backing / "sym") == "dir/moved.bin"
    os.chmod(mnt / "hard", 0o640)
    assert os.stat(backing / "hard").st_mode & 0o777 == 0o640
    os.utime(mnt / "hard", (1_000_000, 2_000_000))
    assert os.stat(backing / "hard").st_mtime == 2_000_000
    os.unlink(mnt / "hard")
    os.unlink(mnt / "sym")
    os.unlink(mnt / "dir" / "moved.bin")
    os.rmdir(mnt / "dir")
    assert sorted(os.listdir(backing)) == sorted(os.listdir(mnt)) == ["d0", "d1", "d2", "d3", "link"]


def test_direct_io_reads_and_writes(mounted):
    backing, mnt = mounted
    size = 4 * 65536
    data = os.urandom(size)
    (backing / "direct.bin").write_bytes(data)
    buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT wants
    fd = os.open(mnt / "direct.bin", os.O_RDWR | os.O_DIRECT)
    try:
        assert os.preadv(fd, [buf], 0) == size
        assert bytes(buf) == data
        buf[:4096] = b"D" * 4096
        assert os.pwritev(fd, [memoryview(buf)[:4096]], 65536) == 4096
    finally:
        os.close(fd)
    assert (backing / "direct.bin").read_bytes()[65536:65536 + 4096] == b"D" * 4096


def test_unlinked_open_file_stays_readable(mounted):
    backing, mnt = mounted
    (mnt / "tmp.bin").write_bytes(b"still here")
    with open(mnt / "tmp.bin", "rb") as f:
        os.unlink(mnt / "tmp.bin")
        assert f.read() == b"still here"
    assert not (backing / "tmp.bin").exists()


def test_files_created_by_a_user_belong_to_that_user(mounted):
    backing, mnt = mounted
    nobody = pwd.getpwnam("nobody")
    (mnt / "shared").mkdir()
    os.chmod(mnt / "shared", 0o777)
    pid = os.fork()
    if pid == 0:  # child: become nobody and create one of each kind
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            (mnt / "shared" / "file").write_text("x")
            (mnt / "shared" / "dir").mkdir()
            os.symlink("file", mnt / "shared" / "sym")
            os.mkfifo(mnt / "shared" / "fifo")
            os._exit(0)
        except BaseException:
            os._exit(1)
    assert os.waitpid(pid, 0)[1] == 0
    for name in ("file", "dir", "sym", "fifo"):
        st = os.lstat(backing / "shared" / name)
        assert (st.st_uid, st.st_gid) == (nobody.pw_uid, nobody.pw_gid), name


def test_stats_shape_and_counters_grow(mounted):
    backing, mnt = mounted
    before = stats(mnt)
    assert set(before) >= {"preset", "model", "uptime_s", "requests", "bytes", "classes", "disks"}
    assert before["preset"] == "paper2003"
    assert before["model"] == {"disks": 4, "stripe_kb": 64, "latency_ms": 1, "jitter_pct": 0,
                               "bandwidth_mbps": 40, "bus_mbps": 40, "metadata_latency_ms": 0,
                               "priority": True, "placement": "striped", "seed": 1,
                               "metadata_ms": {"lookup": 0, "open": 0, "readdir": 0,
                                               "readlink": 0},
                               "readdir_entries": 1000, "attr_timeout_s": 1}
    for cls in ("regular", "idle"):
        assert set(before["classes"][cls]) == {"requests", "bytes", "queue_wait_s", "service_s"}
    assert len(before["disks"]) == 4
    assert all(set(d) == {"requests", "bytes", "busy_s"} for d in before["disks"])

    (backing / "fresh.bin").write_bytes(os.urandom(500_000))  # never cached by the mount
    (mnt / "fresh.bin").read_bytes()
    after = stats(mnt)
    assert after["requests"] > before["requests"]
    assert after["bytes"] - before["bytes"] >= 500_000
    grown = after["classes"]["regular"]
    assert grown["requests"] > before["classes"]["regular"]["requests"]
    assert grown["service_s"] > before["classes"]["regular"]["service_s"]
    assert sum(d["busy_s"] for d in after["disks"]) > sum(d["busy_s"] for d in before["disks"])
    assert after["uptime_s"] > before["uptime_s"]
    table = run_specx("slowfs", "--stats", mnt, check=True).stdout
    assert "regular" in table and "idle" in table and "paper2003" in table


def read_as_idle(path):
    subprocess.run(["ionice", "-c3", "cat", str(path)], stdout=subprocess.DEVNULL, check=True)


def test_idle_class_reader_is_counted_as_idle(mounted):
    backing, mnt = mounted
    (backing / "for-idle.bin").write_bytes(os.urandom(300_000))
    before = stats(mnt)["classes"]
    read_as_idle(mnt / "for-idle.bin")
    after = stats(mnt)["classes"]
    assert after["idle"]["bytes"] - before["idle"]["bytes"] >= 300_000
    assert after["regular"]["requests"] == before["regular"]["requests"]


def test_no_priority_serves_idle_readers_as_regular(workdir):
    backing = workdir / "backing"
    backing.mkdir()
    (backing / "f").write_bytes(os.urandom(200_000))
    with slowfs_mount(backing, workdir / "mnt", *FAST, "--no-priority") as mnt:
        read_as_idle(mnt / "f")
        s = stats(mnt)
        assert s["model"]["priority"] is False
        assert s["classes"]["idle"]["requests"] == 0
        assert s["classes"]["regular"]["bytes"] >= 200_000


def test_metadata_latency_applies_to_lookups(workdir):
    backing = make_tree(workdir / "backing")
    with slowfs_mount(backing, workdir / "mnt", *FAST, "--metadata-latency-ms", "0.5",
                      "--preset", "hdd") as mnt:
        assert len(list(mnt.rglob("*"))) > 36
        s = stats(mnt)
        assert s["preset"] == "hdd" and s["model"]["disks"] == 1
        assert s["model"]["metadata_latency_ms"] == 0.5 and s["model"]["latency_ms"] == 1
        assert s["metadata"]["requests"] >= 9  # at least one per directory read


CHUNK = 65536
# What the hdd preset's model charges a CHUNK on its one disk: 8 ms + 64 KiB at 160 MB/s.
HDD_CHUNK_S = 0.008 + CHUNK / 160e6


def direct_io(path, count, write):
    """COUNT chunks of CHUNK bytes written to (or read from) PATH with O_DIRECT, so each one
    reaches the device as one request and none is absorbed by the page cache."""
    buf = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT wants
    buf.write(os.urandom(CHUNK))
    flags = (os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY) | os.O_DIRECT
    fd = os.open(path, flags, 0o644)
    try:
        for i in range(count):
            done = os.pwrite(fd, buf, i * CHUNK) if write else os.preadv(fd, [buf], i * CHUNK)
            assert done == CHUNK
    finally:
        os.close(fd)


def write_stats_table(mnt):
    """The table's device line and its last line (metadata and writes)."""
    lines = run_specx("slowfs", "--stats", mnt, check=True).stdout.splitlines()
    return lines[0], lines[-1]


def test_model_writes_occupy_the_disk(workdir):
    """--model-writes: every write costs the disk what a read of its range would, in the
    disk's busy time and in the writer's time."""
    (workdir / "backing").mkdir()
    with slowfs_mount(workdir / "backing", workdir / "mnt", "--preset", "hdd",
                      "--model-writes") as mnt:
        before = stats(mnt)
        start = time.monotonic()
        direct_io(mnt / "out.bin", 64, write=True)
        elapsed = time.monotonic() - start
        after = stats(mnt)
        device, last = write_stats_table(mnt)
    w, w0 = after["writes"], before["writes"]
    assert w["modelled"] is True
    assert w["requests"] - w0["requests"] >= 64 and w["bytes"] - w0["bytes"] >= 64 * CHUNK
    # The model's arithmetic, not the clock: at least 64 chunks' service, all of it waited for.
    assert w["service_s"] - w0["service_s"] >= 64 * HDD_CHUNK_S * 0.999
    assert after["disks"][0]["busy_s"] - before["disks"][0]["busy_s"] >= 64 * HDD_CHUNK_S * 0.999
    assert after["requests"] == before["requests"]  # writes are not counted as reads
    # Each write returned only once its modelled time was over: a lower bound load cannot break.
    assert elapsed >= 64 * HDD_CHUNK_S * 0.9
    assert device.endswith("writes modelled")
    assert "(modelled)" in last and "wait" in last and "not modelled" not in last


def test_modelled_writes_and_reads_queue_on_one_disk(workdir):
    """A read that arrives while a modelled write holds the disk waits behind it."""
    (workdir / "backing").mkdir()
    (workdir / "backing" / "in.bin").write_bytes(os.urandom(8 * CHUNK))
    with slowfs_mount(workdir / "backing", workdir / "mnt", "--preset", "hdd",
                      "--model-writes") as mnt:
        writer = threading.Thread(target=direct_io, args=(mnt / "out.bin", 128, True))
        writer.start()
        try:
            assert wait_for(lambda: stats(mnt)["writes"]["requests"] >= 4)
            before = stats(mnt)["classes"]["regular"]
            direct_io(mnt / "in.bin", 8, write=False)
            after = stats(mnt)["classes"]["regular"]
        finally:
            writer.join()
    assert after["requests"] - before["requests"] >= 8
    assert after["queue_wait_s"] > before["queue_wait_s"]


def test_writes_are_free_without_model_writes(workdir):
    """The default: writes are counted, take no disk time and wait for nothing."""
    (workdir / "backing").mkdir()
    with slowfs_mount(workdir / "backing", workdir / "mnt", "--preset", "hdd") as mnt:
        before = stats(mnt)
        direct_io(mnt / "out.bin", 64, write=True)
        after = stats(mnt)
        device, last = write_stats_table(mnt)
    w, w0 = after["writes"], before["writes"]
    assert w["modelled"] is False
    assert w["requests"] - w0["requests"] >= 64 and w["bytes"] - w0["bytes"] >= 64 * CHUNK
    assert w["queue_wait_s"] == 0 and w["service_s"] == 0
    assert after["disks"] == before["disks"]  # the disk's timeline never saw them
    assert "writes modelled" not in device
    assert last.endswith("bytes (not modelled)")


def check_refused(args, expect, **kw):
    """Runs specx slowfs ARGS, which must fail with one line naming the problem and leave
    nothing mounted."""
    before = mount_points()
    r = run_specx("slowfs", *args, **kw)
    assert r.returncode != 0
    assert r.stderr.startswith("specx slowfs: ") and r.stderr.count("\n") == 1, r.stderr
    assert expect in r.stderr, r.stderr
    assert mount_points() == before


@pytest.mark.parametrize("case", [
    "missing-backing", "backing-is-file", "missing-mountpoint", "mountpoint-not-empty",
    "mountpoint-in-backing", "unknown-preset", "zero-disks", "negative-latency",
    "zero-bandwidth", "bad-number", "one-operand",
])
def test_bad_input_is_refused(workdir, case):
    b, m = workdir / "b", workdir / "m"
    b.mkdir()
    m.mkdir()
    (workdir / "file").write_text("x")
    args, expect = {
        "missing-backing": ([workdir / "nope", m], "No such file"),
        "backing-is-file": ([workdir / "file", m], "not a directory"),
        "missing-mountpoint": ([b, workdir / "nope"], "No such file"),
        "mountpoint-not-empty": ([b, workdir], "not empty"),
        "mountpoint-in-backing": ([workdir, m], "inside the backing directory"),
        "unknown-preset": (["--preset", "floppy", b, m], "paper2003, hdd, cloud-disk"),
        "zero-disks": (["--disks", "0", b, m], "--disks"),
        "negative-latency": (["--latency-ms", "-3", b, m], "--latency-ms"),
        "zero-bandwidth": (["--bandwidth-mbps", "0", b, m], "--bandwidth-mbps"),
        "bad-number": (["--stripe-kb", "64k", b, m], "--stripe-kb"),
        "one-operand": ([b], "expected BACKING_DIR and MOUNTPOINT"),
    }[case]
    check_refused(args, expect)
    check_refused(["-d", *args], expect)


def test_busy_mountpoint_is_refused(mounted, workdir):
    backing, mnt = mounted
    other = workdir / "other"
    other.mkdir()
    check_refused([other, mnt], "already a mount point")


def test_non_root_is_refused(workdir, unprivileged_build):
    (workdir / "b").mkdir()
    (workdir / "m").mkdir()
    nobody = pwd.getpwnam("nobody")
    build, env = unprivileged_build

    def become_nobody():
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    check_refused([workdir / "b", workdir / "m"], "must be run as root", exe=build / "specx",
                  env={**os.environ, **env}, preexec_fn=become_nobody)


def test_stats_and_unmount_refuse_other_directories(workdir):
    check_refused(["--stats", workdir], "not a slowfs mount point")
    check_refused(["--unmount", workdir], "not a slowfs mount point")



def test_unmount_waits_for_the_server(workdir):
    (workdir / "b").mkdir()
    mnt = workdir / "m"
    mnt.mkdir()
    run_specx("slowfs", "-d", *FAST, workdir / "b", mnt, check=True)
    assert str(mnt) in mount_points()  # -d returns only once the mount is live
    pid = stats(mnt)["pid"]
    run_specx("slowfs", "--unmount", mnt, check=True)
    assert str(mnt) not in mount_points()
    assert has_exited(pid)


def has_exited(pid):
    """Gone, or a zombie its new parent (init) has not reaped yet."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_unmounts_a_foreground_server(workdir, sig, specx):
    (workdir / "b").mkdir()
    (workdir / "b" / "f").write_text("data")
    mnt = workdir / "m"
    mnt.mkdir()
    # A shell starts background jobs with SIGINT ignored, and libfuse (like most servers)
    # leaves an ignored signal ignored: give the server the default disposition, as a
    # foreground command typed at a terminal has, whatever way the tests were started.
    server = subprocess.Popen([specx, "slowfs", *FAST, workdir / "b", mnt],
                              stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(lambda: str(mnt) in mount_points() and
                         subprocess.run(["umount", "-l", str(mnt)]))
        assert wait_for(lambda: str(mnt) in mount_points())
        assert (mnt / "f").read_text() == "data"
        server.send_signal(sig)
        assert server.wait(timeout=10) == 0, server.stderr.read()
        assert str(mnt) not in mount_points()
