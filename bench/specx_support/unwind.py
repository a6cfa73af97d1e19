"""SIGTERM unwinds like Ctrl-C, so that whatever a block made (a slowfs mount, a memory cgroup,
swap space) is removed by the same `finally` clauses when a harness or `timeout` ends the bench."""
import contextlib
import signal


@contextlib.contextmanager
def sigterm_unwinds():
    def unwind(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
