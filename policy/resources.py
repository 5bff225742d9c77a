"""How the policy rules see a stack: a resource as CrossGuard presents it (type token, camelCase input props,
the options that matter), the violations they report, and small readers tolerant of proxies, floats and missing keys.

Split out of `policy/rules.py`; see its docstring for where the rules run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from validation.annotations import ENGINE_ANNOTATION, MODE_ANNOTATION, TRITON_CAP_ANNOTATIONS
from validation.annotations import PREFLIGHT_PREFIX as ANN  # noqa: F401  the rules' prefix for the stack's keys
from validation.deployment_mode import mode_of
from validation.kubernetes import GPU_RESOURCE, parse_duration


MANDATORY = "mandatory"
ADVISORY = "advisory"

ISVC_TYPE = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
HPA_TYPES = ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler",
             "kubernetes:autoscaling/v2beta2:HorizontalPodAutoscaler")
SCALED_OBJECT_TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"  # KEDA; its HPA is keda-hpa-<name>
NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
DEFAULT_GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
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
INPUT_CAP_ANNOTATIONS = (TRITON_CAP_ANNOTATIONS["max_pixels"],)
BATCH_CAP_FLAGS = ("--max-num-seqs", "--max_num_seqs", "--max-batch-size", "--max_batch_size",
                   "--max-num-batched-tokens", "--max-batch-total-tokens", "--max-concurrent-requests")
BATCH_CAP_ANNOTATIONS = (TRITON_CAP_ANNOTATIONS["max_batch_size"],)


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
    # Where the user fixes it (policy/keys.py fills these in where the stack config is known: the report):
    stack_file: str = ""   # stacks/Pulumi.<stack>.yaml
    service: str = ""      # the service (or services) it concerns
    key: str = ""          # the stack key path, e.g. kserve-preflight:services[1].timeout
    waived: str = ""       # the reason of the resource's waiver (policy/waivers.py): listed, never failing

    @property
    def mandatory(self) -> bool:
        return self.severity == MANDATORY and not self.waived


@dataclass
class Context:
    """What stack-level rules know about the rest of the stack."""

    resources: list[Resource] = field(default_factory=list)
    environment: Optional[str] = None
    taints: list[dict] = field(default_factory=lambda: [dict(DEFAULT_GPU_TAINT)])  # Kubernetes spelling
    gpu_labels: dict[str, str] = field(default_factory=dict)
    gpu_capacity: Optional[int] = None  # Σ maxSize × GPUs per node over the GPU node groups

    @classmethod
    def of(cls, resources: Iterable[Resource]) -> "Context":
        resources = list(resources)
        ctx = cls(resources=resources)
        groups = [r for r in resources if r.type == NODE_GROUP_TYPE and is_gpu_node_group(r)]
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
    return mode_of(str(annotations(res).get(MODE_ANNOTATION, "Knative")))


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
                             or ENGINE_ANNOTATION in annotations(res))


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


def _env(c: Mapping) -> dict[str, str]:
    return {str(_map(e).get("name")): str(_map(e).get("value", "")) for e in _list(c.get("env"))}


def _args(c: Mapping) -> list[str]:
    return [str(a) for a in _list(c.get("args")) + _list(c.get("command"))]


def _has_flag(args: list[str], flags: Iterable[str]) -> bool:
    return any(a == f or a.startswith(f + "=") for a in args for f in flags)


def all_args_env(res: Resource) -> tuple[list[str], dict[str, str]]:
    """Every container's args (and command) and environment, the later container's value winning."""
    args, env = [], {}
    for c in containers(res):
        args += _args(c)
        env.update(_env(c))
    return args, env
