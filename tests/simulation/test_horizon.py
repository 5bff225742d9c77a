"""What is open when a run stops: unanswered requests are errors, pods not yet Ready are censored cold starts,
and a cold start counts from creation to the first Ready whatever failed before it."""

from __future__ import annotations

import pytest

from simulation import load_scenario
from simulation.engine import Sim

OVERLOADED = {   # 2 req/s on one pod serving 1 req/s, no timeout anywhere: the queue only grows
    "inferenceService": {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                         "metadata": {"name": "m", "annotations": {"serving.kserve.io/deploymentMode": "Standard"}},
                         "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "model": {
                             "modelFormat": {"name": "huggingface"},
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}}}},
    "workload": {"kind": "poisson", "rate": 2.0},
    "cluster": {"gpus_per_node": 1, "max_nodes": 1},
    "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic", "parallelism": 1},
    "duration_s": 300, "drain_s": 60,
}


def _run(mapping: dict, seed: int = 1) -> tuple[Sim, dict]:
    sim = Sim(load_scenario(mapping), seed)
    return sim, sim.run().to_dict()


def test_requests_unanswered_at_the_horizon_are_errors_not_dropped():
    sim, d = _run(OVERLOADED)
    arrivals = sim._origin                                # every arrival is a user request (no warm-up)
    assert arrivals > 500 and d["requests"] == arrivals
    ok = d["status_counts"]["200"]
    assert 355 <= ok <= 360                               # 1 req/s for duration + drain
    assert d["status_counts"]["unanswered"] == arrivals - ok
    assert d["errors_by_component"]["unanswered"] == {"server": arrivals - ok}   # queued in the server
    assert d["error_rate_total"]["rate"] == pytest.approx((arrivals - ok) / arrivals)
    assert d["error_rates"]["unanswered"]["count"] == arrivals - ok
    assert d["incomplete"] == arrivals - ok
    assert d["latency_all_s"]["max"] > d["latency_s"]["max"]      # the oldest waits to the horizon (a lower bound)
    assert d["littles_law"]["bookkeeping_rel_diff"] < 1e-9         # no attempt lost


def test_unanswered_count_in_the_gate_error_rate(scn):
    from simulation.report_terms import estimate

    reports = [scn.run(OVERLOADED, seed=s) for s in (1, 2, 3, 4)]
    e = estimate("error rate", reports)
    assert e.value == pytest.approx(0.4, abs=0.02) and e.lo > 0.3, e


def test_a_pending_retry_and_the_activators_queue_are_unanswered_too(scn):
    # Knative, no GPU node ever comes: every attempt waits in the activator until the revision timeout (10 s),
    # the client retries 504s after a long back-off; the run stops while retries are pending
    m = {"inferenceService": scn.isvc(cc=1, min_replicas=0, max_replicas=1, timeout=10),
         "workload": {"kind": "poisson", "rate": 1.0},
         "cluster": {"gpus_per_node": 1, "max_nodes": 1, "warm_nodes": 0, "node_provision_s": 10000},
         "client": {"max_retries": 1, "backoff_base_s": 50, "jitter": "none", "retry_on": [504]},
         "initial_replicas": 0, "duration_s": 60, "drain_s": 5}
    sim, d = _run(m)
    assert d["requests"] == sim._origin
    comps = d["errors_by_component"]["unanswered"]
    assert comps["client-backoff"] > 0 and comps["activator"] > 0
    assert sum(comps.values()) == d["status_counts"]["unanswered"] == sim._origin - d["status_counts"].get("504", 0)
    assert d["cold_start_censored"]["count"] == 1    # created at the first arrival, not Ready at 60 + 5
    assert d["cold_start_censored"]["max_s"] == pytest.approx(65.0, abs=1.0)


def test_a_run_that_drains_fully_has_nothing_unanswered(scn):
    sim, d = _run({**OVERLOADED, "workload": {"kind": "poisson", "rate": 0.3}})
    assert d["status_counts"] == {"200": sim._origin} and d["incomplete"] == 0
    assert d["cold_start_censored"] == {"count": 0, "max_s": None}


def _all_pods(monkeypatch) -> list:
    """Every pod of the runs that follow, gone ones too (Sim.pods forgets a pod once it is released)."""
    seen: list = []
    real = Sim._new_pod

    def keep(self, warm):
        pod = real(self, warm)
        seen.append(pod)
        return pod
    monkeypatch.setattr(Sim, "_new_pod", keep)
    return seen


def test_a_cold_start_after_startup_probe_kills_counts_from_creation_to_first_ready(scn, monkeypatch):
    # the reviewer's case: startupProbe 3 × 10 s under a 5-40 s warm-up; killed pods restart with back-off
    isvc = scn.isvc(cc=1, min_replicas=1, max_replicas=6)
    isvc["spec"]["predictor"]["model"]["startupProbe"] = {"initialDelaySeconds": 0, "periodSeconds": 10,
                                                          "failureThreshold": 3}
    m = {"inferenceService": isvc,
         "workload": {"kind": "gamma", "rate": 1.5, "cv": 2.0},
         "cluster": {"gpus_per_node": 1, "max_nodes": 6, "node_provision_s": {"dist": "uniform", "low": 60,
                                                                              "high": 180},
                     "image_gib": 12, "image_pull_mib_s": 80, "model_download_mib_s": 400, "load_gib_s": 1.5,
                     "warmup_s": {"dist": "uniform", "low": 5, "high": 40}},
         "model": {"name": "m", "weights_gib": 15},
         "server": {"kind": "simple", "base_s": 5.0, "distribution": "lognormal", "sigma": 0.3},
         "duration_s": 1800}
    pods = _all_pods(monkeypatch)
    sim = Sim(load_scenario(m), 2)
    d = sim.run().to_dict()
    cold = [p for p in pods if not p.warm]
    ready = [p.ready_t - p.created for p in cold if p.ready_t >= 0]
    restarted = [p for p in cold if p.ready_t >= 0 and p.restarts]
    assert restarted, "the case needs a pod Ready only after a startupProbe kill"
    assert d["cold_starts"] == len(ready)
    assert d["cold_start_s"]["max"] == pytest.approx(max(ready), rel=1e-5)
    assert d["cold_start_phases_mean_s"]["restarts_s"] > 0
    waiting = [sim.env.now - p.created for p in cold if p.ready_t < 0 and p.state in ("Pending", "Starting")]
    assert d["cold_start_censored"]["count"] == len(waiting)
    if waiting:
        assert d["cold_start_censored"]["max_s"] == pytest.approx(max(waiting), rel=1e-5)
