"""Does a rollout fit? A static check of every service's next revision against the node group (issue 8 §5).

Knative keeps the old revision serving until the new one has `max(min-scale, initial-scale)` Ready pods
(knative/serving `pkg/reconciler/autoscaling/kpa/scaler.go` initial scale; the route moves only to a Ready
revision), so during a rollout the GPUs must hold: the old revision at its expected load + the new revision at
its initial scale + every other service at its minimum. Standard mode rolls a Deployment with the strategy the stack
renders (manifests/inference_service.py `DEPLOYMENT_STRATEGY`: maxUnavailable 0, so every old pod serves until a new
one is Ready), so the surge pods (`maxSurge`, a percentage rounded up as the Deployment controller does) must fit
beside all the old ones. The new pods must also become Ready within
Knative's progress deadline (`serving.knative.dev/progress-deadline`, default 600 s), or the revision fails: checked
against the 95th percentile of the time the new revision's first pods are all Ready (each coldStart prior at the
quantile that makes the slowest of them a p95; manifests/rollout.py), not the mean, since a cold start varies
(node launch, registry and download throughput).

Expected load of the old revision: when the gate simulated the service, the upper end of the 95 % interval of the
steady scenario's mean ready replicas across its replications, rounded up, and at least its minReplicas (Knative
applies initial-scale only until a revision first reaches it, knative/serving `kpa/scaler.go`: a running revision
is where its load and min-scale put it); otherwise its initial scale, what the operator sized for the expected
traffic (`expected_loads`; `pulumi up` and `preflight check` both use `capacity_problems`). Simplification: a
simulated stress
rollout (gate scenarios) catches what this bound does not, e.g. a burst during the rollout.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping

from manifests.inference_service import DEPLOYMENT_STRATEGY
from manifests.rollout import PERCENTILE, cold_start, initial_scale, progress_deadline_s
from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY
from stackconfig.platform import COLD_START_QUANTILE
from stackconfig.schema import StackConfig
from validation.errors import Problem
from gate.verdict import format_estimate


def surge_pods(replicas: int, strategy: Mapping = DEPLOYMENT_STRATEGY) -> int:
    """The new pods a RollingUpdate adds over `replicas` at once: `maxSurge` as a number, or a percentage of
    `replicas` rounded up (apps/v1 `deployment/util: ResolveFenceposts`, `intstr.GetScaledValueFromIntOrPercent` with
    roundUp); Kubernetes' default 25 % when the strategy does not say."""
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas * int(surge[:-1]) / 100)
    return int(surge)


def rollout_problems(cfg: StackConfig, simulated_replicas: Mapping[str, float] | None = None) -> list[Problem]:
    """One problem per service whose rollout does not fit the node group or its progress deadline."""
    capacity, problems = cfg.node_group.gpu_capacity, []
    for i, svc in enumerate(cfg.services):
        others = sum(o.min_replicas * o.gpus for o in cfg.services if o is not svc)
        initial = initial_scale(svc, cfg.knative.autoscaler.initial_scale)
        simulated = (simulated_replicas or {}).get(svc.name)
        if svc.deployment_mode == "Knative":
            new = initial
            if simulated is None:
                expected, old = initial, f"its initial scale {initial}"
            else:
                expected = max(svc.min_replicas, math.ceil(simulated))
                old = f"{expected} pod(s) (its expected load {simulated:.4g} rounded up, at least minReplicas)"
            how = f"old revision at {old} + new revision at its initial scale {new} (max(minReplicas, initial-scale))"
        else:
            expected = max(svc.min_replicas, math.ceil(simulated or 0.0))
            new = surge_pods(expected)
            rolling = DEPLOYMENT_STRATEGY["rollingUpdate"]
            how = (f"{expected} running, all serving until the new ones are Ready (maxUnavailable "
                   f"{rolling['maxUnavailable']}), + {new} surge pod(s) (maxSurge {rolling['maxSurge']})")
        needed = (expected + new) * svc.gpus + others
        if needed > capacity:
            problems.append(Problem(f"services[{i}]", svc.name, (
                f"expected a rollout that fits the node group: {how}, × {svc.gpus} GPU(s), + the other services' "
                f"minimums {others} = {needed} GPUs > {capacity} (gpuNodeGroup.maxSize {cfg.node_group.max_size} × "
                f"{cfg.node_group.gpus_per_node}); the new pods stay Pending and the rollout stalls. Raise maxSize "
                f"to {math.ceil(needed / cfg.node_group.gpus_per_node)} or lower initial-scale/minReplicas")))
        cold = cold_start(cfg, svc) if svc.deployment_mode == "Knative" else None
        if cold is not None and cold.total_s > progress_deadline_s(svc):
            which = "a new pod" if cold.pods == 1 else f"the new revision's {cold.pods} pods (on {cold.nodes} new " \
                                                         f"node{'s' if cold.nodes > 1 else ''}) all Ready"
            given = svc.annotations.get(PROGRESS_DEADLINE_KEY)
            unset = "" if given else f"unset, so Knative's default {DEFAULT_PROGRESS_DEADLINE_S:g}s; "
            problems.append(Problem(f"services[{i}].annotations[{PROGRESS_DEADLINE_KEY}]", given, (
                f"{unset}expected at least the {PERCENTILE} cold start of {which}, {cold.total_s:.0f} s "
                f"({cold.describe()}), or a slow rollout (1 in {round(1 / (1 - COLD_START_QUANTILE))} when "
                "the phases are slow together) outlasts it and Knative fails the revision before it is Ready. Raise "
                "the deadline, or shorten the cold start (a warm node: gpuNodeGroup.minSize; a smaller image; "
                + ("more read throughput for the model cache: an EFS file system in Elastic mode "
                   "(modelCache.throughputMode elastic) or a higher modelCache.fsThroughputMiBps; fewer pods at once: "
                   "initial-scale" if cold.shared else "the model cache") + ")")))
    return problems


LOAD_METRIC = "mean ready replicas"


def expected_loads(cfg: StackConfig, verdicts: list) -> tuple[dict[str, float], dict[str, str]]:
    """Each service's expected load for the rollout-capacity check (`rollout_problems`): the figure, and
    what it is, per service.

    The figure is the upper end of the 95 % interval of the steady scenario's mean ready replicas across the
    gate's replications (conservative: the load the runs cannot rule out), not one replication's count; with no
    finite interval (a single run) its estimate. A service the steady scenario did not judge (gate.enabled
    false, `steady` not in gate.scenarios, no workload or SLO) gets no figure: the check then takes its initial
    scale (its minReplicas in Standard mode), the static bound. The stress scenarios' replica counts are not
    used instead: they measure a spike, a node loss, a rollout or a cold start on purpose, not the expected
    load. The second mapping says so for each service, for the check's messages.
    """
    steady = {v.service: v.metrics.get(LOAD_METRIC) for v in verdicts if v.scenario == "steady"}
    figures, basis = {}, {}
    for svc in cfg.services:
        e = steady.get(svc.name)
        if e is not None and e.value is not None:
            finite = e.hi is not None and math.isfinite(e.hi)
            figures[svc.name] = e.hi if finite else e.value
            runs = f"{e.replications} replication{'s' if e.replications != 1 else ''}"
            basis[svc.name] = (f"{figures[svc.name]:.4g}, the upper end of the 95% interval of the steady "
                               f"simulation's {LOAD_METRIC} {format_estimate(e)} over {runs}" if finite else
                               f"{figures[svc.name]:.4g}, the steady simulation's {LOAD_METRIC} over {runs} "
                               "(no interval)")
        else:
            why = ("gate.enabled is false" if not cfg.gate.enabled else
                   "gate.scenarios has no 'steady'" if "steady" not in cfg.gate.scenarios else
                   "the gate does not check this service: no workload or SLO")
            basis[svc.name] = (f"not simulated ({why}), so its "
                               + ("initial scale" if svc.deployment_mode == "Knative" else "minReplicas"))
    return figures, basis


def capacity_problems(cfg: StackConfig, verdicts: list) -> list[Problem]:
    """The rollout-capacity problems (`rollout_problems`) at each service's expected load
    (`expected_loads`); a capacity problem says which load figure it rests on. `pulumi up` and
    `preflight check` both use this."""
    figures, basis = expected_loads(cfg, verdicts)
    index = {f"services[{i}]": svc.name for i, svc in enumerate(cfg.services)}
    return [replace(p, allowed=f"{p.allowed} (expected load: {basis[index[p.path]]})") if p.path in index else p
            for p in rollout_problems(cfg, figures)]


def capacity_failure(cfg: StackConfig, verdicts: list) -> str | None:
    problems = capacity_problems(cfg, verdicts)
    if not problems:
        return None
    return ("rollout capacity: the next rollout would stall:\n"
            + "\n".join(f"  - {cfg.project}:{p}" for p in problems))
