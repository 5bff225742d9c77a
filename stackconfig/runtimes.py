"""Which server each engine runs and how KServe starts it: checked at load, rendered by manifests/inference_service.py.

KServe 0.15 runs a `spec.predictor.model` on a ServingRuntime chosen by `modelFormat` (kserve
`components/predictor.go: reconcileModel`, the highest-priority `autoSelect` runtime) and strategic-merges our
container onto the runtime's (`inferenceservice/utils/utils.go: MergeRuntimeContainers`): our image replaces
theirs, our args are appended to theirs (`kserve-huggingfaceserver`: `--model_name={{.Name}}`), their
`securityContext.runAsNonRoot: true` and `/v2` health protocol stay. So an image may replace the runtime's only
when it is the same server: KServe's `huggingfaceserver` (vLLM or Transformers backend) or NVIDIA's
`tritonserver`. Any other server runs as a custom predictor: `spec.predictor.containers[0]` named
`kserve-container` with the model URI in env `STORAGE_URI` (`v1beta1/predictor_custom.go: GetStorageUri`), which
KServe turns into the storage-initializer annotation; its pod webhook then downloads the model, or mounts a
`pvc://` claim directly, at `/mnt/models` and rewrites `STORAGE_URI` to that path
(`webhook/admission/pod/storage_initializer_injector.go`). TGI (`text-generation-launcher`) and vLLM's own
OpenAI server (`vllm/vllm-openai`) are rendered that way; any other image is refused, since the stack could not
know its flags, port or health path. What KServe then does to a `huggingfaceserver` image on a GPU
(`gpu_image_rewrite`) and which `runtime.env` names the webhooks refuse (`check_env`) depend on `kserve.version`.
"""

from __future__ import annotations

import re

from catalog import Model
from stackconfig.formats import IMAGE_REFERENCE, matches
from stackconfig.types import InputCaps
from validation.admission import KSERVE_BLOCKED_ENV, kserve_blocked_env, release
from validation.defaults import SERVING_PORT
from validation.knative_podspec import KNATIVE_RESERVED_ENV
from validation.fields import Section
from validation.kubernetes import expandable_segments, image_pinned
from simulation.engine_flags import (Pod, Reading, flag_problems, image_repository, read_args, read_env,
                                     restated_problems, server_of)

# The image repository's last path component → what runs it. Matching the name, not the registry, keeps a
# mirrored copy (e.g. in ECR) working.
RUNTIME_IMAGES = {"vllm": ("huggingfaceserver",), "naive": ("huggingfaceserver",), "triton": ("tritonserver",)}
CUSTOM_IMAGES = {"vllm": "vllm-openai", "tgi": "text-generation-inference"}
DEFAULT_CUSTOM_IMAGES = {"tgi": "ghcr.io/huggingface/text-generation-inference:3.3.4"}
# The formats whose auto-selected runtime (kserve config/runtimes/*.yaml, highest priority) serves the engine:
# huggingface → kserve-huggingfaceserver; triton, onnx, tensorrt → kserve-tritonserver (tensorflow and pytorch
# auto-select TF Serving and TorchServe instead). A custom predictor has no modelFormat.
MODEL_FORMATS = {"vllm": ("huggingface",), "naive": ("huggingface",), "triton": ("triton", "onnx", "tensorrt"),
                 "tgi": ("huggingface",)}


def is_custom_predictor(engine: str, image: str | None) -> bool:
    """TGI always, vLLM with vLLM's own image: rendered as `spec.predictor.containers`."""
    return engine == "tgi" or (image is not None and image_repository(image) == CUSTOM_IMAGES.get(engine))


def health_paths(engine: str, image: str | None, model_name: str | None = None) -> tuple[str, str]:
    """(readiness, liveness) paths the server that runs answers 200 on once its model is loaded. KServe's Python
    servers (huggingfaceserver, vLLM or Transformers backend): readiness `/v2/models/<model_name>/ready` (the
    name `--model_name` registers; `DataPlane.model_ready` asks the model), liveness `/v2/health/live`. Not
    `/v2/health/ready`: `DataPlane.ready` answers True on a predictor without asking any model, and with the vLLM
    backend the REST server runs while `start_engine` still loads the model (simulation/probe_routes.py).
    Triton serves the v2 health protocol (`/v2/health/ready` waits for every model under --strict-readiness);
    a custom predictor serves its own routes only: TGI's router `/health`
    (text-generation-inference router/src/server.rs) and vLLM's OpenAI server `/health` (vllm
    entrypoints/openai/api_server.py; it listens only once the engine is up; KServe's own LLMInferenceService
    templates probe vLLM there, config/llmisvcconfig/config-llm-decode-template.yaml). These are the defaults; a
    path the stack states is held to the server's routes (simulation/probe_routes.py, from services.py): a path it
    does not route is a 404 on every probe (the startup probe kills the pod until the revision misses its
    progress deadline), and a readiness or startup probe on a liveness route is refused too."""
    if is_custom_predictor(engine, image):
        return "/health", "/health"
    if engine != "triton" and model_name:
        return f"/v2/models/{model_name}/ready", "/v2/health/live"
    return "/v2/health/ready", "/v2/health/live"


def server_image(engine: str, image: str | None) -> str | None:
    """The image to render: the user's, else a custom predictor's pinned default (None: the runtime's own)."""
    return image or DEFAULT_CUSTOM_IMAGES.get(engine)


def check_runtime(sec: Section, engine: str, image: str | None, model_format: str,
                  kserve_version: tuple[int, int]) -> None:
    """`runtime.image` and `runtime.modelFormat` name a server KServe can start for `engine` (module docstring),
    and the image is the one that runs (`gpu_image_rewrite`)."""
    if image is not None:
        allowed = RUNTIME_IMAGES.get(engine, ()) + ((CUSTOM_IMAGES[engine],) if engine in CUSTOM_IMAGES else ())
        if image_repository(image) not in allowed:
            sec.problem("image", image, f"expected an image of {' or '.join(repr(a) for a in allowed)} for engine "
                        f"{engine} (e.g. {_example(engine)}): KServe merges another image onto the serving "
                        "runtime's arguments, user and health probes, or the stack cannot know its flags")
        elif engine in GPU_TAGGED_ENGINES and not is_custom_predictor(engine, image):
            _check_gpu_tag(sec, image, kserve_version)
    if model_format not in MODEL_FORMATS[engine]:
        sec.problem("modelFormat", model_format, f"expected one of {', '.join(MODEL_FORMATS[engine])} for engine "
                    f"{engine}: KServe picks the serving runtime by modelFormat, and another one would start a "
                    "different server")


# KServe's UpdateImageTag (controller/v1beta1/inferenceservice/utils/utils.go, from components/predictor.go
# buildPodSpec): on a pod with an nvidia.com/gpu limit (every service here) and no runtimeVersion, the image of the
# kserve-huggingfaceserver runtime (also TF Serving's, TorchServe's) gets "-gpu" appended unless it already ends
# in "-gpu". The tag is what `(:([\w.\-_]*))$` matches, so a digest's hex counts as one; KServe 0.16 leaves an
# image with "@sha256:" alone (kserve#4653). vllm and naive run on kserve-huggingfaceserver.
GPU_TAGGED_ENGINES = ("vllm", "naive")
_GO_TAG = re.compile(r":[\w.\-]*$", re.ASCII)
DIGEST_KEPT_SINCE = (0, 16)


def gpu_image_rewrite(image: str, kserve_version: tuple[int, int]) -> str | None:
    """The image KServe runs instead of `image` on a GPU pod of kserve-huggingfaceserver; None if unchanged."""
    if "@sha256:" in image and kserve_version >= DIGEST_KEPT_SINCE:
        return None
    return image + "-gpu" if _GO_TAG.search(image) and not image.endswith("-gpu") else None


def _check_gpu_tag(sec: Section, image: str, kserve_version: tuple[int, int]) -> None:
    if not (matches(IMAGE_REFERENCE, image) and image_pinned(image)):
        return  # check_image reports it
    runs = gpu_image_rewrite(image, kserve_version)
    if runs is None:
        return
    version = release(kserve_version)
    why = (f"KServe appends '-gpu' to the huggingfaceserver image of a GPU pod unless it ends in '-gpu' "
           f"(UpdateImageTag, inferenceservice/utils/utils.go), so it would run '{runs}'")
    if "@" in image:
        sec.problem("image", image, f"expected no digest on KServe {version} (kserve.version), a tag ending in -gpu "
                    f"such as kserve/huggingfaceserver:v0.15.2-gpu: {why}, which Knative refuses ('Failed to parse "
                    "image reference'), so no revision is ever created; KServe 0.16 and later keep an @sha256 digest "
                    "(kserve#4653): set kserve.version if the cluster runs one")
    else:
        sec.problem("image", image, f"expected a tag ending in -gpu such as kserve/huggingfaceserver:v0.15.2-gpu: "
                    f"{why}, a tag the registry may not have (ErrImagePull); name the GPU tag that runs"
                    + (", or pin an @sha256 digest, which this KServe keeps" if kserve_version >= DIGEST_KEPT_SINCE
                       else ""))


# A custom predictor's protocol, read from its first container's env (kserve constants.CustomSpecProtocolEnvVarKey).
CUSTOM_PROTOCOL_ENV = "PROTOCOL"
CUSTOM_PROTOCOLS = ("v1", "v2")  # constants.ProtocolV1, ProtocolV2: all validateCustomProtocol admits


def check_env(sec: Section, env: dict, knative_mode: bool, kserve_version: tuple[int, int]) -> None:
    """`runtime.env` names the webhooks refuse: Knative reserves PORT and K_* for the revision
    (`KNATIVE_RESERVED_ENV`), KServe ≥ 0.18 blocks PYTHONPATH (`KSERVE_BLOCKED_ENV`), and on a custom predictor
    (TGI, vllm-openai) KServe's webhook admits PROTOCOL only as v1 or v2 (`predictor_custom.go:
    validateCustomProtocol`, from `inference_service_validation.go: validateInferenceService`); and the variables
    the engine reads as a setting that the gate would not simulate (`_check_engine_env`)."""
    version = release(kserve_version)
    image = sec.data.get("image")
    custom = is_custom_predictor(str(sec.data.get("engine", "vllm")), image if isinstance(image, str) else None)
    if custom and CUSTOM_PROTOCOL_ENV in env and env[CUSTOM_PROTOCOL_ENV] not in CUSTOM_PROTOCOLS:
        sec.problem(f"env.{CUSTOM_PROTOCOL_ENV}", env[CUSTOM_PROTOCOL_ENV], "expected v1 or v2 (or no PROTOCOL) on a "
                    "custom predictor (TGI, vllm-openai): KServe's webhook refuses the InferenceService otherwise "
                    "(pkg/apis/serving/v1beta1/predictor_custom.go validateCustomProtocol, 'invalid protocol … Must "
                    "be one of […]')")
    for name in env:
        if knative_mode and name in KNATIVE_RESERVED_ENV:
            sec.problem(f"env.{name}", env[name], f"expected none of {', '.join(sorted(KNATIVE_RESERVED_ENV))} in "
                        f"Knative mode: Knative's webhook refuses the revision ('\"{name}\" is a reserved environment "
                        "variable', pkg/apis/serving/k8s_validation.go) and sets them itself (PORT is the container "
                        f"port, {SERVING_PORT} here)")
        elif name in kserve_blocked_env(kserve_version):
            sec.problem(f"env.{name}", env[name], f"expected no {name} on KServe {version} (kserve.version): its "
                        f"webhook refuses the InferenceService ('setting {name} in container … is not allowed for "
                        f"security reasons', pkg/validation/env_policy.go, since {release(KSERVE_BLOCKED_ENV[name])}; "
                        "kserve#5340)")
    _check_engine_env(sec, env, kserve_version)


def _example(engine: str) -> str:
    return {"vllm": "kserve/huggingfaceserver:v0.15.2-gpu or vllm/vllm-openai:v0.11.0",
            "naive": "kserve/huggingfaceserver:v0.15.2-gpu", "triton": "nvcr.io/nvidia/tritonserver:25.08-py3",
            "tgi": DEFAULT_CUSTOM_IMAGES["tgi"]}[engine]


def check_context(sec: Section, engine: str, caps: InputCaps, model: Model) -> None:
    """The context the runtime is started with fits the model: vLLM refuses to start when `--max-model-len`
    exceeds the model's `max_position_embeddings` (vllm `config.py: _get_and_verify_max_len`), and TGI's launcher
    when `--max-input-tokens` is not below `--max-total-tokens` (v3.3.4 default: min(KV pool, the model's
    context), so below the context is necessary here; the pool's part is the simulation's, `gpu/tgi_launcher.py`). A
    `--max-model-len` in `runtime.args` is read as vLLM reads it (`engine_flags`: '16k' is 16,000), the value the
    gate simulates."""
    _, image, args, _ = _runtime(sec)
    reading = read_args(server_of(engine, image), args) if engine == "vllm" else Reading()
    given_len = reading.values.get("max_model_len")
    if given_len and model.max_context and given_len > model.max_context:
        sec.problem("runtime.args", reading.given["max_model_len"], f"expected a context of at most "
                    f"{model.max_context} tokens, the context length of {model.name} (read as {given_len}): vLLM "
                    "refuses to start with a longer --max-model-len (_get_and_verify_max_len)")
    ctx_len, given = model.max_context, caps.max_input_tokens
    if not ctx_len or not given:
        return
    if caps.max_new_tokens:
        if given + caps.max_new_tokens > ctx_len:
            sec.problem("limits.maxInputTokens", given, f"expected maxInputTokens + maxNewTokens "
                        f"({given} + {caps.max_new_tokens}) <= {ctx_len}, the context length of {model.name}")
    elif engine == "tgi" and given >= ctx_len:
        sec.problem("limits.maxInputTokens", given, f"expected at most {ctx_len - 1}: TGI's --max-total-tokens "
                    f"defaults to at most the context length of {model.name} ({ctx_len}; less when the KV pool "
                    "is shorter) and --max-input-tokens must stay below it")
    elif given > ctx_len:
        sec.problem("limits.maxInputTokens", given, f"expected at most {ctx_len}, the context length of "
                    f"{model.name}: without maxNewTokens it is the server's whole context "
                    f"({'--max-model-len' if engine == 'vllm' else '--max_length'}), which may not exceed the "
                    "model's")


def rendered_context(caps: InputCaps) -> int | None:
    """The context the stack renders from the caps (vLLM's `--max-model-len`, the Transformers backend's
    `--max_length`: stackconfig/server_args.py `stack_args`): maxInputTokens + maxNewTokens, else
    maxInputTokens (then the whole context), else none (the server's default, the model's)."""
    if caps.max_input_tokens and caps.max_new_tokens:
        return caps.max_input_tokens + caps.max_new_tokens
    return caps.max_input_tokens


def served_context(engine: str, image: str | None, args: list[str] | tuple, caps: InputCaps, model: Model) -> int:
    """max_model_len as the manifest renders it: a `--max-model-len` in `runtime.args` (after the stack's flags, so
    the one vLLM keeps), else `rendered_context`, else the model's context."""
    given = read_args(server_of(engine, image), tuple(args), image).values.get("max_model_len")
    return given or rendered_context(caps) or model.max_context


def default_alloc_conf(engine: str, gpus: int) -> str:
    """`expandable_segments:True` (less fragmentation under variable-length batches, guides 000 §5), except for
    vLLM across GPUs: its custom all-reduce shares CUDA-graph buffers with `cudaIpcGetMemHandle`, which refuses
    the allocator's VMM-backed segments, and every worker dies at start-up ('custom_all_reduce.cuh … invalid
    argument'; vllm-project/vllm#42609, #9046). KServe runs vLLM with tensor parallelism = the GPU count
    (huggingfaceserver `vllm_model.py`), so there the stack sets PyTorch's own default explicitly."""
    return "expandable_segments:False" if engine == "vllm" and gpus > 1 else "expandable_segments:True"


def check_alloc_conf(sec: Section, engine: str, alloc: str | None, env: dict, args: list[str], pod: Pod) -> None:
    """vLLM on several GPUs with expandable segments needs custom all-reduce off; and, since services.py calls this
    once the pod is known (`resources.gpus`, the deployment mode, the context, the node), the engine's flags and
    tensor parallelism (`_check_engine_args`)."""
    gpus = pod.gpus
    key, conf = ("runtime.env.PYTORCH_CUDA_ALLOC_CONF", env["PYTORCH_CUDA_ALLOC_CONF"]) \
        if "PYTORCH_CUDA_ALLOC_CONF" in env else ("pytorchCudaAllocConf", alloc)
    off = bool(_check_engine_args(sec, engine, env, args, pod).values.get("disable_custom_all_reduce"))
    if engine == "vllm" and gpus > 1 and expandable_segments(conf) and not off:
        sec.problem(key, conf, f"expected no expandable_segments:True for vLLM on {gpus} GPUs (e.g. "
                    "expandable_segments:False, the default here), or --disable-custom-all-reduce in runtime.args: "
                    "vLLM's custom all-reduce cannot share expandable segments between GPUs and every worker dies "
                    "at start-up (vllm-project/vllm#42609)")


# --- runtime.args and runtime.env as the engine reads them (simulation/engine_flags.py, shared with the gate) ------
# vLLM's V0 engine (`VLLM_USE_V1=0`, `scheduler: v0` in the simulation) is gone from vLLM 0.11.0 on (V0
# deprecation, vllm#18571). KServe's huggingfaceserver pins vLLM 0.8.5 (KServe 0.15), 0.9.2 (0.16), then 0.15.1
# (0.17) and later (python/huggingfaceserver/pyproject.toml).
VLLM_WITHOUT_V0, KSERVE_WITHOUT_V0 = (0, 11), (0, 17)
_TAG_VERSION = re.compile(r":v?(\d+)\.(\d+)")


def _runtime(sec: Section) -> tuple[str, str | None, list, dict]:
    """(engine, image, args, env) of a service section's `runtime:` as given (services.py has checked their types);
    a value of the wrong type reads as absent."""
    raw = sec.data.get("runtime")
    raw = raw if isinstance(raw, dict) else {}
    image, args, env = raw.get("image"), raw.get("args"), raw.get("env")
    return (str(raw.get("engine", "vllm")), image if isinstance(image, str) else None,
            [a for a in args if isinstance(a, str)] if isinstance(args, list) else [],
            env if isinstance(env, dict) else {})


def _v0_missing(engine: str, image: str | None, kserve_version: tuple[int, int]) -> str | None:
    """Why the vLLM the pod runs has no V0 engine, or None when it has one."""
    server = server_of(engine, image)
    match = _TAG_VERSION.search(image.split("@", 1)[0]) if image else None
    version = tuple(int(g) for g in match.groups()) if match else None
    if server == "vllm-openai":
        if version is None:
            return f"the image {image} names no vLLM version, and vLLM 0.11 and later have no V0 engine"
        return f"vLLM {release(version)} has no V0 engine (removed in 0.11)" if version >= VLLM_WITHOUT_V0 else None
    version = version if image else kserve_version
    if version is None:
        return f"the image {image} names no KServe version, and KServe 0.17 and later ship a vLLM without V0"
    if version >= KSERVE_WITHOUT_V0:
        return (f"KServe {release(version)}'s huggingfaceserver ships vLLM 0.15 or later, which has no V0 engine "
                "(removed in vLLM 0.11)")
    return None


def _check_engine_env(sec: Section, env: dict, kserve_version: tuple[int, int]) -> None:
    """`runtime.env` variables the engine reads as settings: mapped ones must parse, refused ones are named
    (`engine_flags.REFUSED_ENV`), and `VLLM_USE_V1=0` needs a vLLM that still has the V0 engine."""
    engine, image = str(sec.data.get("engine", "vllm")), sec.data.get("image")
    image = image if isinstance(image, str) else None
    reading = read_env(engine, env)
    for name, why in reading.problems:
        sec.problem(f"env.{name}", env[name], why)
    if reading.values.get("scheduler") == "v0":
        why = _v0_missing(engine, image, kserve_version)
        if why:
            sec.problem("env.VLLM_USE_V1", env["VLLM_USE_V1"], f"expected 1 or no VLLM_USE_V1: {why}, so the pod "
                        "would not run the V0 engine the gate would simulate")


def _check_engine_args(sec: Section, engine: str, env: dict, args: list[str], pod: Pod) -> Reading:
    """`runtime.args` flags the server reads (`engine_flags`): an allow-list of modelled and neutral flags, values
    that parse, tensor parallelism (args or env) equal to `resources.gpus`, listeners clear of the ports the pod
    uses in its deployment mode, what `restated_problems` checks against the pod, and no contradiction with
    `engineProfile` (it overrides what the manifest states in the gate's simulation)."""
    image = _runtime(sec)[1]
    server = server_of(engine, image)
    reading = read_args(server, args, image)
    env_reading = read_env(engine, env)
    for name, value, why in flag_problems(server, reading, env_reading, env, pod):
        sec.problem("runtime.args" if name is None else f"runtime.env.{name}", value, why)
    profile = sec.data.get("engineProfile")
    profile = profile if isinstance(profile, dict) else {}
    scheduler = env_reading.values.get("scheduler")
    for arg, why in restated_problems(reading, env, pod):
        sec.problem("runtime.args", arg, why)
    if scheduler and profile.get("scheduler", scheduler) != scheduler:
        sec.problem("runtime.env.VLLM_USE_V1", env["VLLM_USE_V1"], f"expected a value that selects "
                    f"engineProfile.scheduler ({profile['scheduler']}), or no engineProfile.scheduler: the engine "
                    "runs what the variable selects")
    hit = profile.get("prefixCacheHitRatio")
    if reading.values.get("prefix_cache_hit_ratio") == 0.0 and isinstance(hit, (int, float)) and hit > 0:
        sec.problem("engineProfile.prefixCacheHitRatio", hit, "expected 0 or none with --no-enable-prefix-caching "
                    "in runtime.args: the server then finds no prompt in the prefix cache")
    return reading
