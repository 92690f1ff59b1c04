"""`bench/run --baseline OLD`: the binary this run builds against an older
one, on one PostgreSQL database, the two taking turns.

The baseline seeds the database, makes today's snapshot and creates its API
key; then the current binary migrates the database forward and creates its
own key. An older binary refuses to start on a database holding migrations
it does not know (sea-orm: "this migration has been applied but its file is
missing"), so the baseline's sessions read their record of migrations from
a schema of their own (`bench_baseline.seaql_migrations`, copied before the
current binary migrated), first on their search_path; every other table is
the shared one, whose new columns and tables the baseline does not read.

Each round measures every query once with each binary, the two back to
back, the baseline first in odd rounds and second in even ones, so that the
machine's drift weighs on both alike. One measurement: start the server,
check its answer (both binaries must answer the same rows), warm up, wrk at
8 clients with the CPU of the server and of its PostgreSQL backends read
from /proc as in a full run, stop. The report gives, per query, medians
over the rounds and the ratio current / baseline.
"""

import argparse
import contextlib
import datetime
import os
import statistics

from . import cases, machine, report, vitrina
from .proc import log
from .testbed import APPLICATION, CLIENTS, REPO, Testbed

# The dashboards of issue 17's item 10, and a page and a single product of
# each surface beside them.
QUERIES = ("gql_dashboard_20", "gql_dashboard_100", "rest_first", "gql_product")
# Its cursor is the opaque encoding of the binary that walked to it, which
# the other binary need not read.
NOT_COMPARABLE = ("gql_deep",)
BASELINE_SCHEMA = "bench_baseline"
MIGRATIONS = "seaql_migrations"
BINARIES = ("baseline", "current")


def comparable() -> list[str]:
    """The keys of the query set both binaries can be asked (which queries
    the set holds does not depend on its parameters)."""
    blank = cases.Params(brand="", product_id="", category="", name_part="", seller_code="",
                         tin="", deep_page=1)
    return [case.key for case in cases.cases(blank) if case.key not in NOT_COMPARABLE]


class Comparison(Testbed):
    def __init__(self, opts: argparse.Namespace, cleanup: contextlib.ExitStack):
        super().__init__(opts, cleanup)
        self.baseline = opts.baseline
        self.r: dict = {"options": opts, "machine": machine.describe(), "runs": {}}

    def execute(self) -> dict:
        self.prepare()
        self.rounds()
        return self.r

    def prepare(self) -> None:
        super().prepare()
        self.r.update(pg_version=self.pg.version(), commit=report.commit(REPO),
                      baseline_commit=checkout_commit(self.baseline), binary=self.binary)
        self.share_database()
        self.cases = self.r["cases"] = self.query_set()
        each = 2 + self.opts.warmup + self.opts.duration  # a server starts in a second or two
        log(f"{self.opts.rounds} round(s) of {len(self.cases)} queries on both binaries: "
            f"about {self.opts.rounds * len(self.cases) * 2 * each / 60:.0f} min")

    def share_database(self) -> None:
        """Seeded by the baseline, migrated forward by the current binary,
        with a key of each; the baseline keeps its own record of migrations."""
        opts, application = self.opts, APPLICATION["vitrina-pg"]
        url = self.pg.url(self.db, application)
        log(f"seeding {opts.products} products (seed {opts.seed}) with the baseline")
        vitrina.finish_seed(vitrina.seed(self.baseline, url, opts.products, opts.seed),
                            "baseline")
        # Makes today's snapshot now, so the servers' first job tick is idle.
        vitrina.jobs_run_once(self.baseline, url)
        self.keys = {"baseline": vitrina.create_key(self.baseline, url)}
        self.pg.script(
            f"CREATE SCHEMA {BASELINE_SCHEMA};"
            f"CREATE TABLE {BASELINE_SCHEMA}.{MIGRATIONS} (LIKE public.{MIGRATIONS} INCLUDING ALL);"
            f"INSERT INTO {BASELINE_SCHEMA}.{MIGRATIONS} SELECT * FROM public.{MIGRATIONS};",
            self.db)
        vitrina.command(self.binary, url, "migrate")
        self.keys["current"] = vitrina.create_key(self.binary, url)
        self.r["added_migrations"] = self.pg.sql(
            f"SELECT version FROM public.{MIGRATIONS} EXCEPT "
            f"SELECT version FROM {BASELINE_SCHEMA}.{MIGRATIONS} ORDER BY 1", self.db).split()
        log("migrations the current binary added: "
            + (", ".join(self.r["added_migrations"]) or "none"))
        self.urls = {"baseline": self.pg.url(self.db, application,
                                             search_path=f"{BASELINE_SCHEMA},public"),
                     "current": url}

    def query_set(self) -> list[cases.Case]:
        """The chosen queries, with their parameters found through the API."""
        server = self.server("current.discover", self.urls["current"])
        params = cases.discover(server.base, self.keys["current"])
        server.stop()
        every = {case.key: case for case in cases.cases(params)}
        return [every[key] for key in self.opts.queries]

    def rounds(self) -> None:
        runs = self.r["runs"]
        answers: dict[str, object] = {}
        for number in range(1, self.opts.rounds + 1):
            order = BINARIES if number % 2 else BINARIES[::-1]
            for case in self.cases:
                for who in order:
                    measured = self.measure(who, case, number, answers)
                    runs.setdefault(case.key, {b: [] for b in BINARIES})[who].append(measured)
                    log(f"round {number}, {case.key}, {who}: server "
                        f"{measured['server_cpu_ms']:.3f} ms, database "
                        f"{measured['db_cpu_ms']:.3f} ms per request, "
                        f"{measured['rps']:,.0f} requests/s")

    def measure(self, who: str, case: cases.Case, number: int, answers: dict) -> dict:
        """One fresh server of `who`: its answer checked, then measured."""
        binary = self.baseline if who == "baseline" else self.binary
        key, tag = self.keys[who], f"{who}.{case.key}.r{number}"
        server = self.server(tag, self.urls[who], binary)
        try:
            answer = case.check(cases.call(server.base, case.request, key))
            expected = answers.setdefault(case.key, answer)
            cases.expect(answer == expected,
                         f"{case.title}: the {who} binary answers {answer}, the other {expected}")
            self.warm_up(server, key, case.request, tag)
            return self.throughput(server, APPLICATION["vitrina-pg"], key, case.request, tag)
        finally:
            server.stop()


def checkout_commit(binary: str) -> str | None:
    """The commit of the git checkout the binary was built in (found above
    it, as for target/release/vitrina), or None."""
    folder = os.path.dirname(os.path.realpath(binary))
    while folder != os.path.dirname(folder):
        if os.path.exists(os.path.join(folder, ".git")):
            return report.commit(folder)
        folder = os.path.dirname(folder)
    return None


def render(r: dict) -> str:
    opts, m = r["options"], r["machine"]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    baseline = opts.baseline + (f" (commit {r['baseline_commit']})" if r["baseline_commit"] else "")
    out = [
        f"Comparison on {when}, with:", "",
        f"    {opts.command}", "",
        f"Baseline: {baseline}. Current: {r['binary']} (commit {r['commit']}, "
        f"build {opts.build}).",
        f"Machine: {m['nproc']} CPUs ({m['model']}), {m['memory']} memory, Linux {m['kernel']}; "
        f"PostgreSQL {r['pg_version']}. Dataset: {opts.products:,} products, seed {opts.seed}, "
        "seeded by the baseline; migrations the current binary added: "
        + (", ".join(r["added_migrations"]) or "none") + ".",
        f"{opts.rounds} round{'s' if opts.rounds > 1 else ''}; in each, every query once per binary, back to back, the order "
        f"flipped from one round to the next; each a fresh server, "
        + (f"a {opts.warmup} s warm-up, " if opts.warmup else "")
        + f"{opts.duration} s at {CLIENTS} clients. Medians over the rounds; CPU in ms per "
        "request.", "",
        "| query | server CPU, baseline | current | current / baseline | by round "
        "| database CPU, baseline | current | requests/s, baseline | current "
        "| current / baseline |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for case in r["cases"]:
        runs = r["runs"][case.key]

        def median(who: str, field: str) -> float:
            return statistics.median(run[field] for run in runs[who])

        by_round = ", ".join(
            report.num(report.ratio(new["server_cpu_ms"], old["server_cpu_ms"]), 3)
            for old, new in zip(runs["baseline"], runs["current"]))
        server = [median(who, "server_cpu_ms") for who in BINARIES]
        db = [median(who, "db_cpu_ms") for who in BINARIES]
        rps = [median(who, "rps") for who in BINARIES]
        out.append(
            f"| {case.title} | {report.num(server[0], 3)} | {report.num(server[1], 3)} "
            f"| **{report.num(report.ratio(server[1], server[0]), 3)}** | {by_round} "
            f"| {report.num(db[0], 3)} | {report.num(db[1], 3)} "
            f"| {report.num(rps[0], 0)} | {report.num(rps[1], 0)} "
            f"| **{report.num(report.ratio(rps[1], rps[0]), 3)}** |")
    return "\n".join(out) + "\n"
