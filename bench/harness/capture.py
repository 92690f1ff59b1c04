"""The SQL one request makes a server send, read from the PostgreSQL log.

While capturing, `log_statement = 'all'` is set on the benchmark database
only (ALTER DATABASE, so only sessions opened afterwards log; the capture
servers are started after it and stopped before the load runs). Each logged
statement comes with its bound parameters in a DETAIL line, so what is
captured is exactly what the server sent: the text it prepared and the
values it bound. The log's line prefix must carry the pid and the database
(`[%p] ... %u@%d`, Debian's default).
"""

import os
import re
import time
from dataclasses import dataclass, field

from .cases import Case, call
from .http import Request
from .proc import Failed

LINE = re.compile(r"\[(\d+)\] [^@\s]*@(\S+) (LOG|DETAIL):  (.*)$")
EXECUTE = re.compile(r"^(?:execute [^:]+|statement): (.*)$", re.S)
PARAMETER = re.compile(r"\$(\d+) = (NULL|'((?:[^']|'')*)')")
# Authentication refreshes the key's last-used time at most once a minute; a
# capture that caught that write is repeated.
LAST_USED_WRITE = 'UPDATE "api_keys"'


@dataclass
class Statement:
    sql: str
    params: list[str | None] = field(default_factory=list)


class Log:
    def __init__(self, path: str, database: str):
        self.path, self.database = path, database
        try:
            open(path, "rb").close()
        except OSError as error:
            raise Failed(f"cannot read the PostgreSQL log {path}: {error}") from error

    def mark(self) -> int:
        return os.path.getsize(self.path)

    def settled(self) -> int:
        """The log's size once backends have stopped writing to it."""
        size = self.mark()
        while True:
            time.sleep(0.15)
            now = self.mark()
            if now == size:
                return size
            size = now

    def since(self, offset: int, end: int) -> list[Statement]:
        with open(self.path, "rb") as f:
            f.seek(offset)
            text = f.read(end - offset).decode("utf-8", "replace")
        entries: list[list] = []  # [pid, level, message]
        for line in text.split("\n"):
            if line.startswith("\t") and entries:
                entries[-1][2] += "\n" + line[1:]
                continue
            found = LINE.search(line)
            if found and found.group(2) == self.database:
                entries.append([found.group(1), found.group(3), found.group(4)])
        statements: list[Statement] = []
        last_of: dict[str, Statement] = {}
        for pid, level, message in entries:
            if level == "LOG" and (sql := EXECUTE.match(message)):
                statement = Statement(" ".join(sql.group(1).split()))
                statements.append(statement)
                last_of[pid] = statement
            elif level == "DETAIL" and message.startswith("parameters:") and pid in last_of:
                last_of[pid].params = [
                    None if value == "NULL" else inner.replace("''", "'")
                    for _, value, inner in PARAMETER.findall(message)
                ]
        return statements


def capture(log: Log, base: str, key: str | None, request: Request) -> list[Statement]:
    """The statements of one request, after a first request has warmed
    the server's caches and connections."""
    call(base, request, key)
    for _ in range(3):
        start = log.settled()
        call(base, request, key)
        statements = log.since(start, log.settled())
        if not any(s.sql.startswith(LAST_USED_WRITE) for s in statements):
            if not statements:
                raise Failed(f"no statements logged for {request.path}; is the "
                             "log_line_prefix carrying [%p] and %u@%d?")
            return statements
    raise Failed(f"could not capture {request.path} without a key-stamp write")


def capture_all(log: Log, base: str, key: str | None, cases: list[Case],
                peer: bool = False) -> dict[str, list[Statement]]:
    """Statements per case (and per `<case>@100` for the larger pages)."""
    out = {}
    for case in cases:
        request = case.peer if peer else case.request
        if request is None:
            continue
        out[case.key] = capture(log, base, key, request)
        if case.larger is not None and not peer:
            out[case.key + "@100"] = capture(log, base, key, case.larger)
    return out


def save(captured: dict[str, list[Statement]], folder: str, prefix: str = "") -> None:
    """Writes each request's statements and values next to the run's other
    files, for reading (`<case>.statements.txt`)."""
    for key, statements in captured.items():
        with open(f"{folder}/{prefix}{key}.statements.txt", "w", encoding="utf-8") as f:
            for s in statements:
                f.write(f"{s.sql};\n  -- {s.params}\n")
