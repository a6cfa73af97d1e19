"""Differential safety tests (paper §4.1.1): a program run under `specx run` must be
indistinguishable from the same program run without it. Each case runs opvm (tests/safety/opvm.c)
on a script of cold reads from a slowfs mount interleaved with side effects, once plainly and
once under `specx run`, from the same cold state and in the same working directory, and
compares stdout, stderr, the exit status or signal, and every file of the working directory.
The speculative copy reaches each side effect while opvm waits for the read before it.

Cases: a hand-written corpus (tests/safety/corpus/*.ops), programs generated from seeds
(SPECX_TEST_LONG=1 runs many more), the corpus and generated programs again while speculative
processes are killed at random moments (no hang, no process left behind), and real programs
(grep, sha256sum, tar, SQLite through Python)."""
import dataclasses
import hashlib
import json
import os
import pathlib
import random
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import BUILD, LONG, SPECX, evict, slowfs_mount

REPO = pathlib.Path(__file__).resolve().parent.parent
CORPUS = sorted((REPO / "tests" / "safety" / "corpus").glob("*.ops"))
OPVM = BUILD / "tests" / "safety" / "opvm"
# The same statically linked: served by the supervisor (src/run/supervisor), not the runtime.
OPVM_STATIC = BUILD / "tests" / "safety" / "opvm-static"
DATA_FILES = [f"d{i:02d}" for i in range(24)]
# What opvm --streams's reading thread reads, a stream of its own beside the script's.
STREAM_FILES = [f"stream/f{i:02d}" for i in range(40)]
SEEDS = range(500) if LONG else range(60)
STDIN = "stdin-line-1\nstdin-line-2\nstdin-tail\n"
RUN_TIMEOUT = 60

pytestmark = pytest.mark.root


@dataclasses.dataclass
class Outcome:
    stdout: str
    stderr: str
    returncode: int
    files: dict


@pytest.fixture(scope="module")
def env():
    """A slowfs mount over a data tree, a template of the working directory, and a scratch
    directory; all removed afterwards."""
    for path in (SPECX, OPVM):
        if not path.exists():
            pytest.fail(f"{path} is missing: build first (make build)")
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-safety-"))
    backing = top / "backing"
    (backing / "sub").mkdir(parents=True)
    rng = random.Random(2003)
    for name in DATA_FILES:
        (backing / name).write_bytes(rng.randbytes(48 * 1024))
    for i in range(3):
        (backing / "sub" / f"s{i}").write_bytes(rng.randbytes(4096))
    (backing / "stream").mkdir()
    for name in STREAM_FILES:
        (backing / name).write_bytes(rng.randbytes(8192))
    with sqlite3.connect(backing / "lookup.db") as db:
        db.execute("create table t (k integer primary key, v blob)")
        db.executemany("insert into t values (?, ?)",
                       ((k, rng.randbytes(400)) for k in range(20000)))
    template = top / "template"
    (template / "emptydir").mkdir(parents=True)
    (template / "olddir").mkdir()
    (template / "olddir" / "inner.txt").write_text("inner\n")
    (template / "keep.txt").write_text("keep this content\n")
    (template / "victim.txt").write_text("to be removed\n")
    (template / "log.txt").write_text("log start\n")
    (template / "input.txt").write_text(STDIN)
    try:
        # A copy is made at a stall only if the program's own read is still on its way once
        # the clone is ready (a preemptible refork, §5.1): 20 ms, so that a busy machine that
        # holds the program back a few milliseconds still leaves every run a copy to test.
        with slowfs_mount(backing, top / "mnt", "--latency-ms", "20", "--disks", "1") as mnt:
            yield {"top": top, "mnt": mnt, "template": template}
    finally:
        shutil.rmtree(top)


def make_cold(mnt):
    """Evicts the data files from the page cache: every first read stalls on the slow device."""
    evict(*(mnt / n for n in DATA_FILES + STREAM_FILES), *(mnt / "sub").iterdir(),
          mnt / "lookup.db")


def tree_digest(root):
    """Everything an outsider sees of ROOT: names, types, modes, sizes, contents, link targets."""
    seen = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            seen[rel] = ("link", os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            seen[rel] = ("dir", stat.S_IMODE(st.st_mode))
        else:
            seen[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_nlink,
                         hashlib.sha256(path.read_bytes()).hexdigest())
    return seen


def run_once(env, argv, speculate, stdin=STDIN, during=None, options=()):
    """Runs ARGV in a fresh copy of the template from a cold cache, plainly or under
    `specx run OPTIONS`. DURING(proc) runs in a thread while it runs. Returns (Outcome,
    statistics, session id)."""
    work = env["top"] / "work"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(env["template"], work, symlinks=True)
    stats_path = env["top"] / "stats.json"
    stats_path.unlink(missing_ok=True)
    if speculate:
        argv = [str(SPECX), "run", *options, "--json", str(stats_path), "--", *argv]
    make_cold(env["mnt"])
    # A session of its own: every process of the run, speculative copies included, is in it.
    proc = subprocess.Popen(argv, cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    watcher = None
    if during:
        watcher = threading.Thread(target=during, args=(proc,), daemon=True)
        watcher.start()
    try:
        out, err = proc.communicate(stdin, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{argv} hung (more than {RUN_TIMEOUT} s)")
    if watcher:
        watcher.join()
    stats = json.loads(stats_path.read_text()) if speculate else None
    return Outcome(out, err, proc.returncode, tree_digest(work)), stats, proc.pid


def refork_preempted(stats):
    """Whether the preload runtime began a refork and gave it up because the program's own
    read arrived first (§5.1): a machine loaded enough to hold the program back longer than
    the device's 20 ms can do that at a script's every stall, and a script may have one."""
    total = stats.get("total", {})
    return total.get("refork_attempts", 0) > total.get("spec_created", 0)


def assert_same(env, argv, during=None, need_speculation=True, options=()):
    """Runs ARGV plainly and under `specx run OPTIONS` and compares; returns the plain outcome
    and the session of the speculated run. A speculated run whose every refork was preempted
    is compared and run again (at most three in all): it tested no copy."""
    plain, _, _ = run_once(env, argv, speculate=False)
    for _ in range(3):
        speculated, stats, session = run_once(env, argv, speculate=True, during=during,
                                              options=options)
        # Exit status first: when it differs, it explains the rest.
        assert (speculated.returncode, speculated.stderr) == (plain.returncode, plain.stderr)
        assert speculated.stdout == plain.stdout
        assert speculated.files == plain.files
        # The comparison means something only if speculative copies ran and were sandboxed.
        if stats["mechanism"] == "supervisor":
            made = stats["supervisor"]["copies"]
        else:
            assert stats["total"]["spec_failed"] == 0, stats
            made = stats["total"]["spec_created"]
        if made or not need_speculation or not refork_preempted(stats):
            break
    if need_speculation:
        # A string, which pytest prints whole: its repr of the dict is cut before the counters
        # that say why no copy was made (a busy fresh-clone run once failed here).
        assert made > 0, json.dumps(stats.get("total", stats))
    return plain, session


def script_for(env, text, threads=False, static=False):
    """opvm on TEXT; with THREADS, run by a second thread beside one that keeps taking the
    allocator's and stdout's locks (opvm.c): copies are then of one thread of three; with
    THREADS "streams", beside a thread that reads files of its own (each thread may then have
    a copy of its own, docs/design/read-path.md). STATIC: the statically linked opvm, which the
    supervisor serves."""
    path = env["top"] / "script.ops"
    path.write_text(text.replace("@DATA@", str(env["mnt"])))
    if static and not OPVM_STATIC.exists():
        pytest.skip("opvm-static was not built (no static C library here)")
    opvm = OPVM_STATIC if static else OPVM
    mode = {False: [], True: ["--threads"], "streams": ["--streams", str(env["mnt"] / "stream")]}
    return [str(opvm), *mode[threads], str(path)]


# Every script runs in one thread and beside others, through the preload runtime and, linked
# statically, through the supervisor (specx run's second mechanism). Beside a thread with a
# stream of reads of its own only through the runtime: copies per stream are the runtime's.
VARIANTS = [(threads, static) for static in (False, True)
            for threads in ((False, True, "streams") if not static else (False, True))]
VARIANT_IDS = [f"{'supervisor' if static else 'preload'}-"
               f"{ {False: 'one-thread', True: 'threads', 'streams': 'streams'}[threads]}"
               for threads, static in VARIANTS]
MECHANISMS_AND_THREADS = pytest.mark.parametrize("threads,static", VARIANTS, ids=VARIANT_IDS)


@MECHANISMS_AND_THREADS
@pytest.mark.parametrize("case", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_program_behaves_the_same(env, case, threads, static):
    # A copy of the supervisor starts where a read ended: a script whose one read is its
    # last may give it nothing to run.
    plain, _ = assert_same(env, script_for(env, case.read_text(), threads, static),
                           need_speculation=not static)
    assert "unknown operation" not in plain.stderr


def test_a_copy_per_stream_changes_nothing(env):
    """Every corpus program beside a thread that reads files of its own: the runtime gives the
    thread whose reads the other's copy does not predict a copy of its own (copy.c), and the
    side effects the script's copy reaches stay invisible whichever stream it is. Whether a
    run makes a second copy depends on which thread stalls first and how far the first copy
    got: each case runs until one did (at most three runs), and most cases must have had one."""
    with_streams = 0
    for case in CORPUS:
        argv = script_for(env, case.read_text(), "streams")
        plain, _, _ = run_once(env, argv, speculate=False)
        for _ in range(3):
            speculated, stats, _ = run_once(env, argv, speculate=True)
            assert speculated == plain, case.stem
            assert stats["total"]["spec_failed"] == 0, stats
            if stats["total"]["stream_copies"]:
                assert stats["total"]["copies_peak"] >= 2, json.dumps(stats["total"])
                with_streams += 1
                break
    assert with_streams >= len(CORPUS) // 2, with_streams


@pytest.mark.parametrize("case", ["stdin", "output", "offsets"])
def test_program_with_files_as_stdio_behaves_the_same(env, case):
    """stdin, stdout and stderr are regular files: their offsets are shared with a speculative
    copy until it re-opens them, and its reads of stdin must not move the program's."""
    script = script_for(env, (CORPUS[0].parent / f"{case}.ops").read_text())
    assert_same(env, ["sh", "-c", '"$@" < input.txt > out.txt 2> err.txt', "sh", *script])


# --- generated programs -----------------------------------------------------------------------

WORK_FILES = ["a.txt", "b.txt", "keep.txt", "log.txt", "victim.txt", "olddir/inner.txt"]
WORK_DIRS = ["d1", "d2", "olddir", "emptydir"]


def generate(seed):
    """A random opvm script: cold reads, each followed by a few side effects, and an ending."""
    rng = random.Random(seed)
    word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                           for _ in range(rng.randint(1, 12)))
    wfile, wdir = lambda: rng.choice(WORK_FILES), lambda: rng.choice(WORK_DIRS)
    effects = [
        lambda: f"write {wfile()} {word()}",
        lambda: f"append {wfile()} {word()}",
        lambda: f"unlink {wfile()}",
        lambda: f"rename {wfile()} {wfile()}",
        lambda: f"mkdir {wdir()}",
        lambda: f"rmdir {wdir()}",
        lambda: f"symlink {wfile()} {wdir()}/ln-{word()}",
        lambda: f"link {wfile()} {wdir()}/hl-{word()}",
        lambda: f"truncate {wfile()} {rng.randint(0, 20)}",
        lambda: f"chmod {wfile()} {rng.choice(['600', '644', '755'])}",
        lambda: f"print {word()}",
        lambda: f"eprint {word()}",
        lambda: f"rawout {word()}",
        lambda: f"pipe {word()}",
        lambda: f"shell echo {word()} >> {wfile()}; echo {word()}",
        lambda: f"spawn echo {word()} >&2; exit {rng.randint(0, 3)}",
        lambda: f"killself {rng.choice([1, 10, 12, 15])}",
        lambda: f"killchild {rng.choice([2, 9, 10, 15])}",
        lambda: f"tcp {word()}",
        lambda: f"mapwrite {wfile()} {word()}",
        lambda: f"shmanon {word()}",
        lambda: f"sysv {word()}",
        lambda: f"stdin {rng.randint(1, 8)}",
        lambda: f"open {rng.randint(0, 3)} {wfile()}",
        lambda: f"openrw {rng.randint(4, 7)} {wfile()}",
        lambda: f"openrdwr {rng.randint(0, 3)} {wfile()}",
        lambda: f"writefd {rng.randint(4, 7)} {word()}",
        lambda: f"readn {rng.randint(0, 3)} {rng.randint(1, 40)}",
        lambda: f"list {wdir()}",
        lambda: "list .",
    ]
    reads = [
        lambda: f"read @DATA@/{rng.choice(DATA_FILES)}",
        lambda: f"pread @DATA@/{rng.choice(DATA_FILES)} {rng.randint(0, 40000)} "
                f"{rng.randint(1, 9000)}",
        lambda: f"mmapread @DATA@/{rng.choice(DATA_FILES)}",
        lambda: f"open {rng.randint(0, 3)} @DATA@/{rng.choice(DATA_FILES)}",
        lambda: f"readn {rng.randint(0, 3)} {rng.randint(1, 20000)}",
        lambda: f"open {rng.randint(0, 3)} @DATA@",
        lambda: f"dirents {rng.randint(0, 3)} {rng.randint(1, 10)}",
    ]
    lines = [f"# generated from seed {seed}", f"read @DATA@/{rng.choice(DATA_FILES)}"]
    for _ in range(rng.randint(4, 8)):
        lines.append(rng.choice(reads)())
        lines += [rng.choice(effects)() for _ in range(rng.randint(1, 4))]
    lines.append(rng.choice(["", "exit 0", f"exit {rng.randint(1, 9)}", "crash", "abort"]))
    return "\n".join(lines) + "\n"


# The streams variant on every third seed (all of them in the long run): the corpus and the
# killed copies take it through every case.
GENERATED = [(seed, threads, static) for seed in SEEDS for threads, static in VARIANTS
             if threads != "streams" or LONG or seed % 3 == 0]


@pytest.mark.parametrize("seed,threads,static", GENERATED,
                         ids=[f"{seed}-{VARIANT_IDS[VARIANTS.index((t, s))]}"
                              for seed, t, s in GENERATED])
def test_generated_program_behaves_the_same(env, seed, threads, static):
    assert_same(env, script_for(env, generate(seed), threads, static), need_speculation=not static)


# --- chaos: speculative processes killed at random moments -----------------------------------

def session_processes(session):
    """(pid, state, exit signal) of the processes of SESSION, zombies included."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[3]) == session:
            found.append((int(entry), fields[0], int(fields[35])))
    return found


def sandboxed(pid):
    """Whether process PID runs under a seccomp filter: a copy of either mechanism (the
    supervisor's have the program's exit signal)."""
    try:
        return "Seccomp:\t2" in pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def killer(seed):
    """Kills the run's speculative copies at random moments until it ends."""
    rng = random.Random(seed)

    def run(proc):
        while proc.poll() is None:
            time.sleep(rng.uniform(0.0002, 0.004))
            for pid, _, exit_signal in session_processes(proc.pid):
                if (exit_signal == 0 or sandboxed(pid)) and rng.random() < 0.5:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
    return run


CHAOS_CASES = [(p.stem, p.read_text()) for p in CORPUS] + [
    (f"seed{seed}", generate(1000 + seed)) for seed in (range(200) if LONG else range(20))]


@MECHANISMS_AND_THREADS
@pytest.mark.parametrize("name,text", CHAOS_CASES, ids=[name for name, _ in CHAOS_CASES])
def test_killed_speculation_changes_nothing(env, name, text, threads, static):
    # Killing may happen before a copy exists: whether one was created is up to the timing.
    _, session = assert_same(env, script_for(env, text, threads, static), during=killer(name),
                             need_speculation=False)
    # Speculative copies die with the program (SIGKILL on parent death) and are reaped; at
    # SCHED_IDLE on a busy machine that may take a moment.
    deadline = time.monotonic() + 10
    while session_processes(session) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_processes(session) == [], "left behind (pid, state, exit signal)"


# --- real programs ----------------------------------------------------------------------------

# Random lookups in a read-only SQLite database on the slow device, results stored in a local
# WAL database (shared-memory index, file locks) and printed.
SQLITE_COPY = """
import random, sqlite3
src = sqlite3.connect("file:@DATA@/lookup.db?mode=ro&immutable=1", uri=True)
dst = sqlite3.connect("out.db")
dst.execute("pragma journal_mode=wal")
dst.execute("create table r (k integer, v blob)")
for k in random.Random(7).sample(range(20000), 60):
    v = src.execute("select v from t where k = ?", (k,)).fetchone()[0]
    dst.execute("insert into r values (?, ?)", (k, v))
    dst.commit()
    print(k, v[:8].hex())
dst.close()
"""


@pytest.mark.parametrize("argv", [
    ["sh", "-c", "grep -rc a @DATA@ | sort > grep.out; echo $?"],
    ["sh", "-c", "cd @DATA@ && sha256sum d0* d1* | tee -a $OLDPWD/log.txt"],
    ["sh", "-c", "tar -C @DATA@ -cf - . | tar -C olddir -xf - && ls olddir | wc -l"],
    ["python3", "-c", SQLITE_COPY],
], ids=["grep", "sha256sum", "tar", "sqlite"])
def test_real_program_behaves_the_same(env, argv):
    argv = [a.replace("@DATA@", str(env["mnt"])) for a in argv]
    assert_same(env, argv)
