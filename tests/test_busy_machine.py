"""The test suite on a busy machine: CI and users' machines run other work, and a test whose
outcome depends on how much CPU an idle-priority copy happens to get fails there.
The tests that need a copy to run are run again here beside two CPU-bound processes."""
import os
import subprocess
import sys

import pytest

from conftest import REPO

# Tests in which a speculative copy must run (fill memory, compute, enter its sandbox).
COPY_DEPENDENT = ["tests/test_copy_idle.py", "tests/test_oom.py", "tests/test_refork.py",
                  "tests/test_mapped_safety.py", "tests/test_readahead.py", "tests/test_run.py",
                  "tests/test_fault_speculation.py"]


@pytest.mark.root
def test_copy_dependent_tests_pass_beside_two_busy_loops(specx):
    env = {**os.environ, "SPECX_TEST_BUSY": "2"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *COPY_DEPENDENT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout.splitlines()[-1] and "skipped" not in proc.stdout.splitlines()[-1]
