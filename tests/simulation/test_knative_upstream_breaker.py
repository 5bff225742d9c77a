"""The queue-proxy's breaker (simulation/queue_proxy.py) against knative/serving `pkg/queue/breaker_test.go`
(Knative 1.23) and `pkg/queue/sharedmain/main.go: buildBreaker` (QueueDepth = 10 × containerConcurrency, so
11 × CC slots in all). breaker_test.go's BreakerParams{QueueDepth: 1, MaxConcurrency: 1} is a QueueProxy with
CC 1 and a queue-depth factor of 1; a request the breaker refuses (ErrRequestQueueFull) is the queue-proxy's 503,
a request whose context is cancelled while queued is one that timed out (`QueueProxy.abandon`)."""

from __future__ import annotations

from types import SimpleNamespace

import simpy

from simulation.queue_proxy import QueueProxy
from simulation.request import UNAVAILABLE


class _Hold:
    """A server that runs whatever it is given until `release` finishes the oldest (breaker_test's requestor
    `processSuccessfully`)."""

    def __init__(self) -> None:
        self.running: list = []

    def check(self, req):
        return None

    def submit(self, req, cb) -> None:
        self.running.append((req, cb))

    def cancel(self, req) -> None:
        self.running = [x for x in self.running if x[0] is not req]

    def release(self) -> int:
        req, cb = self.running.pop(0)
        cb(req, 200, 0.0)
        return req.id


def _breaker(cc: int, depth_factor: int) -> tuple[QueueProxy, _Hold, list]:
    done: list = []
    sim = SimpleNamespace(env=simpy.Environment(), fused=None,
                          complete=lambda req, status, where: (setattr(req, "status", status),
                                                               done.append((req.id, status))))
    server = _Hold()
    return QueueProxy(sim, SimpleNamespace(enter=lambda req: None), server, cc, depth_factor), server, done


def _req(i: int) -> SimpleNamespace:
    return SimpleNamespace(id=i, status=0, t_qp=-1.0, t_start=-1.0, where=None, pod=None, t_first=None)


def test_breaker_overload():
    """TestBreakerOverload: capacity 2 (1 running + 1 queued); the third request fails; the first two succeed."""
    qp, server, done = _breaker(1, 1)
    for i in range(3):
        qp.accept(_req(i))
    assert done == [(2, UNAVAILABLE)] and qp.in_flight == 2
    assert (server.release(), server.release()) == (0, 1)
    assert done[1:] == [(0, 200), (1, 200)] and qp.in_flight == 0


def test_breaker_no_overload():
    """TestBreakerNoOverload: at capacity, process one and send one, twice, then process the rest: nothing fails."""
    qp, server, done = _breaker(1, 1)
    qp.accept(_req(0))
    qp.accept(_req(1))
    for i in (2, 3):
        server.release()
        qp.accept(_req(i))
        assert qp.in_flight == 2
    server.release()
    server.release()
    assert done == [(i, 200) for i in range(4)]


def test_breaker_cancel():
    """TestBreakerCancel (from UpdateConcurrency(1) on): one running, one queued, the third refused; a queued
    request cancelled (timed out) frees its slot for the next, is never started, and the others succeed."""
    qp, server, done = _breaker(1, 1)
    a, b = _req(0), _req(1)
    qp.accept(a)
    qp.accept(b)
    qp.accept(_req(2))
    assert done == [(2, UNAVAILABLE)]
    b.status = 504                                     # its context is done while queued
    qp.abandon(b)
    assert qp.in_flight == 1
    qp.accept(_req(3))
    assert qp.in_flight == 2 and done == [(2, UNAVAILABLE)]
    assert (server.release(), server.release()) == (0, 3)
    assert done[1:] == [(0, 200), (3, 200)] and qp.in_flight == 0


def test_build_breaker_holds_11_times_cc():
    """buildBreaker: CC 4 → QueueDepth 40, 44 slots: 4 running and 40 queued; the 45th concurrent request is the
    first 503."""
    qp, _, done = _breaker(4, 10)
    for i in range(45):
        qp.accept(_req(i))
    assert done == [(44, UNAVAILABLE)]
    assert (qp.running, qp.nwait) == (4, 40)


def test_cc_0_has_no_breaker():
    """buildBreaker: containerConcurrency 0 → no breaker, nothing refused, nothing queued."""
    qp, server, done = _breaker(0, 10)
    for i in range(1000):
        qp.accept(_req(i))
    assert done == [] and qp.running == 1000 and qp.nwait == 0 and len(server.running) == 1000
