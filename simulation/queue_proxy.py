"""queue-proxy: the per-pod breaker in front of the model server (knative/serving `pkg/queue`).

- `containerConcurrency` (CC) ≥ 1 → breaker with CC running slots and a queue of 10·CC
  (`pkg/queue/sharedmain/main.go: buildBreaker`; `pkg/queue/breaker.go: Maybe` — totalSlots = 11·CC); a request
  arriving when queued + running = totalSlots is answered **503** `pending request queue full`
  (`pkg/queue/handler.go: ProxyHandler`).
- CC = 0 → no breaker: no limit, no queue.
- `timeoutSeconds` wraps breaker + proxy (`pkg/http/handler/timeout.go`), so queue time counts; the deadline
  is enforced by the engine's deadline queues (one per timeout value) and answered 504 here.
- App connection lost (pod crash) → **502** (`vendor/knative.dev/pkg/network/error_handler.go`).

The queue depth factor (10) can be overridden as a what-if (`what_if.queue_depth_factor`, 0 = no queue, the
Erlang-B limit); Knative itself has no such knob. In Standard (raw) mode there is no queue-proxy: the same
object runs with CC = 0 as a pass-through.

Fused path (the common case, `FUSED`): in front of a `simple` server without admission limits or parallelism
cap, the server's `check`/`submit`/`_finish` and this proxy's `_on_done` collapse into one start and one
completion callback per request (`fused.FusedPath.done`, which also does the engine's `complete` for the 200);
same draws, same events, same results (tests/simulation/test_fused_path.py).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from simulation.request import QUEUE_PROXY, SERVER, UNAVAILABLE
from simulation.server import SimpleServer

FUSED = True   # False forces the general path (read when a Sim is made; the equivalence tests run both)


class QueueProxy:
    __slots__ = ("sim", "pod", "server", "cc", "slots", "running", "nwait", "waiting", "dead", "env", "_done_cb",
                 "plain", "_plain_done")

    def __init__(self, sim: Any, pod: Any, server: Any, cc: int, depth_factor: int) -> None:
        self.sim = sim
        self.env = sim.env
        self.pod = pod
        self.server = server
        self.cc = cc
        self.slots = cc * (1 + depth_factor) if cc > 0 else 0
        self.running = 0
        self.nwait = 0
        self.waiting: deque = deque()
        self.dead = False
        self._done_cb = self._on_done
        fused = getattr(sim, "fused", None)   # `engine.FusedPath`, None when `FUSED` is off
        self.plain = fused is not None and type(server) is SimpleServer and server.plain
        self._plain_done = fused.done_cb if self.plain else None

    def accept(self, req: Any) -> None:
        """A request arrives (from the ingress directly, or proxied by the activator)."""
        req.t_qp = self.env._now
        req.pod = self.pod
        self.pod.enter(req)
        cc = self.cc
        if cc > 0:
            if self.running + self.nwait >= self.slots:
                self.sim.complete(req, UNAVAILABLE, QUEUE_PROXY)
                return
            if self.running >= cc:
                req.where = self
                self.waiting.append(req)
                self.nwait += 1
                return
        if self.plain:    # fused: `_start` for the plain simple server
            req.where = self
            req.t_start = req.t_qp
            self.running += 1
            self.server.start(req, self._plain_done, self._done_cb, 0.0)
            return
        self._start(req)

    def _start(self, req: Any) -> None:
        req.where = self
        req.t_start = self.env._now
        if self.plain:    # fused: the plain simple server admits everything and starts it at once
            self.running += 1
            self.server.start(req, self._plain_done, self._done_cb, 0.0)
            return
        status = self.server.check(req)
        if status is not None:
            req.where = None
            self.sim.complete(req, status, SERVER)
            return
        self.running += 1
        self.server.submit(req, self._done_cb)

    def _on_done(self, req: Any, status: int, ttfb: Any) -> None:
        self.running -= 1
        req.where = None
        if status == 200:
            req.t_first = req.t_start + (ttfb or 0.0)
        if self.nwait and not self.dead:
            self._next()
        self.sim.complete(req, status, QUEUE_PROXY if status == 502 else SERVER)

    def _next(self) -> None:
        waiting = self.waiting
        cc = self.cc
        while self.nwait and (cc == 0 or self.running < cc):
            req = waiting.popleft()
            if req.status:
                continue  # already answered (timed out) — its count was taken off then
            self.nwait -= 1
            self._start(req)

    def abandon(self, req: Any) -> None:
        """The request timed out or the client went away: take it out of the queue or the server."""
        req.where = None
        if req.t_start < 0 or req.t_start < req.t_qp:
            self.nwait -= 1
        else:
            self.server.cancel(req)
            self.running -= 1
            if self.nwait and not self.dead:
                self._next()

    def first_byte_at(self, req: Any) -> float | None:
        """When the server sent `req`'s first byte, if it is at the server and has (a stream under way)."""
        if req.t_start < 0 or req.t_start < req.t_qp:
            return None
        return self.server.first_byte_at(req)

    def fail_all(self, status: int) -> None:
        """The app died: in-flight and queued requests get `status` (502) from the queue-proxy."""
        self.dead = True
        self.server.fail_all(status)
        waiting, self.waiting = self.waiting, deque()
        self.nwait = 0
        for req in waiting:
            if not req.status:
                req.where = None
                self.sim.complete(req, status, QUEUE_PROXY)

    @property
    def in_flight(self) -> int:
        return self.running + self.nwait
