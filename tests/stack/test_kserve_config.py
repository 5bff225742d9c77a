"""`kserve`: the annotations only the gate, the policies and Pulumi read stay off the predictor's pod template.

KServe copies every InferenceService annotation not in its serviceAnnotationDisallowedList onto the Knative
revision template (raw: the Deployment's pod template), so without the stack's patch of inferenceservice-config
a changed SLO or cold-start prior starts new GPU pods (manifests/kserve_config.py)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings

from manifests import render_stack
from manifests.inference_service import STACK_ONLY_ANNOTATIONS, STACK_ONLY_PREFIXES
from manifests.kserve_config import (CONFIG_KEY, KSERVE_ANNOTATION_DISALLOWED, inferenceservice_config_patch,
                                     template_annotations)
from fuzz.mutate import mutated
from program_refusal import refusal
from offline import run_program
from stackconfig.load import project_values, stack_config_values, stack_names
from stackconfig.schema import StackConfig, parse_stack_config
from validation.errors import InputError
from validation.kubernetes import validation_errors

P = "kserve-preflight"
PATCH = "kubernetes:core/v1:ConfigMapPatch"
# kserve config/configmap/inferenceservice.yaml data.inferenceService (v0.15.0 … v0.20.0): the value a patch replaces.
SHIPPED_VALUE = {"resource": {"cpuLimit": "1", "memoryLimit": "2Gi", "cpuRequest": "1", "memoryRequest": "2Gi"}}
# kserve pkg/constants ServiceAnnotationDisallowedList (v0.15.2) and RevisionTemplateLabelDisallowedList.
BUILT_IN = ["autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/max-scale",
            "internal.serving.kserve.io/storage-initializer-sourceuri",
            "kubectl.kubernetes.io/last-applied-configuration"]


def parse(stack: str = "dev", edit=lambda v: None) -> StackConfig:
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    edit(values)
    return parse_stack_config(values, project, stack)


def kserve_parses(patch: dict | None) -> list[str]:
    """The list KServe applies (configmap.go NewInferenceServicesConfig): its built-ins, then the key's list;
    only the built-ins when nothing is patched (the cluster as installed)."""
    if patch is None:
        return list(BUILT_IN)
    return BUILT_IN + json.loads(patch["data"][CONFIG_KEY]).get("serviceAnnotationDisallowedList", [])


def isvcs(cfg: StackConfig) -> dict[str, dict]:
    return {m["metadata"]["name"]: m for m in render_stack(cfg) if m["kind"] == "InferenceService"}


def test_the_patch_keeps_kserves_shipped_value_and_built_in_entries_and_adds_ours():
    cfg = parse()
    patch = inferenceservice_config_patch(cfg)
    assert (patch["metadata"]["name"], patch["metadata"]["namespace"]) == ("inferenceservice-config", "kserve")
    assert patch["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert list(patch["data"]) == [CONFIG_KEY]  # only this key is owned
    value = json.loads(patch["data"][CONFIG_KEY])
    assert value["resource"] == SHIPPED_VALUE["resource"]
    listed = value["serviceAnnotationDisallowedList"]
    assert listed[:len(BUILT_IN)] == BUILT_IN and "modelFormat" in listed
    assert set(STACK_ONLY_ANNOTATIONS) <= set(listed) and len(listed) == len(set(listed))
    assert {"pulumi.com/timeoutSeconds", "preflight.kserve.io/slo-p99-latency-seconds",
            "preflight.kserve.io/expected-load-seconds", "preflight.kserve.io/traffic"} <= set(listed)
    assert value["serviceLabelDisallowedList"] == ["networking.knative.dev/visibility"]
    assert [m for m in render_stack(cfg) if m["metadata"]["name"] == "inferenceservice-config"] == [patch]


def test_entries_and_namespace_the_user_gives_are_written_too():
    cfg = parse(edit=lambda v: v.update(kserve={"namespace": "kubeflow",
                                                "serviceAnnotationDisallowedList": ["example.com/owner"]}))
    patch = inferenceservice_config_patch(cfg)
    assert patch["metadata"]["namespace"] == "kubeflow"
    listed = json.loads(patch["data"][CONFIG_KEY])["serviceAnnotationDisallowedList"]
    assert listed[-1] == "example.com/owner" and set(STACK_ONLY_ANNOTATIONS) <= set(listed)


def _pin_startup_probe(v):
    for svc in v["services"]:
        svc.setdefault("probes", {})["startup"] = {"periodSeconds": 10, "failureThreshold": 40}


def _edit(*changes):
    def edit(v):
        _pin_startup_probe(v)
        for change in changes:
            change(v)
    return edit


# Gate-only and Pulumi-only settings. engineInitS (like loadGBps, downloadGBps) also sizes the default startup
# probe, which the pod needs; with the probe given, it changes only what the gate and Pulumi read.
EDITS = {
    "slo": ("prod", _edit(lambda v: v["services"][0]["slo"].update(p99LatencyS=45))),
    "node-provision-prior": ("prod", _edit(lambda v: v["coldStart"].update(nodeProvisionS=200))),
    "engine-init-prior": ("prod", _edit(lambda v: v["coldStart"].update(engineInitS=60))),
    "standard-mode-slo": ("staging", _edit(lambda v: v["services"][1]["slo"].update(p99LatencyS=3))),
    "workload-shape": ("prod", _edit(lambda v: v["services"][1]["workload"].update(cv=0.5))),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_gate_or_pulumi_only_change_leaves_what_kserve_copies_to_the_pods_unchanged(name):
    stack, edit = EDITS[name]
    before, after = parse(stack, _edit()), parse(stack, edit)
    a, b = isvcs(before), isvcs(after)
    changed = [n for n in a if a[n]["metadata"]["annotations"] != b[n]["metadata"]["annotations"]]
    assert changed, "the edit must change what the gate or Pulumi reads"
    listed = kserve_parses(inferenceservice_config_patch(after))
    assert kserve_parses(inferenceservice_config_patch(before)) == listed
    for n in changed:
        assert a[n]["spec"] == b[n]["spec"] and a[n]["metadata"]["labels"] == b[n]["metadata"]["labels"]
        assert template_annotations(a[n], listed) == template_annotations(b[n], listed)
        # The cluster as KServe installs it (built-in list only) would have started new pods.
        assert template_annotations(a[n], BUILT_IN) != template_annotations(b[n], BUILT_IN)


def test_every_stack_only_annotation_the_shipped_stacks_write_is_listed():
    """A new annotation for the gate or Pulumi must join STACK_ONLY_ANNOTATIONS, or its changes would roll pods."""
    written = {k for stack in stack_names() for m in isvcs(parse(stack)).values()
               for k in m["metadata"]["annotations"] if k.startswith(STACK_ONLY_PREFIXES)}
    assert written <= set(STACK_ONLY_ANNOTATIONS)
    assert {"pulumi.com/timeoutSeconds", "preflight.kserve.io/triton-max-batch-size"} <= written


def test_only_stack_only_annotations_are_kept_off_the_pods():
    """Control: the Knative and KServe annotations the pods' controllers read are still copied."""
    listed = kserve_parses(inferenceservice_config_patch(parse("prod")))
    copied = template_annotations(isvcs(parse("prod"))["chat"], listed)
    assert copied["autoscaling.knative.dev/window"] == "180s"
    assert copied["serving.kserve.io/deploymentMode"] == "Serverless"
    assert not [k for k in copied if k.startswith(STACK_ONLY_PREFIXES)]
    assert not set(KSERVE_ANNOTATION_DISALLOWED) & set(STACK_ONLY_ANNOTATIONS)


def test_the_program_patches_before_the_services_and_keeps_the_key_on_delete():
    import pulumi_kubernetes as k8s

    r = run_program("dev", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False}))
    [patch] = [p for p in r.of_type(PATCH) if p.inputs["metadata"]["name"] == "inferenceservice-config"]
    assert json.loads(patch.inputs["data"][CONFIG_KEY]) == json.loads(
        inferenceservice_config_patch(parse())["data"][CONFIG_KEY])
    assert r.options["kserve-config-patch"].retain_on_delete is True
    deps = r.options["chat-isvc"].depends_on
    assert any(isinstance(d, k8s.core.v1.ConfigMapPatch) and d._name == "kserve-config-patch" for d in deps)
    assert r.of_type("kserve-preflight:serving:KServeConfig")


ALL_OURS = {"manageConfig": False, "serviceAnnotationDisallowedList": list(STACK_ONLY_ANNOTATIONS)}


def test_a_self_managed_kserve_config_missing_our_annotations_is_refused(registered):
    msg = refusal("dev", lambda c: c.__setitem__(f"{P}:kserve", {"manageConfig": False}), registered)
    assert f"{P}:kserve.serviceAnnotationDisallowedList: got []" in msg
    assert "missing pulumi.com/waitFor, pulumi.com/timeoutSeconds, preflight.kserve.io/engine" in msg
    assert "kserve/inferenceservice-config" in msg and "kserve.manageConfig: true" in msg


def test_a_self_managed_kserve_config_listing_them_deploys_without_a_patch():
    r = run_program("dev", edit=lambda c: c.update({f"{P}:kserve": ALL_OURS, f"{P}:gate": {"enabled": False}}))
    assert r.of_type("kubernetes:serving.kserve.io/v1beta1:InferenceService")
    assert [p.inputs["metadata"]["name"] for p in r.of_type(PATCH)] == ["config-features"]


@pytest.mark.parametrize("block,path,fragment", [
    ({"manageConfig": "yes"}, "kserve.manageConfig", "true or false"),
    ({"namespace": "KServe"}, "kserve.namespace", "namespace name"),
    ({"serviceAnnotationDisallowedList": ["not an annotation!"]}, "kserve.serviceAnnotationDisallowedList[0]",
     "expected an annotation key"),
    ({"serviceAnnotationDisallowedList": "pulumi.com/waitFor"}, "kserve.serviceAnnotationDisallowedList",
     "expected a list"),
    ({"managedConfig": False}, "kserve.managedConfig", "manageConfig"),
])
def test_bad_kserve_settings_are_refused_at_load(block, path, fragment):
    with pytest.raises(InputError) as err:
        parse(edit=lambda v: v.update(kserve=block))
    [problem] = err.value.problems
    assert problem.path == f"{P}:{path}" and fragment in problem.allowed


BLOCK = {"namespace": "kubeflow", "manageConfig": False,
         "serviceAnnotationDisallowedList": ["example.com/owner", *STACK_ONLY_ANNOTATIONS]}


@given(mutated(BLOCK))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_kserve_settings_are_refused_cleanly_or_render_a_valid_patch(case):
    from manifests.admission import check_pods_can_run

    block, mutations = case
    try:
        cfg = parse(edit=lambda v: v.update(kserve=copy.deepcopy(block)))
        check_pods_can_run(cfg)
    except InputError as err:
        assert err.problems and all(p.path.startswith(f"{P}:kserve") and p.allowed for p in err.problems), mutations
        return
    patch = inferenceservice_config_patch(cfg)
    if patch is not None:
        assert validation_errors(patch, cfg.cluster.kubernetes_version) == []
        assert set(STACK_ONLY_ANNOTATIONS) <= set(kserve_parses(patch))
