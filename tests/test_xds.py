"""bench/programs/xds: where it finds each brick. A volume whose every value is its own (x, y, z)
position tells from xds's summaries whether the program assembled each slice from the right
bricks, in both brick orders the volume header can declare."""
import itertools
import struct
import subprocess

import pytest

from conftest import BUILD

XDS = BUILD / "bench" / "programs" / "xds"
N, BRICK = 16, 4  # 4 bricks per edge


def hilbert_index(x, y, z, bits):
    """Position of (x, y, z) along a 3-D Hilbert curve (Skilling's transpose form), written
    independently of the C program as the test's oracle."""
    c = [x, y, z]
    q = 1 << (bits - 1)
    while q > 1:
        low = q - 1
        for i in range(3):
            if c[i] & q:
                c[0] ^= low
            else:
                t = (c[0] ^ c[i]) & low
                c[0] ^= t
                c[i] ^= t
        q >>= 1
    c[1] ^= c[0]
    c[2] ^= c[1]
    t, q = 0, 1 << (bits - 1)
    while q > 1:
        if c[2] & q:
            t ^= q - 1
        q >>= 1
    index = 0
    for b in reversed(range(bits)):
        for i in range(3):
            index = (index << 1) | (((c[i] ^ t) >> b) & 1)
    return index


def test_the_oracle_is_a_hilbert_curve():
    bits = 2
    edge = 1 << bits
    where = {hilbert_index(x, y, z, bits): (x, y, z)
             for x, y, z in itertools.product(range(edge), repeat=3)}
    assert sorted(where) == list(range(edge ** 3))
    for h in range(edge ** 3 - 1):  # every step moves to a face neighbour
        assert sum(abs(a - b) for a, b in zip(where[h], where[h + 1])) == 1


def write_volume(path, order):
    """Each value is (z * N + y) * N + x; bricks in (z, y, x) order (0) or along the curve (1)."""
    per_edge = N // BRICK
    brick_bytes = BRICK ** 3 * 4
    data = bytearray(per_edge ** 3 * brick_bytes)
    for bx, by, bz in itertools.product(range(per_edge), repeat=3):
        index = (hilbert_index(bx, by, bz, 2) if order else (bz * per_edge + by) * per_edge + bx)
        values = [((bz * BRICK + z) * N + by * BRICK + y) * N + bx * BRICK + x
                  for z in range(BRICK) for y in range(BRICK) for x in range(BRICK)]
        data[index * brick_bytes:(index + 1) * brick_bytes] = struct.pack(f"<{len(values)}I",
                                                                           *values)
    header = b"SPECXVOL" + struct.pack("<IIII", N, BRICK, 4096, order)
    path.write_bytes(header.ljust(4096, b"\0") + bytes(data))


def expected(axis, pos):
    """min, max and mean of slice (axis, pos) of the volume write_volume makes."""
    weights = {"x": 1, "y": N, "z": N * N}
    fixed = weights[axis] * pos
    free = [w for a, w in weights.items() if a != axis]
    top = fixed + sum(w * (N - 1) for w in free)
    return fixed, top, (fixed + top) / 2


@pytest.mark.parametrize("order", [0, 1])
def test_xds_assembles_every_slice_from_the_right_bricks(tmp_path, order):
    volume = tmp_path / "volume.bin"
    write_volume(volume, order)
    out = subprocess.run([XDS, "--slices", "12", "--seed", "7", volume], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(out) == 12
    for line in out:  # "slice K: A=P min LO max HI mean M colour C"
        words = line.split()
        axis, pos = words[2].split("=")
        lo, hi, mean = expected(axis, int(pos))
        assert (int(words[4]), int(words[6]), float(words[8])) == (lo, hi, mean), line


def test_xds_refuses_an_order_it_does_not_know(tmp_path):
    volume = tmp_path / "volume.bin"
    write_volume(volume, 1)
    with open(volume, "r+b") as f:
        f.seek(20)
        f.write(struct.pack("<I", 7))
    proc = subprocess.run([XDS, volume], capture_output=True, text=True)
    assert proc.returncode == 1 and "invalid brick order" in proc.stderr
