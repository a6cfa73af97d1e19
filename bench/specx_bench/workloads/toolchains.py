"""Toolchains over real trees this machine has: many small files with decisions in between,
the programs a copy of the program cannot run ahead of (docs/design/history.md): gofmt over
the Go compiler's sources, npm listing its own dependency tree (Node.js), and git log -p over
a real repository's packs (this project's own history). Their data sets are copies of what is
installed (or, for git, a clone), so they are only as fixed as the installed version, which
their stamps record."""
import os
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


class GitLog(Workload):
    """git log -p over the first COMMITS commits of this project's history, cloned (one pack,
    which git maps): the diff of each commit reads the blobs of both sides."""
    name = "git-log"
    description = "git log -p over a real repository's history (packs, mapped)"
    version = 1
    scales = {"full": {"commits": 700}, "demo": {"commits": 300}, "test": {"commits": 40}}

    def _commit(self, commits):
        """The COMMITS-th commit from the root along the first parents (fixed, whatever is
        committed later)."""
        repo = _this_repository()
        listing = _output(["git", "-C", repo, "rev-list", "--first-parent", "--reverse",
                           "HEAD"]).split() if repo else []
        return listing[min(commits, len(listing)) - 1] if listing else ""

    def unavailable(self, data_dir):
        if not shutil.which("git") or not _this_repository():
            return "needs git and the project's own repository (a git clone of specx)"
        return None

    def generator_inputs(self):
        return {"commit": {s: self._commit(p["commits"]) for s, p in self.scales.items()}}

    def generate(self, dest, params, progress):
        repo = os.path.join(dest, "repo")
        subprocess.run(["git", "clone", "-q", "--no-local", "--no-checkout", _this_repository(),
                        repo], check=True)
        subprocess.run(["git", "-C", repo, "update-ref", "refs/heads/bench",
                        self._commit(params["commits"])], check=True)

    def touch_paths(self, root, params):
        return [os.path.join(root, "repo")]

    def command(self, root, params, scratch):
        repo = os.path.join(root, "repo")
        return Command(["git", "-c", f"safe.directory={repo}", "-C", repo, "log", "-p",
                        "--output=/dev/null", "bench"])

    def tool_versions(self):
        return {"git": first_line(["git", "--version"])}
