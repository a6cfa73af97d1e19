"""results.md and results.json: the paper's Table 1 (what each benchmark is), the results per
mode (Fig. 2 in numbers) and the device validation, for people and for tools."""
import json

from . import bars
from .datasets import human_bytes


def _s(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(value):
    if value is None:
        return "–"
    return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def characteristics_table(workloads):
    """Table 1: run time is the median cold run (no speculation), as in the paper."""
    rows = []
    for w in workloads:
        cold = next((r for r in w["summary"] if r["mode"] == "cold"), None)
        run_time = f"{cold['median_s']:.1f} s" if cold and cold["median_s"] is not None else "–"
        calls = w.get("read_calls")
        rows.append([w["name"], w["paper"] or "–", w["description"], run_time,
                     "–" if calls is None else f"{calls:,}", human_bytes(w["dataset"]["bytes"])])
    return _table(["Benchmark", "Paper's", "Description", "Run time (cold)", "Read calls",
                   "Data set size"], rows)


def results_table(workloads):
    """Elapsed times per mode, as ratios to the first baseline the results have (cold, else
    nospec: bars.BASELINES)."""
    base = bars.baseline(workloads) or "cold"
    rows = []
    for w in workloads:
        for r in w["summary"]:
            spread = "–" if r["min_s"] is None else f"{r['min_s']:.2f}–{r['max_s']:.2f}"
            runs = f"{r['runs']}" + (f" ({r['failed']} failed)" if r["failed"] else "")
            stalls = ("–" if r["stall_s"] is None
                      else f"{r['stalls']:,} / {r['stall_s']:.2f} s")
            floor = r.get("device_floor_s")
            rows.append([w["name"], r["mode"], runs, _s(r["median_s"]), spread,
                         _ratio(r.get("vs_" + base)), stalls,
                         "–" if r["device_requests"] is None else f"{r['device_requests']:,}",
                         _s(floor), _ratio(r["median_s"] / floor if floor and r["median_s"]
                                           else None)])
    return _table(["Workload", "Mode", "Runs", "Median elapsed (s)", "Min–max (s)", f"vs {base}",
                   "I/O stalls (count / time)", "Device requests", "Device floor (s)",
                   "vs floor"], rows)


def speculation_table(workloads):
    """The paper's Table 2 for the runs that `specx run` reported on (medians over runs)."""
    rows = []
    for w in workloads:
        for mode in ("nospec", "specx", "specx-trace"):
            runs = bars.spec_runs(w, mode)
            if not runs:
                continue
            total = lambda key: bars._median_total(runs, key) or 0  # noqa: E731
            stalls = [r["stalls"] for r in runs if r.get("stalls") is not None]
            stall_s = [r["stall_s"] for r in runs if r.get("stall_s") is not None]
            prefetches = total("spec_prefetches")
            speculating = mode != "nospec"
            # The supervisor counts its copies and prefetches; the rest is the runtime's.
            runtime = speculating and not all(r["report"].get("mechanism") == "supervisor"
                                              for r in runs)
            rows.append([
                w["name"], mode,
                f"{int(bars.statistics.median(stalls)):,} / {bars.statistics.median(stall_s):.2f} s"
                if stalls and stall_s else "–",
                f"{int(prefetches):,}" if speculating else "–",
                f"{total('complete_share'):.0%}" if runtime and prefetches else "–",
                f"{int(total('unused_prefetches')):,}" if runtime else "–",
                f"{int(total('sync_attempts')):,} / {int(total('sync_completed')):,} / "
                f"{total('sync_ns') / 1e9:.2f} s" if runtime else "–",
                f"{int(total('spec_created')):,}" if speculating else "–",
                _fault_prefetches(total) if runtime else "–",
                f"{int(total('majflt')):,}" if runtime or not speculating else "–",
                f"{int(total('minflt')):,}" if runtime or not speculating else "–",
            ])
    if not rows:
        return None
    return _table(["Workload", "Mode", "I/O stalls (count / time)", "Spec. prefetches",
                   "Complete before use", "Unused", "Syncs (tried / done / time)",
                   "Copies created", "Page-fault prefetches (touched)", "Major faults",
                   "Minor faults"], rows)


def _mib(n):
    return "–" if n is None else f"{n / 1048576:.1f}"


def history_table(workloads):
    """For the modes that replay a first run's history (specx-again, history-again): what the
    first run kept, against what it read, and what the replay did (medians over runs)."""
    rows = []
    for w in workloads:
        for mode in dict.fromkeys(r["mode"] for r in w["runs"]):
            runs = [r for r in w["runs"] if r["mode"] == mode and r["ok"] and
                    r.get("first_run_history") and (r.get("report") or {}).get("history")]
            if not runs:
                continue

            def median(key, of="report"):
                values = [(r["report"]["history"] if of == "report" else
                           r["first_run_history"]).get(key) for r in runs]
                values = [v for v in values if v is not None]
                return bars.statistics.median(values) if values else None
            kept, read = median("recorded_size", "first"), median("recorded_bytes", "first")
            rows.append([w["name"], mode, f"{int(median('entries') or 0):,}", _mib(read),
                         f"{kept / 1024:.1f} KiB ({kept / read:.2%})" if kept and read else "–",
                         _mib(median("prefetched_bytes")), _mib(median("cached_bytes")),
                         _mib(median("used_bytes")), _mib(median("unused_bytes")),
                         _mib(median("asked_bytes")),
                         "stopped" if all(r["report"]["history"]["stopped"] for r in runs)
                         else "–"])
    if not rows:
        return None
    return _table(["Workload", "Mode", "History ranges", "First run read (MiB)",
                   "History kept (of that)", "Brought in (MiB)", "In memory already",
                   "Read by the program", "Unused", "Asked, not judged", "Control"], rows)


def _fault_prefetches(total):
    """Prefetches a copy made at its page faults (§4.1.2), and the share the program touched."""
    issued = total("fault_prefetches")
    return f"{int(issued):,} ({total('fault_used') / issued:.0%})" if issued else "0"


MEMORY_MODES = ("nospec", "specx", "specx-nomemctl")


def memory_runs(workloads):
    """(workload, its memory limit in MiB, mode, its successful runs) for the workloads run in
    a memory cgroup, per mode of MEMORY_MODES that has runs."""
    for w in workloads:
        limit = (w.get("params") or {}).get("memory_limit_mb")
        for mode in MEMORY_MODES if limit else ():
            runs = bars.spec_runs(w, mode)
            if runs:
                yield w, limit, mode, runs


def memory_control_table(workloads):
    """The paper's Table 5 for the workloads run in a memory cgroup: per memory size and mode,
    the memory control's threshold crossings (speculation stopped) and re-enablings, the
    stalls it counted as added and removed, syncs, stall time, the copies' peak private
    memory, major faults and the elapsed time (medians over runs)."""
    rows = []
    for w, limit, mode, runs in memory_runs(workloads):
        total = lambda key: bars._median_total(runs, key) or 0  # noqa: E731
        spec = mode != "nospec"
        control = spec and runs[0]["report"].get("memory_control", True)
        rows.append([
            w["name"], f"{limit} MiB", "on" if spec else "off",
            ("Y" if control else "N") if spec else "–",
            f"{int(total('memctl_disabled'))} / {int(total('memctl_reenabled'))}"
            if control else "–",
            f"{int(total('memctl_added')):,} / {int(total('memctl_removed')):,}"
            if control else "–",
            f"{int(total('sync_attempts')):,}" if spec else "–",
            f"{bars.statistics.median([r['stall_s'] for r in runs]):.2f} s",
            f"{total('copy_peak_kb') / 1024:.1f} MiB" if spec else "–",
            f"{int(total('majflt')):,}",
            f"{bars.statistics.median([r['elapsed_s'] for r in runs]):.2f} s",
        ])
    if not any(row[3] == "Y" for row in rows):
        return None
    return _table(["Workload", "Memory", "Spec", "M", "Stopped / allowed again",
                   "Added / removed stalls (pages)", "Syncs", "Stall time",
                   "Copies' peak memory", "Major faults", "Elapsed"], rows)


def _median_memory(runs, *path):
    """Median over RUNS of a counter of their memory cgroup record (a sum where PATH's last
    element is a tuple of names), or None where the runs did not record it."""
    values = []
    for r in runs:
        node = r.get("memory_cgroup") or {}
        for key in path[:-1]:
            node = node.get(key) or {}
        names = path[-1] if isinstance(path[-1], tuple) else (path[-1],)
        if all(n in node for n in names):
            values.append(sum(node[n] for n in names))
    return bars.statistics.median(values) if values else None


def _count(value, scale=1):
    return "–" if value is None else f"{int(value / scale):,}"


def memory_signals_table(workloads):
    """The signals a memory control could read, beside what it counted (docs/design/memory-control.md):
    per memory size and mode, the program's stalls (major faults and reads that missed), the
    control's added and removed stalls, and what the kernel counted in the run's group
    (refaults of evicted pages, limit hits) and on the machine (PSI memory "some" time, pages
    scanned by reclaim). Medians over runs."""
    rows = []
    for w, limit, mode, runs in memory_runs(workloads):
        total = lambda key: bars._median_total(runs, key)  # noqa: E731
        control = mode != "nospec" and runs[0]["report"].get("memory_control", True)
        stalls = bars.statistics.median(
            [(r["report"]["total"].get("majflt") or 0) + (r["report"]["total"].get("stalls")
                                                            or 0) for r in runs])
        rows.append([
            w["name"], f"{limit} MiB", mode, _count(stalls),
            f"{_count(total('memctl_added'))} / {_count(total('memctl_removed'))}"
            if control else "–",
            _count(_median_memory(runs, "reclaim", ("workingset_refault_anon",
                                                    "workingset_refault_file"))),
            _count(_median_memory(runs, "limit_hits")),
            _count(_median_memory(runs, "machine", "psi_some_us"), 1000),
            _count(_median_memory(runs, "machine", "pgscan")),
        ])
    if not rows:
        return None
    return _table(["Workload", "Memory", "Mode", "Program stalls", "Control: added / removed",
                   "Group refaults", "Limit hits", "Machine PSI some (ms)",
                   "Machine pgscan"], rows)


REFORK_MODES = ("nospec", "specx", "specx-basic", "specx-fast")


def refork_figures(workload, mode):
    """The paper's Tables 3 and 4 for WORKLOAD's runs in MODE that `specx run` reported on
    (medians over runs), or None: refork kind, attempts, completed, refork time (the
    program's kill + clone) in total and per attempt, the preemptible wait for the new copy's
    sandbox per attempt, and the program's minor faults (its copy-on-write faults included)."""
    runs = bars.spec_runs(workload, mode)
    if not runs:
        return None
    total = lambda key: bars._median_total(runs, key) or 0  # noqa: E731
    attempts = total("refork_attempts")
    per_attempt = lambda key: total(key) / 1e6 / attempts if attempts else None  # noqa: E731
    return {"refork": runs[0]["report"].get("refork", "basic"), "speculation": mode != "nospec",
            "attempts": attempts, "completed": total("refork_completed"),
            "refork_s": total("refork_ns") / 1e9, "mean_ms": per_attempt("refork_ns"),
            "wait_mean_ms": per_attempt("refork_wait_ns"), "minflt": total("minflt")}


def refork_table(workloads):
    rows = []
    for w in workloads:
        for mode in REFORK_MODES:
            f = refork_figures(w, mode)
            if not f:
                continue
            spec, tried = f["speculation"], f["speculation"] and f["attempts"]
            rows.append([
                w["name"], mode, f["refork"] if spec else "–",
                f"{int(f['attempts']):,}" if spec else "–",
                f"{int(f['completed']):,} ({f['completed'] / f['attempts']:.0%})" if tried else "–",
                f"{f['refork_s']:.3f} s" if spec else "–",
                f"{f['mean_ms']:.3f} ms" if tried else "–",
                f"{f['wait_mean_ms']:.3f} ms" if tried else "–",
                f"{int(f['minflt']):,}",
            ])
    if not any(row[1] in ("specx-basic", "specx-fast") for row in rows):
        return None
    return _table(["Workload", "Mode", "Refork", "Refork attempts", "Completed",
                   "Refork time", "Mean", "Then waiting (mean)", "Minor faults"], rows)


def _bar_value(what, value):
    if what.startswith("mean fast refork"):
        return f"{value * 1e3:.2f} ms"
    if "prefetches" in what or "minor faults" in what:
        return f"{value:.1%}"
    if what.startswith("slowest"):
        return f"{value:.3f}"  # "never above 1.0": a thousandth decides
    return _ratio(value)


def bars_table(workloads):
    rows = [[name, what, _bar_value(what, value), bar, "PASS" if passed else "FAIL"]
            for name, what, value, bar, passed in bars.check(workloads)]
    return _table(["Workload", "Figure", "Measured", "Bar", "Result"], rows) if rows else None


def validation_table(validation):
    rows = [[c["check"], f"{c['measured']} {c['unit']}", c["bar"],
             "PASS" if c["passed"] else "FAIL"] for c in validation["checks"]]
    return _table(["Check", "Measured", "Bar", "Result"], rows)


def _section(title, table, note):
    """A results section: its title, its table and what the table's figures are; nothing where
    the results have no such table."""
    return [f"## {title}", "", table, "", note, ""] if table else []


def markdown(results):
    env = results["environment"]
    runs = (f"{env['runs']} run(s) per mode, {env.get('warm_runs', env['runs'])} of the "
            f"warm-cache modes; " if results["workloads"] else "")
    out = ["# specx bench results", "",
           f"{env['started']} – {env.get('finished', '(running)')}; kernel {env['kernel']}; "
           f"{env['cpus']} CPUs; slowfs {' '.join(env['slowfs_options'])}; {runs}"
           f"data sets at scale `{env['scale']}`.", ""]
    if env.get("note"):
        out += [env["note"], ""]
    if results.get("validation"):
        out += ["## slowfs device validation", "", validation_table(results["validation"]), ""]
    if results["workloads"]:
        out += ["## Benchmark characteristics (cf. the paper's Table 1)", "",
                characteristics_table(results["workloads"]), "",
                "## Elapsed time per mode (cf. the paper's Fig. 2)", "",
                results_table(results["workloads"]), "",
                "Median of successful runs; `vs cold` (or `vs nospec`) is the ratio of medians; I/O stalls "
                "are reported by `specx run` (modes `nospec`, `specx`; cf. the paper's "
                "Table 2; where its supervisor served a static or Go program, the reads it saw "
                "the program blocked in, sampled from outside); device requests are those slowfs "
                "served during the timed part; the device floor is the busy time of its busiest "
                "disk for them, the least the run could take however well its reads overlap, "
                "and `vs floor` the median elapsed over it.", ""]
        w = results["workloads"]
        out += _section("Speculation (cf. the paper's Table 2)", speculation_table(w),
                        "Medians over runs. An I/O stall is a read of data not in memory or still "
                        "arriving; complete before use is the share of used speculative "
                        "prefetches whose data had arrived when the program read it; page-fault "
                        "prefetches are those a copy made where it touched a file mapping's page "
                        "that was not in memory (§4.1.2), touched when the program later had that "
                        "page mapped; major faults are the program's page faults that read the "
                        "disk, minor faults stand for the paper's copy-on-write faults "
                        "(getrusage).")
        out += _section("History (a command's second run)", history_table(w),
                        "Medians over runs. The first run, cold and untimed, recorded the history "
                        "the timed run replays (docs/design/history.md): the bytes its ranges "
                        "cover and the size of the history file; the replay brought ranges in "
                        "ahead of the program, skipped those in memory already, and asked for "
                        "those of files whose residency the kernel hides from the user without "
                        "judging them.")
        out += _section("Refork and copy-on-write (cf. the paper's Tables 3 and 4)",
                        refork_table(w),
                        "Medians over runs. Refork time is the program's: killing the old copy "
                        "and cloning the new one (with `fast`, large anonymous regions are left "
                        "out of the clone and pulled by the copy on demand); a refork is "
                        "completed when the new copy entered its sandbox before the program went "
                        "on, and the program stops waiting for that once its own read is in "
                        "(preemptible). Minor faults include the copy-on-write faults a plain "
                        "fork adds to the program; `nospec` is the paper's \"No Specx\" column.")
        out += _section("Memory control (cf. the paper's Table 5)", memory_control_table(w),
                        "Medians over runs, for workloads run in a memory cgroup. M: the memory "
                        "control of §6.1 (`specx-nomemctl` runs without it). Stopped: times its "
                        "overhead estimate crossed the threshold (the paper's threshold "
                        "crossings); added stalls are refaults while memory was full, at most one "
                        "per page speculation brought in, removed stalls the pages of the "
                        "program's reads its prefetches served (docs/design/memory-control.md). "
                        "Copies' peak memory is the largest private memory of a copy "
                        "(smaps_rollup).")
        out += _section("Memory signals (docs/design/memory-control.md)", memory_signals_table(w),
                        "Medians over runs. Program stalls: its major faults and reads that "
                        "missed the page cache. Group refaults: evicted pages read again "
                        "(`workingset_refault_*` of the run's memory cgroup); limit hits: "
                        "`memory.failcnt` (v1) or `memory.events max` (v2); the machine's PSI and "
                        "pgscan are deltas over the run, for every group on it.")
        checked = bars_table(results["workloads"])
        if checked:
            out += ["## Bars", "", checked, ""]
    return "\n".join(out)


def write(results, md_path, json_path):
    with open(md_path, "w") as f:
        f.write(markdown(results))
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
