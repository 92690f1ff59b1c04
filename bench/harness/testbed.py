"""What every kind of run stands on: the tools checked, Vitrina built, a
PostgreSQL database of the run's own, servers started on the pinned cores,
and the throughput and CPU per request of a server under wrk's load.

CPU per request is read from /proc around the measured wrk run: the
server's own process (all threads), and the PostgreSQL backends serving it,
recognized by the application name in its connection URL.
"""

import argparse
import contextlib
import os
import shutil

from . import load, machine, vitrina
from .http import Request
from .pg import Postgres
from .proc import Failed, cpu_seconds, log

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
# Where the PostgreSQL backends of each target are recognized.
APPLICATION = {"vitrina-pg": "vitrina_bench", "postgraphile": "postgraphile_bench"}
CLIENTS = 8  # the throughput runs' concurrency


def sqlite_files(path: str) -> list[str]:
    """A SQLite database's file and its write-ahead log and index, as present."""
    return [name for name in (path, path + "-wal", path + "-shm") if os.path.exists(name)]


def remove_sqlite(path: str) -> None:
    for name in sqlite_files(path):
        os.remove(name)


class Testbed:
    def __init__(self, opts: argparse.Namespace, cleanup: contextlib.ExitStack):
        self.opts, self.cleanup = opts, cleanup
        self.pin = machine.pinning()
        self.pg = Postgres(opts.pg)
        self.db = f"vitrina_bench_{os.getpid()}"
        self.workdir = os.path.join(BENCH, ".work")
        self.binary = ""  # set by prepare()

    def prepare(self, database: bool = True) -> None:
        """Checks the tools, empties the work folder, builds Vitrina and
        (unless `database` is false) creates the run's database, dropped at
        the end unless --keep."""
        for tool in ("psql", "pgbench", "pg_lsclusters", "taskset", "cargo"):
            if not shutil.which(tool):
                raise Failed(f"{tool} is not installed")
        load.ensure_wrk()
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        if self.pin.load is None:
            log("warning: one CPU only; the load tool cannot get a core of its own")
        self.binary = vitrina.build(REPO, self.opts.build)
        if not database:
            return
        self.pg.create(self.db)
        if self.opts.keep:
            log(f"keeping PostgreSQL database {self.db} (until the next run)")
        else:
            self.cleanup.callback(self.pg.drop, self.db)

    def server(self, name: str, database_url: str, binary: str | None = None,
               limits: dict | None = None, cache_mb: int = 0) -> vitrina.Server:
        """`vitrina serve` (this run's build unless `binary` says otherwise;
        the per-account limits out of the way unless `limits` are given; the
        response cache off unless `cache_mb` is given), stopped at the end of
        the run at the latest."""
        server = vitrina.Server(name, binary or self.binary, database_url, self.pin,
                                self.workdir, self.opts.pool, limits, cache_mb)
        self.cleanup.callback(server.stop)
        return server

    def warm_up(self, server, key: str | None, request: Request, tag: str) -> None:
        if self.opts.warmup:
            load.wrk(server.base, request, key, clients=CLIENTS, seconds=self.opts.warmup,
                     pinning=self.pin, workdir=self.workdir, name=tag + ".warmup")

    def throughput(self, server, application: str | None, key: str | None,
                   request: Request, tag: str) -> dict:
        """Requests per second at 8 clients, and the CPU per request of the
        server and of the backends serving `application` (None: a server
        with no PostgreSQL backends, whose database CPU is its own)."""
        server_before, db_before = self._cpu(server, application)
        eight = load.wrk(server.base, request, key, clients=CLIENTS, seconds=self.opts.duration,
                         pinning=self.pin, workdir=self.workdir, name=tag + ".c8")
        server_after, db_after = self._cpu(server, application)
        # Backends that appeared during the run count from zero.
        db_cpu = sum(after - db_before.get(pid, 0.0) for pid, after in db_after.items())
        server_cpu = server_after - server_before
        return {
            "rps": eight["rps"],
            "server_cpu_ms": server_cpu * 1000 / eight["requests"],
            "db_cpu_ms": db_cpu * 1000 / eight["requests"],
            "cpu_ms": (server_cpu + db_cpu) * 1000 / eight["requests"],
        }

    def _cpu(self, server, application: str | None) -> tuple[float, dict[int, float]]:
        backends = self.pg.backend_cpu(self.db, application) if application else {}
        return cpu_seconds(server.pid), backends
