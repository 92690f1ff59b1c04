"""The raw SQL floor of a request, and the plans of its statements.

The floor is pgbench in prepared mode (`-M prepared`) running exactly the
statements a request made the server send, in the order they were logged,
one client, as one pgbench transaction; its median latency is what the
request would cost if the API added nothing at all (not even parallelism:
statements a server sends concurrently run one after another here).
Statement texts are kept verbatim; their `$n` placeholders become pgbench
variables bound to the logged values, so PostgreSQL plans them as it plans
the server's own prepared statements.
"""

import glob
import os
import re
import statistics

from .capture import Statement
from .machine import Pinning
from .pg import Postgres
from .proc import Failed, run

PLACEHOLDER = re.compile(r"\$(\d+)")


def pgbench_script(statements: list[Statement]) -> tuple[str, list[str]]:
    lines, defines = [], []
    for k, statement in enumerate(statements):
        lines.append(PLACEHOLDER.sub(lambda m: f":p{k}_{m.group(1)}", statement.sql) + ";")
        for n, value in enumerate(statement.params, start=1):
            if value is None:
                raise Failed(f"a NULL parameter cannot be passed to pgbench: {statement.sql[:80]}")
            defines += ["-D", f"p{k}_{n}={value}"]
    return "\n".join(lines) + "\n", defines


def median_ms(pg: Postgres, database: str, statements: list[Statement], seconds: int,
              pinning: Pinning, workdir: str, name: str) -> float:
    """Median latency of the request's SQL over `seconds` of pgbench."""
    text, defines = pgbench_script(statements)
    script = os.path.join(workdir, f"{name}.pgbench.sql")
    with open(script, "w", encoding="utf-8") as f:
        f.write(text)
    prefix = os.path.join(workdir, f"{name}.pgbench")
    for old in glob.glob(prefix + ".*[0-9]"):
        os.remove(old)
    run(pinning.wrap(pinning.load, [
        "pgbench", "-n", "-M", "prepared", "-c", "1", "-j", "1", "-T", str(seconds),
        "-f", script, "-l", "--log-prefix", prefix, *defines,
        "-h", pg.host, "-p", pg.port, "-U", pg.user, database,
    ]), env=dict(os.environ, PGSSLMODE="disable"))  # as every client of the run
    latencies = []
    for path in glob.glob(prefix + ".*[0-9]"):
        with open(path, encoding="ascii") as f:
            # client_id transaction_no latency_us script_no epoch epoch_us
            latencies += [int(line.split()[2]) for line in f if line.strip()]
    if not latencies:
        raise Failed(f"pgbench logged no transactions for {name}")
    return statistics.median(latencies) / 1000


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


def explain(pg: Postgres, database: str, statements: list[Statement], path: str) -> dict:
    """EXPLAIN (ANALYZE, BUFFERS) of each statement, written to `path`; the
    second of two runs is kept so that caches are warm as under load.
    Returns the summed execution time and the tables read by a Seq Scan."""
    parts = []
    for k, s in enumerate(statements):
        args = f"({', '.join(_literal(v) for v in s.params)})" if s.params else ""
        parts.append(f"PREPARE s{k} AS {s.sql};\n\\echo '-- statement {k + 1}: {s.sql[:120].replace(chr(39), '')}'\n"
                     f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE s{k}{args};\nDEALLOCATE s{k};\n")
    script = "".join(parts)
    pg.script(script, database)
    plans = pg.script(script, database)
    with open(path, "w", encoding="utf-8") as f:
        f.write(plans)
    times = [float(t) for t in re.findall(r"Execution Time: ([\d.]+) ms", plans)]
    return {
        "execution_ms": sum(times),
        "seq_scans": sorted(set(re.findall(r"Seq Scan on (\w+)", plans))),
    }
