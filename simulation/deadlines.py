"""Timeouts without one timer per request.

All requests under one timeout value expire in the order they started, so a FIFO of requests and a single
pending timer (at the head's deadline) replaces a timer per request: answered requests are skipped lazily.
Used for the client timeout, the gateway route timeout and Knative's `timeoutSeconds` (activator /
queue-proxy, `pkg/http/handler/timeout.go`).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from simulation.clock import call_later


def deadline_queue(env: Any, timeout: float | None, on_expire: Callable[[Any], None],
                   timeouts: tuple) -> "DeadlineQueue | None":
    """The deadline queue of `timeout` (one of `timeouts`: client, gateway, revision), or None when it can never
    fire. Every attempt not answered at once enters each queue that exists, and all three timers run from the
    attempt's send time `req.t`: only the shortest can answer it. A longer one (by more than float slack) would
    only schedule void timers, so it gets no queue — same results.

    Assumption: no hop latency is modelled, so the gateway and the revision (activator / queue-proxy) see the
    attempt at the instant the client sends it (`Sim.send` adds it to every queue at `req.t`). A hop delay would
    start the later timers after `req.t`, a longer timeout could then fire first, and this pruning would be
    wrong. tests/simulation/test_fused_path.py (`test_every_deadline_timer_starts_at_the_send_time`) fails if
    any queue is ever entered at another time."""
    if not timeout or timeout > min(t for t in timeouts if t) + 1e-3:
        return None
    return DeadlineQueue(env, timeout, on_expire)


class DeadlineQueue:
    __slots__ = ("env", "timeout", "on_expire", "q", "call")

    def __init__(self, env: Any, timeout: float, on_expire: Callable[[Any], None]) -> None:
        self.env = env
        self.timeout = timeout
        self.on_expire = on_expire
        self.q: deque = deque()
        self.call = None

    def add(self, req: Any) -> None:
        q = self.q
        while q and q[0].status:
            q.popleft()
        q.append(req)
        if self.call is None:
            self.call = call_later(self.env, req.t + self.timeout - self.env._now, self._fire)

    def _fire(self) -> None:
        self.call = None
        q = self.q
        now = self.env._now
        timeout = self.timeout
        while q:
            req = q[0]
            if req.status:
                q.popleft()
                continue
            due = req.t + timeout
            if due <= now + 1e-9:
                q.popleft()
                self.on_expire(req)
                continue
            self.call = call_later(self.env, due - now, self._fire)
            return
