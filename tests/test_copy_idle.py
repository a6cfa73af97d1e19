"""A speculative copy that reaches no I/O ends itself after a bounded CPU time (copy_idle.h):
it could prefetch nothing, and its memory is charged to the program's group."""
import json
import subprocess

import pytest

from conftest import BUILD, all_cold_but, copies_get_cpu, run_specx, slowfs_mount

OPVM = BUILD / "tests" / "safety" / "opvm"


@pytest.mark.root
def test_a_copy_that_only_computes_ends_itself(specx, tmp_path):
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "data").write_bytes(bytes(range(256)) * 64)
    script = tmp_path / "spin.ops"
    report = tmp_path / "report.json"
    with slowfs_mount(tmp_path / "back", tmp_path / "mnt", "--latency-ms", "300") as mnt:
        # The copy starts at the read and, while the program waits 300 ms for it, computes.
        script.write_text(f"pread {mnt / 'data'} 0 4096\nspin 1500\nexit 0\n")
        plain = subprocess.run([OPVM, script], capture_output=True, text=True, timeout=60)
        all_cold_but(script, OPVM)
        with copies_get_cpu(script):   # the copy's 100 ms of CPU must come on a busy machine too
            spec = run_specx("run", "--json", report, "--", OPVM, script)
    assert (spec.returncode, spec.stdout, spec.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    total = json.loads(report.read_text())["total"]
    assert total["spec_created"] >= 1, "no copy was made: nothing was tested"
    assert total["spec_idle_ended"] >= 1
