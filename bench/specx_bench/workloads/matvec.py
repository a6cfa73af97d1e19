"""matvec: out-of-core matrix-vector multiply over an mmapped matrix, the paper's MATVEC
(Fraser & Chang 2003, Tables 3-4). Its I/O is page faults, not read calls, and it runs in a
memory cgroup smaller than the matrix (memcg.py), so every iteration faults the matrix in
again: real memory pressure, not a simulated one."""
import os

from specx_support.programs import write_matrix

from specx_support import components
from .base import Command, Workload


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
        write_matrix(os.path.join(dest, "matrix.bin"), params["n"], progress)

    def command(self, root, params, scratch):
        return Command([components.require("matvec", "the matvec workload"),
                        "--iterations", str(params["iterations"]),
                        os.path.join(root, "matrix.bin")])

