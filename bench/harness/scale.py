"""`bench/run --scale 100000,1000000`: how each request's latency grows
with the catalog (issue 28).

For each database (PostgreSQL, SQLite), and in it each size, smallest
first: create an empty database of its own (`scale_<size>_<pid>`, or a
SQLite file of that name), seed it with `vitrina seed` (timed), measure its
size on disk, make today's snapshot and an API key, serve it, find the
parameters of the query set (scale_set.py) and check every answer (the
same signature from both databases of one size, the same rows from REST
and GraphQL). Then, with every catalog of that database served, measure
each request's median latency with wrk at 1 client (latency, not
throughput), the catalogs taking turns (see `measure`); stop the servers
and drop the databases before the next database's, so that one database's
catalogs at a time take the disk.

A request that answers wrongly or is refused at some size is not measured
there: it is reported as failed, and the run exits with 1 once the tables
are printed.
"""

import argparse
import contextlib
import os
import statistics
import time
from dataclasses import dataclass

from . import cases, fairness, load, machine, report, scale_set, vitrina, write_side
from .proc import Failed, log
from .testbed import BENCH, REPO, Testbed, remove_sqlite, sqlite_files

BACKENDS = {"pg": "PostgreSQL", "sqlite": "SQLite"}


@dataclass
class Catalog:
    """One seeded catalog, served while its database is measured."""

    size: int
    url: str
    server: vitrina.Server
    key: str
    cases: dict  # case key -> Case, those that answered rightly
    figures: dict  # what the report shows: seeding, disk, parameters, latency...


class Scale(Testbed):
    def __init__(self, opts: argparse.Namespace, cleanup: contextlib.ExitStack):
        super().__init__(opts, cleanup)
        self.workdir = os.path.join(BENCH, ".work", "scale")
        self.r: dict = {"options": opts, "machine": machine.describe(), "catalogs": {},
                        "titles": {}, "failures": []}
        self.first: scale_set.ScaleParams | None = None  # found on the first catalog
        self.signatures: dict[int, dict] = {}  # per size, the first database's answers

    def execute(self) -> dict:
        self.prepare(database=False)
        self.r.update(pg_version=self.pg.version(), commit=report.commit(REPO))
        for backend in self.opts.db:
            drops = []
            try:
                catalogs = [self.catalog(backend, size, drops) for size in self.opts.scale]
                self.measure(backend, catalogs)
                for catalog in catalogs:
                    catalog.server.stop()
                largest = catalogs[-1]
                largest.figures["fairness"] = fairness.measure(self, backend, largest,
                                                               largest.url)
                largest.figures["write"] = write_side.measure(self, backend, largest)
            finally:
                for drop in drops:
                    drop()
            self.r["catalogs"][backend] = {c.size: c.figures for c in catalogs}
        return self.r

    # --- one catalog ------------------------------------------------------

    def catalog(self, backend: str, size: int, drops: list) -> Catalog:
        """Seeded, measured on disk, served, its answers checked."""
        name, tag = f"scale_{size}_{os.getpid()}", f"{backend}-{size}"
        url = self.create(backend, name, drops)
        log(f"{BACKENDS[backend]}, {size:,} products: seeding (seed {self.opts.seed})")
        started = time.monotonic()
        summary = vitrina.finish_seed(
            vitrina.seed(self.binary, url, size, self.opts.seed), tag)
        figures = {"seed_s": time.monotonic() - started, "seed_summary": summary,
                   "disk_bytes": self.disk(backend, name), "latency": {}, "failed": {}}
        # Makes today's snapshot now, so the server's first job tick is idle.
        vitrina.jobs_run_once(self.binary, url)
        key = vitrina.create_key(self.binary, url)
        server = self.server(f"scale-{tag}", url)
        params = scale_set.discover(server.base, key, size, self.opts.scale[0], self.first)
        self.first = self.first or params
        signatures = self.signatures.setdefault(size, {})
        right = self.check(backend, size, server.base, key, scale_set.scale_cases(params),
                           signatures, figures["failed"])
        figures["params"] = params
        return Catalog(size, url, server, key, {case.key: case for case in right}, figures)

    def create(self, backend: str, name: str, drops: list) -> str:
        """An empty database; its drop is added to `drops` (and to the
        cleanup, in case the run fails first) unless --keep."""
        if backend == "pg":
            self.pg.create(name)
            url = self.pg.url(name, "vitrina_bench_scale")
            drop = lambda: self.pg.drop(name)  # noqa: E731
        else:
            path = os.path.join(self.workdir, name + ".db")
            url, drop = f"sqlite://{path}", lambda: remove_sqlite(path)  # noqa: E731
        if self.opts.keep:
            log(f"keeping {BACKENDS[backend]} database {name} (until the next run)")
        else:
            drops.append(drop)
            self.cleanup.callback(drop)
        return url

    def disk(self, backend: str, name: str) -> int:
        """Bytes the seeded database takes (PostgreSQL: the database's size;
        SQLite: its file, write-ahead log included)."""
        if backend == "pg":
            return int(self.pg.sql(f"SELECT pg_database_size('{name}')"))
        path = os.path.join(self.workdir, name + ".db")
        return sum(os.path.getsize(f) for f in sqlite_files(path))

    def check(self, backend: str, size: int, base: str, key: str, query_set: list,
              signatures: dict, failed: dict) -> list:
        """The cases that answer rightly: each checked, its signature the
        same as the other database's at this size, REST and GraphQL agreeing."""
        answers = {}
        for case in query_set:
            self.r["titles"].setdefault(case.key, case.title)
            try:
                signature = case.check(cases.call(base, case.request, key))
                expected = signatures.setdefault(case.key, signature)
                cases.expect(signature == expected,
                             f"answers {signature}, the other database {expected}")
                answers[case.key] = signature
            except Failed as error:
                self.fail(failed, backend, size, case, str(error))
            except (KeyError, TypeError) as error:  # an answer of another shape
                self.fail(failed, backend, size, case,
                          f"unexpected answer ({type(error).__name__}: {error})")
        for pairs, field in ((scale_set.SAME_ROWS, "ids"), (scale_set.SAME_TOTAL, "total")):
            for one, other in pairs:
                if one in answers and other in answers and \
                        answers[one][field] != answers[other][field]:
                    for case in query_set:
                        if case.key in (one, other):
                            self.fail(failed, backend, size, case,
                                      f"{one} and {other} disagree on {field}")
                            answers.pop(case.key)
        return [case for case in query_set if case.key in answers]

    def fail(self, failed: dict, backend: str, size: int, case, message: str) -> None:
        failed[case.key] = message
        self.r["failures"].append(f"{BACKENDS[backend]}, {size:,} products, {case.title}: "
                                  f"{message[:500]}")
        log(f"FAILED {self.r['failures'][-1]}")

    # --- latency ----------------------------------------------------------

    def measure(self, backend: str, catalogs: list[Catalog]) -> None:
        """Per request: a warm-up on each catalog, then --rounds rounds of
        wrk at 1 client on each catalog in turn, the order flipped from one
        round to the next, so that the machine's drift weighs on every size
        alike; the median of the rounds' medians is the figure."""
        log(f"{BACKENDS[backend]}: measuring {len(self.r['titles'])} requests on "
            f"{len(catalogs)} catalogs, {self.opts.rounds} round(s)")
        for key in self.r["titles"]:
            rounds: dict[int, list[float]] = {c.size: [] for c in catalogs}
            turns = [(c, self.opts.warmup, "warmup") for c in catalogs] if self.opts.warmup else []
            for number in range(self.opts.rounds):
                turns += [(c, self.opts.duration, f"r{number + 1}")
                          for c in (catalogs if number % 2 == 0 else catalogs[::-1])]
            for c, seconds, what in turns:
                if key not in c.cases:
                    continue
                try:
                    run = load.wrk(c.server.base, c.cases[key].request, c.key, clients=1,
                                   seconds=seconds, pinning=self.pin, workdir=self.workdir,
                                   name=f"{backend}-{c.size}.{key}.{what}")
                except Failed as error:
                    self.fail(c.figures["failed"], backend, c.size, c.cases.pop(key), str(error))
                    continue
                if what != "warmup":
                    rounds[c.size].append(run["p50_us"] / 1000)
            for c in catalogs:
                if key in c.cases:
                    c.figures["latency"][key] = {"p50_ms": statistics.median(rounds[c.size]),
                                                 "rounds_ms": rounds[c.size]}
