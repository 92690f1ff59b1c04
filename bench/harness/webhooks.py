"""Webhook deliveries per second to a local receiver.

The bench account subscribes a receiver on 127.0.0.1 (the most subscriptions
an account may have, through `vitrina webhooks create` with the development
switch for loopback targets). Sessions of one item each are uploaded through
the extension API; one `vitrina jobs run-once` merges them, completes each
session and delivers `scrape_session.completed` to every subscription. The
receiver checks every signature and stamps every arrival; the figure is the
deliveries over the time from the first arrival to the last, so the merge
that precedes them is not counted.
"""

import hashlib
import hmac
import http.server
import threading
import time
import urllib.parse

from .cases import call
from .http import Request, post_json
from .merge import scraped_item
from .proc import Failed
from .vitrina import command, jobs_run_once

SUBSCRIPTIONS = 5  # the most active subscriptions one account may have
INSECURE = {"VITRINA_WEBHOOK_ALLOW_INSECURE_TARGETS": "true"}


class Receiver:
    """A threaded HTTP server that verifies and times every delivery."""

    def __init__(self) -> None:
        self.secrets: list[str] = []
        self.arrivals: list[float] = []
        self.bad: list[str] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.record(self.headers.get("X-Vitrina-Signature", ""), body)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, header: str, body: bytes) -> None:
        now = time.monotonic()
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        signed = f"{parts.get('t', '')}.".encode() + body
        ok = any(hmac.compare_digest(
            hmac.new(s.encode(), signed, hashlib.sha256).hexdigest(), parts.get("v1", ""))
            for s in self.secrets)
        with self.lock:
            self.arrivals.append(now)
            if not ok:
                self.bad.append(header)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def subscribe(binary: str, database_url: str, url: str) -> str:
    """A subscription of the bench account; returns its signing secret."""
    out = command(binary, database_url, "webhooks", "create", "--account", "bench",
                  "--url", url, env=INSECURE)
    for line in out.splitlines():
        if line.startswith("whsec_"):
            return line.strip()
    raise Failed("`vitrina webhooks create` printed no secret")


def throughput(binary: str, database_url: str, base: str, key: str, sessions: int) -> dict:
    receiver = Receiver()
    try:
        receiver.secrets = [subscribe(binary, database_url, receiver.url)
                            for _ in range(SUBSCRIPTIONS)]
        query = urllib.parse.urlencode({"page_size": min(sessions, 500)})
        known = call(base, Request("GET", f"/v1/products?{query}"), key)["data"]
        for i in range(sessions):
            status, body = post_json(base, "/extension/v1/scrapes", {
                "source_type": "bulk", "intent": "price_monitoring",
                "items": [scraped_item(known[i % len(known)])]}, key)
            if status != 202:
                raise Failed(f"webhooks: upload answered {status}: {str(body)[:300]}")
        jobs_run_once(binary, database_url, INSECURE)
        expected = sessions * SUBSCRIPTIONS
        got = len(receiver.arrivals)
        if got != expected:
            raise Failed(f"webhooks: {got} deliveries arrived, expected {expected}")
        if receiver.bad:
            raise Failed(f"webhooks: {len(receiver.bad)} deliveries with a bad signature")
        span = max(receiver.arrivals) - min(receiver.arrivals)
        return {"deliveries": got, "seconds": span,
                "per_second": (got - 1) / span if span > 0 else float("inf")}
    finally:
        receiver.stop()
