"""sphinx: the paper's memory-control case (Fraser & Chang 2003 §6.2, Fig. 6, Table 5): a
recognizer-shaped program (bench/programs/sphinx.c) that loads model files sequentially, then
decodes frames, each a random page of a large language-model file plus random re-reads of the
models (its working set), in a memory cgroup from half to twice that working set. `sphinx` runs
at the working set's size; `sphinx-50` ... `sphinx-200` are the same program and data at 50 %
to 200 % of it: the Fig. 6 sweep."""
import os
import random

from specx_support import components
from .base import Command, Workload

CHUNK = 8 << 20


def _write_random(path, size, seed):
    rng = random.Random(seed)
    with open(path, "wb") as f:
        for done in range(0, size, CHUNK):
            f.write(rng.randbytes(min(CHUNK, size - done)))


class Sphinx(Workload):
    name = "sphinx"
    paper = "Sphinx"
    version = 1
    percent = 100
    # Working set: the models plus the lattice (anonymous, never evictable without swap).
    base = {
        "full": {"models": 6, "model_mib": 8, "lm_mib": 256, "frames": 4000, "lattice_kib": 8192},
        "demo": {"models": 4, "model_mib": 4, "lm_mib": 64, "frames": 1500, "lattice_kib": 2048},
        "test": {"models": 4, "model_mib": 2, "lm_mib": 8, "frames": 200, "lattice_kib": 1024},
    }

    def __init__(self, percent=100):
        self.percent = percent
        if percent != 100:
            self.name = f"sphinx-{percent}"
            self.dataset = "sphinx"
        self.description = (f"models loaded, then random lookups re-reading them; memory "
                            f"cgroup at {percent} % of the working set")
        self.scales = {scale: dict(p, memory_limit_mb=self.limit_mb(p))
                       for scale, p in self.base.items()}

    def limit_mb(self, params):
        working_set_kib = (params["models"] * params["model_mib"] << 10) + params["lattice_kib"]
        return max(1, working_set_kib * self.percent // 100 >> 10)

    def generate(self, dest, params, progress):
        total = params["models"] * params["model_mib"] + params["lm_mib"]
        for m in range(params["models"]):
            _write_random(os.path.join(dest, f"model{m}.bin"), params["model_mib"] << 20, m)
            progress((m + 1) * params["model_mib"], total, "MiB")
        _write_random(os.path.join(dest, "lm.bin"), params["lm_mib"] << 20, 1000)
        progress(total, total, "MiB")

    def command(self, root, params, scratch):
        return Command([components.require("sphinx", "the sphinx workload"),
                        "--frames", str(params["frames"]),
                        "--lattice-kib", str(params["lattice_kib"]), root])
