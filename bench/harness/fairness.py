"""The fairness step of the scale mode (issue 28): on the largest catalog,
four keys loop the heaviest requests of the query set (those with the
largest median there, as measured just before), four loops each, sixteen
in all, while a fifth key's dashboard is refreshed five times a second.
The figure is the dashboard's median alone and under that load, and how
the heavy requests were answered: 200, or 429 once their account has spent
its database time or its requests of the minute.

It runs on a server of its own with the default per-account limits (the
measuring servers lift them out of the way), so what it shows is what a
deployment with the defaults gives.
"""

import collections
import statistics
import threading
import time
import urllib.error

from . import cases, vitrina
from .http import Request, send
from .proc import log

HEAVY_KEYS = 4
LOOPS_PER_KEY = 4
HEAVIEST = 3  # requests each loop cycles through
SETTLE_S = 2  # the loops run this long before the dashboard is measured
WATCH_PER_S = 5  # dashboard refreshes a second


def heaviest(latency: dict, n: int = HEAVIEST) -> list[str]:
    """The keys of the `n` requests with the largest median."""
    return sorted(latency, key=lambda key: latency[key]["p50_ms"], reverse=True)[:n]


def measure(testbed, backend: str, catalog, url: str) -> dict:
    """Dashboard median alone and under the loops, on `catalog` served anew
    with the default limits."""
    heavy = [key for key in heaviest(catalog.figures["latency"]) if key in catalog.cases]
    if not heavy:
        log("fairness: no request answered on the largest catalog; not measured")
        return {}
    requests = [catalog.cases[key].request for key in heavy]
    server = testbed.server(f"fairness-{backend}", url, limits=vitrina.DEFAULT_LIMITS)
    try:
        brand = catalog.figures["params"].found.brand
        dashboard = Request.graphql(cases.DASHBOARD, {"brand": brand, "n": 20})
        # Each key of an account of its own: the limits are per account.
        watcher = vitrina.create_key(testbed.binary, url, "fairness-watcher")

        def dashboard_p50(tag: str) -> float:
            """The median of a dashboard refreshed WATCH_PER_S times a second
            for --duration seconds: as a person's dashboard, well within the
            default rate limit and database time of its account."""
            took = []
            for _ in range(max(1, testbed.opts.duration * WATCH_PER_S)):
                started = time.perf_counter()
                status, body = send(server.base, dashboard, watcher)
                took.append((time.perf_counter() - started) * 1000)
                cases.expect(status == 200, f"fairness {tag}: dashboard answered {status}: "
                                            f"{str(body)[:300]}")
                time.sleep(max(0.0, 1 / WATCH_PER_S - took[-1] / 1000))
            return statistics.median(took)

        quiet = dashboard_p50("quiet")
        outcomes: collections.Counter = collections.Counter()
        lock, stop = threading.Lock(), threading.Event()

        def loop(key: str) -> None:
            while not stop.is_set():
                for request in requests:
                    try:
                        status, _ = send(server.base, request, key)
                    except (urllib.error.URLError, OSError):
                        status = "connection error"
                    with lock:
                        outcomes[str(status)] += 1

        keys = [vitrina.create_key(testbed.binary, url, f"fairness-heavy-{n}")
                for n in range(HEAVY_KEYS)]
        threads = [threading.Thread(target=loop, args=(key,), daemon=True)
                   for key in keys for _ in range(LOOPS_PER_KEY)]
        log(f"fairness: {len(threads)} loops of {', '.join(heavy)} from {HEAVY_KEYS} keys")
        for thread in threads:
            thread.start()
        try:
            time.sleep(SETTLE_S)
            loaded = dashboard_p50("loaded")
        finally:
            stop.set()
            for thread in threads:
                thread.join()
    finally:
        server.stop()
    return {"quiet_p50_ms": quiet, "loaded_p50_ms": loaded, "ratio": loaded / quiet,
            "heavy": heavy, "outcomes": dict(sorted(outcomes.items()))}
