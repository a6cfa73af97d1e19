"""Shared fixtures: where the build is, root-only skips, and slowfs mounts."""
import contextlib
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("SPECX_BUILD_DIR", REPO / "build"))
SPECX = BUILD / "specx"
IS_ROOT = os.geteuid() == 0
LONG = os.environ.get("SPECX_TEST_LONG") == "1"


def pytest_collection_modifyitems(config, items):
    skip_root = pytest.mark.skip(reason="needs root (FUSE mounts, drop_caches, cgroups); run as root")
    skip_long = pytest.mark.skip(reason="long test: run with SPECX_TEST_LONG=1 (make test-long)")
    for item in items:
        if "root" in item.keywords and not IS_ROOT:
            item.add_marker(skip_root)
        if "long" in item.keywords and not LONG:
            item.add_marker(skip_long)


@pytest.fixture(scope="session")
def specx():
    """Path of the built `specx` command."""
    if not SPECX.exists():
        pytest.fail(f"{SPECX} is missing: build first (make build)")
    return str(SPECX)


def run_specx(*args, check=False, timeout=120, **kw):
    """Runs `specx ARGS...` and returns the CompletedProcess (text mode)."""
    return subprocess.run([str(SPECX), *map(str, args)], capture_output=True, text=True,
                          check=check, timeout=timeout, **kw)


def drop_caches():
    """Drops the page cache (root only): what a cold run starts from."""
    os.sync()
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


@contextlib.contextmanager
def slowfs_mount(backing, mountpoint, *options):
    """Mounts slowfs over BACKING at MOUNTPOINT (daemonized) and unmounts it afterwards."""
    os.makedirs(mountpoint, exist_ok=True)
    run_specx("slowfs", "-d", *options, backing, mountpoint, check=True)
    try:
        yield pathlib.Path(mountpoint)
    finally:
        run_specx("slowfs", "--unmount", mountpoint)
