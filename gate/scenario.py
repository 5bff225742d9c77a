"""One service's simulation scenario as the stack would deploy it (`scenario_for`), and the node group and
cold-start priors in the simulation's units (`cluster_profile`): built from the stack config alone, the
InferenceService and autoscaler dicts the components hand to Pulumi included, so no knob is copied."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from catalog import DEFAULT as DEFAULT_CATALOG
from manifests.inference_service import autoscaler, inference_service
from stackconfig.platform import cache_read_mib_s, load_gbps
from stackconfig.schema import ServiceConfig, StackConfig

MIB, GIB = 2**20, 2**30


def _custom_catalog(cfg: StackConfig) -> dict:
    """Stack-config catalog entries the simulation's built-in catalog does not have (as `server.catalog`). A GPU
    goes with its link resolved (`Gpu.link`: the one the stack's catalog kept or defaulted), which the scenario
    reader requires to be stated in full."""
    out: dict[str, dict] = {}
    for key, mine, builtin in (("models", cfg.catalog.models, DEFAULT_CATALOG.models),
                               ("gpus", cfg.catalog.gpus, DEFAULT_CATALOG.gpus),
                               ("instance_types", cfg.catalog.instances, DEFAULT_CATALOG.instances)):
        extra = {name: {k: v for k, v in asdict(item).items() if k != "name"}
                 for name, item in mine.items() if builtin.get(name) != item}
        if key == "gpus":
            for name, fields in extra.items():
                fields["interconnect"], fields["interconnect_gbps"] = mine[name].link
        if extra:
            out[key] = extra
    return out


def cluster_profile(cfg: StackConfig, svc: ServiceConfig | None = None) -> dict:
    """The node group and cold-start priors in the simulation's units: the whole node group (`svc` None, as
    the fleet simulation uses it), or what one service simulated alone may use: the node group less the GPUs
    the other services hold at their `minReplicas` (whole nodes only)."""
    ng, cold = cfg.node_group, cfg.cold_start
    held_by_others = 0 if svc is None else sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
    max_nodes = max(0, (ng.gpu_capacity - held_by_others) // ng.gpus_per_node)
    return {
        "instance_type": ng.instance_types[0],
        "gpus_per_node": ng.gpus_per_node,
        "max_nodes": max_nodes,
        "warm_nodes": min(ng.min_size, max_nodes),  # the cluster-autoscaler removes empty nodes down to minSize
        # Each prior as the user gave it, a number or a distribution the simulation draws from (simulation/dists.py)
        "node_provision_s": cold.node_provision_s.spec(),
        "image_gib": cold.image_gib,
        "image_pull_mib_s": cold.image_pull_mbps.scaled(1e6 / MIB).spec(),
        # The prefetched PVC: every pod mounts the weights instead of downloading them (hit ratio 1: no download,
        # whatever `model_cache` says). Without it KServe's storage initializer downloads them into each pod's own
        # emptyDir (kserve pkg/webhook/admission/pod/storage_initializer_injector.go), as `expected_load_s`
        # counts: no node keeps them for its next pod (`none`, not the simulation's default `node`).
        "model_cache": "node" if cfg.model_cache.enabled else "none",
        "model_cache_hit_ratio": 1.0 if cfg.model_cache.enabled else 0.0,
        "model_download_mib_s": cold.download_gbps.scaled(1e9 / MIB).spec(),
        "load_gib_s": load_gbps(cold, cfg.model_cache).scaled(1e9 / GIB).spec(),  # capped by the cache storage (EFS)
        "warmup_s": cold.engine_init_s.spec(),
    } | ({"load_total_gib_s": cache_read_mib_s(cfg.model_cache) * MIB / GIB} if cfg.model_cache.enabled else {})


def _model_profile(svc: ServiceConfig) -> dict:
    """The scenario's `model`: the weights it loads and, where more, what its download fetches (an hf:// repository
    whole, `catalog.Model.download_bytes`)."""
    out = {"name": svc.model.name, "weights_gib": round(svc.model.weights_gib, 3)}
    download = round(svc.model.download_gib(svc.storage_uri), 3)
    if download != out["weights_gib"]:
        out["download_gib"] = download
    return out


def scenario_for(cfg: StackConfig, svc: ServiceConfig) -> dict:
    """The simulation scenario (a mapping) of one service as this stack would deploy it."""
    scenario: dict[str, Any] = {
        "name": f"{cfg.stack}/{svc.name}",
        "inferenceService": inference_service(cfg, svc),
        "workload": svc.workload,
        "cluster": cluster_profile(cfg, svc),
        "model": _model_profile(svc),
        "duration_s": cfg.gate.duration_s,
        "max_requests": cfg.gate.request_budget,
    }
    knative = cfg.knative.autoscaler.data()  # config-autoscaler as patched or declared: Knative's defaults else
    if knative:
        scenario["config_autoscaler"] = knative
    hpa = autoscaler(svc)  # an HPA or a KEDA ScaledObject; the simulation reads either
    if hpa:
        scenario["hpa"] = hpa
    if svc.client:
        scenario["client"] = svc.client
    if svc.gateway:
        scenario["gateway"] = svc.gateway
    server = dict(svc.engine_profile)  # measured figures (engineProfile) over the priors
    custom = _custom_catalog(cfg)
    if custom:
        server["catalog"] = custom
    if server:
        scenario["server"] = server
    return scenario
