"""Programs that wait on metadata rather than data: du, find and ls -lR over a tree of many
small files in many directories. On a local disk their cold runs are short; on NFS or an
object store every listing page, lookup and link target is a round trip. Run them on a device
that charges for metadata: `specx bench du find ls-lR --preset nfs` (or object-store); on
the local presets metadata is free and they measure almost nothing."""
import os
import random

from .base import Command, Workload, first_line


class Du(Workload):
    """du -s over the tree: a listing of every directory and the size of every entry (which
    READDIRPLUS brings with the listing, as it does on NFS)."""
    name = "du"
    description = "du -s over a tree of many small files (a metadata device: --preset nfs)"
    version = 1
    # A source checkout's shape: a few levels of directories, tens of small files in each.
    scales = {
        "full": {"fanout": 10, "depth": 3, "files": 20, "links": 2, "max_bytes": 4096,
                 "seed": 1},
        "demo": {"fanout": 6, "depth": 3, "files": 15, "links": 1, "max_bytes": 4096,
                 "seed": 1},
        "test": {"fanout": 3, "depth": 2, "files": 5, "links": 1, "max_bytes": 1024,
                 "seed": 1},
    }

    def generate(self, dest, params, progress):
        rng = random.Random(params["seed"])
        dirs = tree_directories(os.path.join(dest, "tree"), params["fanout"], params["depth"])
        for n, d in enumerate(dirs):
            os.makedirs(d, exist_ok=True)
            for f in range(params["files"]):
                with open(os.path.join(d, f"f{f}.txt"), "wb") as out:
                    out.write(rng.randbytes(rng.randrange(params["max_bytes"] + 1)))
            for i in range(params["links"]):
                os.symlink(f"f{i}.txt", os.path.join(d, f"l{i}"))
            progress(n + 1, len(dirs), "directories")

    def touch_paths(self, root, params):
        return [os.path.join(root, "tree")]

    def argv(self, tree):
        return ["du", "-s", tree]

    def command(self, root, params, scratch):
        return Command(self.argv(os.path.join(root, "tree")))

    def tool_versions(self):
        program = self.argv("")[0]
        return {program: first_line([program, "--version"])}


class Find(Du):
    """find with a size test: a stat of every entry, none matching."""
    name = "find"
    dataset = "du"
    description = "find -size over a tree of many small files (a metadata device: --preset nfs)"

    def argv(self, tree):
        return ["find", tree, "-size", "+1000k"]


class LsLR(Du):
    """ls -lR: every listing, every entry's attributes and every link's target."""
    name = "ls-lR"
    dataset = "du"
    description = "ls -lR over a tree of many small files (a metadata device: --preset nfs)"

    def argv(self, tree):
        return ["ls", "-lR", tree]


def tree_directories(top, fanout, depth):
    """TOP and every directory below it, FANOUT children each, DEPTH levels down, parents
    before children."""
    dirs, level = [top], [top]
    for _ in range(depth):
        level = [os.path.join(d, f"d{i}") for d in level for i in range(fanout)]
        dirs.extend(level)
    return dirs
