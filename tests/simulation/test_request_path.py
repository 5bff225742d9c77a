"""Who answers what: gateway 429/504, activator 504, queue-proxy 503/504/502, server 429/503/400, client retries."""

from __future__ import annotations

import pytest

import simulation.queue_proxy as queue_proxy
from simulation import load_scenario
from simulation.engine import Sim


def base(scn, **top) -> dict:
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=1, max_replicas=1,
                                      annotations={"autoscaling.knative.dev/target-burst-capacity": "0"}),
         "workload": {"kind": "poisson", "rate": 5.0},
         "server": {"kind": "simple", "base_s": 0.1, "distribution": "deterministic"},
         "duration_s": 200}
    m.update(top)
    return m


def test_gateway_token_bucket_answers_429(scn):
    d = scn.run(base(scn, gateway={"rate_limit": {"rate_per_s": 2.0, "burst": 10}}))
    assert d["errors_by_component"]["429"] == {"gateway": d["status_counts"]["429"]}
    assert d["status_counts"]["200"] / 200 == pytest.approx(2.0, rel=0.1)   # the bucket's rate gets through


def test_gateway_timeout_answers_504(scn):
    m = base(scn, gateway={"timeout_s": 0.5}, server={"kind": "simple", "base_s": 1.0, "distribution": "deterministic"})
    d = scn.run(m)
    assert set(d["errors_by_component"]["504"]) == {"gateway"}
    assert "200" not in d["status_counts"]


def test_queue_proxy_timeout_counts_queue_time(scn):
    m = base(scn, workload={"kind": "poisson", "rate": 2.0},
             server={"kind": "simple", "base_s": 1.0, "distribution": "deterministic"})
    m["inferenceService"]["spec"]["predictor"]["timeout"] = 3
    d = scn.run(m)
    assert d["errors_by_component"]["504"] == {"queue-proxy": d["status_counts"]["504"]}
    assert d["latency_s"]["max"] <= 3.0 + 1e-9


def test_activator_timeout_when_no_pod_ever_becomes_ready(scn):
    # min 0, no room for a pod (max_nodes 0): requests wait in the activator until timeoutSeconds (300 s) → 504
    m = base(scn, workload={"kind": "poisson", "rate": 0.2}, initial_replicas=0, cluster={"max_nodes": 0},
             duration_s=400)
    m["inferenceService"] = scn.isvc(cc=1, min_replicas=0, max_replicas=2)
    d = scn.run(m)
    assert d["status_counts"] == {"504": d["requests"]}
    assert d["errors_by_component"]["504"] == {"activator": d["requests"]}


def test_server_admission_limits(scn):
    for status in (429, 503):
        m = base(scn, workload={"kind": "poisson", "rate": 20.0},
                 server={"kind": "simple", "base_s": 0.5, "max_concurrent": 2, "reject_status": status})
        m["inferenceService"] = scn.isvc(cc=0, min_replicas=1, max_replicas=1)
        d = scn.run(m)
        assert d["errors_by_component"][str(status)] == {"server": d["status_counts"][str(status)]}
    m = base(scn, workload={"kind": "poisson", "rate": 2.0,
                            "input_tokens": {"dist": "uniform", "low": 1, "high": 2000}},
             server={"kind": "simple", "base_s": 0.1, "max_input_tokens": 1000})
    d = scn.run(m)
    assert d["status_counts"]["400"] / d["requests"] == pytest.approx(0.5, abs=0.06)


def test_retries_are_new_load_and_the_budget_caps_them(scn):
    over = dict(workload={"kind": "poisson", "rate": 30.0},
                server={"kind": "simple", "base_s": 0.5, "distribution": "exponential"})
    plain = scn.run(base(scn, **over))
    retry = scn.run(base(scn, client={"max_retries": 3, "backoff_base_s": 0.05}, **over))
    budget = scn.run(base(scn, client={"max_retries": 3, "backoff_base_s": 0.05,
                                       "retry_budget": {"max_tokens": 10, "token_ratio": 0.1}}, **over))
    assert plain["attempts"]["count"] == plain["requests"]
    assert retry["attempts"]["count"] > 2 * retry["requests"]
    assert retry["attempts"]["status_counts"]["503"] > plain["attempts"]["status_counts"]["503"]
    assert budget["attempts"]["retries_denied_by_budget"] > 0
    assert budget["attempts"]["retries"] < retry["attempts"]["retries"]


def test_client_timeout_is_recorded_as_client_timeout(scn):
    d = scn.run(base(scn, client={"timeout_s": 0.05}))
    assert d["errors_by_component"]["504"] == {"client-timeout": d["requests"]}


def test_crash_fails_in_flight_with_502_and_restarts(scn):
    sc = load_scenario(base(scn, cluster={"warmup_s": 5}), base_dir=scn.root)
    sim = Sim(sc, 1)
    from simulation.clock import call_later

    lost = []

    def crash():                                                # crash while a request is in flight
        pod = sim.pods[0]
        if pod.n == 0:
            call_later(sim.env, 0.01, crash)
            return
        lost.append(pod.n)
        pod.crash("test crash")
    call_later(sim.env, 50.0, crash)
    d = sim.run().to_dict()
    assert d["pod_restarts"] == 1 and d["restart_reasons"] == {"test crash": 1}
    assert d["errors_by_component"]["502"] == {"queue-proxy": lost[0]}   # everything in the pod, nothing else
    assert d["status_counts"]["200"] > 500                      # it serves again after the restart


def test_activator_first_available_balancing_at_low_cc(scn, monkeypatch):
    # CC 1, TBC default → activator always in path; 3 warm pods, light load: pod 0 takes most requests. The
    # general path (the fused one bypasses `Activator.accept`; test_fused_path.py shows they agree)
    monkeypatch.setattr(queue_proxy, "FUSED", False)
    m = base(scn, workload={"kind": "poisson", "rate": 2.0}, initial_replicas=3)
    m["inferenceService"] = scn.isvc(cc=1, min_replicas=3, max_replicas=3)
    sc = load_scenario(m, base_dir=scn.root)
    sim = Sim(sc, 1)
    counts: dict[int, int] = {}
    accept = sim.activator.accept

    def spy(req):
        accept(req)
        if req.pod is not None:
            counts[req.pod.id] = counts.get(req.pod.id, 0) + 1
    sim.activator.accept = spy
    sim.run()
    assert sim.proxy is True
    assert counts[0] > counts.get(1, 0) > counts.get(2, 0)


def test_standard_mode_has_no_queue_proxy(scn):
    m = base(scn, workload={"kind": "poisson", "rate": 10.0})
    m["inferenceService"] = scn.isvc(cc=1, min_replicas=1, max_replicas=1, mode="RawDeployment")
    d = scn.run(m)
    assert d["mode"] == "Standard" and "503" not in d["status_counts"]


def test_attempt_counts_derived_at_report_time_equal_counting_each_attempt(scn, monkeypatch):
    """`Recorder.attempts` counts only failures and derives the 200s as (200, server): every successful attempt
    must be the model server's. Each windowed attempt counted by (status, component) as it is recorded equals the
    derived counts, on randomized request paths (every answering component) and the GPU example scenario."""
    from collections import Counter
    from pathlib import Path

    from simulation.metrics import Recorder
    from tests.simulation.test_fused_path import random_scenario

    monkeypatch.setattr(queue_proxy, "FUSED", False)   # every attempt through `record` (the fused path buffers
    seen: Counter = Counter()                           # its 200s: test_fused_path.py shows the same reports)
    record = Recorder.record

    def counted(rec, req, final):
        if rec.t0 <= req.t < rec.t1:
            seen[req.status, req.component] += 1
        record(rec, req, final)

    monkeypatch.setattr(Recorder, "record", counted)
    example = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "llm-knative-cc1.yaml"
    statuses: set = set()
    for seed, mapping in [(s, random_scenario(s, scn.isvc)) for s in range(24)] + [(0, str(example))]:
        seen.clear()
        sim = Sim(load_scenario(mapping), seed)
        sim.run()
        assert sim.rec.attempts == {k: v for k, v in seen.items() if v}
        statuses |= set(seen)
    assert {s for s, _ in statuses} >= {200, 429, 503, 504}   # the scenarios reach every kind of answer
