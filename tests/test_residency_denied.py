"""A file the user neither owns nor may write: the kernel hides its page-cache state
(cachestat and mincore answer EPERM), so specx cannot tell its reads from stalls. They pass
through uncounted, and the report says how many there were instead of showing nothing."""
import json
import os
import pathlib
import shutil
import tempfile

import pytest

from conftest import NOBODY, run_specx


@pytest.mark.root
def test_reads_of_a_file_whose_residency_is_hidden_are_counted_apart(unprivileged_build):
    # Not under pytest's tmp_path: its parents are private to root.
    top = tempfile.mkdtemp(prefix="specx-denied-")
    try:
        check_hidden_residency(pathlib.Path(top), *unprivileged_build)
    finally:
        shutil.rmtree(top)


def check_hidden_residency(top, build, env):
    top.chmod(0o755)
    data = top / "data.txt"
    data.write_text("".join(f"line {i}\n" for i in range(8000)))
    data.chmod(0o644)
    out = top / "out"
    out.mkdir()
    os.chown(out, NOBODY, NOBODY)
    proc = run_specx("run", "--json", out / "stats.json", "--", "cat", data,
                     exe=build / "specx", env={**os.environ, **env},
                     preexec_fn=lambda: (os.setgroups([]), os.setgid(NOBODY), os.setuid(NOBODY)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == data.read_text()
    total = json.loads((out / "stats.json").read_text())["total"]
    assert total["residency_denied"] >= 1
    assert total["reads"] == 0 and total["stalls"] == 0
