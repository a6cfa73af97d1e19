"""Keeping a data set resident for `warm` runs. Reading it right before the run is not enough
on machines that reclaim idle page cache within seconds (about 10 s here):
a long run would find its later files evicted again. So the data is mapped and mlock'ed for
the duration of the run — pinned, every page resident — and released afterwards."""
import concurrent.futures
import contextlib
import ctypes
import mmap
import os

from .workloads.base import walk_files


def drop_caches():
    """Evicts every clean file page, for a cold run (the paper flushed memory before each
    run, §3)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.mlock.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
MAP_FAILED = ctypes.c_void_p(-1).value
READERS = 16   # files read at once: enough to keep a few disks busy


def _pin(path):
    """Maps PATH and locks it in memory (reading what is not resident); returns the mapping
    as (address, length), or None for an empty file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        length = os.fstat(fd).st_size
        if length == 0:
            return None
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr == MAP_FAILED:
            err = ctypes.get_errno()
            raise OSError(err, f"cannot map {path}: {os.strerror(err)}")
        if _libc.mlock(addr, length) != 0:
            err = ctypes.get_errno()
            _libc.munmap(addr, length)
            raise OSError(err, f"cannot lock {path} in memory: {os.strerror(err)}")
        return addr, length
    finally:
        os.close(fd)


@contextlib.contextmanager
def pinned(paths):
    """Every file under PATHS resident and locked in memory for the block. Files are read
    by several threads at once: reading a cold data set through a slow device one file
    after another would take as long as the cold run itself."""
    files = [f for top in paths for f in (walk_files(top) if os.path.isdir(top) else [top])]
    with concurrent.futures.ThreadPoolExecutor(READERS) as pool:
        pins = [pool.submit(_pin, f) for f in files]
    try:
        for pin in pins:
            pin.result()   # raises the first failure
        yield
    finally:
        for pin in pins:
            if not pin.exception() and pin.result():
                _libc.munmap(*pin.result())
