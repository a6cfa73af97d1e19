"""xds: random slices through a 3-D volume — the paper's XDataSlice (25 random slices through
512^3 32-bit values, 512 MB; Table 1). Each slice reads one brick per brick the plane cuts, with
pread, at offsets that depend on the slice: seemingly random reads that readahead cannot
predict but the program's own logic determines (§4.2)."""
import os
import random
import struct

from .. import components
from .base import Command, Workload



class Xds(Workload):
    name = "xds"
    paper = "XDataSlice"
    description = "slices through a 3-D data set (pread)"
    version = 2
    scales = {
        "full": {"n": 512, "brick": 32, "slices": 25, "seed": 1},
        "demo": {"n": 256, "brick": 32, "slices": 25, "seed": 1},
        "test": {"n": 32, "brick": 8, "slices": 5, "seed": 1},
    }

    def generate(self, dest, params, progress):
        n, brick, rng = params["n"], params["brick"], random.Random(params["seed"])
        total = n * n * n * 4
        chunk = 8 << 20
        # Bricks start at a multiple of their own size, as in any bricked volume format meant
        # for block storage: a brick that straddles stripe units costs an extra disk access
        # (version 1 put them 4 KiB past the boundary, so every brick read took 3 disks).
        data_offset = brick ** 3 * 4
        with open(os.path.join(dest, "volume.bin"), "wb") as f:
            header = b"SPECXVOL" + struct.pack("<III", n, brick, data_offset)
            f.write(header.ljust(data_offset, b"\0"))
            for done in range(0, total, chunk):
                f.write(rng.randbytes(min(chunk, total - done)))
                progress(min(done + chunk, total) >> 20, total >> 20, "MiB of volume")

    def command(self, root, params, scratch):
        return Command([components.require("xds", "the xds workload"),
                        "--slices", str(params["slices"]), "--seed", str(params["seed"]),
                        os.path.join(root, "volume.bin")])
