"""`services:`: each InferenceService's scaling, runtime, model, resources, probes, caps, placement and SLO.

Services use KServe's own field names (`pkg/apis/serving/v1beta1/component.go: ComponentExtensionSpec`) and
Knative's autoscaling annotation keys (`pkg/apis/autoscaling/register.go`); defaults follow KServe
(`minReplicas` 1) and Knative (`timeout` ≤ 600 s).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from catalog import GIB, Gpu

from stackconfig.autoscaling import check_hpa_behavior, check_keda, parse_annotations
from stackconfig.cluster import GPU_LABEL, TAINT_EFFECTS
from stackconfig.engine_profile import parse_engine_profile
from stackconfig.formats import (ENV_NAME, QUALIFIED_NAME, QUANTITY, SERVICE_NAME, check_format, check_image,
                                 check_storage_uri, matches)
from stackconfig.model_credentials import check_model_credentials
from stackconfig.platform import cache_read_mib_s, expected_load_s, first_pods, load_gbps
from stackconfig.resource_floors import check_serving_resources
from stackconfig.runtimes import (MODEL_FORMATS, check_alloc_conf, check_context, check_env,
                                  check_runtime, default_alloc_conf, health_paths, served_context)
from stackconfig.types import (PROJECT_ROOT, InputCaps, Probe, ServiceConfig, Slo, StackConfigContext, Taint,
                               Toleration)
from stackconfig.server_args import check_rendered_flags
from stackconfig.stress import parse_stress
from validation.defaults import KNATIVE_CC_MAX
from validation.deployment_mode import MODES
from validation.fields import Section
from validation.kubernetes import KNATIVE_MAX_TIMEOUT_S, startup_budget, startup_failures_needed
from simulation.engine_flags import Pod, node_memory_gib, vllm_scheduler
from simulation.gpu.memory import max_startup_utilization
from simulation.gpu.tensor_parallel import heads_problem, shard_sizes
from simulation.probe_routes import KSERVE_PYTHON, kserve_model_name, probe_problem, server_for
from simulation.scenario import parse_client, parse_gateway
from simulation.workload import parse_workload

ENGINES = ["vllm", "tgi", "naive", "triton"]
ENGINE_MODEL_KIND = {"vllm": "llm", "tgi": "llm", "naive": "llm", "triton": "vision"}  # what each one serves here

# An oci:// model is a KServe modelcar. KServe's pod webhook (v0.15 pkg/webhook/admission/pod/
# storage_initializer_injector.go: InjectModelcar, createModelContainer, createModelInitContainer; v0.16 on
# pkg/utils/storage.go: ConfigureModelcarToContainer, CreateModelcarContainer, CreateModelcarInitContainer, the
# same through v0.20) adds a `modelcar` sidecar whose securityContext is at most {runAsUser: uidModelcar} and a
# `modelcar-init` init container with none, whatever the inferenceservice-config says; and with `uidModelcar` set
# (1010 in the shipped config/configmap/inferenceservice.yaml) it replaced kserve-container's whole securityContext
# by {runAsUser: 1010} before v0.18 (kserve#5167 keeps the rest since). No setting gives those containers
# allowPrivilegeEscalation: false, which the stack's mandatory k8s-no-privilege-escalation rule and Pod Security
# `restricted` require of every container: the pod KServe creates breaks the policy the rendered one passes, and a
# restricted namespace refuses it (the revision or Deployment never gets a pod). So oci:// is refused.
OCI_REFUSED = ("expected an s3://, gs://, hf://, https:// or pvc:// URI: an oci:// model runs as a KServe "
               "modelcar, and KServe's pod webhook adds a `modelcar` sidecar and a `modelcar-init` init container "
               "without allowPrivilegeEscalation: false (and before KServe 0.18, with the shipped uidModelcar 1010, "
               "replaces the model container's securityContext by {runAsUser: 1010}), so the pod breaks the "
               "stack's mandatory k8s-no-privilege-escalation policy and Pod Security 'restricted' refuses it")


def default_startup_failures(load_s: float) -> int:
    """The startup probe's default failureThreshold: twice the expected model load in 10 s periods, at least 6
    (kserve-vllmserver.yaml uses period 30 × 60)."""
    return max(6, int(2 * load_s / 10) + 1)


def _probe(sec: Section, default_path: str, period: int, failures: int, initial: int, timeout: int) -> Probe:
    out = Probe(path=sec.str("path", default_path), period_s=sec.int("periodSeconds", period, min=1, max=3600),
                failure_threshold=sec.int("failureThreshold", failures, min=1, max=1000),
                initial_delay_s=sec.int("initialDelaySeconds", initial, min=0, max=3600),
                timeout_s=sec.int("timeoutSeconds", timeout, min=1, max=600))
    sec.done()
    return out


def _tolerations(sec: Section, taints: list[Taint]) -> list[Toleration]:
    if not sec.has("tolerations"):
        return [Toleration(t.key, "Equal", t.value, t.effect) for t in taints]
    out = []
    for t in sec.sections("tolerations"):
        op = t.choice("operator", ["Equal", "Exists"], "Equal")
        tol = Toleration(t.str("key", ""), op, t.str("value") if op == "Equal" else None,
                         t.choice("effect", TAINT_EFFECTS))
        check_format(t, "key", tol.key or None, QUALIFIED_NAME, "expected a taint key: an optional DNS subdomain "
                     "prefix and '/', then at most 63 letters, digits, '-', '_' or '.'")
        out.append(tol)
        t.done()
    for taint in taints:
        if taint.key and taint.effect != "PreferNoSchedule" and not any(tol.tolerates(taint) for tol in out):
            sec.problem("tolerations", sec.raw("tolerations"),
                        f"expected a toleration for the node group's taint {taint.key}={taint.value}:{taint.effect} "
                        "(otherwise the GPU pods stay Pending)")
    return out


def _slo(sec: Section) -> Slo | None:
    if not sec.data:
        sec.done()
        return None
    out = Slo(p99_latency_s=sec.float("p99LatencyS", 0.0, min=0, min_exclusive=True, required=True),
              max_error_rate=sec.float("maxErrorRate", 0.01, min=0, max=1),
              max_503_rate=sec.float("max503Rate", 0.01, min=0, max=1),
              max_cold_start_s=sec.float("maxColdStartS", None, min=0, min_exclusive=True),
              p99_ttft_s=sec.float("p99TtftS", None, min=0, min_exclusive=True))
    sec.done()
    return out


def _policy_waivers(sec: Section) -> dict[str, str]:
    """`policyWaivers: {<rule id>: <reason>}`: each waived rule with why. Whether the id names a rule that may be
    waived is the policy's to say (policy/waivers.py: the report and `preflight check` refuse it, exit 2)."""
    waivers = sec.str_map("policyWaivers", {})
    for rule, reason in waivers.items():
        if not rule.strip() or not reason.strip():
            sec.problem(f"policyWaivers.{rule}", reason, "expected a policy rule id (python -m policy.report "
                        "--rules) and a non-empty reason: why this service may break the rule")
    return {rule: reason.strip() for rule, reason in waivers.items() if rule.strip() and reason.strip()}


def parse_service(sec: Section, ctx: StackConfigContext) -> ServiceConfig:
    ng, catalog, cold = ctx.node_group, ctx.catalog, ctx.cold_start
    name = sec.str("name", "", required=True)
    if name and not matches(SERVICE_NAME, name):
        sec.problem("name", name, "expected a DNS-1035 label: lowercase letters, digits and '-', starting "
                    "with a letter, at most 42 characters (KServe appends '-predictor-…')")
    mode = MODES.get(sec.choice("deploymentMode", list(MODES), "Knative"), "Knative")
    min_r = sec.int("minReplicas", 1, min=0, max=1000)
    max_r = sec.int("maxReplicas", 0, min=1, max=1000, required=True)
    if max_r and min_r > max_r:
        sec.problem("minReplicas", min_r, f"expected minReplicas <= maxReplicas ({max_r})")
    if mode == "Standard" and min_r == 0:
        sec.problem("minReplicas", 0, "expected >= 1 in Standard (RawDeployment) mode: an HPA cannot scale to zero")
    cc = sec.int("containerConcurrency", None, min=0, max=KNATIVE_CC_MAX)
    metric_choices = ["concurrency", "rps"] if mode == "Knative" else ["cpu", "memory", "concurrency"]
    scale_metric = sec.choice("scaleMetric", metric_choices, "concurrency" if mode == "Knative" else "cpu")
    scale_target = sec.int("scaleTarget", None, min=1, max=100000)
    if mode == "Knative" and scale_metric == "concurrency" and cc and scale_target and scale_target > cc:
        sec.problem("scaleTarget", scale_target, f"expected <= containerConcurrency ({cc}); Knative caps the "
                    "target at containerConcurrency (pkg/reconciler/autoscaling/resources/target.go)")
    timeout = sec.int("timeout", None, min=1)
    if timeout is not None and timeout > KNATIVE_MAX_TIMEOUT_S:
        sec.problem("timeout", timeout, f"expected at most {KNATIVE_MAX_TIMEOUT_S} seconds "
                    "(Knative max-revision-timeout-seconds)")
    if mode == "Standard":
        for key, value in (("containerConcurrency", cc), ("timeout", timeout)):
            if value is not None:
                sec.problem(key, value, "expected none in Standard (RawDeployment) mode: there is no queue-proxy to "
                            "enforce it and KServe drops it; cap in-flight requests with the runtime's limits "
                            "(limits.maxBatchSize, --max-num-seqs) and time out at the client or gateway")
    annotations = parse_annotations(sec, cc, ctx.knative.autoscaler, min_r, max_r)
    if mode == "Standard" and annotations:
        sec.problem("annotations", annotations, "expected none in Standard mode: Knative annotations only act "
                    "in Knative mode; use hpa.behavior")
    hpa = sec.section("hpa")
    behavior = hpa.raw("behavior")
    if behavior is not None and not isinstance(behavior, dict):
        hpa.problem("behavior", behavior, "expected an autoscaling/v2 HorizontalPodAutoscalerBehavior mapping")
    elif behavior:
        check_hpa_behavior(hpa, behavior, ctx.cluster.kubernetes_version)
    pods_metric = hpa.str("podsMetric", "inflight_requests")
    if mode == "Knative" and hpa.data:
        sec.problem("hpa", hpa.data, "expected no hpa settings in Knative mode (the KPA scales it)")

    runtime = sec.section("runtime")
    engine = runtime.choice("engine", ENGINES, "vllm")
    model_format = runtime.str("modelFormat", MODEL_FORMATS[engine][0])
    image = runtime.str("image")
    check_image(runtime, "image", image)
    check_runtime(runtime, engine, image, model_format, ctx.kserve.version)
    args = runtime.str_list("args", [])
    env = runtime.str_map("env", {})
    for key in env:
        check_format(runtime, f"env.{key}", key, ENV_NAME, "expected an environment variable name: letters, "
                     "digits, '_', '-' and '.', not starting with a digit (no spaces)")
    check_env(runtime, env, mode == "Knative", ctx.kserve.version)
    runtime.done()
    scaler, prometheus, scrape_interval = check_keda(hpa, mode, scale_metric, engine)  # needs the engine
    hpa.done()

    msec = sec.section("model", required=True)
    model_name = msec.str("name", "", required=True)
    model = catalog.models.get(model_name)
    if model_name and model is None:
        msec.problem("name", model_name, "expected a model from the catalog: " + ", ".join(sorted(catalog.models))
                     + " (or add one under catalog.models)")
    storage_uri = msec.str("storageUri", "", required=True)
    check_storage_uri(msec, "storageUri", storage_uri)
    if storage_uri.startswith("oci://"):
        msec.problem("storageUri", storage_uri, OCI_REFUSED + (
            "; and the model cache's prefetch runs KServe's storage initializer, which cannot download one"
            if ctx.model_cache.enabled else ""))
    public = msec.bool("public", False)
    check_model_credentials(msec, storage_uri, public, ctx.model_cache)
    msec.done()
    if model is not None and ENGINE_MODEL_KIND.get(engine, model.kind) != model.kind:
        sec.problem("runtime.engine", engine, f"expected an engine that serves {model.kind} models ("
                    + ", ".join(e for e, k in ENGINE_MODEL_KIND.items() if k == model.kind)
                    + f") for {model.name}, or a {ENGINE_MODEL_KIND[engine]} model")
    model = model or catalog.models["llama-3-8b"]

    res = sec.section("resources")
    gpus = res.int("gpus", 1, min=1, max=16)
    # cpu "3": the default node type's (g6e.xlarge) 3,920m allocatable, less the DaemonSets (~350m) and Knative's
    # queue-proxy (25m), holds 3 cores and not 4 (manifests/node_fit.py); every built-in instance type fits it per GPU
    cpu, memory = res.quantity("cpu", "3"), res.quantity("memory", "24Gi")
    for key, value in (("cpu", cpu), ("memory", memory)):
        if not matches(QUANTITY, value):
            res.problem(key, value, "expected a Kubernetes quantity such as \"4\", \"500m\" or \"24Gi\"")
    check_serving_resources(res, engine, cpu, memory)
    res.done()
    if gpus > ng.gpus_per_node:
        sec.problem("resources.gpus", gpus, f"expected at most {ng.gpus_per_node}: a {ng.instance_types[0]} node has "
                    f"{ng.gpus_per_node} GPU(s) and a pod cannot span nodes")
    if engine in ("vllm", "tgi") and model_name in catalog.models and (bad_tp := heads_problem(model, gpus, engine)):
        # KServe runs vLLM (huggingfaceserver, or vLLM's own server given --tensor-parallel-size) and TGI (one
        # shard per visible GPU) with tensor parallelism = the pod's GPUs (simulation/gpu/tensor_parallel.py).
        sizes = ", ".join(map(str, shard_sizes(model, ng.gpus_per_node, engine)))
        sec.problem("resources.gpus", gpus, f"expected a GPU count that evenly splits the query heads, KV heads "
                    f"and MLP of service {name or '?'}'s model: {sizes} on a {ng.instance_types[0]} node. "
                    f"{engine} runs one tensor-parallel shard per GPU and {bad_tp}")
    if max_r * gpus > ng.gpu_capacity:
        sec.problem("maxReplicas", max_r, f"expected at most {ng.gpu_capacity // gpus}: the node group holds "
                    f"maxSize {ng.max_size} × {ng.gpus_per_node} GPU(s) = {ng.gpu_capacity} GPUs and each replica "
                    f"needs {gpus}")

    lim = sec.section("limits")
    caps = InputCaps(lim.int("maxInputTokens", None, min=1), lim.int("maxNewTokens", None, min=1),
                     lim.int("maxBatchSize", None, min=1, max=4096), lim.int("maxImagePixels", None, min=1),
                     lim.int("maxQueueDelayMicroseconds", None, min=0, max=60_000_000),
                     lim.int("maxQueueSize", None, min=0, max=1_000_000),
                     lim.int("maxConcurrentRequests", None, min=1, max=1_000_000))
    if engine != "triton":
        for key in ("maxQueueDelayMicroseconds", "maxQueueSize"):
            if key in lim.data:
                lim.problem(key, lim.data[key], "expected only with runtime.engine triton (its config.pbtxt "
                            "dynamic_batching)")
    if engine != "tgi" and "maxConcurrentRequests" in lim.data:
        # Only TGI's router has an admission limit (text-generation-launcher --max-concurrent-requests); vLLM and
        # KServe's Python server queue without one, Triton's is its dynamic batcher's maxQueueSize.
        lim.problem("maxConcurrentRequests", lim.data["maxConcurrentRequests"], "expected only with "
                    "runtime.engine tgi (its --max-concurrent-requests); cap the others with maxBatchSize, or "
                    "maxQueueSize for triton")
    lim.done()
    util = sec.float("gpuMemoryUtilization", 0.9, min=0.1, max=0.99)
    pod_gpu_bytes = ng.gpu.memory_bytes * gpus
    if model.weights_bytes > pod_gpu_bytes * (util if engine == "vllm" else 1.0):
        where = f"{gpus} × {ng.gpu.name} ({ng.gpu.memory_gib:g} GiB each" + (
            f", × gpuMemoryUtilization {util:g})" if engine == "vllm" else ")")
        sec.problem("model.name", model.name, f"expected a model that fits in GPU memory: its weights take "
                    f"{model.weights_gib:.1f} GiB but the pod has {where}; use more GPUs per pod, a bigger GPU "
                    "or a smaller/quantized model")
    if model.kind == "llm":
        check_context(sec, engine, caps, model)

    cache_hit = ctx.model_cache.enabled
    # The first pods of a revision load together, sharing the cache's reads; at the first `pulumi up` with every
    # other service's (`startup_at_first_deploy` sizes and checks the startup probe for that, once all are read).
    readers = first_pods(mode, min_r or 0, annotations, ctx.knative.autoscaler.initial_scale)
    load_s = expected_load_s(model, cold, cache_hit, load_gbps(cold, ctx.model_cache, readers),
                             storage_uri=storage_uri)
    # Provisional: `startup_at_first_deploy` sets the default failureThreshold and the load once all services are read.
    startup_failures = default_startup_failures(load_s)
    probes = sec.section("probes")
    server = server_for(engine, image)
    served_as = kserve_model_name(name, args) if server == KSERVE_PYTHON else None  # `--model_name={name}` + args
    ready_path, live_path = health_paths(engine, image, served_as)  # what the server that runs answers (runtimes.py)
    startup = _probe(probes.section("startup"), ready_path, 10, startup_failures, 0, 5)
    readiness = _probe(probes.section("readiness"), ready_path, 10, 3, 0, 5)
    liveness = _probe(probes.section("liveness"), live_path, 15, 4, 0, 5)
    # Each path against the routes the server that runs answers (simulation/probe_routes.py): a 404 is never
    # Ready, and a readiness or startup probe on a liveness route can pass while the model cannot serve.
    for key, probe in (("startup", startup), ("readiness", readiness), ("liveness", liveness)):
        why = probe_problem(server, key, probe.path, served_as, args, env)
        if why:
            probes.problem(f"{key}.path", probe.path, why)
    probes.done()

    alloc = sec.str("pytorchCudaAllocConf", default_alloc_conf(engine, gpus))
    raw_profile = sec.data.get("engineProfile")
    pod = Pod(gpus, mode, vllm_scheduler(env, raw_profile.get("scheduler") if isinstance(raw_profile, dict) else None),
              model, served_context(engine, image, args, caps, model),
              node_memory_gib([catalog.instances.get(t) for t in ng.instance_types]))
    check_alloc_conf(sec, engine, alloc, env, args, pod)
    tolerations = _tolerations(sec, ng.taints)
    node_selector = sec.str_map("nodeSelector", dict(GPU_LABEL))
    for key, value in node_selector.items():
        if ng.labels.get(key) != value:
            sec.problem(f"nodeSelector.{key}", value, f"expected a label the GPU node group sets: {ng.labels}")

    # The gate's inputs, checked now with the simulation's own parsers so a mistake stops `pulumi up` early.
    workload, client, gateway = sec.raw("workload"), sec.raw("client"), sec.raw("gateway")
    if workload is not None:
        parse_workload(Section(workload, sec.key_path("workload"), sec.problems), base_dir=str(PROJECT_ROOT))
    if client is not None:
        parse_client(Section(client, sec.key_path("client"), sec.problems))
    if gateway is not None:
        parse_gateway(Section(gateway, sec.key_path("gateway"), sec.problems))
    slo = _slo(sec.section("slo"))
    if scale_metric == "memory" and slo is not None and workload is not None:
        sec.problem("scaleMetric", "memory", "expected cpu or concurrency for a service the SLO gate simulates: a "
                    "model server's memory does not follow its load, so the gate cannot predict a memory HPA "
                    "(simulation/autoscaler/kserve_hpa.py); or remove slo/workload to deploy it ungated")
    engine_profile = parse_engine_profile(sec.section("engineProfile"), engine)
    if engine == "vllm":
        _check_startup_utilization(sec, util, ng.gpu, gpus, engine_profile.get("overhead_gib"))
    stress = parse_stress(sec.section("stress"))
    allow_zero = sec.bool("allowScaleToZero", ctx.environment != "prod")
    waivers = _policy_waivers(sec)
    if min_r == 0 and not allow_zero:
        sec.problem("minReplicas", 0, f"expected >= 1 in {ctx.environment}: scale-to-zero makes the first request "
                    f"wait for a ~{load_s:.0f} s GPU cold start; set allowScaleToZero: true to accept that")
    sec.done()
    svc = ServiceConfig(
        name=name, namespace=ctx.cluster.namespace, deployment_mode=mode, min_replicas=min_r,
        max_replicas=max_r, container_concurrency=cc, scale_metric=scale_metric, scale_target=scale_target,
        timeout_s=timeout, annotations=annotations, hpa_behavior=behavior, hpa_pods_metric=pods_metric,
        hpa_scaler=scaler, prometheus_address=prometheus, prometheus_scrape_interval_s=scrape_interval,
        engine=engine, model_format=model_format, image=image, args=args, env=env, model=model,
        storage_uri=storage_uri, gpus=gpus, cpu=cpu, memory=memory, startup_probe=startup,
        readiness_probe=readiness, liveness_probe=liveness, caps=caps, gpu_memory_utilization=util,
        pytorch_cuda_alloc_conf=alloc, tolerations=tolerations, node_selector=node_selector,
        workload=workload, client=client, gateway=gateway, slo=slo, allow_scale_to_zero=allow_zero,
        expected_load_s=round(load_s, 1),
        engine_profile=engine_profile,
        stress=stress, model_public=public, policy_waivers=waivers,
    )
    check_rendered_flags(sec, svc)   # runtime.args beside the flags the stack renders from these settings
    return svc


def read_from_cache(storage_uri: str) -> bool:
    """Whether a service's model goes through the model cache (when it is enabled): every source but a PVC of
    the user's own (`pvc://`), which KServe mounts as it is (manifests/model_cache.py)."""
    return not storage_uri.startswith("pvc://")


def readers_together(services: Sequence[ServiceConfig], svc: ServiceConfig, cluster_default: int = 1,
                     first_deploy: bool = True) -> int:
    """Pods that read the model cache at the same time as `svc`'s first pods: the `readers` of `load_gbps`.

    In a rollout of `svc` alone (`first_deploy=False`), its new revision's first pods (`first_pods`). At the first
    `pulumi up` every InferenceService is created at once, after the prefetch DaemonSet is Ready (program.py:
    `depends_on`), so the first pods of every service read from the cache load together: their sum (the
    simulation shares the reads fleet-wide the same way: simulation/cluster.py). A service that reads a PVC of
    its own counts its own pods only."""
    def pods(s: ServiceConfig) -> int:
        return first_pods(s.deployment_mode, s.min_replicas, s.annotations, cluster_default)
    if not first_deploy or not read_from_cache(svc.storage_uri):
        return pods(svc)
    return sum(pods(s) for s in services if read_from_cache(s.storage_uri))


def startup_at_first_deploy(secs: list[Section], services: list[ServiceConfig],
                            ctx: StackConfigContext) -> list[ServiceConfig]:
    """The startup probe against the expected model load of the first `pulumi up`, where the first pods of every
    service read from the model cache load together (`readers_together`; a rollout of one
    service shares the reads with fewer): its default failureThreshold (`default_startup_failures`) and the
    refusal of a stated budget below the load."""
    cold, mc, out = ctx.cold_start, ctx.model_cache, []
    for sec, svc in zip(secs, services):
        readers = readers_together(services, svc, ctx.knative.autoscaler.initial_scale)
        load_s = expected_load_s(svc.model, cold, mc.enabled, load_gbps(cold, mc, readers),
                                 storage_uri=svc.storage_uri)
        startup = svc.startup_probe
        stated = sec.data.get("probes")
        stated = stated.get("startup") if isinstance(stated, dict) else None
        if not (isinstance(stated, dict) and "failureThreshold" in stated):
            startup = replace(startup, failure_threshold=default_startup_failures(load_s))
        svc = replace(svc, startup_probe=startup, expected_load_s=round(load_s, 1))
        out.append(svc)
        # The kubelet's probe ticks run from the pod's admission, so the f-th failure can land one period early.
        budget = startup_budget(startup.initial_delay_s, startup.period_s, startup.failure_threshold)
        if budget >= load_s:
            continue
        shared = "" if load_s <= expected_load_s(svc.model, cold, mc.enabled, load_gbps(cold, mc),
                                                 storage_uri=svc.storage_uri) else (
            f" ({readers} pods load at once at the first `pulumi up` and share the model cache's "
            f"{cache_read_mib_s(mc):g} MiB/s of reads: modelCache.throughputMode {mc.throughput_mode})")
        stated_budget = {"periodSeconds": startup.period_s, "failureThreshold": startup.failure_threshold}
        sec.problem("probes.startup", stated_budget,
                    f"expected a startup budget (initialDelaySeconds + periodSeconds × (failureThreshold − 1) = "
                    f"{budget} s: the kubelet may kill on the failureThreshold-th probe tick, up to one period "
                    f"early) of at least the expected model load time {load_s:.0f} s{shared}, or the kubelet "
                    "restarts the pod before the model is loaded: failureThreshold at least "
                    f"{startup_failures_needed(startup.initial_delay_s, startup.period_s, load_s)}")
    return out


def _check_startup_utilization(sec: Section, util: float, gpu: Gpu, gpus: int, non_torch_gib: float | None) -> None:
    """vLLM V1 refuses to start when the memory free at start-up is below total × gpuMemoryUtilization
    (`memory.max_startup_utilization`); KServe runs it with tensor parallelism = the pod's GPUs (NCCL up too)."""
    top = max_startup_utilization(gpu, gpus, non_torch_gib)
    if util > top:
        total = gpu.cuda_total_bytes / GIB
        sec.problem("gpuMemoryUtilization", util, f"expected at most {math.floor(top * 1000) / 1000:.3f} on "
                    f"{gpu.name}: vLLM asks for {util:g} × {total:.2f} GiB = {util * total:.2f} GiB at start-up but "
                    f"only {top * total:.2f} GiB are free once the CUDA context{' and NCCL' if gpus > 1 else ''} "
                    "take theirs, and it exits with 'Free memory on device … is less than desired GPU memory "
                    "utilization' (vllm/v1/worker/gpu_worker.py Worker.init_device)")
