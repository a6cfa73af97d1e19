"""The ways each workload is run. A mode is a name, a description, what to do to the page
cache before each run, and optionally a wrapper around the timed process (the program, or the
server for server workloads). Adding a mode is adding one entry to MODES."""
import dataclasses
import json
from typing import Callable, Optional

from specx_support import components


# What a mode does to the page cache before each run.
DROP_CACHES = "drop-caches"   # every file page evicted: the paper's "flushed before each run" (§3)
TOUCH_DATA = "touch-data"     # the workload's data read and pinned in memory for the run


@dataclasses.dataclass(frozen=True)
class Mode:
    name: str
    description: str
    prepare: str
    # wrap(argv, report_path) -> argv: how the timed process is started; it may write a JSON
    # report to report_path (e.g. specx run's statistics).
    wrap: Optional[Callable[[list, str], list]] = None
    needs: Optional[str] = None   # component the mode cannot run without
    # `specx run` options of an untimed first run, cold, before each timed one: the run whose
    # history (docs/design/history.md) the timed run replays. None: no first run.
    first_run: Optional[tuple] = None
    # ... of the workload's other command (the same program on other inputs) instead of its
    # own: a history that is wrong for the timed run (Workload.other_command).
    first_run_other: bool = False

    def missing(self):
        """None when the mode can run here, else a one-line reason."""
        if self.needs and components.find(self.needs) is None:
            return (f"mode '{self.name}' needs {self.needs}, which is not built or installed "
                    f"yet (searched {':'.join(components.search_dirs()) or 'nothing'})")
        return None

    def command(self, argv, report_path):
        return self.wrap(argv, report_path) if self.wrap else list(argv)

    def first_command(self, argv, report_path):
        """The untimed first run of ARGV (first_run), or None."""
        return _specx_run(*self.first_run)(argv, report_path) if self.first_run else None


def _specx_run(*options):
    def wrap(argv, report_path):
        return [components.specx_exe(), "run", *options, "--json", report_path, "--", *argv]
    return wrap


MODES = {m.name: m for m in [
    Mode("cold", "the program as is, page cache dropped before the run (no speculation)",
         DROP_CACHES),
    Mode("warm", "all data resident (read and pinned in memory for the run): the CPU-bound limit",
         TOUCH_DATA),
    Mode("nospec", "cold, under `specx run --no-spec`: no speculation, but stall statistics "
         "(the baseline for `specx`)", DROP_CACHES, _specx_run("--no-spec"), "libspecx.so"),
    Mode("specx", "cold, under `specx run`: speculative pre-execution turns future reads "
         "into prefetches (§4)", DROP_CACHES, _specx_run(), "libspecx.so"),
    Mode("specx-nomemctl", "cold, `specx run --no-memory-control`: speculation never stopped "
         "for its memory overhead (what the control of §6 prevents)", DROP_CACHES,
         _specx_run("--no-memory-control"), "libspecx.so"),
    Mode("specx-trace", "cold, `specx run --backend=trace`: the supervisor from outside the "
         "process, whatever the program (docs/design/supervisor.md)", DROP_CACHES,
         _specx_run("--backend=trace"), "libspecx.so"),
    Mode("specx-warm", "all data resident, under `specx run`: what specx costs when nothing "
         "stalls (compared with `warm`)", TOUCH_DATA, _specx_run(), "libspecx.so"),
    Mode("specx-basic", "cold, `specx run --refork=basic --cow=basic`: copies made by plain "
         "clones (the paper's basic design, Tables 3-4)", DROP_CACHES,
         _specx_run("--refork=basic", "--cow=basic"), "libspecx.so"),
    Mode("specx-fast", "cold, `specx run --refork=fast --cow=one-way`: fast, preemptible "
         "refork and one-way copy-on-write (§5)", DROP_CACHES,
         _specx_run("--refork=fast", "--cow=one-way"), "libspecx.so"),
    Mode("specx-again", "cold, the second run under `specx run`: the first (untimed, cold) "
         "recorded a history, which this one replays while copies speculate", DROP_CACHES,
         _specx_run("--history=replay"), "libspecx.so", ("--history=record",)),
    Mode("history-again", "cold, the second run under `specx run --no-spec`: what the first "
         "run's history does alone", DROP_CACHES, _specx_run("--no-spec", "--history=replay"),
         "libspecx.so", ("--history=record",)),
    Mode("history-wrong", "cold, under `specx run --no-spec` after a first run of the same "
         "program on other inputs: what a wrong history costs", DROP_CACHES,
         _specx_run("--no-spec", "--history=replay"), "libspecx.so", ("--history=record",),
         True),
]}

# Modes run when --modes is not given: the comparison the paper makes (Fig. 2), less what is
# not built yet.
DEFAULT_MODES = ("cold", "warm", "specx")


def parse(text):
    """Modes named in a comma-separated list, in that order; raises ValueError."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("no modes given")
    unknown = [n for n in names if n not in MODES]
    if unknown:
        raise ValueError(f"unknown mode '{unknown[0]}' (known: {', '.join(MODES)})")
    if len(set(names)) != len(names):
        raise ValueError("a mode is listed twice")
    return [MODES[n] for n in names]


def default_modes():
    return [MODES[n] for n in DEFAULT_MODES if MODES[n].missing() is None]


def read_report(path):
    """The JSON report a wrapped run wrote, or None when there is none."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def stalls(report):
    """(count, seconds) of the normal process's I/O stalls as `specx run` reports them
    ("stalls": {"count", "time_s"}; where its supervisor served the program, the reads it saw
    blocked from outside), or (None, None) when the report has none."""
    if (report or {}).get("mechanism") == "supervisor":
        seen = report.get("seen_from_outside") or {}
        return seen.get("blocked_reads"), seen.get("blocked_s")
    found = (report or {}).get("stalls")
    if not isinstance(found, dict):
        return None, None
    return found.get("count"), found.get("time_s")
