"""The admission validator: every shipped stack is admitted, and each rule catches its own failure."""

from __future__ import annotations

import copy

import pulumi
import pytest

from manifests import render_stack
from manifests.admission import admission_problems, cluster_admission
from offline import run_program
from stackconfig.load import load_stack, stack_names
from validation.admission import ClusterAdmission, admission_refusals

P = "kserve-preflight"


@pytest.mark.parametrize("stack", stack_names())
def test_every_shipped_stack_is_admitted(stack):
    assert admission_problems(load_stack(stack)) == []


def _isvc(stack: str = "dev", name: str = "chat") -> dict:
    return copy.deepcopy(next(m for m in render_stack(load_stack(stack))
                              if m["kind"] == "InferenceService" and m["metadata"]["name"] == name))


def _pred(m):
    return m["spec"]["predictor"]


def _ann(m):
    return m["metadata"]["annotations"]


def _standard(m, cls="hpa"):
    _ann(m).update({"serving.kserve.io/deploymentMode": "RawDeployment", "serving.kserve.io/autoscalerClass": cls})
    for k in ("scaleMetric", "scaleTarget", "containerConcurrency", "timeout"):
        _pred(m).pop(k, None)


ENABLED = ClusterAdmission().with_features(["kubernetes.podspec-tolerations", "kubernetes.podspec-nodeselector"])

# (mutation of dev's chat InferenceService, cluster, rule function, fragment of the message)
RULES = {
    "tolerations-off": (lambda m: None, ClusterAdmission(), "PodSpecMask", "kubernetes.podspec-tolerations"),
    "affinity-off": (lambda m: _pred(m).update(affinity={"nodeAffinity": {}}), ENABLED, "PodSpecMask",
                     "kubernetes.podspec-affinity"),
    "init-containers-off": (lambda m: _pred(m).update(initContainers=[{"name": "w", "image": "busybox:1"}]), ENABLED,
                            "validateInitContainers", "kubernetes.podspec-init-containers"),
    "pvc-off": (lambda m: _pred(m).update(volumes=[{"name": "v", "persistentVolumeClaim": {
        "claimName": "c", "readOnly": True}}]), ENABLED, "validatePersistentVolumeClaims",
        "kubernetes.podspec-persistent-volume-claim"),
    "pvc-write-off": (lambda m: _pred(m).update(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
                      ENABLED.with_features(["kubernetes.podspec-persistent-volume-claim"]),
                      "validatePersistentVolumeClaims", "kubernetes.podspec-persistent-volume-write"),
    "hostpath-off": (lambda m: _pred(m).update(volumes=[{"name": "v", "hostPath": {"path": "/x"}}]), ENABLED,
                     "validateVolume", "kubernetes.podspec-volumes-hostpath"),
    "nfs-never": (lambda m: _pred(m).update(volumes=[{"name": "v", "nfs": {"server": "s", "path": "/"}}]), ENABLED,
                  "VolumeSourceMask", "only secret, configMap, projected"),
    "fieldref-off": (lambda m: _pred(m)["model"]["env"].append({"name": "POD", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}), ENABLED, "validateEnvValueFrom", "kubernetes.podspec-fieldref"),
    "pod-security-context-off": (lambda m: _pred(m).update(securityContext={"runAsNonRoot": True}), ENABLED,
                                 "PodSecurityContextMask", "container's securityContext"),
    "privileged": (lambda m: _pred(m)["model"]["securityContext"].update(privileged=True), ENABLED,
                   "SecurityContextMask", "privileged: false"),
    "add-capabilities-off": (lambda m: _pred(m)["model"]["securityContext"].update(
        capabilities={"add": ["SYS_ADMIN"]}), ENABLED, "CapabilitiesMask", "containerspec-addcapabilities"),
    "container-lifecycle": (lambda m: _pred(m)["model"].update(lifecycle={"preStop": {}}), ENABLED, "ContainerMask",
                            "never admits this container field"),
    "automount-token-true": (lambda m: _pred(m).update(automountServiceAccountToken=True), ENABLED, "PodSpecMask",
                             "only `false`"),
    "restart-policy": (lambda m: _pred(m).update(restartPolicy="Always"), ENABLED, "PodSpecMask", "never admits"),
    "isvc-name": (lambda m: m["metadata"].update(name="Chat_1"), ENABLED, "validateInferenceServiceName", "[a-z]"),
    "autoscaler-class": (lambda m: _ann(m).update({"serving.kserve.io/autoscalerClass": "kpa"}), ENABLED,
                         "validateInferenceServiceAutoscaler", "not a supported autoscaler class"),
    "hpa-class-metric": (lambda m: (_standard(m), _pred(m).update(scaleMetric="concurrency")), ENABLED,
                         "validateScalingHPACompExtension", "cpu or memory only"),
    "hpa-class-cpu-target": (lambda m: (_standard(m), _pred(m).update(scaleMetric="cpu", scaleTarget=150)), ENABLED,
                             "validateScalingHPACompExtension", "[1-100]"),
    "keda-scale-metric": (lambda m: (_standard(m, "keda"), _pred(m).update(scaleMetric="cpu")), ENABLED,
                          "validateScalingKedaCompExtension", "ScaleMetric is not supported for KEDA"),
    "keda-no-query": (lambda m: (_standard(m, "keda"), _pred(m).update(autoScaling={"metrics": [{
        "type": "External", "external": {"metric": {"backend": "prometheus"}, "target": {"type": "Value",
                                                                                         "value": "4"}}}]})),
        ENABLED, "validateScalingKedaCompExtension", "the query should not be empty"),
    "kpa-metric": (lambda m: _pred(m).update(scaleMetric="cpu"), ENABLED, "validateScalingKPACompExtension",
                   "not a supported metric in Knative mode"),
    "kpa-rps-target": (lambda m: _pred(m).update(scaleMetric="rps", scaleTarget=0.5), ENABLED,
                       "validateScalingKPACompExtension", "rps should be greater than 1"),
    "kpa-deployment-strategy": (lambda m: _pred(m).update(deploymentStrategy={"type": "Recreate"}), ENABLED,
                                "validateScalingKPACompExtension", "only supported for raw deployment mode"),
    "initial-scale-zero": (lambda m: _ann(m).update({"autoscaling.knative.dev/initial-scale": "0"}), ENABLED,
                           "ValidateInitialScaleAnnotation", "allow-zero-initial-scale"),
    "onnx-unset-protocol": (lambda m: _pred(m)["model"].update(modelFormat={"name": "onnx"}), ENABLED,
                            "reconcileModel", "model type onnx at protocol v1 (unset: KServe reads it as v1"),
    "tensorrt-v1": (lambda m: _pred(m)["model"].update(modelFormat={"name": "tensorrt"}, protocolVersion="v1"),
                    ENABLED, "reconcileModel", "kserve-tritonserver serves v2, grpc-v2"),
    "huggingface-grpc": (lambda m: _pred(m)["model"].update(protocolVersion="grpc-v2"), ENABLED, "reconcileModel",
                         "kserve-huggingfaceserver serves v2, v1"),
    "unknown-format": (lambda m: _pred(m)["model"].update(modelFormat={"name": "caffe"}), ENABLED, "reconcileModel",
                       "no runtime found to support predictor with model type caffe"),
}


@pytest.mark.parametrize("mutate, cluster, rule, fragment", RULES.values(), ids=RULES.keys())
def test_each_rule_refuses_its_failure(mutate, cluster, rule, fragment):
    good = _isvc()
    assert admission_refusals([good], ENABLED) == []  # control: the unmutated object passes
    mutate(good)
    refusals = admission_refusals([good], cluster)
    assert refusals, rule
    assert any(rule in r.rule and fragment in str(r) for r in refusals), [str(r) for r in refusals]


def test_triton_models_name_the_protocol_kserve_tritonserver_serves():
    """staging's vision service (Triton) with modelFormat onnx: KServe defaults protocolVersion to v2 only for
    format triton, so the stack renders it; without it no runtime serves onnx at v1 (NoSupportingRuntime)."""
    vision = _isvc("staging", "vision")
    assert _pred(vision)["model"]["protocolVersion"] == "v2"
    _pred(vision)["model"]["modelFormat"] = {"name": "onnx"}
    assert admission_refusals([vision], ENABLED) == []
    del _pred(vision)["model"]["protocolVersion"]
    [refusal] = admission_refusals([vision], ENABLED)
    assert refusal.path == "spec.predictor.model.protocolVersion" and "NoSupportingRuntime" in refusal.message
    _pred(vision)["model"]["modelFormat"] = {"name": "triton"}   # the defaulting webhook sets v2 for triton
    assert admission_refusals([vision], ENABLED) == []
    _pred(vision)["model"]["runtime"] = "my-onnx-runtime"        # a runtime named by the user is not auto-selected
    _pred(vision)["model"]["modelFormat"] = {"name": "onnx"}
    assert admission_refusals([vision], ENABLED) == []


def test_allowing_zero_initial_scale_admits_it():
    m = _isvc()
    _ann(m)["autoscaling.knative.dev/initial-scale"] = "0"
    assert admission_refusals([m], ClusterAdmission(ENABLED.knative_features, allow_zero_initial_scale=True)) == []


def test_deployment_mode_cannot_change_in_place():
    old, new = _isvc(), _isvc()
    _standard(new)
    _pred(new).update(scaleMetric="cpu")
    [refusal] = admission_refusals([new], ENABLED, previous={"chat": old})
    assert "validateDeploymentMode" in refusal.rule and "cannot be changed from 'Serverless'" in refusal.message
    assert admission_refusals([old], ENABLED, previous={"chat": old}) == []


def test_standard_mode_predictors_skip_knative_rules():
    """KServe's raw Deployment takes any pod-spec field: Knative's masks apply only to Knative-mode predictors."""
    m = _isvc()
    _standard(m, "external")
    _pred(m).update(affinity={"nodeAffinity": {}}, initContainers=[{"name": "w", "image": "busybox:1"}])
    assert admission_refusals([m], ClusterAdmission()) == []


def test_the_stack_enables_exactly_what_its_knative_services_use():
    assert sorted(cluster_admission(load_stack("dev")).knative_features.items()) == sorted({
        **ClusterAdmission().knative_features, "kubernetes.podspec-tolerations": "enabled",
        "kubernetes.podspec-nodeselector": "enabled"}.items())


def test_a_refused_config_stops_the_program_before_any_resource(registered):
    def edit(c):
        c[f"{P}:services"][0]["annotations"]["autoscaling.knative.dev/initial-scale"] = "0"

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    assert "admission: the cluster's webhooks would refuse" in str(err.value)
    assert "InferenceService/chat: metadata.annotations[autoscaling.knative.dev/initial-scale]" in str(err.value)
    assert registered == []
    run_program("dev", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False}))  # control: the probe works
    assert "gpu-ng" in registered


def _no_gate(c):
    c[f"{P}:gate"] = {"enabled": False}


def test_opting_out_of_managed_features_needs_the_cluster_to_have_them(registered):
    """`knative.manageFeatures: false`: no patch; the services' tolerations/nodeSelector are refused unless the
    user declares that the cluster already enables those flags."""
    def opt_out(c):
        _no_gate(c)
        c[f"{P}:knative"] = {"manageFeatures": False}

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=opt_out)
    assert "spec.predictor.tolerations: Knative refuses it: `kubernetes.podspec-tolerations` is 'disabled'" \
        in str(err.value)
    assert registered == []

    def declared(c):
        opt_out(c)
        c[f"{P}:knative"]["features"] = {"kubernetes.podspec-tolerations": "enabled",
                                         "kubernetes.podspec-nodeselector": "enabled"}

    r = run_program("dev", edit=declared)
    assert r.resources and not [p for p in r.of_type("kubernetes:core/v1:ConfigMapPatch")
                                if p.inputs["metadata"]["namespace"] == "knative-serving"]


def test_allow_zero_initial_scale_is_a_cluster_setting():
    def edit(c):
        _no_gate(c)
        c[f"{P}:services"][0]["annotations"]["autoscaling.knative.dev/initial-scale"] = "0"
        c[f"{P}:knative"] = {"allowZeroInitialScale": True}

    assert run_program("dev", edit=edit).resources


@pytest.mark.parametrize("features, fragment", [
    ({"kubernetes.podspec-tolerations": "on"}, "expected one of enabled, disabled, allowed"),
    ({"kubernetes.podspec-tolerationz": "enabled"}, "expected a knative-serving/config-features key"),
], ids=["value", "key"])
def test_knative_features_are_checked_at_load(features, fragment, registered):
    with pytest.raises(pulumi.RunError, match="invalid stack config") as err:
        run_program("dev", edit=lambda c: c.__setitem__(f"{P}:knative", {"features": features}))
    assert fragment in str(err.value) and registered == []


def test_a_gated_model_needs_a_credential(registered):
    def edit(c):
        c[f"{P}:modelCache"].pop("credentialsSecret")

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    assert "services[0].model.storageUri: got 'hf://meta-llama/Meta-Llama-3-8B-Instruct'" in str(err.value)
    assert "expected modelCache.credentialsSecret" in str(err.value) and registered == []

    def public(c):
        edit(c)
        _no_gate(c)
        c[f"{P}:services"][0]["model"]["public"] = True

    assert run_program("dev", edit=public).resources  # a repository marked public needs none
