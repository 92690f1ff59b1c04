"""A server process the run starts and stops (Vitrina, PostGraphile): how
it is known to be ready, its pid for /proc, and stopping it."""

from .http import Request, send
from .proc import stop


class Service:
    process = None  # set by the subclass once started
    base = ""  # http://127.0.0.1:<port>
    ready_request: Request  # answers 200 once the server can take load

    def _ready(self) -> bool:
        try:
            return send(self.base, self.ready_request, timeout=2)[0] == 200
        except OSError:
            return False

    @property
    def pid(self) -> int:
        """The server process itself (taskset execs into it)."""
        return self.process.pid

    def stop(self) -> None:
        stop(self.process)
