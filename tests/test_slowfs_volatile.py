"""specx slowfs --volatile-cache: what a power cut keeps (data synced with its file, names
synced with their directory) and drops (everything else), that the device is gone after it,
and that an unmount without a cut keeps everything. The commit of `specx idle` is cut at every
point in test_idle_powercut.py."""
import errno
import json
import os

import pytest

from conftest import run_specx, slowfs_mount

pytestmark = pytest.mark.root

VOLATILE = ("--latency-ms", "0", "--volatile-cache")


def power(mnt):
    return json.loads(os.getxattr(mnt, "user.specx.slowfs.power"))


def sync(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture
def backing(tmp_path):
    b = tmp_path / "backing"
    (b / "d").mkdir(parents=True)
    for name in ("kept", "unsynced", "removed", "replaced", "moved"):
        write(b / "d" / name, f"old {name}".encode())
    return b


def test_a_cut_keeps_only_what_was_synced(tmp_path, backing):
    with slowfs_mount(backing, tmp_path / "mnt", *VOLATILE) as mnt:
        d = mnt / "d"
        write(d / "kept", b"new kept, longer than before")
        sync(d / "kept")
        write(d / "unsynced", b"new")
        write(d / "made-synced", b"made")
        sync(d / "made-synced")
        write(d / "made-empty", b"data never synced")
        os.unlink(d / "removed")
        write(d / "tmp", b"replacement")
        sync(d / "tmp")
        os.rename(d / "tmp", d / "replaced")
        sync(d)  # the names so far are durable; what follows is not
        os.mkdir(d / "newdir")
        write(d / "newdir" / "f", b"f")
        sync(d / "newdir" / "f")
        sync(d / "newdir")
        os.rename(d / "moved", d / "moved-away")
        os.unlink(d / "kept")
        assert power(mnt)["changes"] > 0 and not power(mnt)["cut"]
        run_specx("slowfs", "--power-cut", mnt, check=True)
        counters = power(mnt)
        assert counters["cut"] and counters["undo_failures"] == 0
        with pytest.raises(OSError) as e:
            os.listdir(d)
        assert e.value.errno == errno.EIO
    got = {p.name: p.read_bytes() for p in (backing / "d").iterdir()}
    assert got == {
        "kept": b"new kept, longer than before",  # data synced; its unlink was not
        "unsynced": b"old unsynced",
        "made-synced": b"made",
        "made-empty": b"",  # its name is durable, its data was never synced
        "replaced": b"replacement",
        "moved": b"old moved",  # the rename was not durable
    }  # no "removed", no "newdir" (its parent was not synced after the mkdir)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".specx-slowfs")] == []


def test_a_cut_after_the_nth_change(tmp_path, backing):
    with slowfs_mount(backing, tmp_path / "mnt", *VOLATILE, "--power-cut-after", "2") as mnt:
        write(mnt / "d" / "unsynced", b"new")  # open with O_TRUNC, then a write: 2 changes
        counters = power(mnt)
        assert counters["cut"] and counters["changes"] == 2
        with pytest.raises(OSError) as e:
            (mnt / "d" / "kept").read_bytes()
        assert e.value.errno == errno.EIO
    assert (backing / "d" / "unsynced").read_bytes() == b"old unsynced"


def test_an_unmount_without_a_cut_keeps_everything(tmp_path, backing):
    with slowfs_mount(backing, tmp_path / "mnt", *VOLATILE) as mnt:
        write(mnt / "d" / "unsynced", b"new")
        os.unlink(mnt / "d" / "removed")
        (mnt / "d" / "newdir").mkdir()
    assert (backing / "d" / "unsynced").read_bytes() == b"new"
    assert not (backing / "d" / "removed").exists() and (backing / "d" / "newdir").is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".specx-slowfs")] == []


def test_power_cut_needs_a_volatile_mount(tmp_path, backing):
    with slowfs_mount(backing, tmp_path / "mnt", "--latency-ms", "0") as mnt:
        proc = run_specx("slowfs", "--power-cut", mnt)
        assert proc.returncode == 1
        assert proc.stderr == f"specx slowfs: '{mnt}' is not a slowfs mount with --volatile-cache\n"
    assert "user.specx.slowfs.power-cut" not in os.listxattr(backing)
    proc = run_specx("slowfs", "--power-cut-after", "3", backing, tmp_path / "mnt")
    assert proc.returncode == 2
    assert proc.stderr == "specx slowfs: --power-cut-after needs --volatile-cache\n"


def test_after_a_cut_even_the_close_of_a_counted_file_fails(tmp_path, backing):
    """With --count-flushes the mount answers FLUSH (one per close): past the cut it fails
    like every other request, rather than being counted on a device that is gone."""
    with slowfs_mount(backing, tmp_path / "mnt", *VOLATILE, "--count-flushes") as mnt:
        fd = os.open(mnt / "d" / "kept", os.O_RDONLY)
        try:
            run_specx("slowfs", "--power-cut", mnt, check=True)
        finally:
            with pytest.raises(OSError) as e:
                os.close(fd)
        assert e.value.errno == errno.EIO
