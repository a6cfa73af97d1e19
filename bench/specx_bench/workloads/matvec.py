"""matvec: out-of-core matrix-vector multiply over an mmapped matrix, the paper's MATVEC
(Fraser & Chang 2003, Tables 3-4). Its I/O is page faults, not read calls, and it runs in a
memory cgroup smaller than the matrix (memcg.py), so every iteration faults the matrix in
again: real memory pressure, not a simulated one."""
import os
import random
import struct

from .. import components
from .base import Command, Workload

HEADER_SIZE = 4096   # must match bench/programs/matvec.c


class Matvec(Workload):
    name = "matvec"
    paper = "MATVEC"
    description = "matrix-vector products over an mmapped matrix larger than the memory cgroup"
    version = 1
    scales = {
        "full": {"n": 8192, "iterations": 2, "memory_limit_mb": 64},
        "demo": {"n": 2048, "iterations": 2, "memory_limit_mb": 16},
        "test": {"n": 512, "iterations": 2, "memory_limit_mb": 64},
    }

    def generate(self, dest, params, progress):
        # A circulant matrix: row i is a random row rotated by i. Cheap to write, and each
        # row's bytes differ, so a wrong page changes the checksum.
        n, rng = params["n"], random.Random(1)
        row = struct.pack(f"<{n}d", *(rng.random() for _ in range(n)))
        with open(os.path.join(dest, "matrix.bin"), "wb") as f:
            f.write(struct.pack("<8sQQ", b"SPECXMAT", n, n).ljust(HEADER_SIZE, b"\0"))
            for i in range(n):
                k = 8 * (i % n)
                f.write(row[k:] + row[:k])
                if i % 256 == 255 or i == n - 1:
                    progress(i + 1, n, "rows")

    def command(self, root, params, scratch):
        return Command([components.require("matvec", "the matvec workload"),
                        "--iterations", str(params["iterations"]),
                        os.path.join(root, "matrix.bin")])

