"""Rules over a GPU InferenceService's pod: the GPU it asks for, where it is scheduled, its probes and the CUDA
allocator's settings (guides 000, 001, 004)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Iterator

from catalog.allocatable import quantity
from policy.registry import rule
from policy.resources import (ADVISORY, ANN, MANDATORY, PREDICTOR_CONTAINER_KEYS, PYTORCH_ENGINES, PYTORCH_FORMATS,
                              Context, Resource, _has_flag, _list, _map, all_args_env, annotations, containers,
                              gpu_limit, is_device_plugin, is_gpu_isvc, is_model_cache_daemonset, isvc_gpus, num,
                              pod_spec, predictor, tolerations)
from stackconfig.resource_floors import KSERVE_RUNTIME_MEMORY
from validation.annotations import ENGINE_ANNOTATION
from validation.kubernetes import (GPU_RESOURCE, expandable_segments, startup_budget, startup_failures_needed,
                                   tolerates)


@rule("isvc-gpu-limit", MANDATORY, "The predictor container has an nvidia.com/gpu limit",
      "001 §7, §10-3; 000 §7", is_gpu_isvc)
def _gpu_limit(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(gpu_limit(c) >= 1 for c in containers(res)):
        yield (f"{res.label}: no container has resources.limits[\"{GPU_RESOURCE}\"], so the pod is scheduled "
               "without a GPU (or lands next to another model and OOMs). Set resources.limits "
               f"{GPU_RESOURCE}: \"1\" (extended resources must be in limits; requests alone do not count).")


@rule("gpu-taint-tolerated", MANDATORY,
      "GPU pods (InferenceService, device plugin, model-cache prefetch) tolerate the GPU node group's taint",
      "001 §7, §10-3; 004 §6", lambda r: is_gpu_isvc(r) or is_device_plugin(r) or is_model_cache_daemonset(r),
      stack=True)
def _taint_tolerated(res: Resource, ctx: Context) -> Iterator[str]:
    tols = tolerations(res)
    for taint in ctx.taints:
        if taint["effect"] == "PreferNoSchedule":
            continue
        if not any(tolerates(t, taint) for t in tols):
            yield (f"{res.label}: does not tolerate the GPU node taint {taint['key']}={taint['value']}:"
                   f"{taint['effect']}, so its pods stay Pending (FailedScheduling: untolerated taint). Add the "
                   f"toleration {{key: {taint['key']}, operator: Exists, effect: {taint['effect']}}}.")


@rule("isvc-gpu-node-selector", MANDATORY, "GPU predictors select GPU nodes (nodeSelector or required node affinity)",
      "001 §7, §10-3", is_gpu_isvc, stack=True)
def _node_selector(res: Resource, ctx: Context) -> Iterator[str]:
    spec = pod_spec(res)
    selector = {str(k): str(v) for k, v in _map(spec.get("nodeSelector")).items()}
    required = _map(_map(_map(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    gpu_keys = [k for k in selector if ctx.gpu_labels.get(k) == selector[k] or (not ctx.gpu_labels and (
        "gpu" in k.lower() or "accelerator" in k.lower()))]
    if gpu_keys or required:
        return
    want = ", ".join(f"{k}: \"{v}\"" for k, v in ctx.gpu_labels.items()) or "nvidia.com/gpu.present: \"true\""
    yield (f"{res.label}: no GPU node selector (nodeSelector is {selector or 'empty'}), so the scheduler may try "
           "CPU nodes or a different GPU type. Set spec.predictor.nodeSelector to a label of the GPU node group "
           f"({want}).")


def _probe_numbers(probe: Mapping) -> tuple[float, float, float]:
    """initialDelaySeconds, periodSeconds, failureThreshold with the kubelet's defaults (0, 10, 3)."""
    return (num(probe.get("initialDelaySeconds")) or 0.0, num(probe.get("periodSeconds")) or 10.0,
            num(probe.get("failureThreshold")) or 3.0)


def _serving_containers(res: Resource) -> list[Mapping]:
    spec = pod_spec(res)
    return [_map(spec.get(k)) for k in PREDICTOR_CONTAINER_KEYS if isinstance(spec.get(k), Mapping)] + \
        [_map(c) for c in _list(spec.get("containers"))[:1]]


@rule("isvc-startup-probe", MANDATORY,
      "A startupProbe whose budget (initialDelay + period × (failureThreshold − 1)) covers the expected model load",
      "001 §4, §10-1; 004 §2", is_gpu_isvc)
def _startup_probe(res: Resource, ctx: Context) -> Iterator[str]:
    """Budget against `preflight.kserve.io/expected-load-seconds`; without that annotation only presence is checked."""
    load = num(annotations(res).get(ANN + "expected-load-seconds"))
    for c in _serving_containers(res)[:1]:
        probe = c.get("startupProbe")
        if not isinstance(probe, Mapping):
            yield (f"{res.label}: no startupProbe, so the liveness probe kills the pod while the model is still "
                   "loading (CrashLoopBackOff, 503s after each deploy). Add a startupProbe on the ready endpoint with "
                   "initialDelaySeconds + periodSeconds × (failureThreshold − 1) at least the expected load time"
                   + (f" ({load:g} s)." if load else "."))
            continue
        delay, period, failures = _probe_numbers(probe)
        budget = startup_budget(delay, period, failures)
        if load and budget < load:
            yield (f"{res.label}: startupProbe budget is {budget:g} s (initialDelaySeconds + periodSeconds × "
                   "(failureThreshold − 1): the kubelet's probe ticks run from the pod's admission, so the kill may "
                   f"come one period early) but the model is expected to take {load:g} s to load "
                   f"({ANN}expected-load-seconds); the kubelet restarts it before it is ready. Raise failureThreshold "
                   f"to at least {startup_failures_needed(delay, period, load)} (or periodSeconds).")


@rule("isvc-readiness-probe", MANDATORY, "A readinessProbe so traffic waits until the model can serve",
      "001 §4, §10-1; 004 §6", is_gpu_isvc)
def _readiness_probe(res: Resource, ctx: Context) -> Iterator[str]:
    for c in _serving_containers(res)[:1]:
        if not isinstance(c.get("readinessProbe"), Mapping):
            yield (f"{res.label}: no readinessProbe, so requests are routed while the model is still loading "
                   "(503s right after deploys and scale-outs). Add a readinessProbe on the runtime's ready endpoint "
                   "(e.g. /v2/models/<name>/ready on KServe's Python runtimes, /health on vLLM and TGI) "
                   "that fails until inference works.")


@rule("isvc-serving-memory", ADVISORY,
      "The serving container's memory is at least the 2Gi KServe's runtimes ship with", "000 §3.2, §9-2",
      is_gpu_isvc)
def _serving_memory(res: Resource, ctx: Context) -> Iterator[str]:
    """Below 2Gi (kserve/kserve config/runtimes/*.yaml) the CUDA context, torch and the tokenizer are not expected
    to fit the cgroup, and the kernel OOM-kills the server as it starts (OOMKilled, CPU memory: guide 000 §3.2).
    The stack refuses below 1Gi (stackconfig/resource_floors.py); between the two it starts or not by engine and
    model, so this only warns."""
    for c in _serving_containers(res):
        res_ = _map(c.get("resources"))
        memory = _map(res_.get("limits")).get("memory", _map(res_.get("requests")).get("memory"))
        try:
            size = quantity(memory) if memory is not None else None
        except ValueError:
            size = None
        if size is not None and size < KSERVE_RUNTIME_MEMORY:
            yield (f"{res.label}: memory {memory} is below the 2Gi KServe's runtimes ship with, which the CUDA "
                   "context, torch and the tokenizer are expected to need: the server may be OOMKilled as it "
                   "starts and the revision never becomes Ready. Raise it to at least 2Gi (stack: resources.memory).")


def _is_pytorch(res: Resource) -> bool:
    """vLLM, TGI and plain Transformers run on PyTorch; without the engine annotation, go by the model format."""
    engine = str(annotations(res).get(ENGINE_ANNOTATION, ""))
    if engine:
        return engine in PYTORCH_ENGINES
    model_format = _map(_map(predictor(res).get("model")).get("modelFormat")).get("name", "")
    return str(model_format) in PYTORCH_FORMATS


def _is_vllm(res: Resource) -> bool:
    """The engine annotation; without it, KServe's huggingfaceserver (vLLM backend unless --backend=huggingface)
    or vLLM's own image."""
    engine = str(annotations(res).get(ENGINE_ANNOTATION, ""))
    if engine:
        return engine == "vllm"
    args, _ = all_args_env(res)
    images = " ".join(str(c.get("image", "")) for c in containers(res))
    model_format = _map(_map(predictor(res).get("model")).get("modelFormat")).get("name", "")
    hf_backend = _has_flag(args, ("--backend=huggingface",))
    return "vllm-openai" in images or (model_format == "huggingface" and not hf_backend)


@rule("isvc-pytorch-alloc-conf", MANDATORY,
      "PyTorch runtimes set PYTORCH_CUDA_ALLOC_CONF; vLLM on more than one GPU without expandable segments "
      "(its custom all-reduce cannot share them) unless --disable-custom-all-reduce", "000 §5, §8; vllm#42609",
      lambda r: is_gpu_isvc(r) and _is_pytorch(r))
def _alloc_conf(res: Resource, ctx: Context) -> Iterator[str]:
    """KServe runs vLLM with tensor parallelism = the GPU count (huggingfaceserver `vllm_model.py`); across GPUs
    vLLM's custom all-reduce shares CUDA-graph buffers with `cudaIpcGetMemHandle`, which refuses expandable
    (VMM-backed) segments: every worker dies at start-up (vllm-project/vllm#42609, #9046)."""
    args, env = all_args_env(res)
    conf = env.get("PYTORCH_CUDA_ALLOC_CONF")
    tp = isvc_gpus(res) > 1 and _is_vllm(res)
    if tp and expandable_segments(conf) and not _has_flag(args, ("--disable-custom-all-reduce",
                                                                 "--disable_custom_all_reduce")):
        yield (f"{res.label}: PYTORCH_CUDA_ALLOC_CONF={conf} on vLLM with {isvc_gpus(res)} GPUs: its custom "
               "all-reduce cannot share expandable segments between GPUs and every worker dies at start-up "
               "('custom_all_reduce.cuh … invalid argument'). Set expandable_segments:False (stack: "
               "pytorchCudaAllocConf, the default for vLLM on several GPUs), or pass --disable-custom-all-reduce.")
    elif not conf and not tp:
        yield (f"{res.label}: PYTORCH_CUDA_ALLOC_CONF is not set, so the CUDA caching allocator fragments under "
               "variable-length batches and OOMs with free memory left. Set env PYTORCH_CUDA_ALLOC_CONF="
               "expandable_segments:True (stack: pytorchCudaAllocConf).")
