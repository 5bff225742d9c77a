"""The Kubernetes HPA calculator (tolerance, stabilization, behavior policies) and KServe's Standard-mode mapping."""

from __future__ import annotations

import pytest

from validation.errors import InputError
from simulation.autoscaler.hpa import DEFAULT_DOWN, HpaCalculator, HpaSpec, Policy, Rules
from simulation.isvc import ServingSpec


def test_tolerance_keeps_current():
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=10, target=80))
    assert c.replicas_for_metric(4, 4, 0, 4 * 85.0) == 4          # 85/80 = 1.06 within 10 %
    assert c.replicas_for_metric(4, 4, 0, 4 * 160.0) == 8         # ratio 2 → ceil(2·4)


def test_unready_pods_count_as_zero_when_scaling_up():
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=10, target=80))
    # 2 ready at 100 %, 2 unready: ratio 1.25 → with unready at 0: 200/(4·80) = 0.625 → direction flips → keep
    assert c.replicas_for_metric(4, 2, 2, 200.0) == 4


def test_rebalanced_scale_up_never_shrinks():
    # GetResourceReplicas: ratio 2.5 over 2 ready;
    # with 2 unready at 0 → 1.25 → ceil(1.25·4) = 5 < 10 current → 10
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=20, target=80))
    assert c.replicas_for_metric(10, 2, 2, 400.0) == 10


def test_loop_counts_pods_waiting_for_a_node_as_unready():
    # groupPods: a Pending pod is unready (0 usage when scaling up), like one that is starting.
    import simpy

    from simulation.autoscaler.hpa_loop import HpaLoop
    from simulation.pod import PENDING, READY, STARTING

    class FakePod:
        def __init__(self, state, busy):
            self.state, self.busy = state, busy

        def scrape(self, period):
            return (self.busy, self.busy, self.busy, 0)

    ready = [FakePod(READY, 1.0), FakePod(READY, 1.0)]
    sim = type("FakeSim", (), {})()
    sim.env = simpy.Environment()
    sim.endpoints = ready
    sim.pods = ready + [FakePod(STARTING, 0.0), FakePod(PENDING, 0.0)]
    sim.replicas = 4
    sim.set_replicas = lambda n: setattr(sim, "replicas", n)
    HpaLoop(sim, HpaSpec(min_replicas=1, max_replicas=20, target=47.5))
    sim.env.run(until=15.5)
    # 2 ready at 100 % over 4 pods, 2 of them unready at 0: 200 / 4 / 47.5 = 1.05, within tolerance → keep 4.
    # (Leaving out the Pending pod: 200 / 3 / 47.5 = 1.40 → ceil(4.2) = 5.)
    assert sim.replicas == 4


def test_default_scale_up_policy_max_of_4_pods_and_100_percent():
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=100))
    assert c.decide(0.0, 1, 50) == 5           # max(1 + 4, 2·1)
    assert c.decide(15.0, 5, 50) == 10         # period start 5 (the +4 was 15 s ago) → max(9, 10)
    c2 = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=100))
    assert c2.decide(0.0, 10, 50) == 20        # 100 % of 10


def test_scale_down_stabilization_window_300s():
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=10))
    assert c.decide(0.0, 6, 6) == 6
    assert c.decide(15.0, 6, 2) == 6           # max of recommendations in the last 300 s is 6
    assert c.decide(290.0, 6, 2) == 6
    assert c.decide(301.0, 6, 2) == 2          # the 6 at t=0 has left the window


def test_custom_behavior_limits_scale_down():
    spec = HpaSpec(min_replicas=1, max_replicas=10,
                   scale_down=Rules(0.0, (Policy("Pods", 1, 60.0),), "Max"))
    c = HpaCalculator(spec)
    assert c.decide(0.0, 6, 2) == 5
    assert c.decide(15.0, 5, 2) == 5           # 1 pod per 60 s
    assert c.decide(61.0, 5, 2) == 4


EXTERNAL = {"serving.kserve.io/autoscalerClass": "external"}   # KServe builds no HPA: the accompanying one scales


def manifest(pred: dict, ann: dict | None = None) -> dict:
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "s",
                         "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment", **(ann or {})}},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "x"}}, **pred}}}


def test_kserve_standard_mode_defaults():
    s = ServingSpec.from_manifest(manifest({"minReplicas": 2}))
    assert s.mode == "Standard"
    assert (s.hpa.min_replicas, s.hpa.max_replicas, s.hpa.metric, s.hpa.target) == (2, 2, "cpu", 80.0)
    assert s.hpa.scale_down == DEFAULT_DOWN
    # KServe builds no metric for concurrency (hpa_reconciler.go getHPAMetrics): the API server's CPU 80 %.
    s0 = ServingSpec.from_manifest(manifest({"minReplicas": 0, "maxReplicas": 4.0, "scaleMetric": "concurrency",
                                             "scaleTarget": 3}))
    assert (s0.hpa.min_replicas, s0.hpa.max_replicas, s0.hpa.metric, s0.hpa.target) == (1, 4, "cpu", 80.0)


def test_hpa_manifest_overrides_behavior():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "spec": {"minReplicas": 1, "maxReplicas": 8,
                    "metrics": [{"type": "Pods", "pods": {"metric": {"name": "inflight"},
                                                          "target": {"type": "AverageValue", "averageValue": "2"}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60,
                                               "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}}}}
    s = ServingSpec.from_manifest(manifest({"maxReplicas": 4}, EXTERNAL), hpa)
    assert (s.hpa.max_replicas, s.hpa.metric, s.hpa.target) == (8, "concurrency", 2.0)
    assert s.hpa.scale_down == Rules(60.0, (Policy("Pods", 1, 30.0),), "Max")


def test_bad_hpa_behavior_is_reported():
    hpa = {"kind": "HorizontalPodAutoscaler",
           "spec": {"behavior": {"scaleUp": {"selectPolicy": "Fastest"}}}}
    with pytest.raises(InputError) as err:
        ServingSpec.from_manifest(manifest({}, EXTERNAL), hpa)
    assert "selectPolicy" in str(err.value)


def test_cpu_target_is_never_reached_by_a_gpu_bound_server():
    """A GPU server uses ~1 core busy, 0.1 idle: with a 4-core request a saturated pod shows 25 % CPU, so the
    default 80 % target never scales it up, while a concurrency metric would (issue 8 §7; policy isvc-scale-metric)."""
    s = ServingSpec.from_manifest(manifest({"minReplicas": 1, "maxReplicas": 8, "model": {
        "modelFormat": {"name": "x"}, "resources": {"requests": {"cpu": "4000m"}}}}))
    assert s.hpa.cpu_request_cores == 4.0
    assert s.hpa.cpu_percent(1.0) == pytest.approx(25.0) and s.hpa.cpu_percent(0.0) == pytest.approx(2.5)
    c = HpaCalculator(s.hpa)
    saturated_pods = 4
    assert c.replicas_for_metric(saturated_pods, saturated_pods, 0, saturated_pods * s.hpa.cpu_percent(1.0)) \
        < saturated_pods  # even all four pods fully busy ask for fewer pods, never more
    unknown = HpaSpec()  # no request in the manifest: the busy fraction stands in, as before
    assert unknown.cpu_percent(0.5) == 50.0


def test_hpa_replica_limits_are_bounded_for_the_simulator():
    # Every pod is simulated: a 10^6 minimum would run for hours; 10 000 is the bound (as initial_replicas).
    with pytest.raises(InputError, match=r"hpa\.spec\.minReplicas.*between 1 and 10000"):
        ServingSpec.from_manifest(manifest({}, EXTERNAL), {"kind": "HorizontalPodAutoscaler",
                                                           "spec": {"minReplicas": 10**6}})
    ok = ServingSpec.from_manifest(manifest({}, EXTERNAL), {"kind": "HorizontalPodAutoscaler",
                                                            "spec": {"minReplicas": 2, "maxReplicas": 10000}})
    assert (ok.hpa.min_replicas, ok.hpa.max_replicas) == (2, 10000)
