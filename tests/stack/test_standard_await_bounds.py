"""Standard mode: the replica bounds live on the stack's HPA or ScaledObject only, so a bounds change leaves the
InferenceService's spec as it was (review 13 F2).

Why: Pulumi awaits each InferenceService with `pulumi.com/waitFor: condition=Ready`, and pulumi-kubernetes
(`provider/pkg/await/condition/kubectl.go: checkCondition`) holds the condition false while
status.observedGeneration < metadata.generation. KServe copies the child's into that field (v0.15.2/v0.16.0
`inference_service_status.go: PropagateRawStatus`, the Deployment's), and with autoscalerClass external it ignores
the predictor's minReplicas/maxReplicas (`deployment_reconciler.go`): a change of them moved the InferenceService's
generation and never the Deployment's, and `pulumi up` waited out pulumi.com/timeoutSeconds and failed an update
KServe had applied. The simulation and the policies read the bounds from the autoscaler object."""

from __future__ import annotations

import pytest

from manifests.inference_service import AWAIT_READY, autoscaler, inference_service
from runtime_stack import chat_stack, with_service
from simulation.isvc import ServingSpec
from stackconfig.schema import parse_stack_config

SCALERS = {"keda": ("minReplicaCount", "maxReplicaCount"), "hpa": ("minReplicas", "maxReplicas")}


def _standard(scaler: str, lo: int, hi: int, **extra):
    cfg = with_service(chat_stack(), deploymentMode="Standard", scaleMetric="concurrency", scaleTarget=8,
                       minReplicas=lo, maxReplicas=hi, hpa={"scaler": scaler}, **extra)
    cfg["gpuNodeGroup"]["maxSize"] = 4
    stack = parse_stack_config(cfg, "p", "dev")
    return stack, stack.services[0]


@pytest.mark.parametrize("scaler", SCALERS)
def test_a_bounds_change_leaves_the_standard_isvc_spec_unchanged(scaler):
    before_cfg, before = _standard(scaler, 1, 2)
    lo_key, hi_key = SCALERS[scaler]
    for lo, hi in ((1, 6), (3, 6), (2, 2)):
        after_cfg, after = _standard(scaler, lo, hi)
        old, new = inference_service(before_cfg, before), inference_service(after_cfg, after)
        assert new["spec"] == old["spec"]                      # no generation bump: nothing for KServe to apply
        assert "minReplicas" not in new["spec"]["predictor"] and "maxReplicas" not in new["spec"]["predictor"]
        if lo == 1:   # the first pods, and so the await's timeout, follow the minimum only
            assert new == old                                  # Pulumi does not even update the InferenceService
        scaled = autoscaler(after)
        assert (scaled["spec"][lo_key], scaled["spec"][hi_key]) == (lo, hi)   # the bounds move here alone


def test_knative_mode_keeps_the_bounds_on_the_predictor():
    """KServe writes min-scale and max-scale from them onto the Knative revision, so a change reaches the Knative
    Service (its generation moves with the InferenceService's)."""
    cfg = chat_stack(minReplicas=1, maxReplicas=3)
    stack = parse_stack_config(cfg, "p", "dev")
    pred = inference_service(stack, stack.services[0])["spec"]["predictor"]
    assert (pred["minReplicas"], pred["maxReplicas"]) == (1, 3)


@pytest.mark.parametrize("mode", ["Knative", "Standard"])
def test_the_await_is_condition_ready_and_never_skipped(mode):
    """The choice (docs/deploying.md §4): condition=Ready gates the first deploy; no annotation can tell an
    update apart, and skipAwait would drop that gate too."""
    stack, svc = _standard("keda", 1, 2) if mode == "Standard" else (lambda s: (s, s.services[0]))(
        parse_stack_config(chat_stack(), "p", "dev"))
    ann = inference_service(stack, svc)["metadata"]["annotations"]
    assert ann["pulumi.com/waitFor"] == AWAIT_READY == "condition=Ready"
    assert "pulumi.com/skipAwait" not in ann


@pytest.mark.parametrize("scaler", SCALERS)
def test_the_simulation_reads_the_bounds_from_the_autoscaler(scaler):
    stack, svc = _standard(scaler, 2, 4)
    spec = ServingSpec.from_manifest(inference_service(stack, svc), autoscaler(svc))
    assert (spec.hpa.min_replicas, spec.hpa.max_replicas) == (2, 4)
    assert (spec.kpa.min_scale, spec.kpa.max_scale, spec.kpa.initial_scale) == (2, 4, 2)
