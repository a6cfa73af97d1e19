"""Which files of the preload runtime a blocking read's path enters, and how often
(docs/design/read-path.md): measured, not read off the code.

The runtime is built a second time with -finstrument-functions (a debug build of libspecx.so
alone, in a directory of the test's own) beside a tiny tracer (tests/read_path/tracer.c) that
records every entry to and exit from one of its functions. `specx run` loads that library
(SPECX_LIBEXEC_PATH) for tests/read_path/stalls.c, a program that makes four reads of a cold
file on slowfs (a slow disk: the program's own read must not be in before the clone, or no
copy is made), each where the one before says. The copy sees zeros where the data was not in
memory, so it always predicts offset 0: the first read makes a copy; the second, at offset 0,
is one the copy predicted (a dry copy on probation: kept); at the third the copy is judged
useful and replaced; the fourth judges the new copy useless and backs off.

A file is *entered* when a function of another file calls one of its functions (calls within a
file, and returns, are no entries). Counted from the program's interposed call until it
returns, for every source file below src/run/runtime (src/kernel and src/common are layers of
their own). The copy layers are every runtime layer above core/ but entry/.
"""
import collections
import os
import pathlib
import shutil
import struct
import subprocess

import pytest

from conftest import REPO, evict, run_specx, slowfs_mount

HERE = pathlib.Path(__file__).resolve().parent / "read_path"
RUNTIME = "src/run/runtime/"
SERVICE_LAYERS = ("core/", "sandbox/", "policy/")  # below the copy layers
EVENT = struct.Struct("<IIQ")  # pid, entry (1) or exit (0), offset of the function
READS = 4
MIB = 1 << 20
# Where each read finds the offset of the next (stalls.c starts at 1 MiB).
CHAIN = {1 * MIB: 0, 0: 5 * MIB, 5 * MIB: 3 * MIB, 3 * MIB: 7 * MIB}


@pytest.fixture(scope="module")
def traced_runtime(tmp_path_factory):
    """The directory of a libspecx.so whose functions call the tracer at entry and exit."""
    for tool in ("meson", "ninja", "cc", "addr2line"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is missing")
    build = tmp_path_factory.mktemp("traced-build")
    subprocess.run(["meson", "setup", str(build), str(REPO), "--buildtype=debug",
                    "-Dc_args=-finstrument-functions", "-Db_lundef=false"],
                   check=True, capture_output=True)
    subprocess.run(["ninja", "-C", str(build), "src/run/runtime/libspecx.so"], check=True,
                   capture_output=True)
    return build / "src/run/runtime"


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    """(tracer library, the program)."""
    out = tmp_path_factory.mktemp("read-path-tools")
    tracer, program = out / "tracer.so", out / "stalls"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", tracer, HERE / "tracer.c", "-ldl"],
                   check=True)
    subprocess.run(["cc", "-O2", "-o", program, HERE / "stalls.c"], check=True)
    return tracer, program


def write_chain(path):
    """A file of 8 MiB, in which each read of stalls.c finds where the next one goes."""
    with open(path, "wb") as f:
        f.truncate(8 * MIB)
        for at, following in CHAIN.items():
            f.seek(at)
            f.write(struct.pack("<Q", following))


def symbols(library, offsets):
    """{offset: (function, file relative to the source tree)} by the library's debug info."""
    offsets = sorted(offsets)
    out = subprocess.run(["addr2line", "-f", "-e", str(library), *map(hex, offsets)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    found = {}
    for i, offset in enumerate(offsets):
        where = os.path.normpath(out[2 * i + 1].rsplit(":", 1)[0])
        found[offset] = (out[2 * i], where[where.find("src/"):] if "src/" in where else where)
    return found


def blocking_reads(trace, library):
    """The program's calls of pread (the interposed function), each as its list of events
    (entry, function, file)."""
    data = trace.read_bytes()
    events = [EVENT.unpack_from(data, i) for i in range(0, len(data), EVENT.size)]
    assert events, "the tracer recorded nothing"
    names = symbols(library, {offset for _, _, offset in events})
    program = events[0][0]
    reads, depth, current = [], 0, None
    for pid, entry, offset in events:
        if pid != program:
            continue
        function, file = names[offset]
        if entry and depth == 0 and function == "pread":
            current = []
        if current is not None:
            current.append((entry, function, file))
        depth += 1 if entry else -1
        if depth == 0 and current is not None:
            reads.append(current)
            current = None
    return reads


def entries(read):
    """{runtime file: times the read's path entered it}, and the times the copy layers were
    entered from entry/."""
    counts, into_copy, stack = collections.Counter(), 0, []
    for entry, function, file in read:
        if not entry:
            stack.pop()
            continue
        caller = stack[-1] if stack else None
        if file != caller and file.startswith(RUNTIME):
            layer = file[len(RUNTIME):]
            counts[layer] += 1
            if caller and caller.startswith(RUNTIME + "entry/") and is_copy_layer(layer):
                into_copy += 1
        stack.append(file)
    return counts, into_copy


def is_copy_layer(layer):
    return not layer.startswith(("entry/",) + SERVICE_LAYERS)


@pytest.fixture(scope="module")
def cold_chain(tmp_path_factory):
    base = tmp_path_factory.mktemp("read-path")
    (base / "backing").mkdir()
    write_chain(base / "backing" / "chain")
    with slowfs_mount(base / "backing", base / "mnt", "--preset", "paper2003") as mnt:
        evict(mnt / "chain")
        yield mnt / "chain"


@pytest.fixture(scope="module")
def measured(traced_runtime, tools, cold_chain, tmp_path_factory):
    """[(entries by file, entries of the copy layers from entry/)] of each blocking read, and
    the table of them all (printed with pytest -s)."""
    tracer, program = tools
    trace = tmp_path_factory.mktemp("trace") / "trace"
    env = dict(os.environ, SPECX_LIBEXEC_PATH=str(traced_runtime), LD_PRELOAD=str(tracer),
               SPECX_TRACE_OUT=str(trace))
    done = run_specx("run", "--", program, cold_chain, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:READS] == [str(n) for n in CHAIN.values()]
    reads = [entries(read) for read in blocking_reads(trace, traced_runtime / "libspecx.so")]
    table = "\n".join(f"read {n}: copy layers entered from entry/ {into_copy} times; " +
                      ", ".join(f"{f} {c}" for f, c in sorted(counts.items()))
                      for n, (counts, into_copy) in enumerate(reads, 1))
    print("\n" + table)
    return reads, table


@pytest.mark.root
def test_every_blocking_read_is_traced_through_the_read_path(measured):
    reads, table = measured
    assert len(reads) == READS, table
    assert all("entry/readpath.c" in counts for counts, _ in reads), table


@pytest.mark.root
def test_every_blocking_read_is_classified_once(measured):
    """One decision per stall (policy/stall.c), the copy layers entered once from entry/ to act
    on it, and once more only where the memory control's interval ends after the read."""
    reads, table = measured
    for n, (counts, into_copy) in enumerate(reads, 1):
        assert counts["policy/stall.c"] == 1, f"read {n}\n{table}"
        assert 1 <= into_copy <= 2, f"read {n}\n{table}"


@pytest.mark.root
def test_a_blocking_reads_path_enters_each_runtime_file_at_most_twice(measured):
    """Every file below src/run/runtime at most twice in each read after the first: entry/, the
    copy layers and the services below them (core, sandbox, policy) alike. The first read is
    exempt: it also sets speculation up, once per process (the control region, the sandbox's
    filter, whose libseccomp calls pass through the interposed `syscall` of entry/seccomp.c, the
    memory cgroup, and the memory control's first interval), which no later read does again."""
    reads, table = measured
    for n, (counts, into_copy) in enumerate(reads[1:], 2):
        over = {f: c for f, c in counts.items() if c > 2}
        assert not over, f"read {n}: {over}\n{table}"
