"""The platform rules, written once as pure functions over the resources a Pulumi program registers.

Each `Rule` has an id, a severity (mandatory blocks, advisory warns), the guide it encodes, and a `check(res, ctx)`
that yields one message per problem, each naming what to change. The same rules run in three places:

- pytest (`tests/policy/`), over the resources the real program registers under mocks (offline/__init__.py);
- the CrossGuard pack (`policy/pack.py`, wrapped by `policy/__main__.py` for `pulumi preview --policy-pack policy`);
- the report command (`python -m policy.report --stack prod`).

A resource is seen the way CrossGuard sees it: the type token, the camelCase input props (numbers may be floats,
gotcha 2 of ../shared/reference/pulumi-offline-testing.md; nested values may be read-only Mapping/Sequence
proxies) and the options that matter here (`protect`, `ignore_changes`). Rules marked `stack=True` need the other
resources too (the node group's taint and GPU capacity, the stack's environment, the HPA of a Standard-mode
service); CrossGuard runs those as stack policies, the rest as resource policies.

Guide references ("000 §9.3") point at ../shared/guides/: 000 = 429·OOM guide (000_a00cd7db9fb71cbf.txt),
001 = 503·cold-start guide (001_d4c8dfe36be99b5d.txt), 004 = LLM autoscaling guide (004_dc55575d102eb0ac.txt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Optional

from validation.kubernetes import GPU_RESOURCE, KNATIVE_MAX_TIMEOUT_S, image_pinned, parse_duration, tolerates

MANDATORY = "mandatory"
ADVISORY = "advisory"

ISVC_TYPE = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
HPA_TYPES = ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler")
SCALED_OBJECT_TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"  # KEDA; its HPA is keda-hpa-<name>
NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
DEFAULT_GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
KNATIVE_DEFAULT_TIMEOUT_S = 300  # revision-timeout-seconds default
ANN = "preflight.kserve.io/"
RECOMMENDED_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
                      "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by")
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
POD_TEMPLATE_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController"}
# KServe predictor specs that are containers (ModelSpec and the older framework shortcuts).
PREDICTOR_CONTAINER_KEYS = ("model", "pytorch", "tensorflow", "triton", "sklearn", "xgboost", "onnx",
                            "huggingface", "lightgbm", "pmml", "paddle")
PYTORCH_ENGINES = {"vllm", "tgi", "naive"}
PYTORCH_FORMATS = {"huggingface", "pytorch"}
INPUT_CAP_FLAGS = ("--max-model-len", "--max_model_len", "--max-input-tokens", "--max-input-length",
                   "--max_length", "--max-total-tokens", "--max_input_length")
# Triton reads its caps from the model's config.pbtxt; the stack declares them as these annotations
# (manifests/inference_service.py). No runtime reads a MAX_* environment variable, so none counts as a cap.
INPUT_CAP_ANNOTATIONS = ("preflight.kserve.io/triton-max-image-pixels",)
BATCH_CAP_FLAGS = ("--max-num-seqs", "--max_num_seqs", "--max-batch-size", "--max_batch_size",
                   "--max-num-batched-tokens", "--max-batch-total-tokens", "--max-concurrent-requests")
BATCH_CAP_ANNOTATIONS = ("preflight.kserve.io/triton-max-batch-size",)


# ---------------------------------------------------------------------------------------------------------------
# The resource view
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resource:
    """One registered resource as a policy sees it."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    protect: bool = False
    ignore_changes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def label(self) -> str:
        """`Kind/name` for messages (the Kubernetes name where there is one)."""
        meta = _map(self.props.get("metadata"))
        return f"{self.kind}/{meta.get('name') or self.name}"


@dataclass(frozen=True)
class Violation:
    rule: str
    severity: str
    resource_type: str
    resource_name: str
    urn: str
    message: str

    @property
    def mandatory(self) -> bool:
        return self.severity == MANDATORY


@dataclass
class Context:
    """What stack-level rules know about the rest of the stack."""

    resources: list[Resource] = field(default_factory=list)
    environment: Optional[str] = None
    taints: list[dict] = field(default_factory=lambda: [dict(DEFAULT_GPU_TAINT)])  # Kubernetes spelling
    gpu_labels: dict[str, str] = field(default_factory=dict)
    gpu_capacity: Optional[int] = None  # Σ maxSize × GPUs per node over the GPU node groups
    node_groups: list[Resource] = field(default_factory=list)

    @classmethod
    def of(cls, resources: Iterable[Resource]) -> "Context":
        resources = list(resources)
        ctx = cls(resources=resources)
        groups = [r for r in resources if r.type == NODE_GROUP_TYPE and is_gpu_node_group(r)]
        ctx.node_groups = groups
        taints = [t for g in groups for t in node_group_taints(g)]
        if taints:
            ctx.taints = taints
        for g in groups:
            ctx.gpu_labels.update({str(k): str(v) for k, v in _map(g.props.get("labels")).items()})
        if groups:
            caps = [node_group_capacity(g) for g in groups]
            ctx.gpu_capacity = None if any(c is None for c in caps) else sum(caps)
        for g in groups:
            env = _map(g.props.get("tags")).get("environment")
            if env:
                ctx.environment = str(env)
                break
        if ctx.environment is None:
            for r in resources:
                stack = urn_stack(r.urn)
                if stack:
                    ctx.environment = stack
                    break
        return ctx

    def of_type(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]


# ---------------------------------------------------------------------------------------------------------------
# Small readers (tolerant of proxies, floats and missing keys)
# ---------------------------------------------------------------------------------------------------------------
def _map(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list:
    return list(value) if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else []


def num(value: Any) -> Optional[float]:
    """A number from an int, a float (mocks send 1.0) or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def fmt(value: Optional[float]) -> str:
    return "unset" if value is None else f"{value:g}"


def duration_s(text: Any) -> Optional[float]:
    """A Go/Knative duration string ("90s", "5m", "1h30m"), or a bare number of seconds (HPA fields)."""
    value = num(text)
    return value if value is not None else parse_duration(text)


def urn_stack(urn: str) -> Optional[str]:
    """`urn:pulumi:<stack>::<project>::...` → stack."""
    if urn.startswith("urn:pulumi:"):
        return urn[len("urn:pulumi:"):].split("::", 1)[0] or None
    return None


def metadata(res: Resource) -> Mapping:
    return _map(res.props.get("metadata"))


def annotations(res: Resource) -> Mapping:
    return _map(metadata(res).get("annotations"))


def is_kubernetes(res: Resource) -> bool:
    return res.type.startswith("kubernetes:") and not res.type.startswith("kubernetes:helm")


def is_isvc(res: Resource) -> bool:
    return res.type == ISVC_TYPE or (res.type.startswith("kubernetes:serving.kserve.io/")
                                     and res.kind == "InferenceService")


def predictor(res: Resource) -> Mapping:
    return _map(_map(res.props.get("spec")).get("predictor"))


def deployment_mode(res: Resource) -> str:
    """Knative (KServe's default, a.k.a. Serverless) or Standard (a.k.a. RawDeployment)."""
    mode = str(annotations(res).get("serving.kserve.io/deploymentMode", "Knative"))
    return "Standard" if mode in ("Standard", "RawDeployment") else "Knative"


def pod_spec(res: Resource) -> Mapping:
    """The pod spec of a workload; for an InferenceService, its predictor (KServe inlines the PodSpec there)."""
    if is_isvc(res):
        return predictor(res)
    spec = _map(res.props.get("spec"))
    if res.kind in POD_TEMPLATE_KINDS:
        return _map(_map(spec.get("template")).get("spec"))
    if res.kind == "CronJob":
        return _map(_map(_map(_map(spec.get("jobTemplate")).get("spec")).get("template")).get("spec"))
    if res.kind == "Pod":
        return spec
    return {}


def containers(res: Resource) -> list[Mapping]:
    """Every container a workload runs (init containers included)."""
    spec = pod_spec(res)
    out = [_map(c) for c in _list(spec.get("containers")) + _list(spec.get("initContainers"))]
    if is_isvc(res):
        out += [_map(spec.get(k)) for k in PREDICTOR_CONTAINER_KEYS if isinstance(spec.get(k), Mapping)]
    return out


def has_pods(res: Resource) -> bool:
    return is_kubernetes(res) and (is_isvc(res) or res.kind in POD_TEMPLATE_KINDS | {"CronJob", "Pod"})


def container_gpus(c: Mapping) -> float:
    res = _map(c.get("resources"))
    return max(num(_map(res.get("limits")).get(GPU_RESOURCE)) or 0.0,
               num(_map(res.get("requests")).get(GPU_RESOURCE)) or 0.0)


def gpu_limit(c: Mapping) -> float:
    return num(_map(_map(c.get("resources")).get("limits")).get(GPU_RESOURCE)) or 0.0


def isvc_gpus(res: Resource) -> int:
    """GPUs one predictor replica asks for (at least 1 for a GPU service, so capacity maths stay conservative)."""
    return max(1, int(max((container_gpus(c) for c in containers(res)), default=0)))


def tolerations(res: Resource) -> list[Mapping]:
    return [_map(t) for t in _list(pod_spec(res).get("tolerations"))]


def mentions_gpu(res: Resource) -> bool:
    spec = pod_spec(res)
    return (any(str(t.get("key", "")) == GPU_RESOURCE for t in tolerations(res))
            or any("gpu" in str(k).lower() for k in _map(spec.get("nodeSelector"))))


def is_gpu_isvc(res: Resource) -> bool:
    """An InferenceService meant for GPUs: it asks for one, selects/tolerates GPU nodes, or names its engine."""
    return is_isvc(res) and (any(container_gpus(c) > 0 for c in containers(res)) or mentions_gpu(res)
                             or ANN + "engine" in annotations(res))


def isvc_name(res: Resource) -> str:
    return str(metadata(res).get("name") or res.name)


def is_device_plugin(res: Resource) -> bool:
    return res.kind == "DaemonSet" and is_kubernetes(res) and (
        "nvidia-device-plugin" in str(metadata(res).get("name", ""))
        or any("k8s-device-plugin" in str(c.get("image", "")) for c in containers(res)))


def _component(res: Resource) -> str:
    return str(_map(metadata(res).get("labels")).get("app.kubernetes.io/component", ""))


def is_model_cache_pvc(res: Resource) -> bool:
    return res.kind == "PersistentVolumeClaim" and is_kubernetes(res) and (
        _component(res) == "model-cache" or "model-cache" in str(metadata(res).get("name", "")) + res.name)


def is_model_cache_daemonset(res: Resource) -> bool:
    return res.kind == "DaemonSet" and is_kubernetes(res) and (
        _component(res) == "model-cache" or "model-cache" in str(metadata(res).get("name", "")) + res.name)


def node_group_taints(res: Resource) -> list[dict]:
    """The node group's taints in Kubernetes spelling (EKS says NO_SCHEDULE, a toleration NoSchedule)."""
    out = []
    for t in _list(res.props.get("taints")):
        t = _map(t)
        effect = str(t.get("effect", ""))
        out.append({"key": str(t.get("key", "")), "value": str(t.get("value", "") or ""),
                    "effect": EKS_EFFECTS.get(effect, effect)})
    return out


def is_gpu_node_group(res: Resource) -> bool:
    ami = str(res.props.get("amiType", ""))
    labels = _map(res.props.get("labels"))
    return ("NVIDIA" in ami or "GPU" in ami or any("gpu" in str(k).lower() for k in labels)
            or any(t["key"] == GPU_RESOURCE for t in node_group_taints(res))
            or bool(_gpus_from_instance_types(res)))


def _gpus_from_instance_types(res: Resource) -> Optional[int]:
    try:
        from catalog import DEFAULT
    except ImportError:  # the pack runs without the project on sys.path
        return None
    counts = [DEFAULT.instances[t].gpus for t in map(str, _list(res.props.get("instanceTypes")))
              if t in DEFAULT.instances]
    return min(counts) if counts else None


def gpus_per_node(res: Resource) -> Optional[int]:
    """From the cluster-autoscaler node-template tag the stack sets, else from the instance type catalog."""
    tag = num(_map(res.props.get("tags")).get(f"k8s.io/cluster-autoscaler/node-template/resources/{GPU_RESOURCE}"))
    if tag:
        return int(tag)
    return _gpus_from_instance_types(res)


def node_group_capacity(res: Resource) -> Optional[int]:
    size, per_node = num(_map(res.props.get("scalingConfig")).get("maxSize")), gpus_per_node(res)
    if size is None or per_node is None:
        return None
    return int(size) * per_node


def hpas_for(res: Resource, ctx: Context) -> list[Resource]:
    """The HPAs and KEDA ScaledObjects scaling this InferenceService's predictor Deployment (`<name>-predictor`,
    same namespace)."""
    name, ns = isvc_name(res), metadata(res).get("namespace")
    out = []
    for hpa in ctx.of_type(*HPA_TYPES, SCALED_OBJECT_TYPE):
        ref = _map(_map(hpa.props.get("spec")).get("scaleTargetRef"))
        if ref.get("name") == f"{name}-predictor" and metadata(hpa).get("namespace") == ns:
            out.append(hpa)
    return out


def autoscaler_behavior(hpa: Resource) -> Mapping:
    """An HPA's `spec.behavior`, or a ScaledObject's `spec.advanced.horizontalPodAutoscalerConfig.behavior`
    (which KEDA copies into the HPA it creates)."""
    spec = _map(hpa.props.get("spec"))
    if hpa.type == SCALED_OBJECT_TYPE:
        return _map(_map(_map(spec.get("advanced")).get("horizontalPodAutoscalerConfig")).get("behavior"))
    return _map(spec.get("behavior"))


def _env(c: Mapping) -> dict[str, str]:
    return {str(_map(e).get("name")): str(_map(e).get("value", "")) for e in _list(c.get("env"))}


def _args(c: Mapping) -> list[str]:
    return [str(a) for a in _list(c.get("args")) + _list(c.get("command"))]


def _has_flag(args: list[str], flags: Iterable[str]) -> bool:
    return any(a == f or a.startswith(f + "=") for a in args for f in flags)


# ---------------------------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------------------------
Check = Callable[[Resource, Context], Iterable[str]]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    title: str  # what it checks, one line
    source: str  # the guide section it encodes
    applies: Callable[[Resource], bool]
    check: Check
    stack: bool = False  # needs the other resources (Context): a CrossGuard stack policy

    def run(self, res: Resource, ctx: Context) -> list[Violation]:
        if not self.applies(res):
            return []
        return [Violation(self.id, self.severity, res.type, res.name, res.urn, msg) for msg in self.check(res, ctx)]


RULES: list[Rule] = []


def rule(id: str, severity: str, title: str, source: str, applies: Callable[[Resource], bool], stack: bool = False):
    def register(fn: Check) -> Check:
        RULES.append(Rule(id, severity, title, source, applies, fn, stack))
        return fn
    return register


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
               "on the GPU at once (429s from the queue, CUDA OOM). Set containerConcurrency to what one replica "
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


def _probe_budget(probe: Mapping) -> float:
    """initialDelaySeconds + periodSeconds × failureThreshold with the kubelet's defaults (0, 10, 3)."""
    delay = num(probe.get("initialDelaySeconds")) or 0.0
    period = num(probe.get("periodSeconds")) or 10.0
    failures = num(probe.get("failureThreshold")) or 3.0
    return delay + period * failures


def _failures_needed(probe: Mapping, load: float) -> int:
    delay = num(probe.get("initialDelaySeconds")) or 0.0
    period = num(probe.get("periodSeconds")) or 10.0
    return int(-(-(load - delay) // period))


def _serving_containers(res: Resource) -> list[Mapping]:
    spec = pod_spec(res)
    return [_map(spec.get(k)) for k in PREDICTOR_CONTAINER_KEYS if isinstance(spec.get(k), Mapping)] + \
        [_map(c) for c in _list(spec.get("containers"))[:1]]


@rule("isvc-startup-probe", MANDATORY,
      "A startupProbe whose budget (initialDelay + period × failureThreshold) covers the expected model load",
      "001 §4, §10-1; 004 §2", is_gpu_isvc)
def _startup_probe(res: Resource, ctx: Context) -> Iterator[str]:
    """Budget against `preflight.kserve.io/expected-load-seconds`; without that annotation only presence is checked."""
    load = num(annotations(res).get(ANN + "expected-load-seconds"))
    for c in _serving_containers(res)[:1]:
        probe = c.get("startupProbe")
        if not isinstance(probe, Mapping):
            yield (f"{res.label}: no startupProbe, so the liveness probe kills the pod while the model is still "
                   "loading (CrashLoopBackOff, 503s after each deploy). Add a startupProbe on the ready endpoint with "
                   "periodSeconds × failureThreshold at least the expected load time"
                   + (f" ({load:g} s)." if load else "."))
            continue
        budget = _probe_budget(probe)
        if load and budget < load:
            yield (f"{res.label}: startupProbe budget is {budget:g} s (initialDelaySeconds + periodSeconds × "
                   f"failureThreshold) but the model is expected to take {load:g} s to load "
                   f"({ANN}expected-load-seconds); the kubelet restarts it before it is ready. Raise failureThreshold "
                   f"to at least {_failures_needed(probe, load)} (or periodSeconds).")


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


def _is_pytorch(res: Resource) -> bool:
    """vLLM, TGI and plain Transformers run on PyTorch; without the engine annotation, go by the model format."""
    engine = str(annotations(res).get(ANN + "engine", ""))
    if engine:
        return engine in PYTORCH_ENGINES
    model_format = _map(_map(predictor(res).get("model")).get("modelFormat")).get("name", "")
    return str(model_format) in PYTORCH_FORMATS


@rule("isvc-pytorch-alloc-conf", MANDATORY,
      "PyTorch runtimes (vLLM, TGI, Transformers) set PYTORCH_CUDA_ALLOC_CONF", "000 §5, §8",
      lambda r: is_gpu_isvc(r) and _is_pytorch(r))
def _alloc_conf(res: Resource, ctx: Context) -> Iterator[str]:
    _, env = _all_args_env(res)
    if not env.get("PYTORCH_CUDA_ALLOC_CONF"):
        yield (f"{res.label}: PYTORCH_CUDA_ALLOC_CONF is not set, so the CUDA caching allocator fragments under "
               "variable-length batches and OOMs with free memory left. Set env PYTORCH_CUDA_ALLOC_CONF="
               "expandable_segments:True (stack: pytorchCudaAllocConf).")


@rule("isvc-scale-down-stabilization", MANDATORY,
      "Spiky traffic: a scale-down delay / stable window (Knative) or scaleDown stabilization window (HPA)",
      "004 §5, §8; 001 §5", lambda res: is_gpu_isvc(res) and annotations(res).get(
          "preflight.kserve.io/traffic", "spiky") == "spiky", stack=True)
def _scale_down(res: Resource, ctx: Context) -> Iterator[str]:
    """Applies where traffic is spiky: the `preflight.kserve.io/traffic` annotation, derived from the service's
    workload by `stackconfig.schema.traffic_shape` (gamma CV > 1, step, spike, trace; a missing annotation counts
    as spiky). A GPU replica takes minutes to bring back, so removing it right after a burst makes it flap."""
    ann = annotations(res)
    if deployment_mode(res) == "Knative":
        delay = duration_s(ann.get("autoscaling.knative.dev/scale-down-delay"))
        window = duration_s(ann.get("autoscaling.knative.dev/window"))
        if not delay and not window:
            yield (f"{res.label}: neither autoscaling.knative.dev/scale-down-delay nor autoscaling.knative.dev/window "
                   "is set, so a GPU replica is removed ~60 s after a spike and the next spike pays a cold start "
                   "(flapping). Set scale-down-delay (e.g. \"5m\") and/or window (e.g. \"120s\").")
        return
    for hpa in hpas_for(res, ctx):
        down = _map(autoscaler_behavior(hpa).get("scaleDown"))
        if not num(down.get("stabilizationWindowSeconds")):
            yield (f"{res.label}: {hpa.label} has no behavior.scaleDown.stabilizationWindowSeconds, so replicas "
                   "flap with spiky traffic. Set it (e.g. 600) with a slow scale-down policy (stack: hpa.behavior).")


# --- Images (every workload) ------------------------------------------------------------------------------------
@rule("image-tag-pinned", MANDATORY, "Every container image has a pinned tag or digest (no latest, no missing tag)",
      "001 §6; 004 §6", has_pods)
def _image_pinned(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        image = c.get("image")
        if image is not None and not image_pinned(str(image)):
            yield (f"{res.label}: container {c.get('name') or 'model'!s} uses image {image!r} without a pinned tag, "
                   "so nodes pull different builds (and re-pull on every cold start). Pin a version tag or "
                   "@sha256 digest.")


# --- Node group -------------------------------------------------------------------------------------------------
def _is_gpu_ng(res: Resource) -> bool:
    return res.type == NODE_GROUP_TYPE and is_gpu_node_group(res)


@rule("nodegroup-gpu-taint", MANDATORY, "The GPU node group carries the nvidia.com/gpu NoSchedule taint",
      "001 §7, §10-3", _is_gpu_ng)
def _ng_taint(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(t["key"] == GPU_RESOURCE and t["effect"] in ("NoSchedule", "NoExecute")
               for t in node_group_taints(res)):
        yield (f"{res.label}: no {GPU_RESOURCE} taint, so CPU pods fill the expensive GPU nodes and block GPU "
               f"pods. Add taints [{{key: {GPU_RESOURCE}, value: \"true\", effect: NO_SCHEDULE}}].")


@rule("nodegroup-desired-size-ignored", MANDATORY,
      "Pulumi ignores scalingConfig.desiredSize (the cluster autoscaler owns it)", "004 §4; 001 §10-3", _is_gpu_ng)
def _ng_desired(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(p in ("scalingConfig.desiredSize", "scalingConfig") for p in res.ignore_changes):
        yield (f"{res.label}: desiredSize is managed by Pulumi, so every `pulumi up` resets the node count the "
               "cluster autoscaler chose (draining GPU nodes under load). Add "
               "ignore_changes=[\"scalingConfig.desiredSize\"] to the NodeGroup's resource options.")


def _services(ctx: Context) -> list[Resource]:
    return [r for r in ctx.resources if is_gpu_isvc(r)]


@rule("nodegroup-capacity", MANDATORY,
      "minSize <= maxSize, and maxSize × GPUs per node covers every GPU service's minReplicas",
      "001 §10-2, §10-3; 004 §6", _is_gpu_ng, stack=True)
def _ng_capacity(res: Resource, ctx: Context) -> Iterator[str]:
    scaling = _map(res.props.get("scalingConfig"))
    min_s, max_s = num(scaling.get("minSize")), num(scaling.get("maxSize"))
    if min_s is not None and max_s is not None and min_s > max_s:
        yield f"{res.label}: minSize {fmt(min_s)} > maxSize {fmt(max_s)}. Set minSize <= maxSize."
    capacity, per_node = node_group_capacity(res), gpus_per_node(res)
    if capacity is None:
        return
    needed = sum((num(predictor(s).get("minReplicas")) if num(predictor(s).get("minReplicas")) is not None else 1)
                 * isvc_gpus(s) for s in _services(ctx))
    if needed > capacity:
        yield (f"{res.label}: the services' minReplicas need {fmt(needed)} GPUs but maxSize {fmt(max_s)} × "
               f"{per_node} GPU(s) per node = {capacity}; warm replicas stay Pending. Raise maxSize to at least "
               f"{-(-int(needed) // per_node)} or lower minReplicas.")


@rule("nodegroup-fits-peak", ADVISORY,
      "maxSize × GPUs per node covers every GPU service at maxReplicas at once", "001 §10-2", _is_gpu_ng, stack=True)
def _ng_peak(res: Resource, ctx: Context) -> Iterator[str]:
    capacity, per_node = node_group_capacity(res), gpus_per_node(res)
    if capacity is None:
        return
    peak = sum((num(predictor(s).get("maxReplicas")) or 0) * isvc_gpus(s) for s in _services(ctx))
    if peak > capacity:
        yield (f"{res.label}: all services at maxReplicas need {fmt(peak)} GPUs but the node group holds "
               f"{capacity}; simultaneous spikes leave pods Pending. Raise maxSize to {-(-int(peak) // per_node)} "
               "or lower some maxReplicas.")


# --- Device plugin ----------------------------------------------------------------------------------------------
@rule("device-plugin-priority", MANDATORY, "The NVIDIA device plugin runs at priorityClassName system-node-critical",
      "001 §7", is_device_plugin)
def _dp_priority(res: Resource, ctx: Context) -> Iterator[str]:
    value = pod_spec(res).get("priorityClassName")
    if value != "system-node-critical":
        yield (f"{res.label}: priorityClassName is {value or 'unset'}, so under node pressure the plugin can be "
               "evicted and the node stops advertising nvidia.com/gpu. Set priorityClassName: system-node-critical.")


@rule("device-plugin-not-privileged", MANDATORY, "The NVIDIA device plugin runs no privileged container",
      "NVIDIA k8s-device-plugin static manifest", is_device_plugin)
def _dp_privileged(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        if _map(c.get("securityContext")).get("privileged") is True:
            yield (f"{res.label}: container {c.get('name')} is privileged; the plugin only needs the kubelet "
                   "socket in /var/lib/kubelet/device-plugins. Remove securityContext.privileged (use "
                   "allowPrivilegeEscalation: false, capabilities.drop [ALL]).")


# --- Model cache ------------------------------------------------------------------------------------------------
@rule("model-cache-pvc-protected", MANDATORY, "The model-cache PVC is protected from deletion (protect=True)",
      "001 §6, §10-4", is_model_cache_pvc)
def _pvc_protected(res: Resource, ctx: Context) -> Iterator[str]:
    if not res.protect:
        yield (f"{res.label}: not protected, so a destroy or replace deletes hundreds of GB of cached weights and "
               "every replica re-downloads its model (long cold starts). Add protect=True (and "
               "retain_on_delete=True) to its resource options.")


@rule("model-cache-readiness", MANDATORY,
      "The model-cache prefetch DaemonSet has a readinessProbe that passes only once downloads are complete",
      "001 §6, §4", is_model_cache_daemonset)
def _cache_ready(res: Resource, ctx: Context) -> Iterator[str]:
    if not any(isinstance(c.get("readinessProbe"), Mapping) for c in containers(res)):
        yield (f"{res.label}: no readinessProbe, so the cache looks ready while models are still downloading. "
               "Add a readinessProbe (exec: test -f /models/<model>/.complete) that fails until every download "
               "has finished.")


# --- General Kubernetes hygiene ---------------------------------------------------------------------------------
@rule("k8s-resources", MANDATORY, "Every container sets cpu and memory requests and limits",
      "000 §2, §7 (CPU OOMKilled)", has_pods)
def _resources(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        r = _map(c.get("resources"))
        missing = [f"{part}.{k}" for part in ("requests", "limits") for k in ("cpu", "memory")
                   if _map(r.get(part)).get(k) in (None, "")]
        if missing:
            yield (f"{res.label}: container {c.get('name') or 'model'!s} has no {', '.join(missing)}, so it is "
                   "BestEffort/Burstable: evicted first and free to starve its neighbours. Set resources.requests "
                   "and resources.limits for cpu and memory.")


@rule("k8s-no-privilege-escalation", MANDATORY, "Every container sets securityContext.allowPrivilegeEscalation: false",
      "Pod Security Standards (restricted)", has_pods)
def _no_escalation(res: Resource, ctx: Context) -> Iterator[str]:
    for c in containers(res):
        if _map(c.get("securityContext")).get("allowPrivilegeEscalation") is not False:
            yield (f"{res.label}: container {c.get('name') or 'model'!s} does not set "
                   "securityContext.allowPrivilegeEscalation: false. Set it (with capabilities.drop: [ALL]).")


@rule("k8s-no-host-network", MANDATORY, "No pod uses hostNetwork, hostPID or hostIPC",
      "Pod Security Standards (baseline)", has_pods)
def _no_host(res: Resource, ctx: Context) -> Iterator[str]:
    spec = pod_spec(res)
    used = [k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    if used:
        yield (f"{res.label}: sets {', '.join(used)}: true, sharing the node's namespaces with the pod. Remove "
               f"{' / '.join(used)} (the GPU and device-plugin socket need neither).")


@rule("k8s-recommended-labels", ADVISORY,
      "Every Kubernetes object carries app.kubernetes.io/{name,instance,component,part-of,managed-by}",
      "kubernetes.io recommended labels",
      # A *Patch resource sets a few keys of an object someone else owns (knative-serving/config-features): its
      # labels stay the owner's.
      lambda r: is_kubernetes(r) and not r.type.startswith("pulumi:") and not r.type.endswith("Patch"))
def _labels(res: Resource, ctx: Context) -> Iterator[str]:
    labels = _map(metadata(res).get("labels"))
    missing = [k for k in RECOMMENDED_LABELS if not labels.get(k)]
    if missing:
        yield (f"{res.label}: missing the recommended labels {', '.join(missing)}. Add them to metadata.labels "
               "(manifests.common.labels does).")


# ---------------------------------------------------------------------------------------------------------------
# Running them
# ---------------------------------------------------------------------------------------------------------------
RULES_BY_ID = {r.id: r for r in RULES}
assert len(RULES_BY_ID) == len(RULES), "duplicate rule id"


def evaluate(resources: Iterable[Resource], rules: Optional[Iterable[Rule]] = None) -> list[Violation]:
    """Every rule over every resource, with the whole stack as context."""
    resources = list(resources)
    ctx = Context.of(resources)
    out: list[Violation] = []
    for r in (RULES if rules is None else list(rules)):
        for res in resources:
            out += r.run(res, ctx)
    return out


def mandatory(violations: Iterable[Violation]) -> list[Violation]:
    return [v for v in violations if v.mandatory]
