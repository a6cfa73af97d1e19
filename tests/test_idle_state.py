"""The state `specx idle` keeps for --isolate, attacked as a hostile local user would: a run
planted where specx idle looks, a state directory that is someone else's or a link, a journal
or directory list that leads out of the isolated directory, a live run whose pid looks dead.
Root's specx idle must write nothing outside the planting user's own files, and say so.

Each test runs specx idle in a mount namespace of its own where /var/tmp and /var/lib are
directories of the test: what a test plants there reaches no other run of specx idle."""
import os
import pathlib
import random
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import SPECX, run_specx
from test_idle import netns  # noqa: F401 (a fixture)

HOSTILE = 61234                      # a uid with no passwd entry
AS_HOSTILE = ["setpriv", f"--reuid={HOSTILE}", f"--regid={HOSTILE}", "--clear-groups"]
DEAD_PID = 4194305                   # above any pid_max: never a live run's
CANARY = "root:x:0:0:root:/root:/bin/sh\n"
PLANTED = "hostile:x:0:0::/:/bin/sh\n"

pytestmark = pytest.mark.root


@pytest.fixture
def place(tmp_path):
    """/var/tmp (1777) and /var/lib (0755) for specx idle, both root's as on a real system, and
    a root-owned directory like /etc with a file like /etc/passwd in it (the canary)."""
    var_tmp, var_lib, etc = tmp_path / "var-tmp", tmp_path / "var-lib", tmp_path / "etc"
    for d, mode in ((var_tmp, 0o1777), (var_lib, 0o755), (etc, 0o755)):
        d.mkdir()
        d.chmod(mode)
    (etc / "sub").mkdir()
    (etc / "passwd").write_text(CANARY)
    return tmp_path


def unshared(place, plant="", setup="true"):
    """The prefix that runs specx in a mount namespace with PLACE's /var/tmp and /var/lib,
    after SETUP ran there as root and PLANT (shell scripts) as the hostile user."""
    script = ('mount --bind "$1/var-tmp" /var/tmp && mount --bind "$1/var-lib" /var/lib && '
              'shift && sh -ec "$SETUP" && { [ -z "$PLANT" ] || ' + " ".join(AS_HOSTILE) +
              ' sh -ec "$PLANT"; } && exec "$@"')
    return ["env", f"SETUP={setup}", f"PLANT={plant}", "unshare", "--mount", "--propagation",
            "private", "sh", "-c", script, "sh", str(place)]


def fingerprint(d):
    """What root's directory D holds, as anyone writing in it would change it."""
    return sorted((str(p.relative_to(d)), p.lstat().st_uid, p.lstat().st_mtime_ns,
                   p.lstat().st_ino, p.is_file() and p.read_text())
                  for p in [d, *d.rglob("*")])


def old_run(target, rel, content=PLANTED):
    """A shell script that plants, where specx idle once kept its runs' state, a run that
    died in its commit: its list names TARGET, its journal writes REL there, from an upper
    file at REL too (whatever REL leads to)."""
    state = f"/var/tmp/specx-idle/{DEAD_PID}"
    upper = f"{state}/upper-0/{rel}"
    return (f"mkdir -p {state}/upper-0/sub \"$(dirname '{upper}')\"; "
            f"printf '%s\\n' '{target}' > {state}/dirs; printf '{content}' > '{upper}'; "
            f"printf 'specx-idle-journal 1\\nW 0 {len(rel)} {rel}\\n' > {state}/journal")


def new_run(state_dir, target, rel, content=PLANTED, ident=None, kind="W"):
    """The same in today's form, in STATE_DIR (a path as seen in the namespace), its journal's
    change of type KIND."""
    st = os.stat(target) if ident is None else ident
    state = f"{state_dir}/{DEAD_PID}"
    return (f"mkdir -p -m 700 {state}/upper-0/sub; "
            f"printf '%s %s %s %s\\n' {st.st_dev} {st.st_ino} {len(str(target))} '{target}' "
            f"> {state}/dirs; printf '{content}' > {state}/upper-0/passwd; "
            f"printf 'specx-idle-journal 1\\n{kind} 0 {len(rel)} {rel}\\n' > {state}/journal")


def said(proc):
    """What specx idle said, less the groups of killed runs it removed: those are anyone's on
    a machine where other runs of specx idle come and go (each is the sweep's, not ours)."""
    return "".join(line for line in proc.stderr.splitlines(keepends=True)
                   if not line.startswith("specx idle: removing the cgroup "))


def assert_untouched(place, before):
    assert fingerprint(place / "etc") == before
    assert (place / "etc" / "passwd").read_text() == CANARY


def test_a_run_planted_where_state_once_lived_is_not_finished(specx, place):
    """/var/tmp is everyone's: a dead run planted there, whose commit writes root's passwd,
    is neither finished nor removed, whether specx idle isolates anything or not."""
    before = fingerprint(place / "etc")
    plant = old_run(place / "etc", "passwd")
    for args in (["--", "true"], ["--recover"]):
        proc = run_specx("idle", *args, prefix=unshared(place, plant))
        assert (proc.returncode, said(proc)) == (0, ""), proc.stderr
        assert_untouched(place, before)
        planted = place / "var-tmp" / "specx-idle" / str(DEAD_PID)
        assert (planted / "journal").exists() and planted.stat().st_uid == HOSTILE
        subprocess.run(["rm", "-rf", place / "var-tmp" / "specx-idle"], check=True)
    assert not (place / "var-lib" / "specx").exists()  # nothing isolated: nothing made


# How a hostile user could have the runs' state directory (or its parent) were it theirs to
# make: owned by them, a link to a directory of theirs, open to them.
STATE_DIRS = {
    "parent-theirs": "mkdir -m 777 /var/lib/specx && chown {u}:{u} /var/lib/specx",
    "parent-a-link": "mkdir -m 777 /var/tmp/h && chown {u}:{u} /var/tmp/h && "
                     "ln -s /var/tmp/h /var/lib/specx",
    "state-a-link": "mkdir -m 755 /var/lib/specx && mkdir -m 777 /var/tmp/h && "
                    "chown {u}:{u} /var/tmp/h && ln -s /var/tmp/h /var/lib/specx/idle",
    "state-open": "mkdir -m 755 /var/lib/specx && mkdir -m 777 /var/lib/specx/idle",
}


@pytest.mark.parametrize("how", sorted(STATE_DIRS))
def test_a_state_directory_not_ours_alone_is_refused(specx, place, tmp_path, how):
    """Where the runs' state directory, or the one it is made in, is someone else's, a link or
    open to others, nothing in it is recovered and --isolate refuses to run (one line); the
    same run planted where state once lived is ignored too."""
    before = fingerprint(place / "etc")
    made = STATE_DIRS[how].format(u=HOSTILE)
    plant = " && ".join([old_run(place / "etc", "passwd"),
                         "mkdir -p /var/lib/specx/idle",
                         new_run("/var/lib/specx/idle", place / "etc", "passwd")])
    isolated = tmp_path / "d"
    isolated.mkdir()
    proc = run_specx("idle", "--", "true", prefix=unshared(place, plant, made))
    assert proc.returncode == 0
    assert said(proc).startswith("specx idle: /var/lib/specx") and \
        said(proc).count("\n") == 1, proc.stderr
    assert "not kept there" in proc.stderr
    assert_untouched(place, before)
    subprocess.run(["rm", "-rf", place / "var-tmp" / "specx-idle", place / "var-tmp" / "h",
                    place / "var-lib" / "specx"], check=True)
    proc = run_specx("idle", "--isolate", isolated, "--", "sh", "-c", f"echo x > {isolated}/f",
                     prefix=unshared(place, setup=made))
    assert proc.returncode == 1 and said(proc).count("\n") == 1, proc.stderr
    assert "not kept there" in proc.stderr
    assert not (isolated / "f").exists()
    assert_untouched(place, before)


def journal_cases(place):
    """(journal entry, directory the list names, its identity): each leads out of the
    directory, or is not the one that was isolated, or is not a plain path."""
    etc, sub = place / "etc", place / "etc" / "sub"
    return {
        "dotdot": ("../passwd", sub, None),
        "dotdot-inside": ("sub/../passwd", etc, None),
        "absolute": (f"{etc}/passwd", sub, None),
        "another-directory": ("passwd", etc, os.stat(place / "var-tmp")),
        "unnormal-list": ("passwd", f"{sub}/..", None),
        "relative-list": ("passwd", os.path.relpath(etc, "/"), os.stat(etc)),
        "empty-not-status": ("", etc, None),  # the directory itself, written as a file
    }


CASES = ["dotdot", "dotdot-inside", "absolute", "another-directory", "unnormal-list",
         "relative-list", "empty-not-status"]


@pytest.mark.parametrize("case", CASES)
def test_a_journal_or_list_that_leads_out_is_not_applied(specx, place, case):
    """A run's journal or directory list that does not check out, even in the runs' own state
    directory (root's, 0700): not applied, left as it is, and said; --recover fails."""
    rel, target, ident = journal_cases(place)[case]
    before = fingerprint(place / "etc")
    state_dir = place / "var-lib" / "specx" / "idle"
    state_dir.mkdir(parents=True, mode=0o700)
    state_dir.parent.chmod(0o700)
    # Made by root as it stands (the user cannot write there); the same run where state once
    # lived is planted by the user.
    subprocess.run(["sh", "-ec", new_run(state_dir, target, rel, ident=ident)], check=True)
    plant = old_run(target, rel) if rel else ""
    proc = run_specx("idle", "--recover", prefix=unshared(place, plant))
    assert proc.returncode == 1, proc.stderr
    assert said(proc).count("\n") == 1 and ("left as it is" in proc.stderr or
                                             "not the directory that was isolated"
                                             in proc.stderr), proc.stderr
    assert_untouched(place, before)
    assert (state_dir / str(DEAD_PID) / "journal").exists()


def test_a_link_in_the_isolated_directory_does_not_lead_the_commit_out(specx, place, tmp_path):
    """A user who can write in the directory root isolates swaps a directory for a link to
    root's between the run and the finishing of its commit: the commit stops there."""
    isolated = tmp_path / "shared"
    isolated.mkdir(mode=0o777)
    isolated.chmod(0o777)
    before = fingerprint(place / "etc")
    state_dir = place / "var-lib" / "specx" / "idle"
    state_dir.mkdir(parents=True, mode=0o700)
    state_dir.parent.chmod(0o700)
    subprocess.run(["sh", "-ec", new_run(state_dir, isolated, "sub/passwd")], check=True)
    (state_dir / str(DEAD_PID) / "upper-0" / "sub" / "passwd").write_text(PLANTED)
    # The user's link (made for them: the test's directories are root's alone to reach).
    os.symlink(place / "etc", isolated / "sub")
    os.lchown(isolated / "sub", HOSTILE, HOSTILE)
    plant = old_run(isolated, "sub/passwd")
    proc = run_specx("idle", "--recover", prefix=unshared(place, plant))
    assert proc.returncode == 1 and "cannot finish the interrupted commit" in proc.stderr, \
        proc.stderr
    assert_untouched(place, before)


def test_a_journal_sets_the_isolated_directorys_own_status(specx, place, tmp_path):
    """The empty path in a journal is the isolated directory itself, for a change of its own
    owner, mode or attributes (S) alone: a recovery finishes it, on that directory."""
    isolated = tmp_path / "d"
    isolated.mkdir()
    isolated.chmod(0o755)
    state_dir = place / "var-lib" / "specx" / "idle"
    state_dir.mkdir(parents=True, mode=0o700)
    state_dir.parent.chmod(0o700)
    subprocess.run(["sh", "-ec", new_run(state_dir, isolated, "", kind="S")], check=True)
    (state_dir / str(DEAD_PID) / "upper-0").chmod(0o750)
    proc = run_specx("idle", "--recover", prefix=unshared(place))
    assert proc.returncode == 0 and "finished the interrupted commit" in proc.stderr, \
        proc.stderr
    assert isolated.stat().st_mode & 0o7777 == 0o750
    assert not (state_dir / str(DEAD_PID)).exists()


def unused_pid():
    """A pid no process has here, nor any group of specx idle's name, that a pid namespace's
    process can be given. (A run of specx idle here that takes it meanwhile would share the
    groups' names: that run's end would then remove ours.)"""
    from test_idle import idle_groups
    pid_max = int(pathlib.Path("/proc/sys/kernel/pid_max").read_text())
    taken = {g.rsplit("-", 1)[1] for g in idle_groups()}
    while True:
        pid = random.randrange(max(1000, pid_max // 2), pid_max - 1)
        if not os.path.exists(f"/proc/{pid}") and not os.path.exists(f"/proc/{pid - 1}") \
                and str(pid) not in taken:
            return pid


def test_a_live_run_is_not_recovered_even_where_its_pid_looks_dead(specx, tmp_path):
    """A run in a pid namespace of its own has there a pid no process has here: a recovery
    started here meanwhile must see by the run's lock, not its pid, that it is alive."""
    d, ready, go = tmp_path / "d", tmp_path / "ready", tmp_path / "go"
    d.mkdir()
    pid = unused_pid()
    command = (f"echo new > {d}/f; touch {ready}; "
               f"while [ ! -e {go} ]; do sleep 0.05; done")
    script = (f"echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "
              f'"$0" idle --isolate {d} --within 1s -- sh -c "$1"')
    run = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", script,
                            str(SPECX), command], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()
            time.sleep(0.05)
        recovery = run_specx("idle", "--recover")
        go.touch()
        out, err = run.communicate(timeout=120)
    finally:
        go.touch()
        if run.poll() is None:
            run.kill()
            run.wait()
    # Nothing of the live run's (its state, named by its pid there, nor its groups) is touched.
    assert recovery.returncode == 0 and str(pid) not in recovery.stderr, recovery.stderr
    assert run.returncode == 0, err
    assert (d / "f").read_text() == "new\n"


def test_a_live_runs_queue_is_not_swept_even_where_its_pid_looks_dead(specx, netns):
    """The same for the qdisc a run puts on an interface: a run of another pid namespace
    shares this network namespace; the sweep of a run started here leaves its queue."""
    from test_idle import in_netns
    ns, dev = netns
    pid = unused_pid()
    run = subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", "unshare", "--pid", "--fork",
                            "--mount-proc", "sh", "-c",
                            f"echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "
                            f'"$0" idle --net-rate 50mbit -- sleep 1000', str(SPECX)],
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "1de0" not in in_netns(ns, "tc", "qdisc", "show", "dev", dev).stdout:
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()
            time.sleep(0.05)
        assert in_netns(ns, SPECX, "idle", "--no-net", "--", "true").returncode == 0
        assert "1de0" in in_netns(ns, "tc", "qdisc", "show", "dev", dev).stdout
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait()
    assert "1de0" not in in_netns(ns, "tc", "qdisc", "show", "dev", dev).stdout


@pytest.mark.parametrize("env, message", [
    ({"XDG_STATE_HOME": "/tmp"}, "/tmp has mode 1777, open to others"),
    ({}, "no private place for the runs' state"),
])
def test_a_user_without_a_private_place_is_refused_isolation(unprivileged_build, env, message):
    """Another user's state goes below their own XDG_STATE_HOME or HOME: where that is open to
    others, or there is none, --isolate says so in one line and makes nothing."""
    build, build_env = unprivileged_build
    d = pathlib.Path(tempfile.mkdtemp(prefix="specx-idle-state-"))
    try:
        os.chown(d, HOSTILE, HOSTILE)
        proc = subprocess.run([*AS_HOSTILE, "env", "-i", "PATH=/usr/bin:/bin",
                               *(f"{k}={v}" for k, v in {**env, **build_env}.items()),
                               build / "specx", "idle",
                               "--isolate", d, "--", "true"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, proc.stderr
        assert said(proc).startswith(f"specx idle: {message}") and \
            said(proc).count("\n") == 1, proc.stderr
        assert not (pathlib.Path("/tmp") / "specx").exists() and not list(d.iterdir())
    finally:
        subprocess.run(["rm", "-rf", d], check=True)
