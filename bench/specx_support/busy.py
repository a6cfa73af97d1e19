"""Busy loops: CPU-bound processes at normal priority beside what is measured or tested, as on
a loaded machine."""
import contextlib
import ctypes
import signal
import subprocess

PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def loops(n):
    """N CPU-bound processes at normal priority while the block runs; they die with this
    process however it ends (a pytest killed outright left them spinning for good)."""
    libc = ctypes.CDLL(None, use_errno=True)
    spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                 preexec_fn=lambda: libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL))
                for _ in range(n)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
