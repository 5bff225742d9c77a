"""The request (one attempt of one user request), HTTP status codes and the components that answer them."""

from __future__ import annotations

OK = 200
BAD_REQUEST = 400
TOO_MANY = 429
SERVER_ERROR = 500
BAD_GATEWAY = 502
UNAVAILABLE = 503
TIMEOUT = 504
# A streamed response cut off by the revision timeout after its first byte: the client got a 200 header and a
# truncated body (knative pkg/http/handler/timeout.go writes the 504 only when nothing was written yet).
# Not an HTTP code: reported as "200-truncated" and counted as an error.
TRUNCATED = 1200
# Still unanswered when the run stops (duration_s + drain_s: simulation/horizon.py); to the client, a timeout.
# Not an HTTP code: reported as "unanswered" and counted as an error.
UNANSWERED = 1504
STATUS_LABELS = {TRUNCATED: "200-truncated", UNANSWERED: "unanswered"}


def status_label(code: int) -> str:
    """The report's key for a status: the HTTP code, or "200-truncated"."""
    return STATUS_LABELS.get(code) or str(code)

# Components that produce a response (every failure records one of these).
GATEWAY = "gateway"
ACTIVATOR = "activator"
QUEUE_PROXY = "queue-proxy"
SERVER = "server"
CLIENT_TIMEOUT = "client-timeout"
CLIENT_BACKOFF = "client-backoff"   # an unanswered user request whose client was waiting to retry


class Request:
    """One attempt. `origin_t` is when the user first sent it; retries are new `Request`s with attempt+1.

    Timestamps (simulated seconds, -1 = not reached): `t` attempt sent, `t_qp` entered a queue-proxy (or a
    pod in Standard mode), `t_start` handed to the model server, `t_first` first byte, `t_done` answered.
    `where` is the object currently holding the request (activator, pod or None) so a timeout can pull it out.
    `data` is free for model-server plug-ins (e.g. a sequence's KV-cache state).
    A server may schedule the request itself as its completion event on SimPy's queue (`callbacks`, `_ok`:
    what `Environment.step` reads), saving a `Call` per request (the simple server does).
    """

    __slots__ = ("id", "origin", "origin_t", "attempt", "t", "input_tokens", "output_tokens",
                 "t_qp", "t_start", "t_first", "t_done", "status", "component", "where", "pod",
                 "via_activator", "measured", "data", "callbacks")
    _ok = True

    def __init__(self, rid: int, origin: int, origin_t: float, attempt: int, t: float,
                 input_tokens: int, output_tokens: int, measured: bool) -> None:
        self.id = rid
        self.origin = origin
        self.origin_t = origin_t
        self.attempt = attempt
        self.t = t
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.t_qp = -1.0
        self.t_start = -1.0
        self.t_first = -1.0
        self.t_done = -1.0
        self.status = 0
        self.component = ""
        self.where = None
        self.pod = None
        self.via_activator = False
        self.measured = measured
        self.data = None

    @property
    def done(self) -> bool:
        return self.status != 0

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return (f"Request(id={self.id}, attempt={self.attempt}, t={self.t:.3f}, status={self.status}, "
                f"component={self.component!r})")
