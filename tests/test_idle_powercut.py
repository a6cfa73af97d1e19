"""The commit of `specx idle --isolate ... --commit auto` against power loss. The isolated
directory lies on a slowfs mount with a volatile write cache (`--volatile-cache`): data is
durable only once its file is synced, a name only once its directory is, and the power cut
rolls the backing directory back to what was durable. The power is cut after each request of
the commit in turn (and, with specx idle's state on the same device, at points spread from
the command's first write to the state's removal): after every cut each file is exactly old
or exactly new (never empty, short or mixed), only specx's own temporary names may remain, a
commit reported done is durable, and the next `specx idle --recover` leaves all files old or
all new, with no state left.

Each run happens in a mount namespace of its own (unshare -m), where the mount and a bind
mount over /var/lib (where root's runs keep their state: on the device in the second test,
beside it in the first, never in the machine's own) are seen by nothing else. A run that fails
before the cut (the machine is shared: a cgroup can vanish under it) is repeated."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import SPECX

pytestmark = pytest.mark.root

# What the command does: existing files made larger and smaller, new files and a new
# directory, one file removed. Old and new contents differ in every byte position's pattern,
# so a short or mixed file matches neither.
GROWN = {"a": (300, 5000), "sub/b": (10, 70_000), "sub/deep/c": (4096, 4097), "e": (0, 900)}
SHRUNK = {"f": (6000, 20), "sub/g": (70_000, 3000), "h": (1, 0), "sub/deep/i": (5000, 4999)}
MADE = {"n1": 700, "sub/n2": 12_000, "newdir/x": 50, "newdir/deeper/y": 9000}
REMOVED = ["gone"]

# The temporary name specx idle's commit gives a file beside its target (src/idle/changes.c).
TEMPORARY = re.compile(r"\.specx-idle-\d+(-\d+)?-\d+")


def content(tag, path, size):
    unit = f"{tag}:{path}|".encode()
    return (unit * (size // len(unit) + 1))[:size]


OLD = {p: content("old", p, s[0]) for p, s in {**GROWN, **SHRUNK}.items()}
OLD.update({p: content("old", p, 100) for p in REMOVED})
NEW = {p: content("NEW", p, s[1]) for p, s in {**GROWN, **SHRUNK}.items()}
NEW.update({p: content("NEW", p, s) for p, s in MADE.items()})



def make_tree(top, files):
    for path, data in files.items():
        (top / path).parent.mkdir(parents=True, exist_ok=True)
        (top / path).write_bytes(data)
    return top


def make_backing(root):
    make_tree(root / "backing" / "d", OLD)
    return root / "backing"


def files_of(d):
    """Regular files below D by relative path, and any other entry that is not a directory."""
    found = {}
    for dirpath, _, names in os.walk(d):
        for name in names:
            p = pathlib.Path(dirpath, name)
            rel = str(p.relative_to(d))
            found[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else "not a file"
    return found


def check_old_or_new(d, when):
    """Every file is exactly old or new (absent counts for what did not exist or was
    removed); what is neither may only be a temporary of the commit."""
    found = files_of(d)
    for path in sorted(set(OLD) | set(NEW)):
        got = found.get(path)
        assert got in (OLD.get(path), NEW.get(path)), (
            f"{when}: {path} is neither old nor new "
            f"({'absent' if got is None else f'{len(got)} bytes'})")
    strays = [p for p in found if p not in OLD and p not in NEW]
    assert all(TEMPORARY.fullmatch(os.path.basename(p)) for p in strays), (
        f"{when}: stray entries {strays}")


def all_new(d):
    found = files_of(d)
    return {p: v for p, v in found.items() if not TEMPORARY.fullmatch(os.path.basename(p))} == NEW


def all_old_or_all_new(d):
    return files_of(d) in (OLD, NEW)


# Mounts slowfs over BACKING at MNT with OPTIONS; binds VARLIB over /var/lib, so that specx
# idle keeps its state (/var/lib/specx/idle) there: on the device (MNT/varlib) or beside it,
# never in the machine's own; runs specx COMMAND; if CUT, cuts the power at the end unless it
# went during the command; unmounts whatever happens. Prints the command's exit status and
# errors, whether the power went during it, and the counters.
IN_NAMESPACE = """
import json, os, subprocess, sys
specx, backing, mnt, options, varlib, command, cut = json.loads(sys.argv[1])
power = lambda: json.loads(os.getxattr(mnt, "user.specx.slowfs.power"))
subprocess.run([specx, "slowfs", "-d", *options, backing, mnt], check=True)
try:
    subprocess.run(["mount", "--bind", varlib, "/var/lib"], check=True)
    try:
        proc = subprocess.run([specx, *command], capture_output=True, text=True, timeout=60)
        went, counters = (power()["cut"], None) if cut else (False, None)
        if cut and not went:
            subprocess.run([specx, "slowfs", "--power-cut", mnt], check=True)
        counters = power() if cut else None
    finally:
        subprocess.run(["umount", "/var/lib"], check=True)
finally:
    subprocess.run([specx, "slowfs", "--unmount", mnt], check=True)
print(json.dumps([proc.returncode, proc.stderr, went, counters]))
"""


def on_device(tmp_path, options, command, bind, cut=False):
    """Runs specx COMMAND with tmp_path/backing mounted at tmp_path/mnt (see IN_NAMESPACE)."""
    (tmp_path / "mnt").mkdir(exist_ok=True)
    args = json.dumps([str(SPECX), str(tmp_path / "backing"), str(tmp_path / "mnt"),
                       ["--latency-ms", "0", *options], str(varlib_of(tmp_path, bind)),
                       [str(a) for a in command], cut])
    done = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c",
                           IN_NAMESPACE, args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def commit_command(tmp_path):
    """The command copies the new contents in (cp: little CPU, which it gets at idle priority
    until --within promotes it) and removes a file."""
    new = tmp_path / "new"
    if not new.exists():
        make_tree(new, NEW)
    d = tmp_path / "mnt" / "d"
    script = f"cp -R {new}/. {d}/ && rm {' '.join(str(d / p) for p in REMOVED)}"
    return ["idle", "--within", "1s", "--isolate", d, "--commit", "auto", "--", "sh", "-c",
            script]


def varlib_of(tmp_path, on_device):
    """Where the runs keep their state: on the device (seen through the mount) or beside it."""
    return tmp_path / "mnt" / "varlib" if on_device else tmp_path / "varlib"


def fresh_device(tmp_path):
    """The backing directory, and the places for specx idle's state on the device and beside
    it: root's and writable by nobody else, as specx requires of /var/lib."""
    shutil.rmtree(tmp_path / "backing", ignore_errors=True)
    for varlib in (make_backing(tmp_path) / "varlib", tmp_path / "varlib"):
        varlib.mkdir(exist_ok=True)
        varlib.chmod(0o755)


def runs_left(tmp_path, on_device):
    """The runs' states that specx idle left."""
    place = tmp_path / "backing" / "varlib" if on_device else tmp_path / "varlib"
    runs = place / "specx" / "idle"
    return os.listdir(runs) if runs.exists() else []


def count_changes(tmp_path, bind):
    """The requests that change something in an uncut run."""
    fresh_device(tmp_path)
    rc, err, went, counters = on_device(tmp_path, ["--volatile-cache"],
                                        commit_command(tmp_path), bind, cut=True)
    assert rc == 0 and not went, err
    check_old_or_new(tmp_path / "backing" / "d", "cut after the commit")
    assert all_new(tmp_path / "backing" / "d"), "cut after the commit: the commit was lost"
    return counters["changes"]


def cut_and_recover(tmp_path, point, bind):
    """The run cut after its POINT-th change (or at its end), the checks of what the cut
    left, and the recovery after it, which runs whatever the checks found, so that no state
    outlives the test. Returns the run's exit status, or None if it failed before the cut."""
    fresh_device(tmp_path)
    rc, err, went, counters = on_device(
        tmp_path, ["--volatile-cache", "--power-cut-after", str(point)],
        commit_command(tmp_path), bind, cut=True)
    d = tmp_path / "backing" / "d"
    try:
        if rc != 0 and not went:
            return None
        assert counters["cut"] and counters["undo_failures"] == 0, counters
        check_old_or_new(d, f"cut after request {point}")
        if rc == 0:
            assert all_new(d), f"cut after request {point}: a commit reported done was lost"
    finally:
        recovered = on_device(tmp_path, [], ["idle", "--recover"], bind)
    assert recovered[0] == 0, f"cut after request {point}: {recovered[1]}"
    assert all_old_or_all_new(d), f"cut after request {point}: old and new mixed after recovery"
    assert not runs_left(tmp_path, bind), f"cut after request {point}: state left"
    return rc


def cut_at(tmp_path, point, bind):
    for _ in range(3):
        rc = cut_and_recover(tmp_path, point, bind)
        if rc is not None:
            return rc
    pytest.fail(f"the run to be cut after request {point} failed before it three times")


def test_a_commit_cut_at_any_point_leaves_every_file_old_or_new(specx, tmp_path):
    """Every request of the commit is a cut point (about a hundred), and its end one more."""
    total = count_changes(tmp_path, bind=False)
    assert total >= 50
    interrupted = sum(cut_at(tmp_path, point, bind=False) != 0 for point in range(1, total + 2))
    assert interrupted >= total - 2  # the cut fell inside the commit at all but its last points


def test_a_commit_whose_state_shares_the_device_is_all_or_nothing(specx, tmp_path):
    """specx idle's state (the upper layer, the list of directories, the journal) lies on the
    cut device too: 60 cut points spread over the whole run, from the command's first write
    to the removal of the state."""
    total = count_changes(tmp_path, bind=True)
    for point in sorted({1 + round(i * (total - 1) / 59) for i in range(60)}):
        cut_at(tmp_path, point, bind=True)
