"""What every workload provides to the harness."""
import contextlib
import dataclasses
import os
import subprocess
from typing import Optional


@dataclasses.dataclass
class Command:
    """One process to start: argv, optionally as another user, and which exit codes mean
    success (grep, e.g., exits 1 when the string does not occur, as intended)."""
    argv: list
    user: Optional[str] = None
    ok_codes: tuple = (0,)
    cwd: Optional[str] = None


class Workload:
    """A real program over a generated data set.

    name, paper (the row of the paper's Table 1 it stands for), description;
    version: bump it whenever generate() changes its output, so cached data sets are remade;
    scales: parameters per scale ("full": the benchmark; "demo": `make demo`; "test": tests);
    server: the user a server runs as, when the process to wrap (e.g. with `specx run`) is a
    server that the timed command talks to, rather than the timed command itself (None);
    dataset: the name of another workload whose data set this one reads (None: its own).
    """
    name = ""
    paper = ""
    description = ""
    version = 1
    scales = {}
    server = None
    dataset = None

    def unavailable(self, data_dir):
        """None when the workload can run on this machine, else a one-line reason to skip it
        (e.g. no swap space can be made)."""
        return None

    def generator_inputs(self):
        """Outside inputs that shape the generated data (e.g. the compiler's version): part of
        the data set's stamp, so that a change regenerates it."""
        return {}

    def generate(self, dest, params, progress):
        """Writes the data set into the empty directory DEST; deterministic for PARAMS."""
        raise NotImplementedError

    def touch_paths(self, root, params):
        """Files or directories a warm run reads first (default: the whole data set)."""
        return [root]

    def command(self, root, params, scratch):
        """The timed Command, with ROOT the data set as seen through slowfs and SCRATCH a
        private directory for output (in memory when /dev/shm is there: runner.py)."""
        raise NotImplementedError

    def other_command(self, root, params, scratch):
        """The same program as command() on other inputs, whose history is wrong for it (the
        bench's history-wrong mode), or None."""
        return None

    @contextlib.contextmanager
    def session(self, root, params, wrap, scratch, log):
        """Context for one timed run: a server starts here (its argv passed through WRAP) and
        stops, with the run's side effects undone, when the block ends. Servers write to the
        file LOG."""
        yield

    def tool_versions(self):
        """Versions of the programs the workload runs, for the results' environment record."""
        return {}


def first_line(argv):
    """First line of a command's output ('' when it cannot run): for version strings."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else ""


def walk_files(root):
    """Every regular file under ROOT, in a stable order."""
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for name in sorted(files):
            yield os.path.join(dirpath, name)
