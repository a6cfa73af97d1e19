"""specx bench: the harness's logic (no root), its workload programs, and end-to-end runs of
tiny workloads over a real slowfs mount (root). No timing is asserted anywhere."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import BUILD, IS_ROOT, NOBODY, REPO, run_specx

from specx_bench import (bars, cli, datasets, modes, readcalls, report, runner, share_bench,
                         slowfs, validate)
from specx_bench.workloads import WORKLOADS, toolchains
from specx_bench.workloads.base import Workload
from specx_support import swapspace

PROGRAMS = BUILD / "bench" / "programs"


# --- modes -------------------------------------------------------------------------------------

def test_mode_registry_has_the_paper_comparison(monkeypatch):
    monkeypatch.setenv("SPECX_EXE", "/x/specx")
    assert list(modes.MODES) == ["cold", "warm", "nospec", "specx", "specx-nomemctl",
                                 "specx-trace", "specx-warm", "specx-basic", "specx-fast",
                                 "specx-again", "history-again", "history-wrong"]
    again = modes.MODES["specx-again"]
    assert again.first_command(["prog"], "r.json") == [
        "/x/specx", "run", "--history=record", "--json", "r.json", "--", "prog"]
    assert again.command(["prog"], "r.json")[:3] == ["/x/specx", "run", "--history=replay"]
    assert modes.MODES["specx"].first_command(["prog"], "r.json") is None
    assert modes.MODES["cold"].prepare == modes.DROP_CACHES
    assert modes.MODES["warm"].prepare == modes.TOUCH_DATA
    assert modes.MODES["specx-warm"].prepare == modes.TOUCH_DATA
    assert modes.MODES["specx-warm"].command(["prog"], "r.json") == [
        "/x/specx", "run", "--json", "r.json", "--", "prog"]


def test_mode_list_parsing():
    assert [m.name for m in modes.parse("warm, cold")] == ["warm", "cold"]
    for bad, why in (("cold,bogus", "unknown mode 'bogus'"), ("cold,cold", "twice"),
                     (" , ", "no modes")):
        with pytest.raises(ValueError, match=why):
            modes.parse(bad)


def test_specx_modes_wrap_the_command_with_specx_run(monkeypatch):
    monkeypatch.setenv("SPECX_EXE", "/opt/specx")
    assert modes.MODES["specx"].command(["grep", "x"], "/r.json") == \
        ["/opt/specx", "run", "--json", "/r.json", "--", "grep", "x"]
    assert modes.MODES["nospec"].command(["grep"], "/r.json") == \
        ["/opt/specx", "run", "--no-spec", "--json", "/r.json", "--", "grep"]
    assert modes.MODES["cold"].command(["grep", "x"], "/r.json") == ["grep", "x"]


def test_a_mode_whose_component_is_missing_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECX_LIBEXEC_PATH", str(tmp_path))
    assert "needs libspecx.so" in modes.MODES["specx"].missing()
    assert modes.MODES["cold"].missing() is None
    assert [m.name for m in modes.default_modes()] == ["cold", "warm"]


def test_stalls_come_from_the_specx_run_report():
    assert modes.stalls({"stalls": {"count": 12, "time_s": 0.5}}) == (12, 0.5)
    assert modes.stalls(None) == (None, None)
    assert modes.stalls({"other": 1}) == (None, None)


# --- statistics and reports -----------------------------------------------------------------------

def run_record(mode, elapsed, ok=True, stalls=None):
    return {"mode": mode, "elapsed_s": elapsed, "ok": ok, "device": {"requests": 10},
            "stalls": stalls and stalls[0], "stall_s": stalls and stalls[1]}


def test_rounds_rotate_the_modes_so_none_always_runs_first_or_last():
    modes = ["cold", "nospec", "specx"]
    assert [runner.round_order(modes, i) for i in range(4)] == [
        ["cold", "nospec", "specx"], ["nospec", "specx", "cold"],
        ["specx", "cold", "nospec"], ["cold", "nospec", "specx"]]
    assert runner.round_order([], 3) == []


def test_summary_takes_medians_of_successful_runs_and_ratios_to_cold():
    runs = [run_record("cold", 10.0), run_record("cold", 30.0), run_record("cold", 20.0),
            run_record("specx", 4.0, stalls=(5, 1.0)), run_record("specx", 6.0, stalls=(7, 3.0)),
            run_record("specx", 99.0, ok=False)]
    cold, specx = runner.summarize(runs, ["cold", "specx"])
    assert (cold["median_s"], cold["min_s"], cold["max_s"]) == (20.0, 10.0, 30.0)
    assert cold["vs_cold"] == 1.0
    assert (specx["runs"], specx["failed"], specx["median_s"]) == (2, 1, 5.0)
    assert specx["vs_cold"] == pytest.approx(0.25)
    assert (specx["stalls"], specx["stall_s"]) == (6, 2.0)
    assert cold["stall_s"] is None


def test_summary_without_cold_has_no_ratio():
    (warm,) = runner.summarize([run_record("warm", 1.0)], ["warm"])
    assert warm["vs_cold"] is None


def sample_results():
    runs = [run_record("cold", 42.0), run_record("warm", 0.25),
            run_record("specx", 21.0, stalls=(4239, 17.0))]
    workload = {"name": "grep", "paper": "Agrep", "description": "text search",
                "dataset": {"bytes": 105_000_000}, "read_calls": 9385, "runs": runs,
                "summary": runner.summarize(runs, ["cold", "warm", "specx"])}
    env = {"started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00",
           "kernel": "6.18", "cpus": 2, "slowfs_options": ["--preset", "paper2003"], "runs": 1,
           "scale": "full"}
    return {"environment": env, "workloads": [workload], "validation": None}


def test_markdown_has_table1_and_results_rows():
    md = report.markdown(sample_results())
    assert "| grep | Agrep | text search | 42.0 s | 9,385 | 105.0 MB |" in md
    assert "| grep | cold | 1 | 42.00 | 42.00–42.00 | 1.00 | – | 10 |" in md
    assert "| grep | warm | 1 | 0.25 | 0.25–0.25 | 0.006 | – | 10 |" in md
    assert "| grep | specx | 1 | 21.00 | 21.00–21.00 | 0.50 | 4,239 / 17.00 s | 10 |" in md


def test_results_files_are_written_and_json_round_trips(tmp_path):
    from specx_bench import plot
    results = sample_results()
    report.write(results, tmp_path / "r.md", tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text()) == results
    assert plot.elapsed_chart(results["workloads"], tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_validation_table_marks_failures():
    md = report.validation_table({"checks": [
        {"check": "a", "measured": 1, "unit": "ms", "bar": "≤ 2", "passed": True},
        {"check": "b", "measured": 9, "unit": "%", "bar": "≤ 5 %", "passed": False}]})
    assert "| a | 1 ms | ≤ 2 | PASS |" in md and "| b | 9 % | ≤ 5 % | FAIL |" in md


def test_read_calls_parsed_from_strace_summary():
    with_errors = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 90.00    0.000900           1       900        12 read
 10.00    0.000100           1       100           pread64
------ ----------- ----------- --------- --------- ----------------
100.00    0.001000           1      1000        12 total
"""
    assert readcalls.parse(with_errors) == 1000
    assert readcalls.parse(with_errors.replace("        12 total", "           total")) == 1000
    assert readcalls.parse("strace: something else\n") is None


def test_device_statistics_difference():
    before = {"preset": "p", "model": {"disks": 2}, "pid": 7, "uptime_s": 1.0, "requests": 5,
              "classes": {"regular": {"requests": 5, "service_s": 1.0}},
              "disks": [{"requests": 2}, {"requests": 3}]}
    after = {"preset": "p", "model": {"disks": 2}, "pid": 7, "uptime_s": 9.0, "requests": 8,
             "classes": {"regular": {"requests": 8, "service_s": 1.5}},
             "disks": [{"requests": 2}, {"requests": 6}]}
    assert slowfs.stats_diff(before, after) == {
        "requests": 3, "classes": {"regular": {"requests": 3, "service_s": 0.5}},
        "disks": [{"requests": 0}, {"requests": 3}]}
    assert slowfs.stats_diff(None, after) is None


def test_the_device_floor_is_the_busiest_disks_busy_time():
    runs = [dict(_run("cold", 4.0), device={"requests": 9, "disks": [
        {"busy_s": 1.0}, {"busy_s": 2.0 + i}]}) for i in range(3)]
    (row,) = runner.summarize(runs, ["cold"])
    assert row["device_floor_s"] == 3.0
    assert runner.device_floor({"disks": []}) is None
    assert "| 3.00 | 1.33 |" in report.results_table([{"name": "w", "summary": [row]}])


def test_the_history_table_says_what_the_first_run_kept_and_the_replay_did():
    def again(used):
        history = {"entries": 40, "prefetched_bytes": 8 << 20, "cached_bytes": 0,
                   "used_bytes": used, "unused_bytes": 0, "asked_bytes": 1 << 20,
                   "stopped": False}
        return dict(_run("history-again", 2.0), report={"total": {}, "history": history},
                    first_run_history={"recorded_bytes": 10 << 20, "recorded_size": 20 << 10})
    runs = [_run("cold", 5.0), again(6 << 20), again(7 << 20), again(8 << 20)]
    table = report.history_table([_workload("w", runs)])
    assert "| w | history-again | 40 | 10.0 | 20.0 KiB (0.20%) | 8.0 | 0.0 | 7.0 | 0.0 | 1.0 " \
        "| – |" in table, table
    assert report.history_table([_workload("w", runs[:1])]) is None


def test_model_prediction_of_one_read():
    model = {"latency_ms": 12, "bandwidth_mbps": 40, "bus_mbps": 20}
    assert validate.predicted_read_s(model, 4000) == pytest.approx(0.012 + 4000 / 20e6)
    model["bus_mbps"] = 0
    assert validate.predicted_read_s(model, 4000) == pytest.approx(0.012 + 4000 / 40e6)


# --- data sets ----------------------------------------------------------------------------------

class Counting(Workload):
    name = "counting"
    version = 1
    scales = {"test": {"n": 3}}
    made = 0

    def generate(self, dest, params, progress):
        Counting.made += 1
        for i in range(params["n"]):
            pathlib.Path(dest, f"f{i}").write_text("x" * i)


def test_data_sets_are_cached_under_their_stamp(tmp_path):
    w = Counting()
    path = datasets.ensure(w, "test", str(tmp_path))
    assert datasets.ensure(w, "test", str(tmp_path)) == path
    assert Counting.made == 1
    assert datasets.size(path) == 0 + 1 + 2
    w.version = 2          # a changed generator makes the cached copy stale
    datasets.ensure(w, "test", str(tmp_path))
    assert Counting.made == 2
    w.scales = {"test": {"n": 4}}   # so do changed parameters
    datasets.ensure(w, "test", str(tmp_path))
    assert Counting.made == 3 and sorted(os.listdir(path)) == [".specx-dataset.json", "f0",
                                                               "f1", "f2", "f3"]


def test_an_interrupted_generation_leaves_no_data_set(tmp_path):
    class Broken(Counting):
        def generate(self, dest, params, progress):
            pathlib.Path(dest, "half").write_text("")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        datasets.ensure(Broken(), "test", str(tmp_path))
    assert not os.path.exists(tmp_path / "counting-test")


def test_every_workload_has_every_scale():
    for w in WORKLOADS.values():
        assert set(w.scales) == {"full", "demo", "test"}, w.name


# --- workload programs ----------------------------------------------------------------------------

def test_xds_reads_the_same_slices_every_run(tmp_path):
    xds = WORKLOADS["xds"]
    xds.generate(str(tmp_path), xds.scales["test"], lambda *a: None)
    volume = str(tmp_path / "volume.bin")
    first = subprocess.run([PROGRAMS / "xds", "--slices", "5", "--seed", "3", volume],
                           capture_output=True, text=True, check=True).stdout
    again = subprocess.run([PROGRAMS / "xds", "--slices", "5", "--seed", "3", volume],
                           capture_output=True, text=True, check=True).stdout
    assert first == again and len(first.splitlines()) == 5
    assert first.startswith("slice 1: ")


def test_xds_rejects_a_file_that_is_not_a_volume(tmp_path):
    (tmp_path / "junk").write_bytes(b"not a volume at all")
    proc = subprocess.run([PROGRAMS / "xds", tmp_path / "junk"], capture_output=True, text=True)
    assert proc.returncode == 1 and "not a specx volume" in proc.stderr
    proc = subprocess.run([PROGRAMS / "xds", "--slices", "0", "x"], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("xds: ")


def test_sqlite_lookup_finds_every_key_repeatably(tmp_path):
    sq = WORKLOADS["sqlite"]
    sq.generate(str(tmp_path), sq.scales["test"], lambda *a: None)
    argv = [PROGRAMS / "sqlite-lookup", "--seed", "5", tmp_path / "items.db", "200"]
    first = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert first == subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert first.startswith("lookups 200 found 200 checksum ")


def test_builds_ask_pkg_config_for_what_their_meson_build_asks_for():
    text = """fuse_dep = dependency('fuse3', version : '>=3.10')
thread_dep = dependency('threads')
nl_dep = dependency('libnl-route-3.0')
again = dependency('fuse3', version : '>=3.10')"""
    assert toolchains._pkg_config_names(text) == ["fuse3 >= 3.10", "libnl-route-3.0"]


@pytest.mark.parametrize("name", ["build", "ci"])
def test_a_build_is_one_process_that_remakes_the_same_directory_in_scratch(name):
    w = WORKLOADS[name]
    cmd = w.command("/data", w.scales["test"], "/scratch")
    other = w.other_command("/data", w.scales["test"], "/scratch")
    # One process for the bench to time; every run the same key (program, arguments, working
    # directory), so that a second run finds the first run's history.
    assert cmd.argv[:2] == ["sh", "-c"] and 'rm -rf "$' in cmd.argv[2]
    assert cmd == w.command("/data", w.scales["test"], "/scratch")
    assert cmd.cwd == "/scratch" and cmd.argv[4].startswith("/scratch/")
    # The other command is the same program on other inputs, writing where the first writes.
    assert other.argv[:5] == cmd.argv[:5] and other.argv != cmd.argv
    assert cmd.argv[5].startswith("/data/")


def test_the_builds_commits_are_fixed_and_distinct_per_scale():
    for name in ("build", "ci"):
        w = WORKLOADS[name]
        for params in w.scales.values():
            assert params["other"] < params["commit"]
        commits = w.generator_inputs()["commit"]
        if not all(c for scale in commits.values() for c in scale.values()):
            pytest.skip("not run from the project's git repository")
        assert commits["full"]["commit"] != commits["full"]["other"]


@pytest.mark.parametrize("name", ["build", "ci"])
def test_a_build_at_test_scale_runs_plainly_twice_and_on_other_inputs(name, tmp_path):
    w = WORKLOADS[name]
    if reason := w.unavailable(str(tmp_path)):
        pytest.skip(reason)
    params, data, scratch = w.scales["test"], tmp_path / "data", tmp_path / "scratch"
    data.mkdir()
    scratch.mkdir()
    w.generate(str(data), params, lambda *a: None)
    # Twice: the second run must find its directory removed, not half-configured by the first.
    for cmd in (w.command(str(data), params, str(scratch)),
                w.command(str(data), params, str(scratch)),
                w.other_command(str(data), params, str(scratch))):
        proc = subprocess.run(cmd.argv, cwd=cmd.cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        assert proc.returncode in cmd.ok_codes, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert sorted(os.listdir(scratch)) == [name]
    assert list(scratch.glob("*/specx")) or list(scratch.glob("*/build/specx"))


@pytest.fixture(scope="module")
def grep_tree(tmp_path_factory):
    """grep's data set at scale test, which the tree tools share."""
    data = tmp_path_factory.mktemp("grep-tree")
    WORKLOADS["grep"].generate(str(data), WORKLOADS["grep"].scales["test"], lambda *a: None)
    return data


def test_tree_readers_at_test_scale_read_every_file_the_same_way(grep_tree, monkeypatch):
    """reader2 (two threads, each its own files) and goread (one goroutine) read the whole
    tree: the same count and size as the static reader, a checksum independent of how the
    threads ran, and the same output run after run."""
    monkeypatch.setenv("SPECX_LIBEXEC_PATH", str(PROGRAMS))
    files = WORKLOADS["grep"].scales["test"]["files"]
    size = sum(p.stat().st_size for p in (grep_tree / "src").rglob("*") if p.is_file())
    ran = 0
    for name in ("reader2", "goread"):
        w = WORKLOADS[name]
        if w.unavailable(str(grep_tree)):
            continue   # goread needs Go at build time
        cmd = w.command(str(grep_tree), w.scales["test"], str(grep_tree))
        outputs = {subprocess.run(cmd.argv, capture_output=True, text=True, check=True,
                                  timeout=60).stdout for _ in range(3)}
        assert len(outputs) == 1, outputs
        assert outputs.pop().startswith(f"files {files} bytes {size} checksum "), name
        ran += 1
    assert ran >= 1


def test_treeread_splits_the_files_by_index_among_its_threads(grep_tree):
    """Any number of threads reads every file once: the count and size do not change with -t,
    and a bad -t is refused."""
    totals = {tuple(subprocess.run([PROGRAMS / "treeread", "-t", str(n), grep_tree / "src"],
                                   capture_output=True, text=True, check=True).stdout.split()[:4])
              for n in (1, 2, 3, 7)}
    assert len(totals) == 1, totals
    bad = subprocess.run([PROGRAMS / "treeread", "-t", "0", grep_tree / "src"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("usage:")


# --- command line ---------------------------------------------------------------------------------

def test_help_and_list(specx):
    proc = run_specx("bench", "--help")
    assert proc.returncode == 0
    for option in ("--preset", "--runs", "--modes", "--out", "--data-dir", "--demo", "--list"):
        assert option in proc.stdout
    assert proc.stdout.startswith("Usage: specx bench ")   # the C commands' style
    listing = run_specx("bench", "--list").stdout
    for name in (*WORKLOADS, "slowfs", "cold", "warm", "nospec", "specx"):
        assert f"  {name} " in listing
    # Every description starts in one column, workloads and modes alike.
    rows = [line for line in listing.splitlines() if line.startswith("  ")]
    assert len({len(line) - len(line[2:].split(" ", 1)[1].lstrip()) for line in rows}) == 1


@pytest.mark.parametrize("args,message", [
    (["nosuch"], "unknown workload 'nosuch'"),
    (["--runs", "0"], "--runs must be at least 1"),
    (["--warm-runs", "0"], "--warm-runs must be at least 1"),
    (["--modes", "cold,tepid"], "unknown mode 'tepid'"),
    (["--frob"], "unrecognized arguments: --frob"),
    (["--runs", "x"], "invalid int value"),
])
def test_bad_input_is_one_line_error(specx, args, message):
    proc = run_specx("bench", *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("specx bench: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.root
def test_refuses_to_run_without_root(specx, tmp_path):
    # The harness is imported from the source tree, which a clone in a home directory keeps
    # out of other users' reach.
    harness = REPO / "bench" / "specx_bench" / "cli.py"
    if subprocess.run(["runuser", "-u", "nobody", "--", "test", "-r", harness, "-a", "-x",
                       specx]).returncode != 0:
        pytest.skip(f"user nobody cannot reach {REPO}: the harness is run from the source tree")
    proc = subprocess.run(["runuser", "-u", "nobody", "--", specx, "bench", "grep",
                           "--data-dir", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 1 and "needs root" in proc.stderr


# --- end to end (root: mounts and drop_caches) ----------------------------------------------------

def mounts_under(path):
    with open("/proc/self/mounts") as f:
        return [line for line in f if str(path) in line]


@pytest.fixture
def data_dir():
    """A data directory that the postgres user can reach (pytest's own is private to root)."""
    path = tempfile.mkdtemp(prefix="specx-bench-test-", dir="/var/tmp")
    os.chmod(path, 0o755)
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


FAST = "--slowfs-args=--latency-ms 1 --bandwidth-mbps 400 --bus-mbps 0"


def tiny_bench(data_dir, workload, modes, *options):
    """`specx bench WORKLOAD` at test scale, one run of each mode, on a fast slowfs: the
    workload's entry in results.json."""
    out = data_dir / "out"
    proc = run_specx("bench", workload, "--scale", "test", "--runs", "1", "--modes", modes,
                     *options, FAST, "--data-dir", data_dir, "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads((out / "results.json").read_text())["workloads"]
    return result


@pytest.mark.root
def test_tiny_grep_bench_end_to_end(specx, data_dir):
    wanted = ["cold", "warm"] + (["specx"] if (BUILD / "src" / "run" / "runtime" /
                                                 "libspecx.so").exists() else [])
    out = data_dir / "out"
    proc = run_specx("bench", "grep", "--scale", "test", "--runs", "1", "--warm-runs", "2",
                     "--modes", ",".join(wanted), FAST, "--data-dir", data_dir, "--out", out,
                     timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[grep] cold run 1: " in proc.stdout
    for name in ("results.md", "results.json", "results.png"):
        assert (out / name).stat().st_size > 0
    results = json.loads((out / "results.json").read_text())
    (grep,) = results["workloads"]
    assert [r["mode"] for r in grep["runs"]] == wanted + ["warm"]  # the extra warm run last
    assert all(r["ok"] and r["device"] is not None for r in grep["runs"])
    cold = grep["runs"][0]
    assert cold["device"]["requests"] >= WORKLOADS["grep"].scales["test"]["files"]
    if shutil.which("strace"):
        assert grep["read_calls"] > 0
    if "specx" in wanted:
        assert grep["runs"][2]["report"]["stalls"]["count"] >= 0
    assert results["environment"]["slowfs_options"][:2] == ["--preset", "paper2003"]
    assert "| grep | cold | 1 |" in (out / "results.md").read_text()
    assert not mounts_under(data_dir)


@pytest.mark.root
def test_a_second_run_replays_the_first_runs_history_which_is_then_forgotten(specx,
                                                                              data_dir):
    store = pathlib.Path("/var/cache/specx/history")  # root's, whatever its environment
    had_store = store.exists()
    try:
        grep = tiny_bench(data_dir, "grep", "history-again", "--no-read-calls")
    finally:
        if not had_store and store.exists() and \
                [p.name for p in store.iterdir()] in ([], ["lock"]):
            shutil.rmtree(store)
    (run,) = grep["runs"]
    history = run["report"]["history"]
    assert run["ok"] and history["replayed"] and not history["near"], history
    assert history["entries"] >= WORKLOADS["grep"].scales["test"]["files"], history
    if had_store:
        listing = run_specx("history", "list", "--json", "-", check=True).stdout
        assert str(data_dir) not in listing
    else:
        assert not store.exists()  # forgotten: the store was left empty
    assert not mounts_under(data_dir)


@pytest.mark.root
def test_tiny_postgres_bench_end_to_end(specx, data_dir):
    pg = tiny_bench(data_dir, "postgres", "cold,warm", "--warm-runs", "1", "--no-read-calls")
    assert [r["ok"] for r in pg["runs"]] == [True, True]
    assert not mounts_under(data_dir)
    servers = subprocess.run(["pgrep", "-f", f"postgres -D {data_dir}"], capture_output=True)
    assert servers.returncode == 1, "a PostgreSQL server was left running"


@pytest.mark.root
def test_device_validation_runs_all_checks(specx, data_dir):
    out = data_dir / "out"
    proc = run_specx("bench", "slowfs", "--scale", "test", FAST, "--data-dir", data_dir,
                     "--out", out, timeout=300)
    # Exit status 1 means a bar was missed: on a fast test device that is allowed.
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    validation = json.loads((out / "results.json").read_text())["validation"]
    assert len(validation["checks"]) == 5
    (integrity,) = [c for c in validation["checks"] if "checksum" in c["check"]]
    assert integrity["passed"], integrity
    assert (out / "results-slowfs.png").stat().st_size > 0
    assert not mounts_under(data_dir)


def _run(mode, elapsed, **total):
    report = {"total": total} if total else None
    return {"mode": mode, "ok": True, "elapsed_s": elapsed, "report": report,
            "stalls": total.get("stalls"), "stall_s": 1.0 if total else None, "device": None}


def _workload(name, runs):
    modes_seen = list(dict.fromkeys(r["mode"] for r in runs))
    return {"name": name, "runs": runs, "summary": runner.summarize(runs, modes_seen)}


def test_bars_are_checked_against_each_workloads_own_baseline():
    spec = dict(spec_prefetches=100, unused_prefetches=5, stalls=3)
    grep = _workload("grep", [_run("cold", 10.0), _run("specx", 3.0, **spec),
                              _run("warm", 1.0), _run("specx-warm", 1.05, stalls=0)])
    chase = _workload("chase", [_run("cold", 10.0), _run("specx", 10.4, spec_prefetches=10,
                                                         unused_prefetches=9, stalls=9)])
    rows = {(w, what): (value, passed) for w, what, value, _, passed in
            bars.check([grep, chase])}
    assert rows[("grep", "specx / cold")] == (0.3, True)
    assert rows[("grep", "specx-warm / warm")][1] is False          # 1.05 > 1.03
    assert rows[("grep", "unused speculative prefetches")] == (0.05, True)
    assert rows[("chase", "specx / cold (cannot help)")] == (1.04, True)
    assert rows[("chase", "unused speculative prefetches")] == (0.9, False)


def test_speculation_table_reports_medians_of_specx_runs():
    runs = [_run("specx", t, spec_prefetches=p, unused_prefetches=0, complete_share=0.5,
                 sync_attempts=2, sync_completed=2, sync_ns=10**9, spec_created=3, minflt=7,
                 stalls=4) for t, p in ((3.0, 10), (4.0, 30), (5.0, 20))]
    table = report.speculation_table([_workload("grep", [_run("cold", 9.0)] + runs)])
    row = [line for line in table.splitlines() if line.startswith("| grep | specx")][0]
    assert "| 20 |" in row and "| 50% |" in row and "2 / 2 / 1.00 s" in row
    assert report.speculation_table([_workload("grep", [_run("cold", 9.0)])]) is None


def test_refork_table_reports_tables_3_and_4(tmp_path):
    def runs(mode, kind, attempts, completed, ns, minflt):
        found = []
        for t in (3.0, 4.0, 5.0):
            r = _run(mode, t, refork_attempts=attempts, refork_completed=completed,
                     refork_ns=ns, refork_wait_ns=ns, minflt=minflt, stalls=4)
            r["report"]["refork"] = kind
            found.append(r)
        return found
    w = _workload("refork", [_run("cold", 9.0)] + runs("nospec", "basic", 0, 0, 0, 1000) +
                  runs("specx-basic", "basic", 10, 10, 130 * 10**6, 2000) +
                  runs("specx-fast", "fast", 12, 9, 24 * 10**5, 1005))
    table = report.refork_table([w])
    rows = {line.split("|")[2].strip(): line for line in table.splitlines()[2:]}
    assert "| 10 | 10 (100%) | 0.130 s | 13.000 ms |" in rows["specx-basic"]
    assert "| fast | 12 | 9 (75%) | 0.002 s | 0.200 ms |" in rows["specx-fast"]
    assert rows["nospec"].endswith("| 1,000 |") and rows["specx-fast"].endswith("| 1,005 |")
    assert report.refork_table([_workload("grep", runs("specx", "basic", 1, 1, 1, 1))]) is None
    from specx_bench import plot
    assert plot.refork_chart([w], str(tmp_path / "refork.png"))
    assert (tmp_path / "refork.png").read_bytes()[:4] == b"\x89PNG"
    assert not plot.refork_chart([_workload("grep", [_run("cold", 9.0)])], str(tmp_path / "x"))


def test_issue_4_bars_stencil_never_above_cold_and_fast_refork():
    stencil = _workload("stencil", [_run("cold", 10.0), _run("cold", 10.0),
                                    _run("specx", 8.0, stalls=0), _run("specx", 10.2, stalls=0)])
    fast = [_run("specx-fast", 5.0, refork_attempts=10, refork_ns=5 * 10**6, minflt=1005,
                 stalls=1) for _ in range(3)]
    nospec = [_run("nospec", 5.0, minflt=1000, stalls=1) for _ in range(3)]
    refork = _workload("refork", [_run("cold", 5.0)] + nospec + fast)
    rows = {(w, what): (value, passed) for w, what, value, _, passed in
            bars.check([stencil, refork])}
    value, passed = rows[("stencil", "specx / cold")]
    assert abs(value - 0.91) < 1e-9 and not passed
    assert rows[("stencil", "slowest specx run / cold")][1] is False  # 10.2 s > 10.0 s
    value, passed = rows[("refork", "mean fast refork")]
    assert abs(value - 0.0005) < 1e-12 and passed
    value, passed = rows[("refork", "extra minor faults, one-way vs nospec")]
    assert abs(value - 0.005) < 1e-9 and passed


@pytest.mark.root
def test_out_of_core_workload_runs_in_its_memory_cgroup(specx, data_dir):
    mv = tiny_bench(data_dir, "matvec", "cold", "--warm-runs", "1", "--no-read-calls")
    (run,) = mv["runs"]
    assert run["ok"]
    assert run["memory_cgroup"]["limit_bytes"] == WORKLOADS["matvec"].scales["test"]["memory_limit_mb"] << 20
    assert 0 < (run["memory_cgroup"]["peak_bytes"] or 1) <= run["memory_cgroup"]["limit_bytes"]
    assert "checksum" in (data_dir / "out" / "logs" / run["log"]).read_text()


@pytest.mark.root
@pytest.mark.parametrize("command", [["grep"], ["share"], ["idle"]])
def test_a_data_directory_another_user_could_change_is_refused(specx, command):
    """Root's benchmark writes data sets, a lock and swap files in its data directory: one that
    another user made (or may write, or reaches through a directory of theirs) could have any
    of them swapped for a link to a file of root's. Refused in one line; nothing is written."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-bench-planted-"))
    try:
        top.chmod(0o755)
        planted = top / "theirs"
        planted.mkdir()
        os.chown(planted, NOBODY, NOBODY)
        (top / "open").mkdir(mode=0o777)
        (top / "open").chmod(0o777)
        (top / "open" / "data").mkdir()
        user_dir = top / "user"
        user_dir.mkdir()
        os.chown(user_dir, NOBODY, NOBODY)
        prefix = "specx bench: " if command == ["grep"] else f"specx bench {command[0]}: "
        for data_dir in (planted, top / "open" / "data", user_dir / "data"):
            before = sorted(top.rglob("*"))
            proc = run_specx("bench", *command, "--data-dir", data_dir, "--out", top / "out",
                             timeout=60)
            assert proc.returncode != 0, proc.stdout
            assert proc.stderr.startswith(prefix + "--data-dir ") and \
                proc.stderr.count("\n") == 1, proc.stderr
            assert sorted(top.rglob("*")) == before
    finally:
        shutil.rmtree(top)


EXPERIMENTS = REPO / "bench" / "experiments"


def test_experiment_scripts_answer_help(tmp_path):
    """The scripts behind published results keep working: each at least parses its options,
    as an unprivileged user (when the tests run as root and that user can read the tree),
    and asking for help leaves nothing behind in the tree or in the working directory."""
    scripts = sorted(EXPERIMENTS.glob("*.py"))
    assert scripts
    # Every file there is a script this test runs or a program's source one of them builds.
    assert {p.relative_to(EXPERIMENTS).parts[0] for p in EXPERIMENTS.iterdir()
            if p.name != "__pycache__"} == {p.name for p in scripts} | {"programs"}
    prefix = []
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if IS_ROOT and subprocess.run([*as_nobody, "test", "-r", str(scripts[0])]).returncode == 0:
        prefix = as_nobody
        tmp_path.chmod(0o777)
    tree_before = sorted(EXPERIMENTS.rglob("*"))
    for script in scripts:
        proc = subprocess.run([*prefix, sys.executable, script, "--help"], capture_output=True,
                              text=True, timeout=60, cwd=tmp_path,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert proc.returncode == 0 and "usage" in proc.stdout.lower(), (script, proc.stderr)
    assert list(tmp_path.iterdir()) == []
    assert sorted(EXPERIMENTS.rglob("*")) == tree_before


def test_experiment_programs_compile(tmp_path):
    """The C programs the experiment scripts build still compile here."""
    for source in sorted((EXPERIMENTS / "programs").rglob("*.c")):
        proc = subprocess.run(["cc", "-O2", "-pthread", "-fsyntax-only", str(source)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (source, proc.stderr)


# --- the out-of-core workloads' scales, and one that cannot run here ---

def test_stencil_data_sets_are_grids_of_the_scale():
    for name in ("stencil", "swap"):
        for scale in ("full", "demo", "test"):
            params = WORKLOADS[name].scales[scale]
            # Out of core: the grid exceeds the memory cgroup at every scale but the test's.
            if scale != "test":
                assert params["n"] ** 3 * 4 > 2 * (params["memory_limit_mb"] << 20)
    assert WORKLOADS["stencil"].scales["full"]["n"] ** 3 * 4 >= 512 << 20


def test_a_workload_that_cannot_run_here_is_skipped_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(swapspace, "unavailable_reason", lambda directory: "no swap here")
    cfg = runner.Config(data_dir=str(tmp_path), out_dir=str(tmp_path / "out"), scale="test",
                        runs=1, modes=[], slowfs_options=[])
    results = {"environment": {"modes": []}, "workloads": [], "validation": None}
    monkeypatch.setattr(cli, "save", lambda results, out: [])
    assert cli.run_all(["swap"], cfg, results)
    assert capsys.readouterr().out == "specx bench: skipping swap: no swap here\n"
    assert results["workloads"] == []


# --- specx bench share's summary ---

def test_ratios_against_a_mode_stopped_at_its_time_limit_are_bounds():
    def run(makespan, faults):
        ended = makespan is not None
        return {"makespan_s": makespan, "stopped_after_s": None if ended else 100.0,
                "jobs": [{"wall_s": makespan, "output": "x", "exit": 0}] if ended else None,
                "major_faults": faults, "major_faults_first_second": faults // 10,
                "prefetched_bytes": 0, "prefetched_file_bytes": 0,
                "prefetched_unused_bytes": 0, "switches": 4, "turn_cpu_share": 0.5}

    alone = [{"elapsed_s": 10.0, "output": "x", "exit": 0}]
    summary = share_bench.summarize({
        "model": [run(30.0, 100)] * 3,
        "none": [run(None, 5000), run(None, 4000), run(90.0, 3000)],   # median: stopped
        "switch": [run(None, 900), run(40.0, 300), run(50.0, 400)],     # median: 50 s
        "all-at-once": [run(None, 7000)] * 3,
    }, alone)
    assert summary["none"]["makespan_s"] is None and summary["none"]["makespan_over_s"] == 100
    assert summary["none"]["slowdown"] == [9.0] and summary["none"]["outputs_identical"]
    assert summary["switch"]["makespan_s"] == 50.0 and summary["switch"]["stopped_runs"] == 1
    assert summary["all-at-once"]["outputs_identical"] is None
    killed = dict(run(20.0, 10), jobs=[{"wall_s": 20.0, "output": "", "exit": -9}])
    differs = share_bench.summarize({"model": [run(30.0, 100), killed]}, alone)["model"]
    assert not differs["outputs_identical"]
    assert differs["outputs_differing"] == [{"job": 1, "exit": -9, "exit_alone": 0,
                                             "output_same": False}]
    assert share_bench.ratio(summary, "model", "none") == (0.3, "<")
    assert share_bench.ratio(summary, "none", "switch") == (2.0, ">")
    assert share_bench.ratio(summary, "none", "all-at-once") is None
    results = {figure: result for figure, _, _, result in share_bench.bars(summary)}
    assert results["makespan model / none"] == "PASS"              # 0.3 at most
    assert results["makespan model / all-at-once"] == "PASS"       # 0.3 at most
    assert results["makespan model / switch"] == "PASS"            # 0.6
    summary["model"]["makespan_s"], summary["model"]["makespan_over_s"] = None, 100.0
    results = {figure: result for figure, _, _, result in share_bench.bars(summary)}
    assert results["makespan model / switch"] == "FAIL"            # over 2.0
    assert "makespan model / none" not in results                  # both stopped


@pytest.mark.root
def test_the_scratch_directory_is_not_open_to_other_users():
    """The harness runs builds, clones and ld as root in its scratch directory (in /dev/shm,
    where every user can see it): another user can neither list it nor plant or rename a name
    there, which would point those writes elsewhere."""
    scratch = pathlib.Path(runner.make_scratch("attack"))
    try:
        as_other = ["setpriv", "--reuid=61234", "--regid=61234", "--clear-groups"]
        planted = subprocess.run([*as_other, "ln", "-s", "/etc", str(scratch / "build")],
                                 capture_output=True, text=True)
        listed = subprocess.run([*as_other, "ls", str(scratch)], capture_output=True, text=True)
        assert planted.returncode != 0 and not (scratch / "build").is_symlink(), planted.stderr
        assert listed.returncode != 0, listed.stdout
    finally:
        shutil.rmtree(scratch)
