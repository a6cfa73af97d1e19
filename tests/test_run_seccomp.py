"""specx run beside what the program, or what watches it, does to itself (docs/design/sandbox.md,
"Where specx stands aside"): a program that seals itself with seccomp (strict mode, libseccomp
filters that kill or fail, a filter installed by the program's own syscall instruction), one
whose cgroup's pids.max leaves room for its own tasks only, one in a memory cgroup killed as
one, and signals sent to every process of the program's name while copies are born. Each runs
on a cold file behind slowfs, plainly and under `specx run` through both mechanisms (the
preload runtime, and the supervisor for the statically linked build): same output, same exit
status, same files, and the report says where specx stood aside."""
import contextlib
import json
import os
import pathlib
import select
import signal
import subprocess
import threading
import uuid

import pytest

from conftest import (BUILD, _new_processes, _process_events, drop_caches, run_specx,
                      slowfs_mount)

PROGRAMS = BUILD / "tests" / "safety"
BACKENDS = ["preload", "supervisor"]


def program(name, backend):
    path = PROGRAMS / (name if backend == "preload" else f"{name}-static")
    if not path.exists():
        pytest.skip(f"{path.name} was not built (no static linking here)")
    return path


def run(cmd, report=None, options=()):
    """CMD plainly (REPORT None) or under `specx run --json REPORT OPTIONS`, from a cold page
    cache."""
    drop_caches()
    if report is None:
        done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=300)
    else:
        done = run_specx("run", "--json", report, *options, "--", *cmd, timeout=300)
    return done.returncode, done.stdout


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """A 16 MiB file behind a slow device (slowfs, paper2003 preset)."""
    base = tmp_path_factory.mktemp("seccomp")
    backing = base / "backing"
    backing.mkdir()
    (backing / "data").write_bytes(os.urandom(16 << 20))
    with slowfs_mount(backing, base / "mnt", "--preset", "paper2003") as mnt:
        yield mnt / "data"


@pytest.mark.root
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["strict", "kill", "errno", "trap-raw", "inherit", "kill-tsync"])
def test_self_sandboxed_program_is_left_alone(cold, tmp_path, backend, mode):
    """The program's seccomp list is its own: specx makes no copy of it and, once it is sealed,
    no call of its own (strict mode allows read, write, exit and sigreturn; a KILL filter kills
    the program at the first other call). The trap-raw filter, installed past libc, traps a
    call the program never makes and logs it from its SIGSYS handler: a copy made after it
    (which calls setpgid) would leave a line there. Under inherit the program execs itself
    under a filter that kills at cachestat, as a service manager's list without that call
    would: the new image stands aside from its start. Under kill-tsync a second thread is
    reading when the first installs a filter for both: the runtime stands aside for the
    process, and waits for that thread to leave its own calls first."""
    prog = program("seccomp-reader", backend)
    outcomes = []
    for report in (None, tmp_path / "report.json"):
        log = tmp_path / "log"
        log.write_text("")
        status, out = run([prog, mode, cold, log], report)
        outcomes.append((status, out, log.read_text()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 0 and f"read {16 << 20}" in outcomes[0][1]
    if mode == "errno":
        assert "getppid -1 errno 1" in outcomes[0][1]
    result = json.loads((tmp_path / "report.json").read_text())
    # Under kill-tsync copies of the reading thread may come before the filter (a copy is a
    # process of its own, which the filter does not reach); in the other modes there is none.
    if backend == "preload":
        assert "seccomp" in result["total"]["flags"], result["total"]
        assert result["total"]["spec_created"] == 0 or mode == "kill-tsync", result["total"]
    else:
        assert result["mechanism"] == "supervisor"
        assert result["supervisor"]["copies"] == 0 or mode == "kill-tsync", result["supervisor"]
        # The sampler (nice 19) may see no stall at all beside busy CPUs; when it saw one, the
        # supervisor stood aside there (under kill-tsync the stalls may all be the filter's
        # predecessors').
        if result["supervisor"]["stalls_unpredicted"] and mode != "kill-tsync":
            assert result["supervisor"]["seccomp"] >= 1, result["supervisor"]


def test_report_says_it_stood_aside(cold, tmp_path):
    """The text report names the reason (unprivileged: the file may be warm; standing aside at
    the filter's installation needs no stall)."""
    report = tmp_path / "report.txt"
    done = run_specx("run", f"--report={report}", "--", PROGRAMS / "seccomp-reader", "kill",
                     cold, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "specx stood aside: 1 process had a seccomp filter or strict mode" in \
        report.read_text()


@contextlib.contextmanager
def signalled_by_name(name, marker, sig):
    """Sends SIG, for as long as the block runs, to every process called NAME whose command line
    has MARKER and that has a handler for it: what `pkill -f` does, which reaches a program's
    copies too (and not `specx run`, which would pass it on). New processes are learnt of from
    the kernel as they are forked and signalled at once, so that a copy is reached between its
    clone and its seal; the rest every millisecond."""
    stop = threading.Event()
    marker = str(marker).encode()
    events = _process_events()

    def has_handler(pid):
        try:
            status = pathlib.Path(f"/proc/{pid}/status").read_text()
            cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        caught = int(fields["SigCgt"], 16)
        return (fields["Name"].strip() == name[:15] and marker in cmdline and
                caught & (1 << (sig - 1)))

    def bombard():
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        known = set()
        while not stop.is_set():
            known.update(_new_processes(events))
            for pid in list(known):
                if has_handler(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                elif not os.path.exists(f"/proc/{pid}"):
                    known.discard(pid)
            select.select([events], [], [], 0.001)

    thread = threading.Thread(target=bombard, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        events.close()


@pytest.mark.root
@pytest.mark.parametrize("backend", BACKENDS)
def test_signals_during_a_copys_birth_run_no_handler_outside(cold, tmp_path, backend):
    """SIGUSR1 to every process of the program's name while it reads: each handler run appends
    a line to the log, and the program counts its own. The copy shares the program's
    descriptors until it is sealed (and re-opens 200 of them on the way, a FUSE round trip
    each); a handler run there would add a line the program did not count."""
    prog = program("signal-reader", backend)
    marker = f"signal-{uuid.uuid4().hex}"
    data = tmp_path / marker   # the command line names it: only this run's processes match
    data.symlink_to(cold)
    log = tmp_path / "log"
    log.write_text("")
    report = tmp_path / "report.json"
    with signalled_by_name(prog.name, marker, signal.SIGUSR1):
        status, out = run([prog, data, log, 200], report)
    assert status == 0, out
    handled = int(out.split()[1])
    assert f"read {16 << 20}" in out
    assert log.read_text().count("usr1\n") == handled
    result = json.loads(report.read_text())
    copies = (result["total"]["spec_created"] if backend == "preload"
              else result["supervisor"]["copies"])
    print(f"{handled} signals handled, {copies} copies made")


def pids_root():
    """The root of the hierarchy that has the pids controller (v1, or v2), or None."""
    v1 = pathlib.Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists():
        return v1
    v2 = pathlib.Path("/sys/fs/cgroup")
    controllers = v2 / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():
        return v2
    return None


@contextlib.contextmanager
def pids_group(limit):
    """A fresh pids group with pids.max LIMIT (v1 pids hierarchy, or v2 where the pids
    controller can be enabled below the root); removed afterwards."""
    root = pids_root()
    if root is None:
        pytest.skip("no pids controller here")
    group = root / f"specx-test-{uuid.uuid4().hex[:12]}"
    if (root / "cgroup.subtree_control").exists():
        with contextlib.suppress(OSError):
            (root / "cgroup.subtree_control").write_text("+pids")
    group.mkdir()
    try:
        (group / "pids.max").write_text(f"{limit}\n")
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        for _ in range(100):
            try:
                group.rmdir()
                break
            except OSError:
                threading.Event().wait(0.05)


@pytest.mark.root
@pytest.mark.parametrize("backend", BACKENDS)
def test_forks_up_to_pids_max_still_succeed(cold, tmp_path, backend):
    """A program whose group's pids.max is exactly its own need (itself and its 6 children,
    all alive at the end) forks every child plainly; under specx run a copy counted in the group
    would make a fork fail. specx makes none there, and says why."""
    children = 6
    prog = program("fork-reader", backend)
    outcomes = []
    with pids_group(children + 1) as group:
        for report in (None, tmp_path / "report.json"):
            # The shell moves itself into the group, then becomes the program (which the
            # supervisor follows only if it serves the shell too).
            cmd = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh",
                   prog, cold, children]
            outcomes.append(run(cmd, report, ["--backend=trace"] if backend != "preload"
                                else []))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 0 and f"forked {children} of {children}" in outcomes[0][1]
    result = json.loads((tmp_path / "report.json").read_text())
    if backend == "preload":
        flags = {f for p in result["processes"] for f in p["flags"]}
        assert "pids_max" in flags, result["processes"]
    elif result["supervisor"]["stalls_unpredicted"]:
        assert result["supervisor"]["pids_max"] >= 1, result["supervisor"]


def memory_v2_group():
    """The cgroup v2 root with the memory controller, or None where memory is on v1."""
    for line in pathlib.Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, _ = line.split(":", 2)
        if "memory" in controllers.split(","):
            return None
    root = pathlib.Path("/sys/fs/cgroup")
    controllers = root / "cgroup.controllers"
    return root if controllers.exists() and "memory" in controllers.read_text().split() else None


@pytest.mark.root
def test_no_copy_in_a_group_killed_as_one(cold, tmp_path):
    """memory.oom.group=1 (kubelet, systemd): the OOM killer, choosing a copy, would kill the
    program with it. specx makes no copy there."""
    root = memory_v2_group()
    if root is None:
        pytest.skip("the memory controller is on cgroup v1 here: there is no memory.oom.group")
    with contextlib.suppress(OSError):
        (root / "cgroup.subtree_control").write_text("+memory")
    group = root / f"specx-test-{uuid.uuid4().hex[:12]}"
    group.mkdir()
    try:
        (group / "memory.oom.group").write_text("1\n")
        report = tmp_path / "report.json"
        cmd = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh",
               PROGRAMS / "fork-reader", cold, 0]
        plain, under = run(cmd), run(cmd, report)
        assert plain == under
        result = json.loads(report.read_text())
        flags = {f for p in result["processes"] for f in p["flags"]}
        assert "oom_group" in flags, result["processes"]
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        with contextlib.suppress(OSError):
            group.rmdir()
