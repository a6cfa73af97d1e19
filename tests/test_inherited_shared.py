"""Shared memory the program made before its speculative copy was created is inherited by the
copy and must become private there before the copy runs any program code (§4.1.1):
otherwise the copy, running ahead, writes into the program's memory. Differential, through
the preload path (the sandbox probe enters the sandbox without the runtime's wrappers), for
both ways a copy is created: at a read stall and at a large file mapping."""
import json
import os

import pytest

from conftest import BUILD, all_cold_but, run_specx, slowfs_mount

OPVM = BUILD / "tests" / "safety" / "opvm"

# The copy starts at the read or mapping on line 2 and reaches both bumps long before the
# program, which waits for its data and then sleeps.
FIRST_STALL = {
    "read": "pread {mnt}/data 0 4096",
    "mapping": "mmapread {mnt}/data",
}
SCRIPT = "shmcounter\n{stall}\nbump\nsleep 300\nbump\nexit 0\n"


@pytest.mark.root
@pytest.mark.parametrize("refork", ["basic", "fast"])
@pytest.mark.parametrize("trigger", sorted(FIRST_STALL))
def test_a_copy_never_writes_the_programs_shared_memory(specx, tmp_path, trigger, refork):
    (tmp_path / "back").mkdir()
    (tmp_path / "back" / "data").write_bytes(os.urandom(2 << 20))  # above the 1 MiB trigger
    script = tmp_path / "counter.ops"
    report = tmp_path / "spec.json"
    with slowfs_mount(tmp_path / "back", tmp_path / "mnt", "--latency-ms", "50") as mnt:
        script.write_text(SCRIPT.format(stall=FIRST_STALL[trigger].format(mnt=mnt)))
        runs = []
        for options in (["--no-spec"], [f"--refork={refork}", "--json", report]):
            all_cold_but(script, OPVM)
            runs.append(run_specx("run", *options, "--", OPVM, script))
    plain, spec = runs
    assert plain.returncode == 0 and "3 bump: 1" in plain.stdout and "5 bump: 2" in plain.stdout
    assert (spec.returncode, spec.stdout, spec.stderr) == (0, plain.stdout, plain.stderr)
    assert json.loads(report.read_text())["total"]["spec_created"] > 0
