"""Page-fault speculation (fault_speculation.h): a program that reads a file through a mapping gets
exactly the output it gets without specx, and its speculative process prefetches through its
own page faults. Cold data behind a fresh slowfs mount; no timing is asserted."""
import json
import pathlib
import subprocess
import sys
import uuid

import pytest

from conftest import BUILD, REPO, copies_get_cpu, run_specx, slowfs_mount

sys.path.insert(0, str(REPO / "bench"))
from specx_bench.workloads.matvec import Matvec  # noqa: E402

MATVEC = BUILD / "bench" / "programs" / "matvec"


def run_both(tmp_path, backing, argv_of):
    """Runs the command argv_of(mountpoint) without and with `specx run`, each on a fresh
    (cold) slowfs mount of BACKING; returns (plain, under specx, specx's JSON report)."""
    results = []
    for under_specx in (False, True):
        with slowfs_mount(backing, tmp_path / f"mnt-{uuid.uuid4().hex}", "--preset",
                          "paper2003") as mnt:
            argv = [str(a) for a in argv_of(mnt)]
            if under_specx:
                report = tmp_path / "report.json"
                with copies_get_cpu(mnt):   # the copy must fault ahead, busy machine or not
                    proc = run_specx("run", "--json", report, "--", *argv)
                results.append(proc)
                results.append(json.loads(report.read_text()))
            else:
                results.append(subprocess.run(argv, capture_output=True, text=True, timeout=120))
    plain, spec, report = results
    return plain, spec, report


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """The matvec workload's matrix at its test scale (over the 1 MiB a mapping needs)."""
    backing = tmp_path_factory.mktemp("matvec")
    Matvec().generate(str(backing), Matvec.scales["test"], lambda *a: None)
    return backing


@pytest.mark.root
def test_matvec_prefetches_through_page_faults_and_computes_the_same(tmp_path, matrix):
    plain, spec, report = run_both(tmp_path, matrix,
                                   lambda mnt: [MATVEC, "--iterations", "2", mnt / "matrix.bin"])
    assert plain.returncode == 0 and "checksum" in plain.stdout, plain.stderr
    assert (spec.returncode, spec.stdout, spec.stderr) == (0, plain.stdout, plain.stderr)
    total = report["total"]
    assert total["spec_created"] >= 1
    assert total["fault_prefetches"] > 0 and total["fault_bytes"] > 0


# Reads a file through a shared read-only mapping, then changes a private writable mapping
# of it (the copy's stand-in zeros and re-mapped chunks must never show, nor reach the file),
# then reads the file through read(2) to show it unchanged.
MAPPED_READER = """
import hashlib, mmap, os, sys
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
shared = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
print("shared", hashlib.sha256(shared).hexdigest(), sum(shared[::4096]))
private = mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
for off in range(0, size, 65536):
    private[off] = (private[off] + 1) % 256
print("private", hashlib.sha256(private).hexdigest())
with open(path, "rb") as f:
    print("file", hashlib.sha256(f.read()).hexdigest())
"""


@pytest.mark.root
def test_programs_reading_through_mappings_print_the_same(tmp_path):
    backing = tmp_path / "backing"
    backing.mkdir()
    data = bytes((i * 7 + i // 4096) % 251 for i in range(3 << 20))
    (backing / "data.bin").write_bytes(data)
    plain, spec, report = run_both(tmp_path, backing,
                                   lambda mnt: [sys.executable, "-c", MAPPED_READER,
                                                mnt / "data.bin"])
    assert plain.returncode == 0, plain.stderr
    assert (spec.returncode, spec.stdout, spec.stderr) == (0, plain.stdout, plain.stderr)
    assert report["total"]["spec_created"] >= 1
    assert (backing / "data.bin").read_bytes() == data
