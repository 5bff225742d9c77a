"""The SLO gate: simulate every service exactly as it is about to be deployed and compare with its SLO.

Each service's scenario is built from the stack config alone: the InferenceService (and HPA) dicts that the
components will hand to Pulumi, the service's `workload` and `client`, a cluster profile from the GPU node group
and `coldStart`, and the model from the catalog. The simulation reads the model-server settings (engine, caps,
`--max-num-seqs`, `--gpu-memory-utilization` …) from the manifest itself, so no knob is copied.

Simplification: services are simulated one at a time. Each gets the node group's GPUs less those the other
services hold at their `minReplicas` (whole nodes only), so a burst in one service does not see another's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Callable

from catalog import DEFAULT as DEFAULT_CATALOG
from validation.errors import InputError, Problem
from simulation.analytic import wilson
from manifests.inference_service import horizontal_pod_autoscaler, inference_service
from stackconfig.load import ROOT
from stackconfig.schema import ServiceConfig, StackConfig

MIB, GIB = 2**20, 2**30


@dataclass(frozen=True)
class Check:
    """One SLO term: the simulated value against its limit (`ci95` where the simulation gives one)."""

    name: str
    observed: float | None
    limit: float
    ci95: tuple[float, float] | None = None

    @property
    def ok(self) -> bool:
        return self.observed is not None and self.observed <= self.limit


@dataclass(frozen=True)
class Verdict:
    service: str
    checks: tuple[Check, ...]
    report: dict  # the simulation's JSON object

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    def misses(self) -> list[str]:
        return [f"{self.service}: {c.name} {_fmt(c.observed)} > SLO {_fmt(c.limit)}"
                + (f" (95% CI {_fmt(c.ci95[0])}–{_fmt(c.ci95[1])})" if c.ci95 else "")
                for c in self.checks if not c.ok]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


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
        "load_gib_s": cold.load_gbps * 1e9 / GIB,
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
    }
    hpa = horizontal_pod_autoscaler(svc)
    if hpa:
        scenario["hpa"] = hpa
    if svc.client:
        scenario["client"] = svc.client
    custom = _custom_catalog(cfg)
    if custom:
        scenario["server"] = {"catalog": custom}
    return scenario


@lru_cache(maxsize=64)
def _simulate(scenario_json: str, seed: int) -> dict:
    """Seeded, so a result depends on the scenario and the seed alone; cached per process."""
    from simulation import load_scenario, run_simulation

    scenario = load_scenario(json.loads(scenario_json), base_dir=ROOT)
    return run_simulation(scenario, seed=seed).to_dict()


def check_service(cfg: StackConfig, svc: ServiceConfig) -> Verdict | None:
    """Simulate one service and compare with its SLO; None when it declares no workload or no SLO.

    Raises `validation.errors.InputError` when the workload (or client) mapping is not a valid scenario part.
    """
    if svc.workload is None or svc.slo is None:
        return None
    scenario = scenario_for(cfg, svc)
    try:
        report = _simulate(json.dumps(scenario, sort_keys=True), cfg.gate.seed)
    except InputError as err:  # re-anchor the scenario's key paths on the stack config
        raise InputError([Problem(f"{cfg.project}:services[{cfg.services.index(svc)}]/{p.path}", p.value, p.allowed)
                          for p in err.problems], f"the gate's scenario for service {svc.name!r}") from None
    slo = svc.slo
    rates = report.get("error_rates", {})
    # Server-side errors: everything but 200 and the input-cap 400s (the client's mistake, refused on purpose).
    n, counts = report["requests"], report["status_counts"]
    failed = n - counts.get("200", 0) - counts.get("400", 0)
    checks = [
        Check("p99 latency (s)", (report.get("latency_s") or {}).get("p99"), slo.p99_latency_s),
        Check("error rate", failed / n if n else 0.0, slo.max_error_rate, wilson(failed, n)),
        Check("503 rate", rates.get("503", {}).get("rate", 0.0), slo.max_503_rate,
              tuple(rates["503"]["ci95"]) if "503" in rates else wilson(0, n)),
    ]
    if slo.p99_ttft_s is not None:
        checks.append(Check("p99 time to first token (s)", (report.get("ttfb_s") or {}).get("p99"), slo.p99_ttft_s))
    if slo.max_cold_start_s is not None:
        worst = (report.get("cold_start_s") or {}).get("max", 0.0) if report.get("cold_starts") else 0.0
        checks.append(Check("longest cold start (s)", worst, slo.max_cold_start_s))
    return Verdict(svc.name, tuple(checks), report)


def check_stack(cfg: StackConfig, on_service: Callable[[ServiceConfig], None] | None = None) -> list[Verdict]:
    verdicts = []
    for svc in cfg.services:
        if on_service:
            on_service(svc)
        verdict = check_service(cfg, svc)
        if verdict is not None:
            verdicts.append(verdict)
    return verdicts


def gate_failure(verdicts: list[Verdict]) -> str | None:
    """The message `pulumi up` fails with, or None when every simulated service meets its SLO."""
    misses = [m for v in verdicts for m in v.misses()]
    if not misses:
        return None
    return ("SLO gate: the simulation predicts that this configuration misses its SLO:\n"
            + "\n".join(f"  - {m}" for m in misses)
            + "\nRun `python -m preflight check --stack <stack>` for the full report, change the service "
              "(replicas, containerConcurrency, caps, scale-down delay) or its SLO, or set gate.enforce: false.")
