"""A Standard-mode predictor rolls with no serving pod taken down (review 13 F5): KServe's default strategy
(kserve v0.15.2 and v0.16.0 `reconcilers/deployment/deployment_reconciler.go: setDefaultDeploymentSpec`) is
RollingUpdate maxUnavailable 25 %, maxSurge 25 %, and the Deployment controller rounds maxUnavailable down, so from
4 replicas it deletes old pods at once for a whole GPU cold start. The stack renders `deploymentStrategy` with
maxUnavailable 0 (KServe copies it onto the Deployment, `createRawDeployment`; refused only in Knative mode), the
schema subset admits it, and the rollout-capacity check counts every old pod plus the rendered surge."""

from __future__ import annotations

import copy
import math

import pytest

from gate.rollout_capacity import rollout_problems, surge_pods
from manifests.admission import admission_problems
from manifests.inference_service import inference_service
from runtime_stack import chat_stack
from stackconfig.schema import parse_stack_config
from validation.kubernetes import crd_errors


def _standard(min_replicas: int, max_replicas: int, max_size: int | None = None):
    cfg = chat_stack(deploymentMode="Standard", minReplicas=min_replicas, maxReplicas=max_replicas,
                     scaleMetric="concurrency", scaleTarget=8)
    if max_size is not None:   # one L40S per node: maxSize is the GPUs
        cfg["gpuNodeGroup"].update(instanceTypes=["g6e.2xlarge"], maxSize=max_size)
    return parse_stack_config(cfg, "p", "dev")


def test_standard_mode_renders_a_rollout_that_takes_no_pod_down():
    stack = _standard(4, 8)
    isvc = inference_service(stack, stack.services[0])
    assert isvc["spec"]["predictor"]["deploymentStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}}
    assert crd_errors(isvc) == []               # in the InferenceService schema subset the stack validates against
    assert admission_problems(stack) == []      # and admitted: KServe refuses it only in Knative mode


def test_knative_mode_renders_none():
    stack = parse_stack_config(chat_stack(), "p", "dev")
    assert "deploymentStrategy" not in inference_service(stack, stack.services[0])["spec"]["predictor"]


@pytest.mark.parametrize("strategy, error", [
    ({"type": "Rolling"}, "type"),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25 %"}}, "maxUnavailable"),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": -1}}, "maxSurge"),
    ({"type": "RollingUpdate", "rollingUpdate": {"maxSurges": 1}}, "rollingUpdate"),
])
def test_the_schema_refuses_a_misspelt_strategy(strategy, error):
    stack = _standard(4, 8)
    isvc = copy.deepcopy(inference_service(stack, stack.services[0]))
    isvc["spec"]["predictor"]["deploymentStrategy"] = strategy
    assert any(error in path or error in message for path, message in crd_errors(isvc))


@pytest.mark.parametrize("replicas", [1, 3, 4, 5, 8, 9])
def test_the_capacity_check_counts_every_old_pod_and_the_rendered_surge(replicas):
    """The surge the check counts is the rendered maxSurge rounded up, as the Deployment controller resolves it;
    with maxUnavailable 0 every old pod stays, so old + surge must fit, and one GPU less does not."""
    stack = _standard(replicas, replicas, max_size=2 * replicas)
    rolling = inference_service(stack, stack.services[0])["spec"]["predictor"]["deploymentStrategy"]["rollingUpdate"]
    assert rolling["maxUnavailable"] == 0
    surge = math.ceil(replicas * int(rolling["maxSurge"].rstrip("%")) / 100)
    assert surge_pods(replicas) == surge
    needed = replicas + surge                    # 1 GPU per pod, no other service
    assert rollout_problems(_standard(replicas, replicas, max_size=needed)) == []
    [problem] = rollout_problems(_standard(replicas, replicas, max_size=needed - 1))
    assert f"{replicas} running, all serving until the new ones are Ready (maxUnavailable 0)" in problem.allowed
    assert f"+ {surge} surge pod(s) (maxSurge 25%)" in problem.allowed and f"= {needed} GPUs" in problem.allowed


def test_a_surge_as_a_number_or_a_percentage():
    assert surge_pods(4, {"rollingUpdate": {"maxSurge": 2}}) == 2
    assert surge_pods(5, {"rollingUpdate": {"maxSurge": "50%"}}) == 3     # rounded up
    assert surge_pods(5, {"type": "RollingUpdate"}) == 2                   # Kubernetes' default 25 %
