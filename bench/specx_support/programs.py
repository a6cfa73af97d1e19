"""Input files of the programs in bench/programs, in the formats they read (a 4 KiB header,
then the data): matvec's matrix and stencil's grid."""
import random
import struct

HEADER_SIZE = 4096   # must match bench/programs/matvec.c and stencil.c
CHUNK = 8 << 20


def _no_progress(done, total, unit):
    pass


def write_matrix(path, n, progress=_no_progress):
    """matvec's N x N matrix of doubles at PATH: a circulant matrix (row i is a random row
    rotated by i). Cheap to write, and each row's bytes differ, so a wrong page changes the
    checksum."""
    rng = random.Random(1)
    row = struct.pack(f"<{n}d", *(rng.random() for _ in range(n)))
    with open(path, "wb") as f:
        f.write(struct.pack("<8sQQ", b"SPECXMAT", n, n).ljust(HEADER_SIZE, b"\0"))
        for i in range(n):
            k = 8 * (i % n)
            f.write(row[k:] + row[:k])
            if i % 256 == 255 or i == n - 1:
                progress(i + 1, n, "rows")


def write_grid(path, n, seed, progress=_no_progress):
    """stencil's grid file of edge N at PATH: header, then n^3 random 32-bit values
    (deterministic for SEED). Random values make every page's content distinct, so a wrong
    page changes the checksum."""
    rng = random.Random(seed)
    total = n ** 3 * 4
    with open(path, "wb") as f:
        f.write(struct.pack("<8sQ", b"SPECXGRD", n).ljust(HEADER_SIZE, b"\0"))
        for done in range(0, total, CHUNK):
            f.write(rng.randbytes(min(CHUNK, total - done)))
            progress(min(done + CHUNK, total) >> 20, total >> 20, "MiB of grid")
