"""`bench/run`: options, and the run from build to report.

A run: build Vitrina; create a PostgreSQL database and a SQLite file and
seed both with `vitrina seed`; capture the SQL of every request of the set
with statement logging on (Vitrina, and PostGraphile with --peer); replay
that SQL with pgbench for the floor and EXPLAIN ANALYZE it; serve each
target again with logging off, check every answer, then drive the set
with wrk at 1 and 8 clients; measure memory, the merge pass and webhook
delivery; report.
With --baseline, a comparison instead (compare.py): one database, the
current and an older binary measured in turn on a few queries. With
--scale, the scale mode instead (scale.py): each request's latency on
catalogs of several sizes; --smoke runs it after its full run, at tiny sizes.
Everything the run creates is removed at the end, also when it fails.
"""

import argparse
import contextlib
import os
import shlex
import signal
import sys
import time

from . import (capture, cases, compare, floor, load, machine, merge, peer, report, scale,
               scale_report, vitrina, webhooks)
from .http import Request
from .proc import Failed, log, peak_rss_mb, run
from .testbed import APPLICATION, BENCH, REPO, Testbed, remove_sqlite

# The response cache of the hot runs: the default of `serve`.
HOT_CACHE_MB = 64

SMOKE_SIZES = [300, 600]  # the scale mode's sizes in a smoke run


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run",
        description="Benchmarks Vitrina (PostgreSQL and SQLite) against the raw SQL "
                    "floor and, with --peer, PostGraphile. See bench/README.md.")
    parser.add_argument("--products", type=int, help="dataset size (default 100000; smoke 300)")
    parser.add_argument("--seed", type=int, default=42, help="generator seed (default 42)")
    parser.add_argument("--peer", action="store_true",
                        help="also install and measure PostGraphile (npm)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny dataset, 1 s runs, test build, no peer, no README (CI)")
    parser.add_argument("--duration", type=int,
                        help="seconds per measured run (default 10; --scale 5; smoke 1)")
    parser.add_argument("--build", choices=["release", "test"],
                        help="release: cargo build --release (default); test: the binary "
                             "cargo test builds, nothing extra to compile after the tests (smoke)")
    parser.add_argument("--pool", type=int,
                        help="VITRINA_DB_MAX_CONNECTIONS of the servers (default: Vitrina's)")
    parser.add_argument("--merge-items", type=int,
                        help="submissions of the merge figure (default 2000; smoke 200)")
    parser.add_argument("--webhook-sessions", type=int,
                        help="completed sessions of the webhook figure, each delivered to "
                             "5 subscriptions (default 400; smoke 20)")
    parser.add_argument("--pg", default=os.environ.get(
        "BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="admin URL of the PostgreSQL server (default: local, user postgres)")
    parser.add_argument("--rounds", type=int,
                        help="--baseline: turns of each binary on each query; --scale: turns "
                             "of each catalog on each request (default 3; smoke 1)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the databases afterwards (their names are printed)")
    parser.add_argument("--no-readme", action="store_true",
                        help="print the tables only; leave bench/README.md alone")
    comparison = parser.add_argument_group(
        "comparison with an older binary",
        "--baseline replaces the full run: on one PostgreSQL database, seeded by the "
        "baseline and migrated forward by this run's build, each query is measured with "
        "the baseline and the current binary in turn, a fresh server each time (warm-up, "
        "then wrk at 8 clients with CPU read from /proc), for --rounds rounds; prints "
        "server CPU per request and throughput, medians and ratios current / baseline. "
        "bench/README.md is left alone.")
    comparison.add_argument("--baseline", metavar="BINARY",
                            help="the older vitrina binary to compare against, "
                                 "e.g. a release build of an earlier commit")
    comparison.add_argument("--queries", default=",".join(compare.QUERIES),
                            help="comma-separated keys of the query set to compare "
                                 f"(default {','.join(compare.QUERIES)})")
    growth = parser.add_argument_group(
        "scale mode",
        "--scale replaces the full run: for each size and database, a catalog of its own "
        "is seeded, served, every answer of the scale query set checked, and each request's "
        "median latency measured with wrk at 1 client; prints each size's median and the "
        "ratio largest / smallest, and writes them to bench/README.md. --smoke also runs it, "
        "at 300 and 600 products.")
    growth.add_argument("--scale", metavar="SIZES", type=sizes,
                        help="comma-separated catalog sizes, e.g. 100000,1000000")
    growth.add_argument("--db", choices=["pg", "sqlite", "both"], default="both",
                        help="the databases of the scale mode (default both)")
    opts = parser.parse_args(argv)
    if opts.smoke and opts.peer:
        parser.error("--smoke runs without the peer")
    if opts.scale and (opts.peer or opts.baseline or opts.smoke or opts.products):
        parser.error("--scale runs alone: its sizes replace --products; without "
                     "--peer, --baseline or --smoke")
    if opts.db != "both" and not opts.scale:
        parser.error("--db chooses the databases of --scale")
    if opts.baseline:
        if opts.peer:
            parser.error("--baseline compares two Vitrina binaries, without the peer")
        if not (os.path.isfile(opts.baseline) and os.access(opts.baseline, os.X_OK)):
            parser.error(f"--baseline {opts.baseline}: not an executable file")
        opts.baseline = os.path.abspath(opts.baseline)
    opts.queries = [key for key in opts.queries.split(",") if key]
    unknown = [key for key in opts.queries if key not in compare.comparable()]
    if unknown or not opts.queries:
        parser.error(f"--queries: {', '.join(unknown) or 'no query'}: choose among "
                     + ", ".join(compare.comparable()))
    if opts.rounds is not None and opts.rounds < 1:
        parser.error("--rounds must be at least 1")
    smoke = opts.smoke
    opts.rounds = opts.rounds or (1 if smoke else 3)
    opts.products = opts.products or (300 if smoke else 100_000)
    opts.db = list(scale.BACKENDS) if opts.db == "both" else [opts.db]
    opts.full = not opts.scale  # the full run (or the comparison); smoke adds the scale mode
    opts.scale = opts.scale or (SMOKE_SIZES if smoke else None)
    opts.duration = opts.duration or (1 if smoke else 5 if opts.scale else 10)
    opts.build = opts.build or ("test" if smoke else "release")
    opts.merge_items = opts.merge_items or (200 if smoke else 2000)
    opts.webhook_sessions = opts.webhook_sessions or (20 if smoke else 400)
    opts.warmup = 0 if smoke else 2
    opts.readme = not (smoke or opts.no_readme or opts.baseline)
    opts.command = shlex.join(["bench/run", *argv])
    return opts


def sizes(text: str) -> list[int]:
    """`--scale`: at least two distinct catalog sizes, kept smallest first."""
    try:
        values = sorted({int(part.replace("_", "")) for part in text.split(",") if part})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: comma-separated numbers of products") from None
    if len(values) < 2 or values[0] < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least two different sizes, each above 0")
    return values


def runs(opts: argparse.Namespace) -> list[tuple]:
    """What this invocation runs, in order: (runner, render, README markers)."""
    out = []
    if opts.baseline:
        out.append((compare.Comparison, compare.render, None))
    elif opts.full:
        out.append((Run, report.render, report.MARKERS))
    if opts.scale:
        out.append((scale.Scale, scale_report.render, scale_report.MARKERS))
    return out


def main(argv: list[str]) -> int:
    opts = options(argv)
    # A TERM (CI timeout, Ctrl-C in a wrapper) still runs the cleanup.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    failures = []
    try:
        for runner, render, markers in runs(opts):
            with contextlib.ExitStack() as cleanup:
                results = runner(opts, cleanup).execute()
            text = render(results)
            print(text)
            failures += results.get("failures", [])
            if opts.readme and markers:
                report.write_readme(os.path.join(BENCH, "README.md"), text, markers)
                log("results written to bench/README.md")
    except Failed as error:
        log(f"FAILED: {error}")
        return 1
    if failures:
        log(f"FAILED: {len(failures)} request(s) of the scale set (listed above)")
        return 1
    log(f"done in {time.monotonic() - started:.0f}s")
    return 0


class Run(Testbed):
    def __init__(self, opts: argparse.Namespace, cleanup: contextlib.ExitStack):
        super().__init__(opts, cleanup)
        self.r: dict = {"options": opts, "machine": machine.describe(), "targets": {}}

    def execute(self) -> dict:
        self.prepare()
        self.capture_phase()
        self.floor_phase()
        self.load_phase()
        return self.r

    # --- setup ------------------------------------------------------------

    def prepare(self) -> None:
        opts = self.opts
        super().prepare()
        self.r["pg_version"] = self.pg.version()
        self.r["commit"] = report.commit(REPO)
        if opts.peer:
            self.peer_cli = peer.install(os.path.join(BENCH, ".peer"))
            self.r["node"] = run(["node", "--version"]).strip()

        sqlite_file = os.path.join(self.workdir, "bench.db")
        if opts.keep:
            log(f"keeping {sqlite_file} (until the next run)")
        else:
            self.cleanup.callback(remove_sqlite, sqlite_file)
        self.urls = {"vitrina-pg": self.pg.url(self.db, APPLICATION["vitrina-pg"]),
                     "vitrina-sqlite": f"sqlite://{sqlite_file}"}

        log(f"seeding {opts.products} products (seed {opts.seed}) into PostgreSQL and SQLite")
        seeding = {name: vitrina.seed(self.binary, url, opts.products, opts.seed)
                   for name, url in self.urls.items()}
        for name, process in seeding.items():
            vitrina.finish_seed(process, name)
        self.keys = {}
        for name, url in self.urls.items():
            # Makes today's snapshot now, so the servers' first job tick is idle.
            vitrina.jobs_run_once(self.binary, url)
            self.keys[name] = vitrina.create_key(self.binary, url)

    def postgraphile(self) -> peer.PostGraphile:
        server = peer.PostGraphile(self.peer_cli,
                                   self.pg.url(self.db, APPLICATION["postgraphile"]),
                                   self.pin, self.workdir)
        self.cleanup.callback(server.stop)
        return server

    # --- what each request sends ----------------------------------------

    def capture_phase(self) -> None:
        """Parameters, then the SQL of every request, with statement logging
        on for sessions opened by these short-lived servers only."""
        self.pg.log_all_statements(self.db, True)
        # Also reset by the cleanup, should the run fail before it is reset here.
        self.cleanup.callback(self.pg.log_all_statements, self.db, False)
        sql_log = capture.Log(self.pg.log_file(), self.db)
        key = self.keys["vitrina-pg"]
        vit = self.server("vitrina-pg-capture", self.urls["vitrina-pg"])
        params = cases.discover(vit.base, key)
        params.deep_cursor = cases.walk(vit.base, key, params.deep_offset,
                                        cases.VITRINA_WALK, "products")
        pgl = None
        if self.opts.peer:
            pgl = self.postgraphile()
            params.peer_deep_cursor = cases.walk(pgl.base, None, params.deep_offset,
                                                 cases.PEER_WALK, "allProducts")
        self.cases = cases.cases(params)
        self.r["params"], self.r["cases"] = params, self.cases
        log("capturing the SQL of every request")
        self.r["statements"] = capture.capture_all(sql_log, vit.base, key, self.cases)
        capture.save(self.r["statements"], self.workdir)
        if pgl:
            self.r["peer_statements"] = capture.capture_all(sql_log, pgl.base, None,
                                                            self.cases, peer=True)
            capture.save(self.r["peer_statements"], self.workdir, "peer_")
            pgl.stop()
        vit.stop()
        self.pg.log_all_statements(self.db, False)

    def floor_phase(self) -> None:
        log("raw SQL floor (pgbench -M prepared) and EXPLAIN ANALYZE of every statement")
        for who in ("", "peer_"):
            captured = self.r.get(who + "statements", {})
            self.r[who + "floor"], self.r[who + "explain"] = {}, {}
            for case in self.cases:
                if case.key not in captured:
                    continue
                name = f"{who}{case.key}"
                self.r[who + "floor"][case.key] = floor.median_ms(
                    self.pg, self.db, captured[case.key], self.opts.duration, self.pin,
                    self.workdir, name)
                self.r[who + "explain"][case.key] = floor.explain(
                    self.pg, self.db, captured[case.key],
                    os.path.join(self.workdir, f"{name}.explain.txt"))

    # --- load -------------------------------------------------------------

    def load_phase(self) -> None:
        servers = {"vitrina-pg": self.server("vitrina-pg", self.urls["vitrina-pg"]),
                   "vitrina-sqlite": self.server("vitrina-sqlite", self.urls["vitrina-sqlite"])}
        if self.opts.peer:
            servers["postgraphile"] = self.postgraphile()
        self.verify(servers)
        self.r["rss"] = {}
        for name, server in servers.items():
            log(f"load on {name}")
            key = self.keys.get(name)
            measured = self.r["targets"][name] = {}
            for case in self.cases:
                request = case.peer if name == "postgraphile" else case.request
                if request is not None:
                    measured[case.key] = self.measure(name, server, key, case.key, request)
            # The peak of the whole process life, all load included.
            self.r["rss"][name] = peak_rss_mb(server.pid)
        self.hot_phase()
        # What HTTP alone costs: an answer with no key and no database.
        healthz = load.wrk(servers["vitrina-pg"].base, Request("GET", "/healthz"), None,
                           clients=1, seconds=self.opts.duration, pinning=self.pin,
                           workdir=self.workdir, name="vitrina-pg.healthz.c1")
        self.r["http_floor"] = healthz["p50_us"] / 1000
        self.r["merge"], self.r["webhooks"] = {}, {}
        for name in ("vitrina-pg", "vitrina-sqlite"):
            log(f"merge pass and webhook deliveries on {name}")
            target = (self.binary, self.urls[name], servers[name].base, self.keys[name])
            self.r["merge"][name] = merge.throughput(*target, self.opts.merge_items)
            self.r["webhooks"][name] = webhooks.throughput(*target, self.opts.webhook_sessions)

    def hot_phase(self) -> None:
        """The dashboards again, each repeated request answered from the
        response cache (`VITRINA_CACHE_MB`), on a server of each database
        with the cache on; the load above ran with it off (cold)."""
        self.r["hot"] = {}
        for cold in ("vitrina-pg", "vitrina-sqlite"):
            server = self.server(cold + "-hot", self.urls[cold], cache_mb=HOT_CACHE_MB)
            log(f"load on {cold}, hot")
            measured = self.r["hot"][cold] = {}
            for case in self.cases:
                if case.key in report.DASHBOARDS:
                    measured[case.key] = self.measure(cold, server, self.keys[cold],
                                                      case.key, case.request, cold + "-hot")
            server.stop()

    def verify(self, servers: dict) -> None:
        """Every request answers 200 with the expected rows, and every target
        answers each question with the same rows as Vitrina on PostgreSQL."""
        log("checking every answer of every target")
        reference = {}
        for case in self.cases:
            signature = case.check(cases.call(servers["vitrina-pg"].base, case.request,
                                              self.keys["vitrina-pg"]))
            other = case.check(cases.call(servers["vitrina-sqlite"].base, case.request,
                                          self.keys["vitrina-sqlite"]))
            cases.expect(other == signature, f"{case.title}: SQLite answers {other}, "
                                             f"PostgreSQL {signature}")
            if "postgraphile" in servers and case.peer is not None:
                other = case.peer_check(cases.call(servers["postgraphile"].base, case.peer, None))
                cases.expect(other == signature, f"{case.title}: PostGraphile answers "
                                                 f"{other}, Vitrina {signature}")
            reference[case.key] = signature
        for rest, graphql in cases.SAME_ROWS:
            cases.expect(reference[rest]["ids"] == reference[graphql]["ids"],
                         f"{rest} and {graphql} answer different rows")

    def measure(self, name: str, server, key: str | None, case_key: str, request,
                label: str | None = None) -> dict:
        """Median latency at 1 client; throughput and CPU per request at 8
        (of the backends of `name`'s application); `label` names its files."""
        tag = f"{label or name}.{case_key}"
        self.warm_up(server, key, request, tag)
        one = load.wrk(server.base, request, key, clients=1, seconds=self.opts.duration,
                       pinning=self.pin, workdir=self.workdir, name=tag + ".c1")
        return {"p50_ms": one["p50_us"] / 1000,
                **self.throughput(server, APPLICATION.get(name), key, request, tag)}
