"""Third round of boundary tests: what a mutmut run of simulation/activator.py and simulation/queue_proxy.py
(2026-12-02) showed no test would notice. Each names the Knative code it pins; the fakes are tests/path_fakes.py.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import simpy

from path_fakes import FakePod, activator, queue_proxy, req as make_req
from simulation.server import SimpleServer, SimpleServerSpec


def _at(env: simpy.Environment, t: float) -> None:
    env.run(until=t)


# -- the activator's stat (pkg/activator/handler/concurrency_reporter.go) ------------------------------------------

def test_activator_stat_is_the_time_average_of_requests_in_it_per_period():
    """Two requests from t = 0, one answered at 0.5: 2 × 0.5 + 1 × 0.5 = 1.5 request-seconds in the first second;
    the same 1.5 over a 2 s period is 0.75 (the area is divided by the period, not multiplied)."""
    env = simpy.Environment()
    pod = FakePod(0)
    act = activator(4, [pod], env)
    a, b = make_req(1), make_req(2)
    act.accept(a)
    act.accept(b)
    _at(env, 0.5)
    a.pod = pod
    act.leave(a)
    _at(env, 1.0)
    assert act.scrape(1.0) == (1.5, 2, True)             # the first report counts from 0 (mark (0, 0))
    _at(env, 3.0)
    assert act.scrape(2.0) == (1.0, 0, True)             # b alone for 2 s: 2 request-seconds / 2 s
    assert act.scrape(1.0, at=3.0) == (0.0, 0, True)     # no time has passed, but b is still in the activator


def test_activator_had_activity_when_a_request_came_and_went_in_no_time():
    """A request accepted and answered at the same instant adds no area but counts: the period had activity."""
    env = simpy.Environment()
    pod = FakePod(0)
    act = activator(4, [pod], env)
    r = make_req(1)
    act.accept(r)
    r.pod = pod
    act.leave(r)
    assert act.scrape(1.0) == (0.0, 1, True)


# -- load balancing (pkg/activator/net/lb_policy.go) --------------------------------------------------------------

def test_cc0_takes_the_less_loaded_of_two_random_pods_and_the_first_drawn_on_a_tie():
    """randomChoice2Policy: two pods drawn at random, the one with fewer requests in flight; on a tie the first."""
    busy, idle = FakePod(0, act_n=5), FakePod(1, act_n=1)
    act = activator(0, [busy, idle])
    assert all(act._pick() is idle for _ in range(20))
    tie = [FakePod(0, act_n=2), FakePod(1, act_n=2), FakePod(2, act_n=2)]
    act = activator(0, tie, seed=7)
    draws = random.Random(7)
    for _ in range(20):
        first, _second = draws.sample(act.pods, 2)
        assert act._pick() is first


def test_round_robin_skips_a_full_pod_and_goes_on_after_the_one_it_took():
    """CC > 3: round robin from the last pick, skipping pods at capacity (`lb_policy.go: newRoundRobinPolicy`)."""
    pods = [FakePod(0), FakePod(1, act_n=4), FakePod(2)]          # pod 1 full at CC 4
    act = activator(4, pods)
    picked = []
    for i in range(4):
        act.accept(make_req(i))
        picked.append(next(p.id for p in pods if p.got and p.got[-1].id == i))
    assert picked == [0, 2, 0, 2]
    act._rr = 1                                           # the cursor on the full pod: the next one with room
    assert act._pick() is pods[2] and act._rr == 0


@pytest.mark.parametrize("cc", [4, 5])
def test_round_robin_buffers_when_every_pod_is_at_capacity(cc):
    pod = FakePod(0)
    act = activator(cc, [pod])
    for i in range(cc + 1):
        act.accept(make_req(i))
    assert len(pod.got) == cc and act.nwait == 1


def test_drain_fills_a_pod_to_capacity_and_no_further():
    """Two requests buffered behind a full CC 2 pod; one answered: exactly one moves to the pod."""
    pod = FakePod(0)
    act = activator(2, [pod])
    reqs = [make_req(i) for i in range(4)]
    for r in reqs:
        act.accept(r)
    assert act.nwait == 2 and pod.act_n == 2
    reqs[0].pod = pod
    act.leave(reqs[0])
    assert pod.act_n == 2 and act.nwait == 1 and pod.got == reqs[:3]


def test_remove_pod_forgets_it_and_tolerates_a_second_removal():
    a, b = FakePod(0), FakePod(1)
    act = activator(4, [a, b])
    act.remove_pod(a)
    act.remove_pod(a)
    assert act.pods == [b]


# -- queue-proxy (pkg/queue) ---------------------------------------------------------------------------------------

def test_a_queued_request_is_held_by_thequeue_proxy():
    """`where` is what a timeout asks to let go of the request (`engine._expire` → `where.abandon`)."""
    qp, _, _ = queue_proxy(cc=1)
    running, queued = make_req(1), make_req(2)
    qp.accept(running)
    qp.accept(queued)
    assert running.where is qp and queued.where is qp and qp.nwait == 1


def test_a_200_without_a_first_byte_time_has_its_first_byte_at_the_start():
    qp, server, done = queue_proxy(cc=1)
    req = make_req(1)
    qp.accept(req)
    r, finish = server.running[0]
    finish(r, 200, None)
    assert req.t_first == req.t_start and done == [(1, 200, "server")]


def test_a_retry_queued_behind_a_running_request_is_waiting_not_running():
    """A request object that ran before (an earlier pod, t_start ≥ 0) and now waits in this queue-proxy
    (t_start < t_qp) is taken out of the queue on a timeout, not cancelled at the server, and has no first byte."""
    qp, server, _ = queue_proxy(cc=1)
    qp.accept(make_req(1))
    again = make_req(2)
    again.t_start = 0.0
    qp.env.run(until=5.0)
    qp.accept(again)                                       # queued at t = 5 behind request 1
    assert again.t_qp == 5.0 and again.t_start == 0.0
    assert qp.first_byte_at(again) is None
    again.status = 504
    qp.abandon(again)
    assert qp.nwait == 0 and qp.running == 1 and server.cancelled == []


def test_first_byte_is_asked_of_the_server_for_that_request():
    qp, _, _ = queue_proxy(cc=2)
    a, b = make_req(1), make_req(2)
    qp.accept(a)
    qp.accept(b)
    assert (qp.first_byte_at(a), qp.first_byte_at(b)) == (101.0, 102.0)


def test_the_fused_path_engages_for_a_plain_simple_server_only():
    """The fast path (issue 12) must not silently switch off: a plain `simple` server behind a queue-proxy of a Sim
    with a `FusedPath` takes it; a server with an admission limit, or no fused path, does not."""
    env = simpy.Environment()
    fused = SimpleNamespace(done_cb=("fused-done",))
    plain = SimpleServer(env, None, SimpleServerSpec(), random.Random(1))
    capped = SimpleServer(env, None, SimpleServerSpec(max_concurrent=4), random.Random(1))
    qp, _, _ = queue_proxy(1, plain, fused)
    assert qp.plain is True and qp._plain_done == ("fused-done",)
    assert queue_proxy(1, capped, fused)[0].plain is False
    assert queue_proxy(1, plain, None)[0].plain is False


def test_a_plain_request_started_from_the_queue_is_answered_when_the_pod_dies():
    """The fused path starts a queued request with the queue-proxy's own completion for failures: a pod that
    dies with it running answers it 502 (`fail_all`), as the general path does."""
    env = simpy.Environment()
    fused = SimpleNamespace(done_cb=(lambda req: None,))
    server = SimpleServer(env, None, SimpleServerSpec(base_s=10.0), random.Random(1))
    qp, _, done = queue_proxy(1, server, fused)
    first, queued = make_req(1), make_req(2)
    qp.accept(first)
    qp.accept(queued)
    server.cancel(first)                                   # first leaves (timed out) ...
    qp.running -= 1
    qp._next()                                             # ... and the queued one starts through `_start`
    assert queued in server.calls and qp.running == 1
    qp.fail_all(502)
    assert done == [(2, 502, "queue-proxy")]
