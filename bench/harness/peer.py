"""PostGraphile v4, the peer: installed with npm into a gitignored folder of
the benchmark and served on the same PostgreSQL database as Vitrina."""

import json
import os
import socket

from .http import Request
from .machine import Pinning
from .proc import Failed, log, run, spawn, wait_for
from .service import Service

VERSION = "4.14.1"


def install(folder: str) -> str:
    """npm install of the pinned version (a no-op when already there);
    returns the path of its command-line script."""
    cli = os.path.join(folder, "node_modules", "postgraphile", "cli.js")
    manifest = os.path.join(folder, "node_modules", "postgraphile", "package.json")
    if not _installed(manifest):
        os.makedirs(folder, exist_ok=True)
        log(f"installing postgraphile@{VERSION} with npm into {folder}")
        run(["npm", "install", "--prefix", folder, "--no-audit", "--no-fund",
             "--save-exact", "--loglevel=error", f"postgraphile@{VERSION}"])
    if not _installed(manifest):
        raise Failed(f"npm did not install postgraphile@{VERSION}")
    return cli


def _installed(manifest: str) -> bool:
    try:
        with open(manifest, encoding="utf-8") as f:
            return json.load(f).get("version") == VERSION
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostGraphile(Service):
    """PostGraphile's own server with its recommended production flags:
    no query log, no GraphiQL, dynamic JSON, functions without nulls. Order
    and conditions stay available on every column (its default), so the
    dashboard can ask for the newest prices first."""

    name = "postgraphile"
    ready_request = Request.graphql("{ __typename }")

    def __init__(self, cli: str, database_url: str, pinning: Pinning, workdir: str):
        port = _free_port()
        argv = ["node", cli, "--connection", database_url, "--schema", "public",
                "--host", "127.0.0.1", "--port", str(port), "--disable-query-log",
                "--disable-graphiql", "--dynamic-json",
                "--no-setof-functions-contain-nulls"]
        self.base = f"http://127.0.0.1:{port}"
        self.process = spawn(pinning.wrap(pinning.servers, argv), env=dict(os.environ),
                             out_path=os.path.join(workdir, "postgraphile.log"))
        wait_for("postgraphile", self._ready, timeout=120, process=self.process)
