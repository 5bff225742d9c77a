"""The typed stack config: everything the Pulumi program reads, parsed and checked in one place.

Services use KServe's own field names (`pkg/apis/serving/v1beta1/component.go: ComponentExtensionSpec`) and
Knative's autoscaling annotation keys (`pkg/apis/autoscaling/register.go`); defaults follow KServe
(`minReplicas` 1) and Knative (`timeout` ≤ 600 s). `parse_stack_config` returns a `StackConfig` or raises
`InputError` listing every problem with its key path, value and what is allowed; nothing is registered before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from catalog import DEFAULT as DEFAULT_CATALOG
from catalog import Catalog, Gpu, InstanceType, Model
from validation.errors import InputError, Problem
from validation.fields import Section
from validation.kubernetes import (GPU_RESOURCE, KNATIVE_MAX_TIMEOUT_S, image_pinned, parse_duration, tolerates,
                                   validation_errors)
from simulation.scenario import parse_client
from simulation.workload import parse_workload

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # relative trace paths resolve here

KNATIVE_CC_MAX = 1000  # container-concurrency-max-limit
GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
GPU_LABEL = {"nvidia.com/gpu.present": "true"}

DEPLOYMENT_MODES = {"Knative": "Knative", "Serverless": "Knative", "Standard": "Standard",
                    "RawDeployment": "Standard"}
ENGINES = ["vllm", "tgi", "naive", "triton"]
# Knative annotations a service may set (pkg/apis/autoscaling/register.go). min/max-scale, target, metric and
# class come from KServe's own fields, so setting them here would put one knob in two places.
KNATIVE_ANNOTATIONS = {
    "autoscaling.knative.dev/scale-down-delay": "duration",
    "autoscaling.knative.dev/window": "duration",
    "autoscaling.knative.dev/target-burst-capacity": "number",
    "autoscaling.knative.dev/initial-scale": "number",
    "autoscaling.knative.dev/activation-scale": "number",
    "autoscaling.knative.dev/panic-window-percentage": "number",
    "autoscaling.knative.dev/panic-threshold-percentage": "number",
    "autoscaling.knative.dev/target-utilization-percentage": "number",
    "autoscaling.knative.dev/scale-to-zero-pod-retention-period": "duration",
    "autoscaling.knative.dev/metric-aggregation-algorithm": "word",
}
AMI_TYPES = ["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA", "AL2_x86_64_GPU"]
TAINT_EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]
_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # namespaces (DNS-1123 label)
_DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _check_k8s_name(sec, key: str, value: str | None, pattern: re.Pattern, what: str) -> None:
    """The API server would reject the name only after `pulumi up` had created the node group."""
    if value is not None and not pattern.match(value):
        sec.problem(key, value, f"expected a Kubernetes {what}: lowercase letters, digits and '-'"
                    + (" ('.' between parts)" if pattern is _DNS_SUBDOMAIN else ", at most 63 characters")
                    + ", starting and ending with a letter or digit")
_QUANTITY = re.compile(r"^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")


def node_group_name_prefix(cluster: str, node_group: str) -> str:
    """The EKS node group's name prefix (`aws.eks.NodeGroup` adds a unique 26-character suffix)."""
    return f"{cluster}-{node_group}-"


# ---------------------------------------------------------------------------------------------------------------
# Typed config
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # Kubernetes spelling: NoSchedule | NoExecute | PreferNoSchedule


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str  # Equal | Exists
    value: str | None
    effect: str | None  # None tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        return tolerates(self.to_manifest(), {"key": taint.key, "value": taint.value, "effect": taint.effect})

    def to_manifest(self) -> dict:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.operator == "Equal":
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        return out


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    subnet_ids: list[str]
    node_role_arn: str | None
    create_node_role: bool
    kubernetes_version: str
    namespace: str


@dataclass(frozen=True)
class NodeGroupConfig:
    name: str
    instance_types: list[str]
    ami_type: str
    capacity_type: str
    disk_size_gib: int
    min_size: int
    max_size: int
    desired_size: int
    labels: dict[str, str]
    taints: list[Taint]
    gpu: Gpu
    gpus_per_node: int

    @property
    def gpu_capacity(self) -> int:
        return self.max_size * self.gpus_per_node

    @property
    def needs_device_plugin(self) -> bool:
        """The AL2023/AL2 NVIDIA AMIs ship driver and toolkit only; Bottlerocket NVIDIA variants run NVIDIA's
        device plugin as a host service (setting `kubelet-device-plugins`), so a second one is not deployed."""
        return not self.ami_type.startswith("BOTTLEROCKET")


@dataclass(frozen=True)
class DevicePluginConfig:
    image: str
    namespace: str


@dataclass(frozen=True)
class ModelCacheConfig:
    enabled: bool
    namespace: str
    pvc_name: str
    storage_class: str
    size_gib: int
    access_mode: str
    prefetch_image: str
    # What the storage initializer downloads with: an IRSA service account for s3:// (AWS_* from the pod
    # identity webhook), a Secret of env vars such as HF_TOKEN for gated hf:// models. None: anonymous.
    service_account: str | None = None
    credentials_secret: str | None = None


@dataclass(frozen=True)
class ColdStartProfile:
    """Cold-start priors (knative-kserve.md §6, gpu-memory-and-models.md); sizes probes, feeds the simulation."""

    node_provision_s: float
    image_gib: float
    image_pull_mbps: float
    download_gbps: float
    load_gbps: float
    engine_init_s: float


@dataclass(frozen=True)
class Probe:
    path: str
    period_s: int
    failure_threshold: int
    initial_delay_s: int
    timeout_s: int


@dataclass(frozen=True)
class InputCaps:
    max_input_tokens: int | None
    max_new_tokens: int | None
    max_batch_size: int | None
    max_image_pixels: int | None


@dataclass(frozen=True)
class Slo:
    """What the simulation gate checks a service against (rates are fractions of all requests)."""

    p99_latency_s: float
    max_error_rate: float
    max_503_rate: float
    max_cold_start_s: float | None
    p99_ttft_s: float | None  # time to first token (first byte) of successful requests


@dataclass(frozen=True)
class ServiceConfig:
    name: str
    namespace: str
    deployment_mode: str  # "Knative" | "Standard"
    min_replicas: int
    max_replicas: int
    container_concurrency: int | None
    scale_metric: str
    scale_target: int | None
    timeout_s: int | None
    annotations: dict[str, str]
    hpa_behavior: dict | None
    hpa_pods_metric: str
    engine: str
    model_format: str
    image: str | None
    args: list[str]
    env: dict[str, str]
    model: Model
    storage_uri: str
    gpus: int
    cpu: str
    memory: str
    startup_probe: Probe
    readiness_probe: Probe
    liveness_probe: Probe
    caps: InputCaps
    gpu_memory_utilization: float
    pytorch_cuda_alloc_conf: str | None
    tolerations: list[Toleration]
    node_selector: dict[str, str]
    workload: dict | None  # the simulation's workload mapping, checked by the gate
    client: dict | None  # the simulation's client mapping (timeout, retries, back-off), for the gate
    slo: Slo | None
    allow_scale_to_zero: bool
    expected_load_s: float  # cold-start estimate the probes were sized from


@dataclass(frozen=True)
class GateConfig:
    """The SLO gate `pulumi up` runs before registering anything (gate/__init__.py)."""

    enabled: bool
    enforce: bool  # false: report misses as warnings and deploy anyway
    duration_s: float
    seed: int


@dataclass(frozen=True)
class StackConfig:
    project: str
    stack: str
    environment: str
    cluster: ClusterConfig
    node_group: NodeGroupConfig
    device_plugin: DevicePluginConfig
    model_cache: ModelCacheConfig
    cold_start: ColdStartProfile
    services: list[ServiceConfig]
    gate: GateConfig
    catalog: Catalog = field(repr=False, default=DEFAULT_CATALOG)


# ---------------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------------
def _catalog(sec: Section) -> Catalog:
    gpus = [Gpu(name, g.float("memoryGib", 0.0, min=1, required=True), g.float("bandwidthGbps", 0.0, min=1,
                required=True), g.float("bf16Tflops", 0.0, min=0.1, required=True))
            for name, g in _named(sec.section("gpus"))]
    instances = [InstanceType(name, i.str("gpu", "", required=True), i.int("gpus", 1, min=1, max=16, required=True),
                              i.int("vcpus", 4, min=1), i.int("memoryGib", 16, min=1))
                 for name, i in _named(sec.section("instanceTypes"))]
    models = [Model(name, m.choice("kind", ["llm", "vision"], "llm"), m.float("paramsB", 1.0, min=0.0001,
                    required=True), dtype_bytes=m.int("dtypeBytes", 2, min=1, max=4), layers=m.int("layers", 0, min=0),
                    kv_heads=m.int("kvHeads", 0, min=0), head_dim=m.int("headDim", 0, min=0),
                    max_context=m.int("maxContext", 0, min=0), sliding_window=m.int("slidingWindow", 0, min=0),
                    activation_mib_per_item=m.float("activationMibPerItem", 0.0, min=0),
                    weights_gib_override=m.float("weightsGib", 0.0, min=0),
                    hidden_size=m.int("hiddenSize", 0, min=0), vocab_size=m.int("vocabSize", 0, min=0),
                    gflops_per_item=m.float("gflopsPerItem", 0.0, min=0))
              for name, m in _named(sec.section("models"))]
    sec.done()
    catalog = DEFAULT_CATALOG.extended(gpus, instances, models)
    for inst in instances:
        if inst.gpu not in catalog.gpus:
            sec.problem(f"instanceTypes.{inst.name}.gpu", inst.gpu,
                        "expected a GPU from the catalog: " + ", ".join(sorted(catalog.gpus)))
    return catalog


def _named(sec: Section):
    """Items of a name → mapping section, each read with its own Section (unknown keys reported)."""
    for name in list(sec.data):
        item = sec.section(name)
        yield name, item
        item.done()


def _cluster(sec: Section, project: str) -> ClusterConfig:
    out = ClusterConfig(
        name=sec.str("name", "", required=True),
        subnet_ids=sec.str_list("subnetIds", [], required=True),
        node_role_arn=sec.str("nodeRoleArn"),
        create_node_role=sec.bool("createNodeRole", False),
        kubernetes_version=_kubernetes_version(sec),
        namespace=sec.str("namespace", "kserve-inference"),
    )
    _check_k8s_name(sec, "namespace", out.namespace, _DNS_LABEL, "namespace name")
    if not out.node_role_arn and not out.create_node_role:
        sec.problem("nodeRoleArn", None, "set nodeRoleArn to an existing node IAM role, or createNodeRole: true")
    if out.node_role_arn and out.create_node_role:
        sec.problem("createNodeRole", True, "expected false when nodeRoleArn is set (use one or the other)")
    sec.done()
    return out


def _kubernetes_version(sec: Section) -> str:
    versions = [f"1.{v}" for v in range(28, 38)]
    raw = sec.raw("kubernetesVersion")
    if isinstance(raw, float):  # YAML reads 1.30 as the number 1.3
        sec.problem("kubernetesVersion", raw, "expected a quoted version string, one of "
                    + ", ".join(repr(v) for v in versions) + ' (quote it: YAML reads 1.30 as 1.3)')
        return "1.31"
    return sec.choice("kubernetesVersion", versions, "1.31")


def _taints(sec: Section) -> list[Taint]:
    items = sec.sections("taints")
    if not sec.has("taints"):
        return [Taint(**GPU_TAINT)]
    out = []
    for t in items:
        out.append(Taint(t.str("key", "", required=True), t.str("value", ""),
                         t.choice("effect", TAINT_EFFECTS, "NoSchedule")))
        t.done()
    return out


def _node_group(sec: Section, catalog: Catalog) -> NodeGroupConfig:
    instance_types = sec.str_list("instanceTypes", ["g6e.xlarge"])
    gpu, gpus_per_node = catalog.gpus["L40S"], 1
    known = [t for t in instance_types if t in catalog.instances]
    for t in instance_types:
        if t not in catalog.instances:
            sec.problem("instanceTypes", t, "expected GPU instance types from the catalog: "
                        + ", ".join(sorted(catalog.instances)) + " (or add one under catalog.instanceTypes)")
    if known:
        first = catalog.instances[known[0]]
        gpu, gpus_per_node = catalog.gpus[first.gpu], first.gpus
        for t in known[1:]:
            other = catalog.instances[t]
            if (other.gpu, other.gpus) != (first.gpu, first.gpus):
                sec.problem("instanceTypes", instance_types,
                            "expected instance types with the same GPU model and count per node "
                            "(the simulation and capacity checks assume one node shape)")
                break
    min_size = sec.int("minSize", 0, min=0, max=1000)
    max_size = sec.int("maxSize", 2, min=1, max=1000)
    desired = sec.int("desiredSize", min_size, min=0, max=1000)
    if min_size > max_size:
        sec.problem("minSize", min_size, f"expected minSize <= maxSize ({max_size})")
    if not min_size <= desired <= max_size:
        sec.problem("desiredSize", desired, f"expected between minSize ({min_size}) and maxSize ({max_size})")
    out = NodeGroupConfig(
        name=sec.str("name", "gpu"),
        instance_types=instance_types,
        ami_type=sec.choice("amiType", AMI_TYPES, "AL2023_x86_64_NVIDIA"),
        capacity_type=sec.choice("capacityType", ["ON_DEMAND", "SPOT"], "ON_DEMAND"),
        disk_size_gib=sec.int("diskSizeGib", 200, min=50, max=16384),
        min_size=min_size, max_size=max_size, desired_size=desired,
        labels={**GPU_LABEL, **sec.str_map("labels", {})},
        taints=_taints(sec),
        gpu=gpu, gpus_per_node=gpus_per_node,
    )
    sec.done()
    return out


def _device_plugin(sec: Section) -> DevicePluginConfig:
    out = DevicePluginConfig(image=sec.str("image", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"),
                             namespace=sec.str("namespace", "kube-system"))
    _check_pinned(sec, "image", out.image)
    _check_k8s_name(sec, "namespace", out.namespace, _DNS_LABEL, "namespace name")
    sec.done()
    return out


def _check_pinned(sec: Section, key: str, image: str | None) -> None:
    if image is not None and not image_pinned(image):
        sec.problem(key, image, "expected a pinned image tag or digest (no 'latest', no missing tag)")


def _model_cache(sec: Section, namespace: str) -> ModelCacheConfig:
    out = ModelCacheConfig(
        enabled=sec.bool("enabled", True),
        namespace=sec.str("namespace", namespace),
        pvc_name=sec.str("pvcName", "model-cache"),
        storage_class=sec.str("storageClass", "efs-sc"),
        size_gib=sec.int("sizeGib", 500, min=1, max=65536),
        access_mode=sec.choice("accessMode", ["ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany"], "ReadWriteMany"),
        prefetch_image=sec.str("prefetchImage", "kserve/storage-initializer:v0.15.2"),
        service_account=sec.str("serviceAccountName"),
        credentials_secret=sec.str("credentialsSecret"),
    )
    for key, value in (("serviceAccountName", out.service_account), ("credentialsSecret", out.credentials_secret)):
        _check_k8s_name(sec, key, value, _DNS_SUBDOMAIN, "object name")
    _check_pinned(sec, "prefetchImage", out.prefetch_image)
    if sec.has("namespace"):  # the default is cluster.namespace, checked there
        _check_k8s_name(sec, "namespace", out.namespace, _DNS_LABEL, "namespace name")
    _check_k8s_name(sec, "pvcName", out.pvc_name, _DNS_SUBDOMAIN, "object name")
    sec.done()
    return out


def _cold_start(sec: Section) -> ColdStartProfile:
    out = ColdStartProfile(
        node_provision_s=sec.float("nodeProvisionS", 120.0, min=0),
        image_gib=sec.float("imageGib", 10.0, min=0),
        image_pull_mbps=sec.float("imagePullMBps", 60.0, min=1),
        download_gbps=sec.float("downloadGBps", 0.5, min=0.01),
        load_gbps=sec.float("loadGBps", 2.0, min=0.01),
        engine_init_s=sec.float("engineInitS", 30.0, min=0),
    )
    sec.done()
    return out


def traffic_shape(workload: dict | None) -> str:
    """"spiky" or "steady" from the simulation workload mapping; a trace or no workload counts as spiky.

    Gamma inter-arrivals with CV > 1, steps and spikes are bursty by construction; real traces (the Azure code
    trace has CV 13) are assumed bursty; Poisson, CV ≤ 1 gamma and slow diurnal curves are steady.
    """
    if not isinstance(workload, dict):
        return "spiky"
    kind = workload.get("kind")
    if kind in ("poisson", "diurnal"):
        return "steady"
    if kind == "gamma":
        cv = workload.get("cv", 1.0)
        return "steady" if isinstance(cv, (int, float)) and cv <= 1.0 else "spiky"
    return "spiky"


def expected_load_s(model: Model, cold: ColdStartProfile, cache_hit: bool) -> float:
    """Container start → model ready: download (skipped on a cache hit) + weights to GPU + engine init."""
    gib = model.weights_gib
    download = 0.0 if cache_hit else gib * 1.073741824 / cold.download_gbps
    return download + gib * 1.073741824 / cold.load_gbps + cold.engine_init_s


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
        out.append(Toleration(t.str("key", ""), op, t.str("value") if op == "Equal" else None,
                              t.choice("effect", TAINT_EFFECTS)))
        t.done()
    for taint in taints:
        if taint.key and taint.effect != "PreferNoSchedule" and not any(tol.tolerates(taint) for tol in out):
            sec.problem("tolerations", sec.raw("tolerations"),
                        f"expected a toleration for the node group's taint {taint.key}={taint.value}:{taint.effect} "
                        "(otherwise the GPU pods stay Pending)")
    return out


def _annotations(sec: Section) -> dict[str, str]:
    annotations = sec.str_map("annotations", {})
    for key, value in annotations.items():
        kind = KNATIVE_ANNOTATIONS.get(key)
        if kind is None:
            sec.problem(f"annotations.{key}", value, "expected one of the Knative autoscaling annotations "
                        + ", ".join(sorted(KNATIVE_ANNOTATIONS)) + " (min/max scale, target and metric are "
                        "the service's minReplicas/maxReplicas/scaleTarget/scaleMetric)")
        elif kind == "duration" and parse_duration(value) is None:
            sec.problem(f"annotations.{key}", value, 'expected a duration such as "90s", "5m" or "1h"')
        elif kind == "number":
            try:
                float(value)
            except ValueError:
                sec.problem(f"annotations.{key}", value, 'expected a number as a string, e.g. "211"')
    window = parse_duration(annotations.get("autoscaling.knative.dev/window"))
    if window is not None and not 6 <= window <= 3600:
        sec.problem("annotations.autoscaling.knative.dev/window", annotations["autoscaling.knative.dev/window"],
                    "expected between 6s and 1h (knative pkg/apis/autoscaling/register.go)")
    return annotations


def _check_hpa_behavior(hpa: Section, behavior: dict, kubernetes_version: str) -> None:
    """Schema-check `hpa.behavior` now: it goes into the HPA verbatim, and the API server would reject it only
    after `pulumi up` had created the node group and everything before the HPA."""
    probe = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 1,
                      "behavior": behavior}}
    for error in validation_errors(probe, kubernetes_version):
        hpa.problem("behavior", behavior, "expected an autoscaling/v2 HorizontalPodAutoscalerBehavior: "
                    + error.split(": ", 1)[1].replace("spec.behavior", "behavior"))


def _gate(sec: Section) -> GateConfig:
    out = GateConfig(enabled=sec.bool("enabled", True), enforce=sec.bool("enforce", True),
                     duration_s=sec.float("durationS", 900.0, min=60, max=86400),
                     seed=sec.int("seed", 1, min=0, max=2**31 - 1))
    sec.done()
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


def _service(sec: Section, ctx: "StackConfigContext") -> ServiceConfig:
    ng, catalog, cold = ctx.node_group, ctx.catalog, ctx.cold_start
    name = sec.str("name", "", required=True)
    if name and not _NAME.match(name):
        sec.problem("name", name, "expected a DNS-1035 label: lowercase letters, digits and '-', starting "
                    "with a letter, at most 42 characters (KServe appends '-predictor-…')")
    mode = DEPLOYMENT_MODES.get(sec.choice("deploymentMode", list(DEPLOYMENT_MODES), "Knative"), "Knative")
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
    annotations = _annotations(sec)
    if mode == "Standard" and annotations:
        sec.problem("annotations", annotations, "expected none in Standard mode: Knative annotations only act "
                    "in Knative mode; use hpa.behavior")
    hpa = sec.section("hpa")
    behavior = hpa.raw("behavior")
    if behavior is not None and not isinstance(behavior, dict):
        hpa.problem("behavior", behavior, "expected an autoscaling/v2 HorizontalPodAutoscalerBehavior mapping")
    elif behavior:
        _check_hpa_behavior(hpa, behavior, ctx.cluster.kubernetes_version)
    pods_metric = hpa.str("podsMetric", "inflight_requests")
    hpa.done()
    if mode == "Knative" and (behavior or hpa.has("podsMetric")):
        sec.problem("hpa", hpa.data, "expected no hpa settings in Knative mode (the KPA scales it)")

    runtime = sec.section("runtime")
    engine = runtime.choice("engine", ENGINES, "vllm")
    model_format = runtime.str("modelFormat", "huggingface")
    image = runtime.str("image")
    _check_pinned(runtime, "image", image)
    args = runtime.str_list("args", [])
    env = runtime.str_map("env", {})
    runtime.done()

    msec = sec.section("model", required=True)
    model_name = msec.str("name", "", required=True)
    model = catalog.models.get(model_name)
    if model_name and model is None:
        msec.problem("name", model_name, "expected a model from the catalog: " + ", ".join(sorted(catalog.models))
                     + " (or add one under catalog.models)")
    storage_uri = msec.str("storageUri", "", required=True)
    if storage_uri and not re.match(r"^(s3|gs|hf|https?|pvc|oci)://", storage_uri):
        msec.problem("storageUri", storage_uri, "expected an s3://, gs://, hf://, https://, pvc:// or oci:// URI")
    msec.done()
    model = model or catalog.models["llama-3-8b"]

    res = sec.section("resources")
    gpus = res.int("gpus", 1, min=1, max=16)
    cpu, memory = res.str("cpu", "4"), res.str("memory", "24Gi")
    for key, value in (("cpu", cpu), ("memory", memory)):
        if not _QUANTITY.match(value):
            res.problem(key, value, "expected a Kubernetes quantity such as \"4\", \"500m\" or \"24Gi\"")
    res.done()
    if gpus > ng.gpus_per_node:
        sec.problem("resources.gpus", gpus, f"expected at most {ng.gpus_per_node}: a {ng.instance_types[0]} node has "
                    f"{ng.gpus_per_node} GPU(s) and a pod cannot span nodes")
    if max_r * gpus > ng.gpu_capacity:
        sec.problem("maxReplicas", max_r, f"expected at most {ng.gpu_capacity // gpus}: the node group holds "
                    f"maxSize {ng.max_size} × {ng.gpus_per_node} GPU(s) = {ng.gpu_capacity} GPUs and each replica "
                    f"needs {gpus}")

    lim = sec.section("limits")
    caps = InputCaps(lim.int("maxInputTokens", None, min=1), lim.int("maxNewTokens", None, min=1),
                     lim.int("maxBatchSize", None, min=1, max=4096), lim.int("maxImagePixels", None, min=1))
    lim.done()
    util = sec.float("gpuMemoryUtilization", 0.9, min=0.1, max=0.99)
    pod_gpu_bytes = ng.gpu.memory_bytes * gpus
    if model.weights_bytes > pod_gpu_bytes * (util if engine == "vllm" else 1.0):
        where = f"{gpus} × {ng.gpu.name} ({ng.gpu.memory_gib:g} GiB each" + (
            f", × gpuMemoryUtilization {util:g})" if engine == "vllm" else ")")
        sec.problem("model.name", model.name, f"expected a model that fits in GPU memory: its weights take "
                    f"{model.weights_gib:.1f} GiB but the pod has {where}; use more GPUs per pod, a bigger GPU "
                    "or a smaller/quantized model")
    if model.kind == "llm" and model.max_context and caps.max_input_tokens and caps.max_new_tokens and \
            caps.max_input_tokens + caps.max_new_tokens > model.max_context:
        sec.problem("limits.maxInputTokens", caps.max_input_tokens, f"expected maxInputTokens + maxNewTokens <= "
                    f"{model.max_context}, the context length of {model.name}")

    cache_hit = ctx.model_cache.enabled
    load_s = expected_load_s(model, cold, cache_hit)
    # Startup budget: twice the expected load, in 10 s periods (kserve-vllmserver.yaml uses period 30 × 60).
    startup_failures = max(6, int(2 * load_s / 10) + 1)
    probes = sec.section("probes")
    # KServe's Python servers (huggingface, vLLM backend) and Triton answer the v2 health protocol; TGI has
    # only `/health` (200 once the model is loaded; text-generation-inference router/src/server.rs).
    ready_path, live_path = ("/health", "/health") if engine == "tgi" else ("/v2/health/ready", "/v2/health/live")
    startup = _probe(probes.section("startup"), ready_path, 10, startup_failures, 0, 5)
    readiness = _probe(probes.section("readiness"), ready_path, 10, 3, 0, 5)
    liveness = _probe(probes.section("liveness"), live_path, 15, 4, 0, 5)
    probes.done()
    budget = startup.initial_delay_s + startup.period_s * startup.failure_threshold
    if budget < load_s:
        sec.problem("probes.startup", {"periodSeconds": startup.period_s, "failureThreshold": startup.failure_threshold},
                    f"expected a startup budget (initialDelaySeconds + periodSeconds × failureThreshold = {budget} s) "
                    f"of at least the expected model load time {load_s:.0f} s, or the kubelet restarts the pod "
                    "before the model is loaded")

    alloc = sec.str("pytorchCudaAllocConf", "expandable_segments:True")
    tolerations = _tolerations(sec, ng.taints)
    node_selector = sec.str_map("nodeSelector", dict(GPU_LABEL))
    for key, value in node_selector.items():
        if ng.labels.get(key) != value:
            sec.problem(f"nodeSelector.{key}", value, f"expected a label the GPU node group sets: {ng.labels}")

    # The gate's inputs, checked now with the simulation's own parsers so a mistake stops `pulumi up` early.
    workload, client = sec.raw("workload"), sec.raw("client")
    if workload is not None:
        parse_workload(Section(workload, sec.key_path("workload"), sec.problems), base_dir=str(PROJECT_ROOT))
    if client is not None:
        parse_client(Section(client, sec.key_path("client"), sec.problems))
    slo = _slo(sec.section("slo"))
    allow_zero = sec.bool("allowScaleToZero", ctx.environment != "prod")
    if min_r == 0 and not allow_zero:
        sec.problem("minReplicas", 0, f"expected >= 1 in {ctx.environment}: scale-to-zero makes the first request "
                    f"wait for a ~{load_s:.0f} s GPU cold start; set allowScaleToZero: true to accept that")
    sec.done()
    return ServiceConfig(
        name=name, namespace=ctx.cluster.namespace, deployment_mode=mode, min_replicas=min_r,
        max_replicas=max_r, container_concurrency=cc, scale_metric=scale_metric, scale_target=scale_target,
        timeout_s=timeout, annotations=annotations, hpa_behavior=behavior, hpa_pods_metric=pods_metric,
        engine=engine, model_format=model_format, image=image, args=args, env=env, model=model,
        storage_uri=storage_uri, gpus=gpus, cpu=cpu, memory=memory, startup_probe=startup,
        readiness_probe=readiness, liveness_probe=liveness, caps=caps, gpu_memory_utilization=util,
        pytorch_cuda_alloc_conf=alloc, tolerations=tolerations, node_selector=node_selector,
        workload=workload, client=client, slo=slo, allow_scale_to_zero=allow_zero, expected_load_s=round(load_s, 1),
    )


def _check_model_cache(mc: ModelCacheConfig, cluster: ClusterConfig, services: list[ServiceConfig],
                       problems: list[Problem]) -> None:
    """What the cache needs to serve every service: their namespace, and one source per cached model name."""
    if mc.namespace != cluster.namespace:
        problems.append(Problem("modelCache.namespace", mc.namespace, f"expected the services' namespace "
                                f"{cluster.namespace!r} (cluster.namespace): a pod mounts only PVCs of its own "
                                "namespace, and the services read pvc://<pvcName>/<model>"))
    first: dict[str, tuple[int, str]] = {}
    for i, svc in enumerate(services):
        if svc.storage_uri.startswith("pvc://"):
            continue
        j, uri = first.setdefault(svc.model.name, (i, svc.storage_uri))
        if uri != svc.storage_uri:
            problems.append(Problem(f"services[{i}].model.storageUri", svc.storage_uri, f"expected {uri!r} as in "
                                    f"services[{j}]: the model cache keeps one copy per model name "
                                    f"({svc.model.name!r}) at {mc.pvc_name}/{svc.model.name}"))


@dataclass(frozen=True)
class StackConfigContext:
    environment: str
    cluster: ClusterConfig
    node_group: NodeGroupConfig
    model_cache: ModelCacheConfig
    cold_start: ColdStartProfile
    catalog: Catalog


def parse_stack_config(values: Mapping[str, Any], project: str, stack: str, source: str = "") -> StackConfig:
    """Parse the project's config values (keys without the `<project>:` prefix, values already decoded)."""
    problems: list[Problem] = []
    top = Section(dict(values), "", problems)
    catalog = _catalog(top.section("catalog"))
    environment = top.choice("environment", ["dev", "staging", "prod"], stack if stack in
                             ("dev", "staging", "prod") else "dev")
    cluster = _cluster(top.section("cluster", required=True), project)
    node_group = _node_group(top.section("gpuNodeGroup"), catalog)
    prefix = node_group_name_prefix(cluster.name, node_group.name)
    if len(prefix) > 63 - 26 or not re.match(r"^[0-9A-Za-z][A-Za-z0-9_-]*$", prefix):
        problems.append(Problem("gpuNodeGroup.name", node_group.name, f"expected letters, digits, '-' and '_', "
                                f"with '<cluster.name>-<name>-' ({prefix!r}) at most 37 characters: EKS node group "
                                "names are at most 63 and the provider appends a 26-character unique suffix"))
    device_plugin = _device_plugin(top.section("devicePlugin"))
    model_cache = _model_cache(top.section("modelCache"), cluster.namespace)
    cold_start = _cold_start(top.section("coldStart"))
    ctx = StackConfigContext(environment, cluster, node_group, model_cache, cold_start, catalog)
    services = [_service(s, ctx) for s in top.sections("services", required=True)]
    gate = _gate(top.section("gate"))
    names = [s.name for s in services]
    for i, name in enumerate(names):
        if name and names.index(name) != i:
            problems.append(Problem(f"services[{i}].name", name, "expected a unique service name"))
    if not services and not any(p.path == "services" for p in problems):
        problems.append(Problem("services", [], "expected at least one service"))
    if model_cache.enabled:
        _check_model_cache(model_cache, cluster, services, problems)
    min_gpus = sum(s.min_replicas * s.gpus for s in services)
    if min_gpus > node_group.gpu_capacity:
        problems.append(Problem("services[*].minReplicas", min_gpus, f"expected the services' minReplicas to need "
                                f"at most the node group's {node_group.gpu_capacity} GPUs (maxSize × GPUs per node)"))
    top.done()
    # Project keys are namespaced: report a typo as `<project>:<key>` like `pulumi config` shows it.
    if problems:
        raise InputError([Problem(f"{project}:{p.path}", p.value, p.allowed) for p in problems], source)
    return StackConfig(project, stack, environment, cluster, node_group, device_plugin, model_cache, cold_start,
                       services, gate, catalog)
