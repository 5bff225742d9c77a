"""Rule edges no fixture reached (mutation testing, rev11-mut): a multi-GPU predictor against the node group's GPUs,
KServe's default minReplicas, Knative's HPA class without a metric, and a startup budget equal to the expected
load. Each case has a control on the other side of the edge, so a rule that never fires fails it too."""

from __future__ import annotations

from policy.rules import RULES_BY_ID, evaluate
from policy_fixtures import Stack, shipped


def _fired(resources, rule_id: str) -> list[str]:
    return [v.message for v in evaluate(resources, [RULES_BY_ID[rule_id]])]


def test_max_replicas_counts_every_gpu_of_a_multi_gpu_replica():
    """The scheduler fits a pod by its containers' nvidia.com/gpu limits, so a 2-GPU replica takes 2 of the node
    group's 28 GPUs (maxSize 7 × 4): 15 replicas need 30 (refused; 15 alone would fit), 14 need exactly 28."""
    s = Stack(shipped("prod"))
    model = s.model("code-isvc")
    for key in ("limits", "requests"):
        model["resources"][key]["nvidia.com/gpu"] = "2"
    s.pred("code-isvc").update(maxReplicas=15.0, minReplicas=1.0)
    [msg] = _fired(s.resources, "isvc-max-replicas")
    assert "15 × 2 GPU(s) = 30 GPUs" in msg and "Lower maxReplicas to 14" in msg
    s.pred("code-isvc")["maxReplicas"] = 14.0
    assert _fired(s.resources, "isvc-max-replicas") == []


def test_unset_min_replicas_is_kserves_default_one_in_prod():
    """kserve pkg/constants DefaultMinReplicas = 1 (component.go: "defaults to 1 but can be set to 0"): a prod
    service that leaves minReplicas unset keeps a replica; minReplicas 0 is what the rule refuses."""
    s = Stack(shipped("prod"))
    s.pred("chat-isvc").pop("minReplicas", None)
    assert _fired(s.resources, "isvc-prod-min-replicas") == []
    s.pred("chat-isvc")["minReplicas"] = 0.0
    assert len(_fired(s.resources, "isvc-prod-min-replicas")) == 1


def test_knative_hpa_class_without_a_metric_scales_on_cpu():
    """knative/serving pa_defaults.go: the HPA class's default metric is cpu (the KPA's is concurrency), so a GPU
    service with class hpa.autoscaling.knative.dev and no metric named never scales out on its GPU work."""
    s = Stack(shipped("prod"))
    ann = s.props("chat-isvc")["metadata"]["annotations"]
    ann.pop("autoscaling.knative.dev/metric", None)
    s.pred("chat-isvc").pop("scaleMetric", None)
    ann["autoscaling.knative.dev/class"] = "kpa.autoscaling.knative.dev"
    assert _fired(s.resources, "isvc-scale-metric") == []
    ann["autoscaling.knative.dev/class"] = "hpa.autoscaling.knative.dev"
    [msg] = _fired(s.resources, "isvc-scale-metric")
    assert "with class hpa.autoscaling.knative.dev" in msg and "never scales out" in msg


def test_startup_budget_equal_to_the_expected_load_passes():
    """The loader (stackconfig/services.py) asks for a budget of at least the expected load; the policy agrees at
    equality: 0 + 10 × (9 − 1) = 80 s covers an 80 s load and not an 81 s one."""
    s = Stack(shipped("prod"))
    s.model("chat-isvc")["startupProbe"].update(periodSeconds=10.0, failureThreshold=9.0, initialDelaySeconds=0.0)
    ann = s.props("chat-isvc")["metadata"]["annotations"]
    ann["preflight.kserve.io/expected-load-seconds"] = "80"
    assert _fired(s.resources, "isvc-startup-probe") == []
    ann["preflight.kserve.io/expected-load-seconds"] = "81"
    assert len(_fired(s.resources, "isvc-startup-probe")) == 1
