"""Building, seeding and serving Vitrina through its own command line."""

import json
import os
import re
import subprocess
import time

from .http import Request
from .machine import Pinning
from .proc import Failed, log, run, spawn, wait_for
from .service import Service

# Requests a run sends in a minute are far above the default limit of 600,
# and their database time above the default budget of an account; the
# limiters are still on the path, only their ceilings are out of the way.
MEASURING_LIMITS = {"VITRINA_RATE_LIMIT_PER_MINUTE": "4000000000",
                    "VITRINA_DB_TIME_PER_MINUTE_MS": "4000000000000"}
# A server with the defaults of a deployment (the fairness step).
DEFAULT_LIMITS: dict = {}
# The scheduler's first tick runs at start; after that it should stay quiet
# while load runs (the merge figure runs `jobs run-once` itself).
JOB_INTERVAL_SECS = "86400"


def build(repo: str, kind: str) -> str:
    """Builds the `vitrina` binary and returns its path (wherever
    CARGO_TARGET_DIR puts it).

    `release`: `cargo build --release`, what a deployment runs.
    `test`: the very binary `cargo test` builds for the integration tests
    (dev profile, dev-dependency features): after the tests, as in CI,
    there is nothing left to compile.
    """
    if kind == "release":
        argv = ["cargo", "build", "--release", "--bin", "vitrina"]
    else:
        argv = ["cargo", "test", "--workspace", "--no-run"]
    log(f"building vitrina: {' '.join(argv)}")
    done = subprocess.run(argv + ["--message-format=json-render-diagnostics"], cwd=repo,
                          stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise Failed("the build failed (its messages are above)")
    for line in done.stdout.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        # `cargo test` also builds the binary's own unit-test runner under the
        # same name; only the non-test profile is the real `vitrina`.
        if (message.get("reason") == "compiler-artifact" and message.get("executable")
                and target.get("name") == "vitrina" and target.get("kind") == ["bin"]
                and not message.get("profile", {}).get("test", False)):
            return message["executable"]
    raise Failed("the build produced no vitrina executable")


def command(binary: str, database_url: str, *args: str, env: dict | None = None) -> str:
    env = dict(os.environ, DATABASE_URL=database_url, RUST_LOG="warn", **(env or {}))
    return run([binary, *args], env=env)


def seed(binary: str, database_url: str, products: int, seed_value: int):
    """Starts `vitrina seed` in the background (two backends seed at once)."""
    env = dict(os.environ, DATABASE_URL=database_url, RUST_LOG="warn")
    return subprocess.Popen(
        [binary, "seed", "--products", str(products), "--seed", str(seed_value)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def finish_seed(process, backend: str) -> str:
    """Waits for `vitrina seed`; returns the last line it printed (its summary)."""
    out, _ = process.communicate()
    if process.returncode != 0:
        raise Failed(f"seeding {backend} failed:\n{out[-2000:]}")
    summary = out.strip().splitlines()[-1]
    log(f"{backend}: {summary}")
    return summary


def create_key(binary: str, database_url: str, account: str = "bench") -> str:
    out = command(binary, database_url, "keys", "create", "--account", account)
    for line in out.splitlines():
        if line.startswith("vtr_"):
            return line.strip()
    raise Failed("`vitrina keys create` printed no key")


def jobs_run_once(binary: str, database_url: str, env: dict | None = None) -> tuple[float, str]:
    """One round of every job; returns the wall time and the printed report."""
    started = time.monotonic()
    out = command(binary, database_url, "jobs", "run-once", env=env)
    return time.monotonic() - started, out


class Server(Service):
    """`vitrina serve` on a free loopback port."""

    ready_request = Request("GET", "/readyz")

    def __init__(self, name: str, binary: str, database_url: str, pinning: Pinning,
                 workdir: str, pool: int | None = None,
                 limits: dict | None = None, cache_mb: int = 0):
        self.name = name
        env = dict(
            os.environ,
            DATABASE_URL=database_url,
            VITRINA_BIND="127.0.0.1:0",
            VITRINA_MERGE_INTERVAL_SECS=JOB_INTERVAL_SECS,
            # Measured cold unless asked: a repeated request would otherwise
            # be answered from the response cache after its first run.
            VITRINA_CACHE_MB=str(cache_mb),
            **(MEASURING_LIMITS if limits is None else limits),
        )
        if pool:
            env["VITRINA_DB_MAX_CONNECTIONS"] = str(pool)
        self.out_path = os.path.join(workdir, f"{name}.log")
        self.process = spawn(pinning.wrap(pinning.servers, [binary, "serve"]),
                             env=env, out_path=self.out_path)
        self.base = ""
        try:
            wait_for(name, self._listening, timeout=60, process=self.process)
            wait_for(name, self._ready, timeout=30, process=self.process)
        except Failed as error:
            self.stop()
            with open(self.out_path, encoding="utf-8", errors="replace") as f:
                tail = f.read()[-2000:]
            raise Failed(f"{error}; the end of {self.out_path}:\n{tail}") from None

    def _listening(self) -> bool:
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            found = re.search(r"listening on (http://\S+)", f.read())
        if found:
            self.base = found.group(1)
        return bool(found)
