"""Page-fault speculation (fault_speculation.h): a program that reads a file through a mapping gets
exactly the output it gets without specx, and its speculative process prefetches through its
own page faults. Cold data behind a fresh slowfs mount; no timing is asserted."""
import json
import os
import pathlib
import random
import subprocess
import sys
import uuid

import pytest

from conftest import BUILD, copies_get_cpu, run_specx, slowfs_mount
from specx_support.programs import write_matrix

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
    """A matrix as the matvec workload's at its test scale, 512 x 512 doubles (over the 1 MiB
    a mapping needs)."""
    backing = tmp_path_factory.mktemp("matvec")
    write_matrix(backing / "matrix.bin", 512)
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


# Reads file after file in the order a constant table of its own gives, one entry per page of
# a read-only segment over 1 MiB. The loader's first faults read the whole binary ahead (the
# device's readahead is larger than it), so the program drops the table's pages again, and
# MADV_RANDOM makes each lookup fault in its own page only.
TABLE_READER = """
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#define PAGE 4096
#define STRIDE (PAGE / sizeof(int))
#define FIRST 64 /* pages: beyond the fault-around of anything else the program reads there */
static const int order[300 * STRIDE] = { %(entries)s };
int main(int argc, char **argv)
{
    uintptr_t start = (uintptr_t)order & ~(uintptr_t)(PAGE - 1);
    madvise((void *)start, sizeof order + PAGE, MADV_RANDOM);
    int self = open("/proc/self/exe", O_RDONLY);
    posix_fadvise(self, 0, 0, POSIX_FADV_DONTNEED);
    close(self);
    static char buf[1 << 16];
    for (int k = 0; k < argc - 1; k++) {
        int fd = open(argv[order[(FIRST + k) * STRIDE]], O_RDONLY);
        long total = 0;
        for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
            total += n;
        close(fd);
        printf("%%d %%ld\\n", order[(FIRST + k) * STRIDE], total);
    }
    return 0;
}
"""


@pytest.mark.root
def test_a_copy_reads_its_programs_own_constants_not_stand_ins(tmp_path):
    """The program's executable has a read-only piece over 1 MiB, its constants; the copy must
    see them as they are (the page read from disk if it must), never zeros standing in for a
    page not in memory as in a data mapping: here they decide which file is read next, and
    PostgreSQL's copies aborted on such zeros in the server's own .rodata."""
    files = 40
    order = list(range(1, files + 1))
    random.Random(7).shuffle(order)
    source = tmp_path / "table-reader.c"
    source.write_text(TABLE_READER % {"entries": ", ".join(
        f"[(FIRST + {k}) * STRIDE] = {f}" for k, f in enumerate(order))})
    binary = tmp_path / "table-reader"   # on a disk file system: its pages can be evicted
    subprocess.run(["cc", "-O2", "-o", binary, source], check=True)
    backing = tmp_path / "backing"
    backing.mkdir()
    for i in range(1, files + 1):
        (backing / f"f{i:02d}").write_bytes(os.urandom(24000))

    def argv_of(mnt):
        return [binary, *(mnt / f"f{i:02d}" for i in range(1, files + 1))]
    plain, spec, report = run_both(tmp_path, backing, argv_of)
    assert plain.returncode == 0 and len(plain.stdout.splitlines()) == files, plain.stderr
    assert (spec.returncode, spec.stdout, spec.stderr) == (0, plain.stdout, plain.stderr)
    total = report["total"]
    # Stand-in zeros made every copy predict argv[0]: none earned trust, nothing prefetched.
    assert total["spec_used"] > 0, total
