"""The HPA KServe builds for a Standard-mode InferenceService, and what its webhook refuses with an explicit
`serving.kserve.io/autoscalerClass: hpa` (simulation/autoscaler/kserve_hpa.py; kserve `reconcilers/hpa/
hpa_reconciler.go: getHPAMetrics`, `inference_service_validation.go: validateScalingHPACompExtension`, kubernetes
autoscaling/v2 `SetDefaults_HorizontalPodAutoscaler`)."""

from __future__ import annotations

import pytest

from simulation.isvc import ServingSpec
from validation.errors import InputError

CLASS = "serving.kserve.io/autoscalerClass"
PRED = "inferenceService.spec.predictor"


def _isvc(pred: dict, cls: str | None = None, mode: str = "Standard") -> dict:
    ann = {"serving.kserve.io/deploymentMode": mode, **({CLASS: cls} if cls else {})}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "m", "annotations": ann},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 4, "model": {"modelFormat": {"name": "x"}},
                                   **pred}}}


def _cpu(name: str, value=None) -> dict:
    target = {"type": "Utilization", **({"averageUtilization": value} if value is not None else {})}
    return {"type": "Resource", "resource": {"name": name, "target": target}}


# (predictor fields, class annotation, the CPU target of the HPA KServe builds)
BUILT = [
    ({}, None, 80.0),
    ({}, "hpa", 80.0),
    ({"scaleMetric": "cpu", "scaleTarget": 50}, None, 50.0),
    ({"scaleMetric": "cpu", "scaleTarget": 50}, "hpa", 50.0),
    ({"scaleTarget": 65}, "hpa", 65.0),                                    # scaleMetric defaults to cpu
    ({"scaleMetric": "concurrency", "scaleTarget": 2}, None, 80.0),        # no metric built: CPU 80 %
    ({"scaleMetric": "rps", "scaleTarget": 5}, None, 80.0),
    ({"scaleMetric": "memory"}, None, 80.0),                               # memory needs a scaleTarget
    ({"scaleMetric": "memory"}, "hpa", 80.0),
    ({"autoScaling": {"metrics": [_cpu("cpu", 40)]}}, "hpa", 40.0),
    ({"autoScaling": {"metrics": [_cpu("cpu")]}}, None, 80.0),
    ({"autoScaling": {"metrics": [_cpu("cpu", 60), _cpu("cpu", 30)]}}, None, 30.0),   # the most replicas
    ({"autoScaling": {"metrics": [_cpu("cpu", 40)]}, "scaleMetric": "concurrency", "scaleTarget": 3}, None, 40.0),
    ({"autoScaling": {"metrics": [{"type": "PodMetric", "podmetric": {}}]}}, None, 80.0),   # skipped
    ({"autoScaling": {}}, None, 80.0),
]


@pytest.mark.parametrize("pred, cls, target", BUILT)
def test_the_hpa_kserve_builds_scales_on_cpu(pred, cls, target):
    hpa = ServingSpec.from_manifest(_isvc(pred, cls)).hpa
    assert (hpa.metric, hpa.target, hpa.min_replicas, hpa.max_replicas) == ("cpu", target, 1, 4)


# (predictor fields, class, the problem's path under the predictor, its value, a fragment of what is allowed)
REFUSED = [
    ({"scaleMetric": "concurrency", "scaleTarget": 2}, "hpa", "scaleMetric", "concurrency",
     "expected 'cpu' or 'memory' with serving.kserve.io/autoscalerClass: hpa"),
    ({"scaleMetric": "rps"}, "hpa", "scaleMetric", "rps", "validateScalingHPACompExtension"),
    ({"scaleMetric": "cpu", "scaleTarget": 150}, "hpa", "scaleTarget", 150, "from 1 to 100"),
    ({"scaleTarget": 101}, "hpa", "scaleTarget", 101, "from 1 to 100"),
    ({"autoScaling": {"metrics": [{"type": "PodMetric", "podmetric": {}}]}}, "hpa", "autoScaling.metrics[0]",
     {"type": "PodMetric", "podmetric": {}}, "expected a Resource metric"),
    ({"scaleMetric": "memory", "scaleTarget": 70}, None, "scaleMetric", "memory", "not simulated"),
    ({"autoScaling": {"metrics": [_cpu("memory", 70)]}}, "hpa", "autoScaling.metrics[0].resource.name", "memory",
     "not simulated"),
    ({"autoScaling": {"metrics": [_cpu("cpu", 0)]}}, None,
     "autoScaling.metrics[0].resource.target.averageUtilization", 0, "expected a percentage > 0"),
]


@pytest.mark.parametrize("pred, cls, key, value, fragment", REFUSED, ids=[f"{r[2]}-{r[3]}" for r in REFUSED])
def test_what_kserve_refuses_or_the_simulation_cannot_model_is_named(pred, cls, key, value, fragment):
    problems: list = []
    ServingSpec.from_manifest(_isvc(pred, cls), path="inferenceService", problems=problems)
    assert [(p.path, p.value) for p in problems] == [(f"{PRED}.{key}", value)]
    assert fragment in problems[0].allowed


def test_the_reviewers_standard_concurrency_scenario():
    """/tmp/rev-sim/inc2.yaml: Standard mode, `scaleMetric: concurrency`, `scaleTarget: 2`, no class: KServe
    admits it and builds an HPA without metrics, which the API server makes CPU 80 % (not 2 in-flight per pod);
    with `autoscalerClass: hpa` KServe refuses it, and so does the scenario loader (exit 2 in the CLI)."""
    from simulation import load_scenario

    mapping = {"inferenceService": _isvc({"scaleMetric": "concurrency", "scaleTarget": 2}),
               "workload": {"kind": "poisson", "rate": 2.0, "input_tokens": 100, "output_tokens": 50},
               "cluster": {"gpus_per_node": 1, "max_nodes": 4}, "model": {"name": "m", "weights_gib": 14},
               "server": {"kind": "simple", "base_s": 1.0, "distribution": "deterministic", "parallelism": 1},
               "duration_s": 900}
    hpa = load_scenario(mapping).serving.hpa
    assert (hpa.metric, hpa.target) == ("cpu", 80.0)
    mapping["inferenceService"]["metadata"]["annotations"][CLASS] = "hpa"
    with pytest.raises(InputError) as err:
        load_scenario(mapping)
    assert f"{PRED}.scaleMetric" in str(err.value) and "concurrency" in str(err.value)


def test_class_external_takes_the_accompanying_hpa_and_its_api_defaults():
    """Class external: KServe builds nothing and does not check scaleMetric; the accompanying HPA decides, and one
    without metrics is CPU 80 % (the API server's default), not the predictor's scaleMetric."""
    pods = {"type": "Pods", "pods": {"metric": {"name": "inflight"}, "target": {"type": "AverageValue",
                                                                               "averageValue": "2"}}}
    hpa = {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 1, "maxReplicas": 6, "metrics": [pods]}}
    spec = ServingSpec.from_manifest(_isvc({"scaleMetric": "concurrency"}, "external"), hpa).hpa
    assert (spec.metric, spec.target, spec.max_replicas) == ("concurrency", 2.0, 6)
    bare = {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 1, "maxReplicas": 6}}
    spec = ServingSpec.from_manifest(_isvc({"scaleMetric": "concurrency", "scaleTarget": 3}, "external"), bare).hpa
    assert (spec.metric, spec.target) == ("cpu", 80.0)


def test_class_hpa_takes_an_accompanying_autoscaler_only_if_it_is_kserves_own():
    """Class hpa (explicit or the default): KServe resets its HPA <name>-predictor to what it builds
    (hpa_reconciler.go semanticHPAEquals, then Update); another HPA or a ScaledObject on the Deployment does not act
    as written (AmbiguousSelector; KEDA's webhook 'already managed by the hpa'). An export of KServe's own HPA is
    accepted; anything else is refused with the way out (class external). Class none: KServe builds nothing, so
    an accompanying HPA scales, as with external."""
    pods = {"type": "Pods", "pods": {"metric": {"name": "inflight"}, "target": {"type": "AverageValue",
                                                                               "averageValue": "2"}}}
    theirs = {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 1, "maxReplicas": 6, "metrics": [pods]}}
    for cls in (None, "hpa"):
        problems: list = []
        ServingSpec.from_manifest(_isvc({"maxReplicas": 6}, cls), theirs, problems=problems)
        assert [(p.path, p.value) for p in problems] == [("hpa", "HorizontalPodAutoscaler")]
        assert f"{CLASS}: external" in problems[0].allowed and "semanticHPAEquals" in problems[0].allowed
    scaled = {"kind": "ScaledObject", "spec": {"triggers": [{"type": "prometheus", "metadata": {
        "query": "sum(vllm:num_requests_running)", "threshold": "2"}}]}}
    problems = []
    ServingSpec.from_manifest(_isvc({}), scaled, problems=problems)
    assert ("hpa", "ScaledObject") in [(p.path, p.value) for p in problems]
    cpu50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": 50}}}
    export = {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 1, "maxReplicas": 4, "metrics": [cpu50]}}
    spec = ServingSpec.from_manifest(_isvc({"scaleTarget": 50}, "hpa"), export).hpa    # KServe's own: accepted
    assert (spec.metric, spec.target, spec.max_replicas) == ("cpu", 50.0, 4)
    spec = ServingSpec.from_manifest(_isvc({}, "none"), theirs).hpa
    assert (spec.metric, spec.target, spec.max_replicas) == ("concurrency", 2.0, 6)
    assert ServingSpec.from_manifest(_isvc({}, "none")).hpa is None
