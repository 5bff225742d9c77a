"""Boundary tests for the behaviours mutation testing showed no test would notice breaking (issue 9).

Table rows sit at each threshold, in the style of Knative's `autoscaler_test.go`; each names the code it pins.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import simpy

from catalog import DEFAULT
from simulation.activator import Activator
from simulation.autoscaler.hpa import HpaCalculator, HpaSpec
from simulation.autoscaler.kpa import DeciderSpec, KpaDecider
from simulation.gpu.memory import DEFAULT_GPU_MEMORY_UTILIZATION, prefill_activation_bytes, vllm_budget
from simulation.queue_proxy import QueueProxy
from path_fakes import FakePod, FakeServer, activator, queue_proxy, req as make_req


def spec(target=10.0, tbc=100.0, activation=1, delay=0.0) -> DeciderSpec:
    return DeciderSpec(target_value=target, total_value=target / 0.75, target_burst_capacity=tbc, panic_threshold=2.0,
                       max_scale_up_rate=10.0, max_scale_down_rate=10.0, stable_window_s=60.0,
                       scale_down_delay_s=delay, activation_scale=activation)


# -- KPA (pkg/autoscaler/scaling/autoscaler.go) -------------------------------------------------------------------

@pytest.mark.parametrize("ready, panics", [(0, False), (1, False), (2, True), (3, True)])
def test_new_decider_starts_in_panic_above_one_ready_pod(ready, panics):
    """newAutoscaler: `if podCounter > 1 { pt = now }` — two ready pods already start in panic."""
    d = KpaDecider(spec(), ready_pods=ready, now=0.0)
    assert d.in_panic is panics and d.max_panic_pods == (ready if panics else 0)


@pytest.mark.parametrize("activation, stable, want", [
    (1, 1.0, 1), (2, 1.0, 2), (3, 1.0, 3),   # a little load: at least activation-scale pods
    (2, 0.0, 0),                              # no load: activation-scale does not hold pods up (dspc = 0)
    (2, 35.0, 4),                             # more load than activation-scale needs: the load decides
])
def test_activation_scale_in_stable_mode(activation, stable, want):
    r = KpaDecider(spec(activation=activation)).scale(10.0, 1, stable, stable)
    assert r.desired == want


@pytest.mark.parametrize("activation, panic, want", [(3, 5.0, 3), (1, 5.0, 1), (3, 0.0, 0)])
def test_activation_scale_in_panic_mode(activation, panic, want):
    """In panic desired = max(ds, dp) with dp raised to activation-scale when dppc > 0 (not lowered to it)."""
    d = KpaDecider(spec(activation=activation))
    d.panic_time, d.max_panic_pods = 0.0, 0
    r = d.scale(10.0, 1, 0.0, panic)   # dspc 0, dppc 1: below the threshold, still inside the panic window
    assert d.in_panic and r.desired == want


@pytest.mark.parametrize("tbc, ready, panic, want", [
    (0.0, 1, 5.0, 0),                                         # TBC 0: EBC 0
    (-1.0, 1, 5.0, -1),                                       # TBC -1: unlimited
    (0.5, 1, 5.0, math.floor(10 / 0.75 - 0.5 - 5.0)),        # fractional TBC: the formula, not 0 or -1
    (0.99, 2, 5.0, math.floor(2 * 10 / 0.75 - 0.99 - 5.0)),
    (211.0, 3, 5.0, math.floor(3 * 10 / 0.75 - 211 - 5.0)),
])
def test_excess_burst_capacity(tbc, ready, panic, want):
    assert KpaDecider(spec(tbc=tbc)).scale(10.0, ready, 5.0, panic).excess_burst_capacity == want


def test_update_replaces_the_spec_and_keeps_the_delay_window_new_made():
    """autoscaler.go: Update only swaps the spec; the delay window is the one New made from the first spec."""
    d = KpaDecider(spec(delay=10.0))
    assert d.scale(0.0, 5, 50.0, 50.0).desired == 5
    window = d.delay_window
    d.update(spec(delay=10.0, target=5.0))          # the target changes, the window (and its max of 5) stays
    assert d.spec.target_value == 5.0 and d.delay_window is window
    assert d.scale(2.0, 5, 0.0, 0.0).desired == 5
    d.update(spec(delay=0.0, target=5.0))           # a spec without a delay: New's window still holds the 5
    assert d.delay_window is window
    assert d.scale(4.0, 5, 0.0, 0.0).desired == 5
    assert d.scale(12.0, 5, 0.0, 0.0).desired == 0  # ... until it scrolls out of New's 10 s
    plain = KpaDecider(spec())
    plain.update(spec(delay=30.0))                  # a decider made without a delay gets no window
    assert plain.delay_window is None
    assert plain.scale(0.0, 5, 50.0, 50.0).desired == 5 and plain.scale(2.0, 5, 0.0, 0.0).desired == 0


# -- activator load balancing (pkg/activator/net/lb_policy.go) and stats ------------------------------------------

def _activator(cc: int, pods: int) -> tuple[Activator, list[FakePod]]:
    ps = [FakePod(i) for i in range(pods)]
    return activator(cc, ps), ps


@pytest.mark.parametrize("cc, order", [
    (1, [0, 1, 2]),                          # first available: each pod takes one
    (3, [0, 0, 0, 1, 1, 1, 2]),              # CC = 3 is still first-available (lb_policy: cc <= 3)
    (4, [0, 1, 2, 0, 1, 2, 0]),              # CC > 3: round robin over the pods
    (5, [0, 1, 2, 0, 1, 2, 0, 1, 2]),
])
def test_activator_balancing_by_container_concurrency(cc, order):
    act, pods = _activator(cc, 3)
    picked = []
    for i in range(len(order)):
        act.accept(make_req(i))
        picked.append(next(p.id for p in pods if p.got and p.got[-1].id == i))
    assert picked == order


def test_activator_buffers_when_every_pod_is_full_at_the_boundary():
    act, pods = _activator(3, 1)
    for i in range(4):
        act.accept(make_req(i))
    assert [len(p.got) for p in pods] == [3] and act.nwait == 1


def test_activator_had_activity_stat():
    act, pods = _activator(4, 1)
    assert act.scrape(1.0)[2] is False                     # nothing happened
    act.accept(make_req(0))
    assert act.scrape(1.0)[2] is True                      # a request arrived and is in flight
    req = pods[0].got[0]
    req.pod = pods[0]
    act.leave(req)
    assert act.scrape(1.0)[2] is False                     # answered before this period, nothing since (time 0)
    assert act.scrape(1.0)[:2] == (0.0, 0)


# -- queue-proxy (pkg/queue/breaker.go, pkg/http/handler/timeout.go) -----------------------------------------------

def test_a_request_that_times_out_while_queued_leaves_the_queue():
    qp, server, done = queue_proxy(cc=1)
    first, queued, third = make_req(1), make_req(2), make_req(3)
    qp.accept(first)
    qp.accept(queued)
    assert (qp.running, qp.nwait) == (1, 1)
    queued.status = 504                         # the engine's deadline answered it while it waited
    qp.abandon(queued)
    assert (qp.running, qp.nwait) == (1, 0) and not server.cancelled   # not the server's: it never started
    qp.accept(third)
    req, finish = server.running[0]
    finish(req, 200, 0.1)                       # the running one ends: the next *waiting* request starts
    assert [r.id for r, _ in server.running] == [1, 3]
    assert (qp.running, qp.nwait) == (1, 0)


def test_a_request_that_times_out_while_running_is_cancelled_and_the_queue_moves():
    qp, server, done = queue_proxy(cc=1)
    running, queued = make_req(1), make_req(2)
    qp.accept(running)
    qp.accept(queued)
    running.status = 504
    qp.abandon(running)
    assert server.cancelled == [running] and [r.id for r, _ in server.running] == [1, 2]


@pytest.mark.parametrize("cc, accepted", [(1, 11), (2, 22), (4, 44)])
def test_queue_proxy_answers_503_past_eleven_times_cc(cc, accepted):
    qp, server, done = queue_proxy(cc)
    for i in range(accepted + 1):
        qp.accept(make_req(i))
    assert qp.in_flight == accepted and done == [(accepted, 503, "queue-proxy")]


# -- HPA (replica_calculator.go GetResourceReplicas) --------------------------------------------------------------

@pytest.mark.parametrize("current, ready, unready, metric_sum, want", [
    (4, 3, 1, 300.0, 6),     # ratio 2 over 3 ready; unready at 0: 300/(4·50) = 1.5 → ceil(1.5·4) = 6 > current
    (4, 2, 2, 400.0, 8),     # 400/(4·50) = 2 → 8
    (10, 2, 2, 400.0, 10),   # → 8 < current 10: a rebalanced scale-up never shrinks the workload
    (4, 3, 1, 160.0, 4),     # ratio 1.07 within tolerance over the ready pods: keep
])
def test_hpa_scale_up_with_unready_pods(current, ready, unready, metric_sum, want):
    calc = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=20, target=50.0))
    assert calc.replicas_for_metric(current, ready, unready, metric_sum) == want


# -- GPU memory (vllm worker.determine_num_available_blocks; a Transformers forward pass) -----------------------

def test_vllm_default_gpu_memory_utilization_is_090():
    assert DEFAULT_GPU_MEMORY_UTILIZATION == 0.90
    g, m = DEFAULT.gpus["A10G"], DEFAULT.models["llama-3-8b"]
    b = vllm_budget(g, m)
    assert b.gpu_memory_utilization == 0.90 and b == vllm_budget(g, m, gpu_memory_utilization=0.90)
    assert b.kv_budget_bytes == int(b.total_bytes * 0.90) - b.weights_bytes - b.activation_bytes - b.overhead_bytes
    assert vllm_budget(g, m, gpu_memory_utilization=1.0).kv_budget_bytes > b.kv_budget_bytes


@pytest.mark.parametrize("tokens, eager, all_logits, want", [
    # llama-2-7b: per token 24 × 4096 (bf16 temporaries) = 98,304 bytes, plus the fp32 logits: generate()'s
    # logits_to_keep=1 keeps one row (4 × 32000) — every position's with all_logits; eager attention adds
    # 32 heads × L² × 6 bytes (SDPA, the default, none).
    (1000, False, False, 98_304_000 + 128_000),
    (1000, False, True, 98_304_000 + 128_000_000),
    (1000, True, False, 98_304_000 + 128_000 + 32 * 1000 ** 2 * 6),
    (4000, True, True, 4000 * 226_304 + 32 * 4000 ** 2 * 6),
    (0, True, True, 0),
])
def test_prefill_activation_estimate_is_pinned(tokens, eager, all_logits, want):
    got = prefill_activation_bytes(DEFAULT.models["llama-2-7b"], tokens, eager_attention=eager, all_logits=all_logits)
    assert got == want


def test_prefill_activation_estimate_splits_over_tensor_parallel_ranks_and_skips_vision():
    m = DEFAULT.models["llama-2-7b"]
    assert prefill_activation_bytes(m, 1000, tp=2, eager_attention=True, all_logits=True) == (
        226_304_000 // 2 + 16 * 1000 ** 2 * 6)
    assert prefill_activation_bytes(m, 1, all_logits=True) == 226_304
    assert prefill_activation_bytes(m, 1000, bytes_per_token=100) == 100_000
    assert prefill_activation_bytes(DEFAULT.models["vit-large-16"], 1000) == 0



# -- second round: what the mutmut run of kpa/activator/queue_proxy showed unpinned -------------------------------

class _CrashServer(FakeServer):
    def __init__(self):
        super().__init__()
        self.failed_with = None

    def fail_all(self, status):
        self.failed_with = status

    def first_byte_at(self, req):
        return 42.0


def test_queue_proxy_fail_all_answers_the_queue_with_502_once_and_stops():
    done = []
    sim = SimpleNamespace(env=simpy.Environment(),
                          complete=lambda req, status, comp: done.append((req.id, status, comp)))
    server = _CrashServer()
    qp = QueueProxy(sim, SimpleNamespace(enter=lambda req: None), server, 1, 10)
    running, waiting, answered = make_req(1), make_req(2), make_req(3)
    for r in (running, waiting, answered):
        qp.accept(r)
    answered.status = 504                       # timed out already: not answered twice
    assert qp.first_byte_at(waiting) is None and qp.first_byte_at(running) == 42.0
    qp.fail_all(502)
    assert server.failed_with == 502 and qp.dead and qp.nwait == 0
    assert done == [(2, 502, "queue-proxy")] and waiting.where is None


def test_queue_proxy_abandon_of_a_running_request_frees_exactly_one_slot():
    qp, server, done = queue_proxy(cc=2)
    reqs = [make_req(i) for i in range(4)]
    for r in reqs:
        qp.accept(r)
    assert (qp.running, qp.nwait) == (2, 2)
    reqs[0].status = 504
    qp.abandon(reqs[0])
    assert (qp.running, qp.nwait) == (2, 1) and server.cancelled == [reqs[0]]


def test_activator_counts_requests_and_frees_first_available_slots_in_address_order():
    act, pods = _activator(1, 2)
    a, b, c = make_req(1), make_req(2), make_req(3)
    act.accept(a)
    act.accept(b)
    act.accept(c)                               # both pods full: buffered
    assert act.nwait == 1 and act.scrape(1.0)[1] == 3
    a.pod = pods[0]
    act.leave(a)                                # pod 0 has room again: the buffered request goes there
    assert pods[0].got == [a, c] and act.nwait == 0 and c.where is None
    pods[1].act_ready = False                   # a pod on its way out is not offered again
    b.pod = pods[1]
    act.leave(b)
    assert not [p for _, p in act._free if p is pods[1]]


def test_activator_drain_skips_answered_requests_and_abandon_forgets_them():
    act, pods = _activator(1, 1)
    first, timed_out, third = make_req(1), make_req(2), make_req(3)
    for r in (first, timed_out, third):
        act.accept(r)
    assert act.nwait == 2
    timed_out.status = 504
    act.abandon(timed_out)
    assert act.nwait == 1 and timed_out.where is None
    first.pod = pods[0]
    act.leave(first)
    assert pods[0].got == [first, third] and act.nwait == 0


@pytest.mark.parametrize("panic, panics", [(10.0, False), (10.1, True)])
def test_panic_starts_at_exactly_the_threshold(panic, panics):
    """`dppc / rp >= panicThreshold`: dppc = ceil(panic / target) = 2 pods on 1 ready pod at threshold 200 %."""
    d = KpaDecider(spec())
    d.scale(10.0, 1, 1.0, panic)
    assert d.in_panic is panics


def test_unreachable_revision_scales_to_zero_and_a_sub_second_delay_still_holds():
    d = KpaDecider(DeciderSpec(target_value=10, total_value=10 / 0.75, reachable=False))
    assert d.scale(10.0, 4, 0.0, 0.0).desired == 0        # maxDown 0 when unreachable: no floor at all
    d = KpaDecider(spec(delay=0.5))
    assert d.scale(0.0, 5, 50.0, 50.0).desired == 5
    assert d.scale(0.25, 5, 0.0, 0.0).desired == 5      # within the 0.5 s scale-down delay
