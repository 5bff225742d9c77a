"""Scenario files: the InferenceService manifest + workload + client + gateway + cluster + model + server.

`config_autoscaler` holds the cluster's knative-serving/config-autoscaler data (its own keys, e.g.
`max-scale-up-rate: "10"`; simulation/autoscaler/cluster_config.py) for what-if runs of a cluster whose admin
changed Knative's defaults.

Every mistake becomes a `validation.errors.Problem` naming its key; `load_scenario` raises one `InputError`
with all of them before anything is simulated. Units are in key names (`_s` seconds, `_gib` GiB,
`_mib_s` MiB per second, `_gib_s` GiB per second).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from validation.errors import InputError, Problem
from validation.fields import Section
from validation.kubernetes import crd_errors
from validation.yaml_input import plain, read_yaml
from simulation.autoscaler.cluster_config import parse_config_autoscaler
from simulation.budget import DEFAULT_REQUEST_BUDGET, budget_problem
from simulation.dists import RATE_KINDS, Dist, parse_dist
from simulation.engine_flags import manifest_problems
from simulation.isvc import ServingSpec, server_from_manifest
from simulation.server import get_server, server_kinds
from simulation.workload import WorkloadSpec, parse_workload, timing_problem


# ---------------------------------------------------------------------------------------------------
# Profiles
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusterProfile:
    """GPU node group and the cold-start pipeline (reference knative-kserve.md §6 for ranges)."""

    instance_type: str = ""
    gpus_per_node: int = 1
    max_nodes: int = 10
    warm_nodes: int | None = None            # ready at t = 0; None = as many as the initial pods need
    node_provision_s: Dist = Dist("uniform", 60.0, 180.0)
    node_idle_timeout_s: float = 600.0       # cluster-autoscaler scale-down-unneeded-time 10 min
    image_gib: float = 10.0
    image_pull_mib_s: Dist = Dist("fixed", 100.0)   # per node's pull
    image_cached_on_warm_nodes: bool = True
    model_cache: str = "node"                # none | node (a node keeps weights it has downloaded)
    model_cached_on_warm_nodes: bool = True
    model_cache_hit_ratio: float = 0.0       # chance a download is skipped anyway (shared cache / PVC)
    model_download_mib_s: Dist = Dist("fixed", 500.0)  # per download
    load_gib_s: Dist = Dist("fixed", 2.0)    # weights → GPU memory, per pod start
    load_total_gib_s: float | None = None    # what all pods loading at once share (the model cache's file system
                                             # reads; simulation/shared_reads.py); None: no shared limit
    warmup_s: Dist = Dist("fixed", 10.0)     # engine init, CUDA graphs, warm-up requests
    activator_probe_s: float = 0.2           # knative activator/net/revision_backends.go probe period


@dataclass(frozen=True)
class ModelProfile:
    name: str = "model"
    weights_gib: float = 0.0
    download_gib: float | None = None   # what the storage initializer fetches (an hf:// repo whole); None: weights

    @property
    def download(self) -> float:
        return self.weights_gib if self.download_gib is None else self.download_gib


@dataclass(frozen=True)
class ClientSpec:
    """Client behaviour: timeout, retries with exponential back-off and jitter, and a retry budget.

    Back-off before retry n (n = 1, 2 ...): d = min(backoff_max_s, backoff_base_s · multiplier^(n−1)); jitter
    `full` draws U(0, d), `equal` d/2 + U(0, d/2), `none` d (AWS Architecture Blog, "Exponential Backoff And
    Jitter"). The budget is gRPC's retry throttling (gRFC A6): tokens start at max_tokens, a failed attempt
    takes 1, a success gives token_ratio back; retries are allowed only while tokens > max_tokens / 2.
    """

    timeout_s: float | None = None
    max_retries: int = 0
    retry_on: tuple[int, ...] = (429, 502, 503, 504)
    backoff_base_s: float = 0.5
    backoff_multiplier: float = 2.0
    backoff_max_s: float = 30.0
    jitter: str = "full"
    budget_max_tokens: float | None = None
    budget_token_ratio: float = 0.1


@dataclass(frozen=True)
class GatewaySpec:
    """Ingress gateway: optional token bucket (Envoy local rate limit → 429) and a route timeout (→ 504)."""

    rate_limit_per_s: float | None = None
    burst: float = 1.0
    limit_status: int = 429
    timeout_s: float | None = None


@dataclass(frozen=True)
class ServerConfig:
    kind: str = "simple"
    spec: Any = None


@dataclass(frozen=True)
class Scenario:
    serving: ServingSpec
    workload: WorkloadSpec
    client: ClientSpec = ClientSpec()
    gateway: GatewaySpec = GatewaySpec()
    cluster: ClusterProfile = ClusterProfile()
    model: ModelProfile = ModelProfile()
    server: ServerConfig = ServerConfig()
    duration_s: float = 600.0
    warmup_s: float = 0.0
    drain_s: float = 900.0
    seed: int | None = None
    name: str = "scenario"
    initial_replicas: int | None = None      # pods ready at t = 0 (None = max(min, initial scale))
    queue_depth_factor: int = 10             # what-if: queue-proxy queue = factor · CC (Knative: 10)
    series_interval_s: float | None = None
    manifest: dict = field(default_factory=dict)
    max_requests: int = DEFAULT_REQUEST_BUDGET   # the request budget; the client's retries get as many again


def _rate(sec: Section, key: str, default: Dist, unit: str) -> Dist:
    return parse_dist(sec, key, default, positive=True, unit=unit, kinds=RATE_KINDS)


def parse_cluster(sec: Section) -> ClusterProfile:
    d = ClusterProfile()
    cache = sec.choice("model_cache", ["none", "node"], d.model_cache)
    out = ClusterProfile(
        instance_type=sec.str("instance_type", d.instance_type),
        gpus_per_node=sec.int("gpus_per_node", d.gpus_per_node, min=1, max=64),
        max_nodes=sec.int("max_nodes", d.max_nodes, min=0, max=10000),
        warm_nodes=sec.int("warm_nodes", None, min=0, max=10000),
        node_provision_s=parse_dist(sec, "node_provision_s", d.node_provision_s),
        node_idle_timeout_s=sec.float("node_idle_timeout_s", d.node_idle_timeout_s, min=0),
        image_gib=sec.float("image_gib", d.image_gib, min=0),
        image_pull_mib_s=_rate(sec, "image_pull_mib_s", d.image_pull_mib_s, "MiB/s"),
        image_cached_on_warm_nodes=sec.bool("image_cached_on_warm_nodes", d.image_cached_on_warm_nodes),
        model_cache=cache,
        model_cached_on_warm_nodes=sec.bool("model_cached_on_warm_nodes", d.model_cached_on_warm_nodes),
        model_cache_hit_ratio=sec.float("model_cache_hit_ratio", d.model_cache_hit_ratio, min=0, max=1),
        model_download_mib_s=_rate(sec, "model_download_mib_s", d.model_download_mib_s, "MiB/s"),
        load_gib_s=_rate(sec, "load_gib_s", d.load_gib_s, "GiB/s"),
        load_total_gib_s=sec.float("load_total_gib_s", d.load_total_gib_s, min=0, min_exclusive=True),
        warmup_s=parse_dist(sec, "warmup_s", d.warmup_s),
        activator_probe_s=sec.float("activator_probe_s", d.activator_probe_s, min=0),
    )
    if out.warm_nodes is not None and out.warm_nodes > out.max_nodes:
        sec.problem("warm_nodes", out.warm_nodes, f"expected <= max_nodes ({out.max_nodes})")
    sec.done()
    return out


def parse_model(sec: Section) -> ModelProfile:
    out = ModelProfile(name=sec.str("name", "model"), weights_gib=sec.float("weights_gib", 0.0, min=0),
                       download_gib=sec.float("download_gib", None, min=0))
    sec.done()
    return out


def parse_client(sec: Section) -> ClientSpec:
    d = ClientSpec()
    retry_on = sec.raw("retry_on")
    codes = d.retry_on
    if retry_on is not None:
        if not isinstance(retry_on, list) or not all(c in (429, 500, 502, 503, 504) for c in retry_on):
            sec.problem("retry_on", retry_on, "expected a list of status codes from 429, 500, 502, 503, 504")
        else:
            codes = tuple(int(c) for c in retry_on)
    budget = sec.section("retry_budget")
    has_budget = sec.has("retry_budget")
    out = ClientSpec(
        timeout_s=sec.float("timeout_s", None, min=0, min_exclusive=True),
        max_retries=sec.int("max_retries", 0, min=0, max=20),
        retry_on=codes,
        backoff_base_s=sec.float("backoff_base_s", d.backoff_base_s, min=0),
        backoff_multiplier=sec.float("backoff_multiplier", d.backoff_multiplier, min=1),
        backoff_max_s=sec.float("backoff_max_s", d.backoff_max_s, min=0),
        jitter=sec.choice("jitter", ["full", "equal", "none"], d.jitter),
        budget_max_tokens=budget.float("max_tokens", 10.0 if has_budget else None, min=1) if has_budget else None,
        budget_token_ratio=(budget.float("token_ratio", d.budget_token_ratio, min=0, max=1) if has_budget
                            else d.budget_token_ratio),
    )
    if has_budget:
        budget.done()
    sec.done()
    return out


def parse_gateway(sec: Section) -> GatewaySpec:
    rl = sec.section("rate_limit")
    has_rl = sec.has("rate_limit")
    out = GatewaySpec(
        rate_limit_per_s=rl.float("rate_per_s", None, min=0, min_exclusive=True, required=True) if has_rl else None,
        burst=rl.float("burst", 1.0, min=1) if has_rl else 1.0,
        limit_status=int(rl.choice("status", [429, 503], 429)) if has_rl else 429,
        timeout_s=sec.float("timeout_s", None, min=0, min_exclusive=True),
    )
    if has_rl:
        rl.done()
    sec.done()
    return out


def _server_section(top: Section, manifest: Any, serving: ServingSpec,
                    cluster: ClusterProfile) -> tuple[Section, bool]:
    """The scenario's `server:` over what the manifest states (simulation.isvc.server_from_manifest), with the
    cluster's instance type as the GPU when a GPU server names none; and whether the server reads the manifest's
    runtime (a scenario naming another server kind gets none of it)."""
    explicit = top.section("server")
    derived = server_from_manifest(manifest, serving)
    if not derived or explicit.data.get("kind", derived["kind"]) != derived["kind"]:
        return explicit, False
    if cluster.instance_type and not {"gpu", "instance_type"} & set(explicit.data):
        derived["instance_type"] = cluster.instance_type
    return Section({**derived, **explicit.data}, explicit.path, explicit.problems), True


def parse_server(sec: Section, model: ModelProfile) -> ServerConfig:
    kind = sec.str("kind", "simple")
    cls = get_server(kind)
    if cls is None:
        sec.problem("kind", kind, "expected one of " + ", ".join(repr(k) for k in server_kinds()))
        return ServerConfig(kind, None)
    spec = cls.parse_spec(sec, model)
    sec.done()
    return ServerConfig(kind, spec)


# Timeline samples per run (duration_s / series_interval_s): each is a simulated event and a row of every bin of the
# report's timeline, so an unbounded count is unbounded time and memory (30 days at 0.1 s: 26 million). 50,000 is
# 1 s over 13.9 h or 0.1 s over 83 min; the default interval (duration/200) stays at 200.
MAX_SERIES_SAMPLES = 50_000
# The drain after duration_s (engine.Sim.run) goes on while anything is open, up to drain_s: its cost is the events
# in it (timers, autoscaler ticks, a retry's back-off), and a request open past it is answered `unanswered` at the
# horizon. One day bounds that cost (Knative's ticks over a day: seconds) and is far past any client's patience
# (the same cap as a service's progress deadline in the gate).
MAX_DRAIN_S = 86_400.0

TOP_KEYS = ("name", "inferenceService", "inferenceServiceFile", "hpa", "workload", "client", "gateway", "cluster",
            "config_autoscaler", "model", "server", "duration_s", "warmup_s", "drain_s", "seed", "initial_replicas",
            "what_if", "series_interval_s", "max_requests")


def _check_isvc_schema(manifest: Any, path: str, problems: list[Problem]) -> None:
    """The embedded InferenceService against the CRD schema the stack's manifests are checked with (closed
    objects, so `containerConcurency` is an error rather than a silently ignored field). apiVersion, kind and a
    name are filled in when the scenario leaves them out."""
    if not isinstance(manifest, dict):
        return
    meta = manifest.get("metadata")
    full = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", **manifest}
    if isinstance(meta, dict) and "name" not in meta:
        full["metadata"] = {"name": "isvc", **meta}
    for where, message in crd_errors(full):
        problems.append(Problem(f"{path}.{where}" if where != "(root)" else path, "(InferenceService)",
                                f"expected a valid KServe v1beta1 InferenceService: {message}"))


def load_scenario(path_or_mapping: Any, *, base_dir: Any = None, max_requests: int | None = None) -> Scenario:
    """Parse a scenario file path or an already-loaded mapping; raises InputError listing every problem.

    `max_requests` (the CLI's --max-requests) overrides the scenario's own `max_requests` request budget."""
    problems: list[Problem] = []
    source = ""
    if isinstance(path_or_mapping, (str, os.PathLike)):
        path = Path(path_or_mapping)
        source = str(path)
        data = read_yaml(path, "(scenario file)", problems)
        if problems:
            raise InputError(problems, source)
        base = str(path.resolve().parent) if base_dir is None else str(base_dir)
    else:
        data = plain(path_or_mapping, "", problems)
        base = str(base_dir) if base_dir is not None else os.getcwd()
    top = Section(data, "", problems)

    manifest = top.raw("inferenceService")
    hpa_manifest = top.raw("hpa")
    isvc_file = top.str("inferenceServiceFile", None)
    if manifest is None and isvc_file is None:
        problems.append(Problem("inferenceService", None,
                                "required: embed the InferenceService manifest, or name it with inferenceServiceFile"))
    elif manifest is not None and isvc_file is not None:
        problems.append(Problem("inferenceServiceFile", isvc_file,
                                "give either inferenceService or inferenceServiceFile, not both"))
    elif isvc_file is not None:
        docs = read_yaml(Path(base) / isvc_file, "inferenceServiceFile", problems, multi=True) or []
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "InferenceService" and manifest is None:
                manifest = doc
            elif isinstance(doc, dict) and doc.get("kind") in ("HorizontalPodAutoscaler", "ScaledObject") \
                    and hpa_manifest is None:
                hpa_manifest = doc
        if manifest is None and not any(p.path == "inferenceServiceFile" for p in problems):
            problems.append(Problem("inferenceServiceFile", isvc_file,
                                    "the file holds no document with kind: InferenceService"))
    isvc_path = "inferenceService" if isvc_file is None else f"inferenceServiceFile({isvc_file})"
    _check_isvc_schema(manifest, isvc_path, problems)
    knative = parse_config_autoscaler(top.raw("config_autoscaler"), "config_autoscaler", problems)
    serving = ServingSpec.from_manifest(manifest or {"spec": {"predictor": {}}}, hpa_manifest, isvc_path, problems,
                                        knative)
    if top.has("hpa") and serving.mode != "Standard":
        top.problem("hpa", "(HorizontalPodAutoscaler)", "an HPA manifest is only used in Standard (RawDeployment) "
                    "mode; this InferenceService is in Knative mode")
    workload = parse_workload(top.section("workload", required=True), base_dir=base)
    client = parse_client(top.section("client"))
    gateway = parse_gateway(top.section("gateway"))
    cluster = parse_cluster(top.section("cluster"))
    model = parse_model(top.section("model"))
    explicit = top.data.get("server") if isinstance(top.data, dict) else None
    explicit_keys = set(explicit) if isinstance(explicit, dict) else set()
    server_sec, reads_manifest = _server_section(top, manifest, serving, cluster)
    server = parse_server(server_sec, model)
    if reads_manifest:   # the manifest's runtime as its server reads it, against the server simulated from it
        where = serving.container_path or "inferenceService"
        if "block_size" not in explicit_keys:   # a manifest's --block-size: reported once, at the args that set it
            problems[:] = [p for p in problems if p.path != server_sec.key_path("block_size")]
        for key, value, why in manifest_problems(server.kind, serving, server.spec):
            problems.append(Problem(f"{where}.{key}", value, why))
    before = len(problems)
    duration = top.float("duration_s", 600.0, min=1.0, max=30 * 86400.0, required=True)
    # A duration_s refused (or missing) reads as the default 600 s: what is checked against it below would name a
    # figure the user never typed, so it waits for a valid duration.
    duration_ok = len(problems) == before
    before = len(problems)
    budget = top.int("max_requests", DEFAULT_REQUEST_BUDGET, min=1, max=10**12)
    budget_ok = len(problems) == before
    if max_requests is not None:
        budget, budget_ok = max_requests, True
    if duration_ok and budget_ok and not any(p.path.startswith("workload") for p in problems):
        over = budget_problem(workload, duration, budget, "workload", "raise the budget with max_requests "
                              "(or --max-requests)")
        problems.extend(p for p in (over, timing_problem(workload, duration, "workload")) if p)
    warmup = top.float("warmup_s", 0.0, min=0.0)
    if duration_ok and warmup is not None and warmup >= duration:
        top.problem("warmup_s", warmup, f"expected less than duration_s ({duration})")
    what_if = top.section("what_if")
    qdf = what_if.int("queue_depth_factor", 10, min=0, max=1000)
    what_if.done()
    initial = top.int("initial_replicas", None, min=0, max=10000)
    interval = top.float("series_interval_s", None, min=0.1)
    if duration_ok and interval is not None and duration / interval > MAX_SERIES_SAMPLES:
        top.problem("series_interval_s", interval, f"expected at least duration_s / {MAX_SERIES_SAMPLES:,} = "
                    f"{duration / MAX_SERIES_SAMPLES:g} s for duration_s {duration:g} (at most {MAX_SERIES_SAMPLES:,} "
                    "timeline samples per run: each is a simulated event and a row of the report); raise "
                    "series_interval_s or shorten duration_s")
    sc = Scenario(
        serving=serving, workload=workload, client=client, gateway=gateway, cluster=cluster, model=model,
        server=server, duration_s=duration, warmup_s=warmup,
        drain_s=top.float("drain_s", 900.0, min=0.0, max=MAX_DRAIN_S),
        seed=top.int("seed", None, min=0), name=top.str("name", Path(source).stem if source else "scenario"),
        initial_replicas=initial, queue_depth_factor=qdf,
        series_interval_s=interval,
        manifest=manifest if isinstance(manifest, dict) else {},
        max_requests=budget if budget_ok and budget is not None else DEFAULT_REQUEST_BUDGET,
    )
    if serving.gpus > cluster.gpus_per_node:
        problems.append(Problem("cluster.gpus_per_node", cluster.gpus_per_node,
                                f"the predictor asks for {serving.gpus} GPUs per pod "
                                "(resources.limits nvidia.com/gpu); "
                                "no node could ever hold it"))
    if initial is not None and serving.kpa.max_scale and initial > serving.kpa.max_scale:
        top.problem("initial_replicas", initial, f"expected <= the service's max replicas ({serving.kpa.max_scale})")
    top.done()
    if problems:
        raise InputError(problems, source)
    return sc
