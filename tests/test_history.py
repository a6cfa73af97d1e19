"""specx run's history (docs/design/history.md): what a command's last run read, brought in
ahead of its next run; the store an unprivileged user keeps it in, attacked as another user
and as a corrupt or hostile file would; the program's output and files the same with and
without it; `specx history list|show|forget`.

The tests run specx as an unused uid (no passwd entry) with a cache directory of its own in a
temporary directory: root's store (/var/cache/specx/history) is never touched, and nothing
stays after a test."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import evict, slowfs_mount

USER, OTHER = 61234, 61235
READ_ALL = ("import hashlib, sys\nh = hashlib.sha256()\nfor p in sys.argv[2:]:\n"
            "    h.update(open(p, 'rb').read())\nopen(sys.argv[1], 'w').write(h.hexdigest())\n"
            "print(h.hexdigest())\n")

pytestmark = pytest.mark.root  # setpriv to another uid, page-cache eviction, slowfs


def as_uid(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


@pytest.fixture
def home(unprivileged_build):
    """A temporary home of USER: (its path, a function that runs specx there as USER)."""
    build, extra = unprivileged_build
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-history-"))
    top.chmod(0o755)
    os.chown(top, USER, USER)
    env = {k: v for k, v in os.environ.items() if k != "SPECX_RUN_HISTORY"}
    env.update(extra, HOME=str(top), XDG_CACHE_HOME=str(top / "cache"))

    def specx(*args, uid=USER, cwd=top, popen=False):
        command = [*as_uid(uid), str(build / "specx"), *map(str, args)]
        if popen:
            return subprocess.Popen(command, env=env, cwd=cwd)
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env,
                              cwd=cwd)
    try:
        yield top, specx
    finally:
        shutil.rmtree(top)


def user_files(top, n=6, size=300_000):
    """N files of USER's with random contents, out of the page cache."""
    data = top / "data"
    data.mkdir()
    paths = []
    for i in range(n):
        path = data / f"f{i:02d}"
        path.write_bytes(os.urandom(size))
        paths.append(path)
    for path in [data, *paths]:
        os.chown(path, USER, USER)
    os.sync()
    evict(*paths)
    return paths


def history_json(report_text):
    return json.loads(report_text[report_text.index("{"):])["history"]


def record(specx, top, paths, command=("md5sum",)):
    """Runs COMMAND over PATHS once, recording; returns the history's file."""
    proc = specx("run", "--history=record", "--json", "-", "--", *command, *paths)
    assert proc.returncode == 0, proc.stderr
    assert history_json(proc.stdout)["saved"], proc.stdout[-2000:]
    store = top / "cache" / "specx" / "history"
    (name,) = [p for p in store.iterdir() if p.name.endswith(".hist")]
    return name


def only_line(stderr, *words):
    lines = [line for line in stderr.splitlines() if line]
    assert len(lines) == 1 and all(w in lines[0] for w in words), stderr
    assert lines[0].startswith("specx run: ") or lines[0].startswith("specx history: ")


# ---- what it does ----

def test_the_second_run_is_served_by_what_the_first_read(home):
    """A program reading files cold on slowfs, twice: the first run records, the second
    brings the ranges in ahead of the program and the program reads them (no timing)."""
    top, specx = home
    backing = top / "backing"
    backing.mkdir()
    paths = []
    for i in range(12):
        (backing / f"f{i:02d}").write_bytes(os.urandom(40_000))
        os.chown(backing / f"f{i:02d}", USER, USER)
    with slowfs_mount(backing, top / "mnt", "--preset", "paper2003") as mnt:
        paths = sorted(mnt.iterdir())
        out = top / "out"
        reports = []
        for _ in range(2):
            evict(*paths)
            proc = specx("run", "--json", "-", "--", "python3", "-c", READ_ALL, out, *paths)
            assert proc.returncode == 0, proc.stderr
            reports.append(history_json(proc.stdout))
    first, second = reports
    assert first["saved"] and first["recorded_entries"] >= len(paths) and not first["replayed"]
    assert second["replayed"] and not second["near"] and second["entries"] >= len(paths)
    assert second["prefetched_bytes"] > 0 and second["used_bytes"] > 0, second
    assert second["served_reads"] + second["late_reads"] > 0, second


def test_a_static_program_has_a_history_seen_from_outside(home, unprivileged_build):
    """A statically linked program (no runtime inside it: the supervisor serves it): its
    reads that wait are sampled from outside and kept; by default only kept (its replay
    cannot see what it serves), brought in where --history=replay asks."""
    top, specx = home
    treesum = unprivileged_build[0] / "bench" / "programs" / "treesum-static"
    if not treesum.exists():
        pytest.skip("treesum-static was not built (no static C library here)")
    backing = top / "backing"
    backing.mkdir()
    for i in range(60):
        (backing / f"f{i:02d}").write_bytes(os.urandom(30_000))
        os.chown(backing / f"f{i:02d}", USER, USER)
    with slowfs_mount(backing, top / "mnt", "--preset", "paper2003") as mnt:
        paths = sorted(mnt.iterdir())
        reports, outputs = [], []
        for mode in ("auto", "replay", "auto"):
            evict(*paths)
            proc = specx("run", f"--history={mode}", "--json", "-", "--", treesum, mnt)
            assert proc.returncode == 0, proc.stderr
            out, _, json_text = proc.stdout.partition("{\n")
            outputs.append(out)
            reports.append(json.loads("{\n" + json_text))
    first, second, third = (r["history"] for r in reports)
    assert reports[0]["mechanism"] == "supervisor" and first["outside"]
    assert first["saved"] and first["recorded_entries"] > 0, first
    assert second["replayed"] and second["prefetched_bytes"] > 0, second
    assert not third["replayed"] and third["saved"], third
    assert outputs[0] == outputs[1] == outputs[2]


def test_output_and_files_are_the_same_with_and_without_history(home):
    """Differential: plain, history off, recording and replaying give the same output and
    the same files; the replay writes nothing (inputs unchanged, to the nanosecond)."""
    top, specx = home
    paths = user_files(top)
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in paths]
    results = []
    plain = subprocess.run([*as_uid(USER), "python3", "-c", READ_ALL, top / "out-plain",
                            *paths], capture_output=True, text=True, timeout=60)
    for mode in ("off", "record", "replay", "auto"):
        evict(*paths)
        out = top / f"out-{mode}"
        proc = specx("run", f"--history={mode}", "--", "python3", "-c", READ_ALL, out, *paths)
        results.append((proc.returncode, proc.stdout, proc.stderr, out.read_text()))
    assert plain.returncode == 0
    for result in results:
        assert result == (0, plain.stdout, "", (top / "out-plain").read_text())
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in paths] == before


def test_the_next_run_finds_what_the_last_one_has_just_written(home):
    """Without a report specx run becomes the command, and its keeper writes the history just
    after the command has ended: the next run of the command waits for it (a lock the keeper
    holds from before the command starts), so it replays the newest history."""
    top, specx = home
    paths = user_files(top, n=3)
    for _ in range(5):
        evict(*paths)
        first = specx("run", "--history=record", "--", "md5sum", *paths)
        assert first.returncode == 0, first.stderr
        evict(*paths)
        proc = specx("run", "--history=replay", "--json", "-", "--", "md5sum", *paths)
        got = history_json(proc.stdout)
        assert got["replayed"] and got["entries"] >= len(paths), got
        specx("history", "forget", "--", "md5sum", *paths)


def test_a_wrong_history_is_stopped_by_the_control(home):
    """The same program with other arguments lends its start-up reads; where the program
    reads none of them, the control counts them unused and stops the replay (no timing: the
    program only waits long enough for the keeper to have judged an interval)."""
    top, specx = home
    paths = user_files(top, n=24, size=100_000)
    lent, own = paths[:-1], paths[-1:]
    proc = specx("run", "--history=record", "--json", "-", "--", "python3", "-c", READ_ALL,
                 top / "out", *lent)
    assert history_json(proc.stdout[proc.stdout.index("{\n"):])["saved"]
    evict(*paths)
    later = "import time\ntime.sleep(4)\n" + READ_ALL
    proc = specx("run", "--json", "-", "--", "python3", "-c", later, top / "out", *own)
    assert proc.returncode == 0, proc.stderr
    got = history_json(proc.stdout[proc.stdout.index("{\n"):])
    assert got["replayed"] and got["near"] and got["stopped"], got
    assert got["unused_bytes"] > 0 and got["used_bytes"] == 0, got


def test_what_a_program_maps_is_recorded_too(home):
    """A mapped file's faults give the runtime no hook: what of the mapping is in memory when
    the run ends is kept."""
    top, specx = home
    (path,) = user_files(top, n=1, size=1 << 20)
    touch = ("import mmap, sys\nf = open(sys.argv[1], 'rb')\n"
             "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\nprint(m[0] + m[8192])\n")
    # With a report specx run waits for the command and writes its history before it ends.
    proc = specx("run", "--history=record", "--json", top / "report.json", "--", "python3", "-c",
                 touch, path)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(specx("history", "show", "--json", "-", "--", "python3", "-c", touch,
                             path).stdout)
    ranges = [r for r in shown["ranges"] if r["path"] == str(path)]
    assert ranges and ranges[0]["offset"] == 0, shown


def test_what_the_dynamic_loader_maps_is_recorded_too(home):
    """A library loaded with dlopen (a Python or Node extension module) is mapped by ld.so,
    which calls no interposed mmap: its pages come in by faults alone, and the next run must
    still find it in the history."""
    top, specx = home
    backing = top / "backing"
    backing.mkdir()
    shutil.copy(ctypes_util_library("z"), backing / "libcopy.so")
    (backing / "data").write_bytes(os.urandom(300_000))
    for path in (backing / "libcopy.so", backing / "data"):
        os.chown(path, USER, USER)
    # After the load, a read that waits for the slow device: the runtime looks at what the
    # loader mapped when it notes a read.
    load = ("import ctypes, sys\nctypes.CDLL(sys.argv[1]).zlibVersion()\n"
            "print(len(open(sys.argv[2], 'rb').read()))\n")
    with slowfs_mount(backing, top / "mnt", "--preset", "paper2003") as mnt:
        library, cold = mnt / "libcopy.so", mnt / "data"
        evict(library, cold)
        proc = specx("run", "--history=record", "--json", top / "report.json", "--", "python3",
                     "-c", load, library, cold)
        assert proc.returncode == 0, proc.stderr
        shown = json.loads(specx("history", "show", "--json", "-", "--", "python3", "-c", load,
                                 library, cold).stdout)
    assert any(r["path"] == str(library) for r in shown["ranges"]), shown


def ctypes_util_library(name):
    """The path of the system's shared library NAME (as ctypes finds it)."""
    import ctypes.util
    found = ctypes.util.find_library(name)
    if not found:
        pytest.skip(f"no lib{name} here")
    out = subprocess.run(["python3", "-c", f"import ctypes;l=ctypes.CDLL({found!r});"
                          "import os;print([m.split()[-1] for m in open('/proc/self/maps') "
                          f"if {found!r} in m][0])"], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"lib{name} cannot be located: {out.stderr.strip()}")
    return out.stdout.strip()


def test_a_changed_file_is_stale_and_not_brought_in(home):
    top, specx = home
    paths = user_files(top, n=1)
    # The program waits a little, so that the replay reaches the file before it does.
    command = ("sh", "-c", 'sleep 1; md5sum "$@"', "sh")
    record(specx, top, paths, command)
    with open(paths[0], "ab") as f:
        f.write(b"changed")
    os.sync()
    evict(*paths)
    proc = specx("run", "--history=replay", "--json", "-", "--", *command, *paths)
    got = history_json(proc.stdout)
    assert proc.returncode == 0 and got["stale_files"] == 1, got
    assert got["prefetched_bytes"] == 0 and got["used_bytes"] == 0, got


# ---- the store, attacked ----

@pytest.mark.parametrize("plant", ["other-owner", "open-mode", "symlink"])
def test_a_store_someone_else_can_steer_is_refused(home, plant):
    """Another user's planted history directory, one open to others, or a link to a
    directory elsewhere: one line, the command runs as without history, nothing is written
    there."""
    top, specx = home
    parent = top / "cache" / "specx"
    parent.mkdir(parents=True)
    for p in (top / "cache", parent):
        os.chown(p, USER, USER)
        p.chmod(0o700)
    elsewhere = top / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.chown(elsewhere, USER, USER)
    if plant == "symlink":
        (parent / "history").symlink_to(elsewhere)
        os.lchown(parent / "history", USER, USER)
        target, words = elsewhere, ("symbolic link", "not kept there")
    else:
        target = parent / "history"
        target.mkdir()
        if plant == "other-owner":
            os.chown(target, OTHER, OTHER)
            target.chmod(0o777)  # the other user lets us write: still not ours
            words = (f"owned by uid {OTHER}", "not kept there")
        else:
            os.chown(target, USER, USER)
            target.chmod(0o755)
            words = ("open to others", "not kept there")
    paths = user_files(top, n=1)
    proc = specx("run", "--history=auto", "--", "md5sum", *paths)
    assert proc.returncode == 0 and str(paths[0]) in proc.stdout
    only_line(proc.stderr, *words)
    assert list(target.iterdir()) == []
    listing = specx("history", "list")
    assert listing.returncode == 1
    only_line(listing.stderr, *words)


@pytest.mark.parametrize("damage", ["flipped", "truncated", "oversized", "symlink",
                                    "hard-link", "other-owner"])
def test_a_corrupt_or_hostile_history_is_refused_in_one_line(home, damage):
    top, specx = home
    paths = user_files(top, n=2)
    name = record(specx, top, paths)
    data = bytearray(name.read_bytes())
    words = {"flipped": "checksum does not match", "truncated": "truncated",
             "oversized": "larger than a history can be", "symlink": "symbolic link",
             "hard-link": "other links", "other-owner": "owned by another user"}[damage]
    if damage == "flipped":
        data[len(data) // 2] ^= 0x40
        name.write_bytes(data)
    elif damage == "truncated":
        name.write_bytes(data[:len(data) - 5])
    elif damage == "oversized":
        name.write_bytes(data + b"\0" * (2 << 20))
    elif damage == "symlink":
        real = top / "real.hist"
        name.rename(real)
        name.symlink_to(real)
    elif damage == "hard-link":
        os.link(name, top / "second-link")
    else:
        os.chown(name, OTHER, OTHER)
        name.chmod(0o644)  # theirs, and readable: still not ours to trust
    evict(*paths)
    proc = specx("run", "--history=replay", "--json", "-", "--", "md5sum", *paths)
    assert proc.returncode == 0
    only_line(proc.stderr, "refused", words)
    got = history_json(proc.stdout[proc.stdout.index("{\n"):])
    assert not got["replayed"] and got["prefetched_bytes"] == 0
    show = specx("history", "show", name.name)
    assert show.returncode == 1
    only_line(show.stderr, "refused", words)


def test_a_history_under_another_commands_name_is_refused(home):
    """A valid history is valid for its own command only: the name it is found under must be
    the one its contents give."""
    top, specx = home
    paths = user_files(top, n=1)
    name = record(specx, top, paths)
    program, key = name.stem.split("-")
    other = name.with_name(f"{program}-{int(key, 16) ^ 1:016x}.hist")
    name.rename(other)
    show = specx("history", "show", other.name)
    assert show.returncode == 1
    only_line(show.stderr, "refused", "another command's")


def test_history_is_never_readable_by_another_user(home):
    top, specx = home
    paths = user_files(top, n=1)
    name = record(specx, top, paths)
    store = name.parent
    assert store.stat().st_mode & 0o777 == 0o700 and name.stat().st_mode & 0o777 == 0o600
    assert (store.stat().st_uid, name.stat().st_uid) == (USER, USER)
    peek = subprocess.run([*as_uid(OTHER), "cat", name], capture_output=True)
    assert peek.returncode != 0
    listing = subprocess.run([*as_uid(OTHER), "ls", store], capture_output=True)
    assert listing.returncode != 0


def test_the_trace_of_a_running_command_is_not_open_to_another_user(home):
    """The runtime's trace is a memory file named /proc/PID/fd/N: its user's processes open
    it, another user cannot."""
    top, specx = home
    named = top / "trace-path"
    command = specx("run", "--history=record", "--", "sh", "-c",
                    f'echo "$SPECX_HISTORY_TRACE" > {named}.new && mv {named}.new {named}; '
                    'sleep 2', popen=True)
    try:
        deadline = time.monotonic() + 30
        while not named.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        trace = named.read_text().strip()
        assert trace.startswith("/proc/"), trace
        mine = subprocess.run([*as_uid(USER), "test", "-r", trace])
        theirs = subprocess.run([*as_uid(OTHER), "dd", f"if={trace}", "of=/dev/null",
                                 "count=1"], capture_output=True)
        assert mine.returncode == 0 and theirs.returncode != 0
    finally:
        command.wait(timeout=60)


# ---- specx history ----

def test_list_show_and_forget(home):
    top, specx = home
    paths = user_files(top, n=2)
    name = record(specx, top, paths)
    listing = specx("history", "list")
    assert listing.returncode == 0 and name.name[17:33] in listing.stdout
    assert "md5sum" in listing.stdout
    as_json = json.loads(specx("history", "list", "--json", "-").stdout)
    assert [h["name"] for h in as_json] == [name.name]
    assert as_json[0]["argv"] == ["md5sum", *map(str, paths)]
    shown = json.loads(specx("history", "show", "--json", "-", "--", "md5sum", *paths).stdout)
    in_order = list(dict.fromkeys(r["path"] for r in shown["ranges"]))
    # The program's own files (its executable, libraries, locale) are read too, by mapping.
    assert [p for p in in_order if p.startswith(str(top))] == [str(p) for p in paths]
    assert os.path.realpath(shutil.which("md5sum")) in in_order
    assert specx("history", "show", name.name[17:25]).returncode == 0
    bad = specx("history", "show", "nosuchid")
    assert bad.returncode == 1
    only_line(bad.stderr, "no such history")
    usage = specx("history", "frobnicate")
    assert usage.returncode == 2
    only_line(usage.stderr, "frobnicate")
    assert specx("history", "forget", name.name[17:25]).returncode == 0
    assert not name.exists()
    assert json.loads(specx("history", "list", "--json", "-").stdout) == []


def test_a_bad_history_mode_is_refused(home):
    _, specx = home
    proc = specx("run", "--history=sometimes", "--", "true")
    assert proc.returncode == 2
    only_line(proc.stderr, "sometimes")
