"""Which server KServe starts for each engine and image, with what flags, and what the simulation reads back.

Sources: kserve v0.15.2 `MergeRuntimeContainers` (ISVC container merged onto the runtime's: args appended,
runAsNonRoot and /v2 probes kept), `predictor_custom.go` (custom predictor, STORAGE_URI),
`storage_initializer_injector.go` (/mnt/models); huggingfaceserver `generative_model.py` (--max_length is the
whole context); vllm-project/vllm#42609 (expandable segments break custom all-reduce across GPUs).
"""

from __future__ import annotations


import pytest

from gate import scenario_for
from manifests.inference_service import inference_service
from stackconfig.server_args import engine_args
from manifests.model_cache import cache_uri
from program_refusal import refusal
from simulation import load_scenario
from stackconfig.schema import parse_stack_config
from gpu_fakes import make, req
from validation.admission import admission_refusals
from runtime_stack import TGI_IMAGE, chat_stack, refused, with_service
from validation.kubernetes import validation_errors

BASE = chat_stack(limits={"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 16})


def _cfg(runtime: dict | None = None, **svc) -> dict:
    return with_service(BASE, runtime, **svc)


def _parse(cfg: dict):
    stack = parse_stack_config(cfg, "p", "dev")
    return stack, stack.services[0]


_refused = refused


def _env(container: dict) -> dict:
    return {e["name"]: e["value"] for e in container["env"]}


# --- Finding 1: TGI and foreign images ----------------------------------------------------------------------
@pytest.mark.parametrize("image", [None, TGI_IMAGE,
                                   "123456789012.dkr.ecr.us-west-2.amazonaws.com/text-generation-inference:3.3.4"])
def test_tgi_is_a_custom_predictor_the_simulation_reads(image):
    """No ServingRuntime serves TGI: merged onto kserve-huggingfaceserver it would get --model_name (clap refuses
    an unknown flag), runAsNonRoot (a root image) and /v2 probes. As `predictor.containers` it runs as rendered."""
    runtime = {"engine": "tgi", **({"image": image} if image else {})}
    stack, svc = _parse(_cfg(runtime, limits={"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 16,
                                              "maxConcurrentRequests": 48}))
    pred = inference_service(stack, svc)["spec"]["predictor"]
    assert "model" not in pred
    [c] = pred["containers"]
    assert c["name"] == "kserve-container" and c["image"] == (image or TGI_IMAGE)
    assert _env(c)["STORAGE_URI"] == cache_uri(stack, svc)    # → the storage initializer, then /mnt/models
    assert c["args"][:2] == ["--port=8080", "--model-id=/mnt/models"]
    assert not any(a.startswith(("--model_name", "--backend")) for a in c["args"])
    assert "runAsNonRoot" not in c["securityContext"]
    assert {c[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {"/health"}
    assert c["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert {"name": "devshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert pred["volumes"] == [{"name": "devshm", "emptyDir": {"medium": "Memory"}}]
    sc = load_scenario(scenario_for(stack, svc))            # the gate reads the very same dict
    assert sc.serving.gpus == 1 and sc.serving.image == (image or TGI_IMAGE)
    assert (sc.server.spec.max_input_tokens, sc.server.spec.max_model_len,
            sc.server.spec.max_concurrent_requests) == (4096, 5120, 48)


def test_vllm_own_image_is_a_custom_predictor_with_vllm_flags():
    stack, svc = _parse(_cfg({"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0"},
                             resources={"gpus": 2, "cpu": "8", "memory": "64Gi"}))
    [c] = inference_service(stack, svc)["spec"]["predictor"]["containers"]
    assert c["args"][:4] == ["--model=/mnt/models", "--served-model-name=chat", "--port=8080",
                             "--tensor-parallel-size=2"]   # vLLM's own server defaults to 1 GPU
    assert "--max-model-len=5120" in c["args"] and "--max-num-seqs=16" in c["args"]
    assert not any(a.startswith(("--model_name", "--backend")) for a in c["args"])
    assert "runAsNonRoot" not in c["securityContext"]
    sc = load_scenario(scenario_for(stack, svc))
    assert (sc.server.spec.max_model_len, sc.server.spec.max_num_seqs, sc.serving.gpus) == (5120, 16, 2)


def _probe_paths(container: dict) -> dict:
    return {p: container[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")}


V2_PROBES = {"startupProbe": "/v2/health/ready", "readinessProbe": "/v2/health/ready",
             "livenessProbe": "/v2/health/live"}
MODEL_PROBES = {**V2_PROBES, "startupProbe": "/v2/models/chat/ready", "readinessProbe": "/v2/models/chat/ready"}
OWN_HEALTH = dict.fromkeys(V2_PROBES, "/health")


@pytest.mark.parametrize("runtime, model, expected", [
    ({"engine": "vllm"}, None, MODEL_PROBES),                                       # KServe huggingfaceserver
    ({"engine": "vllm", "image": "kserve/huggingfaceserver:v0.15.2-gpu"}, None, MODEL_PROBES),
    ({"engine": "naive"}, None, MODEL_PROBES),
    ({"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0"}, None, OWN_HEALTH),    # vLLM's OpenAI server
    ({"engine": "vllm", "image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm-openai:v0.11.0"}, None,
     OWN_HEALTH),
    ({"engine": "tgi"}, None, OWN_HEALTH),                                          # TGI's router
    ({"engine": "triton"}, {"name": "resnet-50", "storageUri": "hf://m/r"}, V2_PROBES),
], ids=["huggingfaceserver", "huggingfaceserver-image", "naive", "vllm-openai", "vllm-openai-mirror", "tgi",
        "triton"])
def test_probes_ask_the_health_path_the_running_server_serves(runtime, model, expected):
    """vLLM's OpenAI server has no KServe v2 routes: /v2/health/* is a 404 there, the startup probe kills the pod
    and the revision misses its progress deadline. It serves /health, as TGI does; KServe's servers and Triton
    the v2 health protocol."""
    cfg = _cfg(runtime, model={**(model or BASE["services"][0]["model"]), "public": True})
    if runtime["engine"] == "triton":
        cfg["services"][0].update(limits={"maxBatchSize": 8})
        cfg["services"][0].pop("workload")
    stack, svc = _parse(cfg)
    pred = inference_service(stack, svc)["spec"]["predictor"]
    assert _probe_paths(pred.get("model") or pred["containers"][0]) == expected


@pytest.mark.parametrize("runtime", [{"engine": "tgi"}, {"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0"}],
                         ids=["tgi", "vllm-openai"])
def test_a_v2_probe_path_on_a_custom_predictor_is_refused(runtime):
    msg = _refused(_cfg(runtime, probes={"readiness": {"path": "/v2/health/ready"}}))
    assert "services[0].probes.readiness.path: got '/v2/health/ready'; expected a path" in msg
    assert "no KServe v2 routes" in msg
    _parse(_cfg(runtime, probes={"readiness": {"path": "/health"}}))                    # control
    _parse(_cfg({"engine": "vllm"}, probes={"readiness": {"path": "/v2/models/chat/ready"}}))  # huggingfaceserver


def test_kserve_huggingfaceserver_image_stays_on_the_serving_runtime():
    stack, svc = _parse(_cfg({"engine": "vllm", "image": "kserve/huggingfaceserver:v0.15.2-gpu"}))
    pred = inference_service(stack, svc)["spec"]["predictor"]
    assert "containers" not in pred and pred["model"]["image"] == "kserve/huggingfaceserver:v0.15.2-gpu"
    assert (pred["model"]["modelFormat"] == {"name": "huggingface"}
            and pred["model"]["storageUri"] == cache_uri(stack, svc))
    assert pred["model"]["securityContext"]["runAsNonRoot"] is True   # the image's USER 1000
    assert engine_args(svc)[:2] == ["--model_name=chat", "--backend=vllm"]


@pytest.mark.parametrize("runtime, key, value, allowed", [
    ({"engine": "vllm", "image": "ghcr.io/example/my-llm-server:1.0"}, "runtime.image",
     "ghcr.io/example/my-llm-server:1.0", "expected an image of 'huggingfaceserver' or 'vllm-openai' for engine vllm"),
    ({"engine": "naive", "image": "vllm/vllm-openai:v0.11.0"}, "runtime.image", "vllm/vllm-openai:v0.11.0",
     "expected an image of 'huggingfaceserver' for engine naive"),
    ({"engine": "tgi", "image": "vllm/vllm-openai:v0.11.0"}, "runtime.image", "vllm/vllm-openai:v0.11.0",
     "expected an image of 'text-generation-inference' for engine tgi"),
    ({"engine": "vllm", "modelFormat": "pytorch"}, "runtime.modelFormat", "pytorch",
     "expected one of huggingface for engine vllm"),
], ids=["vllm-unknown-image", "naive-vllm-image", "tgi-vllm-image", "vllm-pytorch-format"])
def test_a_server_kserve_cannot_start_is_refused_at_load(runtime, key, value, allowed):
    text = _refused(_cfg(runtime))
    assert f"services[0].{key}: got '{value}'" in text and allowed in text


def test_triton_defaults_to_a_format_kserve_tritonserver_serves():
    cfg = _cfg({"engine": "triton"}, model={"name": "resnet-50", "storageUri": "hf://m/r", "public": True},
               limits={"maxBatchSize": 8})
    cfg["services"][0].pop("workload")
    _, svc = _parse(cfg)
    assert svc.model_format == "triton"


@pytest.mark.parametrize("fmt", ["onnx", "tensorrt", "triton"])
def test_triton_renders_protocol_v2_for_every_format(fmt):
    """KServe reads a missing protocolVersion as v1 (predictor_model.go GetProtocol) and sets v2 only for format
    triton (inference_service_defaults.go); kserve-tritonserver serves v2 and grpc-v2 only."""
    cfg = _cfg({"engine": "triton", "modelFormat": fmt}, model={"name": "resnet-50", "storageUri": "hf://m/r",
                                                                  "public": True}, limits={"maxBatchSize": 8})
    cfg["services"][0].pop("workload")
    stack, svc = _parse(cfg)
    isvc = inference_service(stack, svc)
    assert isvc["spec"]["predictor"]["model"]["protocolVersion"] == "v2"
    assert validation_errors(isvc, stack.cluster.kubernetes_version) == []    # the CRD has the field
    assert not [r for r in admission_refusals([isvc]) if "reconcileModel" in r.rule]   # a runtime serves it
    del isvc["spec"]["predictor"]["model"]["protocolVersion"]
    assert bool([r for r in admission_refusals([isvc]) if "reconcileModel" in r.rule]) == (fmt != "triton")


def test_only_triton_names_a_protocol():
    stack, svc = _parse(_cfg({"engine": "vllm"}))
    assert "protocolVersion" not in inference_service(stack, svc)["spec"]["predictor"]["model"]


def test_refused_runtime_registers_nothing(registered):
    def edit(config):
        config["kserve-preflight:services"][0]["runtime"] = {"engine": "vllm", "image": "ghcr.io/example/llm:1.0"}
    assert "services[0].runtime.image: got 'ghcr.io/example/llm:1.0'" in refusal("dev", edit, registered)


# --- Finding 2: expandable segments and vLLM's custom all-reduce --------------------------------------------
@pytest.mark.parametrize("engine, gpus, expected", [
    ("vllm", 1, "expandable_segments:True"), ("vllm", 2, "expandable_segments:False"),
    ("tgi", 2, "expandable_segments:True"),
])
def test_alloc_conf_default_follows_the_engine_and_gpu_count(engine, gpus, expected):
    stack, svc = _parse(_cfg({"engine": engine}, resources={"gpus": gpus, "cpu": "8", "memory": "64Gi"}))
    assert svc.pytorch_cuda_alloc_conf == expected
    pred = inference_service(stack, svc)["spec"]["predictor"]
    container = pred.get("model") or pred["containers"][0]
    assert _env(container)["PYTORCH_CUDA_ALLOC_CONF"] == expected


@pytest.mark.parametrize("where, key", [
    ({"pytorchCudaAllocConf": "max_split_size_mb:512,expandable_segments:True"}, "pytorchCudaAllocConf"),
    ({"runtime": {"engine": "vllm", "env": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}},
     "runtime.env.PYTORCH_CUDA_ALLOC_CONF"),
], ids=["stack-key", "runtime-env"])
def test_expandable_segments_on_multi_gpu_vllm_is_refused_unless_custom_all_reduce_is_off(where, key):
    cfg = _cfg(resources={"gpus": 2, "cpu": "8", "memory": "64Gi"}, **where)
    text = _refused(cfg)
    assert f"services[0].{key}: got" in text and "expected no expandable_segments:True for vLLM on 2 GPUs" in text
    runtime = cfg["services"][0].setdefault("runtime", {"engine": "vllm"})
    runtime["args"] = ["--disable-custom-all-reduce"]
    _parse(cfg)                                             # control: the documented workaround
    one_gpu = _cfg(**where)
    _parse(one_gpu)                                         # control: one GPU has no all-reduce


# --- Findings 7 and 8: context caps --------------------------------------------------------------------------
def test_naive_max_length_is_the_whole_context_and_simulated_so():
    """huggingfaceserver answers 400 when prompt + max_tokens > --max_length; rendered as input + new tokens."""
    stack, svc = _parse(_cfg({"engine": "naive"}, limits={"maxInputTokens": 4096, "maxNewTokens": 1024},
                             containerConcurrency=4))
    assert "--max_length=5120" in engine_args(svc)
    spec = load_scenario(scenario_for(stack, svc)).server.spec
    assert spec.max_model_len == 5120 and spec.max_input_tokens is None
    _, _, server = make("naive", {"model": "llama-3-8b", "gpu": "L40S", "max_model_len": spec.max_model_len})
    assert server.check(req(1, 4000, 1120)) is None        # exactly the context
    assert server.check(req(2, 4000, 1121)) == 400         # input under 4096, but the total is over
    assert server.check(req(3, 100, 100)) is None and server.stats["rejected_400"] == 1


@pytest.mark.parametrize("engine, limits, allowed", [
    ("vllm", {"maxInputTokens": 10000, "maxBatchSize": 16}, "expected at most 8192"),
    ("naive", {"maxInputTokens": 8193}, "expected at most 8192"),
    ("tgi", {"maxInputTokens": 8192}, "expected at most 8191"),
    ("vllm", {"maxInputTokens": 8000, "maxNewTokens": 1000}, "expected maxInputTokens + maxNewTokens"),
])
def test_context_over_the_model_is_refused_with_or_without_max_new_tokens(engine, limits, allowed):
    """vLLM refuses to start with --max-model-len above the model's context; TGI with --max-input-tokens not
    below --max-total-tokens (default the model's context, 8192 for llama-3-8b)."""
    text = _refused(_cfg({"engine": engine}, limits=limits))
    assert f"services[0].limits.maxInputTokens: got {limits['maxInputTokens']}" in text and allowed in text


@pytest.mark.parametrize("engine, given, rendered", [
    ("vllm", 8192, "--max-model-len=8192"), ("naive", 8192, "--max_length=8192"), ("tgi", 8191, None),
])
def test_context_at_the_model_limit_passes(engine, given, rendered):
    _, svc = _parse(_cfg({"engine": engine}, limits={"maxInputTokens": given, "maxBatchSize": 16}))
    args = engine_args(svc)
    if rendered:
        assert rendered in args
    else:  # TGI: only the input cap; --max-total-tokens keeps its default (the model's context)
        assert f"--max-input-tokens={given}" in args and not any(a.startswith("--max-total-tokens") for a in args)


def test_naive_is_simulated_as_huggingfaceserver_unless_engine_profile_describes_another_server():
    """The stack renders kserve/huggingfaceserver --backend=huggingface: one generate() at a time, SDPA, last-position
    logits (generative_model.py). engineProfile describes a server built otherwise; wrong values are refused with
    the key, the value and what is allowed, and the keys belong to engine naive only."""
    stack, svc = _parse(_cfg({"engine": "naive"}, containerConcurrency=4))
    spec = load_scenario(scenario_for(stack, svc)).server.spec
    assert (spec.generate, spec.eager_attention, spec.all_logits) == ("serial", False, False)
    profile = {"generate": "concurrent", "eagerAttention": True, "allLogits": True, "overheadGib": 2.0,
               "activationBytesPerToken": 150000}
    stack, svc = _parse(_cfg({"engine": "naive"}, containerConcurrency=4, engineProfile=profile))
    spec = load_scenario(scenario_for(stack, svc)).server.spec
    assert (spec.generate, spec.eager_attention, spec.all_logits) == ("concurrent", True, True)
    assert (spec.overhead_gib, spec.activation_bytes_per_token) == (2.0, 150000)
    msg = _refused(_cfg({"engine": "naive"}, engineProfile={"generate": "threads"}))
    assert "services[0].engineProfile.generate: got 'threads'" in msg and "concurrent" in msg
    msg = _refused(_cfg({"engine": "vllm"}, engineProfile={"generate": "concurrent"}))
    assert "engineProfile.generate" in msg and "for engine 'vllm'" in msg


@pytest.mark.parametrize("instance, gpus, util, top", [
    ("g5.xlarge", 1, 0.99, "0.988"),      # A10G: 22.04 GiB CUDA total, 0.25 GiB context → 21.79 GiB free
    ("g6e.12xlarge", 2, 0.99, "0.977"),   # L40S at TP 2: CUDA context + NCCL buffers (1.0 GiB)
])
def test_a_gpu_memory_utilization_vllm_cannot_start_with_is_refused_at_load(instance, gpus, util, top):
    """vLLM V1 Worker.init_device raises 'Free memory on device … is less than desired GPU memory utilization' when
    free memory at start-up < total × utilization; the message names the key, the value and the largest that starts."""
    cfg = _cfg({"engine": "vllm"}, gpuMemoryUtilization=util, resources={"gpus": gpus, "cpu": "4", "memory": "24Gi"})
    cfg["gpuNodeGroup"]["instanceTypes"] = [instance]
    msg = _refused(cfg)
    assert f"services[0].gpuMemoryUtilization: got {util}" in msg and f"expected at most {top} on " in msg
    assert "Free memory on device" in msg
    cfg["services"][0]["gpuMemoryUtilization"] = float(top)
    _parse(cfg)                                              # the largest value named starts
    cfg["services"][0].update(gpuMemoryUtilization=util, runtime={"engine": "tgi"})
    _parse(cfg)                                              # TGI is not started with it


def test_a_measured_non_torch_figure_moves_the_startup_limit():
    cfg = _cfg({"engine": "vllm"}, gpuMemoryUtilization=0.99, engineProfile={"nonTorchGib": 0.6})
    cfg["gpuNodeGroup"]["instanceTypes"] = ["g6e.xlarge"]       # L40S: 44.54 GiB CUDA total, 0.6 GiB measured
    assert "expected at most 0.986 on L40S" in _refused(cfg)
    cfg["services"][0].pop("engineProfile")                     # the 0.25 GiB prior: 0.99 starts
    _parse(cfg)
