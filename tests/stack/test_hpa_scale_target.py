"""KServe's scaleTarget rule for the hpa class, with Go's precedence as the webhook reads it
(kserve pkg/apis/serving/v1beta1/inference_service_validation.go `validateScalingHPACompExtension`, v0.15.2 and
main: `if metric == MetricCPU && target < 1 || target > 100` → "the target utilization percentage should be a
[1-100] integer"; then `if metric == MetricMemory && target < 1` → "the target memory should be greater than 1 MiB").
`&&` binds tighter than `||`, so a target above 100 is refused whatever the metric — memory's too, though it is
in MiB — and cpu is the metric when none is set. Before, only cpu's target was held to 1–100 here."""

from __future__ import annotations

import copy

import pytest

from manifests import render_stack
from stackconfig.load import load_stack
from validation.admission import ClusterAdmission, admission_refusals

ENABLED = ClusterAdmission().with_features(["kubernetes.podspec-tolerations", "kubernetes.podspec-nodeselector"])
RULE = "validateScalingHPACompExtension"
PERCENT = "the target utilization percentage should be a [1-100] integer"
MIB = "the target memory should be greater than 1 MiB"


def _hpa_isvc(metric: str | None, target: int) -> dict:
    """dev's chat InferenceService in RawDeployment mode with class hpa and the given scaleMetric/scaleTarget."""
    m = copy.deepcopy(next(o for o in render_stack(load_stack("dev"))
                           if o["kind"] == "InferenceService" and o["metadata"]["name"] == "chat"))
    m["metadata"]["annotations"].update({"serving.kserve.io/deploymentMode": "RawDeployment",
                                         "serving.kserve.io/autoscalerClass": "hpa"})
    pred = m["spec"]["predictor"]
    for k in ("scaleMetric", "scaleTarget", "containerConcurrency", "timeout"):
        pred.pop(k, None)
    if metric is not None:
        pred["scaleMetric"] = metric
    pred["scaleTarget"] = target
    return m


@pytest.mark.parametrize("metric, target, message", [
    ("cpu", 0, PERCENT), ("cpu", 101, PERCENT), (None, 0, PERCENT), (None, 150, PERCENT),
    ("memory", 101, PERCENT),      # target > 100 applies to every metric (the || outside the &&)
    ("memory", 4096, PERCENT),     # 4 GiB of memory per pod: refused, as KServe refuses it
    ("memory", 0, MIB),
])
def test_the_hpa_target_kserve_refuses(metric, target, message):
    refusals = admission_refusals([_hpa_isvc(metric, target)], ENABLED)
    assert [(r.path, message in str(r)) for r in refusals if RULE in r.rule] == [("spec.predictor.scaleTarget", True)]


@pytest.mark.parametrize("metric, target", [("cpu", 1), ("cpu", 100), (None, 80), ("memory", 1), ("memory", 100)])
def test_the_hpa_target_kserve_admits(metric, target):
    assert admission_refusals([_hpa_isvc(metric, target)], ENABLED) == []
