"""xds: random slices through a 3-D volume — the paper's XDataSlice (25 random slices through
512^3 32-bit values, 512 MB; Table 1). Each slice reads one brick per brick the plane cuts, with
pread, at offsets that depend on the slice: seemingly random reads that readahead cannot
predict but the program's own logic determines (§4.2).

Bricks follow each other along a 3-D Hilbert curve (version 3; before, in (z, y, x) order). On
the paper's device (4 disks, 64 KiB stripe unit) a 128 KiB brick covers two stripe units, so
which pair of disks holds it follows the parity of its position in the file. In (z, y, x)
order with 16 bricks per edge every brick of an x-slice has the parity of its x, so each
x-slice is read from one disk pair: measured on paper2003 under `specx run`, through every
x-slice (10 of the 25, 59 % of the bricks) one pair was busy 99-100 % of the time and the other
0 %, and specx/cold was 0.70-0.71 with the default horizon and no better (0.78) with a horizon
of 256 prefetches. Morton
order keeps that pathology (a brick's parity is its x's lowest bit). Along a Hilbert curve
every step moves to a face neighbour, so a brick's parity is that of x + y + z and every slice
orientation alternates between the pairs: measured the same way, each of the four disks was
busy 21.3 s of the 21.6 s specx run. Volume formats store bricks along space-filling curves
for locality; where each read lands still follows from the slice's geometry, never from data.
Each brick read in a cold run already keeps two disks busy, so on this device speculation can
at best halve the time of the reads."""
import os
import random
import struct

from specx_support import components
from .base import Command, Workload

# The header's brick order (bench/programs/xds.c): 0 = (z, y, x), 1 = along a Hilbert curve.
HILBERT_ORDER = 1


class Xds(Workload):
    name = "xds"
    paper = "XDataSlice"
    description = "slices through a 3-D data set (pread)"
    version = 3
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
            header = b"SPECXVOL" + struct.pack("<IIII", n, brick, data_offset, HILBERT_ORDER)
            f.write(header.ljust(data_offset, b"\0"))
            for done in range(0, total, chunk):
                f.write(rng.randbytes(min(chunk, total - done)))
                progress(min(done + chunk, total) >> 20, total >> 20, "MiB of volume")

    def command(self, root, params, scratch):
        return Command([components.require("xds", "the xds workload"),
                        "--slices", str(params["slices"]), "--seed", str(params["seed"]),
                        os.path.join(root, "volume.bin")])
