"""The deploymentMode annotation by `kserve.version`, and KServe's update rule on it.

Sources (kserve/kserve): `pkg/constants/constants.go` (v0.15.2 knows Serverless, RawDeployment, ModelMesh; v0.16.0
adds Knative, Standard and keeps the old names as LegacyServerless/LegacyRawDeployment);
`pkg/controller/v1beta1/inferenceservice/utils/utils.go: GetDeploymentMode` (the recorded status first; v0.16.0
maps a legacy annotation to the new name, which `controller.go: updateStatus` records; v0.15.2 reconciles an
unknown value in the default mode); `pkg/apis/serving/v1beta1/inference_service_validation.go:
validateDeploymentMode` (the annotation must equal status.deploymentMode as written, on every UPDATE; v0.16.0's
`ValidateUpdate` has no deletion exception); kserve#5025 (93752a1ae, first in v0.17.0): the defaulting webhook
rewrites legacy annotations and a deletion skips the check.
"""

from __future__ import annotations

import copy

import pytest

from manifests import render_stack
from manifests.admission import admission_problems
from manifests.knative import required_features
from stackconfig.load import project_values, stack_config_values, stack_names
from stackconfig.schema import parse_stack_config
from validation.admission import ClusterAdmission, admission_refusals
from validation.deployment_mode import recorded_mode

KEY = "serving.kserve.io/deploymentMode"


def _stack(stack: str, version: str | None):
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    if version is not None:
        values.setdefault("kserve", {})["version"] = version
    return parse_stack_config(values, project, stack)


def _isvcs(cfg) -> dict[str, dict]:
    return {m["metadata"]["name"]: m for m in render_stack(cfg) if m["kind"] == "InferenceService"}


def _cluster(version: tuple[int, int]) -> ClusterAdmission:
    return ClusterAdmission(kserve_version=version).with_features(
        ["kubernetes.podspec-tolerations", "kubernetes.podspec-nodeselector"])


@pytest.mark.parametrize("version, knative, standard", [
    (None, "Serverless", "RawDeployment"), ("0.15", "Serverless", "RawDeployment"),
    ("0.16", "Knative", "Standard"), ("v0.16.0", "Knative", "Standard"), ("0.17", "Knative", "Standard"),
    ("0.19", "Knative", "Standard")])
def test_the_mode_is_written_in_the_names_the_clusters_kserve_keeps(version, knative, standard):
    """staging has one service of each mode."""
    cfg = _stack("staging", version)
    modes = {s.name: s.deployment_mode for s in cfg.services}
    assert sorted(modes.values()) == ["Knative", "Standard"]
    written = {name: m["metadata"]["annotations"][KEY] for name, m in _isvcs(cfg).items()}
    assert written == {name: knative if mode == "Knative" else standard for name, mode in modes.items()}


@pytest.mark.parametrize("stack", stack_names())
@pytest.mark.parametrize("version", ["0.15", "0.16", "0.17"])
def test_a_rendered_stack_updates_itself_on_its_kserve(stack, version):
    """Created, then `pulumi up` again (or the controller's finalizer removal): the second write is admitted.
    On 0.16 the legacy names failed here: status 'Knative', annotation 'Serverless'."""
    cfg = _stack(stack, version)
    assert admission_problems(cfg) == []
    rendered = render_stack(cfg)
    previous = {name: copy.deepcopy(m) for name, m in _isvcs(cfg).items()}
    cluster = ClusterAdmission(kserve_version=cfg.kserve.version, knative_features=_cluster((0, 15)).knative_features)
    refusals = admission_refusals(rendered, cluster, previous=previous)
    assert [r for r in refusals if "validateDeploymentMode" in r.rule] == []


def test_a_legacy_name_on_kserve_0_16_refuses_every_later_update():
    """The old rendering on 0.16.0: created with 'Serverless', recorded as 'Knative', every update refused."""
    isvc = _isvcs(_stack("dev", "0.16"))["chat"]
    isvc["metadata"]["annotations"][KEY] = "Serverless"
    [r] = admission_refusals([isvc], _cluster((0, 16)), previous={"chat": copy.deepcopy(isvc)})
    assert (r.path, r.rule) == (f"metadata.annotations[{KEY}]",
                                "inference_service_validation.go validateDeploymentMode")
    assert "update rejected: deploymentMode cannot be changed from 'Knative' to 'Serverless'" in r.message
    assert "finalizer removal" in r.message and "write 'Knative'" in r.message
    # 0.17's defaulting webhook rewrites the legacy annotation first (kserve#5025)
    assert admission_refusals([isvc], _cluster((0, 17)), previous={"chat": copy.deepcopy(isvc)}) == []
    # 0.15 records the legacy name itself
    assert admission_refusals([isvc], _cluster((0, 15)), previous={"chat": copy.deepcopy(isvc)}) == []


@pytest.mark.parametrize("annotation, version, status", [
    ("Serverless", (0, 15), "Serverless"), ("RawDeployment", (0, 15), "RawDeployment"),
    ("Knative", (0, 15), "Serverless"), ("Standard", (0, 15), "Serverless"),  # unknown on 0.15: the default
    ("Serverless", (0, 16), "Knative"), ("RawDeployment", (0, 16), "Standard"), ("Standard", (0, 16), "Standard"),
    ("Knative", (0, 18), "Knative"), (None, (0, 16), "Knative")])
def test_the_status_kserve_records_for_an_annotation(annotation, version, status):
    assert recorded_mode(annotation, version) == status


def test_a_service_created_by_kserve_0_15_after_the_upgrade():
    """status.deploymentMode stays 'Serverless' (GetDeploymentMode returns the recorded status unchanged)."""
    created = _isvcs(_stack("dev", "0.15"))["chat"]
    created["status"] = {"deploymentMode": "Serverless"}
    renamed = _isvcs(_stack("dev", "0.16"))["chat"]
    # 0.16.0: the unchanged object (e.g. its finalizer removal when Pulumi replaces it) is admitted ...
    assert admission_refusals([created], _cluster((0, 16)), previous={"chat": created}) == []
    # ... an update in place to the new name is not
    [r] = admission_refusals([renamed], _cluster((0, 16)), previous={"chat": created})
    assert "cannot be changed from 'Serverless' to 'Knative'" in r.message and "write 'Serverless'" in r.message
    # 0.17: the defaulter rewrites either spelling to 'Knative', which the recorded 'Serverless' refuses
    for obj in (created, renamed):
        [r] = admission_refusals([obj], _cluster((0, 17)), previous={"chat": created})
        assert "cannot be changed from 'Serverless' to 'Knative'" in r.message and "replace" in r.message


def test_a_mode_change_is_still_refused_on_every_release():
    for version in ((0, 15), (0, 16), (0, 17)):
        isvcs = _isvcs(_stack("staging", ".".join(map(str, version))))
        chat, vision = isvcs["chat"], isvcs["vision"]
        moved = copy.deepcopy(vision)
        moved["metadata"]["annotations"][KEY] = chat["metadata"]["annotations"][KEY]
        refusals = [r for r in admission_refusals([moved], _cluster(version), previous={"vision": vision})
                    if "validateDeploymentMode" in r.rule]
        assert len(refusals) == 1 and "must be replaced (delete and create)" in refusals[0].message


@pytest.mark.parametrize("name", ["Knative", "Standard"])
def test_a_new_mode_name_on_kserve_0_15_is_refused(name):
    """0.15's GetDeploymentMode does not know it and reconciles the service in the default mode."""
    isvc = _isvcs(_stack("dev", None))["chat"]
    isvc["metadata"]["annotations"][KEY] = name
    refusals = [r for r in admission_refusals([isvc], _cluster((0, 15))) if "GetDeploymentMode" in r.rule]
    assert len(refusals) == 1 and f"KServe 0.15 does not know deploymentMode {name!r}" in refusals[0].message
    assert [r for r in admission_refusals([isvc], _cluster((0, 16))) if "GetDeploymentMode" in r.rule] == []


def test_a_standard_service_needs_no_knative_feature_under_either_name():
    """manifests/knative.py enables config-features for Knative-mode predictors only: 'Standard' is not one."""
    staging15, staging16 = _stack("staging", "0.15"), _stack("staging", "0.16")
    vision = _isvcs(staging16)["vision"]
    assert vision["metadata"]["annotations"][KEY] == "Standard"
    vision["spec"]["predictor"]["affinity"] = {"nodeAffinity": {}}  # a field behind a Knative flag
    assert required_features([vision]) == []
    assert required_features(render_stack(staging16)) == required_features(render_stack(staging15))
