"""The commit of `specx idle --isolate ... --commit auto` against power loss. The isolated
directory lies on a slowfs mount with a volatile write cache (`--volatile-cache`): data is
durable only once its file is synced, a name only once its directory is, and the power cut
rolls the backing directory back to what was durable. The commit is cut after each of its
requests in turn; after every cut each file is exactly old or exactly new (never empty, short
or mixed), only specx's own temporary names may remain, a commit reported done is durable, and
the next `specx idle` finishes an interrupted one."""
import json
import os
import pathlib
import re
import shutil

import pytest

from conftest import run_specx, slowfs_mount

pytestmark = pytest.mark.root

# What the command does: existing files made larger and smaller, new files and a new
# directory, one file removed. Old and new contents differ in every byte position's pattern,
# so a short or mixed file matches neither.
GROWN = {"a": (300, 5000), "sub/b": (10, 70_000), "sub/deep/c": (4096, 4097), "e": (0, 900)}
SHRUNK = {"f": (6000, 20), "sub/g": (70_000, 3000), "h": (1, 0), "sub/deep/i": (5000, 4999)}
MADE = {"n1": 700, "sub/n2": 12_000, "newdir/x": 50, "newdir/deeper/y": 9000}
REMOVED = ["gone"]

# The temporary name specx idle's commit gives a file beside its target (src/idle/changes.c).
TEMPORARY = re.compile(r"\.specx-idle-\d+-\d+")


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


def check_old_or_new(d, point):
    """Every file is exactly old or new (absent counts for what did not exist or was
    removed); what is neither may only be a temporary of the commit. Returns the files."""
    found = files_of(d)
    for path in sorted(set(OLD) | set(NEW)):
        got = found.get(path)
        assert got in (OLD.get(path), NEW.get(path)), (
            f"cut after request {point}: {path} is neither old nor new "
            f"({'absent' if got is None else f'{len(got)} bytes'})")
    strays = [p for p in found if p not in OLD and p not in NEW]
    assert all(TEMPORARY.fullmatch(os.path.basename(p)) for p in strays), (
        f"cut after request {point}: stray entries {strays}")
    return found


def all_new(d):
    found = files_of(d)
    return {p: v for p, v in found.items() if not TEMPORARY.fullmatch(os.path.basename(p))} == NEW


def power(mnt):
    return json.loads(os.getxattr(mnt, "user.specx.slowfs.power"))


def commit(tmp_path, mnt):
    """The command copies the new contents in (cp: little CPU, which it gets at idle priority
    until --within promotes it) and removes a file."""
    new = tmp_path / "new"
    if not new.exists():
        make_tree(new, NEW)
    d = mnt / "d"
    script = f"cp -R {new}/. {d}/ && rm {' '.join(str(d / p) for p in REMOVED)}"
    return run_specx("idle", "--within", "1s", "--isolate", d, "--commit", "auto", "--",
                     "sh", "-c", script, timeout=60)


def cut_during_commit(tmp_path, point):
    """Mounts a fresh backing directory and cuts the power after the commit's POINT-th
    request (or, if it makes fewer, at its end). Returns the command and the model's
    counters."""
    shutil.rmtree(tmp_path / "backing", ignore_errors=True)
    backing = make_backing(tmp_path)
    with slowfs_mount(backing, tmp_path / "mnt", "--latency-ms", "0", "--volatile-cache",
                      "--power-cut-after", str(point)) as mnt:
        proc = commit(tmp_path, mnt)
        if not power(mnt)["cut"]:
            run_specx("slowfs", "--power-cut", mnt, check=True)
        return proc, power(mnt)


def check_cut(backing, point, proc, counters):
    assert counters["cut"] and counters["undo_failures"] == 0, counters
    check_old_or_new(backing / "d", point)
    if proc.returncode == 0:
        assert all_new(backing / "d"), f"cut after request {point}: a commit reported done " \
            "was not durable"
    else:
        assert "cannot commit" in proc.stderr, proc.stderr


def finish_interrupted_commit(tmp_path):
    """The device back, the next specx idle finishes what the cut interrupted (and so leaves
    no state behind for later runs, whatever the checks found)."""
    with slowfs_mount(tmp_path / "backing", tmp_path / "mnt", "--latency-ms", "0"):
        return run_specx("idle", "--recover", timeout=60)


def cut_points(tmp_path):
    """Counts the requests that change something in an uncut commit; every one of them is a
    cut point (the commit makes about a hundred), and the end of the commit one more."""
    backing = make_backing(tmp_path)
    with slowfs_mount(backing, tmp_path / "mnt", "--latency-ms", "0",
                      "--volatile-cache") as mnt:
        proc = commit(tmp_path, mnt)
        total = power(mnt)["changes"]
    assert proc.returncode == 0, proc.stderr
    assert all_new(backing / "d")
    return range(1, total + 2)


def test_a_commit_cut_at_any_point_leaves_every_file_old_or_new(specx, tmp_path):
    points = cut_points(tmp_path)
    assert len(points) >= 50
    interrupted = 0
    for point in points:
        proc, counters = cut_during_commit(tmp_path, point)
        try:
            check_cut(tmp_path / "backing", point, proc, counters)
        finally:
            if proc.returncode != 0:
                interrupted += 1
                recovered = finish_interrupted_commit(tmp_path)
        if proc.returncode != 0:
            assert recovered.returncode == 0, recovered.stderr
            assert check_old_or_new(tmp_path / "backing" / "d", point) == NEW, \
                f"cut after request {point}: not finished"
    # The cut fell inside the commit at all but its last points.
    assert interrupted >= len(points) - 3
