"""A pod that dies answers its queue-proxy's requests 502 and starts none of the waiting ones on the dead server
(queue_proxy._on_done's `not self.dead`). The app connection is gone, so the queue-proxy answers 502
(knative.dev/pkg network/error_handler.go). SimpleServer.fail_all answers each running request through its done
callback; test_scaling_path_boundaries' crash server never calls it, so the guard went unexercised there."""

from __future__ import annotations

from tests.path_fakes import FakeServer, queue_proxy, req


class _DyingServer(FakeServer):
    def fail_all(self, status: int) -> None:
        running, self.running = self.running, []     # as SimpleServer.fail_all: swap out, then answer each
        for r, done in running:
            done(r, status, None)


def test_waiting_requests_are_not_started_on_a_dead_server():
    qp, server, done = queue_proxy(1, server=_DyingServer())
    for i in (1, 2, 3):
        qp.accept(req(i))
    assert (qp.running, qp.nwait) == (1, 2)
    qp.fail_all(502)
    assert server.running == []                      # nothing was submitted to the dead server
    assert sorted(done) == [(1, 502, "queue-proxy"), (2, 502, "queue-proxy"), (3, 502, "queue-proxy")]
    assert (qp.running, qp.nwait) == (0, 0)
