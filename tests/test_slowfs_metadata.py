"""What specx slowfs charges for metadata on the remote presets: requests per operation,
counted from the device's statistics, against what the model says they should be; and the
kernel's caching, which decides how often those requests are made. No test asserts on wall
time: the counts and the modelled response times are the model's arithmetic."""
import json
import math
import os
import pathlib
import subprocess

import pytest

from conftest import run_specx, slowfs_mount

pytestmark = pytest.mark.root

NFS = ("--preset", "nfs")
RTT_S = 0.0002  # the nfs preset's cost of one metadata request
OPS = ("lookup", "open", "readdir", "readlink")


def stats(mnt):
    return json.loads(run_specx("slowfs", "--stats", mnt, "--json", check=True).stdout)


def metadata_delta(mnt, action):
    """The metadata requests (per operation, and their modelled response time) that ACTION
    made on the mount MNT."""
    before = stats(mnt)["metadata"]
    action()
    after = stats(mnt)["metadata"]
    return {k: after[k] - before[k] for k in (*OPS, "requests", "response_s")}


def make_tree(root, dirs=3, files=6, links=2):
    """DIRS directories of FILES small files each, and LINKS symbolic links at the top.
    Returns the number of entries each directory lists, "." and ".." included."""
    listed = {root: dirs + links + 2}
    for d in range(dirs):
        sub = root / f"d{d}"
        sub.mkdir(parents=True)
        for f in range(files):
            (sub / f"f{f}.txt").write_text(f"{d} {f}\n")
        listed[sub] = files + 2
    for i in range(links):
        (root / f"link{i}").symlink_to(f"d{i % dirs}/f0.txt")
    return listed


def test_presets_and_costs_in_the_statistics(workdir):
    (workdir / "backing").mkdir()
    with slowfs_mount(workdir / "backing", workdir / "mnt", *NFS) as mnt:
        model = stats(mnt)["model"]
    assert model["metadata_ms"] == {op: 0.2 for op in OPS}
    assert model["readdir_entries"] == 1000 and model["attr_timeout_s"] == 60
    assert model["disks"] == 8 and model["placement"] == "any"
    with slowfs_mount(workdir / "backing", workdir / "mnt", "--preset", "object-store") as mnt:
        model = stats(mnt)["model"]
    assert model["metadata_ms"] == {"lookup": 30, "open": 0, "readdir": 30, "readlink": 30}


def test_cold_stat_costs_a_lookup_per_component_and_a_second_stat_none(workdir):
    """A path never seen costs one LOOKUP per component, as on NFS; a second stat within the
    attribute timeout is answered by the kernel and costs nothing."""
    backing = workdir / "backing"
    (backing / "a" / "b" / "c").mkdir(parents=True)
    (backing / "a" / "b" / "c" / "file").write_text("x\n")
    with slowfs_mount(backing, workdir / "mnt", *NFS) as mnt:
        os.stat(mnt)  # the root's attributes, fetched once at the first use of the mount
        cold = metadata_delta(mnt, lambda: os.stat(mnt / "a" / "b" / "c" / "file"))
        warm = metadata_delta(mnt, lambda: os.stat(mnt / "a" / "b" / "c" / "file"))
    assert cold["lookup"] == 4 and cold["requests"] == 4, cold
    assert cold["response_s"] >= 4 * RTT_S * 0.999  # each request waited its round trip
    assert warm["requests"] == 0, warm


def test_without_attribute_caching_every_stat_asks_again(workdir):
    """The timeout decides: at 0 s the kernel revalidates at each stat, and each revalidation
    is a request on the device."""
    backing = workdir / "backing"
    backing.mkdir()
    (backing / "file").write_text("x\n")
    with slowfs_mount(backing, workdir / "mnt", *NFS, "--attr-timeout-s", "0") as mnt:
        os.stat(mnt / "file")
        again = metadata_delta(mnt, lambda: os.stat(mnt / "file"))
    assert again["lookup"] >= 1, again


def ls_lR(path):
    subprocess.run(["ls", "-lR", str(path)], check=True, stdout=subprocess.DEVNULL)


def test_ls_lR_costs_what_the_model_says_and_restats_cost_nothing(workdir):
    """A cold `ls -lR` pays one READDIR per page of each listing (here 5 entries a page, so
    that a listing spans pages), a READLINK per symbolic link and a LOOKUP for the tree's top
    (READDIRPLUS brings every entry's attributes, so no entry is looked up); nothing opens a
    file. Within the attribute timeout a stat of any file it listed costs nothing (but one of
    a link it read, or of a directory it listed, asks again: FUSE marks their access time
    stale when it reads them). Run again,
    link targets and attributes come from the kernel; listings are paid again (libfuse's
    high-level API cannot ask the kernel to keep them), and so may be the top directory's
    attributes (FUSE marks a listed directory's access time stale)."""
    backing = workdir / "backing"
    listed = make_tree(backing / "tree")
    files = [p.relative_to(backing) for p in backing.rglob("*")
             if p.is_file() and not p.is_symlink()]
    page = 5
    with slowfs_mount(backing, workdir / "mnt", *NFS, "--readdir-entries", str(page)) as mnt:
        os.stat(mnt)
        cold = metadata_delta(mnt, lambda: ls_lR(mnt / "tree"))
        restat = metadata_delta(mnt, lambda: [os.lstat(mnt / f) for f in files])
        warm = metadata_delta(mnt, lambda: ls_lR(mnt / "tree"))
    assert cold["readdir"] == sum(math.ceil(n / page) for n in listed.values()), cold
    assert cold["readlink"] == 2 and cold["open"] == 0, cold
    assert cold["lookup"] == 1, cold
    assert cold["response_s"] >= cold["requests"] * RTT_S * 0.999
    assert len(files) == 18 and restat["requests"] == 0, restat
    assert warm["readlink"] == 0 and warm["open"] == 0 and warm["lookup"] <= 1, warm
    assert warm["readdir"] == cold["readdir"], warm


def test_every_open_pays_close_to_open_revalidation(workdir):
    """An NFS client revalidates a file's attributes at each open (close-to-open consistency):
    each open is a request even when the data is cached."""
    backing = workdir / "backing"
    backing.mkdir()
    (backing / "file").write_bytes(os.urandom(10000))
    with slowfs_mount(backing, workdir / "mnt", *NFS) as mnt:
        (mnt / "file").read_bytes()
        twice = metadata_delta(mnt, lambda: [(mnt / "file").read_bytes() for _ in range(2)])
    assert twice["open"] == 2, twice


def test_metadata_latency_override_makes_metadata_free(workdir):
    """--metadata-latency-ms sets every metadata cost: 0 turns the nfs preset's off."""
    backing = workdir / "backing"
    make_tree(backing / "tree")
    with slowfs_mount(backing, workdir / "mnt", *NFS, "--metadata-latency-ms", "0") as mnt:
        ls_lR(mnt / "tree")
        s = stats(mnt)
    assert s["metadata"]["requests"] == 0
    assert s["model"]["metadata_ms"] == {op: 0 for op in OPS}
