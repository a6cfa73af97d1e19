"""Jobs that hold memory, for specx share's tests and its stress script: each is a Python
program (run with `python3 -c PROGRAM MIB PASSES SEED`) whose output depends on every page of
its memory keeping its content, so that a wrong page shows as a wrong checksum."""

# Sweeps its own anonymous memory (MIB MiB, a byte of each page, PASSES times, seeded) and
# prints a checksum: the output depends on every page keeping its content. Given MIN_CPU (a
# fourth argument), it then goes on sweeping until it has used that many seconds of CPU, which
# the checksum does not depend on: a job that needs more than one scheduler's slice anywhere.
SWEEPER = """
import sys, time
size, passes, seed = int(sys.argv[1]) << 20, int(sys.argv[2]), int(sys.argv[3])
min_cpu = float(sys.argv[4]) if len(sys.argv) > 4 else 0
m = bytearray(size)
for i in range(0, size, 4096):
    m[i] = (i // 4096 * seed) & 255
s = 0
for p in range(passes):
    for i in range(0, size, 4096):
        s = (s * 31 + m[i]) & 0xffffffff
        m[i] = (m[i] + 1) & 255
while time.process_time() < min_cpu:
    for i in range(0, size, 4096):
        m[i] = (m[i] + 1) & 255
print(s)
"""


# Like SWEEPER, but the first touch of each page in a pass is the kernel's: a read from a pipe
# into it (copy_to_user), a fault taken in the kernel, whose charge of a full group must not
# fail (EFAULT, or SIGSEGV where the kernel writes a thread's rseq area) where it would wait or
# reclaim for a fault taken in user space.
KERNEL_WRITER = """
import os, sys
size, passes, seed = int(sys.argv[1]) << 20, int(sys.argv[2]), int(sys.argv[3])
m = bytearray(size)
view = memoryview(m)
r, w = os.pipe()
s = seed
for p in range(passes):
    for i in range(0, size, 4096):
        os.write(w, bytes([s & 255]))
        os.readv(r, [view[i:i + 1]])
        s = (s * 31 + m[i] + p) & 0xffffffff
print(s)
"""


def command(program, mib, passes, seed, python="python3"):
    """The argv that runs PROGRAM over MIB MiB, PASSES times, seeded with SEED."""
    return [python, "-c", program, str(mib), str(passes), str(seed)]
