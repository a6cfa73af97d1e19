"""grep: GNU grep -r for a string that does not occur, over a generated source tree — the
paper's Agrep over the Linux 2.4.5 tree (8,971 files, 105 MB; Table 1). Every file is read
from start to end, one after another: a stall per file that readahead cannot hide."""
import os
import random

from . import text
from .base import Command, Workload, first_line

ABSENT = "specx_absent_needle_7f3a"


class Grep(Workload):
    name = "grep"
    paper = "Agrep"
    description = "text search (grep -r) over a source tree"
    version = 1
    # Linux 2.4.5 averaged about 12 KB per file in ~300 directories.
    scales = {
        "full": {"files": 8000, "dirs": 320, "mean_kb": 12, "seed": 1},
        "demo": {"files": 1500, "dirs": 60, "mean_kb": 12, "seed": 1},
        "test": {"files": 50, "dirs": 5, "mean_kb": 4, "seed": 1},
    }

    def generate(self, dest, params, progress):
        rng = random.Random(params["seed"])
        pool = text.source_lines(rng, 4000)
        dirs = [os.path.join(dest, "src", *(text.identifier(rng) + f"{i}"
                                            for _ in range(1 + i % 3)))[: 200]
                for i in range(params["dirs"])]
        for i in range(params["files"]):
            # Sizes are skewed like real sources: many small files, a few large ones.
            size = int(rng.lognormvariate(0, 0.9) * params["mean_kb"] * 1024 * 0.67)
            body = []
            length = 0
            while length < size:
                line = rng.choice(pool)
                body.append(line)
                length += len(line) + 1
            path = os.path.join(rng.choice(dirs), f"{text.identifier(rng)}_{i}.c")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("\n".join(body) + "\n")
            progress(i + 1, params["files"], "files")

    def touch_paths(self, root, params):
        return [os.path.join(root, "src")]

    def command(self, root, params, scratch):
        # Exit status 1, "no line selected", is the expected outcome.
        return Command(["grep", "-r", ABSENT, os.path.join(root, "src")], ok_codes=(1,))

    def tool_versions(self):
        return {"grep": first_line(["grep", "--version"])}
