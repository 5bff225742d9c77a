"""The typed stack config: what the Pulumi program, the manifests and the gate read (parsed by `stackconfig.schema`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog import DEFAULT as DEFAULT_CATALOG
from catalog import Catalog, Gpu, Model
from stackconfig.knative import KnativeConfig
from stackconfig.kserve import KServeConfig
from stackconfig.stress import StressConfig
from simulation.dists import Dist
from validation.kubernetes import tolerates

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # relative trace paths resolve here


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
    # Requests of the cluster's own DaemonSets on every node (EKS add-ons: aws-node 25m, kube-proxy 100m, the EFS
    # CSI node plugin, log/metrics agents); the stack's own DaemonSets are counted from their manifests.
    other_daemonsets_cpu: str = "200m"
    other_daemonsets_memory: str = "512Mi"

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
    # False where the cluster already advertises nvidia.com/gpu (NVIDIA's GPU Operator, an EKS add-on or a Helm
    # release of the plugin): a second plugin on a node registers the same resource with the kubelet twice.
    enabled: bool = True


@dataclass(frozen=True)
class ModelCacheConfig:
    enabled: bool
    namespace: str
    pvc_name: str
    storage_class: str
    size_gib: int
    access_mode: str
    prefetch_image: str
    # Secrets (names, in the cache's namespace) the kubelet pulls the prefetch image with: a registry mirror's
    # credentials, or Docker Hub's to lift its anonymous pull limit (the image is pulled on every Linux node).
    image_pull_secrets: tuple[str, ...] = ()
    # What the storage initializer downloads with: an IRSA service account for s3:// (AWS_* from the pod
    # identity webhook), a Secret of env vars such as HF_TOKEN for gated hf:// models. None: anonymous. With the
    # cache off, the predictors' account (manifests/model_download.py; stackconfig/model_credentials.py).
    service_account: str | None = None
    credentials_secret: str | None = None
    # Which of the two carries S3 credentials for s3:// models: "serviceAccount" (IRSA) or "secret" (the user
    # states credentialsSecret holds AWS keys; offline the stack cannot read a Secret).
    s3_credentials: str = "serviceAccount"
    # Per-client throughput of the cache's storage, reading and writing: Amazon EFS (Elastic) tops out near
    # 1,500 MiB/s per client (AWS EFS performance table); a model loads from the PVC no faster than this.
    throughput_mib_s: float = 1500.0
    # The EFS file system's throughput mode and, for provisioned/bursting, its throughput as EFS meters it (MiB/s):
    # what every pod reading or writing the cache at once shares (stackconfig/platform.py cache_read_mib_s).
    throughput_mode: str = "elastic"
    fs_throughput_mib_s: float | None = None


@dataclass(frozen=True)
class ColdStartProfile:
    """Cold-start priors (knative-kserve.md §6, gpu-memory-and-models.md), each fixed or a distribution; their
    high quantile sizes probes and waits, the simulation draws them."""

    node_provision_s: Dist
    image_gib: float
    image_pull_mbps: Dist
    download_gbps: Dist
    load_gbps: Dist
    engine_init_s: Dist


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
    # Triton's dynamic batching as the model's config.pbtxt declares it (dynamic_batching { ... })
    max_queue_delay_us: int | None = None  # max_queue_delay_microseconds
    max_queue_size: int | None = None  # default_queue_policy.max_queue_size (0/unset: unbounded)
    # TGI's router admission limit (`--max-concurrent-requests`, default 128): one more request is answered 429
    max_concurrent_requests: int | None = None


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
    gateway: dict | None  # the ingress in front of the service (rate limit → 429, route timeout → 504),
                          # for the gate
    slo: Slo | None
    allow_scale_to_zero: bool
    expected_load_s: float  # cold-start estimate the probes were sized from
    hpa_scaler: str  # Standard-mode concurrency: "keda" (ScaledObject) or "hpa" (adapter's Pods metric)
    prometheus_address: str  # the Prometheus KEDA's trigger queries
    prometheus_scrape_interval_s: float  # how often it scrapes the runtime (hpa.scrapeInterval)
    engine_profile: dict = field(default_factory=dict)  # measured engine figures → the simulation's server keys
    stress: StressConfig = StressConfig()  # the gate's stress scenarios (stackconfig/stress.py)
    model_public: bool = False  # model.public: the hf:// repository is not gated (stackconfig/model_credentials.py)
    # policyWaivers: policy rule id -> the reason; rendered as preflight.kserve.io/policy-waivers, read by the rules
    policy_waivers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GateConfig:
    """The SLO gate `pulumi up` runs before registering anything (gate/__init__.py)."""

    enabled: bool
    enforce: bool  # false: report misses as warnings and deploy anyway
    duration_s: float
    seed: int
    # Seconds the steady run simulates before its terms are measured (its workloads and pods run from t = 0; the
    # window is [warmup_s, warmup_s + duration_s)): 0 measures a fresh deploy's start (gate/stress.py).
    warmup_s: float = 0.0
    # Independent replications per scenario (simulation/replicate.py): at least `min_replications`, more while a
    # check's 95 % interval straddles its SLO, up to `max_replications`; then `undecided` ("estimate", "warn" or
    # "fail": gate/verdict.py) settles what is still undecided.
    min_replications: int = 5
    max_replications: int = 20
    undecided: str = "estimate"
    request_budget: int = 2_000_000  # most requests one simulation run may generate (simulation/budget.py)
    # most requests the whole gate may simulate, every scenario at max_replications (stackconfig/gate_runs.py)
    total_request_budget: int = 200_000_000
    # The scenarios the gate runs (gate/stress.py); every one by default.
    scenarios: tuple[str, ...] = ("steady", "spike", "rollout", "scaleFromZero", "nodeLoss")

    @property
    def steady_run_s(self) -> float:
        """The steady run's whole length: its warm-up, then its measured `duration_s`."""
        return self.warmup_s + self.duration_s


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
    knative: KnativeConfig = field(default_factory=KnativeConfig)
    kserve: KServeConfig = field(default_factory=KServeConfig)
    # The settings file it was read from (stacks/ or --stack-dir's): the file a later refusal of it names.
    source: str = field(default="", compare=False)

    @property
    def deploys_device_plugin(self) -> bool:
        """The stack's own NVIDIA device plugin DaemonSet: on, and not on a Bottlerocket NVIDIA AMI."""
        return self.device_plugin.enabled and self.node_group.needs_device_plugin


@dataclass(frozen=True)
class StackConfigContext:
    environment: str
    cluster: ClusterConfig
    node_group: NodeGroupConfig
    model_cache: ModelCacheConfig
    cold_start: ColdStartProfile
    catalog: Catalog
    knative: KnativeConfig = field(default_factory=KnativeConfig)  # the cluster the services' annotations meet
    kserve: KServeConfig = field(default_factory=KServeConfig)  # its version: the rules that changed between releases
