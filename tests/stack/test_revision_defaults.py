"""What a Knative revision runs with is what the gate simulated, whatever the cluster's defaults (review rev12 F3).

KServe hands `spec.predictor.containerConcurrency` and `timeout` to the Knative Service as they are
(reconcilers/knative/ksvc_reconciler.go: ContainerConcurrency, TimeoutSeconds, and ResponseStartTimeoutSeconds =
the timeout) and copies the InferenceService's annotations to the revision template. Knative's
`RevisionSpec.SetDefaults` (pkg/apis/serving/v1/revision_defaults.go) then fills a nil containerConcurrency from
config-defaults `container-concurrency` and a nil or 0 timeout from `revision-timeout-seconds`; a revision without
`serving.knative.dev/progress-deadline` gets config-deployment's `progress-deadline`. The stack manages none of
those ConfigMaps, so it renders all three in Knative mode, as the simulation reads them when unset."""

from __future__ import annotations

import copy

import pytest

from manifests import render_stack
from manifests.admission import cluster_admission
from manifests.inference_service import inference_service
from manifests.rollout import progress_deadline_s
from policy.resources import ISVC_TYPE, Resource
from policy.rules import evaluate
from simulation.autoscaler.config import PROGRESS_DEADLINE_KEY, progress_deadline_s as knative_duration
from simulation.isvc import ServingSpec
from stackconfig.schema import parse_stack_config
from validation.admission import admission_refusals

from tests.runtime_stack import chat_stack

SHIPPED = {"container-concurrency": 0, "revision-timeout-seconds": 300, "progress-deadline": "600s"}
ODD_CLUSTER = {"container-concurrency": 4, "revision-timeout-seconds": 120, "progress-deadline": "300s"}


def _render(**service) -> tuple[dict, object]:
    cfg = parse_stack_config(chat_stack(**service), "p", "dev")
    return inference_service(cfg, cfg.services[0]), cfg.services[0]


def _admitted(**service) -> list:
    cfg = parse_stack_config(chat_stack(**service), "p", "dev")
    return list(admission_refusals(render_stack(cfg), cluster_admission(cfg)))


def revision(isvc: dict, cluster: dict) -> tuple[int, int, float]:
    """(containerConcurrency, timeoutSeconds, progress deadline) of the revision KServe and Knative make of `isvc`
    on a cluster with these config-defaults / config-deployment values."""
    pred, ann = isvc["spec"]["predictor"], isvc["metadata"]["annotations"]
    cc = pred.get("containerConcurrency")                   # ksvc_reconciler.go: as it is
    timeout = pred.get("timeout")
    cc = cluster["container-concurrency"] if cc is None else cc           # SetDefaults: nil → config-defaults
    timeout = timeout or cluster["revision-timeout-seconds"]             # nil or 0 → config-defaults
    deadline, _ = knative_duration(ann.get(PROGRESS_DEADLINE_KEY, cluster["progress-deadline"]))
    return cc, timeout, deadline


def simulated(isvc: dict) -> tuple[int, float, float]:
    spec = ServingSpec.from_manifest(isvc)
    return spec.container_concurrency, spec.timeout_s, spec.kpa.progress_deadline_s


def test_unset_they_are_rendered_as_the_simulation_reads_them_unset():
    isvc, svc = _render()
    pred, ann = isvc["spec"]["predictor"], isvc["metadata"]["annotations"]
    assert (pred["containerConcurrency"], pred["timeout"], ann[PROGRESS_DEADLINE_KEY]) == (0, 300, "600s")
    bare = copy.deepcopy(isvc)
    del bare["spec"]["predictor"]["containerConcurrency"], bare["spec"]["predictor"]["timeout"]
    del bare["metadata"]["annotations"][PROGRESS_DEADLINE_KEY]
    assert simulated(isvc) == simulated(bare) == (0, 300.0, 600.0)
    assert progress_deadline_s(svc) == 600.0   # Pulumi's wait and the rollout check read the same


@pytest.mark.parametrize("service", [{}, {"containerConcurrency": 8, "timeout": 120},
                                     {"annotations": {PROGRESS_DEADLINE_KEY: "15m"}}],
                         ids=["unset", "set", "deadline"])
def test_the_clusters_own_defaults_cannot_change_what_runs(service):
    """On a cluster whose config-defaults and config-deployment are not Knative's shipped ones the revision still
    runs what the simulation reads; before, an unset containerConcurrency took the cluster's 4 (1 request at a time
    where the gate simulated unlimited), the timeout its 120 s and the progress deadline its 300 s."""
    isvc, svc = _render(**service)
    want = simulated(isvc)
    assert revision(isvc, ODD_CLUSTER) == revision(isvc, SHIPPED) == want
    assert progress_deadline_s(svc) == want[2]


def test_what_the_user_sets_is_rendered_as_set():
    isvc, _ = _render(containerConcurrency=8, timeout=120, annotations={PROGRESS_DEADLINE_KEY: "15m"})
    assert isvc["spec"]["predictor"]["containerConcurrency"] == 8 and isvc["spec"]["predictor"]["timeout"] == 120
    assert isvc["metadata"]["annotations"][PROGRESS_DEADLINE_KEY] == "15m"
    assert simulated(isvc) == (8, 120.0, 900.0)


def test_standard_mode_renders_none_of_them():
    """No queue-proxy and no Knative revision: KServe drops containerConcurrency and timeout (refused in the stack)
    and nothing reads the annotation."""
    isvc, _ = _render(deploymentMode="Standard", scaleMetric="cpu", minReplicas=1)
    assert not {"containerConcurrency", "timeout"} & set(isvc["spec"]["predictor"])
    assert PROGRESS_DEADLINE_KEY not in isvc["metadata"]["annotations"]


def _policy(isvc: dict, rule: str) -> list[str]:
    return [v.message for v in evaluate([Resource(ISVC_TYPE, "chat-isvc", isvc)]) if v.rule == rule]


def test_a_rendered_zero_is_admitted_and_still_fails_the_mandatory_policy():
    """KServe admits containerConcurrency 0 (component.go validateContainerConcurrency refuses only < 0) and so does
    the stack's admission check; the mandatory policy wants > 0 and gives an explicit 0 the message it gives any
    0: the same as for a hand-written predictor with containerConcurrency 0."""
    assert _admitted() == []
    isvc, _ = _render()
    [msg] = _policy(isvc, "isvc-container-concurrency")
    assert "spec.predictor.containerConcurrency is 0 (unlimited)" in msg
    by_hand = copy.deepcopy(isvc)
    by_hand["spec"]["predictor"]["containerConcurrency"] = 0.0   # Pulumi's wire format
    assert _policy(by_hand, "isvc-container-concurrency") == [msg]
    isvc, _ = _render(containerConcurrency=8)
    assert _policy(isvc, "isvc-container-concurrency") == []


def test_the_rendered_timeout_is_judged_by_the_timeout_policy():
    """The rendered 300 s is the timeout the policy and the simulation use; an SLO above it still fails."""
    isvc, _ = _render(slo={"p99LatencyS": 400})
    [msg] = _policy(isvc, "isvc-timeout")
    assert "timeout is 300 s, below the p99 latency SLO 400 s" in msg
