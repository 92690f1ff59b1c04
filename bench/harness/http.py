"""A small JSON client over urllib, for setup, checks and capture requests
(the load itself is wrk's)."""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """One HTTP request of the query set, as wrk will repeat it."""

    method: str  # GET or POST
    path: str  # with the query string
    body: bytes | None = None  # JSON, for POST

    @staticmethod
    def graphql(query: str, variables: dict | None = None,
                path: str = "/graphql") -> "Request":
        payload = {"query": " ".join(query.split())}
        if variables:
            payload["variables"] = variables
        return Request("POST", path, json.dumps(payload).encode())


def send(base: str, request: Request, key: str | None = None,
         timeout: float = 60) -> tuple[int, object]:
    """Sends `request`; returns the status and the decoded JSON body (or the
    raw text when the body is not JSON)."""
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    if request.body is not None:
        headers["Content-Type"] = "application/json"
    http_request = urllib.request.Request(
        base + request.path, data=request.body, headers=headers,
        method=request.method,
    )
    try:
        with urllib.request.urlopen(http_request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def post_json(base: str, path: str, body: object, key: str) -> tuple[int, object]:
    return send(base, Request("POST", path, json.dumps(body).encode()), key)
