"""The runtime switches a descriptor's readahead to RANDOM while the speculative copy's
prefetches serve it (Fraser & Chang 2003 §4.1.2), but never on a descriptor whose readahead
the program chose itself with posix_fadvise."""
import json
import os
import sys
import uuid

import pytest

from conftest import copies_get_cpu, only_files_cold, run_specx, slowfs_mount

# Reads FILE in 64 KiB pieces, one in four; with ADVICE first advises the whole file as such.
STRIDED_READER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
if len(sys.argv) > 2:
    os.posix_fadvise(fd, 0, 0, getattr(os, "POSIX_FADV_" + sys.argv[2]))
while os.read(fd, 65536):
    os.lseek(fd, 3 * 65536, os.SEEK_CUR)
"""


@pytest.fixture(scope="module")
def cold_file(tmp_path_factory):
    base = tmp_path_factory.mktemp("readahead")
    (base / "backing").mkdir()
    (base / "backing" / "data").write_bytes(os.urandom(16 << 20))
    with slowfs_mount(base / "backing", base / "mnt", "--preset", "paper2003") as mnt:
        yield mnt / "data"


def switches(tmp_path, path, *advice):
    only_files_cold("import os, sys", [path])
    report = tmp_path / f"{uuid.uuid4().hex}.json"
    with copies_get_cpu(path):   # the copy's prefetches must come on a busy machine too
        proc = run_specx("run", "--json", report, "--", sys.executable, "-c", STRIDED_READER,
                         path, *advice)
    assert proc.returncode == 0, proc.stderr
    total = json.loads(report.read_text())["total"]
    return total["fadv_random"] + total["fadv_normal"], total["spec_used"]


@pytest.mark.root
def test_readahead_is_switched_only_where_the_program_gave_no_advice(specx, tmp_path, cold_file):
    switched, used = switches(tmp_path, cold_file)
    if used < 2:
        pytest.skip(f"the copy's prefetches served {used} reads: nothing to switch for")
    assert switched > 0
    for advice in ("SEQUENTIAL", "NORMAL", "RANDOM"):
        switched, used = switches(tmp_path, cold_file, advice)
        assert used >= 2 and switched == 0, advice


# Reads FILE from start to end in 8 KiB pieces, as PostgreSQL's scans do.
SEQUENTIAL_READER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
off = 0
while b := os.pread(fd, 8192, off):
    off += len(b)
"""


@pytest.mark.root
def test_a_sequential_reader_gets_a_copy_ahead_of_the_kernels_readahead(specx, tmp_path,
                                                                        cold_file):
    """Such a reader misses only at the file's start: then it waits once per readahead window
    for pages in flight. A copy made at the read after such a wait runs ahead of the window
    (docs/design/read-path.md), and the program's reads are served by its prefetches."""
    only_files_cold("import os, sys", [cold_file])
    report = tmp_path / "report.json"
    with copies_get_cpu(cold_file):
        proc = run_specx("run", "--json", report, "--", sys.executable, "-c", SEQUENTIAL_READER,
                         cold_file)
    assert proc.returncode == 0, proc.stderr
    total = json.loads(report.read_text())["total"]
    assert total["stalls"] + total["inflight_waits"] > 0, total
    assert total["spec_used"] > 0, total
