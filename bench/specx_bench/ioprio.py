"""I/O priority of the calling thread (ioprio_set(2) has no Python or libc wrapper)."""
import ctypes
import os
import platform

# ioprio_set syscall numbers; x86_64 and the asm-generic table (aarch64, riscv64) differ.
SYSCALL = {"x86_64": 251, "aarch64": 30, "riscv64": 30}
IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_IDLE = 3
IOPRIO_CLASS_SHIFT = 13

_libc = ctypes.CDLL(None, use_errno=True)


def set_idle():
    """Puts the calling thread in I/O class IDLE: served only when nobody else waits."""
    number = SYSCALL.get(platform.machine())
    if number is None:
        raise OSError(f"ioprio_set: unknown syscall number on {platform.machine()}")
    # who = 0 with IOPRIO_WHO_PROCESS means the calling thread.
    if _libc.syscall(number, IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"ioprio_set: {os.strerror(err)}")
