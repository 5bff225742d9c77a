"""The fused request path (queue-proxy + plain simple server, `queue_proxy.FUSED`) equals the general path.

Randomized small scenarios over the request path's branches (Knative with and without the activator, Standard
mode, CC 0–8, every service-time law, admission limits, parallelism, timeouts, retries with a budget, a gateway
bucket) run with the fused path on and off: the seeded JSON reports must be identical.
"""

from __future__ import annotations

import random

import pytest

import simulation.queue_proxy as queue_proxy
from simulation import load_scenario
from simulation.deadlines import DeadlineQueue
from simulation import engine, fused
from simulation.engine import Sim


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
        m["gateway"] = {"rate_limit": {"rate_per_s": r.choice([2.0, 8.0]), "burst": 5}, "timeout_s": r.choice([0.5, 4.0])}
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
