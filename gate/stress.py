"""The gate's scenarios: generated from the stack config, one fleet simulation each (simulation/fleet.py).

Every service of the stack runs in every scenario on the one GPU node group, so services compete for its GPUs
(a service without a workload still holds its replicas). The scenarios, and the SLO each one is held to when
`services[].stress.<kind>.slo` does not say otherwise:

| scenario | what happens | default SLO (from the steady `slo`) |
| --- | --- | --- |
| `steady` | the services' own workloads for `gate.durationS` after `gate.warmupS` (0 by default: measured from t = 0): each service starts with max(minReplicas, initial-scale) pods Ready and its full load at once, so without a warm-up the terms include the first minutes' scale-up | the `slo` itself |
| `spike` | each service's traffic × `factor` (3) for `durationS` (120 s) from `atS` (120 s), at the same time (correlated spikes are the case that exhausts a shared node group) | latency limits × 2, rate limits as steady, no cold-start limit |
| `rollout` | at `atS` (60 s) each Knative service's new revision starts at max(minReplicas, initial-scale) cold pods on the GPUs actually free, while the old one serves; the route moves once that many are Ready, and the old revision, unreachable, scales down (simulation/stress.py) | as steady without the cold-start limit, and fewer than 1 run in 5 with the new revision not Ready within the progress deadline (gate/verdict.py `rollout_check`) |
| `scaleFromZero` | services that may scale to zero (minReplicas 0, and `knative.autoscaler` leaves enable-scale-to-zero on) start at zero pods while their traffic arrives | as steady |
| `nodeLoss` | at `atS` (120 s) the busiest GPU node disappears; its pods go NotReady at `notReadyS` (50 s), until then the activator still sends to them (502 after the dial back-off), and are replaced at `replaceS` (drawn, 90-115 s); the node group replaces the node (simulation/node_loss.py) | latency limits × 2, rate limits × 10, no cold-start limit |

Stress scenarios run for `STRESS_DURATION_S` (600 s; a rollout: its start + the progress deadline + 60 s).
Stress may need new nodes, whose provisioning no setting of the service shortens, so the longest-cold-start
limit applies only where the steady SLO has it and the run needs no new node by design (steady, scale from zero); users
still see a slow cold start in the latency and error terms. The rate limits are relaxed for a node loss because its
in-flight requests fail whatever the settings; the latency limits for a spike and a node loss because queueing while
capacity catches up is expected.
The steady terms are those of a fresh deploy's first `durationS`, not of a stationary state: for a service
whose load needs more pods than it starts with they are pessimistic (dev's p99 TTFT read 73 % higher than
after 600 s of warm-up, review rev13-stats finding 4), for one whose queues start empty slightly optimistic
(prod's chat p99 1 % lower). `gate.warmupS` (0 by default) simulates that many seconds first and measures
the steady terms over the `durationS` after them; a longer `durationS` only dilutes the start.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from simulation.isvc import ServingSpec
from stackconfig.schema import ServiceConfig, Slo, StackConfig
from stackconfig.stress import STRESS_DURATION_S, judged_in, rollout_run_s, scenario_settings, settings

IDLE_WORKLOAD = {"kind": "poisson", "rate": 1e-6}   # a service the gate does not check still holds its pods
KINDS = ("steady", "spike", "rollout", "scaleFromZero", "nodeLoss")


@dataclass(frozen=True)
class GateScenario:
    """One fleet simulation of the stack and the SLO each checked service is held to in it."""

    kind: str
    fleet: dict                  # simulation/fleet.py mapping (JSON-able)
    slos: dict                   # service name → Slo
    extra: dict                  # service name → extra checks' settings (rollout: progress deadline)

    @property
    def name(self) -> str:
        return self.fleet["name"]


def _scale(slo: Slo, latency: float = 1.0, rates: float = 1.0, cold_start: bool = True) -> Slo:
    return replace(slo, max_cold_start_s=slo.max_cold_start_s if cold_start else None,
                   p99_latency_s=slo.p99_latency_s * latency,
                   p99_ttft_s=None if slo.p99_ttft_s is None else slo.p99_ttft_s * latency,
                   max_error_rate=min(1.0, slo.max_error_rate * rates), max_503_rate=min(1.0, slo.max_503_rate * rates))


DERIVED = {"steady": {}, "spike": {"latency": 2.0, "cold_start": False}, "rollout": {"cold_start": False},
           "scaleFromZero": {}, "nodeLoss": {"latency": 2.0, "rates": 10.0, "cold_start": False}}


def stress_slo(svc: ServiceConfig, kind: str) -> Slo:
    """The SLO of one service in one scenario: derived from the steady one, then the service's overrides."""
    slo = _scale(svc.slo, **DERIVED[kind])
    if kind == "steady":
        return svc.slo
    return replace(slo, **scenario_settings(svc.stress, kind).slo)


def progress_deadline_s(isvc: dict) -> float:
    """The revision's progress deadline as the simulation reads it from the InferenceService (its serving spec's
    `kpa.progress_deadline_s`: the rollout's verdict and the KPA's activation timeout), so the gate's run length
    and rollout term are the simulated rollout's."""
    return ServingSpec.from_manifest(isvc, problems=[]).kpa.progress_deadline_s   # bad input: refused earlier


def _checked(svc: ServiceConfig) -> bool:
    return svc.workload is not None and svc.slo is not None


def gate_scenarios(cfg: StackConfig, service_scenario: Any, node_group: dict,
                   kinds: tuple[str, ...] = KINDS) -> list[GateScenario]:
    """The stack's gate scenarios. `service_scenario(cfg, svc)` gives a service's scenario mapping;
    `node_group` the cluster mapping of the whole node group."""
    checked = [s for s in cfg.services if _checked(s)]
    if not checked:
        return []
    base = []
    for svc in cfg.services:
        scenario = service_scenario(cfg, svc)
        if not _checked(svc):
            scenario["workload"] = IDLE_WORKLOAD
        for key in ("cluster", "duration_s"):
            scenario.pop(key, None)
        base.append((svc, scenario))

    def fleet(kind: str, duration: float, members: list[dict], **extra: Any) -> dict:
        return {"name": f"{cfg.stack}/{kind}", "duration_s": duration, "cluster": node_group,
                "services": members, **extra}

    out = []
    if "steady" in kinds:
        warmup = {"warmup_s": cfg.gate.warmup_s} if cfg.gate.warmup_s else {}
        steady = fleet("steady", cfg.gate.steady_run_s, [{"scenario": s} for _, s in base], **warmup)
        out.append(GateScenario("steady", steady, {s.name: s.slo for s in checked}, {}))
    on = {kind: [s for s in checked if judged_in(s, kind)] for kind in KINDS[1:]}
    if "spike" in kinds and on["spike"]:
        members = []
        for svc, sc in base:
            spike = settings("spike", svc.stress.spike.params) if svc in on["spike"] else None
            members.append({"scenario": sc, **({"spike": spike} if spike else {})})
        out.append(GateScenario("spike", fleet("spike", STRESS_DURATION_S, members),
                                {s.name: stress_slo(s, "spike") for s in on["spike"]}, {}))
    rolling = on["rollout"]
    if "rollout" in kinds and rolling:
        members, extra, end = [], {}, STRESS_DURATION_S
        for svc, sc in base:
            if svc in rolling:
                deadline = progress_deadline_s(sc["inferenceService"])
                at = settings("rollout", svc.stress.rollout.params)["at_s"]
                end = max(end, rollout_run_s(at, deadline))
                members.append({"scenario": sc, "rollout": {"at_s": at}})
                extra[svc.name] = {"progress_deadline_s": deadline}
            else:
                members.append({"scenario": sc})
        out.append(GateScenario("rollout", fleet("rollout", end, members),
                                {s.name: stress_slo(s, "rollout") for s in rolling}, extra))
    zero = [s for s in on["scaleFromZero"] if s.min_replicas == 0 and s.deployment_mode == "Knative"
            and cfg.knative.autoscaler.enable_scale_to_zero]  # config-autoscaler enable-scale-to-zero: else >= 1
    if "scaleFromZero" in kinds and zero:
        members = [{"scenario": sc, **({"from_zero": True} if svc in zero else {})} for svc, sc in base]
        out.append(GateScenario("scaleFromZero", fleet("scaleFromZero", STRESS_DURATION_S, members),
                                {s.name: stress_slo(s, "scaleFromZero") for s in zero}, {}))
    if "nodeLoss" in kinds and on["nodeLoss"]:
        loss = settings("nodeLoss", {k: v for s in on["nodeLoss"] for k, v in s.stress.node_loss.params.items()})
        out.append(GateScenario("nodeLoss", fleet("nodeLoss", STRESS_DURATION_S, [{"scenario": s} for _, s in base],
                                                  node_loss=loss),
                                {s.name: stress_slo(s, "nodeLoss") for s in on["nodeLoss"]}, {}))
    return out
