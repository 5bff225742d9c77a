"""The fused request path (queue-proxy + plain simple server, `queue_proxy.FUSED`) equals the general path.

Randomized small scenarios over the request path's branches (Knative with and without the activator, Standard
mode, CC 0–8, every service-time law, admission limits, parallelism, timeouts, retries with a budget, a gateway
bucket) run with the fused path on and off: the seeded JSON reports must be identical.
"""

from __future__ import annotations

import json
import random

import pytest

import simulation.queue_proxy as queue_proxy
from simulation import load_scenario
from simulation.deadlines import DeadlineQueue
from simulation import engine, fused
from simulation.engine import Sim
from simulation import metrics
from simulation.metrics import Recorder, add_in_order
from simulation.request import Request
from simulation.timeline import Timeline
from tests.simulation.conftest import isvc


def random_scenario(seed: int, isvc) -> dict:
    r = random.Random(seed)
    standard = r.random() < 0.25
    ann = {"serving.kserve.io/deploymentMode": "Standard"} if standard else {}
    if r.random() < 0.4:
        ann["autoscaling.knative.dev/target-burst-capacity"] = r.choice(["0", "-1", "10"])
    lo = r.choice([1, 2]) if standard else r.choice([0, 1, 1, 2])
    timeout = r.choice([None, None, 3, 30])
    svc = isvc(cc=r.choice([0, 1, 1, 2, 3, 4, 8]), min_replicas=lo, max_replicas=max(1, lo + r.choice([0, 1, 3])),
               annotations=ann, **({"timeout": timeout} if timeout else {}))
    server = {"kind": "simple", "base_s": r.choice([0.05, 0.2, 0.5, 1.0]),
              "distribution": r.choice(["exponential", "deterministic", "lognormal"])}
    if r.random() < 0.3:
        server.update(per_input_token_s=0.0005, per_output_token_s=0.002)
    for key, values, p in (("max_concurrent", [1, 2, 5], 0.15), ("parallelism", [1, 2], 0.15),
                           ("slowdown_per_concurrent", [0.1], 0.15), ("max_input_tokens", [300], 0.1)):
        if r.random() < p:
            server[key] = r.choice(values)
    m = {"inferenceService": svc, "server": server, "duration_s": r.choice([60, 150]), "warmup_s": 5,
         "workload": {"kind": "gamma", "cv": r.choice([0.5, 1.0, 2.0]), "rate": r.choice([1.0, 4.0, 10.0, 25.0]),
                      "input_tokens": {"dist": "uniform", "low": 10, "high": 600}, "output_tokens": 50},
         "cluster": {"gpus_per_node": 4, "max_nodes": 3, "image_gib": r.choice([0, 2]), "warmup_s": 2}}
    if r.random() < 0.5:
        m["client"] = {"timeout_s": r.choice([1.0, 5.0, 60.0]), "max_retries": r.choice([0, 2]),
                       "backoff_base_s": 0.2, "jitter": r.choice(["full", "equal", "none"]),
                       **({"retry_budget": {"max_tokens": 10, "token_ratio": 0.1}} if r.random() < 0.5 else {})}
    if r.random() < 0.4:
        m["gateway"] = {"rate_limit": {"rate_per_s": r.choice([2.0, 8.0]), "burst": 5},
                        "timeout_s": r.choice([0.5, 4.0])}
    return m


def run(mapping: dict, seed: int, fused: bool, monkeypatch) -> tuple[str, bool]:
    """(the report's JSON, whether any pod took the fused path)."""
    monkeypatch.setattr(queue_proxy, "FUSED", fused)
    sim = Sim(load_scenario(mapping), seed)
    out = sim.run().to_json()
    return out, any(s.plain and fused for s in sim.servers)


@pytest.mark.parametrize("seed", range(24))
def test_fused_path_gives_the_same_report_as_the_general_path(scn, seed, monkeypatch):
    m = random_scenario(seed, scn.isvc)
    assert run(m, seed, True, monkeypatch)[0] == run(m, seed, False, monkeypatch)[0]


def test_the_scenarios_exercise_the_fused_path_and_a_change_in_it_is_caught(scn, monkeypatch):
    took = [run(random_scenario(s, scn.isvc), s, True, monkeypatch)[1] for s in range(24)]
    assert 8 <= sum(took) < 24          # both paths are compared on many scenarios
    seed = took.index(True)
    m = random_scenario(seed, scn.isvc)
    general, _ = run(m, seed, False, monkeypatch)
    done = fused.FusedPath.done
    monkeypatch.setattr(fused.FusedPath, "done",
                        lambda fp, req: (setattr(req, "t_start", req.t_start * 1.001), done(fp, req)))
    assert run(m, seed, True, monkeypatch)[0] != general


def every_queue(env, timeout, on_expire, timeouts):
    """`engine.deadline_queue` without the pruning: a queue for every timeout that is set."""
    return DeadlineQueue(env, timeout, on_expire) if timeout else None


@pytest.mark.parametrize("seed", range(0, 24, 2))
def test_dropping_deadlines_that_cannot_fire_changes_nothing(scn, seed, monkeypatch):
    """Only the shortest of the client, gateway and revision timeouts can answer an attempt (all run from its
    send time), so the engine keeps no queue for the longer ones: the same report as keeping them all."""
    m = random_scenario(seed, scn.isvc)
    m["client"] = dict(m.get("client", {}), timeout_s=[1.0, 5.0, 60.0][seed % 3])
    m["gateway"] = dict(m.get("gateway", {}), timeout_s=[0.5, 4.0, 400.0][seed % 4 % 3])
    lean = Sim(load_scenario(m), seed)
    assert sum(q is not None for q in (lean.dq_client, lean.dq_gateway, lean.dq_knative)) == 1
    report = lean.run().to_json()

    monkeypatch.setattr(engine, "deadline_queue", every_queue)
    assert Sim(load_scenario(m), seed).run().to_json() == report


def test_every_deadline_timer_starts_at_the_send_time(scn, monkeypatch):
    """`deadlines.deadline_queue` keeps a queue for the shortest timeout only because the client, gateway and
    revision timers all start at the attempt's send time `req.t` (no hop latency is modelled). With every queue
    kept, each is entered only at `req.t`, on scenarios where all three see attempts (with the activator, retries
    and a rate-limited gateway): this fails if a hop delay ever starts a timer later."""
    entered: dict = {}
    add = DeadlineQueue.add

    def checked(q, req):
        entered.setdefault(q.on_expire.__name__, []).append(q.env.now - req.t)
        add(q, req)

    monkeypatch.setattr(engine, "deadline_queue", every_queue)
    monkeypatch.setattr(DeadlineQueue, "add", checked)
    for seed in range(0, 24, 3):
        m = random_scenario(seed, scn.isvc)
        m["client"] = dict(m.get("client", {}), timeout_s=5.0, max_retries=2)
        m["gateway"] = dict(m.get("gateway", {}), timeout_s=4.0)
        Sim(load_scenario(m), seed).run()
    assert set(entered) == {"_expire_client", "_expire_gateway", "_expire_knative"}
    assert all(len(lags) > 100 and not any(lags) for lags in entered.values())


def proxy_scenario(seed: int, isvc) -> dict:
    """A scale-per-request service (Knative, CC 1–3, the activator in the path, a plain simple server) with what
    makes requests leave the fused path: scale from zero, queueing in the activator and the queue-proxy, direct
    traffic in Serve mode, timeouts, retries with a budget, a rate limit, scale-down while requests run."""
    r = random.Random(seed)
    ann = {"autoscaling.knative.dev/window": r.choice(["6s", "30s", "60s"])}
    if r.random() < 0.25:
        ann["autoscaling.knative.dev/target-burst-capacity"] = r.choice(["0", "5"])
    lo = r.choice([0, 0, 1, 2])
    timeout = r.choice([None, None, 2, 20])
    m = {"inferenceService": isvc(cc=r.choice([1, 1, 2, 3]), min_replicas=lo, max_replicas=lo + r.choice([1, 3, 8]),
                                  annotations=ann, **({"timeout": timeout} if timeout else {})),
         "server": {"kind": "simple", "base_s": r.choice([0.2, 1.0, 2.0]),
                    "distribution": r.choice(["exponential", "exponential", "deterministic"])},
         "duration_s": r.choice([120, 300]), "warmup_s": 10,
         "workload": {"kind": "gamma", "cv": r.choice([1.0, 1.0, 2.0]), "rate": r.choice([0.5, 2.0, 6.0])},
         "cluster": {"gpus_per_node": 4, "max_nodes": 3, "image_gib": r.choice([0, 2]), "warmup_s": 2}}
    if r.random() < 0.4:
        m["client"] = {"timeout_s": r.choice([3.0, 30.0]), "max_retries": 2, "backoff_base_s": 0.2,
                       **({"retry_budget": {"max_tokens": 10, "token_ratio": 0.1}} if r.random() < 0.5 else {})}
    if r.random() < 0.2:
        m["gateway"] = {"rate_limit": {"rate_per_s": 4.0, "burst": 5}}
    return m


@pytest.mark.parametrize("seed", range(24))
def test_fused_scale_per_request_path_gives_the_same_report_as_the_general_path(scn, seed, monkeypatch):
    m = proxy_scenario(seed, scn.isvc)
    assert run(m, seed, True, monkeypatch)[0] == run(m, seed, False, monkeypatch)[0]


def test_the_fused_arrival_is_taken_and_a_change_in_it_is_caught(scn, monkeypatch):
    """The inline start of the fused arrival (its service draw) runs on most of those scenarios, and perturbing it
    changes the report, so the equivalence above covers it."""
    draws = []
    log = fused._log
    monkeypatch.setattr(fused, "_log", lambda x: (draws.append(x), log(x))[1])
    took = []
    for s in range(24):
        del draws[:]
        run(proxy_scenario(s, scn.isvc), s, True, monkeypatch)
        took.append(len(draws) > 50)
    assert sum(took) >= 8
    seed = took.index(True)
    m = proxy_scenario(seed, scn.isvc)
    general, _ = run(m, seed, False, monkeypatch)
    monkeypatch.setattr(fused, "_log", lambda x: log(x) * 1.001)
    assert run(m, seed, True, monkeypatch)[0] != general


def _answered(r: random.Random, i: int, t0: float, t1: float, p_fail: float):
    """An answered attempt as the engine hands it to the recorder: mostly a first attempt answered 200 in the
    window, else a retry, a failure, or one outside the window."""
    t = r.uniform(t0 - 5.0, t1 + 5.0)
    attempt = 1 if r.random() < 0.05 else 0
    req = Request(i, i, t - attempt * r.random(), attempt, t, 10, 10, t - attempt >= t0)
    req.status = 200 if r.random() >= p_fail else r.choice([503, 504])
    req.t_start = t + r.expovariate(5.0) if req.status == 200 or r.random() < 0.5 else -1.0   # a 200 started
    req.t_first = max(req.t_start, t) + r.expovariate(2.0)
    req.t_done = req.t_first + r.expovariate(1.0)
    req.component = "server" if req.status == 200 else "queue-proxy"
    return req, req.status != 200 and r.random() < 0.3   # not final: retried


@pytest.mark.parametrize("p_fail, interval", [(0.1, 10.0), (0.001, 10.0), (0.001, 0.05)])
def test_buffered_successes_give_the_recorder_of_recording_one_by_one(p_fail, interval, monkeypatch):
    """`Recorder.record_ok` buffers the common record and folds it in (with numpy, or one by one when few), into
    the recorder and the timeline it feeds: past several estimator folds (> 2 × EXACT_LIMIT user requests), every
    field and summary equals `record` and `Timeline.final` one by one (a 0.05 s timeline interval spreads each
    fold over many bins: `Timeline.ok_many` takes them one by one)."""
    folds = []
    monkeypatch.setattr(metrics, "add_in_order", lambda *a: (folds.append(1), add_in_order(*a)))
    r = random.Random(5)
    lazy, ref = Recorder(100.0, 2000.0), Recorder(100.0, 2000.0)
    lazy_tl, ref_tl = Timeline(2000.0, interval), Timeline(2000.0, interval)
    assert lazy.feed(lazy_tl) and not lazy.feed(Timeline(2000.0, interval))
    for i in range(150_000):
        req, retried = _answered(r, i, 100.0, 2000.0, p_fail)
        ref.record(req, not retried)
        if not retried:
            ref_tl.final(req)
        if req.status != 200:
            lazy.record(req, not retried)
            if not retried:
                lazy_tl.final(req)
        elif not lazy.record_ok(req):
            lazy_tl.final(req)
    assert lazy_tl.to_dict() == ref_tl.to_dict()
    assert lazy.latency.hist is not None            # the estimators folded
    assert folds if p_fail < 0.01 else len(folds) < 100   # mostly numpy / mostly one by one
    for name in ("n_final", "n_attempts", "overlap", "b_req", "b_err", "b_soj", "b_wait", "b_wait_n", "b_lat",
                 "final", "attempts"):
        assert getattr(lazy, name) == getattr(ref, name), name
    for name in ("latency", "latency_all", "ttfb"):
        a, b = getattr(lazy, name), getattr(ref, name)
        assert (a.summary(), a.total, a.n, list(a.buf)) == (b.summary(), b.total, b.n, list(b.buf)), name


def _rollout_fleet(at_s: float, cc: int) -> dict:
    def svc(name: str, rate: float) -> dict:
        manifest = isvc(cc=cc, min_replicas=1, max_replicas=3, annotations={"autoscaling.knative.dev/window": "20s"})
        manifest["metadata"]["name"] = name
        return {"name": name, "inferenceService": manifest, "workload": {"kind": "poisson", "rate": rate},
                "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"}}
    return {"name": "roll", "duration_s": 400,
            "cluster": {"gpus_per_node": 4, "max_nodes": 2, "warm_nodes": 2, "image_gib": 0, "warmup_s": 5},
            "services": [{"scenario": svc("a", 1.5), "rollout": {"at_s": at_s}}, {"scenario": svc("b", 0.8)}]}


@pytest.mark.parametrize("at_s, cc", [(60, 1), (61.5, 1), (120.25, 2)])
def test_a_rollout_fleet_gives_the_same_report_fused_and_general(at_s, cc, monkeypatch):
    """A rollout's new revision shares the old one's recorder but not its timeline (`Recorder.feed` refuses a
    second): its fused completions record one by one, and every service's report, timeline included, equals the
    general path's."""
    from simulation.fleet import load_fleet, run_fleet

    def report(on: bool) -> str:
        monkeypatch.setattr(queue_proxy, "FUSED", on)
        return json.dumps(run_fleet(load_fleet(_rollout_fleet(at_s, cc)), 3), sort_keys=True)
    fused_out = report(True)
    assert json.loads(fused_out)["services"]["a"]["rollout"]["ready_s"] is not None
    assert fused_out == report(False)
