"""PostgreSQL administration through psql: the benchmark's own databases,
statement logging on them only, and the backends serving a given client.

The server is shared with other people's tests, so nothing here changes it
beyond the `vitrina_bench_*` databases the run creates and drops.
"""

import subprocess
import urllib.parse

from .proc import Failed, cpu_seconds, run


class Postgres:
    def __init__(self, admin_url: str):
        self.admin_url = admin_url
        parts = urllib.parse.urlsplit(admin_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = str(parts.port or 5432)
        self.user = parts.username or "postgres"

    def url(self, database: str, application: str | None = None,
            search_path: str | None = None) -> str:
        """A connection URL for `database`, naming the client so that its
        backends can be told apart in pg_stat_activity. Every client of the
        run (Vitrina, PostGraphile, pgbench, psql) connects without TLS: over
        loopback it only adds cost, and the clients disagree on the default
        (libpq and sqlx negotiate TLS when the server offers it, node-postgres
        does not), which would tilt the comparison. A `search_path` is set
        for the sessions through the startup `options`."""
        parts = urllib.parse.urlsplit(self.admin_url)
        query = {"sslmode": "disable"}
        if application:
            query["application_name"] = application
        if search_path:
            query["options"] = f"-c search_path={search_path}"
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/" + database,
                                        urllib.parse.urlencode(query, quote_via=urllib.parse.quote),
                                        ""))

    def sql(self, statement: str, database: str | None = None) -> str:
        url = self.url(database) if database else self.admin_url
        return run(
            ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url,
             "-c", statement]
        ).strip()

    def script(self, text: str, database: str) -> str:
        """Runs a multi-statement script (EXPLAIN output and all)."""
        done = subprocess.run(
            ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d",
             self.url(database), "-f", "-"],
            input=text, capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            raise Failed(f"psql script failed: {done.stderr.strip()[-2000:]}")
        return done.stdout

    def version(self) -> str:
        return self.sql("SHOW server_version")

    def create(self, database: str) -> None:
        self.sql(f'CREATE DATABASE "{database}"')

    def drop(self, database: str) -> None:
        self.sql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

    def log_all_statements(self, database: str, on: bool) -> None:
        """Statement logging for new sessions of this database only."""
        if on:
            self.sql(f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
        else:
            self.sql(f'ALTER DATABASE "{database}" RESET log_statement')

    def log_file(self) -> str:
        """The server's log file as pg_lsclusters reports it (Debian's layout);
        the logging collector is off here, so pg_current_logfile() is empty."""
        for line in run(["pg_lsclusters", "--no-header"]).splitlines():
            fields = line.split()
            if len(fields) >= 7 and fields[2] == self.port:
                return fields[6]
        raise Failed(f"no local PostgreSQL cluster on port {self.port}")

    def backend_cpu(self, database: str, application: str) -> dict[int, float]:
        """CPU seconds of each backend serving `application` on `database`."""
        pids = self.sql(
            "SELECT pid FROM pg_stat_activity "
            f"WHERE datname = '{database}' AND application_name = '{application}'"
        ).split()
        return {int(pid): cpu_seconds(int(pid)) for pid in pids}
