"""sqlite: random point lookups over a SQLite database much larger than one lookup's needs,
through the sqlite3 library (bench/programs/sqlite-lookup.c). Each lookup walks the table's
B-tree to a leaf page that is almost never resident: one dependent random read per key."""
import os
import random
import sqlite3

from specx_support import components
from .base import Command, Workload


class Sqlite(Workload):
    name = "sqlite"
    paper = ""   # not in the paper: a key-value service's access pattern
    description = "random point lookups in a SQLite table"
    version = 1
    scales = {
        "full": {"rows": 1_000_000, "payload": 200, "lookups": 4000, "seed": 1},
        "demo": {"rows": 100_000, "payload": 200, "lookups": 500, "seed": 1},
        "test": {"rows": 2000, "payload": 100, "lookups": 50, "seed": 1},
    }

    def generate(self, dest, params, progress):
        rng, rows = random.Random(params["seed"]), params["rows"]
        db = sqlite3.connect(os.path.join(dest, "items.db"))
        try:
            db.execute("PRAGMA journal_mode = OFF")
            db.execute("PRAGMA synchronous = OFF")
            db.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, payload BLOB)")
            batch = 10_000
            for start in range(1, rows + 1, batch):
                # Payload lengths vary around the mean like real records do.
                db.executemany("INSERT INTO items VALUES (?, ?)",
                               ((i, rng.randbytes(rng.randint(params["payload"] // 2,
                                                              params["payload"] * 3 // 2)))
                                for i in range(start, min(start + batch, rows + 1))))
                progress(min(start + batch - 1, rows), rows, "rows")
            db.commit()
        finally:
            db.close()

    def command(self, root, params, scratch):
        return Command([components.require("sqlite-lookup", "the sqlite workload"),
                        "--seed", str(params["seed"]), os.path.join(root, "items.db"),
                        str(params["lookups"])])
