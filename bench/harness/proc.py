"""Child processes, and the CPU time and memory of any process from /proc."""

import os
import signal
import subprocess
import sys
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Failed(Exception):
    """A step of the benchmark failed; the message says which and why."""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run(argv: list[str], *, env: dict | None = None, cwd: str | None = None) -> str:
    """Runs a command to completion and returns its stdout; fails loudly."""
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise Failed(
            f"{' '.join(argv[:4])} ... exited with {done.returncode}:\n"
            f"{done.stderr.strip()[-2000:]}"
        )
    return done.stdout


def spawn(argv: list[str], *, env: dict, out_path: str, cwd: str | None = None):
    """Starts a long-running process with stdout and stderr in `out_path`.

    It gets its own process group so that stopping it also stops anything it
    started (npm's node, say), and nothing else.
    """
    out = open(out_path, "w", encoding="utf-8")
    return subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(process, grace: float = 10.0) -> None:
    """SIGINT (Vitrina shuts down gracefully on it), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            # The command name may hold spaces; fields after it are fixed.
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def peak_rss_mb(pid: int) -> float:
    """VmHWM: the most resident memory the process has had."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise Failed(f"no VmHWM for process {pid}")


def wait_for(what: str, ready, timeout: float, process=None) -> None:
    """Polls `ready()` until true; fails when the process died or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise Failed(f"{what} exited with {process.returncode} while starting")
        if ready():
            return
        time.sleep(0.1)
    raise Failed(f"{what} was not ready within {timeout:.0f}s")
