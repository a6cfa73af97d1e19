"""chase: dependent reads — each read's offset comes from the data of the read before it, so a
speculative copy cannot run ahead (Fraser & Chang 2003, §2). Not one of the paper's
benchmarks: it is the bars' "a workload speculation cannot help" (specx / cold ≤ 1.05)."""
import os
import random
import struct

from specx_support import components
from .base import Command, Workload

HEADER_SIZE = 4096   # must match bench/programs/chase.c
BLOCK_SIZE = 4096


class Chase(Workload):
    name = "chase"
    paper = ""
    description = "pointer chasing: every read's offset is in the data of the last (no help possible)"
    version = 1
    scales = {
        "full": {"blocks": 16384, "hops": 1500, "seed": 1},
        "demo": {"blocks": 4096, "hops": 400, "seed": 1},
        "test": {"blocks": 256, "hops": 60, "seed": 1},
    }

    def generate(self, dest, params, progress):
        n, rng = params["blocks"], random.Random(params["seed"])
        # Sattolo's algorithm: a single cycle through every block, so no block repeats.
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = rng.randrange(i)
            order[i], order[j] = order[j], order[i]
        with open(os.path.join(dest, "chain.bin"), "wb") as f:
            f.write(struct.pack("<8sQQ", b"SPECXCHN", n, BLOCK_SIZE).ljust(HEADER_SIZE, b"\0"))
            for block in range(n):
                f.write(struct.pack("<Q", order[block]) + rng.randbytes(BLOCK_SIZE - 8))
                if block % 1024 == 1023 or block == n - 1:
                    progress(block + 1, n, "blocks")

    def command(self, root, params, scratch):
        return Command([components.require("chase", "the chase workload"),
                        "--hops", str(params["hops"]), os.path.join(root, "chain.bin")])
