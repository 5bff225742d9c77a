"""`knative.features.secure-pod-defaults: enabled` and serving images whose user is root.

Knative 1.20-1.23 `revision_defaults.go defaultSecurityContext`: with secure-pod-defaults Enabled, a container whose
`runAsNonRoot` is unset (and the pod's too) gets `runAsNonRoot: true`; AllowRootBounded sets only
allowPrivilegeEscalation, seccompProfile and capabilities; an explicit value is kept. The kubelet then refuses a
container whose user is root (`verifyRunAsNonRoot`: "container has runAsNonRoot and image will run as root",
CreateContainerConfigError), so the revision never becomes Ready. TGI's and vLLM's own `vllm-openai` images set no
USER; KServe's huggingfaceserver runs as USER 1000 and kserve-tritonserver sets runAsUser 1000.
"""

from __future__ import annotations

import copy

import pytest

from manifests.admission import admission_failure, admission_problems
from stackconfig.schema import parse_stack_config
from validation.admission import admission_refusals
from validation.cluster_admission import KNATIVE_FEATURE_DEFAULTS, ClusterAdmission
from tests.runtime_stack import TGI_IMAGE, chat_stack

SPD = "secure-pod-defaults"
VLLM_OPENAI = "vllm/vllm-openai:v0.11.0"
ROOT_RUNTIMES = [({"engine": "tgi"}, TGI_IMAGE), ({"engine": "tgi", "image": TGI_IMAGE}, TGI_IMAGE),
                 ({"engine": "vllm", "image": VLLM_OPENAI}, VLLM_OPENAI),
                 ({"engine": "vllm", "image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-openai:v0.11.0"},
                  "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-openai:v0.11.0")]
ROOT_IDS = ["tgi-default", "tgi-image", "vllm-openai", "vllm-openai-mirror"]
NON_ROOT_RUNTIMES = [{"engine": "vllm"}, {"engine": "vllm", "image": "kserve/huggingfaceserver:v0.15.2-gpu"},
                     {"engine": "naive"}, {"engine": "triton"}]


def _stack(runtime: dict, secure: str | None, version: str | None = None, **service):
    cfg = chat_stack(runtime=runtime, **service)
    if runtime.get("engine") == "triton":  # a vision engine: a vision model in the catalog
        cfg["services"][0]["model"] = {"name": "resnet-50", "storageUri": "hf://m/r", "public": True}
        cfg["services"][0]["limits"] = {"maxBatchSize": 8}
    knative: dict = {}
    if secure is not None:
        knative["features"] = {SPD: secure}
    if version is not None:
        knative["version"] = version
    if knative:
        cfg["knative"] = knative
    return parse_stack_config(cfg, "p", "dev")


@pytest.mark.parametrize("version", ["1.20", "1.21", "1.22", "1.23"])
@pytest.mark.parametrize("runtime,image", ROOT_RUNTIMES, ids=ROOT_IDS)
def test_a_root_image_is_refused_when_the_cluster_enables_secure_pod_defaults(runtime, image, version):
    [refusal] = admission_problems(_stack(runtime, "enabled", version))
    assert refusal.obj == "InferenceService/chat" and refusal.path == "spec.predictor.containers[0].image"
    assert "defaultSecurityContext" in refusal.rule and "verifyRunAsNonRoot" in refusal.rule
    msg = refusal.message
    assert repr(image) in msg and "runtime.image" in msg and "runs as root" in msg
    assert "knative.features.secure-pod-defaults" in msg and "'enabled'" in msg
    assert "container has runAsNonRoot and image will run as root" in msg and "CreateContainerConfigError" in msg
    assert "kserve/huggingfaceserver" in msg and "AllowRootBounded" in msg


@pytest.mark.parametrize("secure", ["Enabled", "ENABLED"])
def test_enabled_is_read_in_any_case(secure):
    assert len(admission_problems(_stack({"engine": "tgi"}, secure))) == 1


@pytest.mark.parametrize("secure", [None, "disabled", "AllowRootBounded", "allowrootbounded"])
@pytest.mark.parametrize("runtime,image", ROOT_RUNTIMES, ids=ROOT_IDS)
def test_a_root_image_runs_where_knative_sets_no_run_as_non_root(runtime, image, secure):
    """Disabled does nothing; AllowRootBounded defaults seccompProfile and capabilities but not runAsNonRoot."""
    assert admission_problems(_stack(runtime, secure)) == []


@pytest.mark.parametrize("secure", [None, "enabled", "AllowRootBounded"])
@pytest.mark.parametrize("runtime", NON_ROOT_RUNTIMES, ids=["huggingfaceserver", "huggingfaceserver-image", "naive",
                                                              "triton"])
def test_non_root_images_and_the_runtimes_user_are_accepted(runtime, secure):
    assert admission_problems(_stack(runtime, secure)) == []


def test_the_program_stops_before_any_resource_with_the_refusal():
    failure = admission_failure(_stack({"engine": "tgi"}, "enabled"))
    assert failure is not None and "container has runAsNonRoot and image will run as root" in failure
    assert admission_failure(_stack({"engine": "tgi"}, "AllowRootBounded")) is None


# -- the rule on rendered objects ------------------------------------------------------------------------------------

def _isvc(container: dict, pod_security: dict | None = None, mode: str = "Serverless") -> dict:
    pred: dict = {"containers": [{"name": "kserve-container", **container}]}
    if pod_security is not None:
        pred["securityContext"] = pod_security
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "x", "annotations": {"serving.kserve.io/deploymentMode": mode}},
            "spec": {"predictor": pred}}


def _cluster(secure: str) -> ClusterAdmission:
    return ClusterAdmission({**KNATIVE_FEATURE_DEFAULTS, SPD: secure})


POD_SC = ("kubernetes.podspec-securitycontext",)  # admits a pod-level securityContext


def _paths(isvc: dict, secure: str = "enabled", flags: tuple[str, ...] = ()) -> list[str]:
    cluster = _cluster(secure).with_features(flags)
    return [r.path for r in admission_refusals([isvc], cluster)]


RESTRICTED = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
              "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.mark.parametrize("image", [TGI_IMAGE, VLLM_OPENAI, "nvcr.io/nvidia/tritonserver:25.08-py3",
                                   "vllm/vllm-openai@sha256:" + "a" * 64, "vllm-openai"])
def test_every_known_root_image_is_refused_by_repository_name(image):
    assert _paths(_isvc({"image": image, "securityContext": RESTRICTED})) == ["spec.predictor.containers[0].image"]


@pytest.mark.parametrize("image", ["ghcr.io/example/my-llm-server:1.0", "kserve/huggingfaceserver:v0.15.2-gpu",
                                   "vllm/vllm-openai-nonroot:v0.20.0", "text-generation-inference-custom:1"])
def test_an_unknown_or_non_root_image_is_accepted(image):
    assert _paths(_isvc({"image": image})) == []


@pytest.mark.parametrize("security", [{"runAsNonRoot": False}, {**RESTRICTED, "runAsNonRoot": False},
                                      {"runAsUser": 1000}, {"runAsUser": 1000, "runAsNonRoot": True}])
def test_an_explicit_run_as_non_root_false_or_a_non_root_user_is_kept(security):
    """defaultSecurityContext sets runAsNonRoot only when unset, and SecurityContextMask admits false and
    runAsUser; a non-zero runAsUser satisfies verifyRunAsNonRoot whatever the image."""
    assert _paths(_isvc({"image": TGI_IMAGE, "securityContext": security})) == []


def test_the_pods_run_as_non_root_is_read_like_knative_and_the_kubelet_do():
    # pod-level false: Knative leaves the container unset, the effective value is false
    pod_false = _isvc({"image": TGI_IMAGE}, {"runAsNonRoot": False})
    assert "spec.predictor.containers[0].image" not in _paths(pod_false, flags=POD_SC)
    # pod-level runAsUser 1000 (the flag admits it): the kubelet reads the pod's user when the container has none
    assert _paths(_isvc({"image": TGI_IMAGE}, {"runAsUser": 1000}), flags=POD_SC) == []
    # the container's value wins over the pod's
    mixed = _isvc({"image": TGI_IMAGE, "securityContext": {"runAsNonRoot": True}}, {"runAsNonRoot": False})
    assert _paths(mixed, "disabled", flags=POD_SC) == ["spec.predictor.containers[0].image"]


def test_run_as_user_zero_is_refused_for_any_image_once_run_as_non_root_is_set():
    isvc = _isvc({"image": "ghcr.io/example/my-llm-server:1.0", "securityContext": {"runAsUser": 0}})
    [refusal] = admission_refusals([isvc], _cluster("enabled"))
    assert refusal.path == "spec.predictor.containers[0].securityContext.runAsUser"
    assert "runAsUser breaks non-root policy" in refusal.message
    assert admission_refusals([isvc], _cluster("AllowRootBounded")) == []


def test_raw_deployment_mode_is_not_defaulted_by_knative_but_an_explicit_run_as_non_root_still_fails():
    plain = _isvc({"image": TGI_IMAGE, "securityContext": RESTRICTED}, mode="RawDeployment")
    assert _paths(plain) == []
    explicit = _isvc({"image": TGI_IMAGE, "securityContext": {**RESTRICTED, "runAsNonRoot": True}},
                     mode="RawDeployment")
    [refusal] = admission_refusals([explicit], _cluster("disabled"))
    assert refusal.path == "spec.predictor.containers[0].image" and "defaultSecurityContext" not in refusal.rule
    assert "sets runAsNonRoot: true" in refusal.message and "secure-pod-defaults" not in refusal.message


def test_a_serving_runtime_model_is_left_to_its_runtimes_security_context():
    """spec.predictor.model: KServe merges the runtime's container (USER 1000 image, or runAsUser 1000)."""
    isvc = copy.deepcopy(_isvc({"image": TGI_IMAGE}))
    pred = isvc["spec"]["predictor"]
    pred["model"] = {"modelFormat": {"name": "triton"}, "protocolVersion": "v2",
                     "image": "nvcr.io/nvidia/tritonserver:25.08-py3"}
    del pred["containers"]
    assert _paths(isvc) == []


def test_allow_root_bounded_does_not_set_run_as_non_root():
    assert _cluster("enabled").sets_run_as_non_root() and _cluster("Enabled").sets_run_as_non_root()
    for value in ("AllowRootBounded", "disabled", "allowed"):
        assert not _cluster(value).sets_run_as_non_root()
    assert not ClusterAdmission().sets_run_as_non_root()  # Knative's default: Disabled
