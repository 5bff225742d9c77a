"""Rules over InferenceServices on GPUs: concurrency, replicas, caps, probes, autoscaling (guides 000, 001, 004)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Iterator

from policy.resources import (ANN, BATCH_CAP_ANNOTATIONS, BATCH_CAP_FLAGS, Context, INPUT_CAP_ANNOTATIONS,
                              INPUT_CAP_FLAGS, MANDATORY, PREDICTOR_CONTAINER_KEYS,
                              PYTORCH_ENGINES, PYTORCH_FORMATS, Resource, SCALED_OBJECT_TYPE, _args, _env,
                              _has_flag, _list, _map, annotations, autoscaler_behavior, containers,
                              deployment_mode, duration_s, fmt, gpu_limit, hpas_for, is_device_plugin, is_gpu_isvc,
                              is_model_cache_daemonset, isvc_gpus, isvc_name, knative_autoscaler_data, metadata, num,
                              pod_spec, predictor, tolerations)
from policy.registry import rule
from simulation.autoscaler.cluster_config import DEFAULT as KNATIVE_AUTOSCALER_DEFAULT
from simulation.autoscaler.hpa import DEFAULT_DOWN
from validation.defaults import KNATIVE_DEFAULT_TIMEOUT_S, TGI_DEFAULT_MAX_CONCURRENT_REQUESTS
from validation.kubernetes import (GPU_RESOURCE, KNATIVE_MAX_TIMEOUT_S, expandable_segments, startup_budget,
                                   startup_failures_needed, tolerates)


# --- GPU InferenceService ---------------------------------------------------------------------------------------
@rule("isvc-container-concurrency", MANDATORY,
      "Knative GPU predictors set containerConcurrency > 0 (a hard per-pod limit)", "000 §4, §9.3; 001 §10-2",
      is_gpu_isvc)
def _container_concurrency(res: Resource, ctx: Context) -> Iterator[str]:
    """Only Knative mode: in Standard mode there is no queue-proxy to enforce it (the batch caps rule covers it)."""
    if deployment_mode(res) != "Knative":
        return
    cc = num(predictor(res).get("containerConcurrency"))
    if not cc:
        yield (f"{res.label}: spec.predictor.containerConcurrency is {fmt(cc)} (unlimited), so every burst lands "
               "on the GPU at once (CUDA OOM; the queue-proxy queues without bound, then 503s). Set containerConcurrency to what one replica "
               "serves concurrently, e.g. the runtime's max batch (--max-num-seqs); scaleTarget at or below it.")


@rule("isvc-prod-min-replicas", MANDATORY,
      "In prod, GPU services keep minReplicas >= 1 unless preflight.kserve.io/allow-scale-to-zero is \"true\"",
      "001 §3, §10 (priority 1); 004 §2, §8", is_gpu_isvc, stack=True)
def _prod_min_replicas(res: Resource, ctx: Context) -> Iterator[str]:
    """The environment comes from the GPU node group's `environment` tag, else from the URN's stack name."""
    if ctx.environment != "prod":
        return
    min_r = num(predictor(res).get("minReplicas"))
    min_r = 1.0 if min_r is None else min_r  # KServe's default
    if min_r < 1 and str(annotations(res).get(ANN + "allow-scale-to-zero", "")).lower() != "true":
        yield (f"{res.label}: minReplicas is {fmt(min_r)} in prod, so the first request after idle waits for a "
               "GPU cold start (node, image, model load) and gets 503s/timeouts. Set minReplicas >= 1, or opt in "
               f"explicitly with the annotation {ANN}allow-scale-to-zero: \"true\" (stack: allowScaleToZero: true).")


@rule("isvc-scale-metric", MANDATORY,
      "GPU services scale on concurrency or rps (KPA) or in-flight requests (KEDA ScaledObject or HPA Pods "
      "metric), never CPU/memory",
      "004 §3, §8; 000 §4", is_gpu_isvc, stack=True)
def _scale_metric(res: Resource, ctx: Context) -> Iterator[str]:
    pred, ann = predictor(res), annotations(res)
    fix = ("Scale on in-flight work: Knative scaleMetric concurrency (or rps); in Standard mode "
           "scaleMetric: concurrency, i.e. a KEDA ScaledObject on the runtime's running + waiting requests "
           "(hpa.scaler: keda), or an HPA Pods metric through a custom-metrics adapter (hpa.scaler: hpa).")
    if deployment_mode(res) == "Knative":
        metric = str(pred.get("scaleMetric") or ann.get("autoscaling.knative.dev/metric") or "concurrency")
        klass = str(ann.get("autoscaling.knative.dev/class", ""))
        if metric not in ("concurrency", "rps") or klass.startswith("hpa."):
            yield (f"{res.label}: scales on {metric!r}" + (f" with class {klass}" if klass else "") + "; a "
                   "GPU-bound model saturates the GPU long before the CPU, so it never scales out. " + fix)
        return
    if str(ann.get("serving.kserve.io/autoscalerClass", "hpa")) == "external":
        hpas = hpas_for(res, ctx)
        if not hpas:
            yield (f"{res.label}: autoscalerClass is external but no HorizontalPodAutoscaler or ScaledObject targets "
                   f"Deployment {isvc_name(res)}-predictor, so it never scales. Add one. " + fix)
        for hpa in hpas:
            if hpa.type == SCALED_OBJECT_TYPE:
                for t in _list(_map(hpa.props.get("spec")).get("triggers")):
                    if str(_map(t).get("type")) in ("cpu", "memory"):
                        yield (f"{res.label}: {hpa.label} scales the GPU predictor on {_map(t).get('type')}; a "
                               "GPU-bound model saturates the GPU long before the CPU, so it never scales out. "
                               + fix)
                continue
            if metadata(hpa).get("name") == f"{isvc_name(res)}-predictor":
                yield (f"{res.label}: {hpa.label} has the name of KServe's own HPA; with autoscalerClass external "
                       "KServe's HPA reconciler overwrites an HPA of that name with its defaults and then deletes "
                       "it (reconcilers/hpa/hpa_reconciler.go). Give it another name, e.g. <name>-predictor-hpa.")
            for m in _list(_map(hpa.props.get("spec")).get("metrics")):
                m = _map(m)
                mtype = str(m.get("type", ""))
                if mtype in ("Resource", "ContainerResource"):
                    what = _map(m.get("resource") or m.get("containerResource")).get("name")
                    yield (f"{res.label}: {hpa.label} scales the GPU predictor on {mtype} {what} utilisation; "
                           "a GPU-bound model saturates the GPU long before the CPU, so it never scales out. "
                           + fix)
        return
    metric = str(pred.get("scaleMetric") or "cpu")  # KServe's HPA default
    if metric in ("cpu", "memory"):
        yield (f"{res.label}: KServe's built-in HPA scales it on {metric}; a GPU-bound model saturates the GPU "
               "long before the CPU. Set serving.kserve.io/autoscalerClass: external with a KEDA ScaledObject or an "
               "HPA on in-flight requests (stack: scaleMetric: concurrency), or use Knative mode.")


@rule("isvc-max-replicas", MANDATORY,
      "maxReplicas is set and maxReplicas × GPUs per replica fits the GPU node group (maxSize × GPUs per node)",
      "001 §10-2, §10-3; 000 §9.8", is_gpu_isvc, stack=True)
def _max_replicas(res: Resource, ctx: Context) -> Iterator[str]:
    pred = predictor(res)
    max_r, min_r = num(pred.get("maxReplicas")), num(pred.get("minReplicas"))
    if not max_r or max_r < 1:
        yield (f"{res.label}: maxReplicas is {fmt(max_r)} (unbounded), so a spike asks for more GPUs than exist "
               "and the extra pods sit Pending while the queue returns 503s. Set maxReplicas to what the GPU node "
               "group can hold.")
        return
    if min_r is not None and min_r > max_r:
        yield f"{res.label}: minReplicas {fmt(min_r)} > maxReplicas {fmt(max_r)}. Set minReplicas <= maxReplicas."
    gpus = isvc_gpus(res)
    if ctx.gpu_capacity is not None and max_r * gpus > ctx.gpu_capacity:
        yield (f"{res.label}: maxReplicas {fmt(max_r)} × {gpus} GPU(s) = {fmt(max_r * gpus)} GPUs, but the GPU "
               f"node group holds at most {ctx.gpu_capacity} (maxSize × GPUs per node); replicas beyond that stay "
               f"Pending. Lower maxReplicas to {ctx.gpu_capacity // gpus} or raise the node group's maxSize.")


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
           f"CPU nodes or a different GPU type. Set spec.predictor.nodeSelector to a label of the GPU node group ({want}).")


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
                   "(e.g. /v2/health/ready) that fails until inference works.")


@rule("isvc-timeout", MANDATORY,
      "Knative revision timeout >= the service's expected p99 latency and <= Knative's 600 s",
      "001 §8, §10-4; 004 §4", is_gpu_isvc)
def _timeout(res: Resource, ctx: Context) -> Iterator[str]:
    if deployment_mode(res) != "Knative":
        return
    raw = num(predictor(res).get("timeout"))
    timeout = KNATIVE_DEFAULT_TIMEOUT_S if raw is None else raw
    shown = f"{timeout:g} s" + (" (Knative's default)" if raw is None else "")
    p99 = num(annotations(res).get(ANN + "slo-p99-latency-seconds"))
    if timeout > KNATIVE_MAX_TIMEOUT_S:
        yield (f"{res.label}: timeout is {shown}, above Knative's max-revision-timeout-seconds "
               f"({KNATIVE_MAX_TIMEOUT_S} s); the revision is rejected. Set spec.predictor.timeout <= "
               f"{KNATIVE_MAX_TIMEOUT_S} (cap long generations with max new tokens instead).")
    if p99 is not None and timeout < p99:
        yield (f"{res.label}: timeout is {shown}, below the expected p99 latency {p99:g} s "
               f"({ANN}slo-p99-latency-seconds), so the slowest requests are cut off with 504s. Set "
               f"spec.predictor.timeout between {p99:g} and {KNATIVE_MAX_TIMEOUT_S} s.")


def _all_args_env(res: Resource) -> tuple[list[str], dict[str, str]]:
    args, env = [], {}
    for c in containers(res):
        args += _args(c)
        env.update(_env(c))
    return args, env


def _declared(res: Resource, keys: tuple[str, ...]) -> bool:
    return any(str(annotations(res).get(k, "")).strip() for k in keys)


@rule("isvc-input-caps", MANDATORY,
      "An input cap the runtime enforces: its own flag, or Triton's declared config.pbtxt input shape",
      "000 §5, §9.4", is_gpu_isvc)
def _input_caps(res: Resource, ctx: Context) -> Iterator[str]:
    args, _ = _all_args_env(res)
    if not (_has_flag(args, INPUT_CAP_FLAGS) or _declared(res, INPUT_CAP_ANNOTATIONS)):
        yield (f"{res.label}: no input cap the runtime enforces, so one long prompt or huge image can take the whole "
               "GPU (CUDA OOM for every request in the batch). Set one: --max-model-len (vLLM), --max-input-tokens/"
               "--max-total-tokens (TGI), or for Triton the input dims in config.pbtxt, declared as "
               "preflight.kserve.io/triton-max-image-pixels (stack: limits.maxInputTokens / maxImagePixels). "
               "Environment variables such as MAX_INPUT_TOKENS are read by no runtime.")


@rule("isvc-batch-caps", MANDATORY,
      "A batch cap the runtime enforces: its own flag, or Triton's declared config.pbtxt max_batch_size",
      "000 §5, §9.5", is_gpu_isvc)
def _batch_caps(res: Resource, ctx: Context) -> Iterator[str]:
    args, _ = _all_args_env(res)
    if not (_has_flag(args, BATCH_CAP_FLAGS) or _declared(res, BATCH_CAP_ANNOTATIONS)):
        yield (f"{res.label}: no batch cap the runtime enforces, so dynamic batching grows until the GPU runs out "
               "of memory. Set one: --max-num-seqs (vLLM), --max-batch-size (TGI), or for Triton max_batch_size in "
               "config.pbtxt, declared as preflight.kserve.io/triton-max-batch-size (stack: limits.maxBatchSize). "
               "Environment variables such as MAX_BATCH_SIZE are read by no runtime.")


TGI_MAX_CONCURRENT_FLAGS = ("--max-concurrent-requests", "--max_concurrent_requests")


def _flag_value(args: list[str], flags: tuple[str, ...]) -> float | None:
    """The last value of `--flag=V` or `--flag V` (clap and argparse both take the last)."""
    out = None
    for i, a in enumerate(args):
        for f in flags:
            if a.startswith(f + "="):
                out = num(a.split("=", 1)[1])
            elif a == f and i + 1 < len(args):
                out = num(args[i + 1])
    return out


@rule("isvc-server-admission-limit", MANDATORY,
      "Knative: the server's own admission limit (TGI --max-concurrent-requests) admits at least what the "
      "queue-proxy sends a pod (containerConcurrency) and the KPA target", "004 §5; 000 §4",
      lambda res: is_gpu_isvc(res) and deployment_mode(res) == "Knative"
      and str(annotations(res).get(ANN + "engine", "")) == "tgi")
def _server_admission(res: Resource, ctx: Context) -> Iterator[str]:
    """TGI's router answers 429 "Model is overloaded" once `--max-concurrent-requests` requests are inside
    (text-generation-inference router/src: `InferError::Overloaded`). The queue-proxy lets containerConcurrency
    requests through to the pod at once, and the KPA adds pods only when the average per pod passes its target,
    so a lower server limit answers 429s before either would act: certain under the load the service is sized
    for, like a timeout below the p99 (`isvc-timeout`). Guide 004: fix the server's concurrency limit first, then
    set the autoscaler's target to it. Standard mode has no queue-proxy: the server's limit is the only one."""
    args, _ = _all_args_env(res)
    limit = _flag_value(args, TGI_MAX_CONCURRENT_FLAGS)
    shown = f"{fmt(limit)}" if limit is not None else f"{TGI_DEFAULT_MAX_CONCURRENT_REQUESTS} (TGI's default)"
    limit = TGI_DEFAULT_MAX_CONCURRENT_REQUESTS if limit is None else limit
    pred = predictor(res)
    cc = num(pred.get("containerConcurrency")) or math.inf   # 0 or unset: the queue-proxy sends without limit
    target = num(pred.get("scaleTarget")) if pred.get("scaleMetric", "concurrency") == "concurrency" else None
    sends = max(cc, target or 0)
    if sends > limit:
        yield (f"{res.label}: TGI's --max-concurrent-requests is {shown}, below the "
               f"{'unlimited' if sends == math.inf else fmt(sends)} requests the queue-proxy sends one pod "
               f"(containerConcurrency {fmt(None if cc == math.inf else cc)}, scaleTarget {fmt(target)}), so the "
               "router answers 429 before Knative queues or scales. Set limits.maxConcurrentRequests to at least "
               "containerConcurrency (stack), or lower containerConcurrency and scaleTarget to it.")


def _is_pytorch(res: Resource) -> bool:
    """vLLM, TGI and plain Transformers run on PyTorch; without the engine annotation, go by the model format."""
    engine = str(annotations(res).get(ANN + "engine", ""))
    if engine:
        return engine in PYTORCH_ENGINES
    model_format = _map(_map(predictor(res).get("model")).get("modelFormat")).get("name", "")
    return str(model_format) in PYTORCH_FORMATS


def _is_vllm(res: Resource) -> bool:
    """The engine annotation; without it, KServe's huggingfaceserver (vLLM backend unless --backend=huggingface)
    or vLLM's own image."""
    engine = str(annotations(res).get(ANN + "engine", ""))
    if engine:
        return engine == "vllm"
    args, _ = _all_args_env(res)
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
    args, env = _all_args_env(res)
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


# Knative's config-autoscaler defaults (pkg/autoscaler/config/config.go: stable-window 60 s, scale-down-delay 0)
# and the HPA's scaleDown stabilization window when unset (autoscaling/v2: 300 s), as the simulation models them.
KNATIVE_STABLE_WINDOW_S = KNATIVE_AUTOSCALER_DEFAULT.stable_window_s
KNATIVE_SCALE_DOWN_DELAY_S = KNATIVE_AUTOSCALER_DEFAULT.scale_down_delay_s
HPA_SCALE_DOWN_WINDOW_S = DEFAULT_DOWN.window_s
MIN_SCALE_DOWN_HOLD_S = {"spiky": 120.0,   # twice Knative's default window: the guides' example (window "120s")
                         "steady": KNATIVE_STABLE_WINDOW_S}   # never less stable than Knative's default


@rule("isvc-scale-down-stabilization", MANDATORY,
      "A pod is kept after its load ends (Knative stable window + scale-down delay; HPA scaleDown stabilization "
      "window) at least 120 s where traffic is spiky, and no shorter than Knative's default 60 s elsewhere",
      "004 §5, §8; 001 §5", is_gpu_isvc, stack=True)
def _scale_down(res: Resource, ctx: Context) -> Iterator[str]:
    """Traffic is spiky or steady by the `preflight.kserve.io/traffic` annotation, derived from the service's
    workload by `stackconfig.schema.traffic_shape` (gamma CV > 1, step, spike, trace; a missing annotation counts
    as spiky). A GPU replica takes minutes to bring back (node, image, model load), so removing it right after a
    burst makes it flap. Knative averages over the stable window and then holds the highest recommendation for
    the scale-down delay, so a pod outlives its load by about window + delay: with the defaults (60 s + 0) the
    next burst a minute later pays a cold start. Steady traffic may keep the defaults, but a shorter window
    ("6s", 10× less stable: the README's flapping story under waves of traffic) fails everywhere. The HPA's
    scaleDown stabilization window is the same hold (Kubernetes' default 300 s passes)."""
    ann = annotations(res)
    traffic = "steady" if ann.get(ANN + "traffic", "spiky") == "steady" else "spiky"
    minimum = MIN_SCALE_DOWN_HOLD_S[traffic]
    if deployment_mode(res) == "Knative":
        cluster = knative_autoscaler_data(ctx)  # the stack's config-autoscaler values count for every revision
        delay_text = ann.get("autoscaling.knative.dev/scale-down-delay", cluster.get("scale-down-delay"))
        window_text = ann.get("autoscaling.knative.dev/window", cluster.get("stable-window"))
        delay, window = duration_s(delay_text), duration_s(window_text)
        delay = KNATIVE_SCALE_DOWN_DELAY_S if delay is None else delay
        window = KNATIVE_STABLE_WINDOW_S if window is None else window
        if window + delay < minimum:
            shown = (f"window {window_text or f'{KNATIVE_STABLE_WINDOW_S:g}s (default)'} + scale-down-delay "
                     f"{delay_text or f'{KNATIVE_SCALE_DOWN_DELAY_S:g}s (default)'}")
            yield (f"{res.label}: autoscaling.knative.dev/{shown} keeps a GPU replica only ~{window + delay:g} s "
                   f"after its load ends (at least {minimum:g} s expected for {traffic} traffic), so the next burst "
                   "pays a cold start (flapping). Set scale-down-delay (e.g. \"5m\") and/or window (e.g. \"120s\").")
        return
    for hpa in hpas_for(res, ctx):
        down = _map(autoscaler_behavior(hpa).get("scaleDown"))
        set_window = num(down.get("stabilizationWindowSeconds"))
        window = HPA_SCALE_DOWN_WINDOW_S if set_window is None else set_window
        if window < minimum:
            shown = fmt(window) + (" (Kubernetes' default)" if set_window is None else "")
            yield (f"{res.label}: {hpa.label} has behavior.scaleDown.stabilizationWindowSeconds {shown} "
                   f"(at least {minimum:g} s expected for {traffic} traffic; Kubernetes' default is "
                   f"{HPA_SCALE_DOWN_WINDOW_S:g}), so replicas flap. Set it (e.g. 600) with a slow scale-down "
                   "policy (stack: hpa.behavior).")
