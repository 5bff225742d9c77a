"""The Kubernetes HPA calculator (tolerance, stabilization, behavior policies) and KServe's Standard-mode mapping."""

from __future__ import annotations

import pytest

from preflight.errors import InputError
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


def manifest(pred: dict, ann: dict | None = None) -> dict:
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "s", "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment", **(ann or {})}},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "x"}}, **pred}}}


def test_kserve_standard_mode_defaults():
    s = ServingSpec.from_manifest(manifest({"minReplicas": 2}))
    assert s.mode == "Standard"
    assert (s.hpa.min_replicas, s.hpa.max_replicas, s.hpa.metric, s.hpa.target) == (2, 2, "cpu", 80.0)
    assert s.hpa.scale_down == DEFAULT_DOWN
    s0 = ServingSpec.from_manifest(manifest({"minReplicas": 0, "maxReplicas": 4.0, "scaleMetric": "concurrency",
                                             "scaleTarget": 3}))
    assert (s0.hpa.min_replicas, s0.hpa.max_replicas, s0.hpa.metric, s0.hpa.target) == (1, 4, "concurrency", 3.0)


def test_hpa_manifest_overrides_behavior():
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "spec": {"minReplicas": 1, "maxReplicas": 8,
                    "metrics": [{"type": "Pods", "pods": {"metric": {"name": "inflight"},
                                                          "target": {"type": "AverageValue", "averageValue": "2"}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60,
                                               "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}}}}
    s = ServingSpec.from_manifest(manifest({"maxReplicas": 4}), hpa)
    assert (s.hpa.max_replicas, s.hpa.metric, s.hpa.target) == (8, "concurrency", 2.0)
    assert s.hpa.scale_down == Rules(60.0, (Policy("Pods", 1, 30.0),), "Max")


def test_bad_hpa_behavior_is_reported():
    hpa = {"kind": "HorizontalPodAutoscaler",
           "spec": {"behavior": {"scaleUp": {"selectPolicy": "Fastest"}}}}
    with pytest.raises(InputError) as err:
        ServingSpec.from_manifest(manifest({}), hpa)
    assert "selectPolicy" in str(err.value)
