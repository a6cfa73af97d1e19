"""refork: the cost of re-creating the speculative copy of a program with a large resident set
(Fraser & Chang 2003, §5.1, Table 3) and the copy-on-write faults a plain fork adds to it
(§5.2, Table 4). bench/programs/refork fills its memory, then reads blocks of a file at
offsets no copy can predict, so the runtime reforks at stall after stall; after its first read
it writes every page of its memory once more, while a copy lives. Run it in the modes
nospec, specx-basic and specx-fast."""
import os
import random

from specx_support import components
from .base import Command, Workload


class Refork(Workload):
    name = "refork"
    paper = "Tables 3-4"
    description = "reforks and copy-on-write faults of a program with 1 GiB resident"
    version = 1
    scales = {
        "full": {"file_mb": 64, "mem_mib": 1024, "reads": 1500},
        "demo": {"file_mb": 16, "mem_mib": 256, "reads": 300},
        "test": {"file_mb": 4, "mem_mib": 64, "reads": 100},
    }

    def generate(self, dest, params, progress):
        total, rng = params["file_mb"], random.Random(1)
        with open(os.path.join(dest, "blocks.bin"), "wb") as f:
            for mb in range(total):
                f.write(rng.randbytes(1 << 20))
                progress(mb + 1, total, "MiB")

    def command(self, root, params, scratch):
        return Command([components.require("refork", "the refork workload"),
                        "--mem", str(params["mem_mib"]), "--reads", str(params["reads"]),
                        "--write", os.path.join(root, "blocks.bin")])
