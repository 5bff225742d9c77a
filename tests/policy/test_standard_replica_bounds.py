"""In Standard mode with autoscalerClass external the stack writes the replica bounds on the HPA or KEDA
ScaledObject only (review 13 F2: on the InferenceService they moved its generation and not the Deployment's, and
KServe ignores them there), so the policies read them where they act: staging's vision is scaled by a ScaledObject
(minReplicaCount / maxReplicaCount) and carries no minReplicas/maxReplicas on its predictor."""

from __future__ import annotations

from policy.rules import Context, evaluate
from policy.bounds import replica_bounds
from policy_fixtures import Stack, shipped


def _fired(resources, rule_id: str) -> list[str]:
    return [v.message for v in evaluate(resources) if v.rule == rule_id]


def test_the_standard_predictor_has_no_bounds_and_the_scaled_object_has_them():
    s = Stack(shipped("staging"))
    assert "minReplicas" not in s.pred("vision-isvc") and "maxReplicas" not in s.pred("vision-isvc")
    so = s.props("vision-scaledobject")["spec"]
    bounds = replica_bounds(s.get("vision-isvc"), Context.of(s.resources))
    assert (bounds.min, bounds.max) == (so["minReplicaCount"], so["maxReplicaCount"])
    assert bounds.max_field == "ScaledObject/vision-predictor-scaler maxReplicaCount"
    assert _fired(s.resources, "isvc-max-replicas") == []          # bounded by its ScaledObject


def test_max_replicas_rule_reads_the_scaled_object():
    s = Stack(shipped("staging"))
    s.props("vision-scaledobject")["spec"]["maxReplicaCount"] = 400.0
    [msg] = _fired(s.resources, "isvc-max-replicas")
    assert "ScaledObject/vision-predictor-scaler maxReplicaCount 400 ×" in msg


def test_unset_bounds_take_keda_defaults():
    s = Stack(shipped("staging"))
    del s.props("vision-scaledobject")["spec"]["maxReplicaCount"]     # KEDA's default: 100
    del s.props("vision-scaledobject")["spec"]["minReplicaCount"]     # KEDA's default: 0
    bounds = replica_bounds(s.get("vision-isvc"), Context.of(s.resources))
    assert (bounds.min, bounds.max) == (0.0, 100.0)


def test_node_group_rules_sum_the_autoscaler_bounds():
    s = Stack(shipped("staging"))
    s.props("vision-scaledobject")["spec"]["minReplicaCount"] = 200.0
    s.props("vision-scaledobject")["spec"]["maxReplicaCount"] = 200.0
    assert any("minReplicas need" in m for m in _fired(s.resources, "nodegroup-capacity"))
    assert any("all services at maxReplicas need" in m for m in _fired(s.resources, "nodegroup-fits-peak"))


def test_a_predictor_bound_is_not_what_acts_under_class_external():
    """KServe ignores a Standard predictor's bounds with class external: one written there is not read."""
    s = Stack(shipped("staging"))
    s.pred("vision-isvc").update(minReplicas=0.0, maxReplicas=500.0)
    assert _fired(s.resources, "isvc-max-replicas") == []
    bounds = replica_bounds(s.get("vision-isvc"), Context.of(s.resources))
    assert bounds.max == s.props("vision-scaledobject")["spec"]["maxReplicaCount"]
