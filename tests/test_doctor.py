"""specx doctor: each line says what the machine gives specx, checked here against probes the
test makes itself (which hierarchy has the memory controller, which PSI triggers the kernel
takes), and the exit status follows the lines: 0 all ok, 1 something missing or degraded, 2
bad usage."""
import errno
import json
import os
import pathlib
import re
import subprocess

import pytest

from conftest import NOBODY, run_specx

# Every check the report has on any machine (io-sched lines are one per disk).
CHECKS = ["kernel", "cachestat", "psi", "psi-triggers", "fanotify", "overlayfs", "userfaultfd",
          "seccomp", "ptrace", "cgroup memory", "memory.oom.group", "io.cost", "fuse",
          "drop_caches", "swap", "zram", "htb"]
CAP_SYS_RESOURCE = 24


def table(out):
    """{check name: (status, rest of the line)} from the table (its columns: status, check,
    used by, then what was found, the consequence and the fix)."""
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["STATUS", "CHECK"]
    rows = {}
    for line in lines[1:]:
        status, name = line[:9].strip(), line[10:30].strip()
        assert status in ("ok", "degraded", "missing"), line
        rows[name] = (status, line[31:])
    return rows


def doctor_json(*prefix, env=None):
    proc = run_specx("doctor", "--json", prefix=prefix, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def test_the_table_has_every_check_and_the_exit_status_follows_it(specx):
    proc = run_specx("doctor")
    assert proc.returncode in (0, 1), proc.stderr
    rows = table(proc.stdout)
    assert all(name in rows for name in CHECKS), rows.keys()
    assert any(name.startswith("io-sched") for name in rows)
    bad = [name for name, (status, _) in rows.items() if status != "ok"]
    assert proc.returncode == (1 if bad else 0), bad
    for name, (status, rest) in rows.items():
        if status != "ok":
            assert "; fix: " in rest, (name, rest)  # a consequence and a fix on the line


def test_json_says_what_the_table_says(specx):
    rows = table(run_specx("doctor").stdout)
    proc = run_specx("doctor", "--json")
    report = json.loads(proc.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert {name: c["status"] for name, c in checks.items()} == \
        {name: status for name, (status, _) in rows.items()}
    statuses = [c["status"] for c in checks.values()]
    worst = "missing" if "missing" in statuses else "degraded" if "degraded" in statuses else "ok"
    assert report["status"] == worst
    assert proc.returncode == (0 if worst == "ok" else 1)
    for c in checks.values():
        assert c["used_by"] and c["found"]
        assert (c["consequence"] is None) == (c["fix"] is None) or c["status"] == "ok"


def memory_hierarchy_here():
    """(version, mount) of the hierarchy with the memory controller, as the test sees it: a v1
    cgroup mount with the memory option, else the v2 mount if its root offers memory."""
    mounts = [line.split()[1:4] for line in open("/proc/self/mounts")]
    for point, kind, options in mounts:
        if kind == "cgroup" and "memory" in options.split(","):
            return 1, point
    for point, kind, _ in mounts:
        if kind == "cgroup2" and \
                "memory" in pathlib.Path(point, "cgroup.controllers").read_text().split():
            return 2, point
    return None, None


def test_the_memory_line_names_the_hierarchy_the_test_finds(specx):
    version, mount = memory_hierarchy_here()
    _, checks = doctor_json()
    line = checks["cgroup memory"]
    if version is None:
        assert line["status"] == "missing"
        return
    assert f"on cgroup v{version} at {mount} " in line["found"], line
    assert line["status"] == "ok"
    discovery = json.loads(run_specx("doctor", "--cgroup", "--json", check=True).stdout)
    assert discovery["version"] == version and discovery["memory"]["mount"] == mount
    assert discovery["controllers"]["memory"]["version"] == version


def arm_trigger(window_us):
    """0 if a trigger on the machine's memory pressure with that window can be armed, else the
    errno the kernel answers."""
    try:
        fd = os.open("/proc/pressure/memory", os.O_RDWR | os.O_NONBLOCK)
    except OSError as e:
        return e.errno
    try:
        os.write(fd, f"some 150000 {window_us}\0".encode())
        return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)


def have_cap(bit):
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(status["CapEff"], 16) >> bit & 1 == 1


def test_the_psi_trigger_line_says_what_a_trigger_the_test_arms_gets(specx):
    """Below 2 s a trigger needs CAP_SYS_RESOURCE (root lacks it on these machines): the line
    says so exactly when the kernel refuses the test's own 1 s trigger. specx samples PSI and
    arms no trigger, so the line is ok either way."""
    short, long = arm_trigger(1_000_000), arm_trigger(2_000_000)
    _, checks = doctor_json()
    line = checks["psi-triggers"]
    assert line["status"] == "ok"
    if short == 0:
        assert "1 s window can be armed" in line["found"]
    elif long == 0:
        assert short == errno.EINVAL and not have_cap(CAP_SYS_RESOURCE)
        assert "whole 2 s" in line["found"] and "no CAP_SYS_RESOURCE" in line["found"]
    else:
        assert "no trigger can be armed" in line["found"]


@pytest.mark.root
def test_an_unprivileged_user_is_told_what_it_cannot_do(specx, unprivileged_build):
    """As a user with no capabilities: no group can be made in root's hierarchies, no mount
    watched, no overlay mounted, and the PSI line still agrees with the kernel; exit 1."""
    build, env = unprivileged_build
    prefix = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
    proc = run_specx("doctor", "--json", prefix=prefix, exe=build / "specx",
                     env={**os.environ, **env, "TMPDIR": "/tmp"})
    assert proc.returncode == 1, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    for name in ("fanotify", "overlayfs", "fuse", "drop_caches"):
        assert checks[name]["status"] != "ok" and checks[name]["fix"], checks[name]
    if "delegation memory" in checks:
        assert checks["delegation memory"]["status"] == "missing"
    assert "CAP_SYS_RESOURCE" in checks["psi-triggers"]["found"] or \
        "1 s window can be armed" in checks["psi-triggers"]["found"]


def leftovers():
    """Groups and directories the doctor's probes make, wherever they could be left."""
    found = [str(p) for p in pathlib.Path("/tmp").glob("specx-doctor-*")]
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(root, d) for d in dirs if d.startswith("specx-doctor-")]
    return set(found)


def test_the_probes_leave_nothing_behind(specx):
    before = leftovers()
    run_specx("doctor", env={**os.environ, "TMPDIR": "/tmp"})
    assert leftovers() == before


def test_bad_usage_is_one_line_and_status_2(specx):
    for args in (["--bogus"], ["extra"], ["--json", "-x"]):
        proc = run_specx("doctor", *args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith("specx doctor: ") and proc.stderr.count("\n") == 1


def test_help_and_the_dispatcher_know_the_command(specx):
    proc = run_specx("doctor", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: specx doctor")
    assert "--json" in proc.stdout and "--cgroup" in proc.stdout
    listing = run_specx("--help").stdout
    assert re.search(r"^  doctor ", listing, re.M)
    assert pathlib.Path(__file__).parent.parent.joinpath("docs", "specx-doctor.1").exists()
