"""specx run: what the program sees passes through untouched (exit status, signals, standard
streams, environment, children), and the statistics report what happened. No timing asserts:
performance is the benchmarks' business."""
import contextlib
import json
import os
import pathlib
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import (BUILD, NOBODY, SPECX as SPECX_CMD, copies_get_cpu, drop_caches,
                      only_files_cold, run_specx, slowfs_mount)

PY = sys.executable  # the interpreter itself, not a launcher script that forks and execs


def run_json(tmp_path, *cmd, env=None, options=()):
    """Runs `specx run --json FILE [options] -- cmd` and returns (CompletedProcess, report)."""
    report = tmp_path / f"report-{uuid.uuid4().hex}.json"
    proc = run_specx("run", "--json", report, *options, "--", *cmd, env=env)
    return proc, json.loads(report.read_text())


def python(code, *args):
    return [PY, "-c", code, *map(str, args)]


def assert_no_process_with(marker):
    """No process (a speculative copy has its program's command line) outlives the run."""
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert marker.encode() not in cmdline.read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            pass


READ_ALL = "import sys\nfor p in sys.argv[1:]:\n    open(p, 'rb').read()\n"


@pytest.fixture(scope="module")
def cold_tree(tmp_path_factory):
    """40 small files behind a slow device (slowfs, paper2003 preset)."""
    base = tmp_path_factory.mktemp("run")
    backing = base / "backing"
    backing.mkdir()
    for i in range(40):
        (backing / f"f{i:02d}.txt").write_bytes(os.urandom(6000).hex().encode())
    with slowfs_mount(backing, base / "mnt", "--preset", "paper2003") as mnt:
        yield sorted(mnt.iterdir())


# ---- command line ----

def test_help_and_bad_usage(specx):
    assert run_specx("run", "--help").returncode == 0
    for args in (["--no-such-option", "true"], ["-Z", "true"], [], ["--horizon", "0", "true"],
                 ["--horizon", "x", "true"], ["--json"]):
        proc = run_specx("run", *args)
        assert proc.returncode == 2
        assert proc.stderr.startswith("specx run: ") and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("option", ["--json", "--report="])
def test_an_unwritable_report_path_is_refused_before_the_command_runs(specx, tmp_path, option):
    marker = tmp_path / "ran"
    where = tmp_path / "no-such-dir" / "r"
    args = [option + str(where)] if option.endswith("=") else [option, where]
    proc = run_specx("run", *args, "--", "touch", marker)
    assert proc.returncode == 2
    assert proc.stderr.startswith("specx run: cannot write ") and len(proc.stderr.splitlines()) == 1
    assert not marker.exists()


def test_report_to_a_file_leaves_stderr_to_the_program(specx, tmp_path):
    table = tmp_path / "report.txt"
    proc = run_specx("run", f"--report={table}", "--", "sh", "-c", "echo own >&2")
    assert proc.returncode == 0 and proc.stderr == "own\n"
    assert "I/O stalls of normal execution" in table.read_text()


def test_the_mechanism_follows_the_executable(specx, tmp_path):
    """A static binary is served by the supervisor, a dynamic one by the preload runtime;
    --backend chooses; --no-spec says the supervisor only watched."""
    source = tmp_path / "static.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 3; }\n')
    exe = tmp_path / "static"
    if subprocess.run(["cc", "-static", "-o", exe, source], capture_output=True).returncode:
        pytest.skip("cc cannot link statically here (no libc.a)")
    proc, report = run_json(tmp_path, exe, options=["--report"])
    assert proc.returncode == 3 and proc.stdout == "hi\n"
    assert report["mechanism"] == "supervisor" and report["not_served_because"] is None
    assert "served by the supervisor (from outside the program: it is statically linked)" \
        in proc.stderr
    # Without a report specx run still stays (the supervisor lives in it): same status.
    assert run_specx("run", "--", str(exe)).returncode == 3
    proc, report = run_json(tmp_path, exe, options=["--no-spec"])
    assert report["mechanism"] is None and "--no-spec" in report["not_served_because"]
    dynamic, report = run_json(tmp_path, "true")
    assert report["mechanism"] == "preload" and report["not_served_because"] is None
    assert report["supervisor"] is None
    dynamic, report = run_json(tmp_path, "true", options=["--backend=trace"])
    assert report["mechanism"] == "supervisor" and report["processes"] == []
    bad = run_specx("run", "--backend=ptrace", "--", "true")
    assert bad.returncode == 2 and bad.stderr == \
        "specx run: invalid backend 'ptrace' (expected auto, preload or trace)\n"


@pytest.mark.root
def test_a_static_program_is_served_from_outside(specx, tmp_path, cold_tree):
    """Its reads of cold files are seen by sampling /proc (run_sampler.h), copies of its stalled
    thread made and served by the supervisor; its output is its own."""
    treesum = BUILD / "bench" / "programs" / "treesum-static"
    if not treesum.exists():
        pytest.skip("treesum-static was not built (no static C library here)")
    directory = cold_tree[0].parent
    plain = subprocess.run([treesum, directory], capture_output=True, text=True, timeout=60)
    drop_caches()
    proc, report = run_json(tmp_path, treesum, directory, options=["--report"])
    assert (proc.returncode, proc.stdout) == (0, plain.stdout)
    assert report["mechanism"] == "supervisor"
    # A loaded machine may delay the sampler past every stall; usually there are copies.
    assert report["supervisor"]["copies"] >= 0 and report["supervisor"]["traced"] == 0
    seen = report["seen_from_outside"]
    # 40 files behind 12 ms accesses; a loaded machine may delay the sampler (nice 19).
    assert seen["blocked_reads"] >= 1 and seen["blocked_s"] > 0
    assert "reads of files it was seen blocked in" in proc.stderr
    dynamic, report = run_json(tmp_path, "true")
    assert report["seen_from_outside"] is None


@pytest.mark.root
def test_the_supervisor_serves_an_unprivileged_user(unprivileged_build):
    """What the kernel gives an unprivileged supervisor is enough: as nobody, over files it does
    not own (the page cache's state of them is not told to it, so every page is taken for
    missing), the static reader's copies are made and served; its output is its own."""
    build, env = unprivileged_build
    treesum = build / "bench" / "programs" / "treesum-static"
    if not treesum.exists():
        pytest.skip("treesum-static was not built (no static C library here)")
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-run-nobody-"))
    try:
        top.chmod(0o755)
        backing = top / "backing"
        backing.mkdir()
        for i in range(30):
            (backing / f"f{i:02d}").write_bytes(os.urandom(20000))
        with slowfs_mount(backing, top / "mnt", "--preset", "paper2003") as mnt:
            plain = subprocess.run([treesum, mnt], capture_output=True, text=True, timeout=60)
            drop_caches()
            as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            proc = subprocess.run([*as_nobody, build / "specx", "run", "--json", "-", "--",
                                   treesum, mnt], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, **env})
        out, _, json_text = proc.stdout.partition("{")
        report = json.loads("{" + json_text)
        assert (proc.returncode, out) == (0, plain.stdout), proc.stderr
        assert report["mechanism"] == "supervisor" and report["supervisor"]["traced"] == 0
    finally:
        shutil.rmtree(top)


@pytest.mark.root
def test_the_supervisor_stands_aside_for_a_tracer(specx, tmp_path, cold_tree):
    """A program someone already traces (strace here; a debugger alike) is left alone: the
    supervisor cannot seize its thread, counts the stall and makes no copy."""
    treesum = BUILD / "bench" / "programs" / "treesum-static"
    if not treesum.exists() or not shutil.which("strace"):
        pytest.skip("needs treesum-static (a static C library) and strace")
    directory = cold_tree[0].parent
    plain = subprocess.run([treesum, directory], capture_output=True, text=True, timeout=60)
    drop_caches()
    report = tmp_path / "traced.json"
    proc = subprocess.run(["strace", "-f", "-o", "/dev/null", specx, "run", "--json", report,
                           "--", treesum, directory], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, plain.stdout)
    supervisor = json.loads(report.read_text())["supervisor"]
    # Every stall seen was stood aside for, but one whose thread ended before it was looked
    # at (not_made); a loaded machine may see none.
    assert supervisor["copies"] == 0, supervisor
    assert supervisor["traced"] + supervisor["not_made"] == supervisor["stalls_unpredicted"], json.dumps(supervisor)
    assert supervisor["traced"] > 0 or supervisor["stalls_unpredicted"] == 0, supervisor


def test_a_go_program_is_served_by_the_supervisor(specx, tmp_path):
    if not shutil.which("restic"):
        pytest.skip("no Go program here (restic is not installed: scripts/ensure-deps)")
    proc, report = run_json(tmp_path, "restic", "version", options=["--report"])
    assert proc.returncode == 0 and proc.stdout.startswith("restic ")
    assert report["mechanism"] == "supervisor"
    assert "it is a Go program" in proc.stderr


# ---- pass-through semantics ----

def test_exit_status_passes_through(specx):
    assert run_specx("run", "--", "sh", "-c", "exit 7").returncode == 7
    assert run_specx("run", "true").returncode == 0


def test_command_not_found_is_127(specx):
    proc = run_specx("run", "--", "specx-no-such-command-xyz")
    assert proc.returncode == 127
    assert proc.stderr == "specx run: specx-no-such-command-xyz: command not found\n"


def test_not_executable_is_126(specx, tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    proc = run_specx("run", "--", script)
    assert proc.returncode == 126
    assert proc.stderr == f"specx run: {script}: Permission denied\n"


@pytest.mark.parametrize("options", [(), ("--report",)])
def test_death_by_signal_is_reproduced(specx, options):
    proc = run_specx("run", *options, "--", "sh", "-c", "kill -USR1 $$")
    assert proc.returncode == -signal.SIGUSR1


def test_without_a_report_specx_run_is_the_command(specx):
    """Its process id and parent are the command's, as if started without specx."""
    proc = subprocess.Popen([specx, "run", "--", "sh", "-c", "echo $$ $PPID"],
                            stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    assert out.split() == [str(proc.pid), str(os.getpid())]


def raw_wait_status(cmd, cwd):
    """The wait status of CMD run with core dumps allowed in CWD (subprocess hides the core
    flag)."""
    import resource
    allow_core = lambda: resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
    proc = subprocess.Popen(cmd, cwd=cwd, preexec_fn=allow_core)
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0   # reaped here; keeps Popen from waiting again
    return status


def test_a_crash_dumps_core_as_without_specx(specx, tmp_path):
    crash = ["sh", "-c", "kill -SEGV $$"]
    plain = raw_wait_status(crash, tmp_path)
    under = raw_wait_status([specx, "run", "--", *crash], tmp_path)
    assert os.WIFSIGNALED(under) and os.WTERMSIG(under) == signal.SIGSEGV
    assert os.WCOREDUMP(under) == os.WCOREDUMP(plain)


def test_signal_sent_to_specx_reaches_the_command(specx, tmp_path):
    ready = tmp_path / "ready"
    proc = subprocess.Popen([specx, "run", "--", "sh", "-c",
                             f"trap 'exit 42' TERM; touch {ready}; while :; do sleep 0.05; done"])
    while not ready.exists():
        assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 42


def test_standard_streams_pass_through(specx):
    proc = run_specx("run", "--", "sh", "-c", "cat; echo to-stderr >&2", input="to-stdin\n")
    assert proc.stdout == "to-stdin\n"
    assert proc.stderr == "to-stderr\n"


def test_environment_passes_through_and_ld_preload_is_kept(specx):
    other = "/lib/x86_64-linux-gnu/libdl.so.2"
    if not os.path.exists(other):
        pytest.skip("no libdl.so.2 to preload")
    env = dict(os.environ, LD_PRELOAD=other, SPECX_TEST_MARK="kept",
               SPECX_EXE="/x", SPECX_LIBEXEC_PATH="/y")
    proc = run_specx("run", "--", "sh", "-c", "env; cat /proc/$$/maps", env=env)
    lines = proc.stdout.splitlines()
    assert "SPECX_TEST_MARK=kept" in lines
    preload = next(l for l in lines if l.startswith("LD_PRELOAD="))
    assert "libspecx.so" in preload and other in preload
    assert "libspecx.so" in proc.stdout.split("LD_PRELOAD=", 1)[1] and "libdl.so.2" in proc.stdout
    # the dispatcher's own variables are not the command's business
    assert not any(l.startswith(("SPECX_EXE=", "SPECX_LIBEXEC_PATH=")) for l in lines)


# ---- reports ----

def test_exec_family_behaves_the_same(specx):
    program = str(BUILD / "tests" / "safety" / "exec-family")
    plain = subprocess.run([program], capture_output=True, text=True, timeout=60)
    under = run_specx("run", "--", program, timeout=60)
    assert plain.returncode == 0 and "execl from vfork" in plain.stdout
    assert (under.returncode, under.stdout, under.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)


def test_a_thread_made_inside_libc_is_seen(specx, tmp_path):
    # On a disk file system (tmpfs pages cannot be evicted), written back so that the
    # program's POSIX_FADV_DONTNEED really evicts it.
    with tempfile.NamedTemporaryFile(dir="/var/tmp", prefix="specx-test-") as data:
        data.write(os.urandom(4 << 20))
        data.flush()
        os.fsync(data.fileno())
        report = tmp_path / "r.json"
        proc = run_specx("run", "--json", report, "--",
                         BUILD / "tests" / "safety" / "thrd-reader", data.name, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"{4 << 20}\n"
    total = json.loads(report.read_text())["total"]
    assert total["stalls"] > 0              # the eviction worked: there was something to do
    # Whole counters on failure (a string): a busy run once found no copy made, cause unknown.
    assert "threaded" in total["flags"] and total["spec_created"] >= 1, json.dumps(total)


def test_orphaned_grandchild_sees_the_same_parent(specx, tmp_path):
    # specx run must not become the reaper of the program's orphans (getppid would differ).
    out = tmp_path / "ppid"
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(0.3)\n"
            f"        open({str(out)!r}, 'w').write(str(os.getppid()))\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            "time.sleep(0.6)\n")
    seen = []
    for cmd in ([PY, "-c", code], [str(SPECX_CMD), "run", "--", PY, "-c", code]):
        subprocess.run(cmd, check=True, timeout=30)
        seen.append(out.read_text())
    assert seen[0] == seen[1]


def test_report_and_json_shape(specx, tmp_path):
    proc, report = run_json(tmp_path, "sh", "-c", "cat /etc/hostname >/dev/null; exit 3",
                            options=["--report"])
    assert proc.returncode == 3
    assert "I/O stalls of normal execution" in proc.stderr
    assert "speculative prefetches" in proc.stderr
    assert report["exit_status"] == 3 and report["signal"] is None
    both = report["total"]["stall_ns"] + report["total"]["inflight_wait_ns"]
    assert report["stalls"] == {
        "count": report["total"]["stalls"] + report["total"]["inflight_waits"],
        "time_s": pytest.approx(both / 1e9, abs=1e-6)}
    assert report["command"] == ["sh", "-c", "cat /etc/hostname >/dev/null; exit 3"]
    total = report["total"]
    for key in ("stalls", "stall_ns", "spec_prefetches", "spec_bytes", "unused_prefetches",
                "complete_share", "sync_attempts", "sync_completed", "sync_ns", "minflt",
                "spec_created", "spec_ended", "processes"):
        assert key in total
    names = [os.path.basename(p["argv0"]) for p in report["processes"]]
    assert names.count("sh") >= 1 and "cat" in names  # the forked and exec'd child counts too
    assert total["processes"] == len(report["processes"])
    assert total["reads"] == sum(p["reads"] for p in report["processes"]) >= 1
    cat = next(p for p in report["processes"] if p["argv0"] == "cat")
    assert "ended" in cat["flags"] and cat["reads"] >= 1 and cat["elapsed_ns"] > 0


# ---- the statistics file's private directory ----

@contextlib.contextmanager
def run_holding_its_stats(tmp_path, name):
    """A `specx run --json` (it makes a statistics directory) of a program that tells the path
    of its statistics file, then sleeps: yields (specx run's Popen, the directory). Its process
    group is killed at the end: the program outlives a specx run killed outright."""
    said = tmp_path / f"{name}.stats-path"
    code = ("import os, sys, time\n"
            "open(sys.argv[1], 'w').write(os.environ['SPECX_STATS'])\n"
            "time.sleep(60)\n")
    run = subprocess.Popen([SPECX_CMD, "run", "--json", tmp_path / f"{name}.json", "--",
                            PY, "-c", code, said], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (said.exists() and said.read_text().endswith("/stats")):
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        directory = pathlib.Path(said.read_text()).parent
        assert directory.name.startswith("specx-run-")
        yield run, directory
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()


def test_the_next_run_removes_a_killed_runs_statistics_directory(specx, tmp_path):
    """specx run killed outright (SIGKILL) cannot remove its directory, in memory: the next run
    that makes one does, although the dead run's program still maps the file."""
    with run_holding_its_stats(tmp_path, "killed") as (run, directory):
        try:
            run.kill()
            run.wait()
            assert (directory / "stats").exists()
            proc, _ = run_json(tmp_path, "true")
            assert proc.returncode == 0
            assert not directory.exists()
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def test_a_live_runs_statistics_directory_is_left_alone(specx, tmp_path):
    with run_holding_its_stats(tmp_path, "live") as (run, directory):
        proc, _ = run_json(tmp_path, "true")
        assert proc.returncode == 0 and (directory / "stats").exists()
        run.send_signal(signal.SIGTERM)  # passed to the program: the run ends as it does
        assert run.wait(timeout=60) == -signal.SIGTERM
        assert not directory.exists()


# ---- cold data (root: slowfs, drop_caches) ----

@pytest.mark.root
def test_no_spec_counts_stalls_without_speculating(specx, tmp_path, cold_tree):
    drop_caches()
    proc, report = run_json(tmp_path, *python(READ_ALL, *cold_tree), options=["--no-spec"])
    assert proc.returncode == 0
    total = report["total"]
    assert total["stalls"] >= len(cold_tree) and total["stall_ns"] > 0
    assert total["spec_created"] == 0 and total["spec_prefetches"] == 0
    assert report["speculation"] is False


@pytest.mark.root
def test_specx_disable_turns_speculation_off(specx, tmp_path, cold_tree):
    drop_caches()
    env = dict(os.environ, SPECX_DISABLE="1")
    proc, report = run_json(tmp_path, *python(READ_ALL, *cold_tree), env=env)
    assert proc.returncode == 0
    assert report["total"]["stalls"] > 0 and report["total"]["spec_created"] == 0


@pytest.mark.root
def test_speculation_prefetches_a_cold_multi_file_read(specx, tmp_path, cold_tree):
    drop_caches()
    with copies_get_cpu("no-such-text-zq"):   # the copy must prefetch, busy machine or not
        proc, report = run_json(tmp_path, "grep", "-c", "no-such-text-zq", *cold_tree)
    assert proc.returncode == 1  # grep found nothing: its own status
    total = report["total"]
    assert total["stalls"] >= 1
    assert total["spec_created"] >= 1 and total["spec_ended"] == total["spec_created"]
    assert total["spec_prefetches"] > 0 and total["spec_bytes"] > 0
    assert total["spec_failed"] == 0


@pytest.mark.root
def test_speculative_process_is_invisible_and_leaves_nothing(specx, tmp_path, cold_tree):
    marker = f"specx-test-{uuid.uuid4().hex}"
    code = READ_ALL + (
        "import os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n    os._exit(5)\n"
        "got, status = os.wait()\n"
        "assert got == pid and os.WEXITSTATUS(status) == 5, (got, pid)\n"
        "try:\n    os.wait()\n    print('unexpected child')\n"
        "except ChildProcessError:\n    print('only its own child')\n")
    drop_caches()
    proc, report = run_json(tmp_path, *python(code + f"# {marker}\n", *cold_tree))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "only its own child\n"
    assert report["total"]["spec_created"] >= 1  # there was a speculative process to hide
    assert_no_process_with(marker)


# Four threads read the files and print their digests in order: the copy of whichever
# thread stalls runs on through the pool's queue alone (docs/design/read-path.md).
THREADED_READ = (
    "import hashlib, sys\n"
    "from concurrent.futures import ThreadPoolExecutor\n"
    "def digest(p):\n"
    "    return hashlib.sha256(open(p, 'rb').read()).hexdigest()[:16]\n"
    "with ThreadPoolExecutor(4) as pool:\n"
    "    for d in pool.map(digest, sys.argv[1:]):\n"
    "        print(d)\n")


@pytest.mark.root
def test_a_threaded_reader_speculates_and_reads_the_same(specx, tmp_path, cold_tree):
    drop_caches()
    plain = subprocess.run(python(THREADED_READ, *cold_tree), capture_output=True, text=True,
                           timeout=60)
    only_files_cold(THREADED_READ, cold_tree)
    marker = f"specx-test-{uuid.uuid4().hex}"
    with copies_get_cpu(marker):
        proc, report = run_json(tmp_path, *python(THREADED_READ + f"# {marker}\n", *cold_tree))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, plain.stdout, plain.stderr)
    total = report["total"]
    assert "threaded" in total["flags"], json.dumps(total)   # a string: printed whole
    assert total["spec_created"] >= 1 and total["spec_failed"] == 0
    assert_no_process_with(marker)


@pytest.fixture(scope="module")
def stream_tree(tmp_path_factory):
    """80 small files behind a slow device, for a reader whose threads each read their own;
    the name of their directory marks the reader's command line (copies_get_cpu)."""
    base = tmp_path_factory.mktemp("streams")
    marker = f"specx-streams-{uuid.uuid4().hex}"
    (base / "backing" / marker).mkdir(parents=True)
    for i in range(80):
        (base / "backing" / marker / f"f{i:02d}").write_bytes(os.urandom(8192))
    with slowfs_mount(base / "backing", base / "mnt", "--preset", "paper2003") as mnt:
        yield mnt / marker, marker


@pytest.mark.root
def test_threads_with_reads_of_their_own_get_a_copy_each(specx, tmp_path, stream_tree):
    """treeread -t 2: each thread reads its own half of the files, so the copy of one predicts
    none of the other's reads. The other thread gets a copy of its own (the report's
    stream_copies; copies_peak 2), and the program's output and exit status are its own. Which
    thread stalls first and how far its copy gets is the machine's timing: up to three runs
    for one with a second copy."""
    mnt, marker = stream_tree
    treeread = BUILD / "bench" / "programs" / "treeread"
    drop_caches()
    plain = subprocess.run([treeread, "-t", "2", mnt], capture_output=True, text=True,
                           timeout=60)
    assert plain.returncode == 0 and plain.stdout.startswith("files 80 bytes 655360 ")
    for attempt in range(3):
        drop_caches()
        with copies_get_cpu(marker):
            proc, report = run_json(tmp_path, treeread, "-t", "2", mnt, options=["--horizon", "8"])
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, plain.stdout, plain.stderr)
        total = report["total"]
        assert total["spec_failed"] == 0, json.dumps(total)
        if total["stream_copies"]:
            break
    assert total["stream_copies"] >= 1 and total["copies_peak"] == 2, json.dumps(total)
    assert report["processes"][0]["copies_peak"] == 2
    assert_no_process_with(marker)


@pytest.fixture(scope="module")
def many_cold_files(tmp_path_factory):
    """300 small files behind a slow device: a copy that opens them spends seconds in the
    sandbox's open trap."""
    base = tmp_path_factory.mktemp("many")
    backing = base / "backing"
    backing.mkdir()
    for i in range(300):
        (backing / f"f{i:03d}").write_bytes(os.urandom(2000))
    with slowfs_mount(backing, base / "mnt", "--preset", "paper2003") as mnt:
        yield sorted(mnt.iterdir())


@pytest.mark.root
def test_a_copy_is_not_killed_by_its_own_timer_inside_the_open_trap(specx, tmp_path,
                                                                   many_cold_files):
    """Every open in a copy runs the sandbox's SIGSYS handler (two round trips to slowfs); the
    copy's memory watch opens a file on a timer. A tick inside the handler trapped again with
    SIGSYS blocked, and the kernel killed the copy (seen: a Python pool's live copies). The
    pool's copy opens file after file, each read ahead of the program."""
    marker = f"specx-test-{uuid.uuid4().hex}"
    only_files_cold(THREADED_READ, many_cold_files)
    with copies_get_cpu(marker):
        proc, report = run_json(tmp_path, *python(THREADED_READ + f"# {marker}\n",
                                                  *many_cold_files), options=["--verbose"])
    assert proc.returncode == 0
    assert report["total"]["spec_created"] >= 1  # a copy ran, and opened files in the trap
    assert "Bad system call" not in proc.stderr, proc.stderr[-2000:]


@pytest.mark.root
def test_a_copy_waiting_on_a_lost_threads_lock_ends_itself(specx, tmp_path, cold_tree):
    """The copy of a thread that stalls, then takes a lock another thread holds: the holder is
    not in the copy, so the copy would wait for ever; the wall clock ends it (copy_idle.h)."""
    code = ("import sys, threading, time\n"
            "lock = threading.Lock()\n"
            "def hold():\n"
            "    with lock:\n"
            "        time.sleep(3)\n"
            "holder = threading.Thread(target=hold); holder.start()\n"
            "time.sleep(0.1)\n"
            "for p in sys.argv[1:]:\n"
            "    open(p, 'rb').read()\n"
            "with lock:\n"
            "    print('got it')\n"
            "holder.join()\n")
    # The first read ends the run of cached reads that are only timed (readpath.c); the copy
    # is made at the second. On a loaded machine a slow cached read may end the timed run
    # earlier, and the first read make a copy. On slowfs that copy's open of the second file
    # is a device access as long as the program's read (a metadata request, in the idle
    # class, served after regular ones): if the program gets to the second read first, the
    # copy is judged useless there and the runtime backs off. Then no copy reaches the lock
    # and nothing was tested (1 run in 20-60 beside 4 busy loops): up to three runs.
    for attempt in range(3):
        only_files_cold("import threading, time", cold_tree[:2])
        marker = f"specx-test-{uuid.uuid4().hex}"
        with copies_get_cpu(marker):
            proc, report = run_json(tmp_path, *python(code + f"# {marker}\n", *cold_tree[:2]))
        assert (proc.returncode, proc.stdout) == (0, "got it\n")
        assert_no_process_with(marker)
        total = report["total"]
        if total["spec_stuck_ended"] == 1:
            break
    assert total["spec_created"] >= 1 and total["spec_stuck_ended"] == 1, \
        {k: v for k, v in total.items() if k.startswith("spec_") and v}


@pytest.fixture(scope="module")
def cold_objects(tmp_path_factory):
    """A few compiled objects behind a slow device: GNU ld reads them through stdio (fread,
    fseek), the path glibc refills internally."""
    base = tmp_path_factory.mktemp("ld")
    backing = base / "backing"
    backing.mkdir()
    for i in range(6):
        src = base / f"m{i}.c"
        calls = "".join(f"f{j}();" for j in range(i))
        decls = "".join(f"int f{j}(void);" for j in range(i))
        src.write_text(f"{decls}\nint f{i}(void) {{ {calls} return {i}; }}\n"
                       f"static const char table{i}[20000] = \"{'x' * 50}\";\n"
                       f"const char *t{i}(void) {{ return table{i}; }}\n")
        subprocess.run(["gcc", "-c", "-g", "-O0", "-o", backing / f"m{i}.o", src], check=True)
    with slowfs_mount(backing, base / "mnt", "--preset", "paper2003") as mnt:
        yield base, sorted(mnt.glob("*.o"))


@pytest.mark.root
def test_stdio_readers_get_the_same_result(specx, tmp_path, cold_objects, cold_tree):
    base, objects = cold_objects
    link = ["ld", "-r", "-o"]
    subprocess.run([*link, tmp_path / "plain.o", *objects], check=True)
    plain_sed = subprocess.run(["sed", "-n", "/[0-4]a/p", *cold_tree], capture_output=True,
                               check=True).stdout
    drop_caches()
    proc, report = run_json(tmp_path, *link, tmp_path / "spec.o", *objects)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "spec.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    assert report["total"]["stalls"] > 0  # ld's reads through fread/fseek were seen
    drop_caches()
    proc = run_specx("run", "--", "sed", "-n", "/[0-4]a/p", *cold_tree)
    assert proc.returncode == 0 and proc.stdout.encode() == plain_sed


@pytest.mark.root
def test_exec_ends_the_speculative_process_first(specx, tmp_path, cold_tree):
    marker = f"specx-test-{uuid.uuid4().hex}"
    code = READ_ALL + f"import os\nos.execv('/bin/sh', ['sh', '-c', 'exit 4'])  # {marker}\n"
    only_files_cold(READ_ALL + "import os", cold_tree)  # a copy must be alive at the exec
    proc, report = run_json(tmp_path, *python(code, *cold_tree))
    assert proc.returncode == 4
    reader = next(p for p in report["processes"] if p["argv0"] == PY)
    assert reader["spec_created"] >= 1
    assert reader["spec_ended"] == reader["spec_created"]  # reaped before the exec
    assert "ended" in reader["flags"]
    assert any(p["argv0"] == "sh" and p["pid"] == reader["pid"] for p in report["processes"])
    assert_no_process_with(marker)


def write_chain(path, blocks, seed):
    """A chase chain (bench/programs/chase.c's format): one random cycle through the blocks."""
    rng = random.Random(seed)
    order = list(range(blocks))
    for i in range(blocks - 1, 0, -1):
        j = rng.randrange(i)
        order[i], order[j] = order[j], order[i]
    with open(path, "wb") as f:
        f.write(struct.pack("<8sQQ", b"SPECXCHN", blocks, 4096).ljust(4096, b"\0"))
        for block in range(blocks):
            f.write(struct.pack("<Q", order[block]) + rng.randbytes(4088))


@pytest.mark.root
def test_copies_that_cannot_predict_never_prefetch(specx, tmp_path):
    """Pointer chasing: every read's offset is in the data of the last one, so a copy can only
    guess. Its guesses stay predictions (trust.c): no speculative prefetch is ever issued,
    and the program's output is unchanged."""
    backing = tmp_path / "backing"
    backing.mkdir()
    write_chain(backing / "chain.bin", 256, 3)
    chase = [str(BUILD / "bench" / "programs" / "chase"), "--hops", "60"]
    plain = subprocess.run([*chase, backing / "chain.bin"], capture_output=True, text=True,
                           check=True).stdout
    with slowfs_mount(backing, tmp_path / "mnt", "--preset", "paper2003") as mnt:
        drop_caches()
        proc, report = run_json(tmp_path, *chase, mnt / "chain.bin")
    assert proc.returncode == 0 and proc.stdout == plain
    total = report["total"]
    assert total["stalls"] >= 30 and total["spec_created"] >= 1
    assert total["spec_prefetches"] == 0


@pytest.mark.root
def test_copies_that_never_predict_are_retired(specx, tmp_path):
    """A process whose copies predict none of its reads stops making them after eight in a
    row (copies that never earn trust must stop costing anything), and the report
    says why speculation did not help."""
    backing = tmp_path / "backing"
    backing.mkdir()
    write_chain(backing / "chain.bin", 16384, 5)   # 64 MiB: hop after hop misses the cache
    chase = [str(BUILD / "bench" / "programs" / "chase"), "--hops", "600"]
    plain = subprocess.run([*chase, backing / "chain.bin"], capture_output=True, text=True,
                           check=True).stdout
    with slowfs_mount(backing, tmp_path / "mnt", "--latency-ms", "5") as mnt:
        drop_caches()
        # Each copy must get into its sandbox to be judged, busy machine or not.
        with copies_get_cpu(mnt / "chain.bin"):
            proc, report = run_json(tmp_path, *chase, mnt / "chain.bin", options=["--report"])
    assert proc.returncode == 0 and proc.stdout == plain
    total = report["total"]
    # Eight in a row predicted nothing, then no more. A copy may still predict a hop now and
    # then (one that reaches the stalled read after the program's data arrived reads the real
    # next offset), which earns it trust and starts the count again; how often depends on how
    # soon the machine runs it. So the bound follows the useful ones: at most seven useless
    # copies before each, eight after the last, and one still unjudged at the end.
    assert "never_predicted" in total["flags"], total
    useful = total["spec_judged_useful"]
    assert 8 <= total["spec_created"] <= 8 * useful + 8 + 1, total
    assert "speculation stopped: in 1 process copies never predicted the next read" in \
        proc.stderr


# Reads files until it sees its copy (one parked at the horizon stays alive), reaps it, makes
# its next child take the copy's pid, and stalls again.
REUSE_PID = """
import os, signal, sys
files = sys.argv[1:]
copy = None
for i, path in enumerate(files):
    open(path, "rb").read()
    copies = open(f"/proc/self/task/{os.getpid()}/children").read().split()
    if copies:
        copy, rest = int(copies[0]), files[i + 1:]
        break
if copy is None or len(rest) < 5:
    print("no copy"); sys.exit(0)
os.kill(copy, signal.SIGKILL)
os.waitpid(copy, 0x40000000)  # __WALL: the program reaps the copy itself
open("/proc/sys/kernel/ns_last_pid", "w").write(str(copy - 1))
child = os.fork()
if child == 0:
    import time
    time.sleep(1)
    os._exit(0)
for p in rest:
    open(p, "rb").read()  # stalls: the runtime looks at its copy again
_, status = os.waitpid(child, 0)
print("same pid" if child == copy else "other pid", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.root
def test_a_reaped_copys_pid_reused_by_the_program_is_left_alone(specx, tmp_path, cold_tree):
    """A program that reaps the copy with __WALL, then forks a child that gets the same pid:
    the runtime must not take that child for its copy (kill it, or reap it)."""
    only_files_cold(REUSE_PID, cold_tree)  # a copy must be alive at the files
    proc, report = run_json(tmp_path, *python(REUSE_PID, *cold_tree), options=["--horizon", "2"])
    assert proc.returncode == 0, proc.stderr
    if not proc.stdout.startswith("same pid"):
        pytest.skip(f"could not reproduce the pid reuse: {proc.stdout.strip()}")
    assert proc.stdout == "same pid 0\n"  # the child exited by itself, not killed
