"""postgres: a real PostgreSQL server building indexes over AS3AP-like relations — the paper's
PostgreSQL benchmark (OSDB's AS3AP subset: four relations in 500 MB; "generates a set of indexes
for each relation", Table 1). Each index build scans its relation with 8 KiB reads.

The server runs as user `postgres` (it refuses root) with its data directory on slowfs; the
harness starts it before every run, so that the server's own buffers are as cold as the page
cache, and stops it after. Only the index builds are timed; the indexes are dropped after the
run, so every run starts from the same database."""
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time

from .base import Command, Workload, first_line

USER = "postgres"
DATABASE = "as3ap"
RELATIONS = ("uniques", "hundred", "tenpct", "updates")
# Settings for a benchmark server: no durability work (nothing here must survive a crash),
# no autovacuum or parallel workers to add noise, sorts in memory so that index builds read
# the relation and nothing else.
SETTINGS = ("listen_addresses=", "fsync=off", "full_page_writes=off", "synchronous_commit=off",
            "wal_level=minimal", "max_wal_senders=0", "autovacuum=off",
            "max_parallel_maintenance_workers=0", "maintenance_work_mem=512MB",
            "min_wal_size=32MB")
# AS3AP's columns; the distributions follow the relation (all distinct, 100 values, 10 %).
COLUMNS = ("col_key int, col_int int, col_signed int, col_float real, col_double float8, "
           "col_decim numeric(18,2), col_date date, col_code char(10), col_name char(20), "
           "col_address varchar(80)")
# Four single-column B-tree indexes per relation, on columns AS3AP's queries select by.
INDEXES = ("col_key", "col_int", "col_code", "col_name")


def bindir():
    """The newest installed PostgreSQL's program directory (Debian layout)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if not found:
        raise SystemExit("specx bench: the postgres workload needs PostgreSQL "
                         "(Debian package postgresql); it is not installed")
    return os.path.dirname(found[-1])


def fill_sql(relation, rows):
    """INSERT ... SELECT generating ROWS deterministic AS3AP-like tuples (a function of the row
    number only, so every generation gives the same relation)."""
    distinct = {"hundred": 100, "tenpct": max(rows // 10, 1)}.get(relation, rows)
    # A multiplicative permutation of 1..rows spreads keys without repeating them.
    perm = f"((i::int8 * 40503) % {rows} + 1)"
    value = perm if distinct == rows else f"({perm} % {distinct} + 1)"
    return (f"INSERT INTO {relation} SELECT i, {value}, {value} - {distinct // 2}, "
            f"{value} / 7.0, {value} / 13.0, ({value} % 100000) / 100.0, "
            f"date '1990-01-01' + ({value} % 3650)::int, "
            f"substr(md5({value}::text), 1, 10), substr(md5(({value} * 7)::text), 1, 20), "
            f"repeat(md5((i * 3)::text), 1 + i % 2) "
            f"FROM generate_series(1, {rows}) AS i")


class Postgres(Workload):
    name = "postgres"
    paper = "PostgreSQL"
    description = "index builds over AS3AP relations (PostgreSQL server)"
    version = 2
    server = USER
    scales = {
        "full": {"rows": 500_000},
        "demo": {"rows": 100_000},
        "test": {"rows": 2000},
    }

    def generator_inputs(self):
        return {"postgres": first_line([os.path.join(bindir(), "postgres"), "--version"])}

    def generate(self, dest, params, progress):
        require_reachable(dest)
        pgdata = os.path.join(dest, "pgdata")
        shutil.chown(dest, USER)
        run_as_postgres([os.path.join(bindir(), "initdb"), "-D", pgdata, "--no-sync",
                         "-A", "trust", "-U", USER, "--locale=C", "-E", "UTF8"])
        parent = tempfile.mkdtemp(prefix="specx-bench-postgres-")
        os.chmod(parent, 0o755)
        sock = socket_dir(parent)
        try:
            with server(pgdata, list, subprocess.DEVNULL, sock):
                psql(sock, "postgres", [f"CREATE DATABASE {DATABASE}"])
                for n, rel in enumerate(RELATIONS):
                    # One transaction: with wal_level=minimal the load then writes no WAL.
                    psql(sock, DATABASE, [f"CREATE TABLE {rel} ({COLUMNS}); "
                                          + fill_sql(rel, params["rows"])])
                    progress(n + 1, len(RELATIONS), "relations loaded")
                # Frozen and analysed now, so that no run writes hint bits or statistics.
                psql(sock, DATABASE, ["VACUUM (FREEZE, ANALYZE)", "CHECKPOINT"])
        finally:
            shutil.rmtree(parent, ignore_errors=True)

    def touch_paths(self, root, params):
        return [os.path.join(root, "pgdata", "base")]

    def command(self, root, params, scratch):
        builds = [f"CREATE INDEX {rel}_{col} ON {rel} ({col})"
                  for rel in RELATIONS for col in INDEXES]
        return psql_command(socket_dir(scratch), DATABASE, builds + [check_sql(params["rows"])])

    @contextlib.contextmanager
    def session(self, root, params, wrap, scratch, log):
        require_reachable(root)
        with open(log, "ab") as out, server(os.path.join(root, "pgdata"), wrap, out,
                                            socket_dir(scratch)) as sock:
            try:
                yield
            finally:
                psql(sock, DATABASE, [f"DROP INDEX IF EXISTS {rel}_{col}"
                                      for rel in RELATIONS for col in INDEXES])

    def tool_versions(self):
        return self.generator_inputs()


def check_sql(rows):
    """A statement that fails (and so fails the run: psql stops on errors) unless every index
    was built and answers like its relation: a range of keys looked up through each col_key
    index must find one row per key. Cheap: the new indexes are still in memory."""
    want = min(rows, 1000)
    checks = " AND ".join(f"(SELECT count(*) FROM {rel} WHERE col_key <= {want}) = {want}"
                          for rel in RELATIONS)
    indexes = ", ".join(f"'{rel}_{col}'" for rel in RELATIONS for col in INDEXES)
    return ("SET enable_seqscan = off; SET enable_bitmapscan = off; "
            "DO $$ BEGIN IF NOT ((SELECT count(*) FROM pg_index i JOIN pg_class c "
            f"ON c.oid = i.indexrelid WHERE i.indisvalid AND c.relname IN ({indexes})) = "
            f"{len(RELATIONS) * len(INDEXES)} AND {checks}) THEN "
            "RAISE EXCEPTION 'specx bench: the index builds gave wrong results'; "
            "END IF; END $$")


def require_reachable(path):
    """Fails clearly when the server's user cannot reach PATH (a data directory under a
    private home directory, say)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent != "/":
        if not os.stat(parent).st_mode & 0o001:
            raise SystemExit(f"specx bench: user {USER} cannot reach {path}: {parent} is not "
                             "searchable by others; use a --data-dir such as /var/cache/specx/bench")
        parent = os.path.dirname(parent)


def socket_dir(parent):
    """The server's Unix socket directory under PARENT, owned by the server's user."""
    path = os.path.join(parent, "pgsocket")
    os.makedirs(path, exist_ok=True)
    shutil.chown(path, USER)
    return path


def run_as_postgres(argv):
    proc = subprocess.run(argv, user=USER, group=USER, extra_groups=[], cwd="/",
                          capture_output=True, text=True)
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()
        raise SystemExit(f"specx bench: {os.path.basename(argv[0])} failed: "
                         f"{detail[-1] if detail else 'exit status %d' % proc.returncode}")
    return proc


def psql_command(sock, database, statements):
    argv = [os.path.join(bindir(), "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", sock,
            "-U", USER, "-d", database]
    for s in statements:
        argv += ["-c", s]
    return Command(argv, user=USER, cwd="/")


def psql(sock, database, statements):
    run_as_postgres(psql_command(sock, database, statements).argv)


@contextlib.contextmanager
def server(pgdata, wrap, out, sock):
    """A PostgreSQL server on PGDATA (its argv passed through WRAP, output to OUT, socket in
    SOCK) for the block; yields SOCK. Stopped (fast shutdown) afterwards."""
    argv = [os.path.join(bindir(), "postgres"), "-D", pgdata, "-k", sock]
    for setting in SETTINGS:
        argv += ["-c", setting]
    proc = subprocess.Popen(wrap(argv), user=USER, group=USER, extra_groups=[], cwd="/",
                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, sock)
        yield sock
    finally:
        subprocess.run([os.path.join(bindir(), "pg_ctl"), "stop", "-D", pgdata, "-m", "fast",
                        "-w", "-t", "120"], user=USER, group=USER, extra_groups=[], cwd="/",
                       capture_output=True)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(proc, sock, timeout=300):
    """Waits until the server accepts connections (a cold start on slow storage is slow)."""
    deadline = time.monotonic() + timeout
    isready = [os.path.join(bindir(), "pg_isready"), "-q", "-h", sock, "-U", USER]
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"specx bench: the PostgreSQL server exited during start-up "
                             f"(exit status {proc.returncode}); see its log")
        if subprocess.run(isready, capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise SystemExit("specx bench: the PostgreSQL server did not start within "
                     f"{timeout} s")
