"""Everyday programs on slow storage whose speculative copies cannot
foresee their reads, where specx must cost nothing. The sqlite3 shell (an indexed lookup of
400 keys and an unindexed scan: SQLite checks every page, and a copy dies of the garbage it
sees in place of a page not in memory), Python importing a large package set, and the C
compiler reading system headers."""
import importlib.util
import os
import random
import shutil
import sqlite3
import sysconfig

from .base import Command, Workload, first_line

KEYS = 400


class Sqlite3Shell(Workload):
    """The real sqlite3 command-line shell over a table with an index on k."""
    name = "sqlite3-index"
    dataset = "sqlite3"
    description = "the sqlite3 shell: an indexed lookup of 400 keys"
    version = 1
    scales = {
        "full": {"rows": 300_000, "seed": 1},
        "demo": {"rows": 100_000, "seed": 1},
        "test": {"rows": 3_000, "seed": 1},
    }

    def unavailable(self, data_dir):
        return None if shutil.which("sqlite3") else "the sqlite3 shell is not installed"

    def generate(self, dest, params, progress):
        rng = random.Random(params["seed"])
        db = sqlite3.connect(os.path.join(dest, "t.db"))
        try:
            db.execute("PRAGMA journal_mode = OFF")
            db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)")
            db.executemany("INSERT INTO t VALUES (?, ?, ?)",
                           ((i, rng.randrange(10 ** 9), "x" * rng.randint(50, 150))
                            for i in range(params["rows"])))
            db.execute("CREATE INDEX tk ON t(k)")
            db.commit()
            keys = [k for (k,) in db.execute("SELECT k FROM t")]
        finally:
            db.close()
        with open(os.path.join(dest, "keys"), "w") as f:
            f.write(",".join(map(str, random.Random(params["seed"]).sample(keys, KEYS))))
        progress(params["rows"], params["rows"], "rows")

    def query(self, root):
        with open(os.path.join(root, "keys")) as f:
            return f"SELECT count(*), sum(length(v)) FROM t WHERE k IN ({f.read()});"

    def touch_paths(self, root, params):
        return [os.path.join(root, "t.db")]

    def command(self, root, params, scratch):
        return Command(["sqlite3", os.path.join(root, "t.db"), self.query(root)])

    def tool_versions(self):
        return {"sqlite3": first_line(["sqlite3", "--version"])}


class Sqlite3Scan(Sqlite3Shell):
    name = "sqlite3-scan"
    description = "the sqlite3 shell: an unindexed scan of the whole table"

    def query(self, root):
        return "SELECT count(*) FROM t WHERE v LIKE '%zzz%';"


# Packages whose import reads many files: matplotlib's closure (numpy, PIL, fontTools, ...)
# and pytest's, all installed by scripts/ensure-deps.
PACKAGES = ["numpy", "matplotlib", "PIL", "fontTools", "dateutil", "pyparsing", "cycler",
            "kiwisolver", "contourpy", "packaging", "six", "pytest", "_pytest", "pluggy",
            "iniconfig"]


class PyImport(Workload):
    """python3 importing PACKAGES from a copy of them on the slow device (the standard library
    stays where it is)."""
    name = "pyimport"
    description = "python3 importing matplotlib, numpy, pytest and their dependencies"
    version = 1
    scales = {"full": {}, "demo": {}, "test": {}}

    def generator_inputs(self):
        return {"python": first_line(["python3", "--version"]), "packages": PACKAGES}

    def generate(self, dest, params, progress):
        site = os.path.join(dest, "site")
        os.makedirs(site)
        purelib = sysconfig.get_paths()["purelib"]
        for i, name in enumerate(PACKAGES):
            spec = importlib.util.find_spec(name)
            if spec is None:
                raise SystemExit(f"specx bench: pyimport needs the Python package {name}")
            source = spec.submodule_search_locations[0] if spec.submodule_search_locations \
                else spec.origin
            copy = shutil.copytree if os.path.isdir(source) else shutil.copy2
            copy(source, os.path.join(site, os.path.basename(source)))
            progress(i + 1, len(PACKAGES), "packages")
        # Compiled extensions find their bundled libraries beside them ($ORIGIN/../x.libs).
        for entry in os.listdir(purelib):
            if entry.endswith(".libs"):
                shutil.copytree(os.path.join(purelib, entry), os.path.join(site, entry))

    def touch_paths(self, root, params):
        return [os.path.join(root, "site")]

    def command(self, root, params, scratch):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); "
                "import matplotlib.pyplot, numpy, PIL.Image, pytest, fontTools.ttLib; "
                "print(matplotlib.__file__.startswith(sys.argv[1]))")
        return Command(["python3", "-c", code, os.path.join(root, "site")])

    def other_command(self, root, params, scratch):
        # python3 reading matplotlib's data files (fonts, images, sample data), which the
        # imports do not read: the same program's start-up, then other files.
        code = ("import os, sys\nfor d, _, fs in sorted(os.walk(sys.argv[1])):\n"
                "    for f in sorted(fs):\n        open(os.path.join(d, f), 'rb').read()\n")
        return Command(["python3", "-c", code,
                        os.path.join(root, "site", "matplotlib", "mpl-data")])

    def tool_versions(self):
        return {"python3": first_line(["python3", "--version"])}


# Headers a large C program includes; cc reads each, and the headers they include.
HEADERS = ["stdio.h", "stdlib.h", "string.h", "math.h", "pthread.h", "signal.h", "fcntl.h",
           "unistd.h", "errno.h", "time.h", "locale.h", "wchar.h", "regex.h", "glob.h",
           "netdb.h", "ifaddrs.h", "termios.h", "complex.h", "sys/socket.h", "sys/mman.h",
           "sys/stat.h", "sys/wait.h", "sys/epoll.h", "sys/inotify.h", "sys/resource.h",
           "netinet/in.h", "netinet/tcp.h", "arpa/inet.h", "linux/fs.h", "linux/if.h",
           "linux/netlink.h", "linux/input.h", "linux/perf_event.h", "linux/bpf.h",
           "linux/videodev2.h", "linux/ethtool.h", "linux/nl80211.h", "immintrin.h"]


class CcHeaders(Workload):
    """cc -fsyntax-only over one file including HEADERS, with the system's and the compiler's
    include directories copied onto the slow device."""
    name = "cc-headers"
    description = "cc -fsyntax-only over a file including 38 system headers"
    version = 1
    scales = {"full": {}, "demo": {}, "test": {}}

    def compiler_include(self):
        return first_line(["gcc", "-print-file-name=include"])

    def generator_inputs(self):
        return {"gcc": first_line(["gcc", "--version"])}

    def generate(self, dest, params, progress):
        shutil.copytree("/usr/include", os.path.join(dest, "include"), symlinks=True)
        shutil.copytree(self.compiler_include(), os.path.join(dest, "cc-include"))
        with open(os.path.join(dest, "all.c"), "w") as f:
            f.write("".join(f"#include <{h}>\n" for h in HEADERS) + "int main(void) { return 0; }\n")
        progress(1, 1, "include trees")

    def command(self, root, params, scratch):
        return Command(["gcc", "-fsyntax-only", "-nostdinc", "-isystem",
                        os.path.join(root, "cc-include"), "-isystem",
                        os.path.join(root, "include", "x86_64-linux-gnu"), "-isystem",
                        os.path.join(root, "include"), os.path.join(root, "all.c")])

    def tool_versions(self):
        return {"gcc": first_line(["gcc", "--version"])}
