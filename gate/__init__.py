"""The SLO gate: simulate every service exactly as it is about to be deployed and compare with its SLO.

Each service's scenario is built from the stack config alone: the InferenceService (and HPA) dicts that the
components will hand to Pulumi, the service's `workload` and `client`, a cluster profile from the GPU node group
and `coldStart`, and the model from the catalog. The simulation reads the model-server settings (engine, caps,
`--max-num-seqs`, `--gpu-memory-utilization` …) from the manifest itself, so no knob is copied.

Verdicts hold statistically: every scenario runs as independent seeded replications, each SLO term is an
estimate with its 95 % interval, and replications are added until every term is decided (gate/verdict.py,
gate/sequential.py, simulation/replicate.py).

Simplification: services are simulated one at a time. Each gets the node group's GPUs less those the other
services hold at their `minReplicas` (whole nodes only), so a burst in one service does not see another's.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable

from catalog import DEFAULT as DEFAULT_CATALOG
from validation.errors import InputError, Problem
from manifests.inference_service import autoscaler, inference_service
from stackconfig.load import ROOT
from stackconfig.schema import ServiceConfig, StackConfig
from stackconfig.platform import load_gbps
from gate.verdict import Check, Verdict, judge
from gate.sequential import Trial, decide

__all__ = ["Check", "Verdict", "trials", "check_stack", "check_service", "gate_failure", "gate_warnings", "scenario_for",
           "cluster_profile"]

MIB, GIB = 2**20, 2**30


def _custom_catalog(cfg: StackConfig) -> dict:
    """Stack-config catalog entries the simulation's built-in catalog does not have (as `server.catalog`)."""
    out: dict[str, dict] = {}
    for key, mine, builtin in (("models", cfg.catalog.models, DEFAULT_CATALOG.models),
                               ("gpus", cfg.catalog.gpus, DEFAULT_CATALOG.gpus),
                               ("instance_types", cfg.catalog.instances, DEFAULT_CATALOG.instances)):
        extra = {name: {k: v for k, v in asdict(item).items() if k != "name"}
                 for name, item in mine.items() if builtin.get(name) != item}
        if extra:
            out[key] = extra
    return out


def cluster_profile(cfg: StackConfig, svc: ServiceConfig) -> dict:
    """The node group and cold-start priors in the simulation's units, for one service."""
    ng, cold = cfg.node_group, cfg.cold_start
    held_by_others = sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
    max_nodes = max(0, (ng.gpu_capacity - held_by_others) // ng.gpus_per_node)
    return {
        "instance_type": ng.instance_types[0],
        "gpus_per_node": ng.gpus_per_node,
        "max_nodes": max_nodes,
        "warm_nodes": min(max(ng.min_size, ng.desired_size), max_nodes),
        "node_provision_s": cold.node_provision_s,
        "image_gib": cold.image_gib,
        "image_pull_mib_s": cold.image_pull_mbps * 1e6 / MIB,
        # The prefetched PVC: every pod mounts the weights instead of downloading them.
        "model_cache_hit_ratio": 1.0 if cfg.model_cache.enabled else 0.0,
        "model_download_mib_s": cold.download_gbps * 1e9 / MIB,
        "load_gib_s": load_gbps(cold, cfg.model_cache) * 1e9 / GIB,  # capped by the cache storage (EFS)
        "warmup_s": cold.engine_init_s,
    }


def scenario_for(cfg: StackConfig, svc: ServiceConfig) -> dict:
    """The simulation scenario (a mapping) of one service as this stack would deploy it."""
    scenario: dict[str, Any] = {
        "name": f"{cfg.stack}/{svc.name}",
        "inferenceService": inference_service(cfg, svc),
        "workload": svc.workload,
        "cluster": cluster_profile(cfg, svc),
        "model": {"name": svc.model.name, "weights_gib": round(svc.model.weights_gib, 3)},
        "duration_s": cfg.gate.duration_s,
        "max_requests": cfg.gate.request_budget,
    }
    hpa = autoscaler(svc)  # an HPA or a KEDA ScaledObject; the simulation reads either
    if hpa:
        scenario["hpa"] = hpa
    if svc.client:
        scenario["client"] = svc.client
    server = dict(svc.engine_profile)  # measured figures (engineProfile) over the priors
    custom = _custom_catalog(cfg)
    if custom:
        server["catalog"] = custom
    if server:
        scenario["server"] = server
    return scenario


def _trial(cfg: StackConfig, svc: ServiceConfig) -> Trial:
    """The steady scenario of one service, its scenario key paths re-anchored on the stack config when invalid."""
    from simulation import load_scenario

    scenario = scenario_for(cfg, svc)
    try:
        load_scenario(scenario, base_dir=ROOT)
    except InputError as err:
        raise InputError([Problem(f"{cfg.project}:services[{cfg.services.index(svc)}]/{p.path}", p.value, p.allowed)
                          for p in err.problems], f"the gate's scenario for service {svc.name!r}") from None
    slo = svc.slo
    return Trial(svc.name, scenario, lambda reports: judge(svc.name, slo, reports,
                                                           undecided_policy=cfg.gate.undecided))


def trials(cfg: StackConfig) -> list[Trial]:
    """Every scenario the gate decides: each service that declares a workload and an SLO, steady traffic.

    Raises `validation.errors.InputError` when a workload (or client) mapping is not a valid scenario part.
    """
    return [_trial(cfg, svc) for svc in cfg.services if svc.workload is not None and svc.slo is not None]


def check_stack(cfg: StackConfig, executor: Any = None,
                on_round: Callable[[int, int], None] | None = None) -> list[Verdict]:
    """Every trial replicated until decided (gate/sequential.py), in `trials(cfg)` order."""
    return list(decide(trials(cfg), cfg.gate, executor, on_round).values())


def check_service(cfg: StackConfig, svc: ServiceConfig, executor: Any = None) -> Verdict | None:
    """One service's verdict; None when it declares no workload or no SLO."""
    if svc.workload is None or svc.slo is None:
        return None
    return decide([_trial(cfg, svc)], cfg.gate, executor)[svc.name]


def gate_failure(verdicts: list[Verdict]) -> str | None:
    """The message `pulumi up` fails with, or None when every simulated service meets its SLO."""
    misses = [m for v in verdicts for m in v.misses()]
    if not misses:
        return None
    return ("SLO gate: the simulation predicts that this configuration misses its SLO:\n"
            + "\n".join(f"  - {m}" for m in misses)
            + "\nRun `python -m preflight check --stack <stack>` for the full report, change the service "
              "(replicas, containerConcurrency, caps, scale-down delay) or its SLO, or set gate.enforce: false.")


def gate_warnings(verdicts: list[Verdict]) -> list[str]:
    """Checks still undecided after the replication budget, under `gate.undecided: warn`."""
    return [w for v in verdicts for w in v.warnings()]
