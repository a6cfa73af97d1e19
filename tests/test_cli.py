"""The `specx` dispatcher: help, version, errors, and that every command answers --help."""
import os
import subprocess

import pytest

from conftest import SPECX, run_specx

COMMANDS = ["run", "share", "idle", "slowfs", "bench"]


def test_help_lists_every_command(specx):
    r = run_specx("--help")
    assert r.returncode == 0
    for cmd in COMMANDS:
        assert f"\n  {cmd} " in r.stdout


def test_no_arguments_is_a_usage_error(specx):
    r = run_specx()
    assert r.returncode == 2
    assert "Usage: specx" in r.stderr


def test_version(specx):
    r = run_specx("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("specx ")


@pytest.mark.parametrize("args, message", [
    (["frobnicate"], "'frobnicate' is not a specx command"),
    (["--frob"], "unknown option '--frob'"),
])
def test_bad_input_gives_one_line_error(specx, args, message):
    r = run_specx(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(specx, cmd):
    r = run_specx(cmd, "--help")
    assert r.returncode == 0, r.stderr
    assert f"specx {cmd}" in r.stdout


def test_missing_component_is_reported(specx, tmp_path):
    # A dispatcher copied away from its build tree finds no components.
    lonely = tmp_path / "specx"
    lonely.write_bytes(SPECX.read_bytes())
    lonely.chmod(0o755)
    env = dict(os.environ, SPECX_LIBEXEC_PATH=str(tmp_path))
    r = subprocess.run([str(lonely), "slowfs", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 127
    assert "specx-slowfs is not installed" in r.stderr
