"""`autoscaling.knative.dev/activation-scale` is held to the range Knative's webhook admits, at load and on the
rendered objects, whether or not the gate simulates the service.

Sources: knative/serving `pkg/apis/autoscaling/annotation_validation.go: validateMinMaxScale` ("min-scale=%d is
greater than activation-scale=%d", "max-scale=%d is less than activation-scale=%d", "activation-scale=%d must be
greater than 1"); kserve `pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations` (min-scale from
minReplicas, 1 when unset; max-scale from a non-zero maxReplicas). So the range is [max(2, minReplicas),
maxReplicas]: dev chat 0..2 → [2, 2], prod chat 4..12 → [4, 12].
"""

from __future__ import annotations

import copy

import pulumi
import pytest

from manifests import render_stack
from offline import run_program
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.admission import ClusterAdmission, admission_refusals
from validation.errors import InputError

P = "kserve-preflight"
KEY = "autoscaling.knative.dev/activation-scale"


def _values(stack: str, value: str, *, gate_off: bool = False, no_workload: bool = False) -> tuple[str, dict]:
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    svc = values["services"][0]
    svc.setdefault("annotations", {})[KEY] = value
    if no_workload:
        for key in ("workload", "slo", "stress"):
            svc.pop(key, None)
    if gate_off:
        values["gate"] = {"enabled": False}
    return project, values


def _load(stack: str, value: str, **kw):
    project, values = _values(stack, value, **kw)
    return parse_stack_config(values, project, stack)


def _refused(stack: str, value: str, **kw) -> list:
    with pytest.raises(InputError) as err:
        _load(stack, value, **kw)
    return err.value.problems


@pytest.mark.parametrize("stack, value, allowed", [
    ("prod", "2", "expected an integer >= 4 and <= 12 "),   # min-scale=4 is greater than activation-scale=2
    ("prod", "3", "expected an integer >= 4 and <= 12 "),
    ("prod", "13", "expected an integer >= 4 and <= 12 "),  # max-scale=12 is less than activation-scale=13
    ("dev", "3", "expected an integer >= 2 and <= 2 "),      # dev chat: maxReplicas 2
    ("dev", "1", "expected an integer >= 2 and <= 2 "),      # must be greater than 1
    ("dev", "2.0", "expected an integer >= 2 and <= 2 "),    # strconv.ParseInt refuses it
])
@pytest.mark.parametrize("kw", [{}, {"gate_off": True}, {"no_workload": True}, {"gate_off": True, "no_workload": True}])
def test_an_activation_scale_outside_min_and_max_replicas_is_refused_at_load(stack, value, allowed, kw):
    problems = _refused(stack, value, **kw)
    assert [(p.path, p.value) for p in problems] == [(f"{P}:services[0].annotations[{KEY}]", value)]
    assert problems[0].allowed.startswith(allowed)
    assert "validateMinMaxScale" in problems[0].allowed


@pytest.mark.parametrize("stack, value", [("prod", "4"), ("prod", "12"), ("dev", "2")])
def test_the_bounds_themselves_are_admitted(stack, value):
    cfg = _load(stack, value, gate_off=True, no_workload=True)
    assert cfg.services[0].annotations[KEY] == value


def test_the_cluster_min_scale_is_not_the_bound():
    """KServe writes min-scale from minReplicas over the cluster's config-autoscaler min-scale."""
    project, values = _values("prod", "5", gate_off=True)
    values["services"][0]["minReplicas"] = 2
    values["knative"] = {"autoscaler": {"min-scale": "6"}}
    assert parse_stack_config(values, project, "prod").services[0].annotations[KEY] == "5"


def test_pulumi_up_stops_before_any_resource(registered):
    def edit(c):
        svc = c[f"{P}:services"][0]
        svc["annotations"][KEY] = "2"
        for key in ("workload", "slo", "stress"):
            svc.pop(key, None)
        c[f"{P}:gate"] = {"enabled": False}

    with pytest.raises(pulumi.RunError, match=r"services\[0\]\.annotations\[autoscaling\.knative\.dev/activation-"
                                              r"scale\]: got '2'"):
        run_program("prod", edit=edit)
    assert registered == []


# --- the same rule on rendered objects (validation/admission.py) --------------------------------------------
def _chat(stack: str = "prod") -> dict:
    project, values = _values(stack, "4" if stack == "prod" else "2")
    cfg = parse_stack_config(values, project, stack)
    return copy.deepcopy(next(m for m in render_stack(cfg) if m["kind"] == "InferenceService"
                              and m["metadata"]["name"] == "chat"))


ALL_ON = ClusterAdmission().with_features(["kubernetes.podspec-tolerations", "kubernetes.podspec-nodeselector",
                                           "kubernetes.podspec-affinity",
                                           "kubernetes.podspec-topologyspreadconstraints"])


@pytest.mark.parametrize("value, message", [
    ("2", "min-scale=4 is greater than activation-scale=2"),
    ("13", "max-scale=12 is less than activation-scale=13"),
    ("x", "invalid value: 'x'"),
])
def test_admission_refuses_an_activation_scale_knative_refuses(value, message):
    isvc = _chat()
    assert [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule] == []
    isvc["metadata"]["annotations"][KEY] = value
    [r] = [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule]
    assert (r.path, r.rule) == (f"metadata.annotations[{KEY}]", "annotation_validation.go validateMinMaxScale")
    assert r.message.startswith(message) and "expected an integer from 4 to 12" in r.message


def test_admission_reads_min_and_max_scale_as_kserve_writes_them():
    isvc = _chat("dev")
    pred, ann = isvc["spec"]["predictor"], isvc["metadata"]["annotations"]
    ann[KEY] = "1"
    [r] = [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule]
    assert r.message.startswith("activation-scale=1 must be greater than 1")
    ann[KEY] = "3"
    pred.pop("minReplicas")        # KServe writes min-scale 1 (DefaultMinReplicas)
    pred["maxReplicas"] = 0        # no max-scale: unbounded
    assert [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule] == []
    ann["autoscaling.knative.dev/max-scale"] = "2"   # kept when maxReplicas is 0
    [r] = [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule]
    assert r.message.startswith("max-scale=2 is less than activation-scale=3")


def test_a_standard_mode_service_has_no_knative_revision_to_refuse():
    isvc = _chat()
    isvc["metadata"]["annotations"].update({"serving.kserve.io/deploymentMode": "RawDeployment", KEY: "2"})
    assert [r for r in admission_refusals([isvc], ALL_ON) if "validateMinMaxScale" in r.rule] == []
