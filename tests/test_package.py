"""specx as users install it: `make install` staged under DESTDIR as packagers do, the bash
completion against each command's --help, and the Debian package built from a fresh clone of
HEAD (what is committed), checked by lintian, installed on this machine, run and removed."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import REPO

COMPLETION = REPO / "data" / "specx.bash-completion"
VERSION = re.search(r"version : '([^']+)'", (REPO / "meson.build").read_text()).group(1)


def clean_env():
    """The environment without what would point an installed specx at a build tree, or a
    nested make at the jobserver of the `make test` running these tests."""
    drop = {"SPECX_LIBEXEC_PATH", "SPECX_EXE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          env=clean_env(), **kw)


def commands_of(specx):
    """The commands `specx --help` lists."""
    text = run(specx, "--help", check=True).stdout
    listed = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listed.splitlines()]


def long_options_of(specx, command):
    """The long options `specx COMMAND --help` lists, on the lines that describe options."""
    text = run(specx, command, "--help", check=True).stdout
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M)}


def completions(*words):
    """What the completion offers for the last of WORDS (the command line typed so far)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _specx; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    proc = run("bash", "-c", script, "bash", COMPLETION, *words, check=True)
    return [w for w in proc.stdout.splitlines() if w]


def test_the_completion_offers_each_command_and_exactly_the_long_options_of_its_help(specx):
    commands = commands_of(specx)
    assert set(commands) <= set(completions(specx, ""))
    for command in commands:
        offered = {o.rstrip("=") for o in completions(specx, command, "--")}
        assert offered == long_options_of(specx, command), command


def test_the_completion_offers_the_values_of_an_option_and_bench_workloads(specx):
    assert completions(specx, "run", "--backend", "=", "t") == ["trace"]
    assert completions(specx, "slowfs", "--preset", "") == \
        ["paper2003", "hdd", "cloud-disk", "nfs", "object-store"]
    assert "sqlite3-index" in completions(specx, "bench", "sqlite3")


def installed_files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir())


@pytest.mark.slow
def test_make_install_stages_a_tree_that_runs_from_its_prefix_and_never_from_the_build():
    """`make install` with DESTDIR puts everything under DESTDIR/PREFIX, PREFIX the one given
    even to a build set up with another. The staged copy looks for its components in PREFIX
    only, even while the build tree it came from exists; moved to PREFIX, as a package manager
    would, it runs with the build tree gone."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-install-"))
    try:
        prefix, stage, build = top / "usr", top / "stage", top / "build"
        run("meson", "setup", build, REPO, f"--prefix={top}/elsewhere", check=True)
        proc = run("make", "-C", REPO, "install", f"BUILDDIR={build}", f"PREFIX={prefix}",
                   f"DESTDIR={stage}")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        staged = stage / prefix.relative_to("/")
        assert not prefix.exists()
        assert all(f.startswith(str(staged.relative_to(stage)) + "/")
                   for f in installed_files(stage))
        files = installed_files(staged)
        for name in ["bin/specx", "share/bash-completion/completions/specx",
                     "lib/systemd/system/specx-share-slurm.service",
                     "share/specx/python/specx_bench/cli.py",
                     *(f"libexec/specx/specx-{c}"
                       for c in ["slowfs", "share", "idle", "bench", "oomguard"]),
                     *(f"share/man/man1/{page.name}" for page in (REPO / "docs").glob("*.1"))]:
            assert name in files
        assert [f for f in files if re.fullmatch(r"lib/(.+/)?specx/libspecx\.so", f)]

        staged_specx = staged / "bin" / "specx"
        proc = run(staged_specx, "slowfs", "--help")
        assert proc.returncode == 127 and "specx-slowfs is not installed" in proc.stderr
        shutil.rmtree(build)
        staged.rename(prefix)
        specx = prefix / "bin" / "specx"
        assert run(specx, "--version").stdout == f"specx {VERSION}\n"
        assert run(specx, "slowfs", "--help").returncode == 0
        assert "grep" in run(specx, "bench", "--list", check=True).stdout
        data = top / "data"
        data.write_text("read through the installed runtime\n")
        proc = run(specx, "run", "--", "cat", data)
        assert (proc.returncode, proc.stdout) == (0, data.read_text()), proc.stderr
    finally:
        shutil.rmtree(top)


def package_status(name):
    proc = run("dpkg-query", "-W", "-f", "${Status}", name)
    return proc.stdout if proc.returncode == 0 else ""


@pytest.mark.root
@pytest.mark.slow
def test_the_debian_package_builds_is_lintian_clean_installs_runs_and_removes():
    """dpkg-buildpackage -b on a fresh clone of HEAD, lintian without an error, then the package
    on this machine: `specx --version`, `specx doctor` (where this build has it) and a small
    `specx run`, then purged, its files gone. A specx installed by someone else, as a package
    or not, is left alone: the test does not run."""
    missing = [tool for tool in ["dpkg-buildpackage", "dh", "lintian", "git"]
               if not shutil.which(tool)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (Debian packages dpkg-dev, debhelper, lintian, "
                    "git; scripts/ensure-deps installs them)")
    if "installed" in package_status("specx").split():
        pytest.skip("a specx package is installed on this machine: this test installs and "
                    "purges its own, and will not replace that one")
    top = pathlib.Path(tempfile.mkdtemp(prefix="specx-deb-"))
    installed = False
    try:
        source = top / "specx"
        run("git", "-c", f"safe.directory={REPO}", "clone", "-q", REPO, source, check=True)
        proc = run("dpkg-buildpackage", "-b", "-us", "-uc", cwd=source)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        changes, = top.glob("specx_*.changes")
        deb, = top.glob(f"specx_{VERSION}-*.deb")
        lintian = run("lintian", changes)
        assert not [line for line in lintian.stdout.splitlines() if line.startswith("E:")], \
            lintian.stdout
        files = [line.split()[5][1:] for line in run("dpkg-deb", "-c", deb, check=True)
                 .stdout.splitlines() if not line.startswith("d")]
        for name in ["/usr/bin/specx", "/usr/libexec/specx/specx-slowfs",
                     "/usr/share/man/man1/specx.1.gz",
                     "/usr/share/bash-completion/completions/specx",
                     "/lib/systemd/system/specx-share-slurm.service"]:
            assert name in files
        assert [f for f in files if f.endswith("/specx/libspecx.so")]
        if [f for f in files if os.path.lexists(f)]:
            pytest.skip("specx is installed on this machine outside any package (make install "
                        "PREFIX=/usr?): this test would overwrite it, and purge would remove it")

        installed = True  # from here on the package is ours to purge, even half-installed
        proc = run("dpkg", "-i", deb)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert run("/usr/bin/specx", "--version").stdout == f"specx {VERSION}\n"
        # `specx doctor`: 0 when the machine gives specx everything, 1 when something is
        # missing (specx still runs).
        if "doctor" in commands_of("/usr/bin/specx"):
            assert run("/usr/bin/specx", "doctor").returncode in (0, 1)
        data = top / "data"
        data.write_text("read through the packaged runtime\n")
        proc = run("/usr/bin/specx", "run", "--", "cat", data)
        assert (proc.returncode, proc.stdout) == (0, data.read_text()), proc.stderr
    finally:
        if installed:
            purged = run("dpkg", "--purge", "specx")
        shutil.rmtree(top)
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert package_status("specx") in ("", "unknown ok not-installed")
    assert [f for f in files if os.path.lexists(f)] == []
