"""The "read calls" column of the paper's Table 1: one extra warm run of the workload's process
under `strace -f -c`, counting the read family of system calls. Kept out of the timed runs
because tracing slows every call."""
import os
import shutil

from . import modes

READ_FAMILY = "read,pread64,readv,preadv,preadv2"


def _strace(argv, report_path):
    return ["strace", "-f", "-c", "-o", report_path, "-e", f"trace={READ_FAMILY}", *argv]


MODE = modes.Mode("read-calls", "warm, under strace -f -c: counts read calls (Table 1)",
                  modes.TOUCH_DATA, _strace)


def parse(summary):
    """Total calls from `strace -c` output (its "total" line), or None."""
    for line in summary.splitlines():
        fields = line.split()
        if fields and fields[-1] == "total" and len(fields) >= 5:
            return int(fields[3])
    return None


def count(run, log_dir):
    """Runs RUN(MODE) and returns the read calls it made, or None when they cannot be
    counted (no strace here, or the run failed)."""
    if shutil.which("strace") is None:
        print("specx bench: strace is not installed: read calls are not counted", flush=True)
        return None
    record = run(MODE)
    if not record["ok"] or "report_file" not in record:
        print(f"specx bench: counting read calls failed (see {record['log']})", flush=True)
        return None
    with open(os.path.join(log_dir, record["report_file"])) as f:
        return parse(f.read())
