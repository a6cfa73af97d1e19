"""Toolchains over real trees this machine has: many small files with decisions in between,
the programs a copy of the program cannot run ahead of (docs/design/history.md): gofmt over
the Go compiler's sources, npm listing its own dependency tree (Node.js), git log -p over
a real repository's packs (this project's own history), and a build of this project's own C
sources at a fixed commit, alone and as a CI job (clone, build, test). Their data sets are
copies of what is installed (or, for git, a clone or an export), so they are only as fixed as
the installed version, which their stamps record."""
import functools
import os
import re
import shutil
import subprocess

from .base import Command, Workload, first_line


def _output(argv):
    """What ARGV prints, stripped ('' when it cannot run)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except OSError:
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


class GoFmt(Workload):
    """gofmt -l: parses and prints every Go file of a tree, one after another."""
    name = "gofmt"
    description = "gofmt -l over the Go compiler's sources (Go)"
    version = 3
    # "other": another subtree, for a first run whose history is wrong for this one.
    scales = {"full": {"tree": "cmd/compile", "other": "cmd/link"},
              "demo": {"tree": "cmd/compile/internal/types2", "other": "cmd/link/internal/ld"},
              "test": {"tree": "cmd/compile/internal/base", "other": "cmd/link/internal/sym"}}

    def _goroot(self):
        return _output(["go", "env", "GOROOT"])

    def unavailable(self, data_dir):
        if not shutil.which("gofmt") or not self._goroot():
            return "Go (gofmt, go env GOROOT) is not installed"
        return None

    def generator_inputs(self):
        return {"go": first_line(["go", "version"])}

    def generate(self, dest, params, progress):
        # Without the test data: some of it is Go with deliberate syntax errors, on which
        # gofmt exits 2.
        for name, tree in (("src", params["tree"]), ("other", params["other"])):
            shutil.copytree(os.path.join(self._goroot(), "src", tree), os.path.join(dest, name),
                            symlinks=True, ignore=shutil.ignore_patterns("testdata"))

    def touch_paths(self, root, params):
        return [os.path.join(root, "src")]

    def command(self, root, params, scratch):
        return Command(["gofmt", "-l", os.path.join(root, "src")])

    def other_command(self, root, params, scratch):
        return Command(["gofmt", "-l", os.path.join(root, "other")])

    def tool_versions(self):
        return {"go": first_line(["go", "version"])}


class NpmLs(Workload):
    """npm, started from a copy of itself, listing that copy's whole dependency tree: node
    loads npm's own modules, then npm reads every package.json below it."""
    name = "npm-ls"
    description = "npm ls --all in npm's own dependency tree (Node.js)"
    version = 1
    scales = {"full": {}, "demo": {}, "test": {}}

    def _npm_dir(self):
        root = _output(["npm", "root", "-g"])
        return os.path.join(root, "npm") if root else ""

    def unavailable(self, data_dir):
        if not shutil.which("node") or not os.path.isdir(self._npm_dir() or "/nonexistent"):
            return "Node.js and npm are not installed"
        return None

    def generator_inputs(self):
        return {"node": first_line(["node", "--version"]),
                "npm": first_line(["npm", "--version"])}

    def generate(self, dest, params, progress):
        shutil.copytree(self._npm_dir(), os.path.join(dest, "npm"), symlinks=True)

    def touch_paths(self, root, params):
        return [os.path.join(root, "npm")]

    def command(self, root, params, scratch):
        npm = os.path.join(root, "npm")
        # Offline and without the update check: nothing but the tree is read. npm ls exits 1
        # where the tree has problems (an extraneous or invalid package), as intended.
        return Command(["node", os.path.join(npm, "bin", "npm-cli.js"), "ls", "--all",
                        "--offline", "--no-update-notifier", "--cache",
                        os.path.join(scratch, "npm-cache")], cwd=npm, ok_codes=(0, 1))

    def tool_versions(self):
        return self.generator_inputs()


def _this_repository():
    """The git repository this harness comes from, or ''."""
    here = os.path.dirname(os.path.abspath(__file__))
    return _output(["git", "-C", here, "rev-parse", "--show-toplevel"])


@functools.lru_cache(maxsize=1)
def _first_parents():
    """This project's commits from the root along the first parents ([] without the
    repository)."""
    repo = _this_repository()
    return _output(["git", "-C", repo, "rev-list", "--first-parent", "--reverse",
                    "HEAD"]).split() if repo else []


def _first_parent_commit(n):
    """The N-th commit from the root along the first parents (fixed, whatever is committed
    later), or ''."""
    listing = _first_parents()
    return listing[min(n, len(listing)) - 1] if listing else ""


class GitLog(Workload):
    """git log -p over the first COMMITS commits of this project's history, cloned (one pack,
    which git maps): the diff of each commit reads the blobs of both sides."""
    name = "git-log"
    description = "git log -p over a real repository's history (packs, mapped)"
    version = 2
    scales = {"full": {"commits": 600}, "demo": {"commits": 300}, "test": {"commits": 40}}

    def unavailable(self, data_dir):
        if not shutil.which("git") or not _this_repository():
            return "needs git and the project's own repository (a git clone of specx)"
        return None

    def generator_inputs(self):
        return {"commit": {s: _first_parent_commit(p["commits"]) for s, p in self.scales.items()}}

    def generate(self, dest, params, progress):
        repo = os.path.join(dest, "repo")
        subprocess.run(["git", "clone", "-q", "--no-local", "--no-checkout", _this_repository(),
                        repo], check=True)
        subprocess.run(["git", "-C", repo, "update-ref", "refs/heads/bench",
                        _first_parent_commit(params["commits"])], check=True)

    def touch_paths(self, root, params):
        return [os.path.join(root, "repo")]

    def command(self, root, params, scratch):
        repo = os.path.join(root, "repo")
        return Command(["git", "-c", f"safe.directory={repo}", "-C", repo, "log", "-p",
                        "--output=/dev/null", "bench"])

    def tool_versions(self):
        return {"git": first_line(["git", "--version"])}


# How both builds below configure and build a tree ($src into $build), in the shell script that
# is their one timed process. CC=gcc: where ccache is installed meson puts it in front of the
# compiler, and every run after the first would be served from its cache. ninja runs the number
# of jobs it picks itself (the cores + 2), as people run it: jobs beyond the cores already let
# one compiler's wait for the disk overlap another's work, the baseline prefetching must beat.
_BUILD_STEPS = 'CC=gcc meson setup "$build" "$src" && ninja -C "$build"'


def _export(commit, dest):
    """The tree of COMMIT as `git archive` gives it (every file dated the commit's time) into
    the new directory DEST."""
    os.makedirs(dest)
    archive = subprocess.Popen(["git", "-C", _this_repository(), "archive", commit],
                               stdout=subprocess.PIPE)
    try:
        subprocess.run(["tar", "-x", "-C", dest], stdin=archive.stdout, check=True)
    finally:
        archive.stdout.close()
        archive.wait()
    if archive.returncode:
        raise subprocess.CalledProcessError(archive.returncode, ["git", "archive", commit])


def _pkg_config_names(meson_text):
    """The pkg-config modules, with their version bounds, that meson.build text asks for
    (`dependency('fuse3', version : '>=3.10')` gives 'fuse3 >= 3.10'); meson's own 'threads'
    is left out."""
    found = []
    for name, bound in re.findall(r"dependency\('([^']+)'(?:\s*,\s*version\s*:\s*'([^']*)')?",
                                  meson_text):
        if name != "threads":
            op, version = re.match(r"([<>=!]*)\s*(.*)", bound).groups()
            found.append(f"{name} {op or '='} {version}" if version else name)
    return sorted(set(found))


class _OwnBuild(Workload):
    """A build of this project's own C sources (meson, ninja, gcc per file: the build trees of
    docs/design/history.md, whose next reads belong to compilers not started yet) at a fixed
    commit: the "commit"-th from the root along the first parents, and "other", an earlier one,
    for a first run whose history is wrong for this one (the same build of other sources).
    The tree builds with the libraries the project needs at that commit."""
    scales = {"full": {"commit": 400, "other": 350},
              "demo": {"commit": 200, "other": 150},
              "test": {"commit": 5, "other": 3}}

    def _commits(self):
        return sorted({_first_parent_commit(n) for p in self.scales.values() for n in p.values()})

    def _dependencies(self):
        repo = _this_repository()
        return _pkg_config_names("\n".join(
            _output(["git", "-C", repo, "grep", "-h", "dependency(", c, "--", "*meson.build"])
            for c in self._commits()))

    def unavailable(self, data_dir):
        missing = [t for t in ("git", "meson", "ninja", "gcc", "pkg-config")
                   if not shutil.which(t)]
        if missing:
            return f"needs {', '.join(missing)} to build the project's own sources"
        # Counted from the root, a shallow clone's commits would be other commits.
        needed = max(n for p in self.scales.values() for n in p.values())
        shallow = _output(["git", "-C", _this_repository(), "rev-parse",
                           "--is-shallow-repository"]) != "false"
        if shallow or len(_first_parents()) < needed:
            return (f"needs the project's own repository with its history ({needed} commits "
                    "along the first parents; a full git clone of specx)")
        lacking = [d for d in self._dependencies()
                   if subprocess.run(["pkg-config", "--exists", d]).returncode != 0]
        if lacking:
            return f"the build needs {', '.join(lacking)}, which pkg-config does not find"
        return None

    def generator_inputs(self):
        return {"commit": {s: {k: _first_parent_commit(n) for k, n in p.items()}
                           for s, p in self.scales.items()}}

    def tool_versions(self):
        return {tool: first_line([tool, "--version"]) for tool in ("gcc", "meson", "ninja", "git")}


class Build(_OwnBuild):
    """meson setup and ninja of the project's sources exported at a fixed commit: the sources
    on the slow device, the build directory in scratch (memory), removed and made anew by
    every run, so that each builds everything."""
    name = "build"
    description = "a build of a real C project (this one's sources: meson, ninja, gcc per file)"
    version = 1

    def generate(self, dest, params, progress):
        for name, n in (("src", params["commit"]), ("other", params["other"])):
            _export(_first_parent_commit(n), os.path.join(dest, name))

    def touch_paths(self, root, params):
        return [os.path.join(root, "src")]

    def _build(self, src, scratch):
        # One process, so that the bench times (and `specx run` covers) the whole sequence;
        # the build directory is the same path in every run (a history belongs to the
        # arguments and the working directory).
        return Command(["sh", "-c", 'build=$1 src=$2; rm -rf "$build" && ' + _BUILD_STEPS,
                        "build", os.path.join(scratch, "build"), src], cwd=scratch)

    def command(self, root, params, scratch):
        return self._build(os.path.join(root, "src"), scratch)

    def other_command(self, root, params, scratch):
        return self._build(os.path.join(root, "other"), scratch)


class Ci(_OwnBuild):
    """A CI job: git clone of the project from a bare repository on the slow device (the
    commit as branch main, the earlier one as branch other) into scratch, its build, its unit
    tests and the built program's --version, all in one shell process."""
    name = "ci"
    description = "a CI-like sequence: clone this project, build it, test it"
    version = 1

    def generate(self, dest, params, progress):
        repo = os.path.join(dest, "repo.git")
        subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
        subprocess.run(["git", "-C", repo, "fetch", "-q", "--no-tags", _this_repository(),
                        f"{_first_parent_commit(params['commit'])}:refs/heads/main",
                        f"{_first_parent_commit(params['other'])}:refs/heads/other"],
                       check=True)
        subprocess.run(["git", "-C", repo, "symbolic-ref", "HEAD", "refs/heads/main"],
                       check=True)

    def touch_paths(self, root, params):
        return [os.path.join(root, "repo.git")]

    def _job(self, root, branch, scratch):
        # --no-local: through git's pack protocol, as a runner clones, not by copying files.
        script = ('work=$1 repo=$2 branch=$3 build=$1/build src=$1/src; rm -rf "$work" && '
                  'git -c safe.directory="$repo" clone -q --no-local --branch "$branch" '
                  '"$repo" "$src" && ' + _BUILD_STEPS + ' && '
                  'meson test -C "$build" --no-rebuild --print-errorlogs && '
                  '"$build/specx" --version')
        return Command(["sh", "-c", script, "ci", os.path.join(scratch, "ci"),
                        os.path.join(root, "repo.git"), branch], cwd=scratch)

    def command(self, root, params, scratch):
        return self._job(root, "main", scratch)

    def other_command(self, root, params, scratch):
        return self._job(root, "other", scratch)
