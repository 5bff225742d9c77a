"""What KServe and Knative do to a service's image and environment, by `kserve.version`: refused at load with the
key, the value and what is allowed, nothing registered, and the rendered objects refused by the admission check.

Sources: kserve `inferenceservice/utils/utils.go: UpdateImageTag` (v0.15.2: "-gpu" appended to the
huggingfaceserver image of a GPU pod, after a digest too; v0.16.0 leaves "@sha256:" alone, #4653),
`pkg/validation/env_policy.go` (v0.18.0: PYTHONPATH blocked, #5340); knative/serving
`pkg/apis/serving/k8s_validation.go` (reservedEnvVars PORT, K_SERVICE, K_CONFIGURATION, K_REVISION).
"""

from __future__ import annotations

import copy

import pytest

from manifests.admission import admission_problems
from manifests.inference_service import inference_service
from preflight import check as cli
from program_refusal import refusal
from stackconfig.runtimes import gpu_image_rewrite
from stackconfig.schema import parse_stack_config
from validation.admission import ClusterAdmission, admission_refusals
from validation.errors import InputError

P = "kserve-preflight"
DIGEST = "sha256:" + "a1" * 32
BASE = {
    "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
    "gpuNodeGroup": {"instanceTypes": ["g6e.12xlarge"]},
    "services": [{"name": "chat", "maxReplicas": 2, "resources": {"gpus": 1, "cpu": "4", "memory": "24Gi"},
                  "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True},
                  "limits": {"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 16},
                  "workload": {"kind": "poisson", "rate": 1.0}}],
}


def _cfg(runtime: dict, version: str | None = None, **svc) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["services"][0].update(runtime=runtime, **svc)
    if version is not None:
        cfg["kserve"] = {"version": version}
    return cfg


def _parse(cfg: dict):
    return parse_stack_config(cfg, "p", "dev")


def _refused(cfg: dict) -> str:
    with pytest.raises(InputError) as err:
        _parse(cfg)
    return str(err.value)


# --- the huggingfaceserver image KServe runs on a GPU -------------------------------------------------------
@pytest.mark.parametrize("image, version, runs", [
    ("kserve/huggingfaceserver:v0.15.2-gpu", (0, 15), None),
    ("kserve/huggingfaceserver:v0.15.2", (0, 19), "kserve/huggingfaceserver:v0.15.2-gpu"),
    ("ecr.example.com/mirror/huggingfaceserver:2025-10-01", (0, 16),
     "ecr.example.com/mirror/huggingfaceserver:2025-10-01-gpu"),
    (f"kserve/huggingfaceserver:v0.15.2-gpu@{DIGEST}", (0, 15), f"kserve/huggingfaceserver:v0.15.2-gpu@{DIGEST}-gpu"),
    (f"kserve/huggingfaceserver@{DIGEST}", (0, 15), f"kserve/huggingfaceserver@{DIGEST}-gpu"),
    (f"kserve/huggingfaceserver:v0.15.2-gpu@{DIGEST}", (0, 16), None),
    (f"kserve/huggingfaceserver@sha512:{'b2' * 64}", (0, 16), f"kserve/huggingfaceserver@sha512:{'b2' * 64}-gpu"),
])
def test_the_image_kserve_runs_follows_update_image_tag(image, version, runs):
    assert gpu_image_rewrite(image, version) == runs


@pytest.mark.parametrize("engine", ["vllm", "naive"])
def test_a_digest_is_refused_below_kserve_0_16_and_kept_from_it(engine):
    image = f"kserve/huggingfaceserver:v0.15.2-gpu@{DIGEST}"
    for version in (None, "0.15", "v0.15.2"):
        msg = _refused(_cfg({"engine": engine, "image": image}, version))
        assert f"services[0].runtime.image: got '{image}'" in msg
        assert "expected no digest on KServe 0.15 (kserve.version), a tag ending in -gpu" in msg
        assert f"{DIGEST}-gpu" in msg and "Failed to parse image reference" in msg
    stack = _parse(_cfg({"engine": engine, "image": image}, "0.16"))     # control: 0.16 keeps the digest
    assert inference_service(stack, stack.services[0])["spec"]["predictor"]["model"]["image"] == image
    _parse(_cfg({"engine": engine, "image": "kserve/huggingfaceserver:v0.15.2-gpu"}))    # control: the tag


@pytest.mark.parametrize("version", [None, "0.16", "0.19"])
def test_a_tag_kserve_would_suffix_with_gpu_is_refused_on_every_version(version):
    image = "ecr.example.com/mirror/huggingfaceserver:2025-10-01"
    msg = _refused(_cfg({"engine": "vllm", "image": image}, version))
    assert f"services[0].runtime.image: got '{image}'; expected a tag ending in -gpu" in msg
    assert f"it would run '{image}-gpu'" in msg
    assert ("pin an @sha256 digest" in msg) == (version is not None)   # only where KServe keeps a digest
    _parse(_cfg({"engine": "vllm", "image": image + "-gpu"}, version))  # control: the GPU tag


@pytest.mark.parametrize("runtime", [
    {"engine": "vllm", "image": f"vllm/vllm-openai:v0.11.0@{DIGEST}"},                 # a custom predictor
    {"engine": "tgi", "image": "ghcr.io/huggingface/text-generation-inference:3.3.4"},
], ids=["vllm-openai-digest", "tgi-tag"])
def test_custom_predictor_images_are_not_rewritten(runtime):
    _parse(_cfg(runtime))


def test_the_digest_refusal_stops_the_program_before_any_resource(registered):
    image = f"kserve/huggingfaceserver:v0.15.2-gpu@{DIGEST}"

    def edit(c):
        c[f"{P}:services"][0]["runtime"]["image"] = image

    assert f"services[0].runtime.image: got '{image}'" in refusal("prod", edit, registered)


# --- kserve.version -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, parsed", [(None, (0, 15)), ("0.16", (0, 16)), ("v0.18.1", (0, 18)), ("1.0", (1, 0))])
def test_kserve_version_is_read_as_major_minor(raw, parsed):
    cfg = _cfg({"engine": "vllm"}, raw)
    assert _parse(cfg).kserve.version == parsed


@pytest.mark.parametrize("raw", [0.16, "0.14", "latest", "0.16.x", True])
def test_a_kserve_version_that_is_not_a_supported_release_is_refused(raw):
    msg = _refused(_cfg({"engine": "vllm"}, raw))
    assert f"kserve.version: got {raw!r}" in msg and "a quoted string such as \"0.15\"" in msg
    assert "at least 0.15" in msg


# --- runtime.env: Knative's reserved names, KServe's blocked ones -------------------------------------------
@pytest.mark.parametrize("name", ["PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION"])
def test_knative_reserved_env_is_refused_in_knative_mode(name):
    msg = _refused(_cfg({"engine": "vllm", "env": {name: "x"}}))
    assert f"services[0].runtime.env.{name}: got 'x'; expected none of K_CONFIGURATION, K_REVISION, K_SERVICE, " \
           f"PORT in Knative mode" in msg and f'"{name}" is a reserved environment variable' in msg
    standard = _cfg({"engine": "vllm", "env": {name: "x"}}, deploymentMode="Standard", scaleMetric="cpu")
    _parse(standard)                                  # control: no Knative revision in Standard mode
    _parse(_cfg({"engine": "vllm", "env": {"SERVER_PORT": "x"}}))  # control: another name


@pytest.mark.parametrize("version, refused", [(None, False), ("0.17", False), ("0.18", True), ("v0.19.0", True)])
def test_pythonpath_is_refused_from_kserve_0_18(version, refused):
    cfg = _cfg({"engine": "vllm", "env": {"PYTHONPATH": "/opt/plugins"}}, version)
    if not refused:
        stack = _parse(cfg)
        assert admission_problems(stack) == []
        return
    msg = _refused(cfg)
    assert "services[0].runtime.env.PYTHONPATH: got '/opt/plugins'; expected no PYTHONPATH on KServe" in msg
    assert "not allowed for security reasons" in msg and "since 0.18" in msg


def test_reserved_env_stops_the_program_and_exits_2(registered, capsys):
    def edit(c):
        c[f"{P}:services"][0]["runtime"]["env"] = {"PORT": "8080"}

    assert "services[0].runtime.env.PORT: got '8080'" in refusal("dev", edit, registered)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["whatif", "--stack", "dev", "--set", "services.chat.runtime.env={PORT: '8080'}"])
    assert exit_.value.code == 2
    assert "services[0].runtime.env.PORT: got '8080'" in capsys.readouterr().err


# --- the same rules on rendered objects (validation/admission.py) -------------------------------------------
def _isvc(env: list[dict], mode: str = "Serverless") -> dict:
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "chat", "annotations": {"serving.kserve.io/deploymentMode": mode,
                                                         "serving.kserve.io/autoscalerClass": "external"}},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": "hf://m/l",
                                             "env": env}}}}


def test_admission_refuses_reserved_and_blocked_env_on_rendered_objects():
    port, path = [{"name": "PORT", "value": "8080"}], [{"name": "PYTHONPATH", "value": "/x"}]
    [r] = admission_refusals([_isvc(port)])
    assert (r.path, r.rule) == ("spec.predictor.model.env[0].name", "k8s_validation.go validateEnvVar")
    assert "'PORT' is a reserved environment variable" in r.message
    assert admission_refusals([_isvc(port, "RawDeployment")]) == []          # no Knative revision
    assert admission_refusals([_isvc(path)]) == []                           # KServe 0.15
    for mode in ("Serverless", "RawDeployment"):
        [r] = admission_refusals([_isvc(path, mode)], ClusterAdmission(kserve_version=(0, 18)))
        assert "validateBlockedEnvVars" in r.rule and "KServe 0.18 and later" in r.message
    assert ClusterAdmission(kserve_version=(0, 18)).with_features(["x"]).kserve_version == (0, 18)
