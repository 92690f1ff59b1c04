"""wrk runs: a generated Lua script per request sets the method, body and
headers, and reports wrk's own summary as one JSON line when done."""

import json
import os
import shutil
import subprocess

from .http import Request
from .machine import Pinning
from .proc import Failed, log, run

SUMMARY = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"non_2xx":%d,"socket_errors":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
"""


def ensure_wrk() -> None:
    """wrk comes from Debian's packages; installed when missing."""
    if shutil.which("wrk"):
        return
    log("wrk is missing; installing it with apt-get")
    if subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=False,
                      stdout=subprocess.DEVNULL).returncode != 0:
        run(["apt-get", "update", "-q"])
        run(["apt-get", "install", "-y", "-q", "wrk"])


def _long_string(text: str) -> str:
    """A Lua long bracket that the text cannot close early."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def script(request: Request, key: str | None, path: str) -> None:
    lines = [f"wrk.method = {_long_string(request.method)}"]
    if key:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {key}"')
    if request.body is not None:
        lines.append('wrk.headers["Content-Type"] = "application/json"')
        lines.append(f"wrk.body = {_long_string(request.body.decode())}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n" + SUMMARY)


def wrk(base: str, request: Request, key: str | None, *, clients: int, seconds: int,
        pinning: Pinning, workdir: str, name: str) -> dict:
    """One wrk run; every answer must be 2xx and no socket may fail."""
    lua = os.path.join(workdir, f"{name}.lua")
    script(request, key, lua)
    out = run(pinning.wrap(pinning.load, [
        "wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "--timeout", "30s",
        "-s", lua, base + request.path,
    ]))
    line = next((l for l in out.splitlines() if l.startswith("WRK_JSON ")), None)
    if line is None:
        raise Failed(f"wrk printed no summary for {name}:\n{out[-1000:]}")
    result = json.loads(line[len("WRK_JSON "):])
    if result["non_2xx"] or result["socket_errors"]:
        raise Failed(f"{name}: {result['non_2xx']} non-2xx answers and "
                     f"{result['socket_errors']} socket errors under load")
    if result["requests"] == 0:
        raise Failed(f"{name}: no request completed")
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result
