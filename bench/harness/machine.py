"""What machine the numbers come from, and which cores run what.

The load tool (wrk, pgbench) gets a core of its own so that generating load
does not steal time from the server it measures; the servers under test
share the remaining cores. PostgreSQL is a shared server and is not pinned.
"""

import os
import platform
from dataclasses import dataclass


@dataclass
class Pinning:
    load: str | None  # taskset list for wrk / pgbench, or None (no pinning)
    servers: str | None  # taskset list for Vitrina and PostGraphile

    def wrap(self, cpus: str | None, argv: list[str]) -> list[str]:
        return ["taskset", "-c", cpus, *argv] if cpus else argv


def pinning() -> Pinning:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return Pinning(load=None, servers=None)
    return Pinning(
        load=str(cpus[-1]),
        servers=",".join(str(c) for c in cpus[:-1]),
    )


def _first(path: str, prefix: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def describe() -> dict[str, str]:
    """nproc, CPU model and memory, as the README records them."""
    mem_kb = _first("/proc/meminfo", "MemTotal").split()[0]
    mem = f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "unknown"
    return {
        "nproc": str(os.cpu_count()),
        "model": _first("/proc/cpuinfo", "model name"),
        "memory": mem,
        "kernel": platform.release(),
    }
