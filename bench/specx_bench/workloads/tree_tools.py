"""The programs people run on slow storage that `specx run`'s preload
cannot serve today, each over grep's source tree (the same data set, generated once), so that
their times compare with grep's: ripgrep (threaded, and -j1), git grep (threaded, over a
repository), restic (Go: its own system calls, static or not), a statically linked C
reader, a threaded Python loader, a C reader whose two threads each read their own files and
a Go reader in one goroutine."""
import contextlib
import os
import shutil
import subprocess

from specx_support import components
from .base import Command, first_line
from .grep import ABSENT, Grep


class TreeTool(Grep):
    """A tool reading grep's tree; `dataset` shares grep's data set (datasets.ensure)."""
    dataset = "grep"
    paper = ""
    program = ""   # the executable that must be installed

    def unavailable(self, data_dir):
        if not shutil.which(self.program):
            return f"{self.program} is not installed"
        return None

    def tool_versions(self):
        return {self.program: first_line([self.program, "--version"])}


class Rg(TreeTool):
    name = "rg"
    program = "rg"
    description = "ripgrep over a source tree, as many threads as it likes"
    threads = []

    def command(self, root, params, scratch):
        # -uu: no ignore files, hidden files too: every file is read, as grep -r reads them.
        return Command(["rg", "-uu", *self.threads, ABSENT, os.path.join(root, "src")],
                       ok_codes=(1,))


class RgOneThread(Rg):
    name = "rg-j1"
    description = "ripgrep over a source tree, one thread (-j1)"
    threads = ["-j1"]


class GitGrep(TreeTool):
    """git grep needs a repository: grep's tree committed (its own data set)."""
    name = "git-grep"
    dataset = None
    program = "git"
    description = "git grep over a repository of a source tree (threaded)"

    def generate(self, dest, params, progress):
        super().generate(dest, params, progress)
        env = {**os.environ, "GIT_AUTHOR_NAME": "specx", "GIT_AUTHOR_EMAIL": "specx@localhost",
               "GIT_COMMITTER_NAME": "specx", "GIT_COMMITTER_EMAIL": "specx@localhost"}
        for argv in (["init", "-q"], ["add", "src"], ["commit", "-q", "-m", "tree"]):
            subprocess.run(["git", "-C", dest, *argv], check=True, env=env)

    def touch_paths(self, root, params):
        return [root]

    def command(self, root, params, scratch):
        return Command(["git", "-c", f"safe.directory={root}", "-C", root, "grep", "-q",
                        ABSENT], ok_codes=(1,))


class Restic(TreeTool):
    """restic backup into a new local repository each run (a repository that already holds the
    tree would skip unchanged files by their metadata and read nothing)."""
    name = "restic"
    program = "restic"
    description = "restic backup (a Go program) of a source tree into a local repository"

    @contextlib.contextmanager
    def session(self, root, params, wrap, scratch, log):
        repo, password = os.path.join(scratch, "restic-repo"), os.path.join(scratch, "restic-pw")
        with open(password, "w") as f:
            f.write("specx-bench\n")
        with open(log, "a") as out:
            subprocess.run(["restic", "-r", repo, "--password-file", password, "init"],
                           check=True, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            shutil.rmtree(repo, ignore_errors=True)

    def command(self, root, params, scratch):
        return Command(["restic", "-r", os.path.join(scratch, "restic-repo"), "--password-file",
                        os.path.join(scratch, "restic-pw"), "--no-cache", "--quiet", "backup",
                        os.path.join(root, "src")])

    def tool_versions(self):
        return {"restic": first_line(["restic", "version"])}


class StaticReader(TreeTool):
    name = "static"
    program = "treesum-static"
    description = "a statically linked C reader of a source tree (bench/programs/treesum.c)"

    def unavailable(self, data_dir):
        if not components.find(self.program):
            return "treesum-static is not built (the C library cannot be linked statically here)"
        return None

    def command(self, root, params, scratch):
        return Command([components.find(self.program), os.path.join(root, "src")])

    def tool_versions(self):
        return {}


class PyLoader(TreeTool):
    name = "pyloader"
    program = "python3"
    description = "a threaded Python loader (ThreadPoolExecutor, 8 threads) of a source tree"

    def command(self, root, params, scratch):
        return Command(["python3", components.require("pyloader.py", "the pyloader workload"),
                        os.path.join(root, "src"), "8"])


class BuiltReader(TreeTool):
    """A reader built from bench/programs/ (found among the components), run on the tree."""
    options = []
    missing = ""   # why it may not be built

    def unavailable(self, data_dir):
        if not components.find(self.program):
            return f"{self.program} is not built ({self.missing})"
        return None

    def command(self, root, params, scratch):
        return Command([components.find(self.program), *self.options,
                        os.path.join(root, "src")])

    def tool_versions(self):
        return {}


class Reader2(BuiltReader):
    name = "reader2"
    program = "treeread"
    options = ["-t", "2"]
    missing = "the build is incomplete"
    description = ("a C reader of a source tree, two threads each reading its own files "
                   "(bench/programs/treeread.c)")


class GoRead(BuiltReader):
    name = "goread"
    program = "goread"
    missing = "Go was not installed when specx was built"
    description = "a Go reader of a source tree, one goroutine (bench/programs/goread)"

    def tool_versions(self):
        return {"go": first_line(["go", "version"])} if shutil.which("go") else {}
